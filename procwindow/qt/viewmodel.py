"""The ProcWindow's view-model: what its QML shows and decides, kept in Python.

The QML files hold layout, bindings and shortcuts. The state behind them (the
process the keyboard acts on, the one streaming, whether the window follows the
main window's scope, the output lines selected, whether the output follows its
tail) and every decision and composed text live here, and are tested without a
window. The main window's view-model is :mod:`procwindow.qt.main_viewmodel`.

:class:`ProcWindowModel`
    One ProcWindow (``open_proc_window`` makes it with the window's models).
    Its output pane has a model of its own
    (:class:`~procwindow.qt.output_pane.OutputPaneModel`), which it forwards.
:class:`ProcTableStyle`
    The process table's column widths and status colours (each table makes one);
    it lives in :mod:`procwindow.qt.table`, re-exported here.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Property, QObject, QTimer, QUrl, Signal, Slot
from PySide6.QtGui import QDesktopServices
from PySide6.QtQml import QmlElement, QmlUncreatable

from ._support import Later, constant_property, qt_property, set_stored, stored_property
from .controller import ActiveScope, ProcController, StatsSampler
from .models import HistoryModel, OutputModel, ProcModel, ProcRole, ProcTreeModel
from .output_pane import OutputPaneModel
from .pane import InputLine, OutputFind
from .runform import RunForm
from .table import COLUMN_WIDTHS, ProcTableStyle, column_widths, minimum_table_width, status_tint
from .waiting import WorkspaceStatus

__all__ = [
    "BANNER_MS",
    "COLUMN_WIDTHS",
    "ProcTableStyle",
    "ProcWindowModel",
    "column_widths",
    "minimum_table_width",
    "status_tint",
]

QML_IMPORT_NAME = "Procwindow"
QML_IMPORT_MAJOR_VERSION = 1

#: How long a ProcWindow's banner shows a message (ms): (information, error).
BANNER_MS = (2000, 6000)
#: The History button's tooltip, by ``showHistory``.
_HISTORY_TIPS = {
    False: "Every recorded run of this scope, also from earlier sessions",
    True: "Back to the live processes",
}
#: The header's pin state and the pin button's tooltip, by ``pinned``.
_PIN_TEXTS = {
    False: ("follows selection", "Pin to this scope"),
    True: ("pinned", "Unpin: follow the selected session"),
}
#: The signals of the output pane's model that the window model repeats.
_PANE_SIGNALS = (
    "selectionChanged",
    "followingChanged",
    "textsChanged",
    "countTextsChanged",
    "statsTextChanged",
    "gaugesChanged",
    "positionAtEnd",
    "positionAt",
    "linesReplaced",
    "leaveFilter",
)


def _forward(type_: type, name: str, notify: Signal, *, writable: bool = False) -> Any:
    """Property ``name`` of the window's output pane model, as the window model's own."""

    def fget(self: ProcWindowModel) -> object:
        return getattr(self._pane, name)

    def fset(self: ProcWindowModel, value: object) -> None:
        setattr(self._pane, name, value)

    if writable:
        return Property(type_, fget, fset, notify=notify)
    return Property(type_, fget, notify=notify)


def _forward_slot(name: str, *types: type) -> Any:
    """Slot ``name`` of the window's output pane model, as the window model's own."""

    def slot(self: ProcWindowModel, *args: object) -> None:
        getattr(self._pane, name)(*args)

    slot.__name__ = slot.__qualname__ = name
    slot.__doc__ = f"The output pane's ``{name}`` (see :class:`OutputPaneModel`)."
    return Slot(*types)(slot)


@QmlElement
@QmlUncreatable("open_proc_window() makes a ProcWindow's model")
class ProcWindowModel(QObject):  # type: ignore[operator]  # PySide's stub: not callable
    """The state and decisions of one ProcWindow.

    **Selection.** ``currentProcId`` is the proc the keyboard acts on;
    ``stream(procId)`` makes a proc current and streams its output, and so does a
    click on a row (``select``). A restart (``restart``, ``restartCurrent``)
    takes its predecessor's row and streams. The selection settles
    (:meth:`settleSelection`) when the window is complete and whenever rows go
    away or come, or the scope changes: the current proc stays if it is still
    shown, else the first row becomes current; a stream that is gone stops, and
    the current proc streams when nothing does.

    **Scope.** Unpinned, the window follows ``activeScope`` (the main window's
    selection); pinned, or without an ``activeScope``, it stays on its scope.

    **Output pane.** ``pane`` (an
    :class:`~procwindow.qt.output_pane.OutputPaneModel`): what the pane says,
    the lines selected, following the tail. Its properties, slots and signals
    are this model's too (``lineCountText``, ``pressLine``, ``positionAtEnd``…),
    and ``openLog`` opens the log it names. ``liveRequested`` asks the view to
    jump to the live tail (as the End key does).

    **History.** With ``showHistory`` the window lists every recorded run of
    its scope (``historyModel``) in place of the live table; the selection and
    the stream then move among those runs, whose output reads from disk.
    ``showLine(procId, seq)`` streams a run (live or past) and puts the view on
    one of its lines (``revealLine``).

    **Messages.** Failed actions and copies show in a banner for a few seconds.
    """

    currentProcIdChanged = Signal()
    streamingProcIdChanged = Signal()
    pinnedChanged = Signal()
    scopeTextChanged = Signal()
    bannerChanged = Signal()
    showHistoryChanged = Signal()
    windowTitleChanged = Signal()
    liveRequested = Signal()
    """The output view should jump to the live tail (cancelling a flick first)."""
    revealRow = Signal(int)
    """The table should scroll row ``row`` into view."""
    revealHistoryRow = Signal(int)
    """The History view should scroll row ``row`` into view."""
    revealLine = Signal(int)
    """The output view should put row ``row`` in its middle (``showLine``)."""
    # The output pane's (see OutputPaneModel), repeated.
    selectionChanged = Signal()
    followingChanged = Signal()
    textsChanged = Signal()
    countTextsChanged = Signal()
    statsTextChanged = Signal()
    gaugesChanged = Signal()
    positionAtEnd = Signal()
    positionAt = Signal(float)
    linesReplaced = Signal()
    leaveFilter = Signal()

    def __init__(
        self,
        proc_model: ProcModel,
        output_model: OutputModel,
        stats: StatsSampler,
        controller: ProcController,
        active_scope: ActiveScope | None = None,
        *,
        pinned: bool | None = None,
        history: HistoryModel | None = None,
        where: str = "",
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._procs = proc_model
        self._where = where
        if history is None:
            history = HistoryModel(controller.supervisor, self)
        self._history = history
        self._show_history = False
        self._workspace = WorkspaceStatus(controller, self)
        self._output = output_model
        self._stats = stats
        self._controller = controller
        self._run_form = RunForm(controller, self)
        self._pane = OutputPaneModel(output_model, stats, proc_model, controller, self)
        self._tree = ProcTreeModel(controller.supervisor, self)
        self._active_scope = active_scope
        self._pinned = active_scope is None if pinned is None else pinned
        self._current = -1
        self._follow = -1  # a restart to stream once its row is shown
        self._scope_text = ""
        self._banner_text = ""
        self._banner_error = False
        self._banner_visible = False
        self._closed = False
        self._gone_row = -1  # the row of the current proc as it went (-1: it did not)
        self._banner_timer = QTimer(self)
        self._banner_timer.setSingleShot(True)
        self._banner_timer.timeout.connect(self.hideBanner)
        self._settle_later = Later(self, self.settleSelection)
        self._listen()
        self._update_scope_text()
        self._scope_history()
        stats.procId = self._tree.procId = output_model.procId

    def _listen(self) -> None:
        """Hear the models, the pane, the controller and the active scope."""
        procs, history, pane = self._procs, self._history, self._pane
        procs.titleChanged.connect(self.windowTitleChanged)
        procs.runFolded.connect(self._settle_later.start)
        for model in (procs, history):
            for signal in (model.modelReset, model.rowsRemoved, model.rowsInserted):
                signal.connect(self._settle_later.start)
            model.rowsAboutToBeRemoved.connect(
                lambda _parent, first, last, model=model: self._note_removal(model, first, last)
            )
        for signal in (procs.sessionChanged, procs.agentChanged):
            signal.connect(self._update_scope_text)
            signal.connect(self._scope_history)
        self._output.procIdChanged.connect(self._on_stream_changed)
        for name in _PANE_SIGNALS:
            getattr(pane, name).connect(getattr(self, name))
        pane.message.connect(self.showMessage)
        self._run_form.succeeded.connect(self._on_run_started)
        self._controller.actionFailed.connect(self._on_action_failed)
        self._controller.restarted.connect(self._on_restarted)
        if self._active_scope is not None:
            self._active_scope.changed.connect(self.followActiveScope)

    # -- the models, for QML -------------------------------------------------------

    procModel = constant_property(ProcModel, "_procs")
    historyModel = constant_property(HistoryModel, "_history")
    """Every recorded run of the window's scope (shown with ``showHistory``)."""
    workspaceStatus = constant_property(WorkspaceStatus, "_workspace")
    """The scope's workspace commands with no proc yet, and a command's dependencies."""
    outputModel = constant_property(OutputModel, "_output")
    stats = constant_property(StatsSampler, "_stats")
    controller = constant_property(ProcController, "_controller")
    runForm = constant_property(RunForm, "_run_form")
    treeModel = constant_property(ProcTreeModel, "_tree")
    """The streaming proc's processes (the *Processes* panel, shown with its ``active``)."""
    """The Run dialog's form (``requestRun`` opens it on the window's scope)."""
    find = Property(OutputFind, lambda self: self._pane.find, constant=True)
    """Enter / Shift+Enter in the filter: from match to match (``matchText`` says ``3 of 120``)."""
    inputLine = Property(InputLine, lambda self: self._pane.inputLine, constant=True)
    """The line under the output that writes to the streaming proc's stdin."""
    activeScope = constant_property(ActiveScope, "_active_scope")
    """The main window's selection, or None (then the window stays pinned)."""
    canFollow = Property(bool, lambda self: self._active_scope is not None, constant=True)
    """True when there is an ``activeScope`` to follow (the pin button shows)."""

    # -- selection and streaming -------------------------------------------------------

    def _on_pinned(self) -> None:
        if not self._pinned:
            self.followActiveScope()

    def _on_show_history(self) -> None:
        self._history.active = self._show_history
        self._settle_later.start()

    showHistory = stored_property(
        bool, "_show_history", showHistoryChanged, on_change=_on_show_history
    )
    """List every recorded run of the scope (``historyModel``) instead of the live procs."""
    historyTip = qt_property(
        str, lambda self: _HISTORY_TIPS[self._show_history], notify=showHistoryChanged
    )
    """The History button's tooltip: what a click shows."""

    def _rows(self) -> ProcModel | HistoryModel:
        """The rows the selection moves among: the live procs, or the history."""
        return self._history if self._show_history else self._procs

    currentProcId = stored_property(int, "_current", currentProcIdChanged)
    """The proc the keyboard acts on, -1 for none."""
    pinned = stored_property(bool, "_pinned", pinnedChanged, on_change=_on_pinned)
    """Pinned, the window stays on its scope; unpinned, it follows ``activeScope``."""
    pinText = qt_property(str, lambda self: _PIN_TEXTS[self._pinned][0], notify=pinnedChanged)
    """The header's ``pinned`` or ``follows selection``."""
    pinTip = qt_property(str, lambda self: _PIN_TEXTS[self._pinned][1], notify=pinnedChanged)
    """The pin button's tooltip: what a click does."""

    def _get_streaming(self) -> int:
        return self._output.procId

    streamingProcId = Property(int, _get_streaming, notify=streamingProcIdChanged)
    """The proc whose output shows (``outputModel.procId``), -1 for none."""

    @Slot(int)
    def stream(self, procId: int) -> None:
        """Make ``procId`` current and show its output, at the live tail."""
        if procId < 0:
            return
        self.currentProcId = procId
        self._output.procId = procId
        self.liveRequested.emit()

    @Slot(int, int)
    def showLine(self, procId: int, seq: int) -> None:
        """Stream ``procId`` and put the view on its line ``seq``, selected (a
        search hit). A run the live table does not list shows in the history;
        a line the filter hides clears the filter."""
        if procId < 0:
            return
        if self._procs.rowOf(procId) < 0:
            self.showHistory = True
            self._history.reload()
        self.stream(procId)
        row = self._output.rowOfSeq(seq)
        if row < 0 and self._output.filterText:
            self._output.filterText = ""
            row = self._output.rowOfSeq(seq)
        if row < 0:
            return  # no longer held (its earlier lines are named in the pane)
        self._pane.show_row(row)
        self.revealLine.emit(row)

    @Slot(int)
    def select(self, procId: int) -> None:
        """A click on a row: make ``procId`` current and show its output.

        A proc whose output shows already keeps its place in it (a click does
        not pull a person reading back to the tail).
        """
        if procId == self._output.procId:
            self.currentProcId = procId
        else:
            self.stream(procId)

    @Slot(int)
    def moveSelection(self, delta: int) -> None:
        """Move the current proc ``delta`` rows (clamped); from nowhere, to the first row.
        In History, the run moved to shows its output at once (a past run is read,
        not acted on: nothing to confirm with Enter)."""
        rows = self._rows()
        count = rows.rowCount()
        if count == 0:
            return
        row = rows.rowOf(self._current)
        target = 0 if row < 0 else max(0, min(count - 1, row + delta))
        self.currentProcId = rows.procIdAt(target)
        if self._show_history:
            self.revealHistoryRow.emit(target)
            self.stream(self._current)
        else:
            self.revealRow.emit(target)

    @Slot(bool)
    def showRuns(self, shown: bool) -> None:
        """Right (``shown``) or Left: show or hide the earlier runs folded into
        the current row's command; from an earlier run, Left goes to its
        command's row and hides them."""
        rows = self._procs
        row = rows.rowOf(self._current)
        if self._show_history or row < 0:
            return
        while row > 0 and rows.data(rows.index(row, 0), ProcRole.EARLIER_RUN):
            row -= 1  # an earlier run: its command's row is above it
        head, index = rows.procIdAt(row), rows.index(row, 0)
        if not rows.data(index, ProcRole.RESTART_COUNT):
            return
        if bool(rows.data(index, ProcRole.RUNS_SHOWN)) != shown:
            if not shown:
                self.currentProcId = head
            rows.toggleRuns(head)

    @Slot()
    def settleSelection(self) -> None:
        """Keep a valid selection and stream (the window calls it once it is complete).

        Done again, soon, whenever rows go away or come, or the scope changes.
        """
        if self._closed:
            return
        if self._follow >= 0 and self._procs.rowOf(self._follow) >= 0:
            self._follow, follow = -1, self._follow
            self.stream(follow)
        if not self._show_history:
            self._to_command_row()
        rows = self._rows()
        if rows.rowOf(self._output.procId) < 0:
            self._output.procId = -1
        if rows.rowOf(self._current) < 0:
            # The row that took the place of the one that went (Delete), else the first.
            count = rows.rowCount()
            at = min(self._gone_row, count - 1) if self._gone_row >= 0 else 0
            self.currentProcId = rows.procIdAt(at) if count > 0 else -1
        self._gone_row = -1
        if self._output.procId < 0 and self._current >= 0:
            self.stream(self._current)

    def _to_command_row(self) -> None:
        """A run folded behind its workspace command's row (a restart took the
        row, or the earlier runs were hidden): the row stands for it, so the
        stream and the selection move to what the row shows."""
        procs, streaming, current = self._procs, self._output.procId, self._current
        if (
            streaming >= 0
            and procs.rowOf(streaming) < 0
            and (row := procs.rowShowing(streaming)) >= 0
        ):
            self.stream(procs.procIdAt(row))
        elif current >= 0 and procs.rowOf(current) < 0 and (row := procs.rowShowing(current)) >= 0:
            self.currentProcId = procs.procIdAt(row)

    def _note_removal(self, model: ProcModel | HistoryModel, first: int, last: int) -> None:
        """Rows ``first..last`` of ``model`` go: where the current one stood, if it goes."""
        if model is self._rows() and first <= model.rowOf(self._current) <= last:
            self._gone_row = first

    @Slot()
    def followActiveScope(self) -> None:
        """Show the active scope, unless pinned (or it names no session)."""
        scope = self._active_scope
        if self._pinned or self._closed or scope is None or not scope.session:
            return
        self._procs.setScope(scope.session, scope.agent)

    def close(self) -> None:
        """Stop following the active scope and settling (the window is going away)."""
        self._closed = True
        self._pane.close()
        self._tree.close()
        for timer in (self._settle_later, self._banner_timer):
            timer.stop()

    def _on_stream_changed(self) -> None:
        self._stats.procId = self._tree.procId = self._output.procId
        self._pane.streamed()
        self.streamingProcIdChanged.emit()

    def _scope_history(self) -> None:
        self._history.setScope(self._procs.session, self._procs.agent)
        self._workspace.setScope(self._procs.session, self._procs.agent)

    def _update_scope_text(self) -> None:
        session, agent = self._procs.session, self._procs.agent
        text = f"{session} / {agent}" if agent else f"{session} · all agents"
        if self._where:
            text += f"  ·  on {self._where}"
        set_stored(self, "_scope_text", text, ProcWindowModel.scopeTextChanged)

    scopeText = stored_property(str, "_scope_text", scopeTextChanged, writable=False)
    """The header's scope: ``build / cc``, or ``build · all agents`` (then
    ``  ·  on HOST`` for a supervisor that is not this window's)."""

    def _get_window_title(self) -> str:
        title = self._procs.title
        return f"{title} on {self._where}" if self._where else title

    windowTitle = Property(str, _get_window_title, notify=windowTitleChanged)
    """The window's title: the table's, and the supervisor's name when it is elsewhere."""

    # -- actions -----------------------------------------------------------------------

    @Slot()
    def requestRun(self) -> None:
        """Open the Run dialog on the window's scope (the default agent for a whole session)."""
        self._run_form.open(self._procs.session, self._procs.agent, where=self._where)

    def _on_run_started(self, proc_id: int) -> None:
        if self._procs.rowOf(proc_id) >= 0:
            self.stream(proc_id)
        else:  # its row comes with the supervisor's event: settleSelection streams it
            self._follow = proc_id

    @Slot(int)
    def term(self, procId: int) -> None:
        """Make ``procId`` current and terminate it."""
        self.currentProcId = procId
        self._controller.term(procId)

    @Slot(int)
    def kill(self, procId: int) -> None:
        """Make ``procId`` current and kill it."""
        self.currentProcId = procId
        self._controller.kill(procId)

    @Slot(int)
    def restart(self, procId: int) -> None:
        """Make ``procId`` current and start its command again (stopping it first).

        The new proc takes the row of ``procId`` (see ``ProcModel.keepPlace``),
        becomes current and streams.
        """
        self.currentProcId = procId
        self._controller.restart(procId)

    @Slot()
    def restartCurrent(self) -> None:
        """Restart the current proc, if there is one and it can be (not while stopping)."""
        row = self._procs.rowOf(self._current)
        if row >= 0 and self._procs.data(self._procs.index(row, 0), ProcRole.CAN_RESTART):
            self.restart(self._current)

    def _on_restarted(self, proc_id: int, new_id: int) -> None:
        self._procs.keepPlace(new_id, proc_id)
        if self._procs.rowOf(new_id) >= 0:
            self.stream(new_id)
        else:  # its row comes with the supervisor's event: settleSelection streams it
            self._follow = new_id

    @Slot()
    def termCurrent(self) -> None:
        """Terminate the current proc, if there is one."""
        if self._current >= 0:
            self._controller.term(self._current)

    @Slot()
    def killCurrent(self) -> None:
        """Kill the current proc, if there is one."""
        if self._current >= 0:
            self._controller.kill(self._current)

    @Slot()
    def dismissCurrent(self) -> None:
        """Dismiss the current proc, if there is one."""
        if self._current >= 0:
            self._controller.dismiss(self._current)

    def _on_action_failed(self, _proc_id: int, _action: str, message: str) -> None:
        self.showMessage(message, True)

    # -- the banner --------------------------------------------------------------------

    @Slot(str, bool)
    def showMessage(self, message: str, isError: bool) -> None:
        """Show ``message`` in the banner for a few seconds (longer for an error)."""
        self._banner_text, self._banner_error, self._banner_visible = message, isError, True
        self.bannerChanged.emit()
        self._banner_timer.start(BANNER_MS[isError])

    @Slot()
    def hideBanner(self) -> None:
        """Hide the banner now."""
        self._banner_timer.stop()
        set_stored(self, "_banner_visible", False, ProcWindowModel.bannerChanged)

    bannerText = stored_property(str, "_banner_text", bannerChanged, writable=False)
    bannerError = stored_property(bool, "_banner_error", bannerChanged, writable=False)
    bannerVisible = stored_property(bool, "_banner_visible", bannerChanged, writable=False)

    # -- the output pane (its own model, forwarded) ----------------------------------------

    pane = constant_property(OutputPaneModel, "_pane")
    """The output pane's model; its properties and slots are the window model's too."""

    @Slot()
    def openLog(self) -> None:
        """Open ``logPath`` with the desktop's handler for it (a failure shows in the banner)."""
        path = self._pane.logPath
        if path and not QDesktopServices.openUrl(QUrl.fromLocalFile(path)):
            self.showMessage(f"No application opens {path}", True)

    emptyText = _forward(str, "emptyText", textsChanged)
    lineCountText = _forward(str, "lineCountText", countTextsChanged)
    matchText = _forward(str, "matchText", countTextsChanged)
    earlierText = _forward(str, "earlierText", countTextsChanged)
    logText = _forward(str, "logText", textsChanged)
    logPath = _forward(str, "logPath", textsChanged)
    openLogTip = _forward(str, "openLogTip", textsChanged)
    followText = _forward(str, "followText", textsChanged)
    cpuText = _forward(str, "cpuText", statsTextChanged)
    memoryText = _forward(str, "memoryText", statsTextChanged)
    cpuLoad = _forward(float, "cpuLoad", gaugesChanged)
    memoryLoad = _forward(float, "memoryLoad", gaugesChanged)
    selectionStart = _forward(int, "selectionStart", selectionChanged)
    selectionEnd = _forward(int, "selectionEnd", selectionChanged)
    hasSelection = _forward(bool, "hasSelection", selectionChanged)
    selectedText = _forward(str, "selectedText", selectionChanged)
    copyTip = _forward(str, "copyTip", selectionChanged)
    following = _forward(bool, "following", followingChanged, writable=True)

    copyLogPath = _forward_slot("copyLogPath")
    pressLine = _forward_slot("pressLine", int, bool)
    dragTo = _forward_slot("dragTo", int)
    clearSelection = _forward_slot("clearSelection")
    clearFilterAndSelection = _forward_slot("clearFilterAndSelection")
    escape = _forward_slot("escape", bool)
    copySelection = _forward_slot("copySelection")
    copyAll = _forward_slot("copyAll")
    copy = _forward_slot("copy")
    followTail = _forward_slot("followTail")
    outputShifted = _forward_slot("outputShifted", int, float, float)
    outputReset = _forward_slot("outputReset")
    jumpToLive = _forward_slot("jumpToLive", bool)
    scrollStarted = _forward_slot("scrollStarted")
    scrollEnded = _forward_slot("scrollEnded", bool)
    scrolledToEnd = _forward_slot("scrolledToEnd", bool, bool)
    scrollBarPressed = _forward_slot("scrollBarPressed", bool, bool)
