"""ProcModel: the process table of a scope (a session, or one of its agents)."""

from __future__ import annotations

import bisect
import functools
import time
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QByteArray, QObject, Qt, QTimer, Signal, Slot
from PySide6.QtQml import QmlElement

from procwindow.core import (
    Event,
    EventKind,
    ExitInfo,
    InvalidScope,
    Proc,
    ProcNotFound,
    ProcState,
    Supervisor,
    command_state,
    format_runtime,
)
from procwindow.core.rules import check_scope_name, scope_pattern

from .._support import (
    EventPump,
    Lifeline,
    empty_data,
    qt_property,
    resolve_supervisor,
    scope_properties,
    set_stored,
)
from ..sampler import Drawing, RowSampler, StatsHistory, cpu_text, memory_text
from .format import (
    DISCONNECTED,
    STATUS_COLORS,
    depends_text,
    status_color,
    status_text,
    time_text,
)
from .roles import (
    AGENT_COLUMNS,
    COLUMN_TITLES,
    DISPLAY,
    PROC_ROLE_NAMES,
    ROOT,
    RUNTIME_ROLES,
    SESSION_COLUMNS,
    SORTABLE_COLUMNS,
    STATE_ROLES,
    STATS_ROLES,
    ModelIndex,
    ProcColumn,
    ProcRole,
)

__all__ = [
    "OFFSCREEN_SAMPLES",
    "REORDER_QUIET_MS",
    "TICK_INTERVAL_MS",
    "VISIBLE_MARGIN",
    "ProcModel",
]

QML_IMPORT_NAME = "Procwindow"
QML_IMPORT_MAJOR_VERSION = 1

#: Milliseconds between runtime refreshes.
TICK_INTERVAL_MS = 1000
#: Rows refreshed beyond each end of the visible range: delegates a view keeps
#: just outside its viewport stay current while it scrolls.
VISIBLE_MARGIN = 8
#: Milliseconds the rows wait, once the pointer has left the table, before they
#: take the order their changed values give them (see ``orderHeld``).
REORDER_QUIET_MS = 500
#: Running rows off screen whose latest CPU and memory are read per tick while the
#: table is sorted by one of them (in turn, so that each climbs into view in time).
OFFSCREEN_SAMPLES = 32

# The order of the states in a sort by status.
_STATE_RANK = {
    ProcState.STARTING: 0,
    ProcState.RUNNING: 1,
    ProcState.STOPPING: 2,
    ProcState.EXITED: 3,
}
# The columns whose values a tick, a sample or a state change can change.
_RUNTIME_SORT = frozenset({ProcColumn.RUNTIME})
_STATS_SORT = frozenset({ProcColumn.CPU, ProcColumn.MEMORY})
_STATE_SORT = frozenset({ProcColumn.STATUS, ProcColumn.RUNTIME, *_STATS_SORT})


def _valid_scope(session: str, agent: str) -> bool:
    """Whether ``(session, agent)`` can hold processes (``agent == ""``: any agent)."""
    try:
        check_scope_name("session", session)
        if agent:
            check_scope_name("agent", agent)
    except InvalidScope:
        return False
    return True


def _ranges(rows: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted, distinct row numbers as (first, last) runs of consecutive rows."""
    out: list[tuple[int, int]] = []
    for row in sorted(set(rows)):
        if out and out[-1][1] == row - 1:
            out[-1] = (out[-1][0], row)
        else:
            out.append((row, row))
    return out


@dataclass(slots=True, eq=False)
class _ProcRow:
    proc: Proc
    cmd: str
    # State and exit as last announced with dataChanged: data() answers from
    # these, so what a view reads always matches what it was told.
    state: ProcState
    exit: ExitInfo | None
    # The id the row is ordered by: its own, or, for a restart shown in its
    # predecessor's place, the predecessor's. Rows are sorted by it, descending.
    order: int
    # Sorted by a column, the row's place: (value, tie...), taken when the rows
    # were last put in order (or when it came), so that changing values move no
    # row until the model reorders them (see ProcModel.orderHeld).
    key: tuple[Any, ...] = ()

    @classmethod
    def of(cls, proc: Proc) -> _ProcRow:
        return cls(proc, proc.cmd, proc.state, proc.exit, proc.id)

    def catch_up(self) -> bool:
        """Take the proc's current state; True if it changed."""
        state, exit = self.proc.state, self.proc.exit
        if state is self.state and exit is self.exit:
            return False
        self.state, self.exit = state, exit
        return True


def _neg_order(row: _ProcRow) -> int:
    return -row.order


def _first(pair: tuple[tuple[Any, ...], _ProcRow]) -> tuple[Any, ...]:
    return pair[0]


def _neg_id(row: _ProcRow) -> int:
    return -row.proc.id


@QmlElement
class ProcModel(QAbstractTableModel):
    """The processes of one scope, newest first: the ProcWindow's table.

    **Order.** A new proc comes in at the top, except a restart told to
    :meth:`keepPlace`: it takes the row of the proc it restarts, which moves one
    row down (and so do the rows below it); the rows above stay where they are.
    The row under the pointer after a click on Restart is the same command,
    running again.

    ``agent == ""`` shows the whole session (every agent) and adds an Agent
    column after PID; ``session == ""`` shows nothing. Setting ``session`` or
    ``agent`` (or both at once with ``setScope``) re-scopes the model with one
    reset. Columns (``columnNames``): ``pid``, [``agent``], ``tool``, ``status``,
    ``runtime``, ``cpu``, ``memory``, ``actions``. Every role is answered at every
    column; ``display`` is the text of the cell's column (empty for ``actions``)
    and ``columnName`` names the column, for a ``DelegateChooser``.

    **Sorting.** ``sortBy(column, descending)`` (or ``cycleSort(column)``, a click
    on a header: ascending, descending, back to the default) orders the rows by a
    column, ties in the default order; ``sortBy("", False)`` is the default order.
    The model sorts its own rows, so every row number it gives (``rowOf``,
    ``procIdAt``, ``setVisibleRows``) is the row on screen. A new row comes in at
    its place; a restart told to ``keepPlace`` still takes its predecessor's row.
    Values that change (runtime, CPU, memory, status) reorder the rows at the
    tick that changed them, as one ``layoutChanged`` — but not while
    ``orderHeld`` (the view sets it while the pointer is over its rows or presses
    one): then ``reorderPending`` turns true, and the rows move
    :data:`REORDER_QUIET_MS` after the hold ends. A row under the pointer stays
    under it.

    **CPU and memory.** The same 1 s timer samples ``Supervisor.stats`` (the
    proc's whole tree) for the running rows the view shows — every running row
    until ``setVisibleRows`` says which — through one
    :class:`~procwindow.qt.sampler.RowSampler`, and announces ``dataChanged`` on
    the CPU and Mem columns for the rows sampled (roles ``cpuPercent``,
    ``cpuText``, ``cpuHistory``, ``memory``, ``memoryText``, ``memoryHistory``,
    ``statsLive``, ``samples``). A row keeps the last 60 samples it was given
    (the ``*History`` roles: heights 0…1, NaN where sampling paused; a
    ``Sparkline`` reads them as polylines through :meth:`sparkline` when
    ``samples`` changes); an exited row is no longer sampled, keeps its history
    (``statsLive`` false) and reads ``–``.
    Sorted by CPU or memory, :data:`OFFSCREEN_SAMPLES` running rows off screen
    also have their latest values read per tick, so that a busy proc climbs in.

    Status changes (``stopping``, exited) arrive as supervisor events and are
    announced as one ``dataChanged`` per run of rows, across all columns, with
    the state roles only; the tick also catches up the rows it visits.

    **Runtime refresh.** While a shown proc runs, a 1 s timer (:meth:`tick`)
    announces ``dataChanged`` on the Runtime column, roles ``display``,
    ``runtime`` and ``runtimeText``, only for running rows — and, once the view
    has called ``setVisibleRows(first, last)``, only for running rows in that
    range (plus a small margin). A ``dataChanged`` costs the view time in
    proportion to its range, not to what it shows, so a ``TableView`` should pass
    its ``topRow``/``bottomRow`` whenever they change. Rows scrolled into view
    are re-checked at once. ``setVisibleRows(-1, -1)`` drops the hint.
    Measured (``benchmarks/bench_table_tick.py``, 10,000 running rows, ~47
    visible): ~73 ms per tick over the whole column, ~1 ms with the hint; with
    only a few rows running the tick is well under 1 ms either way.

    >>> model = ProcModel(sup, "build")  # doctest: +SKIP
    >>> model.title, model.columnNames  # doctest: +SKIP
    ('Processes - build', ['pid', 'agent', 'tool', 'status', 'runtime', 'actions'])
    """

    ROLE_NAMES = PROC_ROLE_NAMES

    sessionChanged = Signal()
    agentChanged = Signal()
    countChanged = Signal()
    titleChanged = Signal()
    columnNamesChanged = Signal()
    sortChanged = Signal()
    orderHeldChanged = Signal()
    reorderPendingChanged = Signal()

    def __init__(
        self,
        supervisor: Supervisor | None = None,
        session: str = "",
        agent: str = "",
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._sup = resolve_supervisor(supervisor, "ProcModel")
        self._session = session
        self._agent = agent
        self._columns: tuple[ProcColumn, ...] = ()
        self._rows: list[_ProcRow] = []
        # Each proc id's row counted from the bottom (rowOf), rebuilt when None:
        # rows inserted at the top leave it valid.
        self._from_end: dict[int, int] | None = None
        self._places: dict[int, int] = {}  # a restart's id -> the id whose place it takes
        self._running: set[int] = set()  # ids of rows not yet announced as exited
        self._restarting: set[int] = set()  # ids whose workspace restarts them (a countdown)
        self._visible: tuple[int, int] | None = None
        self._sampler = RowSampler(self._sup.stats, TICK_INTERVAL_MS / 1000)
        self._sort_column: ProcColumn | None = None
        self._descending = False
        self._held = False
        self._dirty = False  # values changed since the rows were put in order
        self._pending = False  # ... and the reorder waits for the hold to end
        self._lifeline = Lifeline(self)
        self._pump: EventPump | None = None
        self._listen_to_link()
        self._timer = QTimer(self)
        self._timer.setInterval(TICK_INTERVAL_MS)
        self._timer.timeout.connect(self._on_timer)
        self._reorder_timer = QTimer(self)
        self._reorder_timer.setSingleShot(True)
        self._reorder_timer.setInterval(REORDER_QUIET_MS)
        self._reorder_timer.timeout.connect(self._reorder_later)
        self._attach()

    # -- scope -----------------------------------------------------------------

    def _get_count(self) -> int:
        return len(self._rows)

    def _get_title(self) -> str:
        if not self._session:
            return "Processes"
        if not self._agent:
            return f"Processes - {self._session}"
        return f"Processes - {self._session}/{self._agent}"

    def _get_column_names(self) -> list[str]:
        return [c.value for c in self._columns]

    def _get_sort_column(self) -> str:
        return self._sort_column.value if self._sort_column is not None else ""

    def _get_sort_descending(self) -> bool:
        return self._descending

    def _get_order_held(self) -> bool:
        return self._held

    def _set_order_held(self, held: bool) -> None:
        if held == self._held:
            return
        self._held = held
        if held:
            self._reorder_timer.stop()
        elif self._dirty:
            self._reorder_timer.start()
        self.orderHeldChanged.emit()

    def _get_reorder_pending(self) -> bool:
        return self._pending

    session, agent = scope_properties(sessionChanged, agentChanged)
    """The ``session`` shown ("" for none) and ``agent`` ("" for every agent of it)."""
    count = qt_property(int, _get_count, notify=countChanged)
    """The number of rows."""
    title = qt_property(str, _get_title, notify=titleChanged)
    """The window title: ``Processes - {session}/{agent}`` or ``Processes - {session}``."""
    columnNames = qt_property(list, _get_column_names, notify=columnNamesChanged)
    """The ``ProcColumn`` value of each column, in order."""
    sortColumn = qt_property(str, _get_sort_column, notify=sortChanged)
    """The column the rows are sorted by ("" for the default order: newest first)."""
    sortDescending = qt_property(bool, _get_sort_descending, notify=sortChanged)
    """True when sorted by ``sortColumn``, largest first."""
    orderHeld = qt_property(bool, _get_order_held, _set_order_held, notify=orderHeldChanged)
    """True while the rows must not move under the pointer: reorders wait."""
    reorderPending = qt_property(bool, _get_reorder_pending, notify=reorderPendingChanged)
    """True while changed values wait for ``orderHeld`` to end to reorder the rows."""

    @Slot(str, str)
    def setScope(self, session: str, agent: str) -> None:
        """Show ``(session, agent)``; one model reset, and only if it changed."""
        if (session, agent) == (self._session, self._agent):
            return
        old = (self._session, self._agent, self._get_title(), self._columns, len(self._rows))
        sort = self._sort_column
        self.beginResetModel()
        self._detach()
        self._session, self._agent = session, agent
        self._attach()
        self.endResetModel()
        if sort != self._sort_column:
            self.sortChanged.emit()
        if old[0] != session:
            self.sessionChanged.emit()
        if old[1] != agent:
            self.agentChanged.emit()
        if old[2] != self._get_title():
            self.titleChanged.emit()
        if old[3] != self._columns:
            self.columnNamesChanged.emit()
        if old[4] != len(self._rows):
            self.countChanged.emit()

    def _pattern(self) -> str | None:
        if not _valid_scope(self._session, self._agent):
            return None
        return scope_pattern(self._session, self._agent or None)

    def _attach(self) -> None:
        self._columns = AGENT_COLUMNS if self._agent else SESSION_COLUMNS
        if self._sort_column not in self._columns:  # the Agent column went
            self._sort_column, self._descending = None, False
        self._sampler.clear()
        self._set_dirty(False)
        pattern = self._pattern()
        if pattern is None:
            self._rows, self._running = [], set()
        else:
            # Subscribe before taking the snapshot, so that nothing falls between
            # the two; events about rows already taken are applied idempotently.
            self._pump = self._lifeline.hold(EventPump(self._sup, pattern, self._on_events))
            procs = self._sup.procs(self._session, self._agent or None)
            self._rows = self._arrange(procs)
            self._running = {row.proc.id for row in self._rows if row.exit is None}
        self._from_end = None
        self._update_timer()

    def _detach(self) -> None:
        self._lifeline.release(self._pump)
        self._pump = None
        self._timer.stop()
        self._reorder_timer.stop()

    def close(self) -> None:
        """Stop following the supervisor (the rows stay). Done on destruction too."""
        self._detach()
        self._lifeline.close()

    # -- Qt model interface ------------------------------------------------------

    def rowCount(self, parent: ModelIndex = ROOT) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: ModelIndex = ROOT) -> int:
        return 0 if parent.isValid() else len(self._columns)

    def roleNames(self) -> dict[int, QByteArray]:
        return self.ROLE_NAMES

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = DISPLAY) -> object:
        if role == DISPLAY:
            if orientation == Qt.Orientation.Horizontal:
                if 0 <= section < len(self._columns):
                    return COLUMN_TITLES[self._columns[section]]
            elif 0 <= section < len(self._rows):
                return str(section + 1)
        return empty_data(role)

    def data(self, index: ModelIndex, role: int = DISPLAY) -> object:
        row = index.row()
        if not 0 <= row < len(self._rows):
            return empty_data(role)
        r = self._rows[row]
        p = r.proc
        if getattr(p, "disconnected", False):  # its supervisor's link is down
            match role:
                case ProcRole.STATUS_TEXT:
                    return DISCONNECTED
                case ProcRole.STATUS_COLOR:
                    return STATUS_COLORS[DISCONNECTED]
                case ProcRole.CAN_TERM | ProcRole.CAN_KILL | ProcRole.CAN_DISMISS:
                    return False
                case ProcRole.CAN_RESTART:
                    return False
        match role:
            case Qt.ItemDataRole.DisplayRole:
                return self._display(r, index.column())
            case Qt.ItemDataRole.ToolTipRole | ProcRole.COMMAND:
                return r.cmd
            case ProcRole.PROC_ID:
                return p.id
            case ProcRole.OS_PID:
                return p.os_pid
            case ProcRole.TOOL:
                return p.tool
            case ProcRole.STATUS:
                return r.state.value
            case ProcRole.STATUS_TEXT:
                return status_text(r.state, r.exit)
            case ProcRole.PHASE_TEXT:
                return self._phase_text(p.id)
            case ProcRole.WORKSPACE_TIP:
                state = command_state(self._sup, p.id)
                if state is None or state.proc_id != p.id:
                    return ""
                return f"{state.describe(time.time())}\n{depends_text(state)}"
            case ProcRole.STATUS_COLOR:
                return status_color(r.state, r.exit)
            case ProcRole.EXIT_CODE:
                return r.exit.code if r.exit is not None else -1
            case ProcRole.EXIT_REASON:
                return r.exit.reason.value if r.exit is not None else ""
            case ProcRole.START_TIME:
                return p.started_at
            case ProcRole.START_TEXT:
                return time_text(p.started_at)
            case ProcRole.RUNTIME:
                return self._runtime(r)
            case ProcRole.RUNTIME_TEXT:
                return format_runtime(self._runtime(r))
            case ProcRole.CAN_TERM:
                return r.exit is None and r.state is not ProcState.STOPPING
            case ProcRole.CAN_KILL:
                return r.exit is None
            case ProcRole.CAN_DISMISS:
                return r.exit is not None
            case ProcRole.CAN_RESTART:
                return r.state is not ProcState.STOPPING
            case ProcRole.SESSION:
                return p.session
            case ProcRole.AGENT:
                return p.agent
            case ProcRole.COLUMN_NAME:
                column = index.column()
                return self._columns[column].value if 0 <= column < len(self._columns) else ""
            case ProcRole.CPU_PERCENT:
                return self._cpu(r)
            case ProcRole.CPU_TEXT:
                return cpu_text(self._cpu(r))
            case ProcRole.MEMORY:
                return self._memory(r)
            case ProcRole.MEMORY_TEXT:
                return memory_text(self._memory(r))
            case ProcRole.CPU_HISTORY:
                h = self._sampler.history(p.id)
                return h.cpu_points() if h is not None else []
            case ProcRole.MEMORY_HISTORY:
                h = self._sampler.history(p.id)
                return h.rss_points() if h is not None else []
            case ProcRole.STATS_LIVE:
                return r.exit is None and self._sampler.history(p.id) is not None
            case ProcRole.SAMPLES:
                h = self._sampler.history(p.id)
                return h.count if h is not None else 0
            case _:
                return empty_data(role)

    def _display(self, r: _ProcRow, column: int) -> str:
        if not 0 <= column < len(self._columns):
            return ""
        match self._columns[column]:
            case ProcColumn.PID:
                return str(r.proc.id)
            case ProcColumn.AGENT:
                return r.proc.agent
            case ProcColumn.TOOL:
                return r.proc.tool
            case ProcColumn.STATUS:
                return status_text(r.state, r.exit)
            case ProcColumn.RUNTIME:
                return format_runtime(self._runtime(r))
            case ProcColumn.CPU:
                return cpu_text(self._cpu(r))
            case ProcColumn.MEMORY:
                return memory_text(self._memory(r))
            case _:
                return ""

    def _runtime(self, r: _ProcRow) -> float:
        if r.exit is not None:
            return r.exit.runtime
        try:
            return self._sup.runtime(r.proc.id)
        except ProcNotFound:  # dismissed; its event is on the way
            return 0.0

    def _live_history(self, r: _ProcRow) -> StatsHistory | None:
        """The samples of a running row (None once it exited: it reads "–")."""
        return self._sampler.history(r.proc.id) if r.exit is None else None

    def _cpu(self, r: _ProcRow) -> float:
        h = self._live_history(r)
        return h.cpu_now if h is not None else -1.0

    def _memory(self, r: _ProcRow) -> int:
        h = self._live_history(r)
        return h.rss_now if h is not None else -1

    def history(self, proc_id: int) -> StatsHistory | None:
        """What proc ``proc_id`` was sampled (for tests and tools), or None."""
        return self._sampler.history(proc_id)

    def sparkline(self, proc_id: int, series: str) -> Drawing | None:
        """What a :class:`~procwindow.qt.sparkline.Sparkline` draws for proc
        ``proc_id``'s ``series`` (``"cpu"`` or ``"memory"``): its trace as it is now."""
        h = self._sampler.history(proc_id)
        if h is None:
            return None
        if series == ProcColumn.CPU:
            return h.cpu_trace.runs, float(h.cpu_trace.last), h.cpu_top()
        if series == ProcColumn.MEMORY:
            return h.rss_trace.runs, float(h.rss_trace.last), h.rss_top()
        return None

    # -- lookups ---------------------------------------------------------------

    @Slot(int, result=int)
    def rowOf(self, procId: int) -> int:
        """The row of proc ``procId``, or -1."""
        from_end = self._from_end
        if from_end is None:
            last = len(self._rows) - 1
            from_end = self._from_end = {r.proc.id: last - i for i, r in enumerate(self._rows)}
        pos = from_end.get(procId)
        return -1 if pos is None else len(self._rows) - 1 - pos

    @Slot(int, result=int)
    def procIdAt(self, row: int) -> int:
        """The proc id at ``row``, or -1."""
        return self._rows[row].proc.id if 0 <= row < len(self._rows) else -1

    # -- order -------------------------------------------------------------------

    @Slot(int, int)
    def keepPlace(self, procId: int, predecessorId: int) -> None:
        """Show proc ``procId`` (a restart of ``predecessorId``) in its predecessor's row.

        The predecessor moves one row down. Works whether ``procId``'s row is
        already shown (it moves there) or comes later (it is inserted there);
        remembered while the model lives, so a scope shown again keeps it. Ids only
        grow: a ``procId`` not newer than ``predecessorId`` is no restart of it.
        """
        if procId <= predecessorId or self._places.get(procId) == predecessorId:
            return
        self._places[procId] = predecessorId
        row, target = self.rowOf(procId), self.rowOf(predecessorId)
        if row < 0 or target < 0:
            return
        self._rows[row].order = self._rows[target].order
        if self._sort_column is not None:
            self._rows[row].key = self._key_before(self._rows[row], self._rows[target])
            self._move_to_key(row)
            return
        if row == target - 1:
            return
        # beginMoveRows takes the row to move before, in the rows as they are now.
        self.beginMoveRows(ROOT, row, row, ROOT, target)
        moved = self._rows.pop(row)
        self._rows.insert(target - 1 if row < target else target, moved)
        self._from_end = None
        self.endMoveRows()

    def _arrange(self, procs: list[Proc]) -> list[_ProcRow]:
        """Rows for ``procs`` (newest first), each restart given to keepPlace in its
        predecessor's row; then sorted, if a column sorts them."""
        rows = [_ProcRow.of(p) for p in procs]
        self._place(rows)
        return self._sorted(rows) if self._sort_column is not None else rows

    def _place(self, rows: list[_ProcRow]) -> None:
        """Move each restart given to keepPlace into its predecessor's row (``rows``:
        newest first, each ordered by its own id)."""
        if not self._places:
            return
        # In the order the restarts happened, as keepPlace would have moved them.
        by_id = {r.proc.id: r for r in rows}
        for proc_id in sorted(self._places.keys() & by_id.keys()):
            predecessor = by_id.get(self._places[proc_id])
            if predecessor is None:
                continue
            row = by_id[proc_id]
            rows.remove(row)
            rows.insert(rows.index(predecessor), row)
            row.order = predecessor.order

    # -- sorting -------------------------------------------------------------------

    @Slot(str, bool)
    def sortBy(self, column: str, descending: bool) -> None:
        """Sort the rows by ``column`` (a ``columnNames`` entry; "": the default order).

        Applied at once, whatever ``orderHeld`` says (the person asked for it).
        Unknown, unsortable (``actions``) or absent columns are ignored.
        """
        if not column:
            target: ProcColumn | None = None
        elif column in SORTABLE_COLUMNS and column in self._columns:
            target = ProcColumn(column)
        else:
            return
        descending = descending and target is not None
        if (target, descending) == (self._sort_column, self._descending):
            return
        self._sort_column, self._descending = target, descending
        self._set_dirty(False)
        self._reorder(self._sorted(self._rows) if target is not None else self._default_rows())
        self.sortChanged.emit()

    @Slot(str)
    def cycleSort(self, column: str) -> None:
        """A click on ``column``'s header: sort by it ascending, then descending, then
        back to the default order."""
        if column != self._get_sort_column():
            self.sortBy(column, False)
        elif not self._descending:
            self.sortBy(column, True)
        else:
            self.sortBy("", False)

    def _sort_value(self, r: _ProcRow) -> Any:
        match self._sort_column:
            case ProcColumn.PID:
                return r.proc.id
            case ProcColumn.AGENT:
                return r.proc.agent.casefold()
            case ProcColumn.TOOL:
                return (r.proc.tool.casefold(), r.cmd)
            case ProcColumn.STATUS:
                return (_STATE_RANK[r.state], status_text(r.state, r.exit))
            case ProcColumn.RUNTIME:
                return self._runtime(r)
            case ProcColumn.CPU:
                return self._cpu(r)
            case ProcColumn.MEMORY:
                return self._memory(r)
            case _:
                return 0

    def _sort_key(self, r: _ProcRow) -> tuple[Any, ...]:
        # Ties keep the default order (newest first, restarts above their
        # predecessor) in both directions; the id makes every key distinct.
        value = self._sort_value(r)
        if self._descending:
            return (value, r.order, r.proc.id)
        return (value, -r.order, -r.proc.id)

    def _key_before(self, r: _ProcRow, predecessor: _ProcRow) -> tuple[Any, ...]:
        """The key that puts restart ``r`` right above ``predecessor`` (whose order it took)."""
        if self._descending:
            return (predecessor.key[0], r.order, r.proc.id)
        return (predecessor.key[0], -r.order, -r.proc.id)

    def _keyed(self, rows: list[_ProcRow]) -> list[tuple[tuple[Any, ...], _ProcRow]]:
        """``rows`` with their keys as of now, in the order of the sort column."""
        pairs = [(self._sort_key(r), r) for r in rows]
        # Keys are distinct (they end with the id): no two rows are ever compared.
        pairs.sort(key=_first, reverse=self._descending)
        return pairs

    def _sorted(self, rows: list[_ProcRow]) -> list[_ProcRow]:
        """``rows`` in the order of the sort column, each given its key."""
        pairs = self._keyed(rows)
        for key, r in pairs:
            r.key = key
        return [r for _, r in pairs]

    def _default_rows(self) -> list[_ProcRow]:
        """The rows in the default order, as a fresh snapshot would arrange them."""
        rows = sorted(self._rows, key=_neg_id)
        for r in rows:
            r.order, r.key = r.proc.id, ()
        self._place(rows)
        return rows

    def _position(self, key: tuple[Any, ...], rows: list[_ProcRow]) -> int:
        """Where a row with ``key`` goes among ``rows`` (sorted by their keys)."""
        low, high = 0, len(rows)
        while low < high:
            mid = (low + high) // 2
            other = rows[mid].key
            if (other > key) if self._descending else (other < key):
                low = mid + 1
            else:
                high = mid
        return low

    def _move_to_key(self, row: int) -> None:
        """Move ``row`` to where its key puts it among the other rows."""
        others = self._rows[:row] + self._rows[row + 1 :]
        at = self._position(self._rows[row].key, others)
        if at == row:
            return
        # beginMoveRows takes the row to move before, in the rows as they are now.
        self.beginMoveRows(ROOT, row, row, ROOT, at if at < row else at + 1)
        moved = self._rows.pop(row)
        self._rows.insert(at, moved)
        self._from_end = None
        self.endMoveRows()

    def _reorder(self, rows: list[_ProcRow]) -> None:
        """Show ``rows`` (the same rows, reordered) with one ``layoutChanged``."""
        if all(a is b for a, b in zip(rows, self._rows, strict=True)):
            return
        self.layoutAboutToBeChanged.emit()
        persistent = self.persistentIndexList()
        where = [(self._rows[i.row()].proc.id, i.column()) for i in persistent]
        self._rows = rows
        self._from_end = None
        self.changePersistentIndexList(
            persistent, [self.index(self.rowOf(proc_id), column) for proc_id, column in where]
        )
        self.layoutChanged.emit()

    def _values_changed(self, columns: frozenset[ProcColumn]) -> None:
        """Values of ``columns`` changed: the rows are out of order if sorted by one."""
        if self._sort_column in columns:
            self._dirty = True

    def _settle_order(self) -> None:
        """Reorder the rows now if their values changed, unless the order is held."""
        if not self._dirty:
            return
        if self._sort_column is None:
            self._set_dirty(False)
            return
        pairs = self._keyed(self._rows)
        moved = any(r is not old for (_, r), old in zip(pairs, self._rows, strict=True))
        if moved and (self._held or self._reorder_timer.isActive()):
            self._set_dirty(True, pending=True)
            return
        # In order (or free to move): the rows take their new keys.
        for key, r in pairs:
            r.key = key
        self._set_dirty(False)
        if moved:
            self._reorder([r for _, r in pairs])

    def _reorder_later(self) -> None:
        """The quiet time after a hold ended is over."""
        self._settle_order()

    def _set_dirty(self, dirty: bool, *, pending: bool = False) -> None:
        self._dirty = dirty
        set_stored(self, "_pending", dirty and pending, ProcModel.reorderPendingChanged)

    # -- runtime refresh ---------------------------------------------------------

    @Slot(int, int)
    def setVisibleRows(self, first: int, last: int) -> None:
        """The rows the view shows (``TableView.topRow``/``bottomRow``); -1, -1: unknown.

        Limits the runtime tick to these rows; see the class docstring.
        """
        hint = (first, last) if 0 <= first <= last else None
        if hint == self._visible:
            return
        self._visible = hint
        if hint is not None:
            # A row that scrolled in may have changed state (stopping) unseen.
            rows = self._window()
            changed = [i for i in rows if self._rows[i].exit is None and self._rows[i].catch_up()]
            self._announce_state(changed)

    def _window(self, margin: int = VISIBLE_MARGIN) -> range:
        if self._visible is None:
            return range(len(self._rows))
        first, last = self._visible
        return range(max(first - margin, 0), min(last + margin + 1, len(self._rows)))

    def _live(self, margin: int) -> list[int]:
        """The running rows in view (``margin`` rows beyond each end), ascending;
        every running row while the view has not said what it shows."""
        rows = self._rows
        if self._visible is not None:
            return [i for i in self._window(margin) if rows[i].exit is None]
        if len(self._running) * 8 < len(rows):
            # Few running among many rows: find each (binary search by id).
            return sorted(i for i in map(self.rowOf, self._running) if i >= 0)
        return [i for i, r in enumerate(rows) if r.exit is None]

    def _on_timer(self) -> None:
        self._tick()
        self._sample(in_turns=True)
        self._settle_order()
        self._update_timer()

    def tick(self) -> None:
        """Refresh the runtime of running rows now (the timer does it once a second)."""
        self._tick()
        self._settle_order()
        self._update_timer()

    def sample(self) -> None:
        """Sample CPU and memory of the running rows in view now (the timer does it
        once a second, after the runtime tick)."""
        self._sample()
        self._settle_order()

    def _tick(self) -> None:
        rows = self._rows
        live = self._live(VISIBLE_MARGIN)
        changed = [i for i in live if rows[i].catch_up()]
        for i in changed:
            if rows[i].exit is not None:
                self._running.discard(rows[i].proc.id)
        self._announce_state(changed)
        skip = set(changed)
        column = self._columns.index(ProcColumn.RUNTIME)
        for first, last in _ranges(i for i in live if i not in skip):
            self.dataChanged.emit(
                self.index(first, column), self.index(last, column), RUNTIME_ROLES
            )
        if live:
            self._values_changed(_RUNTIME_SORT)
        if self._restarting:  # the countdown in their Status cell
            status = self._columns.index(ProcColumn.STATUS)
            for row in sorted(r for r in map(self.rowOf, self._restarting) if r >= 0):
                index = self.index(row, status)
                self.dataChanged.emit(index, index, [ProcRole.PHASE_TEXT])

    def _sample(self, in_turns: bool = False) -> None:
        ids = [self._rows[i].proc.id for i in self._live(0)]
        if in_turns:  # a few rows per turn of the loop (see RowSampler.sample_in_turns)
            later = functools.partial(QTimer.singleShot, 0, self)
            self._sampler.sample_in_turns(ids, self._sampled, later)
        else:
            self._sampled(self._sampler.sample(ids))
        shown = set(ids)
        if self._sort_column in _STATS_SORT and self._sampler.sample_others(
            self._running, shown, OFFSCREEN_SAMPLES
        ):
            self._values_changed(_STATS_SORT)

    def _sampled(self, ids: list[int]) -> None:
        """Announce the CPU and memory of the rows of ``ids``, sampled just now."""
        cpu, memory = self._columns.index(ProcColumn.CPU), self._columns.index(ProcColumn.MEMORY)
        for first, last in _ranges(sorted(r for r in map(self.rowOf, ids) if r >= 0)):
            self.dataChanged.emit(self.index(first, cpu), self.index(last, memory), STATS_ROLES)
        if ids:
            self._values_changed(_STATS_SORT)
            self._settle_order()

    def _announce_state(self, rows: Iterable[int]) -> None:
        last_column = len(self._columns) - 1
        ranges = _ranges(rows)
        for first, last in ranges:
            self.dataChanged.emit(self.index(first, 0), self.index(last, last_column), STATE_ROLES)
        if ranges:
            self._values_changed(_STATE_SORT)

    def _update_timer(self) -> None:
        if (self._running or self._restarting) and self._pump is not None:
            if not self._timer.isActive():
                self._timer.start()
        else:
            self._timer.stop()

    # -- events ----------------------------------------------------------------

    def _listen_to_link(self) -> None:
        """A supervisor reached over a link (RemoteSupervisor) says when it drops
        and comes back: every row then reads "disconnected", or its state again."""
        add_listener = getattr(self._sup, "add_listener", None)
        if add_listener is None:
            return
        ref = weakref.ref(self)

        def heard(what: str) -> None:
            model = ref()
            if model is not None and what in ("connected", "disconnected"):
                model._announce_state(range(len(model._rows)))

        self._lifeline.on_close(add_listener(heard))

    def _phase_text(self, proc_id: int) -> str:
        """What the workspace does with this proc's command ("restarting in 4 s",
        "ready"), "" when no running workspace started it or a later run
        replaced it."""
        state = command_state(self._sup, proc_id)
        if state is None or state.proc_id != proc_id:
            return ""
        return state.describe(time.time())

    def _on_events(self, events: list[Event]) -> None:
        if any(ev.missed for ev in events):
            self._resync()
            return
        count = len(self._rows)
        started: list[int] = []
        exited: set[int] = set()
        dismissed: set[int] = set()
        phased: set[int] = set()
        for ev in events:
            match ev.kind:
                case EventKind.START:
                    started.append(ev.proc_id)
                case EventKind.EXIT | EventKind.STOPPING:
                    exited.add(ev.proc_id)  # a state change: refresh the row
                case EventKind.DISMISS:
                    dismissed.add(ev.proc_id)
                case EventKind.PHASE if ev.proc_id:
                    exited.add(ev.proc_id)  # a workspace command's phase: refresh the row
                    phased.add(ev.proc_id)
                    if getattr(ev, "phase", None) == "restarting":
                        self._restarting.add(ev.proc_id)
                    else:
                        self._restarting.discard(ev.proc_id)
                    previous = getattr(ev, "previous", None)
                    if previous:  # the run it restarts: its countdown is over
                        self._restarting.discard(previous)
                        exited.add(previous)
                        phased.add(previous)
                case _:
                    pass
        if started:
            self._insert(started)
        if exited:
            self._refresh(exited)
        if phased:  # the Status cell's workspace texts
            status = self._columns.index(ProcColumn.STATUS)
            for row in sorted(r for r in map(self.rowOf, phased) if r >= 0):
                index = self.index(row, status)
                self.dataChanged.emit(index, index, [ProcRole.PHASE_TEXT, ProcRole.WORKSPACE_TIP])
        if dismissed:
            self._remove(dismissed)
        if len(self._rows) != count:
            self.countChanged.emit()
        self._settle_order()
        self._update_timer()

    def _insert(self, proc_ids: list[int]) -> None:
        new: dict[int, Proc] = {}
        for proc_id in proc_ids:
            if proc_id in new or self.rowOf(proc_id) >= 0:
                continue
            try:
                new[proc_id] = self._sup.get(proc_id)
            except ProcNotFound:  # dismissed before we heard of it
                continue
        if not new:
            return
        rows = [_ProcRow.of(p) for p in sorted(new.values(), key=lambda p: -p.id)]
        self._running.update(r.proc.id for r in rows if r.exit is None)
        if self._sort_column is not None:
            self._insert_sorted(rows)
            return
        placed = any(self.rowOf(self._places.get(r.proc.id, -1)) >= 0 for r in rows)
        if not placed and (not self._rows or rows[-1].order > self._rows[0].order):
            # The usual case: newer than every row, one insert at the top.
            self.beginInsertRows(ROOT, 0, len(rows) - 1)
            self._rows[0:0] = rows
            if self._from_end is not None:
                count = len(self._rows) - len(rows)
                for i, r in enumerate(reversed(rows)):
                    self._from_end[r.proc.id] = count + i
            self.endInsertRows()
            return
        for r in reversed(rows):  # oldest first: a restart's predecessor comes before it
            at = self.rowOf(self._places.get(r.proc.id, -1))
            if at >= 0:
                r.order = self._rows[at].order
            else:
                at = bisect.bisect_left(self._rows, -r.order, key=_neg_order)
            self.beginInsertRows(ROOT, at, at)
            self._rows.insert(at, r)
            self._from_end = None
            self.endInsertRows()

    def _insert_sorted(self, rows: list[_ProcRow]) -> None:
        """Insert ``rows`` (newest first) each at its place in the sorted rows."""
        for r in reversed(rows):  # oldest first: a restart's predecessor comes before it
            at = self.rowOf(self._places.get(r.proc.id, -1))
            if at >= 0:
                predecessor = self._rows[at]
                r.order = predecessor.order
                r.key = self._key_before(r, predecessor)
            else:
                r.key = self._sort_key(r)
            at = self._position(r.key, self._rows)
            self.beginInsertRows(ROOT, at, at)
            self._rows.insert(at, r)
            self._from_end = None
            self.endInsertRows()

    def _refresh(self, proc_ids: set[int]) -> None:
        changed: list[int] = []
        for proc_id in proc_ids:
            row = self.rowOf(proc_id)
            if row >= 0 and self._rows[row].catch_up():
                changed.append(row)
            if row >= 0 and self._rows[row].exit is not None:
                self._running.discard(proc_id)
        self._announce_state(changed)

    def _remove(self, proc_ids: set[int]) -> None:
        rows = [row for row in map(self.rowOf, proc_ids) if row >= 0]
        # Bottom-up, so that the row numbers of the runs still to remove hold.
        for first, last in reversed(_ranges(rows)):
            self.beginRemoveRows(ROOT, first, last)
            for r in self._rows[first : last + 1]:
                self._running.discard(r.proc.id)
            self._sampler.forget(r.proc.id for r in self._rows[first : last + 1])
            del self._rows[first : last + 1]
            self._from_end = None
            self.endRemoveRows()

    def _resync(self) -> None:
        """Events were lost (a full queue): start over from the supervisor's list."""
        count = len(self._rows)
        self.beginResetModel()
        procs = self._sup.procs(self._session, self._agent or None)
        self._rows = self._arrange(procs)
        self._from_end = None
        self._running = {r.proc.id for r in self._rows if r.exit is None}
        self._sampler.keep_only({r.proc.id for r in self._rows})
        self._set_dirty(False)
        self.endResetModel()
        if len(self._rows) != count:
            self.countChanged.emit()
        self._update_timer()
