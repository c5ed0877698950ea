"""Sorting the process table: by every column both ways, through live updates, held
while the pointer is over the rows, restarts in their place; and the column layout a
person drags."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable

import pytest
from PySide6.QtCore import QPersistentModelIndex
from pytestqt.modeltest import ModelTester
from pytestqt.qtbot import QtBot

from procwindow.core import ProcStats, Supervisor
from procwindow.qt import ProcModel, ProcRole, ProcTableStyle
from procwindow.qt._ticker import Ticker
from procwindow.qt.models import proc as proc_module
from procwindow.qt.table import (
    MIN_COLUMN_WIDTHS,
    MIN_FLEXIBLE_WIDTH,
    column_widths,
    minimum_table_width,
)
from tests.core.helpers import py, until

from .conftest import QRun

pytestmark = pytest.mark.qt_log_level_fail("WARNING")

SLEEP = ["sleep", "30"]
RANK = {"starting": 0, "running": 1, "stopping": 2, "exited": 3}


def ids(model: ProcModel) -> list[int]:
    return [model.procIdAt(row) for row in range(model.rowCount())]


def fake_stats(sup: Supervisor, load: dict[int, tuple[float, int]]) -> Callable[[int], ProcStats]:
    """``sup.stats`` answering ``load[id]`` (CPU %, RSS) where set, else the real values."""
    real = sup.stats

    def stats(proc_id: int) -> ProcStats:
        if proc_id in load:
            cpu, rss = load[proc_id]
            return ProcStats(cpu, rss, 0, 0, 1, 0)
        return real(proc_id)

    return stats


def sort_value(model: ProcModel, row: int, column: str) -> object:
    def get(role: ProcRole) -> object:
        return model.data(model.index(row, 0), role)

    match column:
        case "id":
            return get(ProcRole.PROC_ID)
        case "pid":
            return get(ProcRole.OS_PID)
        case "agent":
            return str(get(ProcRole.AGENT)).casefold()
        case "tool":
            return (str(get(ProcRole.TOOL)).casefold(), get(ProcRole.COMMAND))
        case "status":
            return (RANK[str(get(ProcRole.STATUS))], get(ProcRole.STATUS_TEXT))
        case "runtime":
            return get(ProcRole.RUNTIME)
        case "cpu":
            return get(ProcRole.CPU_PERCENT)
        case "memory":
            return get(ProcRole.MEMORY)
    raise AssertionError(column)


def test_every_column_sorts_both_ways_and_ties_keep_the_default_order(
    sup: Supervisor, qrun: QRun, qtmodeltester: ModelTester, qtbot: QtBot
) -> None:
    load: dict[int, tuple[float, int]] = {}
    sup.stats = fake_stats(sup, load)  # type: ignore[method-assign]
    model = ProcModel(sup, "s", ticker=Ticker(None))
    qtmodeltester.check(model)

    async def spawn_all() -> list[int]:
        spawned = [
            await sup.spawn(SLEEP, session="s", agent="zed", tool="b_tool"),
            await sup.spawn(py("raise SystemExit(3)"), session="s", agent="Amy", tool="a_tool"),
            await sup.spawn(["sleep", "31"], session="s", agent="max", tool="b_tool"),
            await sup.spawn(SLEEP, session="s", agent="amy", tool="C_tool"),
            await sup.spawn(["true"], session="s", agent="bob", tool="a_tool"),
        ]
        await until(lambda: model.rowCount() == 5)
        await sup.wait(spawned[1].id)
        await sup.wait(spawned[4].id)
        await until(lambda: sum(model.data(model.index(r, 0), ProcRole.STATUS) == "exited"
                                for r in range(5)) == 2, what="two exits")  # fmt: skip
        await asyncio.sleep(0.05)  # the runtimes differ
        return [p.id for p in spawned]

    a, b, c, d, e = qrun(spawn_all())
    default = ids(model)
    assert default == [e, d, c, b, a]
    load.update({a: (30.0, 5 << 20), c: (30.0, 9 << 20), d: (80.0, 1 << 20)})
    model.sample()
    assert (model.sortColumn, model.sortDescending) == ("", False)

    for column in model.columnNames:
        if column == "actions":
            continue
        for descending in (False, True):
            with qtbot.waitSignal(model.sortChanged):
                model.sortBy(column, descending)
            assert (model.sortColumn, model.sortDescending) == (column, descending)
            values = [sort_value(model, row, column) for row in range(5)]
            pairs = list(itertools.pairwise(values))
            where = f"{column} {'desc' if descending else 'asc'}: {values}"
            if descending:
                assert all(x >= y for x, y in pairs), where  # type: ignore[operator]
            else:
                assert all(x <= y for x, y in pairs), where  # type: ignore[operator]
            # Equal values keep the default order (newest first) either way.
            for row in range(4):
                if values[row] == values[row + 1]:
                    first, second = model.procIdAt(row), model.procIdAt(row + 1)
                    assert default.index(first) < default.index(second), where
            assert [model.rowOf(i) for i in ids(model)] == list(range(5))

    model.sortBy("cpu", True)
    # Never sampled (the exited ones) reads -1: last, largest first.
    assert ids(model) == [d, c, a, e, b]
    model.sortBy("actions", False)  # not sortable: nothing changes
    model.sortBy("nonsense", True)
    assert (model.sortColumn, model.sortDescending) == ("cpu", True)
    model.sortBy("", True)
    assert (model.sortColumn, model.sortDescending) == ("", False)
    assert ids(model) == default
    model.close()


def test_a_header_click_cycles_ascending_descending_default(sup: Supervisor, qrun: QRun) -> None:
    model = ProcModel(sup, "s", "a")
    procs = [qrun(sup.spawn(SLEEP, session="s", agent="a")) for _ in range(3)]
    qrun(until(lambda: model.rowCount() == 3))
    newest_first = [p.id for p in reversed(procs)]
    model.cycleSort("pid")
    assert (model.sortColumn, model.sortDescending, ids(model)) == (
        "pid",
        False,
        newest_first[::-1],
    )
    model.cycleSort("pid")
    assert (model.sortColumn, model.sortDescending, ids(model)) == ("pid", True, newest_first)
    model.cycleSort("pid")
    assert (model.sortColumn, model.sortDescending, ids(model)) == ("", False, newest_first)
    model.cycleSort("tool")
    model.cycleSort("pid")  # another column starts ascending
    assert (model.sortColumn, model.sortDescending) == ("pid", False)
    # An agent's table has no Agent column: a sort by it is dropped with the column.
    model.setScope("s", "")
    model.sortBy("agent", True)
    assert model.sortColumn == "agent"
    model.setScope("s", "a")
    assert model.sortColumn == ""
    model.close()


def test_the_order_holds_while_the_pointer_is_over_the_rows(
    sup: Supervisor,
    qrun: QRun,
    qtmodeltester: ModelTester,
    qtbot: QtBot,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(proc_module, "REORDER_QUIET_MS", 100)
    load: dict[int, tuple[float, int]] = {}
    sup.stats = fake_stats(sup, load)  # type: ignore[method-assign]
    model = ProcModel(sup, "s", "a", ticker=Ticker(None))
    qtmodeltester.check(model)
    x, y, z = (qrun(sup.spawn(SLEEP, session="s", agent="a")).id for _ in range(3))
    qrun(until(lambda: model.rowCount() == 3))
    load.update({x: (90.0, 1), y: (50.0, 1), z: (10.0, 1)})
    model.sample()
    model.sortBy("cpu", True)
    assert ids(model) == [x, y, z]

    # Not held: the next sample reorders at once.
    load.update({x: (10.0, 1), z: (90.0, 1)})
    with qtbot.waitSignal(model.layoutChanged):
        model.sample()
    assert ids(model) == [z, y, x]

    # Held (the pointer is over the rows): values change, no row moves.
    under_pointer = QPersistentModelIndex(model.index(1, 2))
    model.orderHeld = True
    load.update({x: (99.0, 1), y: (1.0, 1), z: (50.0, 1)})
    with qtbot.assertNotEmitted(model.layoutChanged), qtbot.waitSignal(model.reorderPendingChanged):
        model.sample()
    assert ids(model) == [z, y, x]
    assert model.reorderPending
    assert model.data(model.index(2, 0), ProcRole.CPU_PERCENT) == 99.0  # values do change
    # A new row still comes in, at its place by what it reads when it comes (not
    # sampled yet: last); sampled while held, it stays there.
    load[(w := qrun(sup.spawn(SLEEP, session="s", agent="a")).id)] = (60.0, 1)
    qrun(until(lambda: model.rowCount() == 4))
    assert ids(model) == [z, y, x, w]
    model.sample()
    assert ids(model) == [z, y, x, w]
    assert model.procIdAt(under_pointer.row()) == y

    # Let go: after a short quiet time the rows take their order.
    with qtbot.waitSignal(model.layoutChanged, timeout=3000):
        model.orderHeld = False
        assert ids(model) == [z, y, x, w]  # not at once
    assert ids(model) == [x, w, z, y]
    assert not model.reorderPending
    assert model.procIdAt(under_pointer.row()) == y  # persistent indexes follow the rows
    model.close()


def test_the_sort_survives_live_updates(sup: Supervisor, qrun: QRun) -> None:
    model = ProcModel(sup, "s", "a")
    model.sortBy("status", False)

    async def scenario() -> None:
        first = await sup.spawn(SLEEP, session="s", agent="a")
        second = await sup.spawn(SLEEP, session="s", agent="a")
        third = await sup.spawn(SLEEP, session="s", agent="a")
        await until(lambda: model.rowCount() == 3)
        assert ids(model) == [third.id, second.id, first.id]
        await sup.kill(second.id)  # exited sorts after running
        await until(lambda: ids(model) == [third.id, first.id, second.id], what="the reorder")
        fourth = await sup.spawn(SLEEP, session="s", agent="a")
        await until(lambda: model.rowCount() == 4)
        assert ids(model) == [fourth.id, third.id, first.id, second.id]
        await sup.kill(fourth.id)
        await until(lambda: ids(model)[-2:] == [fourth.id, second.id], what="the next reorder")

    qrun(scenario())
    assert model.sortColumn == "status"
    model.close()


def test_a_restart_takes_its_predecessors_row_in_a_sorted_table(
    sup: Supervisor, qrun: QRun, qtmodeltester: ModelTester
) -> None:
    model = ProcModel(sup, "s", "a")
    qtmodeltester.check(model)
    procs = [qrun(sup.spawn(SLEEP, session="s", agent="a")) for _ in range(3)]
    qrun(until(lambda: model.rowCount() == 3))
    a, b, c = (p.id for p in procs)
    model.sortBy("pid", False)
    assert ids(model) == [a, b, c]

    async def restart(old: int) -> int:
        new = await sup.restart(old)
        model.keepPlace(new.id, old)  # told before its row comes, as the controller does
        await until(lambda: model.rowOf(new.id) >= 0, what="the restart's row")
        return new.id

    b2 = qrun(restart(b))
    assert ids(model) == [a, b2, b, c]
    # Told after its row came: it moves there.
    a2 = qrun(sup.restart(a)).id
    qrun(until(lambda: model.rowCount() == 5))
    assert ids(model)[-1] == a2
    model.keepPlace(a2, a)
    assert ids(model) == [a2, a, b2, b, c]
    # Descending, and back to the default order: restarts above their predecessors.
    model.sortBy("id", True)
    assert ids(model) == [a2, b2, c, b, a]
    model.sortBy("", False)
    assert ids(model) == [c, b2, b, a2, a]
    model.close()


def test_dragged_widths_hold_until_the_view_is_too_narrow() -> None:
    names = ["id", "agent", "tool", "status", "runtime", "cpu", "memory", "actions"]
    auto = column_widths(names, 1200, 154, 200)
    assert auto == [56, 104, 398, 200, 88, 96, 104, 154]
    # ID dragged to 150: the command gives the room.
    widths = column_widths(names, 1200, 154, 200, {"id": 150})
    assert widths == [150, 104, 304, 200, 88, 96, 104, 154]
    # Narrower: the command shrinks to a comfortable width, then Mem, CPU and Agent
    # to their narrowest, then the command to its narrowest; then ID gives its extra
    # room back. Status, runtime and actions never shrink.
    assert column_widths(names, 1030, 154, 200, {"id": 150}) == [
        150, 104, 160, 200, 88, 96, 78, 154,
    ]  # fmt: skip
    assert column_widths(names, 900, 154, 200, {"id": 150}) == [
        150, 72, 100, 200, 88, 64, 72, 154,
    ]  # fmt: skip
    assert column_widths(names, 850, 154, 200, {"id": 150}) == [
        100, 72, 100, 200, 88, 64, 72, 154,
    ]  # fmt: skip
    narrowest = column_widths(names, 0, 154, 200, {"id": 150, "runtime": 300})
    assert narrowest == column_widths(names, 0, 154, 200)
    # The one set longest ago gives first; a column set narrower than automatic stays.
    widths = column_widths(names, 830, 154, 200, {"runtime": 140, "id": 100, "cpu": 50})
    assert widths == [94, 72, 100, 200, 88, 50, 72, 154]
    # Never narrower than its minimum; a status never narrower than its text.
    widths = column_widths(names, 1200, 154, 200, {"id": 1, "status": 20, "actions": 500})
    assert widths[0] == MIN_COLUMN_WIDTHS["id"] and widths[3] == 200 and widths[-1] == 154


def test_dragging_a_column_edge(qtbot: QtBot) -> None:
    style = ProcTableStyle()
    style.columnNames = ["id", "tool", "status", "runtime", "cpu", "memory", "actions"]
    style.actionsWidth = 154.0
    style.viewWidth = 1000.0
    before = list(style.columnWidths)
    status = style.statusWidth
    assert [style.resizable(n) for n in style.columnNames] == [True] * 6 + [False]
    assert style.alignRight("runtime") and style.alignRight("cpu") and not style.alignRight("id")

    style.beginResize(0, 500.0)
    assert style.resizing == "id"
    with qtbot.waitSignal(style.columnWidthsChanged):
        style.resizeTo(540.0)
    assert style.columnWidths[0] == before[0] + 40
    assert style.columnWidths[1] == before[1] - 40  # the command gave it
    assert style.columnWidths[2:] == before[2:]
    # Far to the right: the others stay at their automatic widths, the command at
    # its narrowest; the table still fits the view.
    style.resizeTo(5000.0)
    assert style.columnWidths[1] == MIN_FLEXIBLE_WIDTH
    assert style.columnWidths[2:] == [status, 88, 64, 72, 154]  # CPU, Mem at their narrowest
    assert sum(style.columnWidths) == pytest.approx(1000.0)
    # Back left past its minimum: it stops there.
    style.resizeTo(-5000.0)
    assert style.columnWidths[0] == MIN_COLUMN_WIDTHS["id"]
    style.resizeTo(600.0)
    style.endResize()
    assert style.resizing == ""
    held = style.columnWidths[0]
    assert held == before[0] + 100
    # A wider view keeps the dragged width; the command takes the rest.
    style.viewWidth = 1200.0
    assert style.columnWidths[0] == held
    assert sum(style.columnWidths) == pytest.approx(1200.0)
    # The actions column does not resize; a reset gives the automatic width back.
    style.beginResize(6, 0.0)
    style.resizeTo(100.0)
    assert style.columnWidths[-1] == 154 and style.resizing == ""
    style.resetColumn(0)
    assert style.columnWidths[0] == before[0]
    # The minimum width the window keeps counts a session's Agent column in.
    assert style.minimumWidth == minimum_table_width([*style.columnNames, "agent"], 154, status)
    assert style.minimumWidth == 56 + 100 + status + 88 + 64 + 72 + 154 + 72
