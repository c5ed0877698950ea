"""The ProcWindow's view-model: what its QML shows and decides, kept in Python.

The QML files hold layout, bindings and shortcuts. The state behind them (the
process the keyboard acts on, the one streaming, whether the window follows the
main window's scope, the output lines selected, whether the output follows its
tail) and every decision and composed text live here, and are tested without a
window. The main window's view-model is :mod:`procwindow.qt.main_viewmodel`.

:class:`ProcWindowModel`
    One ProcWindow (``open_proc_window`` makes it with the window's models).
:class:`ProcTableStyle`
    The process table's column widths and status colours (each table makes one).
"""

from __future__ import annotations

import math

from PySide6.QtCore import Property, QObject, QTimer, Signal, Slot
from PySide6.QtGui import QColor
from PySide6.QtQml import QmlElement, QmlUncreatable

from ._support import Later, plural, set_stored, stored_property
from .controller import ActiveScope, ProcController, StatsSampler
from .models import OutputModel, ProcModel

__all__ = [
    "BANNER_MS",
    "COLUMN_WIDTHS",
    "ProcTableStyle",
    "ProcWindowModel",
    "column_widths",
    "status_tint",
]

QML_IMPORT_NAME = "Procwindow"
QML_IMPORT_MAJOR_VERSION = 1

#: How long a ProcWindow's banner shows a message (ms): (information, error).
BANNER_MS = (2000, 6000)
#: Widths of the process table's fixed columns (px); ``actions`` is the table's to say.
COLUMN_WIDTHS = {"pid": 64, "agent": 104, "status": 190, "runtime": 88}
#: The narrowest the other columns (``tool``) get; they share what is left. Small
#: enough that every column fits a window at its minimum width (720 px): the
#: command elides rather than push the actions out of sight.
MIN_FLEXIBLE_WIDTH = 100.0
#: What a gauge reads while nothing is sampled.
NO_VALUE = "–"


def column_widths(names: list[str], width: float, actions_width: float) -> list[float]:
    """The process table's column widths for a view ``width`` px wide.

    Fixed columns take :data:`COLUMN_WIDTHS` (``actions`` takes ``actions_width``);
    every other column gets what is left, at least :data:`MIN_FLEXIBLE_WIDTH`.

    >>> column_widths(["pid", "tool", "status", "runtime", "actions"], 1000, 154)
    [64.0, 504.0, 190.0, 88.0, 154.0]
    """
    fixed = {**COLUMN_WIDTHS, "actions": actions_width}
    used = sum(fixed.get(name, 0) for name in names if fixed.get(name, 0) > 0)
    rest = max(MIN_FLEXIBLE_WIDTH, width - used)
    return [float(fixed[name]) if name in fixed else rest for name in names]


def status_tint(base: QColor) -> QColor:
    """A status colour (ProcModel's ``statusColor``) lifted for text on the dark theme.

    The hue stays, saturation drops by 15 %, lightness rises to at least 62 %.
    """
    return QColor.fromHslF(
        max(0.0, base.hslHueF()),
        min(1.0, base.hslSaturationF() * 0.85),
        max(base.lightnessF(), 0.62),
        1.0,
    )


@QmlElement
class ProcTableStyle(QObject):
    """How a ProcTable is drawn: its column widths, and the colours of its statuses.

    QML makes one per table and binds ``columnNames``, ``viewWidth`` and
    ``actionsWidth``; ``columnWidths`` follows (see :func:`column_widths`).
    """

    columnNamesChanged = Signal()
    viewWidthChanged = Signal()
    actionsWidthChanged = Signal()
    columnWidthsChanged = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._column_names: list[str] = []
        self._view_width = 0.0
        self._actions_width = 0.0
        self._column_widths: list[float] = []
        self._tints: dict[int, QColor] = {}

    def _relayout(self) -> None:
        widths = column_widths(self._column_names, self._view_width, self._actions_width)
        set_stored(self, "_column_widths", widths, ProcTableStyle.columnWidthsChanged)

    columnNames = stored_property(list, "_column_names", columnNamesChanged, on_change=_relayout)
    """The table's column keys (``ProcModel.columnNames``)."""
    viewWidth = stored_property(float, "_view_width", viewWidthChanged, on_change=_relayout)
    """The width the columns share."""
    actionsWidth = stored_property(
        float, "_actions_width", actionsWidthChanged, on_change=_relayout
    )
    """The width of the ``actions`` column (0 when the table shows no actions)."""
    columnWidths = stored_property(list, "_column_widths", columnWidthsChanged, writable=False)
    """The width of each column, in order."""

    @Slot(QColor, result=QColor)
    def statusColor(self, base: QColor) -> QColor:
        """The colour a status is drawn in: ``base`` (the row's ``statusColor``) tinted."""
        key = base.rgba()
        tint = self._tints.get(key)
        if tint is None:
            tint = self._tints[key] = status_tint(base)
        return tint


@QmlElement
@QmlUncreatable("open_proc_window() makes a ProcWindow's model")
class ProcWindowModel(QObject):  # type: ignore[operator]  # PySide's stub: not callable
    """The state and decisions of one ProcWindow.

    **Selection.** ``currentProcId`` is the proc the keyboard acts on;
    ``stream(procId)`` makes a proc current and streams its output. The
    selection settles (:meth:`settleSelection`) when the window is complete and
    whenever rows go away or the scope changes: the current proc stays if it is
    still shown, else the first row becomes current; a stream that is gone
    stops, and the current proc streams when nothing does.

    **Scope.** Unpinned, the window follows ``activeScope`` (the main window's
    selection); pinned, or without an ``activeScope``, it stays on its scope.

    **Output pane.** The lines selected (``selectionStart`` … ``selectionEnd``),
    copying them, and following the tail: ``following`` stays true until the
    person scrolls away from the end, and turns true again once they are back
    there. The pane tells the model what the view did; the model answers with
    ``positionAtEnd`` (put the view at its end now) and ``liveRequested``
    (jump to the live tail, as the End key does).

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
    statsTextChanged = Signal()
    positionAtEnd = Signal()
    """The output view should go to its end now."""
    liveRequested = Signal()
    """The output view should jump to the live tail (cancelling a flick first)."""
    revealRow = Signal(int)
    """The table should scroll row ``row`` into view."""

    def __init__(
        self,
        proc_model: ProcModel,
        output_model: OutputModel,
        stats: StatsSampler,
        controller: ProcController,
        active_scope: ActiveScope | None = None,
        *,
        pinned: bool | None = None,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._procs = proc_model
        self._output = output_model
        self._stats = stats
        self._controller = controller
        self._active_scope = active_scope
        self._pinned = active_scope is None if pinned is None else pinned
        self._current = -1
        self._scope_text = ""
        self._banner_text = ""
        self._banner_error = False
        self._banner_visible = False
        self._anchor = self._cursor = -1
        self._following = True
        self._jumped = False
        self._texts = ("", "", "")
        self._closed = False
        self._stats_texts = (NO_VALUE, NO_VALUE)

        self._banner_timer = QTimer(self)
        self._banner_timer.setSingleShot(True)
        self._banner_timer.timeout.connect(self.hideBanner)
        self._settle_later = Later(self, self.settleSelection)
        self._stick_later = Later(self, self._stick)

        for signal in (proc_model.modelReset, proc_model.rowsRemoved, proc_model.rowsInserted):
            signal.connect(self._settle_later.start)
        for signal in (proc_model.sessionChanged, proc_model.agentChanged):
            signal.connect(self._update_scope_text)
        output_model.procIdChanged.connect(self._on_stream_changed)
        output_model.rowsInserted.connect(self.followTail)
        for signal in (
            output_model.lineCountChanged,
            output_model.matchCountChanged,
            output_model.filterTextChanged,
            output_model.filterErrorChanged,
        ):
            signal.connect(self._update_texts)
        stats.statsChanged.connect(self._update_stats_texts)
        controller.actionFailed.connect(self._on_action_failed)
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

    procModel = Property(ProcModel, _get_procs, constant=True)
    outputModel = Property(OutputModel, _get_output, constant=True)
    stats = Property(StatsSampler, _get_stats, constant=True)
    controller = Property(ProcController, _get_controller, constant=True)
    activeScope = Property(ActiveScope, _get_active_scope, constant=True)
    """The main window's selection, or None (then the window stays pinned)."""
    canFollow = Property(bool, _get_can_follow, constant=True)
    """True when there is an ``activeScope`` to follow (the pin button shows)."""

    # -- selection and streaming -------------------------------------------------------

    def _on_pinned(self) -> None:
        if not self._pinned:
            self.followActiveScope()

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

    @Slot(int)
    def moveSelection(self, delta: int) -> None:
        """Move the current proc ``delta`` rows (clamped); from nowhere, to the first row."""
        count = self._procs.rowCount()
        if count == 0:
            return
        row = self._procs.rowOf(self._current)
        target = 0 if row < 0 else max(0, min(count - 1, row + delta))
        self.currentProcId = self._procs.procIdAt(target)
        self.revealRow.emit(target)

    @Slot()
    def settleSelection(self) -> None:
        """Keep a valid selection and stream (the window calls it once it is complete).

        Done again, soon, whenever rows go away or come, or the scope changes.
        """
        if self._closed:
            return
        if self._procs.rowOf(self._output.procId) < 0:
            self._output.procId = -1
        if self._procs.rowOf(self._current) < 0:
            self.currentProcId = self._procs.procIdAt(0) if self._procs.rowCount() > 0 else -1
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
        for timer in (self._settle_later, self._stick_later, self._banner_timer):
            timer.stop()

    def _on_stream_changed(self) -> None:
        self._stats.procId = self._output.procId
        self.following = True
        self.streamingProcIdChanged.emit()
        self._update_texts()

    def _update_scope_text(self) -> None:
        session, agent = self._procs.session, self._procs.agent
        text = f"{session} / {agent}" if agent else f"{session} · all agents"
        set_stored(self, "_scope_text", text, ProcWindowModel.scopeTextChanged)

    scopeText = stored_property(str, "_scope_text", scopeTextChanged, writable=False)
    """The header's scope: ``build / cc``, or ``build · all agents``."""

    # -- actions -----------------------------------------------------------------------

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
        if out.procId < 0:
            empty = "Select a process and press Enter to stream its output"
        elif filtered:
            empty = "No line matches the filter"
        else:
            empty = "No output yet"
        lines = plural(out.lineCount, "line", "lines")
        count = f"{out.matchCount} of {lines}" if filtered else lines
        match = "invalid" if out.filterError else plural(out.matchCount, "match", "matches")
        texts = (empty, count, match)
        if texts != self._texts:
            self._texts = texts
            self.textsChanged.emit()

    def _get_empty_text(self) -> str:
        return self._texts[0]

    def _get_line_count_text(self) -> str:
        return self._texts[1]

    def _get_match_text(self) -> str:
        return self._texts[2]

    emptyText = Property(str, _get_empty_text, notify=textsChanged)
    """What the empty output pane says."""
    lineCountText = Property(str, _get_line_count_text, notify=textsChanged)
    """The footer's count: ``120 lines``, or ``8 of 120 lines`` while filtered."""
    matchText = Property(str, _get_match_text, notify=textsChanged)
    """The filter's count: ``1 match``, ``8 matches``, or ``invalid``."""

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
        """Esc: drop the filter and the selection."""
        self._output.filterText = ""
        self.clearSelection()

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

    @Slot()
    def outputReset(self) -> None:
        """The output view took a reset: no line is selected; back to the end if following."""
        self.clearSelection()
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
