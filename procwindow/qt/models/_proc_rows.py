"""The rows of the process table and their order, without Qt.

:class:`ProcRows` is the bookkeeping behind
:class:`~procwindow.qt.models.ProcModel`: the rows, each proc id's row, which
rows still run, where a restart goes (``keep_place``), the rows the view shows,
and the order (newest first, or by a column). It changes nothing by itself
that a view must hear of: a change comes in two steps, as in
:class:`~procwindow.qt.models._lines.LineBuffer`, so that the model can tell
its views before and after (``place_of`` says where a row goes, ``insert``
puts it there; ``keep_place`` says which row moves where, ``move`` moves it;
``settle`` gives the new order, ``replace`` takes it).

**Order.** By default the rows are newest first, except a restart told to
``keep_place``: it takes the row of the proc it restarts (whose ``order`` it
takes), which moves one row down. Sorted by a column, each row has a ``key``
(the value, then the default order as a tie-break) taken when the rows were
last put in order, so that changing values move no row until the model asks
(``values_changed`` marks the rows ``dirty``; ``settle`` reorders them, or
says they must wait: ``pending``).

What a sort by runtime, CPU or memory reads comes from :class:`RowValues`
(the model's cells); everything else from the row itself.

>>> rows = ProcRows(NO_VALUES)
>>> rows.reset([])
>>> len(rows), rows.row_of(5)
(0, -1)
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from procwindow.core import Event, EventKind, ExitInfo, Proc, ProcState

from .columns import ProcColumn
from .format import status_color, status_text

__all__ = [
    "NO_VALUES",
    "RUNTIME_SORT",
    "STATE_SORT",
    "STATS_SORT",
    "EventDigest",
    "Fold",
    "ProcRow",
    "ProcRows",
    "RowStep",
    "RowValues",
    "ranges",
]

# The order of the states in a sort by status.
_STATE_RANK = {
    ProcState.STARTING: 0,
    ProcState.RUNNING: 1,
    ProcState.STOPPING: 2,
    ProcState.EXITED: 3,
}
#: The columns whose values a tick, a sample or a state change can change.
RUNTIME_SORT = frozenset({ProcColumn.RUNTIME})
STATS_SORT = frozenset({ProcColumn.CPU, ProcColumn.MEMORY})
STATE_SORT = frozenset({ProcColumn.STATUS, ProcColumn.RUNTIME, *STATS_SORT})


def ranges(rows: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted, distinct row numbers as (first, last) runs of consecutive rows.

    >>> ranges([5, 1, 2, 3, 7, 7])
    [(1, 3), (5, 5), (7, 7)]
    """
    out: list[tuple[int, int]] = []
    for row in sorted(set(rows)):
        if out and out[-1][1] == row - 1:
            out[-1] = (out[-1][0], row)
        else:
            out.append((row, row))
    return out


@dataclass(slots=True, eq=False)
class ProcRow:
    """One row: a proc, and what the table last announced of it."""

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
    # The words and colour of its state, made when the state is taken.
    status_text: str = ""
    status_color: str = ""
    # What the cells computed for the model's current era (see _proc_cells):
    # the runtime; the workspace's phase text and tooltip.
    era: int = -1
    runtime: float = 0.0
    phase_era: int = -1
    phase_text: str = ""
    phase_word: str = ""
    workspace_tip: str = ""
    # The runs of its workspace command in this table (None: no command's), and
    # 1 for an earlier run shown under the command's row (which its order follows).
    fold: Fold | None = None
    depth: int = 0

    @property
    def lead(self) -> ProcRow:
        """The row it sorts with: its command's row for an earlier run, else itself."""
        fold = self.fold
        return fold.head if self.depth and fold is not None and fold.head is not None else self

    @property
    def label(self) -> str:
        """What its command cell names: its workspace command, or its tool."""
        return self.fold.key[1] if self.fold is not None else self.proc.tool

    @classmethod
    def of(cls, proc: Proc) -> ProcRow:
        row = cls(proc, proc.cmd, proc.state, proc.exit, proc.id)
        row._describe()
        return row

    def catch_up(self) -> bool:
        """Take the proc's current state; True if it changed."""
        state, exit = self.proc.state, self.proc.exit
        if state is self.state and exit is self.exit:
            return False
        self.state, self.exit = state, exit
        self._describe()
        self.era = self.phase_era = -1  # its runtime stops; its phase moves on
        return True

    def _describe(self) -> None:
        self.status_text = status_text(self.state, self.exit, self.proc.options.stop_signal)
        self.status_color = status_color(self.state, self.exit)


@dataclass(slots=True, eq=False)
class Fold:
    """The runs of one workspace command (``key``: its workspace and name) in a
    table: one row, its newest run (``head``), with the ``earlier`` ones (newest
    first) hidden, or shown under it while ``expanded``."""

    key: tuple[str, str]
    head: ProcRow | None = None
    earlier: list[ProcRow] = field(default_factory=list)
    expanded: bool = False


class RowStep(NamedTuple):
    """One change of the rows, for views: ``insert`` (``rows`` at ``first``),
    ``remove`` (``first`` to ``last``), ``changed`` (rows ``first`` to ``last``
    show other values) or ``folded`` (proc ``first``'s row now shows proc ``last``)."""

    kind: str
    first: int
    last: int
    rows: tuple[ProcRow, ...] = ()


class RowValues(Protocol):
    """The values of a row that change while it runs (what sorts by them read)."""

    def runtime(self, row: ProcRow) -> float: ...

    def cpu(self, row: ProcRow) -> float: ...

    def memory(self, row: ProcRow) -> int: ...


class _NoValues:
    """Runtime 0, never sampled: values for rows that are only counted."""

    def runtime(self, row: ProcRow) -> float:
        return row.exit.runtime if row.exit is not None else 0.0

    def cpu(self, row: ProcRow) -> float:
        return -1.0

    def memory(self, row: ProcRow) -> int:
        return -1


NO_VALUES: RowValues = _NoValues()


@dataclass(slots=True)
class EventDigest:
    """What a batch of supervisor events changes in a table (see :meth:`ProcRows.digest`)."""

    started: list[int]
    changed: set[int]  # a state or workspace phase changed: refresh the row
    dismissed: set[int]
    phased: set[int]  # the workspace texts of the row changed
    learned: list[int] = field(default_factory=list)  # shown rows found to be a command's


def _neg_order(row: ProcRow) -> int:
    return -row.order


def _first(pair: tuple[tuple[Any, ...], ProcRow]) -> tuple[Any, ...]:
    return pair[0]


def _neg_id(row: ProcRow) -> int:
    return -row.proc.id


class ProcRows:
    """The rows of a table, their order and the sets a model keeps about them.

    ``running``: ids of rows not yet announced as exited. ``restarting``: ids
    whose workspace restarts them (a countdown). ``places``: a restart's id ->
    the id whose place it takes (kept while the model lives, so a scope shown
    again keeps it). ``visible``: the rows the view shows (None: unknown).
    """

    def __init__(self, values: RowValues) -> None:
        self._values = values
        self.rows: list[ProcRow] = []
        # Each proc id's row counted from the bottom (row_of), rebuilt when None:
        # rows inserted at the top leave it valid.
        self._from_end: dict[int, int] | None = None
        self.places: dict[int, int] = {}
        self.running: set[int] = set()
        self.restarting: set[int] = set()
        self.visible: tuple[int, int] | None = None
        self.sort_column: ProcColumn | None = None
        self.descending = False
        self.dirty = False  # values changed since the rows were put in order
        self.pending = False  # ... and the reorder waits for the hold to end

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, row: int) -> ProcRow:
        return self.rows[row]

    # -- lookups -----------------------------------------------------------------

    def row_of(self, proc_id: int) -> int:
        """The row of proc ``proc_id``, or -1."""
        from_end = self._from_end
        if from_end is None:
            last = len(self.rows) - 1
            from_end = self._from_end = {r.proc.id: last - i for i, r in enumerate(self.rows)}
        pos = from_end.get(proc_id)
        return -1 if pos is None else len(self.rows) - 1 - pos

    def rows_of(self, proc_ids: Iterable[int]) -> list[int]:
        """The rows of those of ``proc_ids`` that are shown, ascending."""
        return sorted(r for r in map(self.row_of, proc_ids) if r >= 0)

    def proc_id_at(self, row: int) -> int:
        """The proc id at ``row``, or -1."""
        return self.rows[row].proc.id if 0 <= row < len(self.rows) else -1

    # -- the rows a view shows ---------------------------------------------------

    def window(self, margin: int) -> range:
        """The rows shown, ``margin`` rows beyond each end (every row while unknown)."""
        if self.visible is None:
            return range(len(self.rows))
        first, last = self.visible
        return range(max(first - margin, 0), min(last + margin + 1, len(self.rows)))

    def live(self, margin: int) -> list[int]:
        """The running rows in view (``margin`` rows beyond each end), ascending;
        every running row while the view has not said what it shows."""
        rows = self.rows
        if self.visible is not None:
            return [i for i in self.window(margin) if rows[i].exit is None]
        if len(self.running) * 8 < len(rows):
            # Few running among many rows: find each (binary search by id).
            return self.rows_of(self.running)
        return [i for i, r in enumerate(rows) if r.exit is None]

    # -- changing rows -----------------------------------------------------------

    def reset(self, procs: Sequence[Proc]) -> None:
        """Show ``procs`` (newest first), arranged: restarts in their places, sorted."""
        rows = [ProcRow.of(p) for p in procs]
        self._place(rows)
        self.rows = self._sorted(rows) if self.sort_column is not None else rows
        self._from_end = None
        self.running = {r.proc.id for r in self.rows if r.exit is None}
        self.dirty = self.pending = False

    def new_rows(self, procs: Iterable[Proc]) -> list[ProcRow]:
        """Rows for new ``procs``, newest first, counted as running while they run."""
        rows = [ProcRow.of(p) for p in sorted(procs, key=lambda p: -p.id)]
        self.running.update(r.proc.id for r in rows if r.exit is None)
        return rows

    def fit_on_top(self, rows: Sequence[ProcRow]) -> bool:
        """True if ``rows`` (newest first) all go above every row, in that order:
        the default order, no restart among them to place, newer than every row."""
        if self.sort_column is not None:
            return False
        if any(self.row_of(self.places.get(r.proc.id, -1)) >= 0 for r in rows):
            return False
        return not self.rows or rows[-1].order > self.rows[0].order

    def put_on_top(self, rows: Sequence[ProcRow]) -> None:
        """Insert ``rows`` above every row (:meth:`fit_on_top` said they go there)."""
        self.rows[0:0] = rows
        if self._from_end is not None:  # counted from the bottom: still valid
            count = len(self.rows) - len(rows)
            for i, r in enumerate(reversed(rows)):
                self._from_end[r.proc.id] = count + i

    def place_of(self, row: ProcRow) -> int:
        """Where a new row goes: in its predecessor's row for a restart told to
        ``keep_place`` (taking its order), else at its place in the order."""
        # A command's run keeps no other row's place: its command's row is its place.
        at = -1 if row.fold is not None else self.row_of(self.places.get(row.proc.id, -1))
        if self.sort_column is not None:
            if at >= 0:
                predecessor = self.rows[at]
                row.order = predecessor.order
                row.key = self._key_before(row, predecessor)
            else:
                row.key = self._sort_key(row)
            return self._position(row.key, self.rows)
        if at >= 0:
            row.order = self.rows[at].order
            return at
        return bisect.bisect_left(self.rows, -row.order, key=_neg_order)

    def insert(self, at: int, row: ProcRow) -> None:
        """Put ``row`` at ``at`` (see :meth:`place_of`)."""
        self.insert_rows(at, (row,))

    def insert_rows(self, at: int, rows: Sequence[ProcRow]) -> None:
        """Put ``rows`` at ``at``, in that order; those that run are counted."""
        self.rows[at:at] = rows
        self._from_end = None
        self.running.update(r.proc.id for r in rows if r.exit is None)

    def move(self, row: int, before: int) -> None:
        """Move ``row`` before row ``before`` (numbered as the rows are now, as
        ``beginMoveRows`` numbers it)."""
        moved = self.rows.pop(row)
        self.rows.insert(before - 1 if row < before else before, moved)
        self._from_end = None

    def remove(self, first: int, last: int) -> list[ProcRow]:
        """Take rows ``first`` to ``last`` away; they are no longer running."""
        gone = self.rows[first : last + 1]
        del self.rows[first : last + 1]
        self._from_end = None
        for r in gone:
            self.running.discard(r.proc.id)
        return gone

    def replace(self, rows: list[ProcRow]) -> None:
        """Show ``rows`` (the same rows, reordered)."""
        self.rows = rows
        self._from_end = None

    def catch_up(self, rows: Iterable[int]) -> list[int]:
        """Of ``rows``, those whose proc changed state since announced (they take
        it now); a row that exited is no longer running."""
        changed = []
        for i in rows:
            r = self.rows[i]
            if r.catch_up():
                changed.append(i)
            if r.exit is not None:
                self.running.discard(r.proc.id)
        return changed

    # -- events ------------------------------------------------------------------

    def digest(self, events: Iterable[Event]) -> EventDigest:
        """Read a batch of events: the procs that started, changed (a state, a
        workspace phase) or were dismissed; and which restart (``restarting``)."""
        digest = EventDigest([], set(), set(), set())
        for ev in events:
            match ev.kind:
                case EventKind.START:
                    digest.started.append(ev.proc_id)
                case EventKind.EXIT | EventKind.STOPPING:
                    digest.changed.add(ev.proc_id)
                case EventKind.DISMISS:
                    digest.dismissed.add(ev.proc_id)
                case EventKind.PHASE if ev.proc_id:
                    digest.changed.add(ev.proc_id)  # a workspace command's phase
                    digest.phased.add(ev.proc_id)
                    if getattr(ev, "phase", None) == "restarting":
                        self.restarting.add(ev.proc_id)
                    else:
                        self.restarting.discard(ev.proc_id)
                    previous = getattr(ev, "previous", None)
                    if previous:  # the run it restarts: its countdown is over
                        self.restarting.discard(previous)
                        digest.changed.add(previous)
                        digest.phased.add(previous)
                case _:
                    pass
        return digest

    # -- order -------------------------------------------------------------------

    def keep_place(self, proc_id: int, predecessor: int) -> tuple[int, int] | None:
        """Show ``proc_id`` (a restart of ``predecessor``) in its predecessor's
        row from now on: the move to make now, as ``(row, before)`` (see
        :meth:`move`), or None. Ids only grow: a ``proc_id`` not newer than
        ``predecessor`` is no restart of it."""
        if proc_id <= predecessor or self.places.get(proc_id) == predecessor:
            return None
        self.places[proc_id] = predecessor
        row, target = self.row_of(proc_id), self.row_of(predecessor)
        if row < 0 or target < 0:
            return None
        moving = self.rows[row]
        if moving.fold is not None:  # its command's row is its place already
            return None
        moving.order = self.rows[target].order
        if self.sort_column is not None:
            moving.key = self._key_before(moving, self.rows[target])
            at = self._position(moving.key, self.rows[:row] + self.rows[row + 1 :])
            return None if at == row else (row, at if at < row else at + 1)
        return None if row == target - 1 else (row, target)

    def sort_by(self, column: ProcColumn | None, descending: bool) -> list[ProcRow] | None:
        """Sort by ``column`` (None: the default order): the rows in their new
        order (to :meth:`replace` the rows with), or None if the sort is the same."""
        descending = descending and column is not None
        if (column, descending) == (self.sort_column, self.descending):
            return None
        self.sort_column, self.descending = column, descending
        self.dirty = self.pending = False
        return self._sorted(self.rows) if column is not None else self._default_rows()

    def values_changed(self, columns: frozenset[ProcColumn]) -> None:
        """Values of ``columns`` changed: the rows are out of order if sorted by one."""
        if self.sort_column in columns:
            self.dirty = True

    def settle(self, may_move: bool) -> list[ProcRow] | None:
        """The rows in the order their values give them now, if they changed and
        ``may_move`` (else ``pending`` turns true), or None: nothing moves."""
        if not self.dirty:
            return None
        if self.sort_column is None:
            self.dirty = self.pending = False
            return None
        pairs = self._keyed(self.rows)
        moved = any(r is not old for (_, r), old in zip(pairs, self.rows, strict=True))
        if moved and not may_move:
            self.pending = True
            return None
        # In order (or free to move): the rows take their new keys.
        for key, r in pairs:
            r.key = key
        self.dirty = self.pending = False
        return [r for _, r in pairs] if moved else None

    def _place(self, rows: list[ProcRow]) -> None:
        """Move each restart given to keep_place into its predecessor's row (``rows``:
        newest first, each ordered by its own id)."""
        if not self.places:
            return
        # In the order the restarts happened, as keep_place would have moved them.
        by_id = {r.proc.id: r for r in rows if r.fold is None}
        for proc_id in sorted(self.places.keys() & by_id.keys()):
            predecessor = by_id.get(self.places[proc_id])
            if predecessor is None:
                continue
            row = by_id[proc_id]
            rows.remove(row)
            rows.insert(rows.index(predecessor), row)
            row.order = predecessor.order

    def _sort_value(self, r: ProcRow) -> Any:
        match self.sort_column:
            case ProcColumn.ID:
                return r.proc.id
            case ProcColumn.PID:
                return r.proc.os_pid or 0
            case ProcColumn.AGENT:
                return r.proc.agent.casefold()
            case ProcColumn.TOOL:
                return (r.label.casefold(), r.cmd)
            case ProcColumn.STATUS:
                return (_STATE_RANK[r.state], r.status_text)
            case ProcColumn.RUNTIME:
                return self._values.runtime(r)
            case ProcColumn.CPU:
                return self._values.cpu(r)
            case ProcColumn.MEMORY:
                return self._values.memory(r)
            case _:
                return 0

    def _sort_key(self, r: ProcRow) -> tuple[Any, ...]:
        # Ties keep the default order (newest first, restarts above their
        # predecessor) in both directions; the id makes every key distinct. An
        # earlier run takes its command's value and order: it stays right under it.
        value = self._sort_value(r.lead)
        if self.descending:
            return (value, r.order, r.proc.id)
        return (value, -r.order, -r.proc.id)

    def _key_before(self, r: ProcRow, predecessor: ProcRow) -> tuple[Any, ...]:
        """The key that puts restart ``r`` right above ``predecessor`` (whose order it took)."""
        if self.descending:
            return (predecessor.key[0], r.order, r.proc.id)
        return (predecessor.key[0], -r.order, -r.proc.id)

    def _keyed(self, rows: list[ProcRow]) -> list[tuple[tuple[Any, ...], ProcRow]]:
        """``rows`` with their keys as of now, in the order of the sort column."""
        pairs = [(self._sort_key(r), r) for r in rows]
        # Keys are distinct (they end with the id): no two rows are ever compared.
        pairs.sort(key=_first, reverse=self.descending)
        return pairs

    def _sorted(self, rows: list[ProcRow]) -> list[ProcRow]:
        """``rows`` in the order of the sort column, each given its key."""
        pairs = self._keyed(rows)
        for key, r in pairs:
            r.key = key
        return [r for _, r in pairs]

    def _default_rows(self) -> list[ProcRow]:
        """The rows in the default order, as a fresh snapshot would arrange them."""
        rows = sorted(self.rows, key=_neg_id)
        for r in rows:
            r.order, r.key = r.proc.id, ()
        self._place(rows)
        return rows

    def _position(self, key: tuple[Any, ...], rows: list[ProcRow]) -> int:
        """Where a row with ``key`` goes among ``rows`` (sorted by their keys)."""
        low, high = 0, len(rows)
        while low < high:
            mid = (low + high) // 2
            other = rows[mid].key
            if (other > key) if self.descending else (other < key):
                low = mid + 1
            else:
                high = mid
        return low
