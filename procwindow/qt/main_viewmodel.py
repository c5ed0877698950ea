"""The main window's view-model: the active scope, the session tree, the overview.

The window may show several supervisors (its own, and those it is attached
to), each a :class:`~procwindow.qt.hosts.Host`; the active scope's host is the
one every action of the window acts on.

The main window's QML holds layout, bindings and shortcuts; what it shows and
decides lives here (see :mod:`procwindow.qt.viewmodel` for the ProcWindow's).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Property, QItemSelectionModel, QModelIndex, QObject, QTimer, Signal, Slot
from PySide6.QtQml import QmlElement, QmlUncreatable

from procwindow.core import ProcwindowError

from ._support import Later, connect_all, plural, set_stored, stored_property
from .attachform import AttachForm
from .controller import ActiveScope, ProcController
from .host_tree import HostTreeModel
from .hosts import Host
from .models import ProcModel, SearchModel, SearchSource
from .runform import RunForm
from .viewmodel import ProcWindowModel

__all__ = ["STATUS_MS", "MainWindowModel", "ScopeSelection"]

QML_IMPORT_NAME = "Procwindow"
QML_IMPORT_MAJOR_VERSION = 1

#: How long the status line keeps a message (ms).
STATUS_MS = 8000
_HINT = "  ·  right-click for Processes…  ·  double-click a row to stream it"


@QmlElement
@QmlUncreatable("MainWindowModel makes the session tree's selection")
class ScopeSelection(QItemSelectionModel):  # type: ignore[operator]  # PySide's stub: not callable
    """The session tree's selection, kept on the active scope.

    The node made current (a click, the keyboard) is handed to ``choose(host,
    session, agent)`` (the main window makes it the active scope);
    ``showScope`` makes a scope chosen elsewhere the current node, and
    ``scopeShown`` asks the tree to show it (its session expanded, scrolled
    into view).
    """

    scopeShown = Signal(QModelIndex)
    """The tree should show this node: expand its session, scroll it into view."""

    def __init__(
        self,
        tree: HostTreeModel,
        choose: Callable[[Host, str, str], None],
        parent: QObject | None = None,
    ) -> None:
        super().__init__(tree)
        if parent is not None:
            self.setParent(parent)
        self._tree = tree
        self._choose = choose
        self._shown: tuple[str, str, str] = ("", "", "")
        self._sync_later = Later(self, self._show_scope)
        self.currentChanged.connect(self._on_current)
        tree.modelReset.connect(self._sync_later.start)

    def _on_current(self, current: QModelIndex, _previous: QModelIndex) -> None:
        scope = self._tree.scopeOf(current) if current.isValid() else None
        if scope is not None:
            self._choose(*scope)

    def showScope(self, host: str, session: str, agent: str) -> None:
        """Make ``(session, agent)`` of ``host`` the current node, soon (once the
        tree has caught up)."""
        self._shown = (host, session, agent)
        self._sync_later.start()

    def _show_scope(self) -> None:
        host, session, agent = self._shown
        current = self.currentIndex()
        if current.isValid():
            now = self._tree.scopeOf(current)
            if now is not None and (now[0].key, now[1], now[2]) == self._shown:
                return
        index = self._tree.indexFor(session, agent, host)
        if index.isValid():
            self.setCurrentIndex(index, QItemSelectionModel.SelectionFlag.ClearAndSelect)
            self.scopeShown.emit(index)


@QmlElement
@QmlUncreatable("the application makes the main window's model")
class MainWindowModel(QObject):  # type: ignore[operator]  # PySide's stub: not callable
    """The state and decisions of the main window.

    The window shows the supervisors of ``tree`` (a :class:`HostTreeModel` of
    one :class:`Host` or several). The node made current in the session tree
    is the active scope: its host becomes ``activeHost``, and ``activeScope``,
    ``controller`` and ``overviewModel`` are that host's, so
    every action acts on the supervisor its scope belongs to. A host's own
    node (shown when there are several) selects the host and no session.
    ``treeSelection`` keeps the tree on the active scope (see
    :class:`ScopeSelection`). ``open_window(host, session, agent)`` (given by
    the application) opens or raises a ProcWindow and returns its
    :class:`ProcWindowModel`. ``searchModel`` searches the output of every
    run of every host, live and past (``searchShown`` puts its results in
    place of the overview); ``openLine`` opens a hit on its host, at its line.
    Messages about a host's processes (the status line, the desktop's
    notifications) name the host when there are several.
    """

    statusChanged = Signal()
    overviewChanged = Signal()
    menuScopeChanged = Signal()
    quitRequested = Signal()
    searchShownChanged = Signal()
    #: The search field should take the keyboard (``showSearch``).
    searchFocusRequested = Signal()
    activeHostChanged = Signal()
    """``activeHost`` changed, and with it ``activeScope``, ``controller`` and
    ``overviewModel``."""
    searchPlaceholderChanged = Signal()
    detachRequested = Signal(str, arguments=["host"])
    """The person asked to stop watching the host of this key (the application closes its link)."""

    def __init__(
        self,
        tree: HostTreeModel,
        open_window: Callable[[Host, str, str], ProcWindowModel | None],
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        hosts = tree.hosts()
        if not hosts:
            raise ValueError("the main window needs a host to show")
        self._tree = tree
        self._host = hosts[0]
        self._open_window = open_window
        self._selection = ScopeSelection(tree, self._choose, self)
        self._status_text = ""
        self._status_error = False
        self._overview_texts = ("", "")
        self._menu: tuple[Host, str, str] = (self._host, "", "")
        self._run_form = RunForm(self._host.controller, self)
        self._attach_form = AttachForm(self)
        self._search_shown = False
        self._search = SearchModel(parent=self, sources=self._search_sources)
        self._status_timer = QTimer(self)
        self._status_timer.setSingleShot(True)
        self._status_timer.setInterval(STATUS_MS)
        self._status_timer.timeout.connect(self._clear_status)
        self._followed: dict[str, list[Callable[[], None]]] = {}
        for host in hosts:
            self._follow(host)
        tree.hostsChanged.connect(self._on_hosts_changed)
        # The search's placeholder says every host is searched when there are several.
        tree.hostsChanged.connect(self.searchPlaceholderChanged)
        self._name_notifications()
        self._on_scope_changed()

    # -- the hosts ---------------------------------------------------------------------------

    def _follow(self, host: Host) -> None:
        """Hear ``host``'s scope, overview, actions and link."""

        def scope_changed() -> None:
            self._scope_moved(host)

        def overview_changed() -> None:
            if host is self._host:
                self._update_overview()

        def failed(_proc_id: int, _action: str, message: str) -> None:
            self.showStatus(self._on_host(host, message), True)

        def started(proc_id: int) -> None:
            self.showStatus(self._on_host(host, f"Started process {proc_id}"), False)

        self._followed[host.key] = connect_all(
            [
                (host.active_scope.changed, scope_changed),
                (host.overview_model.countChanged, overview_changed),
                (host.connectedChanged, overview_changed),
                (host.controller.actionFailed, failed),
                (host.controller.started, started),
            ]
        )

    def _on_hosts_changed(self) -> None:
        hosts = {h.key: h for h in self._tree.hosts()}
        for key in [k for k in self._followed if k not in hosts]:
            for disconnect in self._followed.pop(key):
                disconnect()
        for key, host in hosts.items():
            if key not in self._followed:
                self._follow(host)
        if self._host.key not in hosts:
            self._set_host(next(iter(hosts.values())))
        self._name_notifications()
        self._update_overview()
        self.showActiveScope()

    def _on_host(self, host: Host, message: str) -> str:
        """``message``, naming the host it is about when the window shows several."""
        return f"{host.label}: {message}" if self._tree.shows_hosts else message

    def _name_notifications(self) -> None:
        """The desktop's notifications of each host name it when there are several."""
        for host in self._tree.hosts():
            if host.notifier is not None:
                host.notifier.host_label = host.label if self._tree.shows_hosts else ""

    def _choose(self, host: Host, session: str, agent: str) -> None:
        """The tree made a node current: its scope becomes the active one."""
        self._set_host(host)
        host.active_scope.setScope(session, agent)
        self._on_scope_changed()

    def _scope_moved(self, host: Host) -> None:
        """``host``'s scope changed (the tree, a ProcWindow, a search hit): it is the active one."""
        self._set_host(host)
        self._on_scope_changed()
        self.showActiveScope()

    def _set_host(self, host: Host) -> None:
        if host is self._host:
            return
        self._host = host
        self.activeHostChanged.emit()

    def _get_host(self) -> Host:
        return self._host

    activeHost = Property(Host, _get_host, notify=activeHostChanged)
    """The host of the active scope."""

    @property
    def hosts(self) -> HostTreeModel:
        """The session tree over the window's hosts."""
        return self._tree

    # -- the models, for QML -------------------------------------------------------

    def _get_sessions(self) -> HostTreeModel:
        return self._tree

    def _get_scope(self) -> ActiveScope:
        return self._host.active_scope

    def _get_controller(self) -> ProcController:
        return self._host.controller

    def _get_overview(self) -> ProcModel:
        return self._host.overview_model

    def _get_selection(self) -> ScopeSelection:
        return self._selection

    sessionModel = Property(HostTreeModel, _get_sessions, constant=True)
    """The session tree: the sessions and agents of every host."""
    activeScope = Property(ActiveScope, _get_scope, notify=activeHostChanged)
    """The scope selected on the active host."""
    controller = Property(ProcController, _get_controller, notify=activeHostChanged)
    """The active host's actions."""
    overviewModel = Property(ProcModel, _get_overview, notify=activeHostChanged)
    """The processes of the active scope."""
    treeSelection = Property(ScopeSelection, _get_selection, constant=True)
    """The session tree's selection model (its current node is the active scope)."""

    # -- searching every run ----------------------------------------------------------------

    def _search_sources(self) -> list[SearchSource]:
        """Every host, in the tree's order (a disconnected one is noted, not searched)."""
        return [SearchSource(h.supervisor, h.key, h.label, h.connected) for h in self._tree.hosts()]

    def _get_search(self) -> SearchModel:
        return self._search

    searchModel = Property(SearchModel, _get_search, constant=True)
    """The search across the output of every run of every host, live and past."""

    def _get_search_placeholder(self) -> str:
        if self._tree.shows_hosts:
            return "Search the output of every run on every host, also past ones…"
        return "Search the output of every run, also past ones…"

    searchPlaceholder = Property(str, _get_search_placeholder, notify=searchPlaceholderChanged)
    """What the empty search field says (that it searches every host, when there are several)."""

    def _on_search_shown(self) -> None:
        if not self._search_shown:
            self._search.cancel()

    searchShown = stored_property(
        bool, "_search_shown", searchShownChanged, on_change=_on_search_shown
    )
    """The search's results show in place of the overview (hiding them stops it)."""

    @Slot()
    def showSearch(self) -> None:
        """Show the search and give its field the keyboard."""
        self.searchShown = True
        self.searchFocusRequested.emit()

    @Slot(str, int, int)
    def openLine(self, host: str, procId: int, seq: int) -> None:
        """Open the ProcWindow of ``procId``'s scope on the host of key ``host``,
        on its line ``seq`` (a search hit).

        The scope becomes the active one (its host the active host); a run
        that is not live opens in the window's History view.
        """
        shown = self._tree.host(host)
        if shown is None:  # detached since the search
            self.showStatus("The host of this match is no longer shown", True)
            return
        try:
            proc = shown.supervisor.get(procId)
            session, agent = proc.session, proc.agent
        except ProcwindowError as exc:
            # An attached server knows a past run it has not listed yet: its hit says where.
            scope = self._search.scope_of(host, procId)
            if scope is None:
                self.showStatus(self._on_host(shown, str(exc)), True)
                return
            session, agent = scope
        shown.active_scope.setScope(session, agent)
        window = self._open_window(shown, session, agent)
        if window is not None:
            window.showLine(procId, seq)

    @Slot()
    def showActiveScope(self) -> None:
        """Make the active scope the tree's current node, once the tree has caught up."""
        scope = self._host.active_scope
        self._selection.showScope(self._host.key, scope.session, scope.agent)

    # -- the overview ----------------------------------------------------------------------

    def _on_scope_changed(self) -> None:
        scope = self._host.active_scope
        self._host.overview_model.setScope(scope.session, scope.agent)
        self._update_overview()

    def _update_overview(self) -> None:
        host = self._host
        session, agent = host.active_scope.session, host.active_scope.agent
        if not session and self._tree.shows_hosts:
            texts = (host.label, self._host_summary(host))
        elif not session:
            texts = ("No scope selected", "Select a session or an agent on the left.")
        else:
            where = "" if agent else " across all agents"
            # Processes, as the tree counts them: a command's earlier runs too.
            overview = self._host.overview_model
            count = plural(overview.count + overview.foldedCount, "process", "processes")
            summary = count + where + _HINT
            if not host.connected:
                summary = f"disconnected from {host.label}, reconnecting  ·  {summary}"
            elif self._tree.shows_hosts:
                summary = f"on {host.label}  ·  {summary}"
            texts = (f"{session} / {agent}" if agent else session, summary)
        if texts != self._overview_texts:
            self._overview_texts = texts
            self.overviewChanged.emit()

    def _host_summary(self, host: Host) -> str:
        sessions = plural(host.session_model.rowCount(), "session", "sessions")
        where = host.where or "in this process"
        link = "" if host.connected else "  ·  disconnected, reconnecting"
        return f"{where}  ·  {sessions}{link}  ·  select a session or an agent"

    def _get_has_scope(self) -> bool:
        return bool(self._host.active_scope.session)

    def _get_overview_title(self) -> str:
        return self._overview_texts[0]

    def _get_overview_summary(self) -> str:
        return self._overview_texts[1]

    hasScope = Property(bool, _get_has_scope, notify=overviewChanged)
    """True while a session is selected (the scope's actions are enabled)."""
    overviewTitle = Property(str, _get_overview_title, notify=overviewChanged)
    """``build / cc``, ``build``, a host's label, or ``No scope selected``."""
    overviewSummary = Property(str, _get_overview_summary, notify=overviewChanged)
    """``3 processes across all agents  ·  …`` under the title."""

    # -- processes, the menu and the Run dialog ------------------------------------------

    @Slot(str, str)
    def openProcesses(self, session: str, agent: str) -> None:
        """Open (or raise) the ProcWindow of ``(session, agent)`` of the active
        host; nothing without a session."""
        if session:
            self._open_window(self._host, session, agent)

    @Slot(int)
    def streamInWindow(self, procId: int) -> None:
        """Open the active scope's ProcWindow and stream ``procId`` there."""
        scope = self._host.active_scope
        if not scope.session:
            return
        window = self._open_window(self._host, scope.session, scope.agent)
        if window is not None:
            window.stream(procId)

    @Slot(str, str)
    def setMenuScope(self, session: str, agent: str) -> None:
        """The scope the context menu acts on (the node it opened on: the active host's)."""
        menu = (self._host, session, agent)
        if menu != self._menu:
            self._menu = menu
            self.menuScopeChanged.emit()

    def _get_menu_session(self) -> str:
        return self._menu[1]

    def _get_menu_agent(self) -> str:
        return self._menu[2]

    def _get_menu_detachable(self) -> bool:
        host, session, _agent = self._menu
        return host.remote and not session and host is not self._tree.hosts()[0]

    menuSession = Property(str, _get_menu_session, notify=menuScopeChanged)
    menuAgent = Property(str, _get_menu_agent, notify=menuScopeChanged)
    menuDetachable = Property(bool, _get_menu_detachable, notify=menuScopeChanged)
    """The menu opened on the node of a host this window was attached to
    besides its first (Detach)."""

    @Slot()
    def terminateAll(self) -> None:
        """Terminate every running process of the menu's scope, on its host."""
        host, session, agent = self._menu
        host.controller.termAll(session, agent)

    @Slot()
    def detach(self) -> None:
        """Stop watching the menu's host (nothing there stops)."""
        if self._get_menu_detachable():
            self.detachRequested.emit(self._menu[0].key)

    @Slot(str, str)
    def requestRun(self, session: str, agent: str) -> None:
        """Open the Run dialog on a scope of the active host (the default session
        and agent where none)."""
        host = self._host
        where = host.label if self._tree.shows_hosts or host.remote else ""
        self._run_form.open(session, agent, controller=host.controller, where=where)

    def _get_run_form(self) -> RunForm:
        return self._run_form

    runForm = Property(RunForm, _get_run_form, constant=True)
    """The Run dialog's form (its scope, its errors, the spawn)."""

    def _get_attach_form(self) -> AttachForm:
        return self._attach_form

    attachForm = Property(AttachForm, _get_attach_form, constant=True)
    """The Attach dialog's form (``available`` once the application can attach)."""

    @property
    def attach_form(self) -> AttachForm:
        """``attachForm``, typed for Python (the application gives it its attacher)."""
        return self._attach_form

    @Slot()
    def requestAttach(self) -> None:
        """Open the Attach dialog (when the application can attach)."""
        self._attach_form.open()

    @Slot()
    def quit(self) -> None:
        """The main window closed: the application ends."""
        self.quitRequested.emit()

    # -- the status line -------------------------------------------------------------------

    @Slot(str, bool)
    def showStatus(self, message: str, isError: bool) -> None:
        """Show ``message`` in the status line for :data:`STATUS_MS`."""
        self._status_text, self._status_error = message, isError
        self.statusChanged.emit()
        self._status_timer.start()

    def _clear_status(self) -> None:
        set_stored(self, "_status_text", "", MainWindowModel.statusChanged)

    statusText = stored_property(str, "_status_text", statusChanged, writable=False)
    statusError = stored_property(bool, "_status_error", statusChanged, writable=False)
