"""The output pane without a window: the OutputModel's shifting rows and what it no
longer holds, and the ProcWindowModel's decisions about them (texts, Esc, the
log, where the view goes), over a real supervisor and real children."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QUrl
from PySide6.QtGui import QGuiApplication
from pytestqt.modeltest import ModelTester

from procwindow.core import Stream, Supervisor
from procwindow.qt import (
    OutputModel,
    OutputRole,
    viewmodel,
)
from tests.core.helpers import py, until

from .conftest import QRun
from .panes import Pane

pytestmark = pytest.mark.qt_log_level_fail("WARNING")

# 1,000 numbered lines in bursts of 50, then a pause: the pane trims as it follows.
BURSTS = py(
    """
    import time
    for i in range(1000):
        print("line", i, flush=True)
        if i % 50 == 49:
            time.sleep(0.06)
    time.sleep(30)
    """
)


def texts(model: OutputModel) -> list[str]:
    return [model.data(model.index(r), OutputRole.TEXT) for r in range(model.rowCount())]


class RowMirror:
    """What a view knows of an OutputModel's rows, from its signals alone: the
    seq each row shows. It checks the rules of the row signals as they come."""

    def __init__(self, model: OutputModel) -> None:
        self.model = model
        self.seqs: list[int] = []
        self.before: list[int] | None = None  # the rows before a dataChanged
        self.events: list[str] = []
        self.shifted = 0
        model.modelReset.connect(self._reset)
        model.rowsInserted.connect(self._inserted)
        model.rowsRemoved.connect(self._removed)
        model.dataChanged.connect(self._changed)
        model.shifted.connect(self._shifted)

    def _seq(self, row: int) -> int:
        return int(self.model.data(self.model.index(row), OutputRole.SEQ))

    def _reset(self) -> None:
        self.events.append("reset")
        self.seqs = [self._seq(r) for r in range(self.model.rowCount())]

    def _inserted(self, _parent: object, first: int, last: int) -> None:
        self.events.append("inserted")
        assert first == len(self.seqs)  # at the end only
        self.seqs += [self._seq(r) for r in range(first, last + 1)]

    def _removed(self, _parent: object, first: int, last: int) -> None:
        self.events.append("removed")
        assert last == len(self.seqs) - 1  # at the end only
        del self.seqs[first:]

    def _changed(self, top: object, bottom: object, _roles: list[int]) -> None:
        self.events.append("changed")
        first, last = top.row(), bottom.row()  # type: ignore[attr-defined]
        assert (first, last) == (0, len(self.seqs) - 1)  # every row that stays
        self.before = list(self.seqs)
        self.seqs = [self._seq(r) for r in range(len(self.seqs))]

    def _shifted(self, rows: int) -> None:
        assert self.events[-1] == "changed" and self.before is not None
        self.events.append("shifted")
        self.shifted += rows
        # Each row shows what the row ``rows`` below it showed.
        kept = self.before[rows:]
        assert self.seqs[: len(kept)] == kept
        self.before = None


def test_rows_shift_and_never_leave_from_the_front(
    sup: Supervisor, qrun: QRun, qtmodeltester: ModelTester
) -> None:
    model = OutputModel(sup)
    model.maxLines = 100
    qtmodeltester.check(model)
    mirror = RowMirror(model)
    counts: list[int] = []
    model.rowsInserted.connect(lambda *_: counts.append(model.rowCount()))

    async def scenario() -> None:
        p = await sup.spawn(BURSTS, session="s", agent="a")
        model.procId = p.id
        await until(lambda: model.rowCount() and texts(model)[-1] == "line 999", what="all read")

    qrun(scenario())
    assert texts(model) == [f"line {i}" for i in range(900, 1000)]
    # What the signals said is what the model shows.
    assert mirror.seqs == [int(model.data(model.index(r), OutputRole.SEQ)) for r in range(100)]
    # One reset (the procId); the pane filled, then its rows shifted, many
    # times, never more than maxLines of them: view positions stay bounded.
    assert mirror.events.count("reset") == 1 and mirror.events.count("shifted") >= 2
    assert max(counts) == 100
    # Every line that went before the newest 100 was shifted out (or skipped:
    # the model skips what falls behind by more than maxLines).
    assert mirror.shifted <= model.earlierLines == 900


def test_earlier_lines_and_the_logs(sup: Supervisor, qrun: QRun) -> None:
    p = qrun(
        sup.spawn(
            py(
                """
                import sys
                for i in range(500):
                    print("out", i)
                print("an error", file=sys.stderr)
                """
            ),
            session="s",
            agent="a",
        )
    )
    qrun(sup.wait(p.id))
    qrun(until(lambda: sup.read(p.id, since=sup.get(p.id).last_seq).eof, what="all read"))
    model = OutputModel(sup)
    assert (model.earlierLines, model.logFiles()) == (0, [])
    model.maxLines = 100
    model.procId = p.id
    assert (model.lineCount, model.earlierLines) == (100, 401)
    logs = [sup.log_path(p.id, stream) for stream in (Stream.STDOUT, Stream.STDERR)]
    assert model.logFiles() == logs
    # Cleared lines are earlier lines too (the log keeps them).
    model.clear()
    assert (model.lineCount, model.earlierLines) == (0, 501)
    model.procId = -1
    assert (model.earlierLines, model.logFiles()) == (0, [])


def test_the_pane_names_what_it_no_longer_holds(
    sup: Supervisor, qrun: QRun, panes: list[Pane], monkeypatch: pytest.MonkeyPatch
) -> None:
    p = qrun(sup.spawn(["seq", "1", "2500"], session="s", agent="a"))
    qrun(sup.wait(p.id))
    log = sup.log_path(p.id, Stream.STDOUT)
    pane = Pane(sup, "s", "a")
    panes.append(pane)
    w, out = pane.model, pane.output
    qrun(until(lambda: out.lineCount == 2500, what="every line"))
    assert (w.earlierText, w.logText, w.logPath) == ("", "", "")
    assert w.lineCountText == "2,500 lines"

    out.maxLines = 1000
    assert w.earlierText == "1,500 earlier lines are not shown here — in the log:"
    assert (w.logText, w.logPath) == (log, log)
    assert w.lineCountText == "last 1,000 of 2,500 lines"
    out.filterText = "99"
    qrun(until(lambda: not out.filtering, what="filtered"))
    assert w.earlierText == "The filter sees the last 1,000; 1,500 earlier lines are in the log:"
    assert w.lineCountText == f"{out.matchCount} of the last 1,000 lines"
    assert w.matchText == f"{out.matchCount} matches"

    opened: list[QUrl] = []
    answer = [True]

    class Desktop:
        @staticmethod
        def openUrl(url: QUrl) -> bool:
            opened.append(url)
            return answer[0]

    monkeypatch.setattr(viewmodel, "QDesktopServices", Desktop, raising=False)
    w.openLog()
    assert opened == [QUrl.fromLocalFile(log)] and not w.bannerVisible
    answer[0] = False
    w.openLog()
    assert (w.bannerText, w.bannerError) == (f"No application opens {log}", True)
    clipboard = QGuiApplication.clipboard()
    w.copyLogPath()
    assert clipboard.text() == log
    assert (w.bannerText, w.bannerError) == ("Log path copied", False)


def test_esc_in_the_filter_field(sup: Supervisor, qrun: QRun, panes: list[Pane]) -> None:
    qrun(sup.spawn(["seq", "1", "20"], session="s", agent="a"))
    pane = Pane(sup, "s", "a")
    panes.append(pane)
    w, out = pane.model, pane.output
    qrun(until(lambda: out.lineCount == 20, what="every line"))
    left: list[bool] = []
    w.leaveFilter.connect(lambda: left.append(True))

    out.filterText = "1"
    w.pressLine(2, False)
    w.escape(True)  # a filter: cleared, with the selection; the field keeps the keys
    assert (out.filterText, w.hasSelection, left) == ("", False, [])
    w.escape(True)  # an empty field: it hands the keys back
    assert left == [True]
    out.filterText = "1"
    w.escape(False)  # elsewhere: clears, nothing to hand back
    assert (out.filterText, left) == ("", [True])


def test_the_follow_state_says_nothing_without_a_proc(
    sup: Supervisor, qrun: QRun, panes: list[Pane]
) -> None:
    pane = Pane(sup, "nobody", "here")
    panes.append(pane)
    w = pane.model
    assert w.followText == "" and w.following
    p = qrun(sup.spawn(["sleep", "30"], session="nobody", agent="here"))
    w.stream(p.id)
    assert w.followText == "● following"
    w.scrollStarted()
    assert w.followText == "paused · End to follow"


def test_the_selection_and_the_view_keep_their_lines_when_rows_go(
    sup: Supervisor, qrun: QRun, panes: list[Pane]
) -> None:
    qrun(sup.spawn(["seq", "1", "50"], session="s", agent="a"))
    pane = Pane(sup, "s", "a")
    panes.append(pane)
    w, out = pane.model, pane.output
    qrun(until(lambda: out.lineCount == 50, what="every line"))

    # Trimmed rows: the selection moves up with its lines, and goes with them.
    w.pressLine(30, False)
    w.dragTo(32)
    out.maxLines = 40
    assert (w.selectionStart, w.selectionEnd) == (20, 22)
    assert out.copyRows([20, 21, 22]) == "31\n32\n33"
    out.maxLines = 18
    assert (w.selectionStart, w.selectionEnd) == (0, 0)
    out.maxLines = 10
    assert not w.hasSelection

    # Rows that shift: the selection moves with its lines, and a view that does
    # not follow goes back on its lines (the pane passes each ``shifted`` on with
    # where the view is); one that follows goes to its end. No reset forgets them.
    places: list[object] = []
    w.positionAt.connect(places.append)
    w.positionAtEnd.connect(lambda: places.append("end"))
    w.linesReplaced.connect(lambda: places.append("replaced"))
    shifts: list[int] = []
    out.shifted.connect(shifts.append)
    w.pressLine(5, False)
    w.scrollStarted()
    out.maxLines = 7
    assert shifts == [3] and (w.selectionStart, w.selectionEnd) == (2, 2)
    w.outputShifted(3, 180.5, 18.0)
    assert places == [180.5 - 54.0]
    w.outputShifted(20, 180.5, 18.0)  # the lines at the top of the view went too
    assert places[1:] == [0.0]
    w.following = True
    out.maxLines = 2
    w.outputShifted(5, 10.0, 18.0)
    assert shifts[1:] == [5] and not w.hasSelection
    qrun(until(lambda: "end" in places, what="following: to the end"))
    assert places[2:] == ["end"]
    # Any reset forgets the selection and what the view measured. Selecting
    # stopped following (the selected lines stay where they are), so the view
    # is not sent to the end.
    w.pressLine(1, False)
    assert not w.following and out.held
    w.outputReset()
    assert places[3:] == ["replaced"] and not w.hasSelection
    w.following = True
    assert not out.held
    w.outputReset()
    assert places[4:] == ["replaced", "end"]
