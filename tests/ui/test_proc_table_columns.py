"""The process table at 700 px, and its column chooser: the actions stay whole, the
columns without room go (the least needed first), a right click on the header hides
or shows one by hand, and the next window of the kind remembers what was hidden,
dragged and sorted (QSettings, in a temporary directory: see ``tests/qt/conftest``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QPointF, Qt
from PySide6.QtQuick import QQuickItem, QQuickWindow

from procwindow.core import Supervisor
from procwindow.qt.table import HIDE_ORDER
from procwindow.qt.table_settings import open_settings
from procwindow.qt.window import open_proc_window

from .conftest import MakeWorkspace, Run
from .helpers import (
    _walk,
    center,
    click,
    find_item,
    item,
    move_mouse_away,
    save_screenshot,
    settle,
    until,
)
from .test_output_pane import hover, popup_texts
from .test_proc_table import BUTTONS, assert_table_fits, model_of
from .test_proc_table_sort import drag, width_of
from .test_proc_window import SLEEPER, STUBBORN
from .test_screenshots import assert_not_blank


def visible_width(window: QQuickWindow, table: str) -> tuple[QQuickItem, float]:
    """The table's view, and the width of it that shows rows (left of a scroll bar)."""
    found = find_item(window, table)
    assert found is not None
    view = next(i for i in _walk(found) if i.objectName() == "procTableView")
    bar = next(i for i in _walk(view) if i.objectName() == "procTableScrollBar")
    overflows = bar.isVisible() and bar.property("size") < 1.0
    return view, view.width() - (bar.width() if overflows else 0.0)


async def open_column_menu(window: QQuickWindow, column: str) -> None:
    """Right-click ``column``'s header: the column chooser."""
    await click(window, await item(window, f"header-{column}"), Qt.MouseButton.RightButton)
    await item(window, "columnMenuItem-tool")
    await settle(0.3)  # the menu's open transition


async def choose(window: QQuickWindow, column: str) -> None:
    """Tick or clear ``column`` in the chooser (opened on the ID header)."""
    await open_column_menu(window, "id")
    await click(window, await item(window, f"columnMenuItem-{column}"))
    await until(lambda: find_item(window, "columnMenuItem-tool") is None, what="menu closed")


@pytest.mark.promise("The window: The process table")
def test_at_700_px_every_action_is_whole_and_the_columns_without_room_go(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run
) -> None:
    async def scenario() -> None:
        stubborn = await sup.spawn(STUBBORN, session="narrow", agent="api")
        await sup.spawn(SLEEPER, session="narrow", agent="worker")
        await sup.spawn(SLEEPER, session="narrow", agent="worker")
        workspace = make_workspace()
        workspace.active_scope.setScope("narrow", "")
        main = workspace.load()
        window = open_proc_window(sup, "narrow", "")  # a session's: an Agent column too
        model = model_of(window)
        await until(lambda: model.rowCount() == 3, what="three rows")
        # The longest status there is, in the Status column.
        await until(lambda: sup.read(stubborn.id).lines, what="the trap set")
        await sup.term(stubborn.id)
        await until(
            lambda: (
                (text := find_item(window, f"statusText-{stubborn.id}")) is not None
                and text.property("text") == "killed (ignored SIGTERM)"
            ),
            what="the escalated status",
        )
        for shown in (main, window):
            assert shown.minimumWidth() <= 700, shown.title()
            shown.resize(700, 450)
        await until(lambda: window.width() == 700 and main.width() == 700, what="700 px")
        await move_mouse_away(window)
        await settle(0.3)

        view, visible = visible_width(window, "procTable")
        for row in range(model.rowCount()):
            proc_id = model.procIdAt(row)
            for button in BUTTONS:
                found = await item(window, f"{button}Button-{proc_id}")
                left = found.mapToItem(view, QPointF(0, 0)).x()
                assert left >= 0 and left + found.width() <= visible, (button, proc_id, left)
        # The Actions title reads whole ("ACTIO" was cut).
        title = await item(window, "headerText-actions")
        assert not title.property("truncated")
        header = await item(window, "header-actions")
        assert header.mapToItem(view, QPointF(header.width(), 0)).x() <= visible + 0.5
        # The output pane's header row: its title whole, its last buttons in the pane.
        assert not (await item(window, "outputHeader")).property("truncated")
        for name in ("filterField", "timesToggle", "copyButton", "clearButton"):
            found = await item(window, name)
            right = found.mapToScene(QPointF(found.width(), 0)).x()
            assert right <= window.width(), (name, right)
        table = await item(window, "procTable")
        gone = list(table.property("autoHiddenColumns"))
        assert gone and set(gone) <= set(HIDE_ORDER[:3]), gone  # Mem, CPU, maybe PID
        assert_table_fits(window, "procTable", model, "a session's ProcWindow at 700 px")
        overview = workspace.overview_model
        await until(lambda: overview.rowCount() == 3, what="the overview on the session")
        assert_table_fits(main, "overviewTable", overview, "the main window at 700 px")

        # The chooser says which columns have no room; the command and the actions stay.
        await open_column_menu(window, "status")
        assert find_item(window, "columnMenuItem-actions") is None
        assert not (await item(window, "columnMenuItem-tool")).isEnabled()
        for column in model.columnNames[:-1]:
            entry = await item(window, f"columnMenuItem-{column}")
            assert entry.property("checked") is True  # none hidden by hand
            assert (entry.property("shortcutText") == "no room") == (column in gone), column
        path, image = save_screenshot(window, "procwindow-columns-700x450")
        assert_not_blank(path.name, image)
        save_screenshot(main, "main-columns-700x450")

    run(scenario())


@pytest.mark.promise("The window: The process table")
def test_a_column_hidden_in_the_chooser_stays_hidden_in_the_next_window(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run, tmp_path: Path
) -> None:
    async def scenario() -> None:
        for _ in range(3):
            await sup.spawn(SLEEPER, session="kept", agent="a")
        window = open_proc_window(sup, "kept", "a")
        window.resize(1400, 900)
        model = model_of(window)
        await until(lambda: model.rowCount() == 3, what="three rows")
        first = model.procIdAt(0)
        await settle(0.3)

        # Hide PID by hand: its cells and header go, the command takes the room.
        tool = width_of(window, "tool", first)
        await open_column_menu(window, "pid")
        assert (await item(window, "columnMenuItem-pid")).property("checked") is True
        await click(window, await item(window, "columnMenuItem-pid"))
        await until(lambda: find_item(window, f"pidCell-{first}") is None, what="PID gone")
        await until(lambda: find_item(window, "header-pid") is None, what="PID's title gone")
        await until(lambda: width_of(window, "tool", first) > tool, what="the command wider")
        # Sort by runtime, longest first; drag the ID column 40 px wider.
        await click(window, await item(window, "header-runtime"))
        await click(window, await item(window, "header-runtime"))
        assert (model.sortColumn, model.sortDescending) == ("runtime", True)
        id_width = width_of(window, "id", first)
        await drag(window, center(await item(window, "resizeHandle-id")), [5, 20, 40])
        await until(lambda: width_of(window, "id", first) == id_width + 40, what="ID wider")
        window.close()
        await until(lambda: not window.isVisible(), what="the window closed")

        # The next ProcWindow (a new one: as after a restart) is as it was left.
        again = open_proc_window(sup, "kept", "a")
        again.resize(1400, 900)
        model = model_of(again)
        await until(lambda: model.rowCount() == 3, what="three rows")
        await settle(0.3)
        first = model.procIdAt(0)
        assert find_item(again, f"pidCell-{first}") is None
        assert find_item(again, "header-pid") is None
        assert (model.sortColumn, model.sortDescending) == ("runtime", True)
        assert width_of(again, "id", first) == id_width + 40
        # Remembered in the temporary directory the tests keep settings in.
        path = Path(open_settings().fileName())
        assert path.is_file() and path.is_relative_to(tmp_path.parent)
        assert "pid" in path.read_text()
        # The main window's overview is another kind of table: it has its own.
        main = make_workspace().load()
        await until(lambda: find_item(main, "header-pid") is not None, what="the overview's PID")

        # Shown again through the chooser: the next window shows it too.
        await choose(again, "pid")
        await until(lambda: find_item(again, f"pidCell-{first}") is not None, what="PID back")
        header = await item(again, "header-pid")
        await until(lambda: header.width() == width_of(again, "pid", first), what="its title")
        assert_table_fits(again, "procTable", model, "PID shown again")
        again.close()
        await until(lambda: not again.isVisible(), what="the window closed")
        third = open_proc_window(sup, "kept", "a")
        await until(lambda: model_of(third).rowCount() == 3, what="three rows")
        await item(third, "header-pid")

    run(scenario())


def test_a_title_too_long_for_its_column_elides_and_shows_whole_on_hover(
    sup: Supervisor, run: Run
) -> None:
    async def scenario() -> None:
        proc = await sup.spawn(SLEEPER, session="tips", agent="a")
        window = open_proc_window(sup, "tips", "a")
        window.resize(1400, 900)
        await item(window, f"runtimeCell-{proc.id}")
        await settle(0.3)
        # The Runtime column dragged as narrow as it goes: its title elides…
        await drag(window, center(await item(window, "resizeHandle-runtime")), [-20, -200])
        title = await item(window, "headerText-runtime")
        await until(lambda: title.property("truncated"), what="the title elided")
        assert title.width() <= (await item(window, "header-runtime")).width()
        # …and the whole of it shows over the header.
        await hover(window, await item(window, "header-runtime"))
        await until(lambda: "Runtime" in popup_texts(window), what="the title's tooltip")
        await move_mouse_away(window)

    run(scenario())
