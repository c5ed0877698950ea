"""The ProcWindow's view-model: what its QML shows and decides, kept in Python.

The QML files hold layout, bindings and shortcuts. The state behind them (the
process the keyboard acts on, the one streaming, whether the window follows the
main window's scope, the output lines selected, whether the output follows its
tail) and every decision and composed text live here, and are tested without a
window. The main window's view-model is :mod:`procwindow.qt.main_viewmodel`.

:class:`ProcWindowModel`
    One ProcWindow (``open_proc_window`` makes it with the window's models).
:class:`ProcTableStyle`
    The process table's column widths and status colours (each table makes one);
    it lives in :mod:`procwindow.qt.table`, re-exported here.
"""

from __future__ import annotations

import math
import os
import time
from typing import NamedTuple

from PySide6.QtCore import Property, QObject, QTimer, QUrl, Signal, Slot
from PySide6.QtGui import QDesktopServices
from PySide6.QtQml import QmlElement, QmlUncreatable

from ._support import Later, plural, set_stored, stored_property
from .controller import ActiveScope, ProcController, StatsSampler
from .models import HistoryModel, OutputModel, ProcModel, ProcRole
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
#: What a gauge reads while nothing is sampled.
NO_VALUE = "–"
#: Seconds the output pane trusts its list of log files (a stderr log may appear later).
LOG_FILES_TTL = 1.0
#: Milliseconds between two updates of the pane's texts when only the count of
#: earlier lines moved: under a flood it moves every frame, and nobody reads forty
#: numbers a second (each update costs the frame ~0.3 ms of text layout).
EARLIER_TEXT_MS = 200


class _PaneTexts(NamedTuple):
    """What the output pane says (see the properties of the same names)."""

    empty: str = ""
    line_count: str = ""
    match: str = ""
    earlier: str = ""
    log_text: str = ""
    log_path: str = ""
    follow: str = ""

    def counts(self) -> tuple[str, str, str]:
        """The texts that move with the lines (every frame, under a flood)."""
        return self.line_count, self.match, self.earlier

    def others(self) -> tuple[str, str, str, str]:
        return self.empty, self.log_text, self.log_path, self.follow


def _count(count: int, one: str, many: str) -> str:
    """``"1 line"``, ``"100,000 lines"``: :func:`plural` with thousands separated."""
    return f"{count:,} {one if count == 1 else many}"


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

    **Output pane.** The lines selected (``selectionStart`` … ``selectionEnd``),
    copying them, and following the tail: ``following`` stays true until the
    person scrolls away from the end, and turns true again once they are back
    there. The pane tells the model what the view did; the model answers with
    ``positionAtEnd`` (put the view at its end now) and ``liveRequested``
    (jump to the live tail, as the End key does). When the output model's
    rows shift (its oldest lines went), a view that follows stays at its end
    and one that does not stays on its lines (``positionAt``); the selection
    moves with its lines. Lines the pane no longer holds are named,
    with the log that keeps them (``earlierText``, ``openLog``, ``copyLogPath``).
    Esc clears the filter and the selection; in an empty filter field it hands
    the keys back to the table (``leaveFilter``).

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
    selectionChanged = Signal()
    followingChanged = Signal()
    textsChanged = Signal()
    countTextsChanged = Signal()
    statsTextChanged = Signal()
    positionAtEnd = Signal()
    """The output view should go to its end now."""
    liveRequested = Signal()
    """The output view should jump to the live tail (cancelling a flick first)."""
    revealRow = Signal(int)
    """The table should scroll row ``row`` into view."""
    positionAt = Signal(float)
    """The output view should scroll to ``y`` px below its first row (after a shift)."""
    linesReplaced = Signal()
    """The output view shows other lines now: what it measured of the old ones is stale."""
    leaveFilter = Signal()
    showHistoryChanged = Signal()
    #: Scroll the History view to this row (``revealRow`` is the live table's).
    revealHistoryRow = Signal(int)
    #: Put the output view on this row, centred (``showLine``).
    revealLine = Signal(int)
    """The filter field should give the keyboard back to the table."""

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
        proc_model.titleChanged.connect(self.windowTitleChanged)
        if history is None:
            history = HistoryModel(controller.supervisor, self)
        self._history = history
        self._show_history = False
        self._workspace = WorkspaceStatus(controller, self)
        self._output = output_model
        self._stats = stats
        self._controller = controller
        self._run_form = RunForm(controller, self)
        self._run_form.succeeded.connect(self._on_run_started)
        self._find = OutputFind(output_model, self)
        self._input_line = InputLine(output_model, proc_model, controller, self)
        self._active_scope = active_scope
        self._pinned = active_scope is None if pinned is None else pinned
        self._current = -1
        self._follow = -1  # a restart to stream once its row is shown
        self._scope_text = ""
        self._banner_text = ""
        self._banner_error = False
        self._banner_visible = False
        self._anchor = self._cursor = -1
        self._following = True
        self._jumped = False
        self._texts = _PaneTexts()
        self._log_files: tuple[int, float, list[str]] = (-1, 0.0, [])  # proc, when, files
        self._closed = False
        self._stats_texts = (NO_VALUE, NO_VALUE)

        self._banner_timer = QTimer(self)
        self._banner_timer.setSingleShot(True)
        self._banner_timer.timeout.connect(self.hideBanner)
        self._earlier_timer = QTimer(self)
        self._earlier_timer.setSingleShot(True)
        self._earlier_timer.setInterval(EARLIER_TEXT_MS)
        self._earlier_timer.timeout.connect(self._update_texts)
        self._settle_later = Later(self, self.settleSelection)
        self._stick_later = Later(self, self._stick)

        for signal in (proc_model.modelReset, proc_model.rowsRemoved, proc_model.rowsInserted):
            signal.connect(self._settle_later.start)
        for signal in (proc_model.sessionChanged, proc_model.agentChanged):
            signal.connect(self._update_scope_text)
        for signal in (proc_model.sessionChanged, proc_model.agentChanged):
            signal.connect(self._scope_history)
        self._scope_history()
        for signal in (history.modelReset, history.rowsRemoved, history.rowsInserted):
            signal.connect(self._settle_later.start)
        output_model.procIdChanged.connect(self._on_stream_changed)
        output_model.rowsInserted.connect(self.followTail)
        output_model.partialChanged.connect(self.followTail)
        # Going to a match stops following, as scrolling away does.
        self._find.revealRow.connect(self.scrollStarted)
        output_model.shifted.connect(self._shift_selection)
        output_model.shifted.connect(self.followTail)
        for signal in (
            output_model.lineCountChanged,
            output_model.matchCountChanged,
            output_model.filterTextChanged,
            output_model.filterErrorChanged,
            output_model.currentMatchChanged,
            self.followingChanged,
        ):
            signal.connect(self._update_texts)
        output_model.earlierLinesChanged.connect(self._update_earlier_soon)
        stats.statsChanged.connect(self._update_stats_texts)
        controller.actionFailed.connect(self._on_action_failed)
        controller.restarted.connect(self._on_restarted)
        if active_scope is not None:
            active_scope.changed.connect(self.followActiveScope)

        self._update_scope_text()
        self._update_texts()
        self._update_stats_texts()
        stats.procId = output_model.procId

    # -- the models, for QML -------------------------------------------------------

    def _get_procs(self) -> ProcModel:
        return self._procs

    def _get_output(self) -> OutputModel:
        return self._output

    def _get_stats(self) -> StatsSampler:
        return self._stats

    def _get_controller(self) -> ProcController:
        return self._controller

    def _get_active_scope(self) -> ActiveScope | None:
        return self._active_scope

    def _get_can_follow(self) -> bool:
        return self._active_scope is not None

    def _get_run_form(self) -> RunForm:
        return self._run_form

    def _get_find(self) -> OutputFind:
        return self._find

    def _get_input_line(self) -> InputLine:
        return self._input_line

    def _get_history(self) -> HistoryModel:
        return self._history

    procModel = Property(ProcModel, _get_procs, constant=True)
    historyModel = Property(HistoryModel, _get_history, constant=True)

    def _get_workspace(self) -> WorkspaceStatus:
        return self._workspace

    workspaceStatus = Property(WorkspaceStatus, _get_workspace, constant=True)
    """The scope's workspace commands with no proc yet, and a command's dependencies."""
    """Every recorded run of the window's scope (shown with ``showHistory``)."""
    outputModel = Property(OutputModel, _get_output, constant=True)
    stats = Property(StatsSampler, _get_stats, constant=True)
    controller = Property(ProcController, _get_controller, constant=True)
    runForm = Property(RunForm, _get_run_form, constant=True)
    """The Run dialog's form (``requestRun`` opens it on the window's scope)."""
    find = Property(OutputFind, _get_find, constant=True)
    """Enter / Shift+Enter in the filter: from match to match (``matchText`` says ``3 of 120``)."""
    inputLine = Property(InputLine, _get_input_line, constant=True)
    """The line under the output that writes to the streaming proc's stdin."""
    activeScope = Property(ActiveScope, _get_active_scope, constant=True)
    """The main window's selection, or None (then the window stays pinned)."""
    canFollow = Property(bool, _get_can_follow, constant=True)
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

    def _rows(self) -> ProcModel | HistoryModel:
        """The rows the selection moves among: the live procs, or the history."""
        return self._history if self._show_history else self._procs

    currentProcId = stored_property(int, "_current", currentProcIdChanged)
    """The proc the keyboard acts on, -1 for none."""
    pinned = stored_property(bool, "_pinned", pinnedChanged, on_change=_on_pinned)
    """Pinned, the window stays on its scope; unpinned, it follows ``activeScope``."""

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
        self.following = False
        self._select(row, row)
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
        """Move the current proc ``delta`` rows (clamped); from nowhere, to the first row."""
        rows = self._rows()
        count = rows.rowCount()
        if count == 0:
            return
        row = rows.rowOf(self._current)
        target = 0 if row < 0 else max(0, min(count - 1, row + delta))
        self.currentProcId = rows.procIdAt(target)
        (self.revealHistoryRow if self._show_history else self.revealRow).emit(target)

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
        rows = self._rows()
        if rows.rowOf(self._output.procId) < 0:
            self._output.procId = -1
        if rows.rowOf(self._current) < 0:
            self.currentProcId = rows.procIdAt(0) if rows.rowCount() > 0 else -1
        if self._output.procId < 0 and self._current >= 0:
            self.stream(self._current)

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
        self._earlier_timer.stop()
        for timer in (self._settle_later, self._stick_later, self._banner_timer):
            timer.stop()

    def _on_stream_changed(self) -> None:
        self._stats.procId = self._output.procId
        self.following = True
        self.streamingProcIdChanged.emit()
        self._update_texts()

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

    windowTitleChanged = Signal()

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

    # -- the output pane: texts ----------------------------------------------------------

    def _update_texts(self) -> None:
        out = self._output
        filtered = bool(out.filterText)
        earlier, held = out.earlierLines, out.lineCount
        if out.procId < 0:
            empty = "Select a process and press Enter to stream its output"
        elif filtered:
            empty = "No line matches the filter"
        else:
            empty = "No output yet"
        if not earlier:
            lines = _count(held, "line", "lines")
            count = f"{out.matchCount:,} of {lines}" if filtered else lines
        elif filtered:
            count = f"{out.matchCount:,} of the last {_count(held, 'line', 'lines')}"
        else:
            count = f"last {held:,} of {_count(earlier + held, 'line', 'lines')}"
        if out.filterError:
            match = "invalid"
        elif out.currentMatch >= 0:
            match = f"{out.currentMatch + 1:,} of {out.matchCount:,}"
        else:
            match = _count(out.matchCount, "match", "matches")
        notice = log_text = log_path = ""
        if earlier:
            logs = self._log_files_of(out.procId)
            older = _count(earlier, "earlier line", "earlier lines")
            where = "the log:" if len(logs) == 1 else "the logs:"
            if not logs:
                notice = f"{older} are not shown here, and no log file keeps them"
            elif filtered:
                notice = f"The filter sees the last {held:,}; {older} are in {where}"
            else:
                notice = f"{older} are not shown here — in {where}"
            if logs:
                log_path = logs[0]
                log_text = ", ".join([log_path, *(os.path.basename(p) for p in logs[1:])])
        if out.procId < 0:
            follow = ""
        else:
            follow = "● following" if self._following else "paused · End to follow"
        texts = _PaneTexts(empty, count, match, notice, log_text, log_path, follow)
        old, self._texts = self._texts, texts
        # Two notifications: under a flood the counts change every frame, the rest seldom.
        if texts.counts() != old.counts():
            self.countTextsChanged.emit()
        if texts.others() != old.others():
            self.textsChanged.emit()

    def _update_earlier_soon(self) -> None:
        """Only the count of earlier lines moved: update the texts within EARLIER_TEXT_MS."""
        if not self._earlier_timer.isActive():
            self._earlier_timer.start()

    def _log_files_of(self, proc_id: int) -> list[str]:
        """``outputModel.logFiles()``, looked up at most every :data:`LOG_FILES_TTL` s."""
        known, when, files = self._log_files
        now = time.monotonic()
        if known != proc_id or now - when > LOG_FILES_TTL:
            files = self._output.logFiles()
            self._log_files = proc_id, now, files
        return files

    def _get_empty_text(self) -> str:
        return self._texts.empty

    def _get_line_count_text(self) -> str:
        return self._texts.line_count

    def _get_match_text(self) -> str:
        return self._texts.match

    def _get_earlier_text(self) -> str:
        return self._texts.earlier

    def _get_log_text(self) -> str:
        return self._texts.log_text

    def _get_log_path(self) -> str:
        return self._texts.log_path

    def _get_follow_text(self) -> str:
        return self._texts.follow

    emptyText = Property(str, _get_empty_text, notify=textsChanged)
    """What the empty output pane says."""
    lineCountText = Property(str, _get_line_count_text, notify=countTextsChanged)
    """The footer's count: ``120 lines``, ``8 of 120 lines`` while filtered; with
    earlier lines not held, ``last 100,000 of 30,000,000 lines`` or ``8 of the
    last 100,000 lines``."""
    matchText = Property(str, _get_match_text, notify=countTextsChanged)
    """The filter's count: ``1 match``, ``8 matches``, ``3 of 120`` once a match
    is current (``find``), or ``invalid``."""
    earlierText = Property(str, _get_earlier_text, notify=countTextsChanged)
    """What became of the lines the pane no longer holds, up to the log that keeps
    them (``29,900,000 earlier lines are not shown here — in the log:``, then
    ``logText``); "" when the pane holds every line."""
    logText = Property(str, _get_log_text, notify=textsChanged)
    """The log files ``earlierText`` names: ``/logs/5.stdout.log``, or
    ``/logs/5.stdout.log, 5.stderr.log``; "" for none."""
    logPath = Property(str, _get_log_path, notify=textsChanged)
    """The log file ``openLog`` opens (stdout's, if it exists); "" while
    ``earlierText`` names no log file."""
    followText = Property(str, _get_follow_text, notify=textsChanged)
    """The footer's follow state: ``● following``, ``paused · End to follow``;
    "" while no proc streams."""

    @Slot()
    def openLog(self) -> None:
        """Open ``logPath`` with the desktop's handler for it (a failure shows in the banner)."""
        path = self._texts.log_path
        if path and not QDesktopServices.openUrl(QUrl.fromLocalFile(path)):
            self.showMessage(f"No application opens {path}", True)

    @Slot()
    def copyLogPath(self) -> None:
        """Copy the paths of the proc's log files (one per line), and say so."""
        paths = self._output.logFiles()
        if paths:
            self._output.copyToClipboard("\n".join(paths))
            self.showMessage("Log path copied" if len(paths) == 1 else "Log paths copied", False)

    def _update_stats_texts(self) -> None:
        stats = self._stats
        if stats.active:
            # Rounded half up, as the gauge always showed it.
            texts = (f"{math.floor(stats.cpuPercent + 0.5)}%", stats.rssText)
        else:
            texts = (NO_VALUE, NO_VALUE)
        if texts != self._stats_texts:
            self._stats_texts = texts
            self.statsTextChanged.emit()

    def _get_cpu_text(self) -> str:
        return self._stats_texts[0]

    def _get_memory_text(self) -> str:
        return self._stats_texts[1]

    cpuText = Property(str, _get_cpu_text, notify=statsTextChanged)
    """The CPU gauge's text: ``12%``, or ``–`` while nothing is sampled."""
    memoryText = Property(str, _get_memory_text, notify=statsTextChanged)
    """The memory gauge's text: ``12.3 MiB``, or ``–``."""

    # -- the output pane: selected lines -------------------------------------------------

    def _get_selection_start(self) -> int:
        return -1 if self._anchor < 0 else min(self._anchor, self._cursor)

    def _get_selection_end(self) -> int:
        return -1 if self._anchor < 0 else max(self._anchor, self._cursor)

    def _get_has_selection(self) -> bool:
        return self._anchor >= 0

    def _get_selected_text(self) -> str:
        count = self._get_selection_end() - self._get_selection_start() + 1
        return f"{count} selected" if self._anchor >= 0 else ""

    selectionStart = Property(int, _get_selection_start, notify=selectionChanged)
    """The first selected row, -1 for none."""
    selectionEnd = Property(int, _get_selection_end, notify=selectionChanged)
    """The last selected row, -1 for none."""
    hasSelection = Property(bool, _get_has_selection, notify=selectionChanged)
    selectedText = Property(str, _get_selected_text, notify=selectionChanged)
    """The footer's ``3 selected`` ("" without a selection)."""

    def _select(self, anchor: int, cursor: int) -> None:
        if (anchor, cursor) != (self._anchor, self._cursor):
            self._anchor, self._cursor = anchor, cursor
            self.selectionChanged.emit()

    @Slot(int, bool)
    def pressLine(self, row: int, extend: bool) -> None:
        """A press on output row ``row``; ``extend`` (Shift) keeps the first end."""
        self._select(row if not extend or self._anchor < 0 else self._anchor, row)

    @Slot(int)
    def dragTo(self, row: int) -> None:
        """The pointer, still pressed, reached row ``row`` (ignored past the rows)."""
        if 0 <= row < self._output.rowCount() and self._anchor >= 0:
            self._select(self._anchor, row)

    @Slot()
    def clearSelection(self) -> None:
        """Select no line."""
        self._select(-1, -1)

    @Slot()
    def clearFilterAndSelection(self) -> None:
        """Drop the filter and the selection."""
        self._output.filterText = ""
        self.clearSelection()

    @Slot(bool)
    def escape(self, inFilter: bool) -> None:
        """Esc (``inFilter``: the filter field has the keyboard): drop the filter
        and the selection; pressed in an empty filter field, also hand the
        keyboard back to the table (``leaveFilter``), so that the window's keys
        (Delete, End…) work again."""
        was_empty = not self._output.filterText
        self.clearFilterAndSelection()
        if inFilter and was_empty:
            self.leaveFilter.emit()

    def _shift_selection(self, rows: int) -> None:
        """The oldest ``rows`` rows went: the selected lines are ``rows`` rows up now."""
        if self._anchor < 0:
            return
        anchor, cursor = self._anchor - rows, self._cursor - rows
        if max(anchor, cursor) < 0:
            self.clearSelection()
        else:
            self._select(max(anchor, 0), max(cursor, 0))

    @Slot()
    def copySelection(self) -> None:
        """Copy the selected lines (plain text) to the clipboard, and say so."""
        if self._anchor < 0:
            return
        start, end = self._get_selection_start(), self._get_selection_end()
        self._output.copyToClipboard(self._output.copyRows(list(range(start, end + 1))))
        self.showMessage(f"{plural(end - start + 1, 'line', 'lines')} copied", False)

    @Slot()
    def copyAll(self) -> None:
        """Copy every line shown (the matching ones while filtered), and say so."""
        self._output.copyToClipboard(self._output.copyAll())
        filtered = bool(self._output.filterText)
        self.showMessage("Matching lines copied" if filtered else "Output copied", False)

    @Slot()
    def copy(self) -> None:
        """The copy button: the selection if there is one, else every line."""
        if self._anchor >= 0:
            self.copySelection()
        else:
            self.copyAll()

    # -- the output pane: following the tail -----------------------------------------------

    following = stored_property(bool, "_following", followingChanged)
    """True while the output view stays at its end as lines arrive."""

    def _stick(self) -> None:
        if self._following:
            self.positionAtEnd.emit()

    @Slot()
    def followTail(self) -> None:
        """Lines arrived or the view changed size: go to the end soon, if following.

        Deferred: by then the person may have started to scroll, and then the
        view must not be pulled back.
        """
        if self._following:
            self._stick_later.start()

    @Slot(int, float, float)
    def outputShifted(self, rows: int, top: float, lineHeight: float) -> None:
        """The output rows shifted up by ``rows`` (``OutputModel.shifted``) under a
        view ``top`` px below its first row, of rows ``lineHeight`` px high: one
        that does not follow goes back on its lines (``positionAt``)."""
        if not self._following:
            self.positionAt.emit(max(0.0, top - rows * lineHeight))

    @Slot()
    def outputReset(self) -> None:
        """The output view took a reset: no line is selected; back to the end if
        following."""
        self.clearSelection()
        self.linesReplaced.emit()
        self._stick()

    @Slot(bool)
    def jumpToLive(self, moving: bool) -> None:
        """Follow the tail again, from now; ``moving``: a scroll is still gliding."""
        # A scroll still gliding must not end in "not following".
        self._jumped = moving
        self.following = True
        self._stick()

    @Slot()
    def scrollStarted(self) -> None:
        """The person scrolls: stop following."""
        self._jumped = False
        self.following = False

    @Slot(bool)
    def scrollEnded(self, nearEnd: bool) -> None:
        """A scroll ended ``nearEnd`` (at the end, give or take a few lines) or not."""
        if self._jumped:
            self._jumped = False
            self.following = True
            self._stick()
        else:
            self.following = nearEnd

    @Slot(bool, bool)
    def scrolledToEnd(self, atEnd: bool, scrolling: bool) -> None:
        """The view reached (or left) its end; reached while scrolling, it follows again."""
        if atEnd and scrolling:
            self.following = True

    @Slot(bool, bool)
    def scrollBarPressed(self, pressed: bool, nearEnd: bool) -> None:
        """Dragging the scroll bar stops following; releasing it near the end follows."""
        self.following = False if pressed else nearEnd
