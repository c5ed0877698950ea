"""The output pane reads back, above its first line, the lines its proc wrote before:
``OutputModel.loadEarlier`` over a real supervisor whose ring holds fewer lines
than the proc printed (the rest are read from its log on disk), and over a
RemoteSupervisor whose mirror fetches them from a real `procwindow serve`."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pytestqt.modeltest import ModelTester

from procwindow.control.remote import RemoteSupervisor
from procwindow.core import Proc, Supervisor, SupervisorAPI
from procwindow.qt import OutputModel, OutputRole
from procwindow.qt._pane_texts import PaneFacts, pane_texts
from procwindow.qt.models import _earlier
from tests.core.helpers import until

from .conftest import QRun
from .panes import Pane

pytestmark = pytest.mark.qt_log_level_fail("WARNING")

#: The ring of the supervisor here: a tenth of what the proc prints.
RING = 1_000
LINES = 10_000
#: The pane's cap: the ring's lines, the rest in the log.
MAX = 1_000
#: Lines read back at a time here: not a divisor of anything, so chunks fall anywhere.
CHUNK = 700


@pytest.fixture
def small_ring(qrun: QRun, tmp_path: Path) -> Iterator[Supervisor]:
    """A supervisor whose ring holds RING lines: older ones are on disk only."""
    sup = Supervisor(log_dir=tmp_path / "logs", ring_lines=RING, graceful_timeout=2.0)
    try:
        yield sup
    finally:
        qrun(sup.close())


@pytest.fixture(autouse=True)
def _chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_earlier, "EARLIER_CHUNK", CHUNK)


def printed(sup: SupervisorAPI, qrun: QRun, count: int = LINES) -> Proc:
    """A proc that printed ``line 1`` to ``line {count}`` and exited, all read."""

    async def go() -> Proc:
        p = await sup.spawn(
            ["sh", "-c", f"seq 1 {count} | sed 's/^/line /'"], session="s", agent="a"
        )
        await sup.wait(p.id)
        await until(lambda: sup.get(p.id).last_seq == count, what="every line read")
        return p

    return qrun(go())


def pane_at_tail(sup: Supervisor, qrun: QRun, panes: list[Pane], count: int) -> Pane:
    """A pane (holding MAX) on a proc that printed ``count`` lines, at their tail."""
    p = printed(sup, qrun, count=count)
    pane = Pane(sup, "s", "a")
    panes.append(pane)
    out = pane.output
    out.maxLines = MAX
    qrun(until(lambda: out.procId == p.id and out.lineCount == MAX, what="the tail"))
    return pane


def seqs(model: OutputModel) -> list[int]:
    return [model.data(model.index(r), OutputRole.SEQ) for r in range(model.rowCount())]


def texts(model: OutputModel) -> list[str]:
    return [model.data(model.index(r), OutputRole.TEXT) for r in range(model.rowCount())]


class ViewRows:
    """What a view knows of an OutputModel's rows from its signals alone (the seq
    each row shows): rows come in at the top or the end, and go at the end."""

    def __init__(self, model: OutputModel) -> None:
        self.model = model
        self.seqs = seqs(model)
        model.modelReset.connect(lambda: setattr(self, "seqs", seqs(model)))
        model.rowsInserted.connect(self._inserted)
        model.rowsRemoved.connect(self._removed)
        model.dataChanged.connect(self._changed)

    def _seq(self, row: int) -> int:
        return int(self.model.data(self.model.index(row), OutputRole.SEQ))

    def _inserted(self, _parent: object, first: int, last: int) -> None:
        assert first in (0, len(self.seqs))
        self.seqs[first:first] = [self._seq(r) for r in range(first, last + 1)]

    def _removed(self, _parent: object, first: int, last: int) -> None:
        assert last == len(self.seqs) - 1  # at the end only
        del self.seqs[first:]

    def _changed(self, top: object, bottom: object, _roles: list[int]) -> None:
        first, last = top.row(), bottom.row()  # type: ignore[attr-defined]
        self.seqs[first : last + 1] = [self._seq(r) for r in range(first, last + 1)]


def test_the_top_reads_earlier_lines_back_from_the_log_up_to_the_first(
    small_ring: Supervisor, qrun: QRun, qtmodeltester: ModelTester
) -> None:
    sup = small_ring
    p = printed(sup, qrun)
    # The ring holds the newest RING lines: what is before them is on disk only.
    assert sup.read(p.id, since=LINES - RING - 1, limit=1).lines[0].seq == LINES - RING
    model = OutputModel(sup)
    model.maxLines = MAX
    qtmodeltester.check(model)
    model.procId = p.id
    view = ViewRows(model)
    assert (model.lineCount, model.earlierLines) == (MAX, LINES - MAX)
    assert model.earlier().available
    loaded: list[int] = []
    model.earlierLoaded.connect(loaded.append)

    model.held = True  # the view at its top, not following
    assert model.loadEarlier() == CHUNK
    first = LINES - MAX - CHUNK + 1
    assert seqs(model) == list(range(first, LINES + 1)) == view.seqs
    assert texts(model)[:2] == [f"line {first}", f"line {first + 1}"]
    assert (model.lineCount, model.earlierLines, loaded) == (MAX + CHUNK, first - 1, [CHUNK])
    assert model.data(model.index(0), OutputRole.STREAM) == "stdout"
    assert isinstance(model.data(model.index(0), OutputRole.TIME), float)
    # Up to line 1: past 2 × maxLines held, the newest go to make room; they are
    # not read yet, as lines that wait while the view holds still.
    while model.loadEarlier():
        assert model.lineCount <= 2 * MAX
        assert model.earlierLines == seqs(model)[0] - 1
        assert model.pendingLines == LINES - seqs(model)[-1]
        assert view.seqs == seqs(model)
    assert seqs(model) == list(range(1, 2 * MAX + 1))
    assert texts(model)[0] == "line 1"
    assert (model.earlierLines, model.pendingLines) == (0, LINES - 2 * MAX)
    assert not model.earlier().available and model.loadEarlier() == 0

    # Following again: the tail, as when the proc was selected.
    model.held = False
    assert seqs(model) == list(range(LINES - MAX + 1, LINES + 1)) == view.seqs
    assert (model.earlierLines, model.pendingLines) == (LINES - MAX, 0)


def test_lines_read_back_go_again_once_the_view_follows(small_ring: Supervisor, qrun: QRun) -> None:
    p = printed(small_ring, qrun)
    model = OutputModel(small_ring)
    model.maxLines = MAX
    model.procId = p.id
    view = ViewRows(model)
    shifted: list[int] = []
    model.shifted.connect(shifted.append)
    # While the view follows, a read never drops the newest lines: it takes what fits.
    assert model.loadEarlier() == CHUNK
    assert model.loadEarlier() == MAX - CHUNK
    assert model.loadEarlier() == 0
    assert seqs(model) == list(range(LINES - 2 * MAX + 1, LINES + 1)) == view.seqs
    model.held = True
    model.held = False  # followed again: trimmed from the front, rows shift
    assert shifted == [MAX]
    assert seqs(model) == list(range(LINES - MAX + 1, LINES + 1)) == view.seqs
    assert model.earlierLines == LINES - MAX


def test_a_filter_set_before_applies_to_the_lines_read_back(
    small_ring: Supervisor, qrun: QRun
) -> None:
    p = printed(small_ring, qrun)
    model = OutputModel(small_ring)
    model.maxLines = MAX
    model.procId = p.id
    model.filterText = "77"
    qrun(until(lambda: not model.filtering, what="filtered"))
    view = ViewRows(model)
    current = model.matchCount - 1
    model.currentMatch = current
    current_seq = seqs(model)[current]

    model.held = True
    rows = model.loadEarlier()
    first = LINES - MAX - CHUNK + 1
    expect = [n for n in range(first, LINES + 1) if "77" in f"line {n}"]
    assert seqs(model) == expect == view.seqs
    assert rows == len([n for n in expect if n < LINES - MAX + 1]) > 0
    assert texts(model) == [f"line {n}" for n in expect]
    assert (model.matchCount, model.lineCount) == (len(expect), MAX + CHUNK)
    # The current match stays on its line; copies carry the lines read back.
    assert seqs(model)[model.currentMatch] == current_seq
    assert model.copyRows([0, 1]) == f"line {expect[0]}\nline {expect[1]}"
    assert model.copyAll().splitlines() == [f"line {n}" for n in expect]
    # A filter set afterwards sees them too.
    model.filterText = f"line {first // 100}"
    qrun(until(lambda: not model.filtering, what="filtered again"))
    assert seqs(model) == list(range(first, first // 100 * 100 + 100))


def test_the_pane_says_what_is_left_and_the_selection_stays_on_its_lines(
    small_ring: Supervisor, qrun: QRun, panes: list[Pane]
) -> None:
    pane = pane_at_tail(small_ring, qrun, panes, 3 * MAX)
    w, out = pane.model, pane.output
    assert w.earlierText == f"{2 * MAX:,} earlier lines are not shown here — in the log:"
    assert w.pane.loadEarlierText == "Show earlier"
    w.pressLine(0, False)  # stops following: the rows hold still
    assert (w.selectionStart, out.held) == (0, True)

    assert out.loadEarlier() == CHUNK
    assert (w.selectionStart, w.selectionEnd) == (CHUNK, CHUNK)  # still line 2001
    assert w.earlierText == f"{2 * MAX - CHUNK:,} earlier lines are not shown here — in the log:"
    assert w.lineCountText == f"last {MAX + CHUNK:,} of {3 * MAX:,} lines"
    while out.loadEarlier():
        pass
    assert out.earlierLines == 0 and texts(out)[0] == "line 1"
    assert (w.earlierText, w.pane.loadEarlierText) == ("", "")
    assert w.lineCountText == f"{2 * MAX:,} of {3 * MAX:,} lines"
    w.jumpToLive(False)
    assert out.lineCount == MAX and w.earlierText.startswith(f"{2 * MAX:,} earlier lines")


def test_a_selection_among_the_newest_lines_goes_with_them(
    small_ring: Supervisor, qrun: QRun, panes: list[Pane]
) -> None:
    """Read back past 2 x maxLines, the newest lines go: the selected ones that went
    are no longer selected, and the footer and a copy count only those still there."""
    pane = pane_at_tail(small_ring, qrun, panes, 4 * MAX)
    w, out = pane.model, pane.output
    w.pressLine(MAX // 2, False)
    w.pressLine(MAX - 1, True)  # the newest half
    assert w.pane.selectedText == f"{MAX // 2} selected"
    while out.lineCount + CHUNK <= 2 * MAX:
        assert out.loadEarlier() == CHUNK
    assert w.pane.selectedText == f"{MAX // 2} selected"  # moved down with their lines
    assert out.loadEarlier() == CHUNK  # past the cap: the newest rows go
    assert out.rowCount() == 2 * MAX
    kept = out.rowCount() - w.selectionStart
    assert 0 < kept < MAX // 2, kept  # some of them went, some are left
    assert (w.selectionEnd, w.pane.selectedText) == (out.rowCount() - 1, f"{kept} selected")
    said: list[str] = []
    w.pane.message.connect(lambda text, _error: said.append(text))
    w.pane.copySelection()
    assert said == [f"{kept} lines copied"]


def test_the_texts_of_a_pane_whose_newest_lines_went_for_earlier_ones() -> None:
    facts = PaneFacts(
        proc_id=1,
        lines=2_000,
        matches=8,
        earlier=500,
        loadable=True,
        rewound=True,
        pending=1_000,
        filtered=True,
        following=False,
        logs=("/logs/1.stdout.log",),
    )
    texts = pane_texts(facts)
    # Neither the first lines nor the last: the held ones are named as such.
    assert texts.line_count == "8 of 2,000 held of 3,500 lines"
    assert texts.earlier == "The filter sees 2,000 lines; 500 earlier lines are in the log:"
    assert texts.load_earlier == "Show earlier"
    assert texts.follow == "paused · 1,000 later lines · End to follow"
    assert pane_texts(PaneFacts(proc_id=1, following=False, pending=1)).follow == (
        "paused · 1 new line · End to follow"
    )
    unfiltered = pane_texts(PaneFacts(proc_id=1, lines=2_000, pending=1_000, rewound=True))
    assert (unfiltered.line_count, unfiltered.earlier) == ("2,000 of 3,000 lines", "")
    assert pane_texts(PaneFacts(proc_id=1, lines=9, earlier=3, loadable=False)).load_earlier == ""


def test_a_remote_pane_reads_back_what_its_mirror_fetches(
    remote: RemoteSupervisor, qrun: QRun
) -> None:
    p = printed(remote, qrun, count=5 * MAX)
    model = OutputModel(remote)
    model.maxLines = MAX
    model.procId = p.id
    qrun(until(lambda: model.lineCount == MAX, what="the tail"))
    model.held = True
    # The mirror holds what the pane read: the lines before come from the server's
    # log, fetched in the background; the model reads again when they are here.
    loaded: list[int] = []
    model.earlierLoaded.connect(loaded.append)
    assert model.loadEarlier() == 0 and model.earlier().waiting
    qrun(until(lambda: model.lineCount == MAX + CHUNK, what="the chunk"))
    assert not model.earlier().waiting
    assert seqs(model) == list(range(4 * MAX - CHUNK + 1, 5 * MAX + 1))
    assert loaded[-1] == CHUNK
    while model.earlierLines:
        before = model.earlierLines
        model.loadEarlier()
        qrun(until(lambda b=before: model.earlierLines < b, what="the next chunk"))
    assert seqs(model) == list(range(1, 2 * MAX + 1))


def test_a_chunk_reads_from_disk_well_within_a_frame(
    small_ring: Supervisor, qrun: QRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At the real chunk size, through the model as the view asks for it."""
    p = printed(small_ring, qrun, count=60_000)
    model = OutputModel(small_ring)
    model.procId = p.id
    monkeypatch.setattr(_earlier, "EARLIER_CHUNK", 10_000)
    model.maxLines = 10_000
    model.held = True
    took = []
    for _ in range(4):
        started = time.perf_counter()
        assert model.loadEarlier() == 10_000
        took.append(time.perf_counter() - started)
    assert min(took) < 0.05, took
