"""OutputModel over a real supervisor and real children."""

from __future__ import annotations

import asyncio
import itertools
import re
import time

import pytest
from PySide6.QtCore import QModelIndex
from PySide6.QtGui import QGuiApplication
from pytestqt.modeltest import ModelTester
from pytestqt.qtbot import QtBot

from procwindow.core import Proc, Supervisor
from procwindow.qt import OutputModel, OutputRole
from procwindow.qt.models import _lines, output
from procwindow.qt.models.output import PLAIN_TEXT, RICH_TEXT, STYLED_TEXT
from tests.core.helpers import py, until

from .conftest import QRun

pytestmark = pytest.mark.qt_log_level_fail("WARNING")


def lines_of(model: OutputModel) -> list[str]:
    return [model.data(model.index(r), OutputRole.TEXT) for r in range(model.rowCount())]


def finished(sup: Supervisor, qrun: QRun, code: str) -> Proc:
    """Run ``code`` to the end; every line is in the ring afterwards."""

    async def go() -> Proc:
        p = await sup.spawn(py(code), session="s1", agent="a1")
        await sup.wait(p.id)
        await until(lambda: sup.read(p.id, since=sup.get(p.id).last_seq).eof)
        return p

    return qrun(go())


NUMBERED = """
    for i in range(1, 101):
        print(f"line {i}" if i % 2 else f"\\x1b[31mRED line {i}\\x1b[0m")
    """


def test_loads_the_ring_then_follows_new_lines(
    sup: Supervisor, qrun: QRun, qtmodeltester: ModelTester
) -> None:
    model = OutputModel(sup)
    qtmodeltester.check(model)
    assert (model.procId, model.header, model.rowCount()) == (-1, "Output", 0)

    async def scenario() -> None:
        p = await sup.spawn(
            py(
                """
                import time
                print("first", flush=True)
                time.sleep(30)
                """
            ),
            session="s1",
            agent="a1",
        )
        await until(lambda: sup.read(p.id).lines, what="first line")
        model.procId = p.id
        assert model.header == f"Output of ID {p.id} · PID {p.os_pid}"
        assert lines_of(model) == ["first"]  # loaded at once
        await sup.term(p.id)

    qrun(scenario())


def test_streams_output_of_a_running_proc(
    sup: Supervisor, qrun: QRun, qtmodeltester: ModelTester
) -> None:
    model = OutputModel(sup)
    qtmodeltester.check(model)

    async def scenario() -> None:
        p = await sup.spawn(
            py(
                """
                import fcntl, struct, sys, termios, time
                def drained(f):  # once the supervisor has read it: a set order
                    f.flush()
                    while struct.unpack("i", fcntl.ioctl(f, termios.FIONREAD, b"0000"))[0]:
                        time.sleep(0.001)
                for i in range(30):
                    print("out", i)
                    drained(sys.stdout)
                    if i % 10 == 0:
                        print("err", i, file=sys.stderr)
                        drained(sys.stderr)
                    time.sleep(0.005)
                """
            ),
            session="s1",
            agent="a1",
        )
        model.procId = p.id
        await until(lambda: model.rowCount() == 33, what="all lines")

    qrun(scenario())
    texts = lines_of(model)
    # Each line is written once the one before was read: the order is exact.
    assert texts[:4] == ["out 0", "err 0", "out 1", "out 2"]
    seqs = [model.data(model.index(r), OutputRole.SEQ) for r in range(model.rowCount())]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    row = texts.index("err 10")
    index = model.index(row)
    assert model.data(index, OutputRole.STREAM) == "stderr"
    assert model.data(index, OutputRole.IS_STDERR) is True
    assert model.data(model.index(texts.index("out 10")), OutputRole.IS_STDERR) is False
    assert model.data(index, OutputRole.SPLIT) is False
    assert isinstance(model.data(index, OutputRole.TIME), float)
    assert len(model.data(index, OutputRole.TIME_TEXT)) == len("12:34:56.789")


def test_text_is_stripped_and_styled_is_html(sup: Supervisor, qrun: QRun) -> None:
    p = finished(sup, qrun, NUMBERED)
    model = OutputModel(sup, p.id)
    assert model.rowCount() == model.lineCount == 100
    red = model.index(1)
    assert model.data(red, OutputRole.TEXT) == "RED line 2"
    assert model.data(red) == "RED line 2"
    styled = model.data(red, OutputRole.STYLED)
    assert styled.startswith("<font color=") and "RED line 2" in styled
    model.darkBackground = True
    assert model.data(red, OutputRole.STYLED) != styled


def test_plain_lines_are_shown_as_plain_text_and_the_rest_styled(
    sup: Supervisor, qrun: QRun
) -> None:
    """``shown`` is the line as it came when nothing in it needs styling; escape
    sequences, control characters, tabs, a time or a marked match make it the
    styled HTML (rich text while matches are marked)."""
    lines = ["a <b>plain</b> & line  spaced", "\x1b[31mred\x1b[0m", "bell\x07", "tab\there"]
    p = finished(sup, qrun, f"import sys; sys.stdout.write({chr(10).join(lines) + chr(10)!r})")
    model = OutputModel(sup, p.id)
    assert model.rowCount() == 4

    def looks() -> list[tuple[str, int]]:
        return [
            (
                model.data(model.index(r), OutputRole.SHOWN),
                model.data(model.index(r), OutputRole.SHOWN_FORMAT),
            )
            for r in range(4)
        ]

    styled = [model.data(model.index(r), OutputRole.STYLED) for r in range(4)]
    assert looks() == [
        (lines[0], PLAIN_TEXT),
        (styled[1], STYLED_TEXT),
        (styled[2], STYLED_TEXT),
        (styled[3], STYLED_TEXT),
    ]
    assert styled[3].replace("&nbsp;", " ") == "tab     here"  # expanded to the tab stop
    changed: list[list[int]] = []
    model.dataChanged.connect(lambda _a, _b, roles: changed.append(list(roles)))
    model.showTimes = True
    assert all(
        fmt == STYLED_TEXT and re.search(r"\d\d:\d\d:\d\d\.\d{3}", text) for text, fmt in looks()
    )
    assert changed and OutputRole.SHOWN in changed[-1] and OutputRole.SHOWN_FORMAT in changed[-1]
    model.showTimes = False
    assert looks()[0] == (lines[0], PLAIN_TEXT)
    model.filterText = "e"
    qrun(until(lambda: model.rowCount() == 4 and not model.filtering))
    assert [fmt for _, fmt in looks()] == [RICH_TEXT] * 4
    assert "background-color" in looks()[0][0]
    model.filterText = ""
    qrun(until(lambda: model.rowCount() == 4 and not model.filtering))
    assert looks()[0] == (lines[0], PLAIN_TEXT)
    # Beyond the rows: nothing to show, a format a view can take.
    assert model.data(model.index(7), OutputRole.SHOWN_FORMAT) == PLAIN_TEXT


def test_appends_are_batched_one_insert_per_frame(
    sup: Supervisor, qrun: QRun, qtmodeltester: ModelTester
) -> None:
    model = OutputModel(sup)
    qtmodeltester.check(model)
    inserts: list[tuple[float, int, int]] = []
    model.rowsInserted.connect(
        lambda _parent, first, last: inserts.append((time.monotonic(), first, last))
    )
    total = 30_000

    async def scenario() -> None:
        p = await sup.spawn(
            py(
                f"""
                import sys
                sys.stdout.write("".join(f"flood {{i}}\\n" for i in range({total})))
                """
            ),
            session="s1",
            agent="a1",
        )
        model.procId = p.id
        await until(lambda: model.rowCount() == total, timeout=30, what="the whole flood")

    qrun(scenario())
    assert lines_of(model)[-1] == f"flood {total - 1}"
    # Inserts are contiguous appends, never more often than once per frame.
    for (_, _, last), (_, first, _) in itertools.pairwise(inserts):
        assert first == last + 1
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(inserts)]
    assert all(gap >= (output.FRAME_MS - 2) / 1000 for gap in gaps), gaps
    # The flood arrived in far fewer inserts than lines (or coalesced events).
    assert len(inserts) <= total // 1000


def test_a_flood_is_shown_at_fewer_frames_a_second(sup: Supervisor, qrun: QRun) -> None:
    model = OutputModel(sup)
    model.maxLines = 5_000
    shifts: list[float] = []
    model.shifted.connect(lambda _rows: shifts.append(time.monotonic()))

    async def scenario() -> None:
        # Far more lines a frame than the pane reads in one: a flood.
        p = await sup.spawn(
            py(
                """
                import os
                block = b"flood line\\n" * 100_000
                while True:
                    os.write(1, block)
                """
            ),
            session="s1",
            agent="a1",
        )
        model.procId = p.id
        await until(lambda: len(shifts) >= 10, timeout=30, what="ten frames of a full pane")
        await sup.kill(p.id)
        await sup.wait(p.id)

    qrun(scenario())
    gaps = [b - a for a, b in itertools.pairwise(shifts)]
    assert all(gap >= (output.FLOOD_FRAME_MS - 2) / 1000 for gap in gaps), gaps


def test_ring_cap_drops_the_oldest_lines_and_shifts_the_rows(
    sup: Supervisor, qrun: QRun, qtmodeltester: ModelTester
) -> None:
    p = finished(sup, qrun, "for i in range(1000): print('line', i)")
    model = OutputModel(sup)
    qtmodeltester.check(model)
    model.maxLines = 100
    model.procId = p.id
    assert (model.rowCount(), model.lineCount) == (100, 100)
    assert lines_of(model)[0] == "line 900"
    removed: list[tuple[int, int]] = []
    changed: list[tuple[int, int, list[int]]] = []
    shifted: list[int] = []
    model.rowsRemoved.connect(lambda _p, first, last: removed.append((first, last)))
    model.dataChanged.connect(lambda a, b, roles: changed.append((a.row(), b.row(), list(roles))))
    model.shifted.connect(shifted.append)
    model.maxLines = 10
    # The oldest 90 lines go: no row goes at the front; the ten rows left show
    # the newest lines (every role), and the rows past them go at the end.
    assert (removed, changed, shifted) == ([(10, 99)], [(0, 9, [])], [90])
    assert lines_of(model) == [f"line {i}" for i in range(990, 1000)]


def test_ring_cap_while_following(sup: Supervisor, qrun: QRun, qtmodeltester: ModelTester) -> None:
    model = OutputModel(sup)
    model.maxLines = 50
    qtmodeltester.check(model)

    async def scenario() -> None:
        p = await sup.spawn(
            py(
                """
                import time
                for i in range(300):
                    print("line", i, flush=True)
                    if i % 50 == 0:
                        time.sleep(0.03)
                """
            ),
            session="s1",
            agent="a1",
        )
        model.procId = p.id
        await until(lambda: model.rowCount() and lines_of(model)[-1] == "line 299")

    qrun(scenario())
    assert lines_of(model) == [f"line {i}" for i in range(250, 300)]


def test_filters(sup: Supervisor, qrun: QRun, qtmodeltester: ModelTester, qtbot: QtBot) -> None:
    p = finished(sup, qrun, NUMBERED)
    model = OutputModel(sup, p.id)
    qtmodeltester.check(model)
    assert model.matchCount == 100

    with qtbot.waitSignal(model.matchCountChanged):
        model.filterText = "red"  # case-insensitive by default
    assert model.matchCount == model.rowCount() == 50
    assert model.lineCount == 100
    assert lines_of(model)[0] == "RED line 2"

    model.caseSensitive = True
    assert model.matchCount == 0
    model.filterText = "RED"
    assert model.matchCount == 50

    model.filterText = r"line \d*0$"
    assert model.matchCount == 0  # a substring, not a regex
    model.filterRegex = True
    assert lines_of(model) == [f"RED line {i}" for i in range(10, 101, 10)]
    model.caseSensitive = False
    model.filterText = r"^red line [1-3]$"
    assert lines_of(model) == ["RED line 2"]
    assert model.filterError == ""

    # An invalid regex is reported and leaves the last valid filter in effect.
    with qtbot.waitSignal(model.filterErrorChanged):
        model.filterText = "line ("
    assert "invalid regular expression" in model.filterError
    assert lines_of(model) == ["RED line 2"]
    model.filterText = "line (1|3)$"
    assert model.filterError == ""
    assert lines_of(model) == ["line 1", "line 3"]

    model.filterText = ""
    assert model.matchCount == model.rowCount() == 100


def test_filter_applies_to_new_lines(sup: Supervisor, qrun: QRun) -> None:
    model = OutputModel(sup)
    model.filterText = "keep"

    async def scenario() -> None:
        p = await sup.spawn(
            py(
                """
                import time
                for i in range(20):
                    print("keep" if i % 4 == 0 else "drop", i, flush=True)
                    time.sleep(0.005)
                """
            ),
            session="s1",
            agent="a1",
        )
        model.procId = p.id
        await sup.wait(p.id)
        await until(lambda: model.lineCount == 20)
        await until(lambda: model.matchCount == 5)

    qrun(scenario())
    assert lines_of(model) == [f"keep {i}" for i in range(0, 20, 4)]


def test_a_long_filter_runs_in_slices(
    sup: Supervisor, qrun: QRun, qtmodeltester: ModelTester, monkeypatch: pytest.MonkeyPatch
) -> None:
    p = finished(sup, qrun, "for i in range(5000): print('x' if i % 7 else 'hit', i)")
    model = OutputModel(sup, p.id)
    qtmodeltester.check(model)
    monkeypatch.setattr(output, "FILTER_BUDGET", 0.0)  # one chunk per frame
    monkeypatch.setattr(_lines, "FILTER_CHUNK", 1000)
    inserts: list[int] = []
    model.rowsInserted.connect(lambda _p, first, last: inserts.append(last - first + 1))
    model.filterText = "hit"
    assert model.filtering
    assert model.matchCount == len(range(0, 1000, 7))
    qrun(until(lambda: not model.filtering))
    assert model.matchCount == len(range(0, 5000, 7))
    assert len(inserts) == 4  # the four remaining chunks, one per frame
    assert lines_of(model)[-1] == "hit 4998"


def test_clear_empties_the_view_and_later_lines_still_come(
    sup: Supervisor, qrun: QRun, qtmodeltester: ModelTester
) -> None:
    model = OutputModel(sup)
    qtmodeltester.check(model)

    async def scenario() -> None:
        p = await sup.spawn(
            py(
                """
                import time
                print("before", flush=True)
                time.sleep(0.3)
                print("after", flush=True)
                """
            ),
            session="s1",
            agent="a1",
        )
        model.procId = p.id
        await until(lambda: model.rowCount() == 1)
        model.clear()
        assert (model.rowCount(), model.lineCount) == (0, 0)
        assert [line.text for line in sup.read(p.id).lines] == ["before"]  # the log stays
        await until(lambda: model.rowCount() == 1)
        assert lines_of(model) == ["after"]

    qrun(scenario())


def test_copy_strips_ansi(sup: Supervisor, qrun: QRun, qapp: QGuiApplication) -> None:
    p = finished(sup, qrun, NUMBERED)
    model = OutputModel(sup, p.id)
    everything = model.copyAll()
    assert "\x1b" not in everything
    assert everything.splitlines()[:2] == ["line 1", "RED line 2"]
    assert len(everything.splitlines()) == 100
    assert model.copyRows([3, 1, 1, 500, -2]) == "RED line 2\nRED line 4"
    model.filterText = "RED"
    assert model.copyAll().splitlines() == [f"RED line {i}" for i in range(2, 101, 2)]
    model.copyToClipboard("copied \u2713")
    assert qapp.clipboard().text() == "copied \u2713"


def test_lines_stay_after_dismiss_and_reading_stops(
    sup: Supervisor, qrun: QRun, qloop: asyncio.AbstractEventLoop
) -> None:
    p = finished(sup, qrun, "print('kept')")
    model = OutputModel(sup, p.id)
    qrun(asyncio.sleep(0))
    # A finished proc's output is complete: the model does not subscribe at all.
    assert not [t for t in asyncio.all_tasks(qloop) if "events" in t.get_name() and not t.done()]
    sup.dismiss(p.id)
    qrun(asyncio.sleep(0.05))
    assert lines_of(model) == ["kept"]
    model.procId = -1
    assert (model.rowCount(), model.header) == (0, "Output")
    model.procId = 12345  # unknown: empty, no error
    assert model.rowCount() == 0


def test_unknown_roles_and_rows(sup: Supervisor, qrun: QRun) -> None:
    p = finished(sup, qrun, "print('x')")
    model = OutputModel(sup, p.id)
    assert model.data(model.index(0), 9999) == ""
    assert model.data(QModelIndex(), OutputRole.TEXT) == ""
    assert model.data(model.index(5), OutputRole.SEQ) == ""


def test_a_big_load_is_stripped_lazily_with_the_same_results(
    sup: Supervisor, qrun: QRun, qtmodeltester: ModelTester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An escape code inside a word: only the stripped text contains "abcd".
    p = finished(sup, qrun, r"for i in range(300): print(f'\x1b[1mab\x1b[0mcd {i}')")
    monkeypatch.setattr(_lines, "STRIP_AT_ONCE", 10)  # the 300-line load is "big"
    monkeypatch.setattr(_lines, "FILTER_CHUNK", 64)
    model = OutputModel(sup, p.id)
    qtmodeltester.check(model)
    assert model.data(model.index(299), OutputRole.TEXT) == "abcd 299"  # stripped on demand
    assert model.copyRows([0, 299]) == "abcd 0\nabcd 299"
    model.filterText = "abcd 1"
    qrun(until(lambda: not model.filtering))
    assert model.matchCount == 1 + 10 + 100  # 1, 10–19, 100–199
    assert model.copyAll().splitlines()[:2] == ["abcd 1", "abcd 10"]
    model.filterText = ""
    assert len(model.copyAll().splitlines()) == 300
    assert "\x1b" not in model.copyAll()
