"""The output pane's matches and times, used as a person uses them: a filter
typed into the real field marks its matches, Enter and Shift+Enter (and F3) go
from one to the next with the view centred on it, the times toggle shows when
each line arrived and copies keep them. Real windows, real children."""

from __future__ import annotations

import re
import sys

import pytest
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QColor, QGuiApplication, QImage
from PySide6.QtQuick import QQuickItem, QQuickWindow

from procwindow.core import Supervisor
from procwindow.qt.models.output import PLAIN_TEXT, RICH_TEXT, STYLED_TEXT
from procwindow.qt.window import open_proc_window, window_model

from .conftest import Run
from .helpers import click, item, key, move_mouse_away, py, settle, type_text, until, until_equal

LINE_HEIGHT = 18
#: Theme.outputBackground, Theme.match and Theme.matchCurrent.
BACKGROUND = QColor("#1b1c1f")
MATCH = QColor("#6bd4a017")
CURRENT = QColor("#c2e8780c")
# 300 lines; every tenth has the word twice (so 30 matching lines).
NEEDLES = py(
    """
    for i in range(300):
        print(f"line {i:03d} needle <x> & NEEDLE" if i % 10 == 5 else f"line {i:03d} hay")
    """
)
TIME = re.compile(r"^\d\d:\d\d:\d\d\.\d\d\d ")
COPY_ALL = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier


def blended(color: QColor) -> tuple[int, int, int]:
    """``color`` drawn over the pane's background."""
    a = color.alphaF()
    return tuple(  # type: ignore[return-value]
        round(a * c + (1 - a) * b)
        for c, b in zip(
            (color.red(), color.green(), color.blue()),
            (BACKGROUND.red(), BACKGROUND.green(), BACKGROUND.blue()),
            strict=True,
        )
    )


def painted(image: QImage, line: QQuickItem, color: QColor) -> int:
    """Pixels of ``line``'s band (as drawn) in ``color`` blended on the background."""
    want = blended(color)
    top = line.mapToScene(QPointF(0, 0))
    count = 0
    for y in range(int(top.y()) + 2, int(top.y() + LINE_HEIGHT) - 2):
        for x in range(int(top.x()), min(image.width(), int(top.x()) + 600)):
            pixel = image.pixelColor(x, y)
            got = (pixel.red(), pixel.green(), pixel.blue())
            if all(abs(g - w) <= 3 for g, w in zip(got, want, strict=True)):
                count += 1
    return count


def row_item(view: QQuickItem, row: int) -> QQuickItem:
    found = [
        i
        for i in view.property("contentItem").childItems()
        if i.objectName() == f"line-{row}" and i.isVisible()
    ]
    assert found, f"line-{row} not made"
    return found[0]


def offset_from_centre(view: QQuickItem, row: int) -> float:
    """How far (px) row ``row``'s middle is from the middle of the view."""
    line = row_item(view, row)
    middle = line.mapToItem(view, QPointF(0, LINE_HEIGHT / 2)).y()
    return abs(middle - view.height() / 2)


async def open_filtered(sup: Supervisor, session: str) -> tuple[QQuickWindow, QQuickItem]:
    proc = await sup.spawn(NEEDLES, session=session, agent="a")
    await sup.wait(proc.id)
    window = open_proc_window(sup, session, "a")
    view = await item(window, "outputView")
    await until(lambda: view.property("count") == 300, what="300 lines")
    await move_mouse_away(window)
    await key(window, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    await type_text(window, "needle")
    await until(lambda: view.property("count") == 30, what="30 matching lines")
    return window, view


@pytest.mark.promise("The window: The output pane")
def test_enter_goes_from_match_to_match_centred(sup: Supervisor, run: Run) -> None:
    async def scenario() -> None:
        window, view = await open_filtered(sup, "find")
        model = window_model(window)
        out = model.outputModel
        field = await item(window, "filterField")
        count = await item(window, "matchCountText")
        assert field.hasActiveFocus()
        assert count.property("text") == "30 matches"
        assert model.following

        # Both words of a line are marked, in the match colour; the line reads as before.
        await settle(0.2)
        last = row_item(view, 29)
        assert "needle &lt;x&gt; &amp; NEEDLE" in plain(last)  # escaped
        image = window.grabWindow()
        assert painted(image, last, MATCH) > 100, "the matches of the last line, marked"
        assert painted(image, last, CURRENT) == 0

        # Enter: the first match; then on. The view stops following and centres it.
        for expected in range(1, 17):
            await key(window, Qt.Key.Key_Return)
            await until_equal(lambda: out.currentMatch, expected - 1, what="the current match")
        await until_equal(lambda: count.property("text"), "16 of 30", what="the count")
        assert not model.following and field.hasActiveFocus()
        await settle(0.2)
        assert offset_from_centre(view, 15) <= LINE_HEIGHT, "centred"
        image = window.grabWindow()
        assert painted(image, row_item(view, 15), CURRENT) > 100, "the current match, stronger"
        assert painted(image, row_item(view, 15), MATCH) == 0
        assert painted(image, row_item(view, 14), MATCH) > 100
        assert (await item(window, "currentMatchMark")).parentItem() is row_item(view, 15)

        # Shift+Enter goes back; past the first, to the last (the view's end).
        await key(window, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
        await until_equal(lambda: out.currentMatch, 14, what="back one")
        await settle(0.2)
        assert offset_from_centre(view, 14) <= LINE_HEIGHT
        out.currentMatch = 0
        await key(window, Qt.Key.Key_Enter, Qt.KeyboardModifier.ShiftModifier)  # the keypad's
        await until_equal(lambda: count.property("text"), "30 of 30", what="wrapped to the last")
        await settle(0.2)
        assert view.property("atYEnd")  # as close to the middle as the end lets it
        await key(window, Qt.Key.Key_Return)
        await until_equal(lambda: out.currentMatch, 0, what="wrapped to the first")
        await settle(0.2)
        assert view.property("atYBeginning")

        # F3 and Shift+F3 do the same from anywhere in the window (the lines here).
        await click(window, row_item(view, 3), at=QPointF(30, 5))
        await key(window, Qt.Key.Key_F3)
        await until_equal(lambda: out.currentMatch, 1, what="F3")
        await key(window, Qt.Key.Key_F3, Qt.KeyboardModifier.ShiftModifier)
        await until_equal(lambda: out.currentMatch, 0, what="Shift+F3")

        # End follows again; a new filter has no current match.
        await key(window, Qt.Key.Key_End)
        assert model.following
        await key(window, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
        await type_text(window, "NEEDLE")
        await until_equal(lambda: count.property("text"), "30 matches", what="a new filter")
        assert out.currentMatch == -1

    run(scenario())


def test_regex_and_case_marks_and_esc_as_before(sup: Supervisor, run: Run) -> None:
    async def scenario() -> None:
        window, view = await open_filtered(sup, "regex")
        out = window_model(window).outputModel
        await click(window, await item(window, "regexToggle"))
        await click(window, await item(window, "caseToggle"))
        field = await item(window, "filterField")
        await click(window, field)
        await key(window, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
        await type_text(window, "NE+DLE")
        await until(lambda: view.property("count") == 30, what="filtered by the regex")
        await settle(0.2)
        found = row_item(view, 29)
        styled = found.property("shown")
        marks = re.findall(r'background-color:#[0-9a-f]{8}">(.*?)</span>', styled)
        assert marks == ["NEEDLE"]  # case: not "needle"
        assert found.property("shownFormat") == RICH_TEXT  # backgrounds need rich text
        await key(window, Qt.Key.Key_Return)
        await until_equal(lambda: out.currentMatch, 0, what="the first")
        # Esc still clears the filter first, then hands the keys back to the table.
        await key(window, Qt.Key.Key_Escape)
        await until(lambda: view.property("count") == 300, what="the filter cleared")
        assert field.hasActiveFocus() and out.currentMatch == -1
        await key(window, Qt.Key.Key_Escape)
        assert (await item(window, "procTable")).hasActiveFocus()

    run(scenario())


@pytest.mark.promise("The window: The output pane")
def test_the_times_toggle_shows_when_lines_arrived_and_copies_them(
    sup: Supervisor, run: Run
) -> None:
    async def scenario() -> None:
        proc = await sup.spawn(["seq", "1", "5"], session="times", agent="a")
        await sup.wait(proc.id)
        window = open_proc_window(sup, "times", "a")
        view = await item(window, "outputView")
        await until(lambda: view.property("count") == 5, what="5 lines")
        toggle = await item(window, "timesToggle")
        await settle(0.2)  # laid out: the toggle is where it shows
        assert toggle.property("toolTipText") == "Show the time each line arrived"
        assert not toggle.property("checked")
        first = row_item(view, 0)
        assert (first.property("shown"), first.property("shownFormat")) == ("1", PLAIN_TEXT)
        width_before = view.property("contentWidth")

        await click(window, toggle)
        assert toggle.property("checked")
        await until(lambda: TIME.match(plain(row_item(view, 0))), what="times shown")
        assert row_item(view, 0).property("shownFormat") == STYLED_TEXT
        assert [plain(row_item(view, r))[13:] for r in range(5)] == ["1", "2", "3", "4", "5"]
        await settle(0.1)
        assert view.property("contentWidth") >= width_before
        clipboard = QGuiApplication.clipboard()
        clipboard.clear()
        await key(window, Qt.Key.Key_C, COPY_ALL)
        await until(lambda: len(clipboard.text().splitlines()) == 5, what="copied")
        assert all(TIME.match(c) for c in clipboard.text().splitlines())

        await click(window, toggle)
        await until(lambda: row_item(view, 0).property("shown") == "1", what="times hidden")
        assert row_item(view, 0).property("shownFormat") == PLAIN_TEXT
        await key(window, Qt.Key.Key_C, COPY_ALL)
        await until(lambda: clipboard.text() == "1\n2\n3\n4\n5", what="copied without times")

    run(scenario())


def plain(line: QQuickItem) -> str:
    return re.sub(r"<[^>]+>", "", line.property("shown")).replace("&nbsp;", " ")


def test_a_plain_line_is_drawn_as_its_styled_twin(sup: Supervisor, run: Run) -> None:
    """Lines with nothing to style are drawn as plain text, the others as styled
    text: the same characters look the same either way (runs of spaces, a
    leading space, characters HTML would take for markup)."""
    text = "  lead  <b>not bold</b> &amp; a   b"

    async def scenario() -> None:
        # The twin carries an escape sequence that changes nothing but its format.
        code = f"print({text!r}); print('\\x1b[0m' + {text!r})"
        proc = await sup.spawn([sys.executable, "-c", code], session="look", agent="a")
        await sup.wait(proc.id)
        window = open_proc_window(sup, "look", "a")
        view = await item(window, "outputView")
        await until(lambda: view.property("count") == 2, what="2 lines")
        await settle(0.2)
        plain, styled = row_item(view, 0), row_item(view, 1)
        assert (plain.property("shown"), plain.property("shownFormat")) == (text, PLAIN_TEXT)
        assert styled.property("shownFormat") == STYLED_TEXT
        shot = window.grabWindow()
        first, second = (
            shot.copy(row.mapRectToScene(row.boundingRect()).toAlignedRect())
            for row in (plain, styled)
        )
        assert first.size() == second.size()
        assert first == second

    run(scenario())
