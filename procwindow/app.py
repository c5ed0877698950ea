"""The window application: the event loop, the supervisor, the main window and its ProcWindows.

``procwindow`` runs :func:`run_app`: a ``QApplication`` driven by qasync's
``QEventLoop`` (qasync needs QtWidgets' application even for a QML UI), one
:class:`~procwindow.core.Supervisor`, the QML main window, and the control socket
(so ``procwindow ctl`` from a terminal reaches the window). With no command it
starts the demo workspace (:mod:`procwindow.demo`); ``procwindow up FILE`` starts
a workspace file; ``procwindow -- CMD ARGS...`` runs CMD in session ``default``,
agent ``main``, and opens its ProcWindow.
Closing the main window (or the last window) quits, and the supervisor then
terminates every child it still runs.

A host application that already runs qasync and a Supervisor opens a ProcWindow
with :func:`procwindow.qt.window.open_proc_window` (re-exported here)::

    window = open_proc_window(supervisor, "build", "compiler")

Environment:

``PROCWINDOW_SCREENSHOT_DIR``
    On SIGUSR1, save every visible window as a PNG in this directory (the
    paths are printed on stderr). Used by the end-to-end test under Xvfb.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import re
import shlex
import signal
import sys
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import qasync
from PySide6.QtCore import QCoreApplication
from PySide6.QtGui import QGuiApplication, QIcon, QWindow
from PySide6.QtQuick import QQuickWindow
from PySide6.QtWidgets import QApplication

from procwindow import PROG
from procwindow._attach import PASSING, AlreadyShown, Attached, Attachments, connect
from procwindow._paths import resources_dir
from procwindow.control import (
    DEFAULT_SERVER_NAME,
    CannotConnect,
    Client,
    ControlServer,
    ServerError,
    default_socket_path,
    load_workspace,
)
from procwindow.control import Workspace as WorkspaceFile
from procwindow.control.remote import LinkError
from procwindow.control.serve import Endings, exit_code_problem, selected
from procwindow.core import ProcwindowError, Supervisor, WorkspaceRun
from procwindow.core.rules import (
    DEFAULT_AGENT,
    DEFAULT_GRACEFUL_TIMEOUT,
    DEFAULT_SESSION,
    DEFAULT_TOOL,
)
from procwindow.demo import demo_workspace
from procwindow.qt.mainwindow import Workspace
from procwindow.qt.window import QUICK_STYLE, ensure_style, open_proc_window, proc_windows

if TYPE_CHECKING:
    import argparse

__all__ = [
    "COMMAND_AGENT",
    "COMMAND_SESSION",
    "QUICK_STYLE",
    "Workspace",
    "ensure_style",
    "open_proc_window",
    "proc_windows",
    "run",
    "run_app",
]

#: Where ``procwindow -- CMD`` runs CMD.
COMMAND_SESSION = DEFAULT_SESSION
COMMAND_AGENT = DEFAULT_AGENT
#: Signals that close the application gracefully (every child terminated, exit 0).
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
log = logging.getLogger("procwindow")

#: The environment variable naming the directory SIGUSR1 screenshots go to.
SCREENSHOT_ENV = "PROCWINDOW_SCREENSHOT_DIR"


def run(args: argparse.Namespace) -> int:
    """Open the window for parsed command-line arguments (``procwindow.cli`` calls this).

    ``procwindow up FILE`` passes ``args.workspace``; ``--socket``, ``--name`` and
    ``--no-serve`` choose where (and whether) the window serves the control socket.
    """
    if getattr(args, "subcommand", None) == "attach":
        return run_attach(
            args.targets,
            ssh_command=shlex.split(args.ssh) if args.ssh else None,
            remote_procwindow=args.remote_procwindow,
            notify=not args.no_notify,
        )
    workspace = None
    workspace_file = getattr(args, "workspace", None)
    if workspace_file:
        try:
            workspace = selected(load_workspace(workspace_file), args)
        except ProcwindowError as exc:
            print(f"{PROG}: {exc}", file=sys.stderr)
            return 2
    exit_code_from = getattr(args, "exit_code_from", None)
    problem = exit_code_problem(exit_code_from, workspace, workspace_file)
    if problem is not None:
        print(f"{PROG} up: {problem}", file=sys.stderr)
        return 2
    if getattr(args, "no_serve", False):
        socket_path = None
    elif getattr(args, "socket", None):
        socket_path = str(args.socket)
    else:
        name = (
            getattr(args, "name", None)
            or (workspace.name if workspace else None)
            or DEFAULT_SERVER_NAME
        )
        try:
            socket_path = default_socket_path(name)
        except ProcwindowError as exc:
            print(f"{PROG}: not serving the control socket: {exc}", file=sys.stderr)
            socket_path = None
    if args.argv and socket_path is not None:
        handed = _hand_off(socket_path, list(args.argv))
        if handed is not None:
            return handed
    return run_app(
        command=args.argv,
        workspace=workspace,
        socket_path=socket_path,
        notify=not getattr(args, "no_notify", False),
        attach=[*(workspace.attach if workspace else ()), *(getattr(args, "attach", None) or ())],
        exit_code_from=exit_code_from,
    )


def _hand_off(socket_path: str, command: list[str]) -> int | None:
    """``procwindow -- CMD`` while a window (or a server) answers on its socket:
    run CMD there, in this directory and environment, as a browser hands a URL
    to the one already open; None when nobody answers (this one opens)."""
    try:
        client = Client(socket_path, timeout=10)
    except CannotConnect:
        return None
    try:
        with client:
            result = client.call(
                "run",
                argv=command,
                session=COMMAND_SESSION,
                agent=COMMAND_AGENT,
                tool=DEFAULT_TOOL,
                cwd=os.getcwd(),
                env=dict(os.environ),
            )
    except ServerError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # it went away meanwhile: open our own
        log.info("the window on %s did not take the command: %s", socket_path, exc)
        return None
    print(
        f"{PROG}: handed to the window already open on {socket_path}: process"
        f" {result['id']} (pid {result['os_pid']}) in {COMMAND_SESSION}/{COMMAND_AGENT};"
        f" 'procwindow ctl out {result['id']}' prints its output",
        file=sys.stderr,
    )
    return 0


def run_app(
    command: Sequence[str] | None = None,
    *,
    workspace: WorkspaceFile | None = None,
    socket_path: str | None = None,
    notify: bool = True,
    attach: Sequence[str] = (),
    exit_code_from: str | None = None,
) -> int:
    """Run the window until it is closed; return the exit status.

    ``command``: run it in :data:`COMMAND_SESSION`/:data:`COMMAND_AGENT` and show it;
    ``workspace``: start its commands; neither: the demo workspace. ``socket_path``:
    serve the control socket there, so ``procwindow ctl`` reaches this window (None:
    do not serve). ``notify``: tell the desktop of a process that fails while
    no window has the focus. ``attach``: servers elsewhere to show beside this
    window's own supervisor (names, socket paths, ``ssh://`` URLs), each
    reached in the background. ``exit_code_from``: a command of ``workspace``
    whose end closes the window, stopping the workspace, with its exit status
    (as ``exit_on_end`` does).
    """
    endings = Endings(workspace, exit_code_from) if workspace is not None else None
    return _on_qt_loop(
        _run(list(command) if command else None, workspace, socket_path, notify, attach, endings)
    )


def _on_qt_loop(main: Coroutine[Any, Any, int]) -> int:
    """Run ``main`` on a qasync loop over the QApplication (made here if there is
    none), set up as the window's; its result is the exit status."""
    app = QApplication.instance() or QApplication([sys.argv[0] if sys.argv else "procwindow"])
    assert isinstance(app, QApplication), "qasync needs a QApplication"
    app.setApplicationName("procwindow")
    app.setDesktopFileName("procwindow")
    app.setWindowIcon(QIcon(str(resources_dir() / "icons" / "processes.svg")))
    # Quitting is ours to decide: the supervisor must close first.
    app.setQuitOnLastWindowClosed(False)
    ensure_style()
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    try:
        return int(loop.run_until_complete(main))
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
        asyncio.set_event_loop(None)


async def _run(
    command: list[str] | None,
    workspace_file: WorkspaceFile | None,
    socket_path: str | None,
    notify: bool,
    attach: Sequence[str] = (),
    endings: Endings | None = None,
) -> int:
    loop = asyncio.get_running_loop()
    quit_now = asyncio.Event()
    running: list[Supervisor] = []
    killers: list[asyncio.Task[None]] = []

    def on_stop_signal() -> None:
        if not quit_now.is_set():
            quit_now.set()
        elif running and not killers:
            # A second signal while the children are being terminated: do not
            # wait out their grace.
            print(f"{PROG}: killing every process now", file=sys.stderr, flush=True)
            killers.append(asyncio.ensure_future(_kill_everything(running[0])))

    # First of all: Ctrl+C, SIGTERM or SIGHUP must close the supervisor, not kill us.
    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, on_stop_signal)
    _screenshots_on_usr1(loop)
    if command is None and workspace_file is None:
        workspace_file = demo_workspace()
    grace = workspace_file.graceful_timeout if workspace_file is not None else None
    try:
        async with Supervisor(
            graceful_timeout=DEFAULT_GRACEFUL_TIMEOUT if grace is None else grace, subreaper=True
        ) as supervisor:
            running.append(supervisor)
            try:
                scopes, first, run = await _start(supervisor, command, workspace_file)
            except ProcwindowError as exc:
                print(f"{PROG}: {exc}", file=sys.stderr)
                return 2
            if endings is not None and run is not None:
                endings.watch(run, supervisor, quit_now)
            if quit_now.is_set():
                return 0
            server = await _serve(supervisor, socket_path, scopes)
            workspace = Workspace(supervisor, scopes=scopes, notify=notify)
            workspace.quitRequested.connect(quit_now.set)
            attachments = Attachments(workspace, _reporter(workspace))
            try:
                workspace.active_scope.setScope(*first)
                workspace.load()
                # Qt, QML and the models are loaded: move that heap out of the
                # collector's sight, so full collections during an output flood
                # stay short (benchmarks/bench_window.py lag --app-heap).
                gc.freeze()
                if command is not None:
                    workspace.openProcWindow(*first)
                attachments.start(attach)
                await quit_now.wait()
            finally:
                await attachments.close()  # the links only: nothing there stops
                workspace.close()
                if server is not None:
                    await server.close()
    finally:
        if endings is not None:
            endings.cancel()
        if killers:
            await asyncio.wait(killers, timeout=5.0)
        for signum in (*STOP_SIGNALS, signal.SIGUSR1):
            loop.remove_signal_handler(signum)
    return (endings.status() if endings is not None else None) or 0


async def _start(
    supervisor: Supervisor, command: list[str] | None, workspace_file: WorkspaceFile | None
) -> tuple[dict[str, list[str]], tuple[str, str], WorkspaceRun | None]:
    """Run the command, or start the workspace's commands: the scopes to show,
    the one to select first, and the workspace's run (ProcwindowError when it
    cannot start)."""
    if command is not None:
        await supervisor.spawn(
            command, session=COMMAND_SESSION, agent=COMMAND_AGENT, tool=DEFAULT_TOOL
        )
        return {COMMAND_SESSION: [COMMAND_AGENT]}, (COMMAND_SESSION, COMMAND_AGENT), None
    assert workspace_file is not None
    run = await workspace_file.start(supervisor)
    scopes = {s: list(a) for s, a in workspace_file.sessions.items()}
    return scopes, (next(iter(scopes), COMMAND_SESSION), ""), run


async def _kill_everything(supervisor: Supervisor) -> None:
    try:
        await supervisor.kill_all()
    except Exception as exc:  # closing the supervisor still stops everything
        print(f"{PROG}: killing every process failed: {exc}", file=sys.stderr)


async def _serve(
    supervisor: Supervisor, socket_path: str | None, scopes: dict[str, list[str]]
) -> ControlServer | None:
    """Serve the control socket for this window; a window that cannot still runs."""
    if socket_path is None:
        return None
    server = ControlServer(supervisor, socket_path, declared=scopes)
    try:
        await server.start()
    except (ProcwindowError, OSError) as exc:
        print(f"{PROG}: not serving the control socket: {exc}", file=sys.stderr)
        return None
    print(f"{PROG}: control socket at {socket_path}", file=sys.stderr, flush=True)
    return server


def run_attach(
    targets: Sequence[str] | str | None,
    *,
    ssh_command: list[str] | None = None,
    remote_procwindow: str | None = None,
    notify: bool = True,
) -> int:
    """``procwindow attach [TARGET...]``: the window on servers that run elsewhere
    (a name or socket path here, or ``ssh://[user@]host[:port][/NAME]``; none:
    the default server here), each a :class:`~procwindow.control.remote.RemoteSupervisor`
    shown as a host of the session tree. Closing the window closes the links
    and stops nothing there. A server that cannot be reached is told in one
    line on stderr; exit status 3 when none can be."""
    if targets is None or isinstance(targets, str):
        targets = [targets or ""]
    return _on_qt_loop(_attach(list(targets) or [""], ssh_command, remote_procwindow, notify))


async def _attach(
    targets: list[str],
    ssh_command: list[str] | None,
    remote_procwindow: str | None,
    notify: bool,
) -> int:
    loop = asyncio.get_running_loop()
    quit_now = asyncio.Event()
    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, quit_now.set)
    _screenshots_on_usr1(loop)
    try:
        reached, later = await _reach(targets, ssh_command, remote_procwindow)
        if not reached:
            return 3
        first, others = reached[0], reached[1:]
        try:
            scopes = await first.scopes()
            workspace = Workspace(
                first.remote,
                scopes=scopes,
                notify=notify,
                key=first.key,
                label=first.label,
            )
            workspace.quitRequested.connect(quit_now.set)
            attachments = Attachments(
                workspace,
                _reporter(workspace),
                ssh_command=ssh_command,
                remote_procwindow=remote_procwindow,
            )
            try:
                workspace.active_scope.setScope(next(iter(scopes), COMMAND_SESSION), "")
                workspace.load()
                gc.freeze()
                for attached in others:
                    try:
                        await attachments.show(attached)
                    except AlreadyShown as exc:  # listed twice
                        print(f"{PROG}: {exc}", file=sys.stderr, flush=True)
                for target, error in later:  # shown greyed, reached again with backoff
                    await attachments.show_later(target, error)
                await quit_now.wait()
            finally:
                await attachments.close()
                workspace.close()
        finally:
            await first.remote.close()  # the link only: nothing there stops
    finally:
        for signum in (*STOP_SIGNALS, signal.SIGUSR1):
            loop.remove_signal_handler(signum)
    return 0


async def _reach(
    targets: list[str], ssh_command: list[str] | None, remote_procwindow: str | None
) -> tuple[list[Attached], list[tuple[str, LinkError]]]:
    """Reach every target at once; one line on stderr for each that cannot be.
    Those reached, and those to reach again later (whose failure may pass)."""
    results = await asyncio.gather(
        *(
            connect(t, ssh_command=ssh_command, remote_procwindow=remote_procwindow)
            for t in targets
        ),
        return_exceptions=True,
    )
    reached: list[Attached] = []
    later: list[tuple[str, LinkError]] = []
    for target, result in zip(targets, results, strict=True):
        if isinstance(result, Attached):
            reached.append(result)
            print(f"{PROG}: attached to {result.remote.where}", file=sys.stderr, flush=True)
        elif isinstance(result, ProcwindowError):
            print(f"{PROG}: {result}", file=sys.stderr, flush=True)
            if isinstance(result, PASSING):
                later.append((target, result))
    unexpected = [
        r for r in results if isinstance(r, BaseException) and not isinstance(r, ProcwindowError)
    ]
    if unexpected:
        for attached in reached:
            await attached.remote.close()
        raise unexpected[0]
    return reached, later


def _reporter(workspace: Workspace) -> Callable[[str, bool], None]:
    """What the attachments say: in the window's status line, and errors on stderr too."""

    def report(message: str, is_error: bool) -> None:
        workspace.view_model.showStatus(message, is_error)
        if is_error:
            print(f"{PROG}: {message}", file=sys.stderr, flush=True)

    return report


# -- screenshots -----------------------------------------------------------------------


def _screenshots_on_usr1(loop: asyncio.AbstractEventLoop) -> None:
    """With ``PROCWINDOW_SCREENSHOT_DIR`` set, SIGUSR1 saves the windows there
    (without, SIGUSR1 keeps its default action)."""
    if os.environ.get(SCREENSHOT_ENV):
        loop.add_signal_handler(signal.SIGUSR1, _save_screenshots)


def _save_screenshots() -> None:
    directory = Path(os.environ.get(SCREENSHOT_ENV, "."))
    directory.mkdir(parents=True, exist_ok=True)
    app = QCoreApplication.instance()
    windows = app.topLevelWindows() if isinstance(app, QGuiApplication) else []
    for n, window in enumerate(w for w in windows if w.isVisible()):
        path = directory / f"{n:02d}-{_slug(window)}.png"
        if isinstance(window, QQuickWindow) and window.grabWindow().save(str(path)):
            print(f"{PROG}: screenshot {path}", file=sys.stderr, flush=True)


def _slug(window: QWindow) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", window.title()).strip("-").lower() or "window"
