"""OutputPaneModel: the view-model of a ProcWindow's output pane.

What the pane says (its counts, notices, gauges), the lines selected and
whether the view follows the tail, with the decisions made without Qt in
``_pane_texts`` and ``_pane_state``. A :class:`~procwindow.qt.ProcWindowModel`
makes one, exposes it as ``pane`` and forwards its properties and slots under
the same names (``viewModel.lineCountText``, ``viewModel.pressLine(…)``).
"""

from __future__ import annotations

import time
from dataclasses import replace

from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtQml import QmlElement, QmlUncreatable

from ._pane_state import FollowState, LineSelection
from ._pane_texts import (
    NO_GAUGES,
    PaneFacts,
    PaneTexts,
    cpu_load,
    gauge_texts,
    memory_load,
    pane_texts,
)
from ._support import Later, constant_property, plural, qt_property
from .controller import ProcController, StatsSampler
from .models import LogFacts, OutputModel, ProcModel
from .pane import InputLine, OutputFind
from .terminal import TerminalModel

__all__ = ["LOG_FILES_TTL", "OutputPaneModel"]

QML_IMPORT_NAME = "Procwindow"
QML_IMPORT_MAJOR_VERSION = 1

#: Seconds the output pane trusts its list of log files (a stderr log may appear later).
LOG_FILES_TTL = 1.0


@QmlElement
@QmlUncreatable("a ProcWindowModel makes its output pane's model")
class OutputPaneModel(QObject):  # type: ignore[operator]  # PySide's stub: not callable
    """The state and texts of a ProcWindow's output pane.

    The lines selected (``selectionStart`` … ``selectionEnd``), copying them,
    and following the tail: ``following`` stays true until the person scrolls
    away from the end, and turns true again once they are back there. The pane
    tells the model what the view did; the model answers with ``positionAtEnd``
    (put the view at its end now). When the output model's rows shift (its
    oldest lines went), a view that follows stays at its end and one that does
    not stays on its lines (``positionAt``); the selection moves with its
    lines. Lines the pane no longer holds are named, with the log that keeps
    them (``earlierText``, ``logText``, ``copyLogPath``), which the output model
    reads back a chunk at a time (``loadEarlierText``; the selection moves down
    with its lines as they come in above). Esc clears the filter
    and the selection; in an empty filter field it hands the keys back to the
    table (``leaveFilter``). What is copied is said through ``message``.
    """

    selectionChanged = Signal()
    followingChanged = Signal()
    textsChanged = Signal()
    countTextsChanged = Signal()
    statsTextChanged = Signal()
    gaugesChanged = Signal()
    positionAtEnd = Signal()
    """The output view should go to its end now."""
    positionAt = Signal(float)
    """The output view should scroll to ``y`` px below its first row (after a shift)."""
    linesReplaced = Signal()
    """The output view shows other lines now: what it measured of the old ones is stale."""
    leaveFilter = Signal()
    """The filter field should give the keyboard back to the table."""
    message = Signal(str, bool, arguments=["message", "isError"])
    """Something to tell the person (``3 lines copied``): the window's banner shows it."""

    def __init__(
        self,
        output_model: OutputModel,
        stats: StatsSampler,
        proc_model: ProcModel,
        controller: ProcController,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._output = output_model
        self._stats = stats
        self._find = OutputFind(output_model, self)
        self._input_line = InputLine(output_model, proc_model, controller, self)
        self._terminal = TerminalModel(controller.supervisor, output_model, self)
        self._terminal.message.connect(self.message)
        self._terminal.stateChanged.connect(self.selectionChanged)  # what copy copies
        self._terminal_on = self._terminal.active
        self._terminal.stateChanged.connect(self._terminal_toggled)
        self._selection = LineSelection()
        self._tail = FollowState()
        self._texts = PaneTexts()
        self._stats_texts = NO_GAUGES
        self._log_files = (-1, 0.0, LogFacts([]))  # proc, when, its logs
        self._stick_later = Later(self, self._stick)

        output_model.rowsInserted.connect(self.followTail)
        output_model.partialChanged.connect(self.followTail)
        # Going to a match stops following, as scrolling away does.
        self._find.revealRow.connect(self.scrollStarted)
        output_model.shifted.connect(self._shift_selection)
        # Lines read back from the log came in at the top: the selection moves down with its lines.
        output_model.earlierLoaded.connect(self._earlier_loaded)
        output_model.shifted.connect(self.followTail)
        for signal in (
            output_model.lineCountChanged,
            output_model.matchCountChanged,
            output_model.filterTextChanged,
            output_model.filterErrorChanged,
            output_model.currentMatchChanged,
            output_model.partialChanged,
            self.followingChanged,
        ):
            signal.connect(self._update_texts)
        # Every frame under a flood: the count must not lag the lines it counts.
        output_model.earlierLinesChanged.connect(self._update_texts)
        output_model.earlierLoaded.connect(self._update_texts)
        output_model.pendingLinesChanged.connect(self._update_texts)
        # Not following: the rows hold still, whatever pours in (read on at End).
        self.followingChanged.connect(self._hold)
        stats.statsChanged.connect(self._update_stats_texts)
        stats.statsChanged.connect(self.gaugesChanged)
        self._update_texts()
        self._update_stats_texts()

    outputModel = constant_property(OutputModel, "_output")
    stats = constant_property(StatsSampler, "_stats")
    find = constant_property(OutputFind, "_find")
    """Enter / Shift+Enter in the filter: from match to match (``matchText`` says ``3 of 120``)."""
    inputLine = constant_property(InputLine, "_input_line")
    """The line under the output that writes to the streaming proc's stdin."""
    terminal = constant_property(TerminalModel, "_terminal")
    """The streaming proc's terminal, for the pane's terminal view (a PTY proc)."""

    def close(self) -> None:
        """Stop the updates under way (the window is going away)."""
        self._stick_later.stop()
        self._terminal.close()

    def _terminal_toggled(self) -> None:
        """The terminal view went: the lines view, which made no rows under it,
        opens at their tail."""
        was, self._terminal_on = self._terminal_on, self._terminal.active
        if was and not self._terminal_on:
            self.linesReplaced.emit()
            self.following = True
            self._stick_later.start()  # once the view has its rows again

    def _hold(self) -> None:
        self._output.held = not self._tail.following

    def streamed(self) -> None:
        """Another proc streams: the view follows its tail."""
        self.following = True
        self._update_texts()

    def show_row(self, row: int) -> None:
        """Select row ``row`` alone and stop following (the view goes there)."""
        self.following = False
        self._select(self._selection.select(row, row))

    # -- texts ---------------------------------------------------------------------------

    def _update_texts(self) -> None:
        out = self._output
        earlier = out.earlierLines
        facts = PaneFacts(
            proc_id=out.procId,
            lines=out.lineCount,
            matches=out.matchCount,
            earlier=earlier,
            loadable=out.earlier().available,
            rewound=out.earlier().rewound,
            filtered=bool(out.filterText),
            filter_error=bool(out.filterError),
            current_match=out.currentMatch,
            following=self._tail.following,
            pending=out.pendingLines,
            partial=bool(out.partialText),
        )
        if earlier:  # looked up only when lines are not held (a stat per log file)
            logs = self._logs_of(out.procId)
            facts = replace(
                facts,
                logs=tuple(logs.files),
                kept_by=logs.kept_by,
                cut_lines=logs.cut_lines,
                cut_bytes=logs.cut_bytes,
            )
        texts = pane_texts(facts)
        old, self._texts = self._texts, texts
        # Two notifications: under a flood the counts change every frame, the rest seldom.
        if texts.counts() != old.counts():
            self.countTextsChanged.emit()
        if texts.others() != old.others():
            self.textsChanged.emit()

    def _logs_of(self, proc_id: int) -> LogFacts:
        """``outputModel.logs()``, looked up at most every :data:`LOG_FILES_TTL` s."""
        known, when, logs = self._log_files
        now = time.monotonic()
        if known != proc_id or now - when > LOG_FILES_TTL:
            logs = self._output.logs()
            self._log_files = proc_id, now, logs
        return logs

    emptyText = qt_property(str, lambda self: self._texts.empty, notify=textsChanged)
    """What the empty output pane says."""
    lineCountText = qt_property(str, lambda self: self._texts.line_count, notify=countTextsChanged)
    """The footer's count: ``120 lines``, ``8 of 120 lines`` while filtered; with
    earlier lines not held, ``last 100,000 of 30,000,000 lines`` or ``8 of the
    last 100,000 lines``."""
    matchText = qt_property(str, lambda self: self._texts.match, notify=countTextsChanged)
    """The filter's count: ``1 match``, ``8 matches``, ``3 of 120`` once a match
    is current (``find``), or ``invalid``."""
    earlierText = qt_property(str, lambda self: self._texts.earlier, notify=countTextsChanged)
    """What became of the lines the pane no longer holds, up to the log that keeps
    them (``29,900,000 earlier lines are not shown here — in the log:``, then
    ``logText``); "" when the pane holds every line."""
    logText = qt_property(str, lambda self: self._texts.log_text, notify=textsChanged)
    """The log files ``earlierText`` names: ``/logs/5.stdout.log``, or
    ``/logs/5.stdout.log, 5.stderr.log``; "" for none."""
    logPath = qt_property(str, lambda self: self._texts.log_path, notify=textsChanged)
    """The log file the window's ``openLog`` opens (stdout's, if it exists); ""
    while ``earlierText`` names no log file."""
    openLogTip = qt_property(str, lambda self: self._texts.open_log_tip, notify=textsChanged)
    """The tooltip of the button that opens ``logPath``."""
    followText = qt_property(str, lambda self: self._texts.follow, notify=textsChanged)
    """The footer's follow state: ``● following``, ``paused · End to follow``;
    "" while no proc streams."""
    loadEarlierText = qt_property(str, lambda self: self._texts.load_earlier, notify=textsChanged)
    """The label of the button that reads earlier lines back from the log
    (``OutputModel.loadEarlier``, as scrolling to the top does); "" while none
    is left to read."""

    @Slot()
    def copyLogPath(self) -> None:
        """Copy the paths of the proc's log files (one per line), and say so."""
        paths = self._output.logFiles()
        if paths:
            self._output.copyToClipboard("\n".join(paths))
            self.message.emit("Log path copied" if len(paths) == 1 else "Log paths copied", False)

    # -- the gauges ----------------------------------------------------------------------

    def _update_stats_texts(self) -> None:
        stats = self._stats
        texts = gauge_texts(stats.cpuPercent, stats.rssText) if stats.active else NO_GAUGES
        if texts != self._stats_texts:
            self._stats_texts = texts
            self.statsTextChanged.emit()

    cpuText = qt_property(str, lambda self: self._stats_texts[0], notify=statsTextChanged)
    """The CPU gauge's text: ``12%``, or ``–`` while nothing is sampled."""
    memoryText = qt_property(str, lambda self: self._stats_texts[1], notify=statsTextChanged)
    """The memory gauge's text: ``12.3 MiB``, or ``–``."""
    cpuLoad = qt_property(
        float, lambda self: cpu_load(self._stats.cpuPercent), notify=gaugesChanged
    )
    """How full the CPU gauge is (one core's worth: full; the bar clamps at 1)."""
    memoryLoad = qt_property(
        float, lambda self: memory_load(self._stats.rssBytes), notify=gaugesChanged
    )
    """How full the memory gauge is (1 GiB: full; the bar clamps at 1)."""

    # -- selected lines ------------------------------------------------------------------

    selectionStart = qt_property(int, lambda self: self._selection.start, notify=selectionChanged)
    """The first selected row, -1 for none."""
    selectionEnd = qt_property(int, lambda self: self._selection.end, notify=selectionChanged)
    """The last selected row, -1 for none."""
    hasSelection = qt_property(bool, lambda self: self._selection.selected, notify=selectionChanged)
    selectedText = qt_property(str, lambda self: self._selection.text, notify=selectionChanged)
    """The footer's ``3 selected`` ("" without a selection)."""

    def _get_copy_tip(self) -> str:
        if self._terminal.active:
            return "Copy the screen's text"
        return "Copy selected lines" if self._selection.selected else "Copy all lines"

    copyTip = qt_property(str, _get_copy_tip, notify=selectionChanged)
    """What the copy button copies: the selected lines, or all of them (the screen
    while the terminal view shows)."""

    def _select(self, changed: bool) -> None:
        if changed:
            self.selectionChanged.emit()

    @Slot(int, bool)
    def pressLine(self, row: int, extend: bool) -> None:
        """A press on output row ``row``; ``extend`` (Shift) keeps the first end.
        Selecting stops following: the lines stay where they are."""
        self.following = False
        self._select(self._selection.press(row, extend))

    @Slot(int)
    def dragTo(self, row: int) -> None:
        """The pointer, still pressed, reached row ``row`` (ignored past the rows)."""
        self._select(self._selection.drag(row, self._output.rowCount()))

    @Slot()
    def clearSelection(self) -> None:
        """Select no line."""
        self._select(self._selection.clear())

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
        self._select(self._selection.shift(rows))

    def _earlier_loaded(self, rows: int) -> None:
        """``rows`` rows came in above the others, after the newest went if they had
        to make room: the selection keeps the lines still here, ``rows`` rows down."""
        went = self._selection.clamp(self._output.rowCount() - rows)
        self._select(self._selection.shift(-rows) or went)

    @Slot()
    def copySelection(self) -> None:
        """Copy the selected lines (plain text) to the clipboard, and say so."""
        if not self._selection.selected:
            return
        start, end = self._selection.start, self._selection.end
        self._output.copyToClipboard(self._output.copyRows(list(range(start, end + 1))))
        self.message.emit(f"{plural(end - start + 1, 'line', 'lines')} copied", False)

    @Slot()
    def copyAll(self) -> None:
        """Copy every line shown (the matching ones while filtered), and say so;
        the screen's text while the terminal view shows."""
        if self._terminal.active:
            self._terminal.copy()
            return
        self._output.copyToClipboard(self._output.copyAll())
        filtered = bool(self._output.filterText)
        self.message.emit("Matching lines copied" if filtered else "Output copied", False)

    @Slot()
    def copy(self) -> None:
        """The copy button: the selection if there is one, else every line (the
        screen while the terminal view shows)."""
        if self._terminal.active:
            self._terminal.copy()
        elif self._selection.selected:
            self.copySelection()
        else:
            self.copyAll()

    # -- following the tail --------------------------------------------------------------

    def _get_following(self) -> bool:
        return self._tail.following

    def _set_following(self, following: bool) -> None:
        if following != self._tail.following:
            self._tail.following = following
            self.followingChanged.emit()

    following = qt_property(bool, _get_following, _set_following, notify=followingChanged)
    """True while the output view stays at its end as lines arrive."""

    def _tail_moved(self, was: bool, stick: bool = False) -> None:
        """After a change of the follow state: announce it; ``stick``: to the end now."""
        if self._tail.following != was:
            self.followingChanged.emit()
        if stick:
            self._stick()

    def _stick(self) -> None:
        if self._tail.following:
            self.positionAtEnd.emit()

    @Slot()
    def followTail(self) -> None:
        """Lines arrived or the view changed size: go to the end soon, if following.

        Deferred: by then the person may have started to scroll, and then the
        view must not be pulled back.
        """
        if self._tail.following:
            self._stick_later.start()

    @Slot(int, float, float)
    def outputShifted(self, rows: int, top: float, lineHeight: float) -> None:
        """The output rows shifted up by ``rows`` (``OutputModel.shifted``) under a
        view ``top`` px below its first row, of rows ``lineHeight`` px high: one
        that does not follow goes back on its lines (``positionAt``)."""
        if not self._tail.following:
            self.positionAt.emit(max(0.0, top - rows * lineHeight))

    @Slot(int, float, float)
    def outputPrepended(self, rows: int, top: float, lineHeight: float) -> None:
        """``rows`` rows came in above the others (lines read back from the log,
        ``OutputModel.earlierLoaded``) under a view that was ``top`` px below its
        first row, of rows ``lineHeight`` px high: one that does not follow stays
        on its lines (``positionAt``)."""
        if rows > 0 and not self._tail.following:
            self.positionAt.emit(top + rows * lineHeight)

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
        was = self._tail.following
        self._tail_moved(was, self._tail.jump(moving))

    @Slot()
    def scrollStarted(self) -> None:
        """The person scrolls: stop following."""
        was = self._tail.following
        self._tail.scroll_started()
        self._tail_moved(was)

    @Slot(bool)
    def scrollEnded(self, nearEnd: bool) -> None:
        """A scroll ended ``nearEnd`` (at the end, give or take a few lines) or not."""
        was = self._tail.following
        self._tail_moved(was, self._tail.scroll_ended(nearEnd))

    @Slot(bool, bool)
    def scrolledToEnd(self, atEnd: bool, scrolling: bool) -> None:
        """The view reached (or left) its end; reached while scrolling, it follows again."""
        was = self._tail.following
        self._tail.scrolled_to_end(atEnd, scrolling)
        self._tail_moved(was)

    @Slot(bool, bool)
    def scrollBarPressed(self, pressed: bool, nearEnd: bool) -> None:
        """Dragging the scroll bar stops following; releasing it near the end follows."""
        was = self._tail.following
        self._tail.scroll_bar(pressed, nearEnd)
        self._tail_moved(was)
