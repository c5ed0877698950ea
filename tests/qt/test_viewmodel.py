"""The windows' view-models over real models, a real supervisor and real children."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from PySide6.QtCore import QItemSelectionModel
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QGuiApplication
from pytestqt.qtbot import QtBot

from procwindow.core import Supervisor
from procwindow.core.rules import DEFAULT_AGENT, DEFAULT_SESSION
from procwindow.qt import (
    ActiveScope,
    Host,
    HostTreeModel,
    MainWindowModel,
    OutputModel,
    ProcController,
    ProcModel,
    ProcRole,
    ProcTableStyle,
    ProcWindowModel,
    StatsSampler,
    viewmodel,
)
from procwindow.qt._support import plural
from procwindow.qt.viewmodel import column_widths, minimum_table_width, status_tint
from tests.core.helpers import py, until

from .conftest import QRun

pytestmark = pytest.mark.qt_log_level_fail("WARNING")

SLEEP = ["sleep", "30"]
# Five numbered lines on stdout, two of them errors, then a long sleep.
LINES = py(
    """
    import time
    for i in range(5):
        print(("error" if i % 2 else "ok"), i, flush=True)
    time.sleep(30)
    """
)


class Window:
    """A ProcWindow's models and view-model, as open_proc_window makes them."""

    def __init__(
        self,
        sup: Supervisor,
        session: str,
        agent: str = "",
        scope: ActiveScope | None = None,
        pinned: bool | None = None,
    ) -> None:
        self.procs = ProcModel(sup, session, agent)
        self.output = OutputModel(sup)
        self.stats = StatsSampler(sup)
        self.controller = ProcController(sup)
        self.model = ProcWindowModel(
            self.procs, self.output, self.stats, self.controller, scope, pinned=pinned
        )
        # The window settles once its QML is complete.
        self.model.settleSelection()

    def close(self) -> None:
        self.model.close()
        self.procs.close()
        self.output.close()
        self.stats.procId = -1


@pytest.fixture
def windows() -> Iterator[list[Window]]:
    made: list[Window] = []
    yield made
    for window in made:
        window.close()


@pytest.fixture
def open_window(windows: list[Window]):  # type: ignore[no-untyped-def]
    def make(sup: Supervisor, session: str, agent: str = "", **kwargs: object) -> Window:
        window = Window(sup, session, agent, **kwargs)  # type: ignore[arg-type]
        windows.append(window)
        return window

    return make


def test_plural() -> None:
    assert [plural(n, "line", "lines") for n in (0, 1, 2)] == ["0 lines", "1 line", "2 lines"]


def test_it_opens_on_the_newest_proc_and_streams_it(
    sup: Supervisor, qrun: QRun, open_window
) -> None:
    older = qrun(sup.spawn(SLEEP, session="s", agent="a"))
    newer = qrun(sup.spawn(SLEEP, session="s", agent="b"))
    w = open_window(sup, "s")
    assert w.model.currentProcId == newer.id
    assert (w.output.procId, w.model.streamingProcId, w.stats.procId) == (newer.id,) * 3
    assert w.model.scopeText == "s · all agents"
    assert w.model.canFollow is False and w.model.pinned is True  # nothing to follow

    # The keyboard: Down moves to the older row, and no further; Up back.
    revealed: list[int] = []
    w.model.revealRow.connect(revealed.append)
    w.model.moveSelection(1)
    w.model.moveSelection(1)
    assert w.model.currentProcId == older.id and revealed == [1, 1]
    w.model.moveSelection(-5)
    assert w.model.currentProcId == newer.id and revealed[-1] == 0
    # Moving does not stream; stream() does, and asks the view for the live tail.
    assert w.output.procId == newer.id
    live: list[bool] = []
    w.model.liveRequested.connect(lambda: live.append(True))
    w.model.stream(older.id)
    assert (w.model.currentProcId, w.output.procId, w.stats.procId) == (older.id,) * 3
    assert live == [True]
    w.model.stream(-1)  # nothing to stream: nothing changes
    assert w.output.procId == older.id


def test_a_click_streams_and_a_restart_takes_the_row_and_streams(
    sup: Supervisor, qrun: QRun, open_window
) -> None:
    older = qrun(sup.spawn(SLEEP, session="s", agent="a"))
    newer = qrun(sup.spawn(SLEEP, session="s", agent="a"))
    w = open_window(sup, "s", "a")
    live: list[bool] = []
    w.model.liveRequested.connect(lambda: live.append(True))
    # A click on a row shows its output; on the row already showing, nothing jumps.
    w.model.select(older.id)
    assert (w.model.currentProcId, w.output.procId, live) == (older.id, older.id, [True])
    w.model.select(older.id)
    assert live == [True]

    # Restart the newer (top) row: its command runs again in that row, and streams.
    started: list[int] = []
    w.controller.started.connect(started.append)
    w.model.restart(newer.id)
    assert w.model.currentProcId == newer.id
    qrun(until(lambda: len(started) == 1, what="restarted"))
    restarted = started[0]
    qrun(until(lambda: w.procs.rowCount() == 3, what="its row"))
    assert [w.procs.procIdAt(r) for r in range(3)] == [restarted, newer.id, older.id]
    qrun(until(lambda: w.output.procId == restarted, what="streaming the restart"))
    assert w.model.currentProcId == restarted

    # Ctrl+R restarts the current proc, in its row; not one that is stopping.
    w.model.currentProcId = older.id
    w.model.restartCurrent()
    qrun(until(lambda: len(started) == 2 and w.procs.rowCount() == 4, what="restarted again"))
    again = started[1]
    order = [restarted, newer.id, again, older.id]
    assert [w.procs.procIdAt(r) for r in range(4)] == order
    qrun(until(lambda: w.output.procId == again, what="streaming it"))
    assert sup.get(older.id).exit is not None  # stopped first
    stubborn = qrun(
        sup.spawn(
            py(
                "import signal, time; signal.signal(signal.SIGTERM, "
                "signal.SIG_IGN); print('up', flush=True); time.sleep(30)"
            ),
            session="s",
            agent="a",
        )
    )
    qrun(until(lambda: any(line.text == "up" for line in sup.read(stubborn.id).lines)))
    w.controller.term(stubborn.id)
    qrun(until(lambda: sup.get(stubborn.id).state.value == "stopping", what="stopping"))
    qrun(until(lambda: w.procs.rowCount() == 5, what="its row"))
    w.model.currentProcId = stubborn.id
    qrun(until(lambda: w.procs.data(w.procs.index(0, 0), ProcRole.CAN_RESTART) is False))
    w.model.restartCurrent()
    qrun(asyncio.sleep(0.2))
    assert len(started) == 2


def test_the_selection_settles_when_rows_go_away(sup: Supervisor, qrun: QRun, open_window) -> None:
    first = qrun(sup.spawn(py("print('bye')"), session="s", agent="a"))
    second = qrun(sup.spawn(SLEEP, session="s", agent="a"))
    w = open_window(sup, "s", "a")
    assert w.model.scopeText == "s / a"
    w.model.stream(first.id)
    w.model.currentProcId = first.id
    qrun(sup.wait(first.id))
    # Dismissing the current, streaming proc: the other row becomes current and streams.
    w.model.dismissCurrent()
    qrun(until(lambda: w.procs.rowCount() == 1, what="the row gone"))
    qrun(until(lambda: w.model.currentProcId == second.id, what="settled"))
    assert w.output.procId == second.id
    # The last row gone: nothing is current, nothing streams.
    qrun(sup.kill(second.id))
    qrun(until(lambda: w.procs.data(w.procs.index(0, 0), ProcRole.CAN_DISMISS), what="exit"))
    w.model.dismissCurrent()
    qrun(until(lambda: w.model.currentProcId == -1, what="nothing left"))
    assert (w.output.procId, w.stats.procId) == (-1, -1)
    assert w.model.emptyText == "Select a process and press Enter to stream its output"
    w.model.termCurrent()  # nothing current: nothing happens, nothing fails
    w.model.killCurrent()
    qrun(w.controller.wait_idle())
    assert w.model.bannerVisible is False


def test_unpinned_it_follows_the_active_scope_pinned_it_stays(
    sup: Supervisor, qrun: QRun, open_window
) -> None:
    one = qrun(sup.spawn(SLEEP, session="one", agent="a"))
    two = qrun(sup.spawn(SLEEP, session="two", agent="b"))
    scope = ActiveScope()
    scope.setScope("one", "")
    w = open_window(sup, "one", "", scope=scope)
    assert w.model.canFollow and w.model.pinned is False
    assert w.model.currentProcId == one.id

    scope.setScope("two", "b")
    assert (w.procs.session, w.procs.agent) == ("two", "b")
    assert w.model.scopeText == "two / b"
    qrun(until(lambda: w.model.currentProcId == two.id, what="settled on the new scope"))
    assert w.output.procId == two.id

    w.model.pinned = True
    scope.setScope("one", "")
    assert (w.procs.session, w.procs.agent) == ("two", "b")
    scope.setScope("", "")  # no session: nothing to follow, even unpinned
    w.model.pinned = False
    assert (w.procs.session, w.procs.agent) == ("two", "b")
    scope.setScope("one", "a")  # unpinned again: it catches up at once
    assert (w.procs.session, w.procs.agent) == ("one", "a")
    w.model.close()  # a closing window follows no more
    scope.setScope("two", "")
    assert (w.procs.session, w.procs.agent) == ("one", "a")


def test_a_failed_action_shows_in_the_banner(
    sup: Supervisor, qrun: QRun, open_window, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(viewmodel, "BANNER_MS", (30, 60))
    w = open_window(sup, "s", "a")
    w.model.currentProcId = 4242
    w.model.termCurrent()
    qrun(w.controller.wait_idle())
    assert w.model.bannerVisible and w.model.bannerError
    assert "4242" in w.model.bannerText
    qrun(until(lambda: not w.model.bannerVisible, what="the banner gone"))
    w.model.showMessage("copied", False)
    assert w.model.bannerVisible and not w.model.bannerError
    w.model.hideBanner()
    assert not w.model.bannerVisible


def test_the_output_texts(sup: Supervisor, qrun: QRun, open_window) -> None:
    proc = qrun(sup.spawn(LINES, session="s", agent="a"))
    w = open_window(sup, "s", "a")
    qrun(until(lambda: w.output.lineCount == 5, what="five lines"))
    assert w.model.lineCountText == "5 lines"
    assert w.model.matchText == "5 matches"
    w.output.filterText = "error"
    qrun(until(lambda: w.output.matchCount == 2, what="filtered"))
    assert w.model.lineCountText == "2 of 5 lines"
    assert w.model.matchText == "2 matches"
    w.output.filterText = "ok 4"
    qrun(until(lambda: w.output.matchCount == 1, what="one match"))
    assert (w.model.matchText, w.model.lineCountText) == ("1 match", "1 of 5 lines")
    w.output.filterText = "nothing like it"
    qrun(until(lambda: w.output.matchCount == 0, what="no match"))
    assert w.model.emptyText == "No line matches the filter"
    w.output.filterRegex = True
    w.output.filterText = "(unclosed"
    assert w.model.matchText == "invalid"
    # Esc drops the filter (and the selection).
    w.model.pressLine(0, False)
    w.model.clearFilterAndSelection()
    assert w.output.filterText == "" and not w.model.hasSelection
    qrun(until(lambda: w.output.matchCount == 5, what="unfiltered"))
    assert w.model.lineCountText == "5 lines"
    w.output.clear()
    assert w.model.emptyText == "No output yet"
    assert w.output.procId == proc.id


def test_stats_texts(sup: Supervisor, qrun: QRun, open_window) -> None:
    proc = qrun(sup.spawn(SLEEP, session="s", agent="a"))
    w = open_window(sup, "s", "a")
    assert w.stats.procId == proc.id and w.stats.active
    assert w.model.cpuText.endswith("%") and w.model.memoryText.endswith("iB")
    qrun(sup.kill(proc.id))
    qrun(until(lambda: not w.stats.active, timeout=5, what="sampling stopped"))
    assert (w.model.cpuText, w.model.memoryText) == ("–", "–")


def test_selecting_and_copying_lines(sup: Supervisor, qrun: QRun, open_window) -> None:
    qrun(sup.spawn(LINES, session="s", agent="a"))
    w = open_window(sup, "s", "a")
    qrun(until(lambda: w.output.rowCount() == 5, what="five rows"))
    clipboard = QGuiApplication.clipboard()
    clipboard.clear()

    w.model.copySelection()  # nothing selected: nothing copied
    assert clipboard.text() == "" and not w.model.bannerVisible
    w.model.pressLine(3, True)  # Shift without a selection starts one
    assert (w.model.selectionStart, w.model.selectionEnd) == (3, 3)
    w.model.pressLine(1, True)
    assert (w.model.selectionStart, w.model.selectionEnd) == (1, 3)
    assert w.model.selectedText == "3 selected"
    w.model.dragTo(4)
    assert (w.model.selectionStart, w.model.selectionEnd) == (3, 4)
    w.model.dragTo(99)  # past the rows: ignored
    assert w.model.selectionEnd == 4
    w.model.pressLine(1, False)
    w.model.dragTo(2)
    w.model.copy()
    assert clipboard.text() == "error 1\nok 2"
    assert w.model.bannerText == "2 lines copied" and not w.model.bannerError
    w.model.pressLine(0, False)
    w.model.copySelection()
    assert w.model.bannerText == "1 line copied"

    w.model.clearSelection()
    assert (w.model.selectionStart, w.model.hasSelection, w.model.selectedText) == (-1, False, "")
    w.model.copy()  # no selection: every line
    assert clipboard.text() == "ok 0\nerror 1\nok 2\nerror 3\nok 4"
    assert w.model.bannerText == "Output copied"
    w.output.filterText = "error"
    qrun(until(lambda: w.output.rowCount() == 2, what="filtered"))
    w.model.copyAll()
    assert clipboard.text() == "error 1\nerror 3"
    assert w.model.bannerText == "Matching lines copied"
    # A reset of the view (here: a new filter) drops the selection.
    w.model.pressLine(0, False)
    w.model.outputReset()
    assert not w.model.hasSelection


def test_following_the_tail(sup: Supervisor, qrun: QRun, open_window, qtbot: QtBot) -> None:
    # Quiet children: no line arrives to move the view on its own.
    first = qrun(sup.spawn(SLEEP, session="s", agent="a"))
    qrun(sup.spawn(SLEEP, session="s", agent="a"))
    w = open_window(sup, "s", "a")
    ends: list[bool] = []
    w.model.positionAtEnd.connect(lambda: ends.append(True))
    assert w.model.following

    # New lines while following: the view goes to its end, once the loop is back.
    w.model.followTail()
    w.model.followTail()
    assert ends == []
    qrun(until(lambda: ends == [True], what="deferred, and only once"))

    # The person scrolls away: no more; back near the end: following again.
    w.model.scrollStarted()
    assert not w.model.following
    w.model.followTail()
    w.model.outputReset()
    w.model.scrollEnded(False)
    assert not w.model.following
    w.model.scrollStarted()
    w.model.scrollEnded(True)
    assert w.model.following
    # Reaching the end while scrolling follows; merely being at the end does not.
    w.model.following = False
    w.model.scrolledToEnd(True, False)
    assert not w.model.following
    w.model.scrolledToEnd(True, True)
    assert w.model.following
    # The scroll bar: pressed, not following; released near the end, following.
    w.model.scrollBarPressed(True, True)
    assert not w.model.following
    w.model.scrollBarPressed(False, True)
    assert w.model.following

    # End while a scroll still glides: following now, and again when it stops.
    w.model.scrollStarted()
    ends.clear()
    w.model.jumpToLive(True)
    assert w.model.following and ends == [True]
    w.model.scrollEnded(False)
    assert w.model.following and ends == [True, True]
    # A new stream always starts at its tail.
    w.model.following = False
    with qtbot.waitSignal(w.model.streamingProcIdChanged):
        w.model.stream(first.id)
    assert w.model.following


def test_column_widths_and_status_colours(sup: Supervisor, qrun: QRun) -> None:
    names = ["id", "agent", "tool", "status", "runtime", "actions"]
    assert column_widths(names, 1000, 154, 200) == [56, 104, 398, 200, 88, 154]
    # Narrower, the command gives way to 160 px, then the agent to 72, then the command
    # to 100; status, runtime and actions never shrink.
    assert column_widths(names, 762, 154, 200) == [56, 104, 160, 200, 88, 154]
    assert column_widths(names, 732, 154, 200) == [56, 74, 160, 200, 88, 154]
    assert column_widths(names, 692, 154, 200) == [56, 72, 122, 200, 88, 154]
    assert column_widths(names, 500, 154, 200) == [56, 72, 100, 200, 88, 154]
    # The minimum width fits every column exactly; below it the view scrolls.
    narrowest = minimum_table_width(names, 154, 200)
    assert narrowest == 670
    assert sum(column_widths(names, narrowest, 154, 200)) == narrowest
    assert column_widths(names[:-1], 1000, 0, 200) == [56, 104, 552, 200, 88]
    assert minimum_table_width(["id", "pid", "tool", "status", "runtime"], 0, 200) == 516

    style = ProcTableStyle()
    changes: list[bool] = []
    style.columnWidthsChanged.connect(lambda: changes.append(True))
    style.columnNames = names
    style.viewWidth = 1000.0
    style.actionsWidth = 154.0
    style.statusFontSize = 13
    style.statusPadding = 35.0
    # The Status column fits the widest status text in the cells' font, and its padding.
    font = QFont()
    font.setPixelSize(13)
    metrics = QFontMetricsF(font)
    for text in ("killed (ignored SIGTERM)", "lost (its supervisor died)", "failed (SIGSEGV)"):
        assert metrics.horizontalAdvance(text) + 35 <= style.statusWidth
    assert (
        style.statusWidth
        <= max(
            metrics.horizontalAdvance(t)
            for t in (
                "killed (ignored SIGTERM)",
                "lost (its supervisor died)",
                "terminated (SIGVTALRM)",
            )
        )
        + 35
        + 2
    )
    status = style.statusWidth
    assert style.columnWidths == [56, 104, 1000 - 56 - 104 - status - 88 - 154, status, 88, 154]
    assert style.minimumWidth == minimum_table_width(names, 154, status)
    count = len(changes)
    style.viewWidth = 1000.0  # unchanged: no relayout
    assert len(changes) == count

    # Every status colour the model gives is lifted for the dark theme, hue kept.
    model = ProcModel(sup, "s")
    try:
        qrun(sup.spawn(SLEEP, session="s", agent="a"))
        qrun(sup.spawn(py("raise SystemExit(3)"), session="s", agent="a"))
        qrun(until(lambda: model.rowCount() == 2, what="two rows"))
        qrun(until(lambda: model.data(model.index(0, 0), ProcRole.EXIT_REASON), what="exit"))
        for row in range(2):
            base = QColor(model.data(model.index(row, 0), ProcRole.STATUS_COLOR))
            tint = style.statusColor(base)
            assert tint == status_tint(base)
            assert tint.lightnessF() >= 0.62 - 1e-3
            assert abs(tint.hslHueF() - max(0.0, base.hslHueF())) < 0.01
    finally:
        model.close()


@pytest.fixture
def main_window(sup: Supervisor) -> Iterator[tuple[MainWindowModel, list[tuple[str, str]]]]:
    host = Host(sup, scopes={"web": ["api", "worker"]})
    tree = HostTreeModel()
    tree.addHost(host)
    opened: list[tuple[str, str]] = []

    def open_window(on: Host, session: str, agent: str) -> ProcWindowModel | None:
        assert on is host
        opened.append((session, agent))
        return None

    model = MainWindowModel(tree, open_window)
    yield model, opened
    host.close()


def test_main_window_texts_and_the_overview(
    sup: Supervisor, qrun: QRun, main_window: tuple[MainWindowModel, list[tuple[str, str]]]
) -> None:
    model, _ = main_window
    assert not model.hasScope
    assert model.overviewTitle == "No scope selected"
    assert model.overviewSummary == "Select a session or an agent on the left."
    qrun(sup.spawn(SLEEP, session="web", agent="api"))
    model.activeScope.setScope("web", "api")
    assert model.hasScope and model.overviewTitle == "web / api"
    assert (model.overviewModel.session, model.overviewModel.agent) == ("web", "api")
    qrun(until(lambda: model.overviewModel.count == 1, what="the overview's row"))
    assert model.overviewSummary.startswith("1 process  ·  right-click for Processes…")
    qrun(sup.spawn(SLEEP, session="web", agent="worker"))
    model.activeScope.setScope("web", "")
    qrun(until(lambda: model.overviewModel.count == 2, what="both rows"))
    assert model.overviewTitle == "web"
    assert model.overviewSummary.startswith("2 processes across all agents  ·  ")


def test_the_tree_and_the_active_scope_follow_each_other(
    qrun: QRun, main_window: tuple[MainWindowModel, list[tuple[str, str]]], qtbot: QtBot
) -> None:
    model, _ = main_window
    selection = model.treeSelection
    sessions = model.sessionModel
    # A node made current (a click) becomes the active scope.
    selection.setCurrentIndex(
        sessions.indexFor("web", "worker"), QItemSelectionModel.SelectionFlag.ClearAndSelect
    )
    assert (model.activeScope.session, model.activeScope.agent) == ("web", "worker")
    # A scope made active elsewhere becomes the current node, and the tree is told.
    with qtbot.waitSignal(selection.scopeShown, timeout=5000) as shown:
        model.activeScope.setScope("web", "api")
    assert shown.args[0] == sessions.indexFor("web", "api")
    assert selection.currentIndex() == sessions.indexFor("web", "api")
    # A scope the tree does not hold changes nothing there.
    model.activeScope.setScope("elsewhere", "")
    qrun(asyncio.sleep(0.05))
    assert selection.currentIndex() == sessions.indexFor("web", "api")


def test_main_window_actions_and_status(
    sup: Supervisor,
    qrun: QRun,
    main_window: tuple[MainWindowModel, list[tuple[str, str]]],
    qtbot: QtBot,
) -> None:
    model, opened = main_window
    # The Run dialog opens on the scope, or on the defaults where it names none.
    form = model.runForm
    with qtbot.waitSignal(form.openRequested):
        model.requestRun("", "")
    assert (form.session, form.agent) == (DEFAULT_SESSION, DEFAULT_AGENT)
    model.requestRun("web", "api")
    assert (form.session, form.agent) == ("web", "api")
    model.setMenuScope("web", "worker")
    assert (model.menuSession, model.menuAgent) == ("web", "worker")

    model.openProcesses("", "")  # no session: nothing opens
    model.openProcesses("web", "api")
    model.streamInWindow(7)  # no active scope yet: nothing opens
    model.activeScope.setScope("web", "")
    model.streamInWindow(7)
    assert opened == [("web", "api"), ("web", "")]

    # The status line tells what the controller did, and what failed.
    model.controller.run("web", "api", "true")
    qrun(model.controller.wait_idle())
    assert model.statusText.startswith("Started process ") and not model.statusError
    model.controller.run("web", "api", "no-such-command-procwindow")
    qrun(model.controller.wait_idle())
    assert model.statusText == "command not found: 'no-such-command-procwindow'"
    assert model.statusError
    with qtbot.waitSignal(model.quitRequested):
        model.quit()
