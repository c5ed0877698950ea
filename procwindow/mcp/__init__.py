"""``procwindow mcp``: a Model Context Protocol server over stdio.

An agent (an MCP client) starts commands, reads and waits on their output, and
stops them, through the tools listed in :func:`build_app`. Every tool call goes
through the control socket, one connection per call: to a running window or
``procwindow serve`` when one answers there, else to a private headless server
this process starts on that same socket at the first call (so ``procwindow
ctl`` sees its processes too) and closes, terminating its children, when the
MCP session ends (stdin closed) or on SIGTERM, SIGINT or SIGHUP.

The MCP SDK (``pip install 'procwindow[mcp]'``) is imported only when the
command runs. Stdout is the MCP transport: nothing else is written there; logs
go to stderr.

What the agent may do is its session's policy (``_policy``): by default it acts
on and reads its own session's processes only; ``--read-all``, ``--allow-all``,
``--read-only`` and ``--allow-command`` change that.

The package: ``_backend`` (the control socket and the private server behind
it), ``_tools`` (the MCP server), ``_reading`` and ``_acting`` (its tools, on a
``_toolbox``), ``_args`` (their arguments, from the spec), ``_results`` (their output
schemas), ``_policy`` (what a session may do), ``_text`` (bounded text for their
results), ``_stdio`` (stdin and stdout on the event loop); this module is the
command.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys

from ..control import DEFAULT_SERVER_NAME, SocketDirError, check_name, default_socket_path
from ..core import ProcwindowError
from ._backend import Backend, Scope
from ._policy import Policy, Refused
from ._text import TEXT_CAP
from ._tools import FALLBACK_AGENT, build_app

__all__ = [
    "SDK_MISSING",
    "TEXT_CAP",
    "Backend",
    "Policy",
    "Refused",
    "Scope",
    "build_app",
    "configure",
    "run",
]

#: What ``procwindow mcp`` prints (on stderr) when the SDK is not installed.
SDK_MISSING = "procwindow mcp needs the MCP SDK: pip install 'procwindow[mcp]'"
#: The session of the agent's procs unless --session or $PROCWINDOW_SESSION names one.
DEFAULT_MCP_SESSION = "mcp"

#: Signals that end the MCP server (and its private server's children).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
#: Seconds a cancelled MCP session has to finish before the process stops anyway
#: (stdin that is not a pipe is read by the SDK in a worker thread that only the
#: end of stdin frees; a pipe is read on the loop, see ``_stdio``).
_CANCEL_WAIT = 0.5
#: Seconds to wait for the kill a second stop signal started.
_KILL_WAIT = 5.0

EXIT_USAGE = 2


# -- the command line ------------------------------------------------------------


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``procwindow mcp``'s options to ``parser``."""
    parser.add_argument(
        "--name",
        default=DEFAULT_SERVER_NAME,
        help="the server to use, or to serve as when none answers (default: %(default)s)",
    )
    parser.add_argument(
        "--socket",
        metavar="PATH",
        help="use (or serve on) this socket path (default: $PROCWINDOW_SOCKET, else the"
        " socket of --name)",
    )
    parser.add_argument(
        "--session",
        help="the session of the commands the agent starts (default: $PROCWINDOW_SESSION,"
        f" else {DEFAULT_MCP_SESSION!r})",
    )
    parser.add_argument(
        "--agent",
        help="the agent name of the commands it starts (default: $PROCWINDOW_AGENT, else the"
        f" MCP client's name, else {FALLBACK_AGENT!r})",
    )
    rules = parser.add_argument_group(
        "what the agent may do",
        "By default it acts on (write, interrupt, term, kill, restart, dismiss) and reads"
        " the processes of its own session only.",
    )
    rules.add_argument(
        "--read-all", action="store_true", help="let it read every process (list, read, search)"
    )
    rules.add_argument(
        "--allow-all", action="store_true", help="let it read and act on every process"
    )
    rules.add_argument(
        "--read-only",
        action="store_true",
        help="let it run nothing and act on nothing: only read and wait",
    )
    rules.add_argument(
        "--allow-command",
        action="append",
        default=[],
        metavar="GLOB",
        help="run only commands whose line matches GLOB ('npm *'; repeat for more), without"
        " a shell",
    )


def run(args: argparse.Namespace) -> int:
    """``procwindow mcp``: serve MCP on stdin/stdout until stdin closes or a stop signal.

    Exit status: 0 once the session ended; 1 on a failure; 2 for a bad option or
    when the MCP SDK is not installed. Every failure is one line on stderr.
    """
    logging.basicConfig(
        level=logging.WARNING, format="procwindow mcp: %(message)s", stream=sys.stderr
    )
    try:
        import mcp.server.mcpserver  # noqa: F401  (the SDK, not this module)
    except ImportError:
        print(SDK_MISSING, file=sys.stderr)
        return EXIT_USAGE
    path = args.socket or os.environ.get("PROCWINDOW_SOCKET")
    if not path:
        try:
            check_name(args.name)
        except SocketDirError as exc:
            print(f"procwindow mcp: --name: {exc}", file=sys.stderr)
            return EXIT_USAGE
        try:
            path = default_socket_path(args.name)  # its directory made, as serve does
        except ProcwindowError as exc:  # an unsafe socket directory
            print(f"procwindow mcp: {exc}", file=sys.stderr)
            return 1
    scope = Scope(
        session=args.session or os.environ.get("PROCWINDOW_SESSION") or DEFAULT_MCP_SESSION,
        agent=args.agent or os.environ.get("PROCWINDOW_AGENT") or None,
    )
    if args.read_only and (args.allow_all or args.allow_command):
        print(
            "procwindow mcp: --read-only goes with neither --allow-all nor --allow-command",
            file=sys.stderr,
        )
        return EXIT_USAGE
    policy = Policy(
        scope.session,
        read_only=args.read_only,
        read_all=args.read_all,
        allow_all=args.allow_all,
        commands=tuple(args.allow_command),
    )
    try:
        return asyncio.run(_serve(Backend(path), scope, policy))
    except KeyboardInterrupt:
        return 128 + signal.SIGINT
    except Exception as exc:
        print(f"procwindow mcp: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


async def _serve(backend: Backend, scope: Scope, policy: Policy) -> int:
    """Serve one MCP session on stdio; close the private server, if any, after it."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    killers: list[asyncio.Task[None]] = []

    def on_stop_signal() -> None:
        if not stop.is_set():
            stop.set()
        elif not killers:
            killers.append(asyncio.ensure_future(backend.kill_all()))

    app = build_app(backend, scope, policy)
    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, on_stop_signal)
    session = asyncio.ensure_future(app.run_stdio_async())
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({session, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
        session.cancel()  # a no-op once it ended; its tool calls are cancelled
        try:
            await backend.close()
            await asyncio.wait({session}, timeout=_CANCEL_WAIT)
        finally:
            if killers:
                await asyncio.wait(killers, timeout=_KILL_WAIT)
            for sig in STOP_SIGNALS:
                loop.remove_signal_handler(sig)
    if not session.done():
        # Stopped by a signal while the SDK's worker thread still waits for a line
        # on a stdin that is not a pipe: nothing can free it but the client.
        # Everything of ours is closed; end the process here rather than wait.
        sys.stderr.flush()
        os._exit(0)
    failure = None if session.cancelled() else session.exception()
    if failure is not None:
        raise failure
    return 0
