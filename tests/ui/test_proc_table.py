"""The process table on screen: every column fits, statuses read in full, clicks and
restarts leave what is under the pointer in place, and its controls explain themselves.

The windows are the real QML, sized as a person sizes them, over the demo workspace or
real children; what is checked is where the items are and what they show.
"""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPointF, QRect, Qt
from PySide6.QtGui import QColor, QImage
from PySide6.QtQuick import QQuickItem, QQuickWindow
from PySide6.QtTest import QTest

from procwindow.core import Supervisor
from procwindow.demo import job_argv
from procwindow.qt import ProcModel
from procwindow.qt.table import HIDE_ORDER
from procwindow.qt.window import open_proc_window, window_model

from ..tiers import first_fast
from .conftest import MakeWorkspace, Run
from .helpers import (
    _walk,
    center,
    click,
    find_item,
    item,
    key,
    move_mouse_away,
    outside_task,
    settle,
    until,
    until_equal,
)
from .test_proc_window import SLEEPER, open_from_menu
from .test_screenshots import demo, resize

SIZES = {"700x450": (700, 450), "1024x640": (1024, 640), "1400x900": (1400, 900)}
BUTTONS = ("stream", "term", "kill", "restart", "dismiss")


def model_of(window: QQuickWindow) -> ProcModel:
    model = window.property("procModel")
    assert isinstance(model, ProcModel)
    return model


def assert_table_fits(
    window: QQuickWindow, table: str, model: ProcModel, where: str, *, scrolled: bool = False
) -> None:
    """Every cell of every row (the action buttons too) lies inside the table's visible
    width, left of its scroll bar; no status text is elided. ``scrolled``: only the rows
    on screen (the others have no items), and the scroll bar shows.

    A column the table has no room for is gone (no cell on screen): only those of
    ``HIDE_ORDER``, the first to go first; ID, the command, Status and the actions stay.
    """
    found = find_item(window, table)
    assert found is not None
    hidden = list(found.property("hiddenColumns"))
    gone = list(found.property("autoHiddenColumns"))
    could_go = [c for c in HIDE_ORDER if c in model.columnNames and c not in hidden]
    first_gone = sorted(gone, key=HIDE_ORDER.index)
    assert first_gone == could_go[: len(gone)], f"{where}: {gone} went, not the first of {could_go}"
    # The main window's overview hides its actions (a column 0 px wide).
    columns = [
        c
        for c in model.columnNames
        if c not in hidden and c not in gone and (c != "actions" or found.property("showActions"))
    ]
    assert {"id", "tool", "status"} - set(hidden) <= set(columns), f"{where}: {columns}"
    view = next(i for i in _walk(found) if i.objectName() == "procTableView")
    bar = next(i for i in _walk(view) if i.objectName() == "procTableScrollBar")
    overflows = bar.isVisible() and bar.property("size") < 1.0
    visible = view.width() - (bar.width() if overflows else 0.0)
    assert overflows == scrolled, where
    rows = [
        row
        for row in range(model.rowCount())
        if not scrolled or find_item(window, f"toolCell-{model.procIdAt(row)}") is not None
    ]
    assert rows, where

    def assert_inside(name: str) -> None:
        found = find_item(window, name)
        assert found is not None, f"{where}: {name} is not on screen"
        left = found.mapToItem(view, QPointF(0, 0)).x()
        right = left + found.width()
        assert left >= -0.5 and right <= visible + 0.5, (
            f"{where}: {name} spans {left:.0f}..{right:.0f}, the table shows 0..{visible:.0f}"
        )

    for column in columns:
        assert_inside(f"header-{column}")
    for column in [*hidden, *gone]:
        assert find_item(window, f"header-{column}") is None, f"{where}: {column}'s header"
    for row in rows:
        proc_id = model.procIdAt(row)
        for column in columns:
            assert_inside(f"{column}Cell-{proc_id}")
        for column in [*hidden, *gone]:
            assert find_item(window, f"{column}Cell-{proc_id}") is None, f"{where}: {column}"
        if "actions" in columns:
            for button in BUTTONS:
                assert_inside(f"{button}Button-{proc_id}")
        status = find_item(window, f"statusText-{proc_id}")
        assert status is not None
        text = status.property("text")
        assert not status.property("truncated"), f"{where}: {text!r} is elided"
        assert status.property("implicitWidth") <= status.width() + 0.01, (
            f"{where}: {text!r} needs {status.property('implicitWidth'):.1f} px,"
            f" has {status.width():.1f}"
        )


@pytest.mark.parametrize("size", first_fast(SIZES))
def test_every_column_fits_and_every_status_reads_in_full(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run, size: str
) -> None:
    width, height = SIZES[size]

    async def scenario() -> None:
        workspace, procs = await demo(sup, make_workspace)
        main = workspace.main_window
        assert main is not None
        await until(lambda: find_item(main, "sessionNode-webapp") is not None, what="the tree")

        # The session-wide ProcWindow (an Agent column), as the issue opened it.
        window = await open_from_menu(main, "sessionNode-webapp")
        assert model_of(window).columnNames[:3] == ["id", "pid", "agent"]
        # The longest statuses: the server ignores SIGTERM, the test run failed.
        server = next(p for p in procs if p.argv == tuple(job_argv("server")))
        await until(lambda: sup.read(server.id).lines, what="the server's trap set")
        await sup.term(server.id)
        await until_equal(
            lambda: find_item(window, f"statusText-{server.id}").property("text"),
            "killed (ignored SIGTERM)",
            what="the escalated status",
        )
        for shown in (main, window):
            resize(shown, width, height)
        await move_mouse_away(window)
        await settle(0.3)
        overview = workspace.overview_model
        assert_table_fits(window, "procTable", model_of(window), f"session window at {size}")
        assert_table_fits(main, "overviewTable", overview, f"main window at {size}")
        # And an agent's ProcWindow at the same size.
        window.close()
        await click(main, await item(main, "agentNode-webapp-builder"))
        agent_window = workspace.openProcWindow("webapp", "builder")
        resize(agent_window, width, height)
        assert isinstance(agent_window, QQuickWindow)
        await until(lambda: model_of(agent_window).rowCount() == 2)
        await until(lambda: overview.agent == "builder")
        await settle(0.3)
        where = f"at {size}"
        assert_table_fits(
            agent_window, "procTable", model_of(agent_window), "agent window " + where
        )
        assert_table_fits(main, "overviewTable", overview, "main window, one agent, " + where)

    run(scenario(), timeout=90)


def test_the_actions_stay_left_of_the_scroll_bar(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run
) -> None:
    async def scenario() -> None:
        for agent in ("a", "b") * 6:
            await sup.spawn(SLEEPER, session="many", agent=agent)
        main = make_workspace().load()
        window = await open_from_menu(main, "sessionNode-many")
        resize(window, 700, 450)
        await until(lambda: model_of(window).rowCount() == 12, what="twelve rows")
        await settle(0.3)
        assert_table_fits(window, "procTable", model_of(window), "scrolled", scrolled=True)

    run(scenario())


async def open_three(
    sup: Supervisor, make_workspace: MakeWorkspace
) -> tuple[QQuickWindow, list[int]]:
    ids = [(await sup.spawn(SLEEPER, session="t", agent="a")).id for _ in range(3)]
    main = make_workspace().load()
    window = await open_from_menu(main, "agentNode-t-a")
    model = model_of(window)
    await until(lambda: model.rowCount() == 3, what="three rows")
    await settle(0.2)
    return window, ids


def test_a_click_on_a_row_shows_its_output(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run
) -> None:
    async def scenario() -> None:
        window, (first, second, third) = await open_three(sup, make_workspace)
        output = window.property("outputModel")
        await until(lambda: output.procId == third, what="the newest streaming")
        # One click anywhere on a row: current, and its output shows.
        await click(window, await item(window, f"toolCell-{first}"))
        assert window_model(window).currentProcId == first
        await until(lambda: output.procId == first, what="the clicked row's output")
        await click(window, await item(window, f"runtimeCell-{second}"))
        await until(lambda: output.procId == second, what="the next one's")

    run(scenario())


def test_restart_leaves_the_rows_under_the_pointer_and_streams_the_new_proc(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run
) -> None:
    async def scenario() -> None:
        window, (first, second, third) = await open_three(sup, make_workspace)
        model = model_of(window)
        output = window.property("outputModel")
        button = await item(window, f"restartButton-{second}")
        assert button.property("toolTipText").endswith("Ctrl+R")
        spot = center(button)
        above = center(await item(window, f"restartButton-{third}"))

        # ⟳ on the middle row: the new proc takes that row, the rows above stay put.
        await click(window, button)
        await until(lambda: model.rowCount() == 4, what="the restart's row")
        new = model.procIdAt(1)
        assert [model.procIdAt(r) for r in range(4)] == [third, new, second, first]
        assert new > third
        await settle(0.2)
        assert center(await item(window, f"restartButton-{new}")) == spot
        assert center(await item(window, f"restartButton-{third}")) == above
        await until(lambda: output.procId == new, what="the new proc streaming")
        assert window_model(window).currentProcId == new

        # A second click on the same spot restarts the same command again, in place.
        await click(window, await item(window, f"restartButton-{new}"))
        await until(lambda: model.rowCount() == 5, what="restarted again")
        newest = model.procIdAt(1)
        assert [model.procIdAt(r) for r in range(5)] == [third, newest, new, second, first]
        await settle(0.2)  # the view lays the rows out at its next frame
        assert center(await item(window, f"restartButton-{newest}")) == spot
        await until(lambda: output.procId == newest, what="streaming it")

        # Ctrl+R restarts the current proc the same way.
        await click(window, await item(window, f"toolCell-{first}"))
        await key(window, Qt.Key.Key_R, Qt.KeyboardModifier.ControlModifier)
        await until(lambda: model.rowCount() == 6, what="restarted from the keyboard")
        assert model.procIdAt(4) > newest and model.procIdAt(5) == first
        await until(lambda: output.procId == model.procIdAt(4), what="streaming it")

    run(scenario())


def brightest(image: QImage, window: QQuickWindow, target: QQuickItem) -> int:
    """The highest lightness of the pixels of ``target`` in a grab of ``window``."""
    ratio = image.width() / window.width()
    corner = target.mapToScene(QPointF(0, 0))
    rect = QRect(
        int(corner.x() * ratio),
        int(corner.y() * ratio),
        int(target.width() * ratio),
        int(target.height() * ratio),
    )
    return max(
        QColor(image.pixel(x, y)).lightness()
        for x in range(rect.left(), rect.right())
        for y in range(rect.top(), rect.bottom())
    )


def test_the_command_has_a_tooltip_and_disabled_actions_look_disabled(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run
) -> None:
    async def scenario() -> None:
        command = " ".join(SLEEPER) + " --and a long tail that the cell cannot show"
        proc = await sup.spawn(["sh", "-c", "exec sleep 60", command], session="t", agent="a")
        main = make_workspace().load()
        window = await open_from_menu(main, "agentNode-t-a")
        cell = await item(window, f"toolCell-{proc.id}")
        full = sup.get(proc.id).cmd
        assert cell.property("toolTipText") == full

        # Hovering the command shows it whole.
        where = center(cell)
        await outside_task(lambda: QTest.mouseMove(window, where))

        def tooltip_shown() -> bool:
            return any(
                i.isVisible() and i.property("text") == full and not cell.isAncestorOf(i)
                for i in _walk(window.contentItem())
            )

        await until(tooltip_shown, what="the command's tooltip")

        # A running proc: Term is enabled, Dismiss is not, and looks it.
        await move_mouse_away(window)
        term = await item(window, f"termButton-{proc.id}")
        dismiss = await item(window, f"dismissButton-{proc.id}")
        assert term.isEnabled() and not dismiss.isEnabled()
        assert term.property("opacity") == 1.0
        assert dismiss.property("opacity") <= 0.5
        await settle(0.3)
        image = window.grabWindow()
        lit, dim = brightest(image, window, term), brightest(image, window, dismiss)
        assert dim < lit * 0.6, f"disabled icon lightness {dim} vs enabled {lit}"

    run(scenario())


def test_a_row_shows_procwindows_id_and_the_kernels_pid_each_under_its_name(
    sup: Supervisor, run: Run
) -> None:
    """ID is procwindow's id, PID the kernel's (what ps and top show): a row can be
    matched with them; the output pane names both."""

    async def scenario() -> None:
        first = await sup.spawn(SLEEPER, session="ids", agent="a")
        second = await sup.spawn(SLEEPER, session="ids", agent="a")
        window = open_proc_window(sup, "ids", "a")
        model = model_of(window)
        await until(lambda: model.rowCount() == 2, what="two rows")
        assert (await item(window, "headerText-id")).property("text") == "ID"
        assert (await item(window, "headerText-pid")).property("text") == "PID"
        for p in (first, second):
            assert (await item(window, f"idCell-{p.id}")).property("display") == str(p.id)
            pid_cell = await item(window, f"pidCell-{p.id}")
            assert pid_cell.property("display") == str(p.os_pid)
            with open(f"/proc/{p.os_pid}/cmdline", "rb") as f:  # the kernel's own
                assert f.read().split(b"\0")[0] == SLEEPER[0].encode()
        window_model(window).stream(second.id)
        header = await item(window, "outputHeader")
        await until_equal(
            lambda: header.property("text"),
            f"Output of ID {second.id} · PID {second.os_pid}",
            what="the pane's header",
        )

    run(scenario())
