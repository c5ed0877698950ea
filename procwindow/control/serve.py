"""``procwindow serve [FILE]``: the supervisor and its control socket, headless."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from ..core import ProcwindowError, Supervisor
from ._sockdir import default_socket_path
from .server import ControlServer
from .workspace import Workspace, load_workspace

__all__ = ["configure", "run", "serve"]

log = logging.getLogger("procwindow.serve")

#: Signals that end a server gracefully (every child terminated, exit 0).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add serve's options to ``parser``."""
    parser.add_argument(
        "workspace", nargs="?", metavar="FILE", help="a workspace TOML file to start"
    )
    add_server_options(parser)


def add_server_options(parser: argparse.ArgumentParser) -> None:
    """Options shared by ``serve`` and ``up``."""
    parser.add_argument(
        "--name",
        help="the server's name, for its socket (default: the workspace's, else 'default')",
    )
    parser.add_argument("--socket", metavar="PATH", help="listen on this socket path instead")
    parser.add_argument("--log-dir", metavar="DIR", help="keep raw output logs here")
    parser.add_argument(
        "--graceful-timeout",
        type=float,
        metavar="SECONDS",
        help="between SIGTERM and SIGKILL (default 5)",
    )


def socket_path_for(args: argparse.Namespace, ws: Workspace | None) -> str:
    """The socket path ``serve``/``up`` listen on."""
    if args.socket:
        return str(args.socket)
    return default_socket_path(args.name or (ws.name if ws else None) or "default")


def supervisor_for(args: argparse.Namespace, ws: Workspace | None) -> Supervisor:
    """A supervisor configured from the command line and the workspace."""
    grace = args.graceful_timeout
    if grace is None and ws is not None:
        grace = ws.graceful_timeout
    return Supervisor(log_dir=args.log_dir, graceful_timeout=5.0 if grace is None else grace)


async def serve(args: argparse.Namespace, ws: Workspace | None) -> int:
    """Serve until SIGTERM, SIGINT or SIGHUP; then terminate every child and return 0."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, stop.set)
    try:
        async with supervisor_for(args, ws) as sup:
            server = ControlServer(
                sup, socket_path_for(args, ws), declared=ws.sessions if ws else None
            )
            async with server:
                if ws is not None:
                    await ws.start(sup)
                print(f"procwindow: serving on {server.path}", file=sys.stderr, flush=True)
                await stop.wait()
                print(
                    "procwindow: stopping; terminating every process", file=sys.stderr, flush=True
                )
    finally:
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)
    return 0


def run(args: argparse.Namespace) -> int:
    """``procwindow serve``: check the workspace first, then serve."""
    logging.basicConfig(level=logging.WARNING, format="procwindow: %(message)s")
    try:
        ws = load_workspace(args.workspace) if args.workspace else None
        return asyncio.run(serve(args, ws))
    except ProcwindowError as exc:
        print(f"procwindow serve: {exc}", file=sys.stderr)
        return 1
