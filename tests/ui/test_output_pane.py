"""The output pane of a ProcWindow, used as a person uses it: long floods, the
filter field and its keys, what the pane no longer holds.

The windows are real (``open_proc_window`` on a real supervisor, offscreen), and
so are the procs. A flood of 20 million lines would take minutes through a
child's pipe; the flood test serves its lines through ``Supervisor.read`` of
one (real, quiet) proc instead, as fast as the pane reads them.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import qasync
from PySide6.QtCore import QPointF, Qt, QUrl
from PySide6.QtGui import QColor, QGuiApplication, QImage
from PySide6.QtQuick import QQuickItem, QQuickWindow
from PySide6.QtTest import QTest

from procwindow.core import Line, ReadBatch, RunBatch, Stream, Supervisor, format_size, runs_of
from procwindow.qt import ProcModel, viewmodel
from procwindow.qt.models import _frames
from procwindow.qt.window import open_proc_window, window_model

from ..tiers import first_fast
from .conftest import Run
from .helpers import (
    click,
    find_item,
    find_items,
    item,
    key,
    move_mouse_away,
    outside_task,
    py,
    save_screenshot,
    settle,
    type_text,
    until,
    until_equal,
    wheel,
)

#: Theme.lineHeight and Theme.stderrMark (the bar at the left of a stderr line).
LINE_HEIGHT = 18
STDERR_MARK = QColor("#e06c75").rgb()
FLOOD_LINES = 20_000_000
FLOOD_CHUNK = 50_000
# Prints a line every 50 ms: its output events keep the pane reading. It
# outlasts the flood test's own timeout (300 s), however slow the machine.
TICKER = py(
    """
    import time
    for i in range(12_000):
        print("tick", i, flush=True)
        time.sleep(0.05)
    """
)
# 40 numbered lines, every fourth an error, then it exits.
LOG = py(
    r"""
    import sys
    for i in range(40):
        if i % 4 == 3:
            print(f"error {i}: disk full", file=sys.stderr, flush=True)
        else:
            print(f"ok {i}: compiled", flush=True)
    """
)


class Flood:
    """Lines of one proc served through ``Supervisor.read`` (and ``read_runs``),
    as many as poured.

    The lines come from a pool (every other one on stderr) three chunks long,
    so the ``maxLines`` (100k) a pane holds are all different; the real reads
    of every other proc go through.
    """

    def __init__(self, sup: Supervisor, pool: int = 3 * FLOOD_CHUNK) -> None:
        self.proc_id = -1
        self._read = sup.read
        self._read_runs = sup.read_runs
        self._pool = [
            Line(i + 1, Stream.STDERR if i % 2 else Stream.STDOUT, 0.0, f"flood line {i + 1}")
            for i in range(pool)
        ]
        self._runs = runs_of(self._pool)  # a line each: the streams alternate
        self._at = 0
        self.left = 0
        self.served = 0

    def pour(self, count: int) -> None:
        self.left += count

    def read(self, proc_id: int, since: int = 0, **kwargs: object) -> ReadBatch:
        if proc_id != self.proc_id:
            return self._read(proc_id, since, **kwargs)  # type: ignore[arg-type]
        limit = kwargs.get("limit")
        count = min(self.left, len(self._pool) - self._at)
        if isinstance(limit, int):
            count = min(count, limit)
        lines = self._pool[self._at : self._at + count]
        self._at = (self._at + count) % len(self._pool)
        self.left -= count
        self.served += count
        return ReadBatch(lines, 0, since + count, False)

    def read_runs(self, proc_id: int, since: int = 0, **kwargs: object) -> RunBatch:
        if proc_id != self.proc_id:
            return self._read_runs(proc_id, since, **kwargs)  # type: ignore[arg-type]
        at = self._at
        batch = self.read(proc_id, since, **kwargs)
        return RunBatch(self._runs[at : at + len(batch)], 0, batch.cursor, False)


def lines_shown(view: QQuickItem) -> list[QQuickItem]:
    """The line delegates inside the view's viewport, top to bottom."""
    top = float(view.property("contentY"))
    bottom = top + float(view.property("height"))
    shown = [
        line
        for line in view.property("contentItem").childItems()
        if line.objectName().startswith("line-")
        and line.isVisible()
        and line.y() + line.height() > top
        and line.y() < bottom
    ]
    return sorted(shown, key=QQuickItem.y)


def mark_runs(image: QImage, view: QQuickItem) -> list[int]:
    """The lengths (px) of the stderr marks and of the gaps between them, down the
    view's left edge as drawn, the first and last (cut by the edges) left out."""
    corner = view.mapToScene(QPointF(1, 0))
    x, top = int(corner.x()), int(corner.y())
    runs: list[int] = []
    previous, length = None, 0
    for y in range(top, top + int(view.height())):
        marked = image.pixel(x, y) == STDERR_MARK
        if marked == previous:
            length += 1
        else:
            if previous is not None:
                runs.append(length)
            previous, length = marked, 1
    return runs[1:]


def shown_at(view: QQuickItem) -> list[tuple[str, float]]:
    """The lines shown and where, in the view."""
    shown = lines_shown(view)
    return [
        (line.property("shown"), round(line.mapToItem(view, QPointF()).y(), 3)) for line in shown
    ]


async def standing_still(view: QQuickItem) -> None:
    """Wait until a scroll (the wheel glides a little) has come to rest."""
    last = None
    while (now := view.property("contentY")) != last or view.property("moving"):
        last = now
        await settle(0.1)


def assert_evenly_spaced(window: QQuickWindow, view: QQuickItem, when: str) -> None:
    shown = lines_shown(view)
    assert len(shown) > 10, f"{when}: {len(shown)} lines shown"
    steps = {b.y() - a.y() for a, b in itertools.pairwise(shown)}
    assert steps == {LINE_HEIGHT}, f"{when}: delegates {LINE_HEIGHT} px apart? {sorted(steps)}"
    # As drawn: the scene graph works in float, where a view far from its origin
    # puts rows at uneven places.
    runs = mark_runs(window.grabWindow(), view)
    assert len(runs) > 10 and set(runs) == {LINE_HEIGHT}, f"{when}: rows drawn {runs}"
    for name in ("contentY", "originY"):
        assert abs(float(view.property(name))) < 2**22, f"{when}: {name} {view.property(name)}"


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_rows_stay_evenly_spaced_through_20_million_lines(
    sup: Supervisor, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    flood = Flood(sup)
    monkeypatch.setattr(sup, "read", flood.read)
    monkeypatch.setattr(sup, "read_runs", flood.read_runs)
    # A frame takes a chunk (2,000 lines at most otherwise): 400 frames, not 10,000.
    monkeypatch.setattr(_frames, "FRAME_READ_LIMIT", FLOOD_CHUNK)
    monkeypatch.setattr(_frames, "FRAME_READ_MIN", FLOOD_CHUNK)

    async def scenario() -> None:
        proc = await sup.spawn(TICKER, session="flood", agent="a")
        flood.proc_id = proc.id
        window = open_proc_window(sup, "flood", "a")
        model = window.property("outputModel")
        await until(lambda: model.procId == proc.id, what="streaming the ticker")
        view = await item(window, "outputView")
        await move_mouse_away(window)

        flood.pour(FLOOD_LINES)
        for checkpoint in range(4_000_000, FLOOD_LINES, 4_000_000):
            await until(lambda c=checkpoint: flood.served >= c, timeout=120, what=f"{checkpoint:,}")
            assert view.property("following") is True
            assert_evenly_spaced(window, view, f"following, at {flood.served:,} lines")
        await until(lambda: flood.left == 0, timeout=120, what="the whole flood read")
        await until(lambda: model.rowCount() == model.maxLines, what="the pane full")
        await settle(0.2)
        assert_evenly_spaced(window, view, "at the end")
        # Following: the last row shows at the bottom.
        assert lines_shown(view)[-1].objectName() == f"line-{model.rowCount() - 1}"

        # Scrolled up, the view holds its rows still while more lines come: they
        # wait in the supervisor until the view follows again.
        model.maxLines = 4 * FLOOD_CHUNK
        await wheel(window, view, 5)
        await until(lambda: view.property("following") is False, what="paused")
        await standing_still(view)
        before = shown_at(view)
        shifts: list[int] = []
        model.shifted.connect(shifts.append)
        flood.pour(3 * FLOOD_CHUNK)
        await settle(0.5)
        assert model.held and shifts == [] and flood.left == 3 * FLOOD_CHUNK
        assert shown_at(view) == before
        assert view.property("following") is False
        assert_evenly_spaced(window, view, "paused, held")
        # End: the lines that waited are read (the rows shift), following again.
        await key(window, Qt.Key.Key_End)
        await until(lambda: flood.left == 0, what="the waiting lines read")
        await settle(0.3)
        assert shifts and view.property("following") is True
        assert_evenly_spaced(window, view, "following again, after the rows shifted")

        # And so it stays once the proc has ended.
        await sup.kill(proc.id)
        await until(lambda: not sup.get(proc.id).output_open, what="the proc gone")
        await key(window, Qt.Key.Key_End)
        await settle(0.3)
        assert view.property("following") is True
        assert_evenly_spaced(window, view, "after the proc ended")

    run(scenario(), timeout=280)


def test_esc_clears_the_filter_then_hands_the_keys_back(sup: Supervisor, run: Run) -> None:
    async def scenario() -> None:
        proc = await sup.spawn(LOG, session="keys", agent="a")
        await sup.wait(proc.id)
        window = open_proc_window(sup, "keys", "a")
        procs = window.property("procModel")
        assert isinstance(procs, ProcModel)
        view = await item(window, "outputView")
        await until(lambda: view.property("count") == 40, what="40 lines")
        field = await item(window, "filterField")
        table = await item(window, "procTable")
        assert window_model(window).currentProcId == proc.id

        await key(window, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
        assert field.hasActiveFocus()
        await type_text(window, "error")
        await until(lambda: view.property("count") == 10, what="10 error lines")
        # Esc clears the filter; the caret stays, for another filter.
        await key(window, Qt.Key.Key_Escape)
        await until(lambda: view.property("count") == 40, what="the filter cleared")
        assert field.property("text") == "" and field.hasActiveFocus()
        # A second Esc gives the keyboard back to the table.
        await key(window, Qt.Key.Key_Escape)
        assert not field.hasActiveFocus() and table.hasActiveFocus()

        # End and Delete are the window's again: back to the tail, dismiss the proc.
        await wheel(window, view, 10)
        await until(lambda: view.property("following") is False, what="scrolled up")
        await key(window, Qt.Key.Key_End)
        assert view.property("following") is True
        await key(window, Qt.Key.Key_Delete)
        await until(lambda: procs.count == 0, what="the exited proc dismissed")

        # Esc in an empty field leaves it at once.
        await key(window, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
        assert field.hasActiveFocus()
        await key(window, Qt.Key.Key_Escape)
        assert not field.hasActiveFocus() and table.hasActiveFocus()

    run(scenario())


def test_the_notice_says_what_the_disk_cap_cut_from_the_log(
    loop: qasync.QEventLoop, tmp_path: Path, run: Run
) -> None:
    """A log cut by log_cap: the notice over the pane says the log keeps its first
    and last lines and how much was cut between them (it used to say every earlier
    line was in the log)."""
    capped = Supervisor(log_dir=tmp_path / "capped", log_cap=64 * 1024)

    async def scenario() -> None:
        proc = await capped.spawn(["seq", "1", "250000"], session="cap", agent="a")
        await capped.wait(proc.id)
        await until(lambda: not capped.get(proc.id).output_open, what="all read")
        p = capped.get(proc.id)
        assert p.cut_lines > 0
        window = open_proc_window(capped, "cap", "a")
        output_model = window.property("outputModel")
        await until(lambda: output_model.lineCount == 100_000, what="the pane full")
        notice = await item(window, "earlierText")
        assert notice.property("text") == (
            "150,000 earlier lines are not shown here — the log keeps the first and last;"
            f" log_cap cut {p.cut_lines:,} lines ({format_size(p.cut_bytes)}) between them"
            " (marked there):"
        )

    try:
        run(scenario())
    finally:
        loop.run_until_complete(capped.close())


def test_lines_the_pane_no_longer_holds_are_named_with_their_log(
    sup: Supervisor, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[QUrl] = []

    class Desktop:
        @staticmethod
        def openUrl(url: QUrl) -> bool:
            opened.append(url)
            return True

    monkeypatch.setattr(viewmodel, "QDesktopServices", Desktop, raising=False)

    async def scenario() -> None:
        proc = await sup.spawn(["seq", "1", "250000"], session="big", agent="a")
        await sup.wait(proc.id)
        log = sup.log_path(proc.id, Stream.STDOUT)
        window = open_proc_window(sup, "big", "a")
        output_model = window.property("outputModel")
        await until(lambda: output_model.lineCount == 100_000, what="the pane full")

        notice = await item(window, "earlierText")
        assert notice.property("text") == "150,000 earlier lines are not shown here — in the log:"
        assert output_model.earlierLines == 150_000
        assert (await item(window, "logText")).property("text") == log
        count = await item(window, "lineCountText")
        assert count.property("text") == "last 100,000 of 250,000 lines"

        # Open log: the desktop opens the file; Copy path: the path on the clipboard.
        await settle(0.2)  # the notice's row laid out
        await click(window, await item(window, "openLogButton"))
        assert opened == [QUrl.fromLocalFile(log)]
        clipboard = QGuiApplication.clipboard()
        clipboard.clear()
        await click(window, await item(window, "copyLogPathButton"))
        await until(lambda: clipboard.text() == log, what="the path copied")
        banner = await item(window, "bannerText")
        assert banner.property("text") == "Log path copied"

        # A filter sees only what the pane holds, and says so.
        await key(window, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
        await type_text(window, "2499")
        await until(
            lambda: output_model.matchCount == 120 and not output_model.filtering, what="2499*"
        )
        await until_equal(
            lambda: notice.property("text"),
            "The filter sees the last 100,000; 150,000 earlier lines are in the log:",
            what="the notice",
        )
        assert count.property("text") == "120 of the last 100,000 lines"

    run(scenario())


def popup_texts(window: QQuickWindow) -> list[str]:
    """The texts of the popups (tooltips, menus) on screen."""
    texts = []
    for popup in find_items(window, ""):
        if popup.metaObject().className() != "QQuickPopupItem":
            continue
        todo = list(popup.childItems())
        while todo:
            child = todo.pop()
            text = child.property("text")
            if child.isVisible() and isinstance(text, str) and text:
                texts.append(text)
            todo.extend(child.childItems())
    return texts


async def hover(window: QQuickWindow, target: QQuickItem) -> None:
    point = target.mapToScene(QPointF(target.width() / 2, target.height() / 2)).toPoint()
    await outside_task(lambda: QTest.mouseMove(window, point))


def test_the_filter_field_and_an_idle_pane(sup: Supervisor, run: Run) -> None:
    async def scenario() -> None:
        # No process: the footer says nothing of following.
        window = open_proc_window(sup, "idle", "a")
        empty = await item(window, "outputEmpty")
        assert empty.property("text").startswith("Select a process")
        await settle(0.2)
        assert find_item(window, "followState") is None

        proc = await sup.spawn(LOG, session="idle", agent="a")
        output_model = window.property("outputModel")
        await until(lambda: output_model.procId == proc.id, what="streaming")
        follow = await item(window, "followState")
        assert follow.property("text") == "● following"

        # The toggles say what they do when hovered (and the field's tip steps aside).
        for name, tip in (("regexToggle", "Regular expression"), ("caseToggle", "Match case")):
            toggle = await item(window, name)
            await hover(window, toggle)
            await until(lambda t=tip: any(s.startswith(t) for s in popup_texts(window)), what=tip)
            assert not any(s.startswith("Filter lines") for s in popup_texts(window))
        await move_mouse_away(window)

        # A long regex stops short of the match count: it scrolls, clipped, inside the field.
        await key(window, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
        await click(window, await item(window, "regexToggle"))
        await type_text(window, r"^(ok|error) (1[0-9]|2[0-9]|3[0-9]): (compiled|disk full)$")
        await until(lambda: output_model.matchCount == 30, what="30 matches")
        field = await item(window, "filterField")
        count = await item(window, "matchCountText")
        assert count.property("text") == "30 matches"
        # (A TextField is a TextInput: its text shows between its paddings.)
        text_end = field.width() - field.property("rightPadding")
        assert text_end < count.mapToItem(field, QPointF()).x(), "the text runs into the count"
        assert field.clip(), "the text is not clipped to its place"

    run(scenario())


@pytest.mark.parametrize("size", first_fast([(700, 450), (1400, 900)], ids=["700x450", "1400x900"]))
# The offscreen platform says so when the minimum width changes.
@pytest.mark.qt_log_ignore("This plugin does not support propagateSizeHints")
def test_screenshots_of_the_notice_and_a_regex_filter(
    sup: Supervisor, run: Run, size: tuple[int, int]
) -> None:
    width, height = size
    name = f"{width}x{height}"

    async def scenario() -> None:
        proc = await sup.spawn(["seq", "1", "250000"], session="shots", agent="a")
        await sup.wait(proc.id)
        window = open_proc_window(sup, "shots", "a")
        # Below the window's minimum width, should it grow: the pane must hold up there too.
        window.setMinimumWidth(min(width, window.minimumWidth()))
        window.resize(width, height)
        output_model = window.property("outputModel")
        await until(lambda: output_model.lineCount == 100_000, what="the pane full")
        await until(lambda: window.width() == width and window.height() == height, what="resized")
        await move_mouse_away(window)
        await settle(0.5)
        save_screenshot(window, f"pane-earlier-{name}")

        await key(window, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
        await type_text(window, r"^(1[0-9]|24)99(0|[5-9])[0-9]$")
        await click(window, await item(window, "regexToggle"))
        await until(lambda: output_model.matchCount == 360, what="1x99[05-9]x, 2499[05-9]x")
        await move_mouse_away(window)
        await settle(0.5)
        save_screenshot(window, f"pane-regex-{name}")
        await hover(window, await item(window, "regexToggle"))
        await until(lambda: popup_texts(window), what="a tooltip")
        await settle(0.3)
        save_screenshot(window, f"pane-regex-tip-{name}")

    run(scenario())
