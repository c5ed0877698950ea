"""The output pane's stdin line without a window: when it is there, what it
writes, closing stdin, and failures in the banner; real children."""

from __future__ import annotations

import pytest

from procwindow.core import Supervisor
from procwindow.qt.pane import InputLine
from tests.core.helpers import py, until

from .conftest import QRun
from .panes import Pane as BasePane

pytestmark = pytest.mark.qt_log_level_fail("WARNING")

GREETER = py(
    """
    import sys
    sys.stdout.write("Name? "); sys.stdout.flush()
    print("hello", sys.stdin.readline().strip(), flush=True)
    """
)


class Pane(BasePane):
    """A pane with its stdin line."""

    def __init__(self, sup: Supervisor, session: str) -> None:
        super().__init__(sup, session)
        self.input = self.model.inputLine
        assert isinstance(self.input, InputLine)


def test_a_line_typed_answers_the_prompt(sup: Supervisor, qrun: QRun, panes: list[Pane]) -> None:
    p = qrun(sup.spawn(GREETER, session="s", agent="a", stdin=True))
    pane = Pane(sup, "s")
    panes.append(pane)
    qrun(until(lambda: pane.output.procId == p.id, what="streaming"))
    assert pane.input.available
    qrun(until(lambda: pane.output.partialText == "Name? ", what="the prompt"))
    pane.input.send("Ada Lovelace")
    qrun(until(lambda: pane.texts() == ["Name? hello Ada Lovelace"], what="the answer"))
    assert qrun(sup.wait(p.id)).code == 0
    qrun(until(lambda: not pane.input.available, what="gone with the proc"))
    assert pane.output.partialText == ""
    pane.input.send("too late")  # nothing to write to: nothing happens
    assert not pane.model.bannerVisible


def test_close_stdin_ends_the_input(sup: Supervisor, qrun: QRun, panes: list[Pane]) -> None:
    cat = qrun(sup.spawn(["cat"], session="s", agent="a", stdin=True))
    pane = Pane(sup, "s")
    panes.append(pane)
    qrun(until(lambda: pane.input.available, what="the stdin line"))
    pane.input.send("one")
    pane.input.send("")  # Enter alone: an empty line
    pane.input.send("two")
    pane.input.closeStdin()
    assert not pane.input.available  # at once: nothing more can be sent
    # The lines sent before go first; then cat reads end of file and exits.
    assert qrun(sup.wait(cat.id)).code == 0
    qrun(until(lambda: pane.texts() == ["one", "", "two"], what="what cat echoed"))
    assert not pane.model.bannerVisible


def test_procs_without_stdin_have_no_line_and_failures_show(
    sup: Supervisor, qrun: QRun, panes: list[Pane]
) -> None:
    quiet = qrun(sup.spawn(["sleep", "30"], session="s", agent="a"))
    pane = Pane(sup, "s")
    panes.append(pane)
    qrun(until(lambda: pane.output.procId == quiet.id, what="streaming"))
    assert not pane.input.available
    # The controller's write reports a failure as any action does: in the banner.
    pane.controller.write(quiet.id, "x\n")
    qrun(until(lambda: pane.model.bannerVisible, what="the banner"))
    assert pane.model.bannerError and "stdin" in pane.model.bannerText

    # A proc that closed its stdin itself: the first write fails, the line goes.
    closer = qrun(
        sup.spawn(
            py("import os, time; os.close(0); print('closed', flush=True); time.sleep(30)"),
            session="s",
            agent="a",
            stdin=True,
        )
    )
    pane.model.stream(closer.id)
    qrun(until(lambda: pane.texts() == ["closed"], what="stdin closed"))
    assert pane.input.available  # it cannot know yet
    pane.model.hideBanner()
    pane.input.send("anyone?")
    qrun(until(lambda: not pane.input.available, what="the line gone"))
    assert pane.model.bannerVisible and "broken pipe" in pane.model.bannerText
    # Streaming another proc and back: it stays gone.
    pane.model.stream(quiet.id)
    pane.model.stream(closer.id)
    assert not pane.input.available
