"""The output pane's matches, times and unfinished line without a window: the
OutputModel's ``styled`` role, OutputFind's moves, the ProcWindowModel's texts,
over a real supervisor and real children."""

from __future__ import annotations

import re

import pytest
from PySide6.QtGui import QColor, QGuiApplication
from pytestqt.modeltest import ModelTester

from procwindow.core import Supervisor
from procwindow.qt import (
    OutputRole,
)
from procwindow.qt.models.output import DEFAULT_COLORS
from procwindow.qt.pane import OutputFind
from tests.core.helpers import py, until

from .conftest import QRun
from .panes import Pane as BasePane

pytestmark = pytest.mark.qt_log_level_fail("WARNING")

MATCH, CURRENT = DEFAULT_COLORS["match"], DEFAULT_COLORS["currentMatch"]
TIME = re.compile(r"^\d\d:\d\d:\d\d\.\d\d\d ")


class Pane(BasePane):
    """A pane with its find bar."""

    def __init__(self, sup: Supervisor, session: str, agent: str) -> None:
        super().__init__(sup, session, agent)
        self.find = self.model.find
        assert isinstance(self.find, OutputFind)

    def styled(self, row: int) -> str:
        return self.output.data(self.output.index(row), OutputRole.STYLED)


def marked(html: str, color: str) -> list[str]:
    """The texts marked on ``color`` in a line's HTML."""
    found = re.findall(rf'<span style="background-color:{color}">(.*?)</span>', html)
    return [re.sub("<[^>]+>", "", f) for f in found]


def open_pane(sup: Supervisor, qrun: QRun, panes: list[Pane], argv: list[str], lines: int) -> Pane:
    qrun(sup.spawn(argv, session="s", agent="a"))
    pane = Pane(sup, "s", "a")
    panes.append(pane)
    qrun(until(lambda: pane.output.lineCount == lines, what=f"{lines} lines"))
    return pane


def test_matches_are_marked_and_enter_goes_from_one_to_the_next(
    sup: Supervisor, qrun: QRun, panes: list[Pane], qtmodeltester: ModelTester
) -> None:
    code = """
        for i in range(1, 31):
            print(f"\\x1b[32mok\\x1b[0m {i} <tag> & ok" if i % 3 else f"fail {i} <b>")
        """
    pane = open_pane(sup, qrun, panes, py(code), 30)
    out, w, find = pane.output, pane.model, pane.find
    qtmodeltester.check(out)
    assert not out.marking and "background-color" not in pane.styled(0)

    out.filterText = "OK"  # case-insensitive: every "ok" of the 20 ok lines
    qrun(until(lambda: not out.filtering))
    assert out.marking and out.matchCount == 20
    assert marked(pane.styled(0), MATCH) == ["ok", "ok"]
    assert "&lt;tag&gt; &amp;" in pane.styled(0)  # escaped
    assert out.data(out.index(0), OutputRole.TEXT) == "ok 1 <tag> & ok"  # plain text stays
    assert w.matchText == "20 matches" and out.currentMatch == -1

    revealed: list[int] = []
    find.revealRow.connect(revealed.append)
    assert w.following
    find.next()  # no current match: the first
    assert (out.currentMatch, revealed, w.matchText) == (0, [0], "1 of 20")
    assert not w.following  # going to a match stops following, as a scroll does
    assert marked(pane.styled(0), CURRENT) == ["ok", "ok"] and not marked(pane.styled(0), MATCH)
    find.next()
    assert (out.currentMatch, w.matchText) == (1, "2 of 20")
    assert marked(pane.styled(0), MATCH) == ["ok", "ok"]  # no longer current
    find.previous()
    find.previous()  # wraps to the last
    assert (out.currentMatch, revealed, w.matchText) == (19, [0, 1, 0, 19], "20 of 20")
    find.next()  # and from the last to the first
    assert out.currentMatch == 0

    # Regex and case: the marks follow the filter.
    out.filterRegex = True
    out.caseSensitive = True
    out.filterText = r"fail \d+|<b>"
    qrun(until(lambda: not out.filtering))
    assert out.matchCount == 10 and out.currentMatch == -1  # a new filter: no current match
    assert w.matchText == "10 matches"
    assert marked(pane.styled(0), MATCH) == ["fail 3", "&lt;b&gt;"]
    find.previous()
    assert (out.currentMatch, w.matchText) == (9, "10 of 10")
    assert marked(pane.styled(9), CURRENT) == ["fail 30", "&lt;b&gt;"]
    # A regex that matches only empty strings filters every line in, marks nothing.
    out.filterText = "x*"
    qrun(until(lambda: not out.filtering))
    assert out.matchCount == 30 and "background-color" not in pane.styled(5)
    # An invalid one keeps the last valid filter and its marks.
    out.filterText = "fail ("
    assert out.filterError and out.marking and w.matchText == "invalid"
    # No filter: nothing to go to.
    out.filterText = ""
    assert not out.marking
    find.next()
    assert out.currentMatch == -1 and revealed[-1] == 9


def test_the_current_match_stays_on_its_line_as_lines_go(
    sup: Supervisor, qrun: QRun, panes: list[Pane]
) -> None:
    pane = open_pane(sup, qrun, panes, ["seq", "1", "100"], 100)
    out, w, find = pane.output, pane.model, pane.find
    out.filterText = "7"  # 7, 17, 27, 37, 47, 57, 67, 70..79, 87, 97: 19 lines
    qrun(until(lambda: not out.filtering))
    assert out.matchCount == 19
    for _ in range(9):
        find.next()
    assert out.data(out.index(out.currentMatch), OutputRole.TEXT) == "71"
    assert w.matchText == "9 of 19"
    out.maxLines = 50  # lines 1-50 go: 7..47 were five rows
    assert out.currentMatch == 3 and w.matchText == "4 of 14"
    assert out.data(out.index(out.currentMatch), OutputRole.TEXT) == "71"
    out.maxLines = 20  # 71 goes too
    assert out.currentMatch == -1 and w.matchText == "2 matches"
    find.next()
    out.clear()
    assert out.currentMatch == -1


def test_the_current_match_is_drawn_on_its_line_when_rows_shift(
    sup: Supervisor, qrun: QRun, panes: list[Pane]
) -> None:
    pane = open_pane(sup, qrun, panes, ["seq", "1", "100"], 100)
    out, find = pane.output, pane.find
    out.filterText = "5"  # 5, 15, 25, 35, 45, 50..59, 65, 75, 85, 95: 19 lines
    qrun(until(lambda: not out.filtering))
    for _ in range(7):
        find.next()
    assert out.data(out.index(out.currentMatch), OutputRole.TEXT) == "51"
    assert marked(pane.styled(6), CURRENT) == ["5"]
    # What a view redraws when the rows shift, it draws with the current match
    # already on its new row.
    drawn: dict[int, str] = {}
    out.dataChanged.connect(
        lambda a, b, _roles: drawn.update({r: pane.styled(r) for r in range(a.row(), b.row() + 1)})
    )
    out.maxLines = 50  # 1-50 go: six rows
    assert out.currentMatch == 0
    assert out.data(out.index(0), OutputRole.TEXT) == "51"
    assert marked(drawn[0], CURRENT) == ["5"] and marked(drawn[0], MATCH) == []
    assert marked(drawn[6], MATCH) == ["5"] and marked(drawn[6], CURRENT) == []  # 57
    assert pane.model.matchText == "1 of 13"


def test_times_show_before_each_line_and_in_copies(
    sup: Supervisor, qrun: QRun, panes: list[Pane]
) -> None:
    pane = open_pane(sup, qrun, panes, ["seq", "1", "5"], 5)
    out, w = pane.output, pane.model
    assert not out.showTimes and pane.styled(0) == "1"
    changed: list[int] = []
    out.dataChanged.connect(lambda first, last, roles: changed.append(last.row() - first.row() + 1))
    out.showTimes = True
    assert changed == [5]  # every line drawn anew
    color = QColor(DEFAULT_COLORS["time"]).name(QColor.NameFormat.HexArgb)
    assert re.fullmatch(
        rf'<font color="{color}">\d\d:\d\d:\d\d\.\d\d\d</font>&nbsp;1', pane.styled(0)
    )
    out.timeColor = QColor("#123456")
    assert pane.styled(0).startswith('<font color="#ff123456">')

    clipboard = QGuiApplication.clipboard()
    w.copyAll()
    copied = clipboard.text().splitlines()
    assert len(copied) == 5 and all(TIME.match(c) for c in copied)
    assert [c[13:] for c in copied] == ["1", "2", "3", "4", "5"]
    w.pressLine(1, False)
    w.dragTo(2)
    w.copySelection()
    assert [c[13:] for c in clipboard.text().splitlines()] == ["2", "3"]
    # Off: copies are the lines alone, as before.
    out.showTimes = False
    w.copySelection()
    assert clipboard.text() == "2\n3"
    # With a filter, marks come after the time.
    out.showTimes = True
    out.filterText = "4"
    qrun(until(lambda: not out.filtering))
    assert TIME.match(re.sub("<[^>]+>", "", pane.styled(0)).replace("&nbsp;", " "))
    assert marked(pane.styled(0), MATCH) == ["4"]


def test_an_unfinished_line_shows_after_the_rows_until_it_ends(
    sup: Supervisor, qrun: QRun, panes: list[Pane]
) -> None:
    code = """
        import sys, time
        print("before", flush=True)
        sys.stdout.write("Name? "); sys.stdout.flush()
        time.sleep(1.0)
        sys.stdout.write("\\x1b[1mbob\\x1b[0m"); sys.stdout.flush()
        time.sleep(1.0)
        print(); print("after", flush=True)
        time.sleep(30)
        """
    pane = open_pane(sup, qrun, panes, py(code), 1)
    out = pane.output
    partials: list[str] = []
    out.partialChanged.connect(lambda: partials.append(out.partialText))
    qrun(until(lambda: out.partialText == "Name? ", what="the prompt"))
    assert out.partialStyled == "Name?&nbsp;"  # its last space kept: the answer goes there
    assert not out.partialIsStderr and out.rowCount() == 1  # not a row
    # It changes as the line goes on, then becomes a row.
    qrun(until(lambda: out.partialText == "Name? bob", what="the line going on"))
    assert "<b>bob</b>" in out.partialStyled
    out.showTimes = True
    assert TIME.match(re.sub("<[^>]+>", "", out.partialStyled).replace("&nbsp;", " "))
    qrun(until(lambda: out.lineCount == 3, what="the line ended"))
    assert out.partialText == "" and out.partialStyled == ""
    assert out.data(out.index(1), OutputRole.TEXT) == "Name? bob"
    assert partials[0] == "Name? " and partials[-1] == ""
    # Another proc, or none: no unfinished line.
    out.procId = -1
    assert out.partialText == ""
