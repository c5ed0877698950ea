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
import os
import re
import shlex
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

import qasync
from PySide6.QtCore import QCoreApplication, QObject, Signal, Slot
from PySide6.QtGui import QGuiApplication, QIcon, QWindow
from PySide6.QtQml import QQmlApplicationEngine
from PySide6.QtQuick import QQuickWindow
from PySide6.QtWidgets import QApplication

from procwindow import cli
from procwindow._paths import resources_dir
from procwindow.control import (
    DEFAULT_SERVER_NAME,
    ControlServer,
    default_socket_path,
    load_workspace,
)
from procwindow.control import Workspace as WorkspaceFile
from procwindow.core import ProcwindowError, Supervisor
from procwindow.core.rules import (
    DEFAULT_AGENT,
    DEFAULT_GRACEFUL_TIMEOUT,
    DEFAULT_SESSION,
    DEFAULT_TOOL,
)
from procwindow.demo import demo_workspace
from procwindow.qt import (
    ActiveScope,
    MainWindowModel,
    ProcController,
    ProcModel,
    ProcWindowModel,
    SessionModel,
)
from procwindow.qt.notify import FailureNotifier
from procwindow.qt.window import (
    QML_MODULE,
    QUICK_STYLE,
    close_proc_windows,
    ensure_style,
    find_proc_window,
    open_proc_window,
    prepare_engine,
    proc_windows,
    window_model,
)

if TYPE_CHECKING:
    import argparse

__all__ = [
    "COMMAND_AGENT",
    "COMMAND_SESSION",
    "QUICK_STYLE",
    "Workspace",
    "ensure_style",
    "main",
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
#: The environment variable naming the directory SIGUSR1 screenshots go to.
SCREENSHOT_ENV = "PROCWINDOW_SCREENSHOT_DIR"


def main(argv: Sequence[str] | None = None) -> int:
    """The ``procwindow`` command: parse ``argv`` and open the window.

    ``--help`` and ``--version`` answer without loading Qt (see :mod:`procwindow.cli`).
    """
    return cli.main(argv)


def run(args: argparse.Namespace) -> int:
    """Open the window for parsed command-line arguments (``procwindow.cli`` calls this).

    ``procwindow up FILE`` passes ``args.workspace``; ``--socket``, ``--name`` and
    ``--no-serve`` choose where (and whether) the window serves the control socket.
    """
    if getattr(args, "subcommand", None) == "attach":
        return run_attach(
            args.target,
            ssh_command=shlex.split(args.ssh) if args.ssh else None,
            remote_procwindow=args.remote_procwindow,
            notify=not args.no_notify,
        )
    workspace = None
    workspace_file = getattr(args, "workspace", None)
    if workspace_file:
        try:
            workspace = load_workspace(workspace_file)
        except ProcwindowError as exc:
            print(f"{cli.PROG}: {exc}", file=sys.stderr)
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
            print(f"{cli.PROG}: not serving the control socket: {exc}", file=sys.stderr)
            socket_path = None
    return run_app(
        command=args.command,
        workspace=workspace,
        socket_path=socket_path,
        notify=not getattr(args, "no_notify", False),
    )


def run_app(
    command: Sequence[str] | None = None,
    *,
    workspace: WorkspaceFile | None = None,
    socket_path: str | None = None,
    notify: bool = True,
) -> int:
    """Run the window until it is closed; return the exit status.

    ``command``: run it in :data:`COMMAND_SESSION`/:data:`COMMAND_AGENT` and show it;
    ``workspace``: start its commands; neither: the demo workspace. ``socket_path``:
    serve the control socket there, so ``procwindow ctl`` reaches this window (None:
    do not serve). ``notify``: tell the desktop of a process that fails while
    no window has the focus.
    """
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
        return int(
            loop.run_until_complete(
                _run(list(command) if command else None, workspace, socket_path, notify)
            )
        )
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
        asyncio.set_event_loop(None)


async def _run(
    command: list[str] | None,
    workspace_file: WorkspaceFile | None,
    socket_path: str | None,
    notify: bool,
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
            print(f"{cli.PROG}: killing every process now", file=sys.stderr, flush=True)
            killers.append(asyncio.ensure_future(_kill_everything(running[0])))

    # First of all: Ctrl+C, SIGTERM or SIGHUP must close the supervisor, not kill us.
    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, on_stop_signal)
    if os.environ.get(SCREENSHOT_ENV):
        loop.add_signal_handler(signal.SIGUSR1, _save_screenshots)
    if command is None and workspace_file is None:
        workspace_file = demo_workspace()
    grace = workspace_file.graceful_timeout if workspace_file is not None else None
    try:
        async with Supervisor(
            graceful_timeout=DEFAULT_GRACEFUL_TIMEOUT if grace is None else grace, subreaper=True
        ) as supervisor:
            running.append(supervisor)
            if command is not None:
                try:
                    await supervisor.spawn(
                        command, session=COMMAND_SESSION, agent=COMMAND_AGENT, tool=DEFAULT_TOOL
                    )
                except ProcwindowError as exc:
                    print(f"{cli.PROG}: {exc}", file=sys.stderr)
                    return 2
                scopes = {COMMAND_SESSION: [COMMAND_AGENT]}
                first = (COMMAND_SESSION, COMMAND_AGENT)
            else:
                assert workspace_file is not None
                try:
                    await workspace_file.start(supervisor)
                except ProcwindowError as exc:
                    print(f"{cli.PROG}: {exc}", file=sys.stderr)
                    return 2
                scopes = {s: list(a) for s, a in workspace_file.sessions.items()}
                first = (next(iter(scopes), COMMAND_SESSION), "")
            if quit_now.is_set():
                return 0
            server = await _serve(supervisor, socket_path, scopes)
            workspace = Workspace(supervisor, scopes=scopes, notify=notify)
            workspace.quitRequested.connect(quit_now.set)
            try:
                workspace.active_scope.setScope(*first)
                workspace.load()
                # Qt, QML and the models are loaded: move that heap out of the
                # collector's sight, so full collections during an output flood
                # stay short (benchmarks/bench_window.py lag --app-heap).
                gc.freeze()
                if command is not None:
                    workspace.openProcWindow(*first)
                await quit_now.wait()
            finally:
                workspace.close()
                if server is not None:
                    await server.close()
    finally:
        if killers:
            await asyncio.wait(killers, timeout=5.0)
        for signum in (*STOP_SIGNALS, signal.SIGUSR1):
            loop.remove_signal_handler(signum)
    return 0


async def _kill_everything(supervisor: Supervisor) -> None:
    try:
        await supervisor.kill_all()
    except Exception as exc:  # closing the supervisor still stops everything
        print(f"{cli.PROG}: killing every process failed: {exc}", file=sys.stderr)


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
        print(f"{cli.PROG}: not serving the control socket: {exc}", file=sys.stderr)
        return None
    print(f"{cli.PROG}: control socket at {socket_path}", file=sys.stderr, flush=True)
    return server


def run_attach(
    target: str | None,
    *,
    ssh_command: list[str] | None = None,
    remote_procwindow: str | None = None,
    notify: bool = True,
) -> int:
    """``procwindow attach [TARGET]``: the window on a server that runs elsewhere
    (a name or socket path here, or ``ssh://[user@]host[:port][/NAME]``), through
    a :class:`~procwindow.control.remote.RemoteSupervisor`. Closing the window
    closes the link and stops nothing there. Exit status 3 when the server
    cannot be reached (one line on stderr says why)."""
    app = QApplication.instance() or QApplication([sys.argv[0] if sys.argv else "procwindow"])
    assert isinstance(app, QApplication), "qasync needs a QApplication"
    app.setApplicationName("procwindow")
    app.setDesktopFileName("procwindow")
    app.setWindowIcon(QIcon(str(resources_dir() / "icons" / "processes.svg")))
    app.setQuitOnLastWindowClosed(False)
    ensure_style()
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    try:
        return int(loop.run_until_complete(_attach(target, ssh_command, remote_procwindow, notify)))
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
        asyncio.set_event_loop(None)


async def _attach(
    target: str | None,
    ssh_command: list[str] | None,
    remote_procwindow: str | None,
    notify: bool,
) -> int:
    from procwindow.control.remote import RemoteSupervisor

    loop = asyncio.get_running_loop()
    quit_now = asyncio.Event()
    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, quit_now.set)
    try:
        try:
            remote = await RemoteSupervisor.connect(
                target, ssh_command=ssh_command, remote_procwindow=remote_procwindow
            )
        except ProcwindowError as exc:
            print(f"{cli.PROG}: {exc}", file=sys.stderr)
            return 3
        try:
            scopes = await remote.sessions()
            print(f"{cli.PROG}: attached to {remote.where}", file=sys.stderr, flush=True)
            # The qt layer's signatures name Supervisor; it takes any SupervisorAPI.
            workspace = Workspace(cast(Supervisor, remote), scopes=scopes, notify=notify)
            workspace.quitRequested.connect(quit_now.set)
            try:
                workspace.active_scope.setScope(next(iter(scopes), COMMAND_SESSION), "")
                workspace.load()
                gc.freeze()
                await quit_now.wait()
            finally:
                workspace.close()
        finally:
            await remote.close()  # the link only: nothing there stops
    finally:
        for signum in STOP_SIGNALS:
            loop.remove_signal_handler(signum)
    return 0


# -- the application -------------------------------------------------------------------


class Workspace(QObject):
    """The application's glue: the main window, its models, and the ProcWindows it opens.

    The main window's QML sees a :class:`~procwindow.qt.MainWindowModel`, which
    opens ProcWindows through :meth:`openProcWindow` (one per scope: asking
    again raises the open one) and asks to quit when the main window closes;
    :meth:`quit` (also on the last window closed) emits ``quitRequested``, on
    which the application closes its supervisor. With ``notify``, a proc that
    fails while no window has the focus is told to the desktop
    (:class:`~procwindow.qt.notify.FailureNotifier`).
    """

    quitRequested = Signal()

    def __init__(
        self,
        supervisor: Supervisor,
        *,
        scopes: dict[str, list[str]] | None = None,
        notify: bool = False,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.supervisor = supervisor
        self.notifier = FailureNotifier(supervisor, self) if notify else None
        self.engine = QQmlApplicationEngine()
        prepare_engine(self.engine)
        self.active_scope = ActiveScope(self)
        self.session_model = SessionModel(supervisor, self)
        for session, agents in (scopes or {}).items():
            self.session_model.addSession(session, agents)
        self.controller = ProcController(supervisor, self)
        self.overview_model = ProcModel(supervisor, parent=self)
        self.view_model = MainWindowModel(
            self.session_model,
            self.active_scope,
            self.controller,
            self.overview_model,
            self._open_window_model,
            self,
        )
        self.view_model.quitRequested.connect(self.quit)
        self._done = False
        app = QGuiApplication.instance()
        if isinstance(app, QGuiApplication):
            app.lastWindowClosed.connect(self.quit)

    @property
    def main_window(self) -> QQuickWindow | None:
        """The main window, once loaded."""
        roots = self.engine.rootObjects()
        window = roots[0] if roots else None
        return window if isinstance(window, QQuickWindow) else None

    def load(self) -> QQuickWindow:
        """Load the main window (``Main`` of the QML module); RuntimeError with the QML errors."""
        self.engine.setInitialProperties({"viewModel": self.view_model})
        errors: list[str] = []
        self.engine.warnings.connect(lambda ws: errors.extend(w.toString() for w in ws))
        self.engine.loadFromModule(QML_MODULE, "Main")
        window = self.main_window
        if window is None:
            raise RuntimeError(f"cannot load {QML_MODULE}.Main:\n" + "\n".join(errors))
        # The models go with the window, after the items that bind to them. Left
        # to this Workspace, they would go first whenever it does (a Python
        # wrapper collected while the engine's deleteLater is pending), and the
        # window's typed properties would point at freed objects.
        for obj in self._qml_facing():
            obj.setParent(window)
        # The tree shows the active scope once it is laid out.
        self.view_model.showActiveScope()
        return window

    def _qml_facing(self) -> tuple[QObject, ...]:
        return (
            self.view_model,
            self.session_model,
            self.controller,
            self.overview_model,
            self.active_scope,
        )

    @Slot(str, str, result=QObject)
    def openProcWindow(self, session: str, agent: str) -> QObject | None:
        """Open a ProcWindow on ``(session, agent)``; raise the one already showing it."""
        if self._done or not session:
            return None
        window = find_proc_window(self.engine, session, agent)
        if window is not None:
            return window
        return open_proc_window(
            self.supervisor, session, agent, self.engine, active_scope=self.active_scope
        )

    def _open_window_model(self, session: str, agent: str) -> ProcWindowModel | None:
        window = self.openProcWindow(session, agent)
        return None if window is None else window_model(window)

    @Slot()
    def quit(self) -> None:
        """End the application (the supervisor then terminates every child)."""
        self.quitRequested.emit()

    def close(self) -> None:
        """Close every window and stop every model (idempotent)."""
        if self._done:
            return
        self._done = True
        close_proc_windows(self.engine)
        window = self.main_window
        if window is not None:
            window.close()
        for model in (self.session_model, self.overview_model):
            model.close()
        if self.notifier is not None:
            self.notifier.close()
        self.engine.deleteLater()


# -- screenshots -----------------------------------------------------------------------


def _save_screenshots() -> None:
    directory = Path(os.environ.get(SCREENSHOT_ENV, "."))
    directory.mkdir(parents=True, exist_ok=True)
    app = QCoreApplication.instance()
    windows = app.topLevelWindows() if isinstance(app, QGuiApplication) else []
    for n, window in enumerate(w for w in windows if w.isVisible()):
        path = directory / f"{n:02d}-{_slug(window)}.png"
        if isinstance(window, QQuickWindow) and window.grabWindow().save(str(path)):
            print(f"{cli.PROG}: screenshot {path}", file=sys.stderr, flush=True)


def _slug(window: QWindow) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", window.title()).strip("-").lower() or "window"
