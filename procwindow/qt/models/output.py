"""OutputModel: the output lines of one process, filtered and capped.

The model composes parts: the lines and the filter scan are a
:class:`~._lines.LineBuffer`'s, reading the supervisor by cursor an
:class:`~._reading.OutputReader`'s, drawing a line a
:class:`~._render.LineRenderer`'s (none of them needs Qt), and the frame clock
a :class:`~._frames.FrameLoop`'s. This module tells views what changed.
"""

from __future__ import annotations

from PySide6.QtCore import QAbstractListModel, QByteArray, QCoreApplication, QObject, Signal, Slot
from PySide6.QtGui import QColor, QGuiApplication
from PySide6.QtQml import QmlElement

from procwindow.core import Event, Line, Proc, ProcNotFound, SupervisorAPI
from procwindow.core.rules import scope_pattern

from .._support import (
    EventPump,
    Lifeline,
    qt_property,
    resolve_supervisor,
    set_stored,
    stored_property,
)
from ._earlier import EarlierLines
from ._filter import FilterError, compile_filter, compile_marker
from ._frames import (
    FLOOD_FRAME_MS,
    FRAME_MS,
    FRAME_READ_BUDGET,
    FRAME_READ_LIMIT,
    FRAME_READ_MIN,
    FRAME_READS,
    FrameLoop,
)
from ._lines import LineBuffer, Staged
from ._reading import LogFacts, OutputReader
from ._render import DEFAULT_COLORS, PLAIN_TEXT, RICH_TEXT, STYLED_TEXT, LineRenderer
from ._row_data import row_data
from .roles import DISPLAY, OUTPUT_ROLE_NAMES, ROOT, ModelIndex, OutputRole

__all__ = [
    "DEFAULT_COLORS",
    "DEFAULT_MAX_LINES",
    "FILTER_BUDGET",
    "FLOOD_FRAME_MS",
    "FRAME_MS",
    "FRAME_READS",
    "FRAME_READ_BUDGET",
    "FRAME_READ_LIMIT",
    "FRAME_READ_MIN",
    "PLAIN_TEXT",
    "RICH_TEXT",
    "STYLED_TEXT",
    "OutputModel",
]

QML_IMPORT_NAME = "Procwindow"
QML_IMPORT_MAJOR_VERSION = 1

#: Default cap on the lines an OutputModel holds (terminals keep 10k–100k).
DEFAULT_MAX_LINES = 100_000
#: The roles a change of style (colours, times, marks) changes.
_STYLE_ROLES = [OutputRole.STYLED, OutputRole.SHOWN, OutputRole.SHOWN_FORMAT]
#: Seconds of filtering (or ANSI stripping) per frame; a longer scan goes on in
#: the next frames.
FILTER_BUDGET = 0.005


def _color_property(key: str, notify: Signal) -> QColor:
    """The Qt property of one of the model's colours (``DEFAULT_COLORS`` keys)."""
    return qt_property(
        QColor,
        lambda self: self._color(key),
        lambda self, c: self._set_color(key, c),
        notify=notify,
    )


@QmlElement
class OutputModel(QAbstractListModel):
    """The output of one proc, one row per line, oldest first: the output pane.

    Set ``procId`` (-1: none) to show a proc: its lines still in the supervisor's
    ring are loaded at once (the newest ``maxLines``), and new lines follow.
    Output events (at once after a quiet spell, else one per stream every 50 ms)
    only ask for a frame; a frame reads ``Supervisor.read_runs(procId, since=cursor)`` a
    bounded number of lines at a time and then changes the rows, at most once
    per frame, going on frame after frame while lines keep coming (see
    ``_frames`` for the pacing).

    Rows never leave from the front. New rows come at the end
    (``beginInsertRows``); past ``maxLines`` the oldest lines go, and the rows
    *shift*: each row shows the line that was ``rows`` rows below it, which
    views learn from one ``dataChanged`` over the rows that stay, then
    ``shifted(rows)``; only the difference in the number of rows is inserted
    (or removed) at the end. A full pane that follows a flood keeps its row
    count, so a view at the end stays there and redraws the rows it shows, no
    delegate moves, and view positions stay bounded however long a proc runs
    (a ListView keeps the rows it shows in place when rows go at the front, so
    its positions would grow by a row for each line ever dropped; past 2**24 px
    the scene graph's float puts rows at uneven places). A view that wants to
    stay on its lines moves up by ``rows`` rows on ``shifted``; so do the
    current match (``currentMatch``) and a view-model's selection.

    Filter: with ``filterText`` set only matching lines are rows — a substring,
    or a regular expression with ``filterRegex``; ``caseSensitive`` applies to
    both. It runs over the plain (ANSI-stripped) text in chunks, at most
    ``FILTER_BUDGET`` per frame, so a long scan never stalls drawing;
    ``filtering`` is true until it has caught up, and ``matchCount`` grows
    meanwhile. An invalid regex sets ``filterError`` and leaves the previous
    filter in effect. ``clear()`` empties the view, not the log: later lines
    still arrive. ``matchCount`` is the number of rows (``lineCount`` when no
    filter is set).

    What is not held: ``earlierLines`` counts the proc's lines before the oldest
    one held (dropped past ``maxLines``, skipped to catch up, or cleared), which
    the log files keep (:meth:`logFiles`); ``loadEarlier`` reads them back, a
    chunk at a time, as rows before the others (see ``_earlier``).

    Matches: while a filter is set (``marking``), ``styled`` marks every match
    inside each line on ``matchColor`` (a view draws it as ``Text.RichText``),
    and those of row ``currentMatch`` (-1: none; set by the pane's
    :class:`~procwindow.qt.pane.OutputFind`) on ``currentMatchColor``; the
    current match stays on its line as rows go at the front, and is none again
    after any other reset. With ``showTimes`` a line starts with the time it
    arrived (``HH:MM:SS.mmm``, in ``timeColor``), in ``styled`` and in copies.

    The unfinished line: ``partialText`` (and ``partialStyled``) is the line
    the proc has begun and not ended (a prompt waiting for input, a ``\r``
    progress bar's latest state), "" for none. It is not a row: it comes after
    them, whatever the filter, and goes once the line is complete.

    Roles: ``seq``, ``stream`` (``"stdout"``/``"stderr"``), ``isStderr``,
    ``time``, ``timeText``, ``text`` (ANSI stripped; also ``display``),
    ``styled`` (HTML, colours for ``darkBackground``), ``split`` (a piece of an
    over-long line). A view draws ``shown`` with ``textFormat: shownFormat``:
    the raw text as ``Text.PlainText`` when there is nothing to style, else
    ``styled`` (see ``_render``, which also keeps the last renderings).

    Costs (100k-line ring, 2-core machine): selecting the proc ~80 ms, nearly all
    of it ``Supervisor.read``; the ANSI stripping of such a load (~0.1 s) is
    spread over the next frames, or done for a chunk when the filter or a copy
    needs it. A substring filter over 100k stripped lines fits in one frame.
    """

    ROLE_NAMES = OUTPUT_ROLE_NAMES

    procIdChanged = Signal()
    headerChanged = Signal()
    lineCountChanged = Signal()
    matchCountChanged = Signal()
    maxLinesChanged = Signal()
    filterTextChanged = Signal()
    filterRegexChanged = Signal()
    caseSensitiveChanged = Signal()
    filterErrorChanged = Signal()
    filteringChanged = Signal()
    darkBackgroundChanged = Signal()
    markingChanged = Signal()
    currentMatchChanged = Signal()
    showTimesChanged = Signal()
    colorsChanged = Signal()
    partialChanged = Signal()
    earlierLinesChanged = Signal()
    heldChanged = Signal()
    pendingLinesChanged = Signal()
    earlierLoaded = Signal(int, arguments=["rows"])
    """``loadEarlier`` put ``rows`` rows at the top (0: none came, or not yet)."""
    shifted = Signal(int, arguments=["rows"])
    """The oldest ``rows`` lines went: row ``r`` shows what row ``r + rows`` showed
    (announced by ``dataChanged`` just before)."""

    def __init__(
        self,
        supervisor: SupervisorAPI | None = None,
        proc_id: int = -1,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._sup = resolve_supervisor(supervisor, "OutputModel")
        self._proc_id = -1
        self._buf = LineBuffer(DEFAULT_MAX_LINES)
        self._reader = OutputReader(self._sup, self._buf)
        self._earlier = EarlierLines(self._sup, self._reader, self._buf)
        self._render = LineRenderer()
        argb = QColor.NameFormat.HexArgb
        self._render.colors.update({k: QColor(v).name(argb) for k, v in DEFAULT_COLORS.items()})
        self._count = 0  # the rows views were told of (rowCount)
        self._filter_text = ""
        self._filter_regex = False
        self._case_sensitive = False
        self._filter_error = ""
        self._dark = False
        self._current = -1  # the row of the current match
        self._show_times = False
        self._lifeline = Lifeline(self)
        self._pump: EventPump | None = None
        self._frame_counts = self._counts()  # the counts before this frame's read
        self._frames = FrameLoop(
            self, self._reader, self._buf, begin=self._begin, read=self._read, show=self._show
        )
        if proc_id >= 0:
            self._set_proc_id(proc_id)

    # -- properties --------------------------------------------------------------

    def _get_proc_id(self) -> int:
        return self._proc_id

    def _set_proc_id(self, proc_id: int) -> None:
        proc_id = max(proc_id, -1)
        if proc_id == self._proc_id:
            return
        counts = self._counts()
        self._lifeline.release(self._pump)
        self._pump = None
        self._proc_id = proc_id
        was_held = self._reader.held  # another proc's lines: from its tail, read
        self._load_tail()
        self.procIdChanged.emit()
        self.headerChanged.emit()
        if was_held:
            self.heldChanged.emit()
            self.pendingLinesChanged.emit()
        self._emit_counts(*counts)
        self._schedule()

    def _load_tail(self) -> None:
        """Read the proc's newest ``maxLines`` lines, all at once (the view opens on
        the tail, not on a growing head), in one reset."""
        self.beginResetModel()
        self._buf.reset()
        self._render.forget()  # the numbers start over
        self._earlier.reset()
        proc = self._find_proc()
        self._reader.start(proc)
        if proc is not None:
            self._hear(proc)
            self._read(limit=None)
            self._buf.drop_front(self._buf.held_count - self._buf.max_lines)
            self._buf.scan(FILTER_BUDGET)
        self._count = self._buf.row_count
        self.endResetModel()
        self._set_current(-1)
        self.partialChanged.emit()

    def _hear(self, proc: Proc) -> None:
        """Follow ``proc``'s events (not once its output ended, unless earlier lines
        are on their way: a remote mirror announces them with one)."""
        if self._pump is None:
            self._pump = self._lifeline.hold(
                EventPump(self._sup, scope_pattern(proc.session, proc.agent), self._on_events)
            )

    def _find_proc(self) -> Proc | None:
        if self._proc_id < 0:
            return None
        try:
            return self._sup.get(self._proc_id)
        except ProcNotFound:
            return None

    def proc(self) -> Proc | None:
        """The proc shown, as the supervisor has it now (None: none, or forgotten)."""
        return self._find_proc()

    def _get_header(self) -> str:
        p = self._find_proc() if self._proc_id >= 0 else None
        if p is None:
            return "Output" if self._proc_id < 0 else f"Output of ID {self._proc_id}"
        return f"Output of ID {p.id} · PID {p.os_pid}"

    def _get_max_lines(self) -> int:
        return self._buf.max_lines

    def _set_max_lines(self, value: int) -> None:
        value = max(1, value)
        if value == self._buf.max_lines:
            return
        self._buf.max_lines = value
        counts = self._counts()
        self._update_rows(scan=False)
        self.maxLinesChanged.emit()
        self._emit_counts(*counts)

    def _set_held(self, held: bool) -> None:
        if held != self._reader.held:
            counts = self._counts()
            self._reader.held = held
            if not held and self._earlier.release():
                self._load_tail()  # newest lines went for earlier ones: the tail anew
            elif not held:
                self._update_rows(scan=False)  # the lines read back go
            self.heldChanged.emit()
            self.pendingLinesChanged.emit()
            self._emit_counts(*counts)
            self._schedule()  # released: the lines that waited, or the newest maxLines

    def _refilter(self) -> None:
        """Apply the filter properties: one reset, then the scan goes on frame by frame."""
        text, regex, case = self._filter_text, self._filter_regex, self._case_sensitive
        try:
            matcher = compile_filter(text, regex, case)
            marker = compile_marker(text, regex, case)
        except FilterError as exc:
            set_stored(self, "_filter_error", str(exc), OutputModel.filterErrorChanged)
            return  # keep showing what the last valid filter showed
        set_stored(self, "_filter_error", "", OutputModel.filterErrorChanged)
        counts = self._counts()
        marking = self._render.marker is not None
        self.beginResetModel()
        self._render.set_marker(marker)
        self._buf.set_filter(matcher)
        self._buf.scan(FILTER_BUDGET)
        self._count = self._buf.row_count
        self.endResetModel()
        self._set_current(-1)
        if marking != (marker is not None):
            self.markingChanged.emit()
        self._emit_counts(*counts)
        self._schedule()

    def _restyle(self) -> None:
        """Apply darkBackground, showTimes or a colour: every line is drawn anew."""
        self._render.restyle(show_times=self._show_times, dark=self._dark)
        rows = self._count
        if rows:
            self.dataChanged.emit(self.index(0), self.index(rows - 1), _STYLE_ROLES)
        if self._reader.partial is not None:
            self.partialChanged.emit()

    def _get_current(self) -> int:
        return self._current

    def _set_current(self, row: int) -> None:
        """Make ``row`` the current match (-1, or any row out of range: none)."""
        row = row if 0 <= row < self._count else -1
        old, self._current = self._current, row
        if row == old:
            return
        self._render.set_current(row)
        if self._render.marker is not None:
            for changed in (old, row):
                if 0 <= changed < self._count:
                    index = self.index(changed)
                    self.dataChanged.emit(index, index, _STYLE_ROLES)
        self.currentMatchChanged.emit()

    def _color(self, key: str) -> QColor:
        return QColor(self._render.colors[key])

    def _set_color(self, key: str, color: QColor) -> None:
        if QColor(color) != self._color(key):
            self._render.colors[key] = QColor(color).name(QColor.NameFormat.HexArgb)
            self.colorsChanged.emit()
            self._restyle()

    def _get_partial_styled(self) -> str:
        return self._render.partial(self._reader.partial)

    def _partial_moved(self, old: Line | None) -> None:
        """Tell views if the unfinished line is not ``old`` any more."""
        new = self._reader.partial
        if (old and (old.text, old.stream, old.time)) != (new and (new.text, new.stream, new.time)):
            self.partialChanged.emit()

    procId = qt_property(int, _get_proc_id, _set_proc_id, notify=procIdChanged)
    """The proc shown (the supervisor's id), -1 for none."""
    header = qt_property(str, _get_header, notify=headerChanged)
    """``Output of ID N · PID P``: procwindow's id and the kernel's pid."""
    lineCount = qt_property(int, lambda self: self._buf.held_count, notify=lineCountChanged)
    """Lines held (filtered or not), at most ``maxLines`` (with lines read back from
    the log, ``loadEarlier``, at most twice as many)."""
    matchCount = qt_property(int, lambda self: self._buf.row_count, notify=matchCountChanged)
    """Rows: the lines that match the filter (all lines without one)."""
    maxLines = qt_property(int, _get_max_lines, _set_max_lines, notify=maxLinesChanged)
    """The cap on lines held; the oldest go first."""
    filterText = stored_property(str, "_filter_text", filterTextChanged, on_change=_refilter)
    """Show only lines containing this ("" for all lines)."""
    filterRegex = stored_property(bool, "_filter_regex", filterRegexChanged, on_change=_refilter)
    """Read ``filterText`` as a regular expression (RE2 syntax)."""
    caseSensitive = stored_property(
        bool, "_case_sensitive", caseSensitiveChanged, on_change=_refilter
    )
    """Match case (off: ``casefold()`` substring / ``re.IGNORECASE``)."""
    filterError = stored_property(str, "_filter_error", filterErrorChanged, writable=False)
    """Why ``filterText`` is not a valid regular expression, else ""."""
    filtering = qt_property(bool, lambda self: self._buf.filtering, notify=filteringChanged)
    """True while a filter scan is still catching up."""
    held = qt_property(bool, lambda self: self._reader.held, _set_held, notify=heldChanged)
    """Hold the rows still (a person reads, scrolls or selects in a flood): no
    new line is read until it turns false; then the newest ``maxLines`` at most."""
    pendingLines = qt_property(int, lambda self: self._reader.pending, notify=pendingLinesChanged)
    """While ``held``: lines the proc wrote that are not read yet (0 otherwise)."""
    earlierLines = qt_property(
        int, lambda self: self._reader.earlier_lines, notify=earlierLinesChanged
    )
    """Lines of the proc before the oldest one held: not shown here, in the log files."""
    darkBackground = stored_property(bool, "_dark", darkBackgroundChanged, on_change=_restyle)
    """Choose ANSI colours for a dark output pane (default: a light one)."""
    marking = qt_property(bool, lambda self: self._render.marker is not None, notify=markingChanged)
    """True while a filter is in effect: ``styled`` marks its matches (a view
    draws them as ``Text.RichText``)."""
    currentMatch = qt_property(int, _get_current, _set_current, notify=currentMatchChanged)
    """The row of the current match, marked on ``currentMatchColor``; -1 for none."""
    showTimes = stored_property(bool, "_show_times", showTimesChanged, on_change=_restyle)
    """Start each line (and each copied line) with the time it arrived."""
    matchColor = _color_property("match", colorsChanged)
    """The background of a match (translucent, to read on a light or a dark pane)."""
    currentMatchColor = _color_property("currentMatch", colorsChanged)
    """The background of the current match's matches."""
    timeColor = _color_property("time", colorsChanged)
    """The colour of the times ``showTimes`` shows."""
    partialText = qt_property(str, lambda self: self._reader.partial_text, notify=partialChanged)
    """The unfinished line (ANSI stripped), "" for none."""
    partialStyled = qt_property(str, _get_partial_styled, notify=partialChanged)
    """The unfinished line as ``styled`` renders a row (its time too, with ``showTimes``)."""
    partialIsStderr = qt_property(
        bool, lambda self: self._reader.partial_is_stderr, notify=partialChanged
    )
    """True when the unfinished line is on stderr."""

    # -- Qt model interface ------------------------------------------------------

    def rowCount(self, parent: ModelIndex = ROOT) -> int:
        return 0 if parent.isValid() else self._count

    def roleNames(self) -> dict[int, QByteArray]:
        return self.ROLE_NAMES

    def data(self, index: ModelIndex, role: int = DISPLAY) -> object:
        return row_data(self._buf, self._render, index.row(), self._count, role)

    # -- slots -----------------------------------------------------------------

    @Slot()
    def clear(self) -> None:
        """Empty the view (the supervisor keeps the log); new lines still arrive."""
        counts = self._counts()
        self.beginResetModel()
        self._buf.clear()
        self._count = 0
        self.endResetModel()
        self._set_current(-1)
        self._emit_counts(*counts)

    @Slot(result=int)
    def loadEarlier(self) -> int:
        """Read lines before the oldest held back from the log and make them the first
        rows (see ``_earlier``); how many rows came (0: none, or not yet there)."""
        counts, partial = self._counts(), self._reader.partial
        staged = self._earlier.load(dropped=lambda: self._update_rows(scan=False))
        if self._earlier.waiting and (proc := self._find_proc()) is not None:
            self._hear(proc)
        self._partial_moved(partial)
        self._update_rows(scan=False, front=staged)
        rows = staged.rows if staged is not None else 0
        self._set_current(self._current)  # none, if its row went
        self._emit_counts(*counts)
        self.earlierLoaded.emit(rows)
        return rows

    def earlier(self) -> EarlierLines:
        """What :meth:`loadEarlier` read back and may still read (to look at)."""
        return self._earlier

    @Slot(int, result=int)
    def rowOfSeq(self, seq: int) -> int:
        """The row showing the proc's line ``seq``, -1 if none does (not held,
        or filtered out)."""
        return self._buf.row_of_seq(seq)

    @Slot(list, result=str)
    def copyRows(self, rows: list[int]) -> str:
        """The plain text of these rows, in row order, one per line (each after
        its time with ``showTimes``)."""
        return self._buf.copy_rows(rows, self._show_times)

    @Slot(result=str)
    def copyAll(self) -> str:
        """The plain text (ANSI stripped) of every row, one per line (each after
        its time with ``showTimes``)."""
        return self._buf.copy_all(self._show_times)

    @Slot(result=list)
    def logFiles(self) -> list[str]:
        """The proc's log files that hold something, stdout's first ([] for none or no proc)."""
        return self._reader.logs().files

    def logs(self) -> LogFacts:
        """The proc's log files, and what the disk cap cut from them."""
        return self._reader.logs()

    @Slot(str)
    def copyToClipboard(self, text: str) -> None:
        """Put ``text`` on the system clipboard."""
        if isinstance(QCoreApplication.instance(), QGuiApplication):
            QGuiApplication.clipboard().setText(text)

    def close(self) -> None:
        """Stop following the supervisor (the lines stay). Done on destruction too."""
        self._lifeline.close()
        self._pump = None
        self._reader.reading = False
        self._frames.stop()

    # -- appending -------------------------------------------------------------

    def _on_events(self, events: list[Event]) -> None:
        if any(ev.proc_id == self._proc_id or ev.missed for ev in events):
            if self._earlier.waiting:  # the earlier lines a remote mirror fetched
                self.loadEarlier()
            mine = (ev.last_seq or 0 for ev in events if ev.proc_id == self._proc_id)
            if self._reader.hear(max(mine, default=0)):
                self.pendingLinesChanged.emit()
            self._schedule()

    def _schedule(self) -> None:
        self._frames.schedule()

    def _begin(self) -> None:
        """A frame starts: what its views knew before it."""
        self._frame_counts = self._counts()

    def _show(self) -> None:
        """The frame's lines become rows, and views hear of it."""
        self._update_rows(scan=True)
        self._emit_counts(*self._frame_counts)
        self._buf.strip_some(FILTER_BUDGET)

    def _read(self, limit: int | None) -> int:
        """Take new lines from the supervisor into the buffer (no rows yet); how many."""
        partial = self._reader.partial
        got = self._reader.read(limit)
        self._partial_moved(partial)
        if not self._reader.reading and self._pump is not None and not self._earlier.waiting:
            # Its output ended, or it was dismissed: nothing more will come.
            self._lifeline.release(self._pump)
            self._pump = None
        return got

    def _update_rows(self, scan: bool, front: Staged | None = None) -> None:
        """Drop the oldest lines beyond maxLines and (with ``scan``) make rows of
        new lines, then tell views (see the class docstring: rows shift);
        ``front``: lines read back, to hold before the others (rows at the top)."""
        buf = self._buf
        trim = buf.overflow()
        if trim is not None:
            buf.drop_front(trim.lines)
        if scan:
            buf.scan(FILTER_BUDGET)
        shift = trim.rows if trim is not None else -(front.rows if front is not None else 0)
        # The current match stays on its line (or goes with it), before any
        # row is drawn again.
        moved = shift != 0 and self._current >= 0
        if moved:
            self._current = max(self._current - shift, -1)
            self._render.set_current(self._current)
        if front is not None:
            self.beginInsertRows(ROOT, 0, front.rows - 1)
            buf.prepend(front)
            self._count += front.rows
            self.endInsertRows()
        old, new = self._count, buf.row_count
        # The buffer has changed already; views learn it in order: the count
        # at the end first, then what the rows that stay show now.
        if new > old:
            self.beginInsertRows(ROOT, old, new - 1)
            self._count = new
            self.endInsertRows()
        elif new < old:
            self.beginRemoveRows(ROOT, new, old - 1)
            self._count = new
            self.endRemoveRows()
        kept = min(old, new) if shift > 0 else 0
        if kept > 0:
            self.dataChanged.emit(self.index(0), self.index(kept - 1), [])
        if moved:
            self.currentMatchChanged.emit()
        if shift > 0:
            self.shifted.emit(shift)

    def _counts(self) -> tuple[int, int, bool, int]:
        buf = self._buf
        return buf.held_count, buf.row_count, buf.filtering, self._reader.earlier_lines

    def _emit_counts(self, lines: int, matches: int, filtering: bool, earlier: int) -> None:
        if earlier != self._reader.earlier_lines:
            self.earlierLinesChanged.emit()
        if lines != self._buf.held_count:
            self.lineCountChanged.emit()
        if matches != self._buf.row_count:
            self.matchCountChanged.emit()
        if filtering != self._buf.filtering:
            self.filteringChanged.emit()
