"""The output pane's terminal without a window: which procs have one, the screen
it fetches, what it types, the size it gives; real children on real terminals."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest
from PySide6.QtGui import QGuiApplication

from procwindow.core import Supervisor, SupervisorAPI
from procwindow.qt import TerminalModel
from procwindow.qt.terminal import RESIZE_MS
from tests.core.helpers import py, until

from .conftest import QRun
from .panes import Pane as BasePane

pytestmark = pytest.mark.qt_log_level_fail("WARNING")

#: Prints its terminal's size at the start and at each SIGWINCH.
SIZE_REPORT = py(
    """
    import os, signal, time
    def report(*_):
        size = os.get_terminal_size(0)
        print(f"size {size.lines}x{size.columns}", flush=True)
    signal.signal(signal.SIGWINCH, report)
    report()
    while True:
        time.sleep(1)
    """
)


class Pane(BasePane):
    """A pane with its terminal view's model."""

    def __init__(self, sup: SupervisorAPI, session: str) -> None:
        super().__init__(sup, session)
        self.terminal = self.model.pane.terminal
        assert isinstance(self.terminal, TerminalModel)

    def text(self) -> str:
        screen = self.terminal.screen()
        return screen.text if screen is not None else ""


def test_a_repl_on_a_terminal_shows_its_screen_and_takes_keys(
    sup: Supervisor, qrun: QRun, panes: list[Pane]
) -> None:
    p = qrun(sup.spawn([sys.executable, "-i", "-q"], session="s", agent="a", pty=True))
    pane = Pane(sup, "s")
    panes.append(pane)
    terminal = pane.terminal
    qrun(until(lambda: pane.output.procId == p.id, what="streaming"))
    assert terminal.available and terminal.shown and terminal.active and terminal.open
    qrun(until(lambda: pane.text() == ">>>", what="the prompt on the screen"))
    assert (terminal.rows, terminal.cols) == (24, 80)
    assert terminal.statusText == "terminal 80 × 24"
    terminal.send("print(6")
    terminal.send("*7)\r")
    qrun(until(lambda: pane.text() == ">>> print(6*7)\n42\n>>>", what="the answer"))
    screen = terminal.screen()
    assert screen is not None and screen.styled is not None
    assert screen.cursor == (2, 4)

    # Copy: the screen's text, said in the banner.
    terminal.copy()
    assert QGuiApplication.clipboard().text() == ">>> print(6*7)\n42\n>>>"
    assert pane.model.bannerText == "Screen copied"
    pane.model.copy()  # the copy button copies the screen too, while it shows
    assert pane.model.copyTip == "Copy the screen's text"

    terminal.send("\x04")  # Ctrl-D: the REPL ends
    assert qrun(sup.wait(p.id)).code == 0
    qrun(until(lambda: not terminal.open, what="closed with the proc"))
    assert terminal.statusText == "terminal 80 × 24 · ended"
    terminal.send("print(1)\r")  # nowhere to go: nothing happens
    assert not pane.model.bannerError


def test_pipes_have_no_terminal_and_the_lines_are_a_choice_kept_per_proc(
    sup: Supervisor, qrun: QRun, panes: list[Pane]
) -> None:
    piped = qrun(sup.spawn(["sleep", "30"], session="s", agent="a"))
    tty = qrun(sup.spawn(["sleep", "30"], session="s", agent="a", pty=True))
    pane = Pane(sup, "s")
    panes.append(pane)
    terminal = pane.terminal
    pane.model.stream(piped.id)
    assert not terminal.available and not terminal.active
    terminal.send("x")  # no terminal: nothing is written
    assert terminal.screen() is None
    fetches = terminal.feed.fetches
    pane.model.stream(tty.id)
    assert terminal.available and terminal.active
    qrun(until(lambda: terminal.screen() is not None, what="a screen"))
    assert terminal.feed.fetches > fetches
    pane.model.following = False
    ends: list[bool] = []
    pane.model.positionAtEnd.connect(lambda: ends.append(True))
    terminal.shown = False  # the person chose its lines
    assert terminal.available and not terminal.active
    assert pane.model.copyTip == "Copy all lines"
    # The lines view made no rows under the terminal's: it opens at their tail.
    assert pane.model.following
    qrun(until(lambda: ends == [True], what="the view sent to the end"))
    pane.model.stream(piped.id)
    pane.model.stream(tty.id)
    assert not terminal.shown  # still its lines
    terminal.shown = True
    assert terminal.active


def test_the_terminal_takes_the_view_s_size_once_it_holds_still(
    sup: Supervisor, qrun: QRun, panes: list[Pane], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[Any, ...]] = []
    resize = sup.resize

    async def counted(*args: Any) -> None:
        calls.append(args)
        await resize(*args)

    monkeypatch.setattr(sup, "resize", counted)
    p = qrun(sup.spawn(SIZE_REPORT, session="s", agent="a", pty=True))
    pane = Pane(sup, "s")
    panes.append(pane)
    terminal = pane.terminal
    qrun(until(lambda: "size 24x80" in pane.text(), what="the first size"))
    # A drag: sizes in quick succession; the terminal takes the last one only.
    for rows, cols in ((10, 50), (12, 60), (14, 70)):
        terminal.setViewSize(rows, cols)
    qrun(until(lambda: "size 14x70" in pane.text(), what="SIGWINCH with the new size"))
    assert calls == [(p.id, 14, 70)]
    assert (terminal.rows, terminal.cols) == (14, 70)
    terminal.setViewSize(14, 70)  # as it is: nothing to do
    qrun(asyncio.sleep(2 * RESIZE_MS / 1000))
    assert calls == [(p.id, 14, 70)]

    # Ended: a change of the view's size is no error, and asks nothing.
    qrun(sup.kill(p.id))
    qrun(until(lambda: not terminal.open, what="closed"))
    terminal.setViewSize(20, 90)
    qrun(asyncio.sleep(2 * RESIZE_MS / 1000))
    assert calls == [(p.id, 14, 70)]
    assert not pane.model.bannerVisible


def test_a_terminal_over_either_kind_of_supervisor(
    api: SupervisorAPI, qrun: QRun, panes: list[Pane]
) -> None:
    p = qrun(api.spawn([sys.executable, "-i", "-q"], session="s", agent="a", pty=True))
    pane = Pane(api, "s")
    panes.append(pane)
    terminal = pane.terminal
    qrun(until(lambda: terminal.active and pane.text().endswith(">>>"), what="the prompt"))
    terminal.setViewSize(20, 70)
    qrun(until(lambda: (terminal.rows, terminal.cols) == (20, 70), what="the new size"))
    terminal.send("print(6*7)\r")
    qrun(until(lambda: "\n42\n>>>" in pane.text(), what="the answer"))
    terminal.send("\x04")
    assert qrun(api.wait(p.id)).code == 0
    qrun(until(lambda: not terminal.open, what="closed with the proc"))
