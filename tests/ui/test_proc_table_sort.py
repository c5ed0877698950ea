"""The process table as a person uses it: a click on a header sorts, a row under the
pointer stays put while values change, a header's edge drags a column wider, and the
CPU and Mem cells draw the last minute of the rows on screen (and only those)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QColor
from PySide6.QtQuick import QQuickItem, QQuickWindow
from PySide6.QtTest import QTest

from procwindow.core import ProcStats, Supervisor
from procwindow.qt import ProcModel
from procwindow.qt.table import ELASTIC_WIDTHS, MIN_FLEXIBLE_WIDTH
from procwindow.qt.window import open_proc_window, window_model

from .conftest import Run
from .helpers import (
    _walk,
    center,
    click,
    find_item,
    item,
    key,
    move_mouse_away,
    outside_task,
    py,
    save_screenshot,
    settle,
    until,
    until_equal,
)
from .test_proc_table import assert_table_fits, model_of
from .test_proc_window import SLEEPER
from .test_screenshots import assert_not_blank, resize

BUSY = py("while True: pass")


def table_view(window: QQuickWindow) -> QQuickItem:
    table = find_item(window, "procTable")
    assert table is not None
    return next(i for i in _walk(table) if i.objectName() == "procTableView")


def top_of(window: QQuickWindow, proc_id: int) -> float:
    """Where row ``proc_id`` is on screen (the top of its PID cell, in the window)."""
    cell = find_item(window, f"pidCell-{proc_id}")
    assert cell is not None, f"row {proc_id} is not on screen"
    return cell.mapToScene(QPointF(0, 0)).y()


def on_screen(window: QQuickWindow, model: ProcModel) -> list[int]:
    """The rows on screen, top to bottom."""
    shown = [model.procIdAt(r) for r in range(model.rowCount())]
    return sorted(
        (i for i in shown if find_item(window, f"pidCell-{i}") is not None),
        key=lambda i: top_of(window, i),
    )


def width_of(window: QQuickWindow, column: str, proc_id: int) -> float:
    cell = find_item(window, f"{column}Cell-{proc_id}")
    assert cell is not None, f"{column}Cell-{proc_id}"
    return cell.width()


async def spawn_three(sup: Supervisor) -> list[int]:
    return [(await sup.spawn(SLEEPER, session="t", agent="a")).id for _ in range(3)]


@pytest.mark.promise("The window: The process table")
def test_a_click_on_a_header_sorts_and_the_keys_follow_the_rows_on_screen(
    sup: Supervisor, run: Run
) -> None:
    async def scenario() -> None:
        first, second, third = await spawn_three(sup)
        window = open_proc_window(sup, "t", "a")
        model = model_of(window)
        await until(lambda: model.rowCount() == 3, what="three rows")
        await settle(0.2)
        assert on_screen(window, model) == [third, second, first]
        assert find_item(window, "sortIndicator-id") is None

        await click(window, await item(window, "header-id"))
        assert (model.sortColumn, model.sortDescending) == ("id", False)
        arrow = await item(window, "sortIndicator-id")
        await until_equal(lambda: arrow.property("text"), "▲", what="the ascending arrow")
        await until_equal(lambda: on_screen(window, model), [first, second, third])

        await click(window, await item(window, "header-id"))
        assert (model.sortColumn, model.sortDescending) == ("id", True)
        await until_equal(lambda: arrow.property("text"), "▼", what="the descending arrow")
        await until_equal(lambda: on_screen(window, model), [third, second, first])

        await click(window, await item(window, "header-id"))
        assert (model.sortColumn, model.sortDescending) == ("", False)
        await until(lambda: find_item(window, "sortIndicator-id") is None, what="no arrow")
        # The actions column does not sort.
        await click(window, await item(window, "header-actions"))
        assert model.sortColumn == ""

        # Sorted by PID ascending, Down moves to the next row on screen.
        await click(window, await item(window, "header-pid"))
        await until_equal(lambda: on_screen(window, model), [first, second, third])
        await click(window, await item(window, f"toolCell-{first}"))
        assert window_model(window).currentProcId == first
        await key(window, Qt.Key.Key_Down)
        assert window_model(window).currentProcId == second
        await key(window, Qt.Key.Key_Down)
        assert window_model(window).currentProcId == third
        await key(window, Qt.Key.Key_Up)
        assert window_model(window).currentProcId == second

    run(scenario())


@pytest.mark.promise("The window: The process table")
def test_a_row_under_the_pointer_does_not_move_while_hovered(sup: Supervisor, run: Run) -> None:
    async def scenario() -> None:
        first, second, third = await spawn_three(sup)
        window = open_proc_window(sup, "t", "a")
        model = model_of(window)
        await until(lambda: model.rowCount() == 3, what="three rows")
        await click(window, await item(window, "header-status"))  # running, then exited
        assert model.sortColumn == "status"
        arrow = await item(window, "sortIndicator-status")

        # The pointer rests on the oldest row (the last); the middle one exits.
        await settle(0.2)
        where = center(await item(window, f"statusCell-{first}"))
        await outside_task(lambda: QTest.mouseMove(window, where))
        await until(lambda: model.orderHeld, what="the order held")
        top = top_of(window, first)
        await sup.kill(second)
        await until(lambda: model.reorderPending, what="a reorder waiting")
        await settle(1.5)  # ticks pass; values change; nothing moves
        assert [model.procIdAt(r) for r in range(3)] == [third, second, first]
        assert top_of(window, first) == top
        assert on_screen(window, model) == [third, second, first]
        assert arrow.property("opacity") < 1.0  # the arrow says a reorder waits
        status = await item(window, f"statusText-{second}")
        assert status.property("text").startswith("killed")  # the values did change

        # The pointer leaves: the rows take their order.
        await move_mouse_away(window)
        await until_equal(lambda: on_screen(window, model), [third, first, second])
        assert not model.reorderPending and not model.orderHeld
        assert arrow.property("opacity") == 1.0

    run(scenario())


async def drag(window: QQuickWindow, start: QPoint, steps: list[int]) -> None:
    """Press at ``start``, move right by each of ``steps`` px in turn, release."""

    def act() -> None:
        QTest.mousePress(window, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, start)
        for dx in steps:
            QTest.mouseMove(window, start + QPoint(dx, 0))
        QTest.mouseRelease(
            window,
            Qt.MouseButton.LeftButton,
            Qt.KeyboardModifier.NoModifier,
            start + QPoint(steps[-1], 0),
        )

    await outside_task(act)


def test_dragging_a_header_edge_resizes_its_column(sup: Supervisor, run: Run) -> None:
    async def scenario() -> None:
        first, _second, _third = await spawn_three(sup)
        window = open_proc_window(sup, "t", "a")
        resize(window, 1100, 600)
        model = model_of(window)
        await until(lambda: model.rowCount() == 3, what="three rows")
        await settle(0.3)
        columns = [c for c in model.columnNames]
        before = {c: width_of(window, c, first) for c in columns}
        assert find_item(window, "resizeHandle-actions") is None

        handle = await item(window, "resizeHandle-pid")
        await drag(window, center(handle), [5, 20, 50, 80])
        await settle(0.2)
        after = {c: width_of(window, c, first) for c in columns}
        assert abs(after["pid"] - (before["pid"] + 80)) <= 1, after
        assert abs(after["tool"] - (before["tool"] - 80)) <= 1, after
        for column in ("status", "runtime", "cpu", "memory", "actions"):
            assert after[column] == before[column], column
        header = await item(window, "header-pid")
        assert header.width() == after["pid"]  # the header follows its column

        # A near miss, 4 px inside the next title, still takes the edge: it
        # resizes, and does not sort by that column.
        edge = header.mapToScene(QPointF(header.width(), header.height() / 2)).toPoint()
        sorted_by = model.sortColumn
        await drag(window, edge + QPoint(4, 0), [-5, -10, -20])
        await settle(0.2)
        assert model.sortColumn == sorted_by
        assert abs(width_of(window, "pid", first) - (after["pid"] - 20)) <= 1

        # As far right as it goes: the command keeps its narrowest, every other
        # column its width, and the table still fits the window.
        await drag(window, center(await item(window, "resizeHandle-pid")), [30, 400, 800])
        await move_mouse_away(window)
        await settle(0.2)
        widest = {c: width_of(window, c, first) for c in columns}
        assert widest["tool"] == MIN_FLEXIBLE_WIDTH
        for column in ("status", "runtime", "actions"):
            assert widest[column] == before[column], column
        narrowest = (ELASTIC_WIDTHS["cpu"][1], ELASTIC_WIDTHS["memory"][1])
        assert (widest["cpu"], widest["memory"]) == narrowest
        assert_table_fits(window, "procTable", model, "PID dragged wide")

        # The window as narrow as every column fits in: the dragged column gives its
        # room back.
        table = await item(window, "procTable")
        resize(window, round(table.property("everyColumnWidth")), 600)
        await settle(0.3)
        assert width_of(window, "pid", first) < widest["pid"]
        assert width_of(window, "tool", first) == MIN_FLEXIBLE_WIDTH
        assert_table_fits(window, "procTable", model, "every column at its narrowest")
        assert list(table.property("autoHiddenColumns")) == []
        # At the window's narrowest, columns go instead; what is left fits.
        resize(window, 0, 0)
        await settle(0.3)
        assert table.property("autoHiddenColumns")
        assert_table_fits(window, "procTable", model, "at the minimum width")

        # A double click on the edge: the automatic width again.
        resize(window, 1100, 600)
        await settle(0.3)
        assert width_of(window, "pid", first) > before["pid"]
        where = center(await item(window, "resizeHandle-pid"))
        await outside_task(
            lambda: QTest.mouseDClick(
                window, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, where
            )
        )
        await settle(0.2)
        assert width_of(window, "pid", first) == before["pid"]

    run(scenario())


@pytest.mark.promise("The window: The process table")
def test_cpu_and_memory_cells_draw_the_rows_on_screen_only(sup: Supervisor, run: Run) -> None:
    calls: list[int] = []
    real = sup.stats

    def counting(proc_id: int) -> ProcStats:
        calls.append(proc_id)
        return real(proc_id)

    sup.stats = counting  # type: ignore[method-assign]

    async def scenario() -> None:
        busy = (await sup.spawn(BUSY, session="t", agent="a")).id
        for _ in range(25):
            await sup.spawn(SLEEPER, session="t", agent="a")
        window = open_proc_window(sup, "t", "a")
        resize(window, 900, 500)
        model = model_of(window)
        await until(lambda: model.rowCount() == 26, what="26 rows")
        # The busy loop is the oldest (the last row): sort by id to show it first.
        model.sortBy("id", False)
        text = await item(window, f"cpuText-{busy}")
        await until(
            lambda: text.property("text").endswith("%") and int(text.property("text")[:-1]) > 10,
            timeout=10,
            what="the busy loop's CPU in its cell",
        )
        spark = await item(window, f"cpuSparkline-{busy}")
        await until(lambda: spark.property("revision") >= 3, what="three samples drawn")
        runs, _last, top = model.sparkline(busy, "cpu")  # type: ignore[misc]
        assert sum(run.size() for run in runs) >= 3 and top >= 100
        assert (await item(window, f"memoryText-{busy}")).property("text").endswith("M")

        # Only the rows on screen were sampled.
        view = table_view(window)
        top, bottom = view.property("topRow"), view.property("bottomRow")
        shown = {model.procIdAt(r) for r in range(top, bottom + 1)}
        assert busy in shown and len(shown) < 26
        # (The output pane's gauges sample the proc that streams, on their own.)
        streaming = window_model(window).streamingProcId
        calls.clear()
        await settle(2.2)
        assert calls and set(calls) - {streaming} <= shown

        # The line is drawn: more than the cell's background shows in its box.
        image = window.grabWindow()
        ratio = image.width() / window.width()
        corner = spark.mapToScene(QPointF(0, 0))
        colours = {
            image.pixel(int((corner.x() + x) * ratio), int((corner.y() + y) * ratio))
            for x in range(int(spark.width()))
            for y in range(int(spark.height()))
        }
        assert len(colours) >= 3
        # The value sits on the row's text line (centred, as every other cell's),
        # over a sparkline as tall as the row allows.
        cell = await item(window, f"cpuCell-{busy}")
        middle = cell.mapToScene(QPointF(0, cell.height() / 2)).y()
        label = text.mapToScene(QPointF(0, text.height() / 2)).y()
        assert abs(label - middle) <= 1
        assert spark.height() >= cell.height() - 10
        assert spark.property("lonePoints") is True

        # Exited: no longer sampled, "–", the line kept and greyed.
        await sup.kill(busy)
        await until_equal(lambda: text.property("text"), "–", what="the exited CPU")
        spark = await item(window, f"cpuSparkline-{busy}")
        assert spark.property("revision") >= 3
        assert spark.property("color") == QColor("#6f737a")  # Theme.textFaint
        assert spark.property("lonePoints") is False  # no stray dot for a last lone sample
        calls.clear()
        await settle(1.2)
        assert busy not in calls or busy == window_model(window).streamingProcId

    run(scenario())


# Holds 2 MB more every half second (pages touched), up to 40 MB, then waits.
GROWS = py(
    """
    import time
    held = []
    for _ in range(20):
        block = bytearray(2_000_000)
        block[::4096] = b"x" * len(range(0, len(block), 4096))
        held.append(block)
        time.sleep(0.5)
    time.sleep(60)
    """
)
# Busy half a second, idle a second, over and over.
WAVES = py(
    """
    import time
    while True:
        start = time.monotonic()
        while time.monotonic() - start < 0.5:
            pass
        time.sleep(1.0)
    """
)


# A picture for people to look at, after a dozen samples on each line (12 s): the
# sampling and the sort themselves are proved by the fast tests above.
@pytest.mark.slow
@pytest.mark.parametrize("size", [(720, 450), (1400, 900)], ids=["720x450", "1400x900"])
def test_screenshot_of_the_stats_columns_sorted_by_cpu(
    sup: Supervisor, run: Run, size: tuple[int, int]
) -> None:
    async def scenario() -> None:
        await sup.spawn(SLEEPER, session="shots", agent="idle")
        await sup.spawn(GROWS, session="shots", agent="builder")
        await sup.spawn(WAVES, session="shots", agent="builder")
        await sup.spawn(BUSY, session="shots", agent="tester")
        done = await sup.spawn(["sleep", "2"], session="shots", agent="tester")
        window = open_proc_window(sup, "shots", "")
        model = model_of(window)
        await until(lambda: model.rowCount() == 5, what="five rows")
        # At the smallest size, as narrow as the stats columns still show in.
        every = (await item(window, "procTable")).property("everyColumnWidth")
        resize(window, max(size[0], round(every)), size[1])
        await settle(0.3)
        await click(window, await item(window, "header-cpu"))
        await click(window, await item(window, "header-cpu"))
        assert (model.sortColumn, model.sortDescending) == ("cpu", True)
        await move_mouse_away(window)
        await sup.wait(done.id)
        await settle(12.0)  # a dozen samples on each line
        path, image = save_screenshot(window, f"procwindow-table-stats-{size[0]}x{size[1]}")
        assert_not_blank(path.name, image)
        # At the smallest size the five rows overflow the table: it scrolls.
        scrolled = size[1] < 600
        assert_table_fits(window, "procTable", model, f"stats at {size}", scrolled=scrolled)

    run(scenario())


def test_a_sort_arrow_never_cuts_a_column_title(sup: Supervisor, run: Run) -> None:
    """Sorted by any column, with every column at its narrowest, and at the window's
    narrowest (the columns without room gone), each title reads in full beside its
    arrow ("RUNTI… ▲" was cut)."""

    async def scenario() -> None:
        await sup.spawn(SLEEPER, session="arrows", agent="a")
        await sup.spawn(SLEEPER, session="arrows", agent="b")
        window = open_proc_window(sup, "arrows", "")  # the session: an Agent column too
        model = model_of(window)
        await until(lambda: model.rowCount() == 2, what="two rows")
        table = await item(window, "procTable")
        # As narrow as every column shows in (each at its narrowest), then the window's
        # minimum width (the columns without room gone).
        for width in (round(table.property("everyColumnWidth")), 0):
            resize(window, width, 0)
            await settle(0.3)
            gone = list(table.property("autoHiddenColumns"))
            assert bool(gone) == (width == 0), gone
            for column in [c for c in model.columnNames if c != "actions" and c not in gone]:
                for descending in (False, True):
                    model.sortBy(column, descending)
                    arrow = await item(window, f"sortIndicator-{column}")
                    await until(lambda arrow=arrow: arrow.isVisible(), what=f"{column}'s arrow")
                    await settle(0.05)
                    title = await item(window, f"headerText-{column}")
                    assert not title.property("truncated"), (column, width, title.width())
        model.sortBy("runtime", False)
        await settle(0.2)
        _path, image = save_screenshot(window, "procwindow-sorted-narrowest")
        assert_not_blank("procwindow-sorted-narrowest", image)

    run(scenario())
