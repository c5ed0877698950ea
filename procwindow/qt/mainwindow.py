"""The main window of the application: its hosts, its QML, and the ProcWindows it opens.

:class:`Workspace` is what ``procwindow`` (and ``procwindow attach``) open:
the QML main window over one supervisor or several (each a
:class:`~procwindow.qt.Host`), its view-model, and one ProcWindow per host and
scope on demand. It holds no event loop and no supervisor of its own: the
application (:mod:`procwindow.app`) makes those, and closes them after it.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtGui import QGuiApplication
from PySide6.QtQml import QQmlApplicationEngine
from PySide6.QtQuick import QQuickWindow

from procwindow.core import SupervisorAPI

from .controller import ActiveScope, ProcController
from .host_tree import HostTreeModel
from .hosts import LOCAL_KEY, LOCAL_LABEL, Host
from .main_viewmodel import MainWindowModel
from .models import ProcModel, SessionModel
from .notify import FailureNotifier
from .viewmodel import ProcWindowModel
from .window import (
    QML_MODULE,
    close_proc_windows,
    find_proc_window,
    open_proc_window,
    prepare_engine,
    window_model,
)

__all__ = ["Workspace"]


class Workspace(QObject):
    """The application's glue: the main window, its hosts, and the ProcWindows it opens.

    The window shows ``supervisor`` (its first host: ``key``/``label``, this
    window's own by default) and any other supervisor given to
    :meth:`add_host` (one it is attached to), each a
    :class:`~procwindow.qt.Host` in the session tree. The main window's QML
    sees a :class:`~procwindow.qt.MainWindowModel`, which opens ProcWindows
    through :meth:`open_window` (one per host and scope: asking again raises
    the open one) and asks to quit when the main window closes; :meth:`quit`
    (also on the last window closed) emits ``quitRequested``, on which the
    application closes its supervisor. ``detachRequested(key)`` passes on the
    person's wish to stop watching an attached host. With ``notify``, a proc
    that fails while no window has the focus is told to the desktop
    (:class:`~procwindow.qt.notify.FailureNotifier`).
    """

    quitRequested = Signal()
    detachRequested = Signal(str)

    def __init__(
        self,
        supervisor: SupervisorAPI,
        *,
        scopes: dict[str, list[str]] | None = None,
        notify: bool = False,
        key: str = LOCAL_KEY,
        label: str = LOCAL_LABEL,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self.supervisor = supervisor
        self._notify = notify
        self.engine = QQmlApplicationEngine()
        prepare_engine(self.engine)
        self.tree_model = HostTreeModel(self)
        self.host = Host(supervisor, key, label, scopes=scopes, notify=notify, parent=self)
        self.tree_model.addHost(self.host)
        self.view_model = MainWindowModel(self.tree_model, self._open_window_model, self)
        self.view_model.quitRequested.connect(self.quit)
        self.view_model.detachRequested.connect(self.detachRequested)
        self._done = False
        app = QGuiApplication.instance()
        if isinstance(app, QGuiApplication):
            app.lastWindowClosed.connect(self.quit)

    # The first host's models, by their old names.
    @property
    def session_model(self) -> SessionModel:
        """The first host's sessions and agents."""
        return self.host.session_model

    @property
    def active_scope(self) -> ActiveScope:
        """The scope selected on the first host."""
        return self.host.active_scope

    @property
    def controller(self) -> ProcController:
        """The first host's actions."""
        return self.host.controller

    @property
    def overview_model(self) -> ProcModel:
        """The overview of the first host's selected scope."""
        return self.host.overview_model

    @property
    def notifier(self) -> FailureNotifier | None:
        """The first host's desktop notifications (None when off)."""
        return self.host.notifier

    def add_host(
        self,
        supervisor: SupervisorAPI,
        key: str,
        label: str,
        *,
        scopes: dict[str, list[str]] | None = None,
    ) -> Host:
        """Show another supervisor (one this window is attached to) as a node of
        the session tree; ValueError if ``key`` is shown already."""
        if self.tree_model.host(key) is not None:
            raise ValueError(f"{label} is shown already")
        host = Host(supervisor, key, label, scopes=scopes, notify=self._notify, parent=self)
        window = self.main_window
        if window is not None:
            host.setParent(window)  # it goes with the window, as the first host does
        self.tree_model.addHost(host)
        return host

    def remove_host(self, key: str) -> Host | None:
        """Stop showing a host (its ProcWindows close, its models stop); the
        supervisor is the caller's to close. The host, or None."""
        host = self.tree_model.host(key)
        if host is None or host is self.host:
            return None
        close_proc_windows(self.engine, host.supervisor)
        self.tree_model.removeHost(key)
        host.close()
        return host

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
        for obj in (self.view_model, self.tree_model, *self.tree_model.hosts()):
            obj.setParent(window)
        # The tree shows the active scope once it is laid out.
        self.view_model.showActiveScope()
        return window

    @Slot(str, str, result=QObject)
    def openProcWindow(self, session: str, agent: str) -> QObject | None:
        """Open a ProcWindow on ``(session, agent)`` of the first host; raise the
        one already showing it."""
        return self.open_window(self.host, session, agent)

    def open_window(self, host: Host, session: str, agent: str) -> QQuickWindow | None:
        """Open a ProcWindow on ``(session, agent)`` of ``host``; raise the one
        already showing it. None once closing, or without a session."""
        if self._done or not session:
            return None
        window = find_proc_window(self.engine, session, agent, host.supervisor)
        if window is not None:
            return window
        where = host.label if host is not self.host or host.remote else ""
        return open_proc_window(
            host.supervisor,
            session,
            agent,
            self.engine,
            active_scope=host.active_scope,
            where=where,
        )

    def _open_window_model(self, host: Host, session: str, agent: str) -> ProcWindowModel | None:
        window = self.open_window(host, session, agent)
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
        for host in self.tree_model.hosts():
            host.close()
        self.engine.deleteLater()
