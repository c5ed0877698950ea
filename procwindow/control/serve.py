"""``procwindow serve [FILE]``: the supervisor and its control socket, headless."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from ..core import (
    DEFAULT_GRACEFUL_TIMEOUT,
    DEFAULT_LOG_CAP,
    MIN_LOG_CAP,
    ProcwindowError,
    Supervisor,
    check_graceful_timeout,
)
from ._ending import Endings, add_exit_code_option, exit_code_problem
from ._sockdir import DEFAULT_SERVER_NAME, SocketDirError, check_name, default_socket_path
from .server import ControlServer
from .workspace import Workspace, load_workspace

__all__ = [
    "Endings",
    "add_exit_code_option",
    "check_options",
    "configure",
    "exit_code_problem",
    "run",
    "serve",
]

log = logging.getLogger("procwindow.serve")

#: Signals that end a server gracefully (every child terminated, exit 0).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
#: Seconds before the same OS error is reported again.
_REPEAT_INTERVAL = 60.0
#: Seconds a stopping server waits for the kill a second stop signal started.
_KILL_WAIT = 5.0


def configure(parser: argparse.ArgumentParser) -> None:
    """Add serve's options to ``parser``."""
    add_workspace_argument(parser, optional=True)
    add_selection_options(parser)
    add_exit_code_option(parser)
    add_server_options(parser)


def add_workspace_argument(parser: argparse.ArgumentParser, *, optional: bool) -> None:
    """The workspace ``FILE`` argument (``serve [FILE]``, ``up FILE``)."""
    parser.add_argument(
        "workspace",
        nargs="?" if optional else None,
        metavar="FILE",
        help="a workspace file to start: TOML, or a process-compose YAML file",
    )


def add_selection_options(parser: argparse.ArgumentParser) -> None:
    """``COMMAND…`` and ``--no-deps`` after a workspace FILE (``serve``, ``up``)."""
    parser.add_argument(
        "commands",
        nargs="*",
        metavar="COMMAND",
        help="start only these commands of FILE, and those they depend on",
    )
    parser.add_argument(
        "--no-deps",
        action="store_true",
        help="with COMMANDs: not what they depend on (their dependencies are dropped)",
    )


def selected(ws: Workspace, args: argparse.Namespace) -> Workspace:
    """The part of ``ws`` that ``COMMAND…``/``--no-deps`` choose (without, all of
    it but its ``disabled`` commands)."""
    return ws.select(
        getattr(args, "commands", None) or (), deps=not getattr(args, "no_deps", False)
    )


def add_server_options(parser: argparse.ArgumentParser) -> None:
    """Options shared by ``serve`` and ``up``."""
    parser.add_argument(
        "--name",
        help="the server's name, for its socket"
        f" (default: the workspace's, else {DEFAULT_SERVER_NAME!r})",
    )
    parser.add_argument("--socket", metavar="PATH", help="listen on this socket path instead")
    parser.add_argument("--log-dir", metavar="DIR", help="keep raw output logs here")
    parser.add_argument(
        "--log-cap",
        type=_size,
        metavar="SIZE",
        help="disk one process's output may use, head and tail kept (e.g. 64M, 1G, or"
        " 'none'; default 64M)",
    )
    parser.add_argument(
        "--no-history",
        action="store_true",
        help="keep no history: no history.db, logs removed on exit, ids from 1",
    )
    parser.add_argument(
        "--graceful-timeout",
        type=float,
        metavar="SECONDS",
        help=f"between SIGTERM and SIGKILL (default {DEFAULT_GRACEFUL_TIMEOUT:g})",
    )


def socket_path_for(args: argparse.Namespace, ws: Workspace | None) -> str:
    """The socket path ``serve``/``up`` listen on."""
    if args.socket:
        return str(args.socket)
    return default_socket_path(args.name or (ws.name if ws else None) or DEFAULT_SERVER_NAME)


def supervisor_for(args: argparse.Namespace, ws: Workspace | None) -> Supervisor:
    """A supervisor configured from the command line and the workspace."""
    grace = args.graceful_timeout
    if grace is None and ws is not None:
        grace = ws.graceful_timeout
    cap = DEFAULT_LOG_CAP if args.log_cap is None else args.log_cap or None
    return Supervisor(
        log_dir=args.log_dir,
        graceful_timeout=DEFAULT_GRACEFUL_TIMEOUT if grace is None else grace,
        subreaper=True,
        history=not args.no_history,
        log_cap=cap,
    )


def _size(text: str) -> int:
    """``64M``, ``1G``, ``65536`` or ``none`` (0: no cap) as bytes."""
    value = text.strip().lower()
    if value in ("none", "0"):
        return 0
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    scale = units.get(value[-1:], 1)
    digits = value[:-1] if value[-1:] in units else value
    try:
        size = int(float(digits) * scale)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (use e.g. 64M or none)") from None
    if size < MIN_LOG_CAP:
        raise argparse.ArgumentTypeError(f"at least {MIN_LOG_CAP // 1024}K, got {text!r}")
    return size


async def serve(
    args: argparse.Namespace, ws: Workspace | None, *, signals: _SignalLog | None = None
) -> int:
    """Serve until SIGTERM, SIGINT or SIGHUP; then terminate every child and return 0.

    ``ws`` starts at once, its commands in dependency order (``Workspace.start``);
    on the way out its commands stop dependents first, each with its grace (the
    supervisor's close does it), then whatever else runs is terminated. A
    second stop signal while the children are being terminated kills them at
    once. ``signals``: what took the stop signals before the loop could (if it
    saw one, the server stops as soon as it has started); it takes them again
    once the loop lets go.
    """
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(_one_line_os_errors())
    stop = asyncio.Event()
    sup: Supervisor | None = None
    killers: list[asyncio.Task[None]] = []
    endings = Endings(ws, getattr(args, "exit_code_from", None)) if ws is not None else None

    def on_stop_signal() -> None:
        if not stop.is_set():
            stop.set()
        elif sup is not None and not killers:
            print("procwindow: killing every process now", file=sys.stderr, flush=True)
            killers.append(asyncio.ensure_future(_kill_all(sup)))

    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, on_stop_signal)
    if signals is not None and signals.seen:
        stop.set()
    try:
        async with supervisor_for(args, ws) as sup:
            server = ControlServer(
                sup, socket_path_for(args, ws), declared=ws.sessions if ws else None
            )
            async with server:
                if ws is not None and endings is not None and not stop.is_set():
                    endings.watch(await ws.start(sup), sup, stop)
                print(f"procwindow: serving on {server.path}", file=sys.stderr, flush=True)
                if sup.history_error is not None:
                    print(
                        f"procwindow: history is off: {sup.history_error}",
                        file=sys.stderr,
                        flush=True,
                    )
                await stop.wait()
                print(
                    "procwindow: stopping; terminating every process", file=sys.stderr, flush=True
                )
    finally:
        if endings is not None:
            endings.cancel()
        if killers:
            await asyncio.wait(killers, timeout=_KILL_WAIT)
            for task in killers:
                task.cancel()
        for sig in STOP_SIGNALS:
            loop.remove_signal_handler(sig)
        if signals is not None:
            signals.install()
    return (endings.status() if endings is not None else None) or 0


async def _kill_all(sup: Supervisor) -> None:
    try:
        await sup.kill_all()
    except Exception as exc:  # the supervisor's own close still stops everything
        log.warning("killing every process failed: %s", exc)


def _one_line_os_errors() -> Callable[[asyncio.AbstractEventLoop, dict[str, Any]], None]:
    """An exception handler that reports OS errors (out of fds, out of memory) in one
    line, at most once a minute each: they are the machine's state, not bugs, and
    asyncio retries what failed (an accept(), for one)."""
    said: dict[str, float] = {}

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if not isinstance(exc, OSError):
            loop.default_exception_handler(context)
            return
        text = f"{context.get('message', 'error')}: {exc.strerror or exc}"
        now = time.monotonic()
        if now - said.get(text, -_REPEAT_INTERVAL) >= _REPEAT_INTERVAL:
            said[text] = now
            log.warning("%s", text)

    return handle


class _SignalLog:
    """Takes the stop signals while the event loop does not: one arriving during
    start-up stops the server as soon as it runs, one arriving after the loop let
    go is ignored; neither kills the process half-way."""

    def __init__(self) -> None:
        self.seen: list[int] = []
        self._previous: dict[int, Any] = {}

    def __call__(self, signum: int, frame: object) -> None:
        self.seen.append(signum)

    def install(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in STOP_SIGNALS:
            self._previous.setdefault(sig, signal.signal(sig, self))

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()


def check_options(args: argparse.Namespace) -> str | None:
    """What is wrong with ``serve``'s options (a one-line message), or None.

    ``args.graceful_timeout`` becomes the checked number of seconds.
    """
    if args.graceful_timeout is not None:
        try:
            args.graceful_timeout = check_graceful_timeout(
                args.graceful_timeout, "--graceful-timeout"
            )
        except ValueError as exc:
            return str(exc)
    if args.name is not None:
        try:
            check_name(args.name)
        except SocketDirError as exc:
            return f"--name: {exc}"
    return None


def run(args: argparse.Namespace) -> int:
    """``procwindow serve``: check the options and the workspace first, then serve.

    Every failure is one line on stderr: exit 2 for a bad option, 1 otherwise.
    """
    logging.basicConfig(level=logging.WARNING, format="procwindow: %(message)s")
    signals = _SignalLog()
    signals.install()
    try:
        problem = check_options(args)
        if problem is not None:
            print(f"procwindow serve: {problem}", file=sys.stderr)
            return 2
        ws = load_workspace(args.workspace) if args.workspace else None
        if getattr(args, "commands", None) and ws is None:
            print("procwindow serve: COMMANDs need a workspace FILE", file=sys.stderr)
            return 2
        ws = selected(ws, args) if ws is not None else None
        problem = exit_code_problem(getattr(args, "exit_code_from", None), ws, args.workspace)
        if problem is not None:
            print(f"procwindow serve: {problem}", file=sys.stderr)
            return 2
        return asyncio.run(serve(args, ws, signals=signals))
    except ProcwindowError as exc:
        print(f"procwindow serve: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"procwindow serve: {_describe_os_error(exc)}", file=sys.stderr)
        return 1
    except Exception as exc:
        print(f"procwindow serve: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    finally:
        signals.restore()


def _describe_os_error(exc: OSError) -> str:
    text = exc.strerror or str(exc)
    return f"{exc.filename}: {text}" if exc.filename is not None else text
