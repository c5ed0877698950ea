"""The process table's rows and their order, without Qt (``_proc_rows``): where a
new row goes, where a restart goes, sorting by a column, values that change and
reorder only when allowed, and what a batch of events changes."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

from procwindow.core import EventKind, ExitInfo, ExitReason, ProcState, SpawnOptions
from procwindow.qt.models._proc_rows import (
    NO_VALUES,
    RUNTIME_SORT,
    STATS_SORT,
    ProcRow,
    ProcRows,
    ranges,
)
from procwindow.qt.models.columns import ProcColumn

from .without_qt import plain_tests, run_without_qt


@dataclass
class FakeProc:
    """What a row reads of a Proc."""

    id: int
    agent: str = "a"
    tool: str = "shell"
    cmd: str = "sleep 30"
    state: ProcState = ProcState.RUNNING
    exit: ExitInfo | None = None
    options: SpawnOptions = field(default_factory=SpawnOptions)

    def end(self, code: int = 0, runtime: float = 1.0) -> None:
        reason = ExitReason.EXITED if code == 0 else ExitReason.FAILED
        self.state, self.exit = ProcState.EXITED, ExitInfo(code, None, reason, runtime)


class Values:
    """Runtimes and CPU set by hand."""

    def __init__(self) -> None:
        self.runtimes: dict[int, float] = {}
        self.cpus: dict[int, float] = {}

    def runtime(self, row: ProcRow) -> float:
        return self.runtimes.get(row.proc.id, 0.0)

    def cpu(self, row: ProcRow) -> float:
        return self.cpus.get(row.proc.id, -1.0)

    def memory(self, row: ProcRow) -> int:
        return -1


def procs(*ids: int) -> list[FakeProc]:
    """Procs, newest first (as the supervisor lists them)."""
    return [FakeProc(i) for i in sorted(ids, reverse=True)]


def ids(rows: ProcRows) -> list[int]:
    return [r.proc.id for r in rows.rows]


def add(rows: ProcRows, *new: FakeProc) -> None:
    """Insert new procs as the model does: on top when they fit there, else one by one."""
    added = rows.new_rows(new)  # type: ignore[arg-type]
    if rows.fit_on_top(added):
        rows.put_on_top(added)
        return
    for r in reversed(added):
        rows.insert(rows.place_of(r), r)


def test_ranges_are_runs_of_consecutive_rows() -> None:
    assert ranges([]) == []
    assert ranges([4, 2, 3, 9, 9, 0]) == [(0, 0), (2, 4), (9, 9)]


def test_rows_are_newest_first_and_new_ones_come_on_top() -> None:
    rows = ProcRows(NO_VALUES)
    rows.reset(procs(1, 2, 3))  # type: ignore[arg-type]
    assert ids(rows) == [3, 2, 1]
    assert rows.running == {1, 2, 3}
    assert [rows.row_of(i) for i in (3, 2, 1, 99)] == [0, 1, 2, -1]
    add(rows, FakeProc(5), FakeProc(4))
    assert ids(rows) == [5, 4, 3, 2, 1]
    assert [rows.row_of(i) for i in ids(rows)] == list(range(5))
    assert rows.proc_id_at(1) == 4 and rows.proc_id_at(5) == -1
    gone = rows.remove(1, 2)
    assert [r.proc.id for r in gone] == [4, 3]
    assert ids(rows) == [5, 2, 1] and rows.running == {5, 2, 1}
    assert rows.rows_of([1, 5, 77]) == [0, 2]


def test_a_restart_takes_its_predecessors_row_before_or_after_it_comes() -> None:
    rows = ProcRows(NO_VALUES)
    rows.reset(procs(1, 2, 3))  # type: ignore[arg-type]
    # Told before its row comes: inserted in 2's row, 2 one row down.
    assert rows.keep_place(4, 2) is None
    add(rows, FakeProc(4))
    assert ids(rows) == [3, 4, 2, 1]
    # Told after: the row on top moves (before row 3 of the rows as they are).
    add(rows, FakeProc(5))
    assert ids(rows) == [5, 3, 4, 2, 1]
    move = rows.keep_place(5, 1)
    assert move == (0, 4)
    rows.move(*move)
    assert ids(rows) == [3, 4, 2, 5, 1]
    assert rows.keep_place(5, 1) is None  # again: nothing moves
    assert rows.keep_place(2, 3) is None  # an older id is no restart
    # Shown again from scratch, the places hold.
    rows.reset(procs(1, 2, 3, 4, 5))  # type: ignore[arg-type]
    assert ids(rows) == [3, 4, 2, 5, 1]


def test_sorting_by_a_column_keeps_ties_in_the_default_order() -> None:
    rows = ProcRows(NO_VALUES)
    rows.reset([FakeProc(3, agent="bob"), FakeProc(2, agent="Amy"), FakeProc(1, agent="bob")])  # type: ignore[list-item]
    order = rows.sort_by(ProcColumn.AGENT, False)
    assert order is not None
    rows.replace(order)
    assert ids(rows) == [2, 3, 1]  # Amy, then the two bobs newest first
    order = rows.sort_by(ProcColumn.AGENT, True)
    assert order is not None
    rows.replace(order)
    assert ids(rows) == [3, 1, 2]  # descending; the ties still newest first
    assert rows.sort_by(ProcColumn.AGENT, True) is None  # the same sort: nothing to do
    order = rows.sort_by(None, True)  # the default order is never descending
    assert order is not None and not rows.descending
    rows.replace(order)
    assert ids(rows) == [3, 2, 1]


def test_a_new_row_comes_in_at_its_place_in_a_sorted_table() -> None:
    values = Values()
    values.runtimes.update({1: 5.0, 2: 1.0, 3: 3.0})
    rows = ProcRows(values)
    rows.reset(procs(1, 2, 3))  # type: ignore[arg-type]
    rows.replace(rows.sort_by(ProcColumn.RUNTIME, True) or [])
    assert ids(rows) == [1, 3, 2]
    values.runtimes[4] = 2.0
    add(rows, FakeProc(4))
    assert ids(rows) == [1, 3, 4, 2]
    # A restart of 1 goes right above it, whatever its own runtime.
    rows.keep_place(5, 1)
    values.runtimes[5] = 0.0
    add(rows, FakeProc(5))
    assert ids(rows) == [5, 1, 3, 4, 2]


def test_changed_values_reorder_only_when_the_rows_may_move() -> None:
    values = Values()
    values.cpus.update({1: 10.0, 2: 50.0, 3: 90.0})
    rows = ProcRows(values)
    rows.reset(procs(1, 2, 3))  # type: ignore[arg-type]
    rows.replace(rows.sort_by(ProcColumn.CPU, True) or [])
    assert ids(rows) == [3, 2, 1]
    values.cpus.update({1: 99.0, 3: 1.0})
    rows.values_changed(RUNTIME_SORT)  # not the sort column: still in order
    assert not rows.dirty and rows.settle(may_move=True) is None
    rows.values_changed(STATS_SORT)
    assert rows.dirty
    assert rows.settle(may_move=False) is None  # held: the reorder waits
    assert rows.pending and ids(rows) == [3, 2, 1]
    order = rows.settle(may_move=True)
    assert order is not None and not rows.pending and not rows.dirty
    rows.replace(order)
    assert ids(rows) == [1, 2, 3]
    # Unsorted, a change never moves a row.
    rows.replace(rows.sort_by(None, False) or [])
    rows.values_changed(STATS_SORT)
    assert rows.settle(may_move=True) is None and not rows.dirty


def test_the_rows_in_view_and_the_running_among_them() -> None:
    rows = ProcRows(NO_VALUES)
    made = procs(*range(1, 21))
    for p in made[5:]:
        p.end()
    rows.reset(made)  # type: ignore[arg-type]
    assert rows.live(margin=2) == [0, 1, 2, 3, 4]  # unknown view: every running row
    rows.visible = (3, 6)
    assert rows.window(margin=2) == range(1, 9)
    assert rows.live(margin=2) == [1, 2, 3, 4]
    rows.visible = (18, 19)
    assert rows.window(margin=5) == range(13, 20) and rows.live(0) == []


def test_a_row_catches_up_with_its_proc_and_stops_running() -> None:
    rows = ProcRows(NO_VALUES)
    made = procs(1, 2)
    rows.reset(made)  # type: ignore[arg-type]
    assert rows[0].status_text == "running"
    made[0].end(code=3)
    assert rows.catch_up([0, 1]) == [0]
    assert rows[0].status_text == "failed (3)" and rows[0].status_color.startswith("#")
    assert rows.running == {1}
    assert rows.catch_up([0, 1]) == []


def test_a_batch_of_events_says_what_started_changed_went_and_restarts() -> None:
    rows = ProcRows(NO_VALUES)

    def event(kind: EventKind, proc_id: int, **extra: object) -> SimpleNamespace:
        return SimpleNamespace(kind=kind, proc_id=proc_id, missed=0, **extra)

    digest = rows.digest(
        [
            event(EventKind.START, 7),
            event(EventKind.STOPPING, 3),
            event(EventKind.EXIT, 4),
            event(EventKind.DISMISS, 2),
            event(EventKind.PHASE, 5, phase="restarting", previous=None),
        ]
    )
    assert digest.started == [7]
    assert digest.changed == {3, 4, 5}
    assert digest.dismissed == {2}
    assert digest.phased == {5}
    assert rows.restarting == {5}
    # The restart comes: its predecessor's countdown is over.
    digest = rows.digest([event(EventKind.PHASE, 8, phase="starting", previous=5)])
    assert rows.restarting == set()
    assert digest.changed == {8, 5} and digest.phased == {8, 5}


def test_runs_with_qt_unimportable(tmp_path: Path) -> None:
    code, out, err = run_without_qt(__name__, tmp_path)
    assert code == 0, err
    assert out.splitlines() == [f"{plain_tests(globals())} tests; qt modules: []"]
