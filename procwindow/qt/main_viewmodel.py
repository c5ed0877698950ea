"""The main window's view-model: the active scope, the session tree, the overview.

The main window's QML holds layout, bindings and shortcuts; what it shows and
decides lives here (see :mod:`procwindow.qt.viewmodel` for the ProcWindow's).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Property, QItemSelectionModel, QModelIndex, QObject, QTimer, Signal, Slot
from PySide6.QtQml import QmlElement, QmlUncreatable

from procwindow.core import ProcwindowError

from ._support import Later, plural, set_stored, stored_property
from .controller import ActiveScope, ProcController
from .models import ProcModel, SearchModel, SessionModel
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

    The node made current (a click, the keyboard) becomes the active scope; a
    scope made active elsewhere becomes the current node, and ``scopeShown``
    asks the tree to show it (its session expanded, scrolled into view).
    """

    scopeShown = Signal(QModelIndex)
    """The tree should show this node: expand its session, scroll it into view."""

    def __init__(
        self, session_model: SessionModel, active_scope: ActiveScope, parent: QObject | None = None
    ) -> None:
        super().__init__(session_model)
        if parent is not None:
            self.setParent(parent)
        self._sessions = session_model
        self._scope = active_scope
        roles = {bytes(name.data()): role for role, name in session_model.roleNames().items()}
        self._session_role, self._agent_role = roles[b"session"], roles[b"agent"]
        self._sync_later = Later(self, self._show_scope)
        self.currentChanged.connect(self._on_current)
        active_scope.changed.connect(self.showActiveScope)

    def _scope_of(self, index: QModelIndex) -> tuple[str, str]:
        return str(index.data(self._session_role)), str(index.data(self._agent_role))

    def _on_current(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if current.isValid():
            self._scope.setScope(*self._scope_of(current))

    @Slot()
    def showActiveScope(self) -> None:
        """Make the active scope's node current, soon (once the tree has caught up)."""
        self._sync_later.start()

    def _show_scope(self) -> None:
        scope = (self._scope.session, self._scope.agent)
        current = self.currentIndex()
        if current.isValid() and self._scope_of(current) == scope:
            return
        index = self._sessions.indexFor(*scope)
        if index.isValid():
            self.setCurrentIndex(index, QItemSelectionModel.SelectionFlag.ClearAndSelect)
            self.scopeShown.emit(index)


@QmlElement
@QmlUncreatable("the application makes the main window's model")
class MainWindowModel(QObject):  # type: ignore[operator]  # PySide's stub: not callable
    """The state and decisions of the main window.

    ``treeSelection`` keeps the session tree on ``activeScope`` (see
    :class:`ScopeSelection`); the overview table shows the active scope.
    ``open_window(session, agent)`` (given by the application) opens or raises
    a ProcWindow and returns its :class:`ProcWindowModel`. ``searchModel``
    searches the output of every run, live and past (``searchShown`` puts its
    results in place of the overview); ``openLine`` opens a hit at its line.
    """

    statusChanged = Signal()
    overviewChanged = Signal()
    menuScopeChanged = Signal()
    quitRequested = Signal()
    searchShownChanged = Signal()
    #: The search field should take the keyboard (``showSearch``).
    searchFocusRequested = Signal()

    def __init__(
        self,
        session_model: SessionModel,
        active_scope: ActiveScope,
        controller: ProcController,
        overview_model: ProcModel,
        open_window: Callable[[str, str], ProcWindowModel | None],
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._sessions = session_model
        self._scope = active_scope
        self._controller = controller
        self._overview = overview_model
        self._open_window = open_window
        self._selection = ScopeSelection(session_model, active_scope, self)
        self._status_text = ""
        self._status_error = False
        self._overview_texts = ("", "")
        self._menu = ("", "")
        self._run_form = RunForm(controller, self)
        self._search = SearchModel(controller.supervisor, self)
        self._search_shown = False
        self._status_timer = QTimer(self)
        self._status_timer.setSingleShot(True)
        self._status_timer.setInterval(STATUS_MS)
        self._status_timer.timeout.connect(self._clear_status)

        active_scope.changed.connect(self._on_scope_changed)
        overview_model.countChanged.connect(self._update_overview)
        controller.actionFailed.connect(self._on_action_failed)
        controller.started.connect(self._on_started)
        self._on_scope_changed()

    # -- the models, for QML -------------------------------------------------------

    def _get_sessions(self) -> SessionModel:
        return self._sessions

    def _get_scope(self) -> ActiveScope:
        return self._scope

    def _get_controller(self) -> ProcController:
        return self._controller

    def _get_overview(self) -> ProcModel:
        return self._overview

    def _get_selection(self) -> ScopeSelection:
        return self._selection

    sessionModel = Property(SessionModel, _get_sessions, constant=True)
    activeScope = Property(ActiveScope, _get_scope, constant=True)
    controller = Property(ProcController, _get_controller, constant=True)
    overviewModel = Property(ProcModel, _get_overview, constant=True)
    treeSelection = Property(ScopeSelection, _get_selection, constant=True)
    """The session tree's selection model (its current node is the active scope)."""

    # -- searching every run ----------------------------------------------------------------

    def _get_search(self) -> SearchModel:
        return self._search

    searchModel = Property(SearchModel, _get_search, constant=True)
    """The search across the output of every run, live and past."""

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

    @Slot(int, int)
    def openLine(self, procId: int, seq: int) -> None:
        """Open the ProcWindow of ``procId``'s scope on its line ``seq`` (a search hit).

        The scope becomes the active one; a run that is not live opens in the
        window's History view.
        """
        try:
            proc = self._controller.supervisor.get(procId)
        except ProcwindowError as exc:
            self.showStatus(str(exc), True)
            return
        self._scope.setScope(proc.session, proc.agent)
        window = self._open_window(proc.session, proc.agent)
        if window is not None:
            window.showLine(procId, seq)

    @Slot()
    def showActiveScope(self) -> None:
        """Make the active scope the tree's current node, once the tree has caught up."""
        self._selection.showActiveScope()

    # -- the overview ----------------------------------------------------------------------

    def _on_scope_changed(self) -> None:
        self._overview.setScope(self._scope.session, self._scope.agent)
        self._update_overview()

    def _update_overview(self) -> None:
        session, agent = self._scope.session, self._scope.agent
        if not session:
            texts = ("No scope selected", "Select a session or an agent on the left.")
        else:
            where = "" if agent else " across all agents"
            count = plural(self._overview.count, "process", "processes")
            texts = (f"{session} / {agent}" if agent else session, count + where + _HINT)
        if texts != self._overview_texts:
            self._overview_texts = texts
            self.overviewChanged.emit()

    def _get_has_scope(self) -> bool:
        return bool(self._scope.session)

    def _get_overview_title(self) -> str:
        return self._overview_texts[0]

    def _get_overview_summary(self) -> str:
        return self._overview_texts[1]

    hasScope = Property(bool, _get_has_scope, notify=overviewChanged)
    """True while a session is selected (the scope's actions are enabled)."""
    overviewTitle = Property(str, _get_overview_title, notify=overviewChanged)
    """``build / cc``, ``build``, or ``No scope selected``."""
    overviewSummary = Property(str, _get_overview_summary, notify=overviewChanged)
    """``3 processes across all agents  ·  …`` under the title."""

    # -- processes, the menu and the Run dialog ------------------------------------------

    @Slot(str, str)
    def openProcesses(self, session: str, agent: str) -> None:
        """Open (or raise) the ProcWindow of ``(session, agent)``; nothing without a session."""
        if session:
            self._open_window(session, agent)

    @Slot(int)
    def streamInWindow(self, procId: int) -> None:
        """Open the active scope's ProcWindow and stream ``procId`` there."""
        if not self._scope.session:
            return
        window = self._open_window(self._scope.session, self._scope.agent)
        if window is not None:
            window.stream(procId)

    @Slot(str, str)
    def setMenuScope(self, session: str, agent: str) -> None:
        """The scope the context menu acts on (the node it opened on)."""
        if (session, agent) != self._menu:
            self._menu = (session, agent)
            self.menuScopeChanged.emit()

    def _get_menu_session(self) -> str:
        return self._menu[0]

    def _get_menu_agent(self) -> str:
        return self._menu[1]

    menuSession = Property(str, _get_menu_session, notify=menuScopeChanged)
    menuAgent = Property(str, _get_menu_agent, notify=menuScopeChanged)

    @Slot(str, str)
    def requestRun(self, session: str, agent: str) -> None:
        """Open the Run dialog on a scope (the default session and agent where none)."""
        self._run_form.open(session, agent)

    def _get_run_form(self) -> RunForm:
        return self._run_form

    runForm = Property(RunForm, _get_run_form, constant=True)
    """The Run dialog's form (its scope, its errors, the spawn)."""

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

    def _on_action_failed(self, _proc_id: int, _action: str, message: str) -> None:
        self.showStatus(message, True)

    def _on_started(self, proc_id: int) -> None:
        self.showStatus(f"Started process {proc_id}", False)

    statusText = stored_property(str, "_status_text", statusChanged, writable=False)
    statusError = stored_property(bool, "_status_error", statusChanged, writable=False)
