"""The window application, and the API that embeds a ProcWindow in another Qt program.

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
with :func:`open_proc_window`::

    window = open_proc_window(supervisor, "build", "compiler")

Environment:

``PROCWINDOW_SCREENSHOT_DIR``
    On SIGUSR1, save every visible window as a PNG in this directory (the
    paths are printed on stderr). Used by the end-to-end test under Xvfb.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import os
import re
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import qasync
from PySide6.QtCore import QCoreApplication, QObject, QUrl, Signal, Slot
from PySide6.QtGui import QGuiApplication, QIcon, QWindow
from PySide6.QtQml import QQmlApplicationEngine, QQmlComponent, QQmlEngine
from PySide6.QtQuick import QQuickWindow
from PySide6.QtQuickControls2 import QQuickStyle
from PySide6.QtWidgets import QApplication

from procwindow import cli
from procwindow._paths import qml_dir, resources_dir
from procwindow.control import ControlServer, default_socket_path, load_workspace
from procwindow.control import Workspace as WorkspaceFile
from procwindow.core import ProcwindowError, Supervisor
from procwindow.demo import demo_workspace
from procwindow.qt import (
    ActiveScope,
    OutputModel,
    ProcController,
    ProcModel,
    SessionModel,
    StatsSampler,
)

if TYPE_CHECKING:
    import argparse

__all__ = [
    "COMMAND_AGENT",
    "COMMAND_SESSION",
    "QUICK_STYLE",
    "Workspace",
    "main",
    "open_proc_window",
    "proc_windows",
    "run",
    "run_app",
]

#: The Qt Quick Controls style: a non-native one, so the customised controls
#: look the same everywhere.
QUICK_STYLE = "Fusion"
#: Where ``procwindow -- CMD`` runs CMD.
COMMAND_SESSION = "default"
COMMAND_AGENT = "main"
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
        name = getattr(args, "name", None) or (workspace.name if workspace else None) or "default"
        try:
            socket_path = default_socket_path(name)
        except ProcwindowError as exc:
            print(f"{cli.PROG}: not serving the control socket: {exc}", file=sys.stderr)
            socket_path = None
    return run_app(command=args.command, workspace=workspace, socket_path=socket_path)


def run_app(
    command: Sequence[str] | None = None,
    *,
    workspace: WorkspaceFile | None = None,
    socket_path: str | None = None,
) -> int:
    """Run the window until it is closed; return the exit status.

    ``command``: run it in ``default``/``main`` and show it; ``workspace``: start
    its commands; neither: the demo workspace. ``socket_path``: serve the control
    socket there, so ``procwindow ctl`` reaches this window (None: do not serve).
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
                _run(list(command) if command else None, workspace, socket_path)
            )
        )
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
        asyncio.set_event_loop(None)


async def _run(
    command: list[str] | None, workspace_file: WorkspaceFile | None, socket_path: str | None
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
            graceful_timeout=5.0 if grace is None else grace, subreaper=True
        ) as supervisor:
            running.append(supervisor)
            if command is not None:
                try:
                    await supervisor.spawn(
                        command, session=COMMAND_SESSION, agent=COMMAND_AGENT, tool="shell"
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
            workspace = Workspace(supervisor, scopes=scopes)
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


def ensure_style() -> None:
    """Use :data:`QUICK_STYLE` unless the environment or the host chose a style."""
    if not os.environ.get("QT_QUICK_CONTROLS_STYLE") and not QQuickStyle.name():
        QQuickStyle.setStyle(QUICK_STYLE)


# -- the application -------------------------------------------------------------------


class Workspace(QObject):
    """The application's glue: the main window, its models, and the ProcWindows it opens.

    QML sees it as the main window's ``workspace``: ``openProcWindow(session, agent)``
    opens (or raises) a ProcWindow; ``quit()`` (also on the last window closed)
    emits ``quitRequested``, on which the application closes its supervisor.
    """

    quitRequested = Signal()

    def __init__(
        self,
        supervisor: Supervisor,
        *,
        scopes: dict[str, list[str]] | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.supervisor = supervisor
        self.engine = QQmlApplicationEngine()
        self.active_scope = ActiveScope(self)
        self.session_model = SessionModel(supervisor, self)
        for session, agents in (scopes or {}).items():
            self.session_model.addSession(session, agents)
        self.controller = ProcController(supervisor, self)
        self.overview_model = ProcModel(supervisor, parent=self)
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
        """Load Main.qml; raise RuntimeError with the QML errors if it fails."""
        self.engine.setInitialProperties(
            {
                "sessionModel": self.session_model,
                "activeScope": self.active_scope,
                "controller": self.controller,
                "overviewModel": self.overview_model,
                "workspace": self,
            }
        )
        errors: list[str] = []
        self.engine.warnings.connect(lambda ws: errors.extend(w.toString() for w in ws))
        self.engine.load(QUrl.fromLocalFile(str(qml_dir() / "Main.qml")))
        window = self.main_window
        if window is None:
            raise RuntimeError("cannot load Main.qml:\n" + "\n".join(errors))
        return window

    @Slot(str, str, result=QObject)
    def openProcWindow(self, session: str, agent: str) -> QObject | None:
        """Open a ProcWindow on ``(session, agent)``; raise the one already showing it."""
        if self._done or not session:
            return None
        for handle in list(_open_windows.values()):
            model = handle.proc_model
            if handle.engine is self.engine and (model.session, model.agent) == (session, agent):
                if QGuiApplication.platformName() not in ("offscreen", "minimal"):
                    handle.window.raise_()  # those two platforms warn that they cannot
                handle.window.requestActivate()
                return handle.window
        return open_proc_window(
            self.supervisor, session, agent, self.engine, active_scope=self.active_scope
        )

    @Slot()
    def quit(self) -> None:
        """End the application (the supervisor then terminates every child)."""
        self.quitRequested.emit()

    def close(self) -> None:
        """Close every window and stop every model (idempotent)."""
        if self._done:
            return
        self._done = True
        for handle in list(_open_windows.values()):
            if handle.engine is self.engine:
                handle.release()
        window = self.main_window
        if window is not None:
            window.close()
        for model in (self.session_model, self.overview_model):
            model.close()
        self.engine.deleteLater()


# -- embedding -------------------------------------------------------------------------


@dataclass(eq=False)
class _OpenWindow:
    """A ProcWindow and its models (children of the window, deleted with it)."""

    window: QQuickWindow
    proc_model: ProcModel
    output_model: OutputModel
    stats: StatsSampler
    engine: QQmlEngine

    def release(self) -> None:
        """Stop the models, close the window and delete it (idempotent)."""
        self._release(close=True)

    def on_finished(self) -> None:
        # The window is closing already: closing it again from its own handler
        # would re-enter QWindow::close.
        self._release(close=False)

    def _release(self, *, close: bool) -> None:
        if _open_windows.pop(id(self), None) is None:
            return
        self.proc_model.close()
        self.output_model.close()
        self.stats.procId = -1
        if close:
            self.window.close()
        self.window.deleteLater()


_open_windows: dict[int, _OpenWindow] = {}
# Engines open_proc_window made for itself, held until Qt deletes them. (Parenting
# one to the application instead crashes the first JS handler that runs in it.)
_own_engines: set[QQmlEngine] = set()
_COMPONENT_NAME = "procwindow.ProcWindow"


def _proc_window_component(engine: QQmlEngine) -> QQmlComponent:
    """ProcWindow.qml compiled once per engine, and owned by it.

    Deleting a QQmlComponent deletes the objects it created, so it must live as
    long as any ProcWindow does: as the engine's child it does.
    """
    component = engine.findChild(QQmlComponent, _COMPONENT_NAME)
    if component is None:
        component = QQmlComponent(engine, QUrl.fromLocalFile(str(qml_dir() / "ProcWindow.qml")))
        if component.isError():
            message = component.errorString()
            component.deleteLater()
            raise RuntimeError("cannot load ProcWindow.qml:\n" + message)
        component.setObjectName(_COMPONENT_NAME)
        component.setParent(engine)
    return component


def open_proc_window(
    supervisor: Supervisor,
    session: str,
    agent: str = "",
    engine: QQmlEngine | None = None,
    *,
    active_scope: ActiveScope | None = None,
    pinned: bool | None = None,
) -> QQuickWindow:
    """Open a ProcWindow on ``(session, agent)`` of ``supervisor`` and return it.

    ``agent=""`` shows every agent of the session. The window gets its own
    models and controller, and deletes them, and itself, when it is closed.
    Pass the host's ``engine`` to share it (else the window gets one of its own,
    deleted with it), and an :class:`~procwindow.qt.ActiveScope` for the window
    to follow while unpinned (without one it stays on its scope). Call it with
    qasync's loop set as the asyncio event loop.

    >>> window = open_proc_window(supervisor, "build", "compiler")  # doctest: +SKIP
    >>> window.title()  # doctest: +SKIP
    'Processes - build/compiler'
    """
    ensure_style()
    owns_engine = engine is None
    if engine is None:
        engine = QQmlEngine()
        _own_engines.add(engine)
        engine.destroyed.connect(functools.partial(_own_engines.discard, engine))
    try:
        component = _proc_window_component(engine)
    except RuntimeError:
        if owns_engine:
            engine.deleteLater()
        raise
    proc_model = ProcModel(supervisor, session, agent)
    output_model = OutputModel(supervisor)
    output_model.darkBackground = True
    stats = StatsSampler(supervisor)
    controller = ProcController(supervisor)
    properties: dict[str, Any] = {
        "procModel": proc_model,
        "outputModel": output_model,
        "stats": stats,
        "controller": controller,
    }
    if active_scope is not None:
        properties["activeScope"] = active_scope
    if pinned is not None:
        properties["pinned"] = pinned
    window = component.createWithInitialProperties(properties)
    if not isinstance(window, QQuickWindow):
        proc_model.close()
        output_model.close()
        if owns_engine:
            engine.deleteLater()
        raise RuntimeError("cannot create a ProcWindow:\n" + component.errorString())
    # The models go with the window, after its items (which bind to them).
    for obj in (proc_model, output_model, stats, controller):
        obj.setParent(window)
    if owns_engine:
        window.destroyed.connect(engine.deleteLater)
    handle = _OpenWindow(window, proc_model, output_model, stats, engine)
    _open_windows[id(handle)] = handle
    window.finished.connect(handle.on_finished)  # type: ignore[attr-defined]
    window.show()
    window.requestActivate()
    return window


def proc_windows() -> list[QQuickWindow]:
    """The ProcWindows open now, oldest first."""
    return [handle.window for handle in _open_windows.values()]


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
