"""The output pane, scrolled to its top, reads the lines before back from the log on
disk, as a person scrolls: the wheel, Home, PgUp, the notice's button. The window
is real (``open_proc_window``, offscreen), so is the supervisor, whose ring holds
a fifth of what the proc printed, so is the proc."""

from __future__ import annotations

from pathlib import Path

import pytest
import qasync
from PySide6.QtCore import QObject, QPointF, Qt
from PySide6.QtQuick import QQuickItem, QQuickWindow

from procwindow.core import Supervisor
from procwindow.qt.models import _earlier
from procwindow.qt.window import open_proc_window

from .conftest import GRACEFUL_TIMEOUT, Run
from .helpers import (
    click,
    find_item,
    item,
    key,
    move_mouse_away,
    save_screenshot,
    settle,
    until,
    wheel,
)
from .test_output_pane import lines_shown, standing_still

#: What the proc prints, the ring's size and the pane's cap.
LINES = 5_000
RING = 1_000
MAX = 1_000


def top_line(view: QQuickItem) -> tuple[str, float]:
    """The text of the first line shown, and how far its top is above the view's."""
    first = lines_shown(view)[0]
    return first.property("shown"), round(-first.mapToItem(view, QPointF()).y(), 1)


async def opened(small: Supervisor, session: str) -> tuple[QQuickWindow, QObject]:
    """A proc of ``session`` that printed LINES lines, all read, shown in a ProcWindow
    whose pane holds MAX: (the window, its output model)."""
    proc = await small.spawn(
        ["sh", "-c", f"seq 1 {LINES} | sed 's/^/line /'"], session=session, agent="a"
    )
    await small.wait(proc.id)
    await until(lambda: small.get(proc.id).last_seq == LINES, what="every line read")
    window = open_proc_window(small, session, "a")
    model = window.property("outputModel")
    await until(lambda: model.procId == proc.id, what="streaming")
    model.maxLines = MAX
    return window, model


@pytest.mark.promise("The window: The output pane")
def test_scrolling_to_the_top_reads_earlier_lines_back_and_the_view_stays(
    loop: qasync.QEventLoop, tmp_path: Path, run: Run
) -> None:
    small = Supervisor(
        log_dir=tmp_path / "logs", ring_lines=RING, graceful_timeout=GRACEFUL_TIMEOUT
    )

    async def scenario() -> None:
        window, model = await opened(small, "top")
        view = await item(window, "outputView")
        notice = await item(window, "earlierText")
        await until(lambda: model.lineCount == MAX, what="the pane at its cap")
        await move_mouse_away(window)
        await settle(0.2)
        chunk = min(_earlier.EARLIER_CHUNK, MAX)
        assert notice.property("text") == "4,000 earlier lines are not shown here — in the log:"

        # The wheel, up to the top: the chunk before comes in above, and the view
        # stays on the line that was at its top.
        while model.lineCount == MAX:
            await wheel(window, view, 15)
            await settle(0.05)
        await standing_still(view)
        assert view.property("following") is False
        assert model.lineCount == MAX + chunk
        assert top_line(view) == ("line 4001", 0.0)
        assert model.data(model.index(0), 0) == f"line {4001 - chunk}"
        assert notice.property("text") == (
            f"{4000 - chunk:,} earlier lines are not shown here — in the log:"
        )
        save_screenshot(window, "pane-read-back")

        # Home (the lines have the keys once one is clicked): to the top, and the
        # chunk before that; again and again, up to line 1. The pane holds
        # 2 × maxLines at most: the newest lines go to make room.
        await click(window, lines_shown(view)[0])
        assert top_line(view) == ("line 4001", 0.0)
        shown_first = f"line {4001 - chunk}"
        while model.earlierLines:
            await key(window, Qt.Key.Key_Home)
            await standing_still(view)
            assert top_line(view) == (shown_first, 0.0)
            assert model.lineCount <= 2 * MAX
            shown_first = model.data(model.index(0), 0)
        assert shown_first == "line 1"
        await key(window, Qt.Key.Key_Home)
        await standing_still(view)
        assert top_line(view) == ("line 1", 0.0)
        assert find_item(window, "earlierNotice") is None  # every line held: no notice
        count = await item(window, "lineCountText")
        assert count.property("text") == f"{2 * MAX:,} of {LINES:,} lines"

        # End: the live tail again, without the lines read back.
        await key(window, Qt.Key.Key_End)
        await until(lambda: model.lineCount == MAX, what="the tail again")
        await standing_still(view)
        assert lines_shown(view)[-1].property("shown") == f"line {LINES}"
        assert view.property("following") is True

    try:
        run(scenario())
    finally:
        loop.run_until_complete(small.close())


def test_the_notice_reads_earlier_lines_back_where_a_filter_shows_few(
    loop: qasync.QEventLoop, tmp_path: Path, run: Run
) -> None:
    """A filter that leaves a few rows: the view cannot scroll; the notice's button
    reads the lines before back, and the filter applies to them."""
    small = Supervisor(
        log_dir=tmp_path / "logs", ring_lines=RING, graceful_timeout=GRACEFUL_TIMEOUT
    )

    async def scenario() -> None:
        window, model = await opened(small, "few")
        model.filterText = "77"
        await until(lambda: model.lineCount == MAX and not model.filtering, what="filtered")
        shown = [model.data(model.index(r), 0) for r in range(model.rowCount())]
        assert shown[0] == "line 4077"
        button = await item(window, "loadEarlierButton")
        assert button.property("text") == "Show earlier"
        await settle(0.2)
        await click(window, button)
        chunk = min(_earlier.EARLIER_CHUNK, MAX)
        await until(lambda: model.lineCount == MAX + chunk, what="the chunk read back")
        first = LINES - MAX - chunk + 1
        expect = [f"line {n}" for n in range(first, LINES + 1) if "77" in str(n)]
        assert [model.data(model.index(r), 0) for r in range(model.rowCount())] == expect
        view = await item(window, "outputView")
        await standing_still(view)
        assert view.property("following") is False

    try:
        run(scenario())
    finally:
        loop.run_until_complete(small.close())
