"""ProcModel: the process table of a scope (a session, or one of its agents).

The model is a facade over parts that do one thing each: the rows and their
order are a :class:`~._proc_rows.ProcRows`'s (no Qt there), what each cell
says a :class:`~._proc_cells.ProcCells`'s, the CPU and memory samples a
:class:`~procwindow.qt.sampler.RowSampler`'s, the beat a shared
:class:`~procwindow.qt._ticker.Ticker`'s. This module tells views what changed.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Iterable

from PySide6.QtCore import QAbstractTableModel, QByteArray, QObject, Qt, QTimer, Signal, Slot
from PySide6.QtQml import QmlElement

from procwindow.core import Event, Proc, ProcNotFound, SupervisorAPI

from .._support import (
    EventPump,
    Lifeline,
    empty_data,
    qt_property,
    resolve_supervisor,
    scope_events,
    scope_properties,
)
from .._ticker import TICK_INTERVAL_MS, Ticker, shared_ticker
from ..sampler import Drawing, RowSampler, StatsHistory
from ._folding import FoldingRows, command_key
from ._proc_cells import ProcCells
from ._proc_rows import RUNTIME_SORT, STATE_SORT, STATS_SORT, ProcRow, RowStep, ranges
from .roles import (
    AGENT_COLUMNS,
    COLUMN_TITLES,
    COUNTDOWN_ROLES,
    DISPLAY,
    PHASE_ROLES,
    PROC_ROLE_NAMES,
    ROOT,
    RUNTIME_ROLES,
    SESSION_COLUMNS,
    SORTABLE_COLUMNS,
    STATE_ROLES,
    STATS_ROLES,
    ModelIndex,
    ProcColumn,
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

#: Rows refreshed beyond each end of the visible range: delegates a view keeps
#: just outside its viewport stay current while it scrolls.
VISIBLE_MARGIN = 8
#: Milliseconds the rows wait, once the pointer has left the table, before they
#: take the order their changed values give them (see ``orderHeld``).
REORDER_QUIET_MS = 500
#: Running rows off screen whose latest CPU and memory are read per tick while the
#: table is sorted by one of them (in turn, so that each climbs into view in time).
OFFSCREEN_SAMPLES = 32


@QmlElement
class ProcModel(QAbstractTableModel):
    """The processes of one scope, newest first: the ProcWindow's table.

    ``agent == ""`` shows the whole session (every agent) and adds an Agent
    column after the ids; ``session == ""`` shows nothing. Setting ``session`` or
    ``agent`` (or both at once with ``setScope``) re-scopes the model with one
    reset. Columns (``columnNames``): ``id`` (procwindow's), ``pid`` (the
    kernel's), [``agent``], ``tool``, ``status``,
    ``runtime``, ``cpu``, ``memory``, ``actions``. Every role is answered at every
    column; ``display`` is the text of the cell's column (empty for ``actions``)
    and ``columnName`` names the column, for a ``DelegateChooser``.

    **Order** (see ``_proc_rows``). A new proc comes in at the top, except a
    restart told to :meth:`keepPlace`: it takes the row of the proc it
    restarts, which moves one row down, so the row under the pointer after a
    click on Restart is the same command, running again. ``sortBy(column,
    descending)`` (or ``cycleSort(column)``, a click on a header: ascending,
    descending, back to the default) orders the rows by a column, ties in the
    default order; every row number the model gives (``rowOf``, ``procIdAt``,
    ``setVisibleRows``) is the row on screen. Values that change (runtime, CPU,
    memory, status) reorder the rows at the tick that changed them, as one
    ``layoutChanged`` — but not while ``orderHeld`` (the view sets it while the
    pointer is over its rows or presses one): then ``reorderPending`` turns
    true, and the rows move :data:`REORDER_QUIET_MS` after the hold ends.

    **The tick.** While a shown proc runs (or a workspace restarts one), the
    model listens to a 1 s :class:`~procwindow.qt._ticker.Ticker` (one all
    models share, unless given one: ``ticker=``). Each tick (:meth:`tick`)
    announces ``dataChanged`` on the Runtime column (roles ``display``,
    ``runtime``, ``runtimeText``) for the running rows the view shows, once it
    has called ``setVisibleRows(first, last)`` (plus :data:`VISIBLE_MARGIN`);
    every running row before that, or after ``setVisibleRows(-1, -1)``. A
    ``dataChanged`` costs the view time in proportion to its range, not to what
    it shows: measured (``benchmarks/bench_table_tick.py``, 10,000 running
    rows, ~47 visible), ~73 ms per tick over the whole column, ~1 ms with the
    hint. Then it samples ``Supervisor.stats`` (the proc's whole tree) for the
    same rows through a :class:`~procwindow.qt.sampler.RowSampler`, and
    announces the CPU and Mem columns (``STATS_ROLES``); a row keeps its last 60
    samples (the ``*History`` roles; a ``Sparkline`` draws them through
    :meth:`sparkline`), and an exited row keeps them and reads ``–``. Sorted by
    CPU or memory, :data:`OFFSCREEN_SAMPLES` running rows off screen have their
    latest values read per tick too, so that a busy proc climbs in.

    **Status.** State changes (``stopping``, exited) arrive as supervisor events
    and are announced as one ``dataChanged`` per run of rows, across all
    columns, with the state roles only. The Status cell reads ``statusLabel``
    (the state, or a restart's countdown), ``statusTint`` (its colour lifted for
    the dark theme) and ``statusTip`` (how it exited, what its workspace does
    with it). ``data()`` reads no clock and walks no workspace: what changes
    with time is computed once per tick or batch of events (``_proc_cells``).

    **Workspace commands.** A command's runs fold into one row (``_folding``), its
    newest run's, named ``commandName``; ``restartCount`` counts the earlier runs,
    ``toggleRuns(procId)`` shows them under it (``earlierRun``, ``runText``) or
    hides them (``foldedCount``). ``runFolded``: a newer run took a proc's row.

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
    runFolded = Signal(int, int)
    """A command's newer run took the row of proc ``procId`` (folded behind it)."""

    def __init__(
        self,
        supervisor: SupervisorAPI | None = None,
        session: str = "",
        agent: str = "",
        parent: QObject | None = None,
        *,
        ticker: Ticker | None = None,
    ) -> None:
        super().__init__(parent)
        self._sup = resolve_supervisor(supervisor, "ProcModel")
        self._session = session
        self._agent = agent
        self._columns: tuple[ProcColumn, ...] = ()
        self._ticker = ticker if ticker is not None else shared_ticker()
        # Samples of a proc another table took this tick are shared (see Ticker).
        stats = self._ticker.stats_reader(self._sup, object())
        self._sampler = RowSampler(stats, self._ticker.interval)
        self._cells = ProcCells(self._sup, self._sampler)
        self._rows = FoldingRows(self._cells, functools.partial(command_key, self._sup))
        self._held = False
        self._lifeline = Lifeline(self)
        self._pump: EventPump | None = None
        self._listen_to_link()
        self._reorder_timer = QTimer(self)
        self._reorder_timer.setSingleShot(True)
        self._reorder_timer.setInterval(REORDER_QUIET_MS)
        self._reorder_timer.timeout.connect(self._settle_order)
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
        column = self._rows.sort_column
        return column.value if column is not None else ""

    def _get_sort_descending(self) -> bool:
        return self._rows.descending

    def _get_order_held(self) -> bool:
        return self._held

    def _set_order_held(self, held: bool) -> None:
        if held == self._held:
            return
        self._held = held
        if held:
            self._reorder_timer.stop()
        elif self._rows.dirty:
            self._reorder_timer.start()
        self.orderHeldChanged.emit()

    def _get_reorder_pending(self) -> bool:
        return self._rows.pending

    session, agent = scope_properties(sessionChanged, agentChanged)
    """The ``session`` shown ("" for none) and ``agent`` ("" for every agent of it)."""
    count = qt_property(int, _get_count, notify=countChanged)
    """The number of rows."""
    foldedCount = qt_property(int, lambda self: self._rows.counts[1], notify=countChanged)
    """The earlier runs hidden behind their workspace command's row (each a process too)."""
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
        old = (self._session, self._agent, self._get_title(), self._columns, self._rows.counts)
        sort = self._rows.sort_column
        pending = self._rows.pending
        self.beginResetModel()
        self._detach()
        self._session, self._agent = session, agent
        self._attach()
        self.endResetModel()
        if pending != self._rows.pending:
            self.reorderPendingChanged.emit()
        if sort != self._rows.sort_column:
            self.sortChanged.emit()
        if old[0] != session:
            self.sessionChanged.emit()
        if old[1] != agent:
            self.agentChanged.emit()
        if old[2] != self._get_title():
            self.titleChanged.emit()
        if old[3] != self._columns:
            self.columnNamesChanged.emit()
        if old[4] != self._rows.counts:
            self.countChanged.emit()

    def _attach(self) -> None:
        self._columns = self._cells.columns = AGENT_COLUMNS if self._agent else SESSION_COLUMNS
        rows = self._rows
        if rows.sort_column not in self._columns:  # the Agent column went
            rows.sort_column, rows.descending = None, False
        pattern = scope_events(self._session, self._agent)
        procs: list[Proc] = []
        if pattern is not None:
            # Subscribe before taking the snapshot, so that nothing falls between
            # the two; events about rows already taken are applied idempotently.
            self._pump = self._lifeline.hold(EventPump(self._sup, pattern, self._on_events))
            procs = self._sup.procs(self._session, self._agent or None)
        # A proc of the new scope as of the old one keeps its last minute of samples.
        self._sampler.keep_only({p.id for p in procs})
        rows.reset(procs)
        self._update_timer()

    def _detach(self) -> None:
        self._lifeline.release(self._pump)
        self._pump = None
        self._ticker.unsubscribe(self._on_timer)
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
        value = self._cells.value(self._rows[row], index.column(), role)
        return empty_data(role) if value is None else value

    def history(self, proc_id: int) -> StatsHistory | None:
        """What proc ``proc_id`` was sampled (for tests and tools), or None."""
        return self._sampler.history(proc_id)

    def sparkline(self, proc_id: int, series: str) -> Drawing | None:
        """What a :class:`~procwindow.qt.sparkline.Sparkline` draws for proc
        ``proc_id``'s ``series`` (``"cpu"`` or ``"memory"``): its trace as it is now."""
        return self._sampler.drawing(proc_id, series)

    # -- lookups ---------------------------------------------------------------

    @Slot(int, result=int)
    def rowOf(self, procId: int) -> int:
        """The row of proc ``procId``, or -1."""
        return self._rows.row_of(procId)

    @Slot(int, result=int)
    def procIdAt(self, row: int) -> int:
        """The proc id at ``row``, or -1."""
        return self._rows.proc_id_at(row)

    @Slot(int, result=int)
    def rowShowing(self, procId: int) -> int:
        """The row that shows proc ``procId``: its own, or (an earlier run folded
        behind it) its workspace command's; -1."""
        return self._rows.showing(procId)

    @Slot(int)
    def toggleRuns(self, procId: int) -> None:
        """Show the earlier runs of the command in proc ``procId``'s row under
        it (``restartCount`` of them), or hide them again."""
        self._play(self._rows.toggle(procId))

    # -- order -------------------------------------------------------------------

    @Slot(int, int)
    def keepPlace(self, procId: int, predecessorId: int) -> None:
        """Show proc ``procId`` (a restart of ``predecessorId``) in its predecessor's row.

        The predecessor moves one row down. Works whether ``procId``'s row is
        already shown (it moves there) or comes later (it is inserted there);
        remembered while the model lives, so a scope shown again keeps it. Ids only
        grow: a ``procId`` not newer than ``predecessorId`` is no restart of it.
        """
        move = self._rows.keep_place(procId, predecessorId)
        if move is not None:
            row, before = move
            self.beginMoveRows(ROOT, row, row, ROOT, before)
            self._rows.move(row, before)
            self.endMoveRows()

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
        pending = self._rows.pending
        rows = self._rows.sort_by(target, descending)
        if rows is None:
            return
        if pending:
            self.reorderPendingChanged.emit()
        self._reorder(rows)
        self.sortChanged.emit()

    @Slot(str)
    def cycleSort(self, column: str) -> None:
        """A click on ``column``'s header: sort by it ascending, then descending, then
        back to the default order."""
        if column != self._get_sort_column():
            self.sortBy(column, False)
        elif not self._rows.descending:
            self.sortBy(column, True)
        else:
            self.sortBy("", False)

    def _reorder(self, rows: list[ProcRow]) -> None:
        """Show ``rows`` (the same rows, reordered) with one ``layoutChanged``."""
        if all(a is b for a, b in zip(rows, self._rows.rows, strict=True)):
            return
        self.layoutAboutToBeChanged.emit()
        persistent = self.persistentIndexList()
        where = [(self._rows[i.row()].proc.id, i.column()) for i in persistent]
        self._rows.replace(rows)
        self.changePersistentIndexList(
            persistent, [self.index(self.rowOf(proc_id), column) for proc_id, column in where]
        )
        self.layoutChanged.emit()

    def _settle_order(self) -> None:
        """Reorder the rows now if their values changed, unless the order is held
        (or the quiet time after a hold is not over)."""
        pending = self._rows.pending
        rows = self._rows.settle(not (self._held or self._reorder_timer.isActive()))
        if pending != self._rows.pending:
            self.reorderPendingChanged.emit()
        if rows is not None:
            self._reorder(rows)

    # -- the tick: runtimes, countdowns, CPU and memory ------------------------------

    @Slot(int, int)
    def setVisibleRows(self, first: int, last: int) -> None:
        """The rows the view shows (``TableView.topRow``/``bottomRow``); -1, -1: unknown.

        Limits the runtime tick to these rows; see the class docstring.
        """
        hint = (first, last) if 0 <= first <= last else None
        rows = self._rows
        if hint == rows.visible:
            return
        rows.visible = hint
        if hint is not None:
            # A row that scrolled in may have changed state (stopping) unseen.
            window = [i for i in rows.window(VISIBLE_MARGIN) if rows[i].exit is None]
            self._announce_state(rows.catch_up(window))

    def _on_timer(self) -> None:
        self._tick(self._ticker.now)
        self._sample(in_turns=True)
        self._settle_order()
        self._update_timer()

    def tick(self) -> None:
        """Refresh the runtime of running rows now (the ticker does it once a second)."""
        self._tick()
        self._settle_order()
        self._update_timer()

    def sample(self) -> None:
        """Sample CPU and memory of the running rows in view now (the ticker does it
        once a second, after the runtime tick)."""
        self._sample()
        self._settle_order()

    def _tick(self, now: float | None = None) -> None:
        self._cells.advance(now)  # a new era: runtimes and countdowns are read anew
        rows = self._rows
        live = rows.live(VISIBLE_MARGIN)
        changed = rows.catch_up(live)
        self._announce_state(changed)
        skip = set(changed)
        column = self._columns.index(ProcColumn.RUNTIME)
        for first, last in ranges(i for i in live if i not in skip):
            self.dataChanged.emit(
                self.index(first, column), self.index(last, column), RUNTIME_ROLES
            )
        if live:
            rows.values_changed(RUNTIME_SORT)
        if rows.restarting:  # the countdown in their Status cell
            status = self._columns.index(ProcColumn.STATUS)
            for row in rows.rows_of(rows.restarting):
                index = self.index(row, status)
                self.dataChanged.emit(index, index, COUNTDOWN_ROLES)

    def _sample(self, in_turns: bool = False) -> None:
        rows = self._rows
        ids = [rows[i].proc.id for i in rows.live(0)]
        if in_turns:  # a few rows per turn of the loop (see RowSampler.sample_in_turns)
            later = functools.partial(QTimer.singleShot, 0, self)
            self._sampler.sample_in_turns(ids, self._sampled, later)
        else:
            self._sampled(self._sampler.sample(ids))
        if rows.sort_column in STATS_SORT and self._sampler.sample_others(
            rows.running, set(ids), OFFSCREEN_SAMPLES
        ):
            rows.values_changed(STATS_SORT)

    def _sampled(self, ids: list[int]) -> None:
        """Announce the CPU and memory of the rows of ``ids``, sampled just now."""
        cpu, memory = self._columns.index(ProcColumn.CPU), self._columns.index(ProcColumn.MEMORY)
        for first, last in ranges(self._rows.rows_of(ids)):
            self.dataChanged.emit(self.index(first, cpu), self.index(last, memory), STATS_ROLES)
        if ids:
            self._rows.values_changed(STATS_SORT)
            self._settle_order()

    def _announce_state(self, rows: Iterable[int]) -> None:
        last_column = len(self._columns) - 1
        runs = ranges(rows)
        for first, last in runs:
            self.dataChanged.emit(self.index(first, 0), self.index(last, last_column), STATE_ROLES)
        if runs:
            self._rows.values_changed(STATE_SORT)

    def _update_timer(self) -> None:
        if (self._rows.running or self._rows.restarting) and self._pump is not None:
            self._ticker.subscribe(self._on_timer)
        else:
            self._ticker.unsubscribe(self._on_timer)

    # -- events ----------------------------------------------------------------

    def _listen_to_link(self) -> None:
        """A supervisor reached over a link (RemoteSupervisor) says when it drops
        and comes back: every row then reads "disconnected", or its state again."""
        ref = weakref.ref(self)

        def heard(what: str) -> None:
            model = ref()
            if model is not None and what in ("connected", "disconnected"):
                model._cells.advance()
                model._announce_state(range(len(model._rows)))

        self._lifeline.on_close(self._sup.add_listener(heard))

    def _on_events(self, events: list[Event]) -> None:
        self._cells.advance()  # what changes with time is read again
        if any(ev.missed for ev in events):
            self._resync()
            return
        digest = self._rows.digest(events)
        if digest.started:
            self._insert(digest.started)
        if digest.learned:  # rows that turned out to be a workspace command's runs
            self._play(self._rows.relearn(digest.learned))
        if digest.changed:
            self._announce_state(self._rows.catch_up(self._rows.rows_of(digest.changed)))
        if digest.phased:  # the workspace texts of the Tool and Status cells
            tool, status = map(self._columns.index, (ProcColumn.TOOL, ProcColumn.STATUS))
            for row in self._rows.rows_of(digest.phased):
                self.dataChanged.emit(self.index(row, tool), self.index(row, status), PHASE_ROLES)
        if digest.dismissed:
            self._play(self._rows.leave(digest.dismissed))
            self._sampler.forget(digest.dismissed)
        self._settle_order()
        self._update_timer()

    def _insert(self, proc_ids: list[int]) -> None:
        new: dict[int, Proc] = {}
        for proc_id in proc_ids:
            if proc_id in new or self._rows.showing(proc_id) >= 0:
                continue
            try:
                new[proc_id] = self._sup.get(proc_id)
            except ProcNotFound:  # dismissed before we heard of it
                continue
        if new:
            self._play(self._rows.arrive(new.values()))

    def _play(self, steps: Iterable[RowStep]) -> None:
        """Tell the views of each change of the rows, and make it, in turn (see ``_folding``)."""
        counts, last_column = self._rows.counts, len(self._columns) - 1
        for step in steps:
            match step.kind:
                case "insert":
                    self.beginInsertRows(ROOT, step.first, step.last)
                    self._rows.insert_rows(step.first, step.rows)
                    self.endInsertRows()
                case "remove":
                    self.beginRemoveRows(ROOT, step.first, step.last)
                    self._rows.remove(step.first, step.last)
                    self.endRemoveRows()
                case "changed":
                    first, last = self.index(step.first, 0), self.index(step.last, last_column)
                    self.dataChanged.emit(first, last, [])
                case _:
                    self.runFolded.emit(step.first, step.last)
        if self._rows.counts != counts:
            self.countChanged.emit()

    def _resync(self) -> None:
        """Events were lost (a full queue): start over from the supervisor's list."""
        counts, pending = self._rows.counts, self._rows.pending
        self.beginResetModel()
        self._rows.reset(self._sup.procs(self._session, self._agent or None))
        self._sampler.keep_only({r.proc.id for r in self._rows.rows})
        self.endResetModel()
        if pending:
            self.reorderPendingChanged.emit()
        if self._rows.counts != counts:
            self.countChanged.emit()
        self._update_timer()
