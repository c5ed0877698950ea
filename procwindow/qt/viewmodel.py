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
import os
import time
from typing import NamedTuple

from PySide6.QtCore import Property, QObject, QTimer, QUrl, Signal, Slot
from PySide6.QtGui import QColor, QDesktopServices, QFont, QFontMetricsF
from PySide6.QtQml import QmlElement, QmlUncreatable

from ._support import Later, plural, set_stored, stored_property
from .controller import ActiveScope, ProcController, StatsSampler
from .models import OutputModel, ProcModel, ProcRole
from .models.format import status_texts
from .runform import RunForm

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
#: Widths of the process table's fixed columns (px). ``status`` is measured (the
#: widest status text, see :class:`ProcTableStyle`); ``actions`` is the table's to say.
COLUMN_WIDTHS = {"pid": 64, "runtime": 88}
#: The Status column's width until a font has been measured.
DEFAULT_STATUS_WIDTH = 200.0
#: The Agent column's width, and the narrowest it gets (an agent name elides).
AGENT_WIDTH = (104.0, 72.0)
#: The command column (``tool``) shrinks to this width before the Agent column gives
#: up its spare room.
COMFORTABLE_FLEXIBLE_WIDTH = 160.0
#: The narrowest the other columns (``tool``) get; they share what is left. Below
#: the table's minimum width (:func:`minimum_table_width`) the view scrolls sideways;
#: the windows never get that narrow: their minimum width fits every column.
MIN_FLEXIBLE_WIDTH = 100.0
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


def _fixed_widths(status_width: float, actions_width: float) -> dict[str, float]:
    return {**COLUMN_WIDTHS, "status": status_width, "actions": actions_width}


def column_widths(
    names: list[str],
    width: float,
    actions_width: float,
    status_width: float = DEFAULT_STATUS_WIDTH,
) -> list[float]:
    """The process table's column widths for a view ``width`` px wide.

    Fixed columns take :data:`COLUMN_WIDTHS` (``status`` takes ``status_width``,
    ``actions`` takes ``actions_width``): they never shrink, so a status is never
    cut and the actions never leave the view. The command column (``tool``) takes
    what is left. As the view narrows, the command shrinks to
    :data:`COMFORTABLE_FLEXIBLE_WIDTH`, then the Agent column to its narrowest,
    then the command to :data:`MIN_FLEXIBLE_WIDTH`.

    >>> column_widths(["pid", "tool", "status", "runtime", "actions"], 1000, 154, 200)
    [64.0, 494.0, 200.0, 88.0, 154.0]
    >>> column_widths(["pid", "agent", "tool", "status", "runtime"], 540, 0, 200)
    [64.0, 72.0, 116.0, 200.0, 88.0]
    """
    fixed = _fixed_widths(status_width, actions_width)
    rest = width - sum(fixed.get(name, 0.0) for name in names)
    agent = 0.0
    if "agent" in names:
        preferred, narrowest = AGENT_WIDTH
        agent = min(preferred, max(narrowest, rest - COMFORTABLE_FLEXIBLE_WIDTH))
        rest -= agent
    flexible = [name for name in names if name not in fixed and name != "agent"]
    share = max(MIN_FLEXIBLE_WIDTH, rest / max(len(flexible), 1))
    widths = {**fixed, "agent": agent}
    return [float(widths.get(name, share)) for name in names]


def minimum_table_width(names: list[str], actions_width: float, status_width: float) -> float:
    """The narrowest view in which every column of ``names`` fits (see :func:`column_widths`).

    >>> minimum_table_width(["pid", "agent", "tool", "status", "runtime", "actions"], 154, 200)
    678.0
    """
    fixed = _fixed_widths(status_width, actions_width)
    return float(
        sum(
            fixed[name]
            if name in fixed
            else AGENT_WIDTH[1]
            if name == "agent"
            else MIN_FLEXIBLE_WIDTH
            for name in names
        )
    )


def widest_text(font: QFont, texts: frozenset[str]) -> float:
    """The advance (px) of the widest of ``texts`` drawn in ``font``."""
    metrics = QFontMetricsF(font)
    return max((metrics.horizontalAdvance(text) for text in texts), default=0.0)


_widest_status: dict[str, float] = {}  # font key -> widest status text (px)


def widest_status(font: QFont) -> float:
    """The advance (px) of the widest status text in ``font`` (measured once per font)."""
    key = font.key()
    width = _widest_status.get(key)
    if width is None:
        width = _widest_status[key] = widest_text(font, status_texts())
    return width


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

    QML makes one per table and binds ``columnNames``, ``viewWidth``,
    ``actionsWidth``, and the font (``statusFontFamily``, ``statusFontSize`` in
    pixels) and ``statusPadding`` of its Status cells; ``columnWidths`` and
    ``minimumWidth`` follow (see :func:`column_widths`). The Status column is as
    wide as the widest text a status can have
    (:func:`~procwindow.qt.models.format.status_texts`) in that font, plus
    ``statusPadding``: every status reads in full, whatever the width of the view.
    """

    columnNamesChanged = Signal()
    viewWidthChanged = Signal()
    actionsWidthChanged = Signal()
    statusFontChanged = Signal()
    statusPaddingChanged = Signal()
    columnWidthsChanged = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._column_names: list[str] = []
        self._view_width = 0.0
        self._actions_width = 0.0
        self._status_family = ""
        self._status_size = 0
        self._status_padding = 0.0
        self._status_width = DEFAULT_STATUS_WIDTH
        self._minimum_width = 0.0
        self._column_widths: list[float] = []
        self._tints: dict[int, QColor] = {}

    def _relayout(self) -> None:
        font = QFont(self._status_family) if self._status_family else QFont()
        if self._status_size > 0:
            font.setPixelSize(self._status_size)
        # A pixel to spare: a text laid out in a QML Text can round up.
        status = math.ceil(widest_status(font)) + 1.0 + self._status_padding
        names, actions = self._column_names, self._actions_width
        layout = (
            column_widths(names, self._view_width, actions, status),
            status,
            minimum_table_width(names, actions, status),
        )
        if layout != (self._column_widths, self._status_width, self._minimum_width):
            self._column_widths, self._status_width, self._minimum_width = layout
            self.columnWidthsChanged.emit()

    columnNames = stored_property(list, "_column_names", columnNamesChanged, on_change=_relayout)
    """The table's column keys (``ProcModel.columnNames``)."""
    viewWidth = stored_property(float, "_view_width", viewWidthChanged, on_change=_relayout)
    """The width the columns share."""
    actionsWidth = stored_property(
        float, "_actions_width", actionsWidthChanged, on_change=_relayout
    )
    """The width of the ``actions`` column (0 when the table shows no actions)."""
    statusFontFamily = stored_property(
        str, "_status_family", statusFontChanged, on_change=_relayout
    )
    """The font family of a Status cell's text ("" for the application's)."""
    statusFontSize = stored_property(int, "_status_size", statusFontChanged, on_change=_relayout)
    """The pixel size of a Status cell's text (0 for the application font's size)."""
    statusPadding = stored_property(
        float, "_status_padding", statusPaddingChanged, on_change=_relayout
    )
    """The room a Status cell takes beside its text (margins, the coloured dot)."""
    columnWidths = stored_property(list, "_column_widths", columnWidthsChanged, writable=False)
    """The width of each column, in order."""
    statusWidth = stored_property(float, "_status_width", columnWidthsChanged, writable=False)
    """The width of the Status column."""
    minimumWidth = stored_property(float, "_minimum_width", columnWidthsChanged, writable=False)
    """The narrowest view in which every column fits (see :func:`minimum_table_width`)."""

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
    (jump to the live tail, as the End key does). When the output model
    rebases (drops its oldest rows in a reset), a view that follows goes to
    its end and one that does not stays on its lines (``positionAt``); the
    selection moves with its lines. Lines the pane no longer holds are named,
    with the log that keeps them (``earlierText``, ``openLog``, ``copyLogPath``).
    Esc clears the filter and the selection; in an empty filter field it hands
    the keys back to the table (``leaveFilter``).

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
    """The output view should scroll to ``y`` px below its first row (after a rebase)."""
    linesReplaced = Signal()
    """The output view shows other lines now: what it measured of the old ones is stale."""
    leaveFilter = Signal()
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
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._procs = proc_model
        self._output = output_model
        self._stats = stats
        self._controller = controller
        self._run_form = RunForm(controller, self)
        self._run_form.succeeded.connect(self._on_run_started)
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
        self._rebase: tuple[int, float] | None = None  # rows dropped, new view position
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
        output_model.procIdChanged.connect(self._on_stream_changed)
        output_model.rowsInserted.connect(self.followTail)
        output_model.rowsRemoved.connect(self._on_rows_removed)
        for signal in (
            output_model.lineCountChanged,
            output_model.matchCountChanged,
            output_model.filterTextChanged,
            output_model.filterErrorChanged,
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

    procModel = Property(ProcModel, _get_procs, constant=True)
    outputModel = Property(OutputModel, _get_output, constant=True)
    stats = Property(StatsSampler, _get_stats, constant=True)
    controller = Property(ProcController, _get_controller, constant=True)
    runForm = Property(RunForm, _get_run_form, constant=True)
    """The Run dialog's form (``requestRun`` opens it on the window's scope)."""
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
        if self._follow >= 0 and self._procs.rowOf(self._follow) >= 0:
            self._follow, follow = -1, self._follow
            self.stream(follow)
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
        self._earlier_timer.stop()
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

    @Slot()
    def requestRun(self) -> None:
        """Open the Run dialog on the window's scope (the default agent for a whole session)."""
        self._run_form.open(self._procs.session, self._procs.agent)

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
        match = "invalid" if out.filterError else _count(out.matchCount, "match", "matches")
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
    """The filter's count: ``1 match``, ``8 matches``, or ``invalid``."""
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

    def _on_rows_removed(self, _parent: object, first: int, last: int) -> None:
        if first == 0:
            self._shift_selection(last + 1)

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
    def outputRebasing(self, rows: int, top: float, lineHeight: float) -> None:
        """The output model is about to drop its oldest ``rows`` rows in a reset
        (``OutputModel.rebasing``); the view is ``top`` px below its first row,
        of rows ``lineHeight`` px high. :meth:`outputRebased` puts it back.
        """
        self._rebase = rows, max(0.0, top - rows * lineHeight)

    @Slot()
    def outputRebased(self) -> None:
        """The rebase is done (``OutputModel.rebased``): the selection moves with its
        lines; the view goes to its end if following, else back on its lines
        (``positionAt``)."""
        rebase, self._rebase = self._rebase, None
        if rebase is None:
            return
        rows, top = rebase
        self._shift_selection(rows)
        if self._following:
            self.positionAtEnd.emit()
        else:
            self.positionAt.emit(top)

    @Slot()
    def outputReset(self) -> None:
        """The output view took a reset: no line is selected; back to the end if
        following. (Not after :meth:`outputRebasing`: a rebase keeps its lines.)"""
        if self._rebase is not None:
            return
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
