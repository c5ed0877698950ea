"""ProcController, ActiveScope and StatsSampler against real children."""

from __future__ import annotations

import asyncio

import pytest
from pytestqt.qtbot import QtBot

from procwindow.core import ProcState, Supervisor
from procwindow.core.rules import DEFAULT_TOOL
from procwindow.qt import ActiveScope, ProcController, StatsSampler
from procwindow.qt.controller import DEFAULT_AGENT, NO_PROC
from tests.core.helpers import py, until

from .conftest import QRun

pytestmark = pytest.mark.qt_log_level_fail("WARNING")

SLEEP = ["sleep", "30"]


class Recorder:
    """Collects a controller's started/actionFailed signals."""

    def __init__(self, controller: ProcController) -> None:
        self.started: list[int] = []
        self.failures: list[tuple[int, str, str]] = []
        controller.started.connect(self.started.append)
        controller.actionFailed.connect(self.on_failed)

    def on_failed(self, proc_id: int, action: str, message: str) -> None:
        self.failures.append((proc_id, action, message))

    @property
    def errors(self) -> list[str]:
        """The failure messages, in order."""
        return [message for _, _, message in self.failures]


def test_run_starts_a_command_line(sup: Supervisor, qrun: QRun, tmp_path: object) -> None:
    controller = ProcController(sup)
    seen = Recorder(controller)
    controller.run("s1", "a1", "printf '%s|' 'two words' $HOME", str(tmp_path))
    qrun(controller.wait_idle())
    assert seen.errors == []
    [proc_id] = seen.started
    p = sup.get(proc_id)
    assert p.argv == ("printf", "%s|", "two words", "$HOME")  # no shell expansion
    assert (p.session, p.agent, p.tool, p.cwd) == ("s1", "a1", DEFAULT_TOOL, str(tmp_path))
    qrun(sup.wait(proc_id))
    assert [line.text for line in sup.read(proc_id).lines] == ["two words|$HOME|"]


def test_run_without_an_agent_uses_the_default_one(sup: Supervisor, qrun: QRun) -> None:
    controller = ProcController(sup)
    seen = Recorder(controller)
    controller.run("s1", "", "true")
    qrun(controller.wait_idle())
    assert sup.get(seen.started[0]).agent == DEFAULT_AGENT


@pytest.mark.parametrize(
    ("session", "line", "message"),
    [
        ("s1", "no-such-command-here --flag", "command not found: 'no-such-command-here'"),
        ("s1", "echo 'unbalanced", "cannot read the command line: No closing quotation"),
        ("s1", "   ", "the command line is empty"),
        ("", "true", "choose a session first"),
        ("bad*session", "true", "session 'bad*session' contains '*'"),
    ],
)
def test_run_reports_failures(
    sup: Supervisor, qrun: QRun, session: str, line: str, message: str
) -> None:
    controller = ProcController(sup)
    seen = Recorder(controller)
    controller.run(session, "a1", line)
    qrun(controller.wait_idle())
    assert seen.started == []
    assert len(seen.failures) == 1
    proc_id, action, text = seen.failures[0]
    assert (proc_id, action) == (NO_PROC, "run")
    assert text.startswith(message)
    assert sup.procs() == []


def test_run_in_a_missing_directory(sup: Supervisor, qrun: QRun) -> None:
    controller = ProcController(sup)
    seen = Recorder(controller)
    controller.run("s1", "a1", "true", "/no/such/dir")
    qrun(controller.wait_idle())
    assert "/no/such/dir" in seen.errors[0]


def test_term_kill_interrupt_and_dismiss(sup: Supervisor, qrun: QRun) -> None:
    controller = ProcController(sup)
    seen = Recorder(controller)
    termed, killed = (qrun(sup.spawn(SLEEP, session="s1", agent="a1")) for _ in range(2))
    interrupted = qrun(
        sup.spawn(py("import time\ntry: time.sleep(30)\nexcept KeyboardInterrupt: print('^C')"),
                  session="s1", agent="a1")
    )  # fmt: skip
    qrun(asyncio.sleep(0.3))  # let the interpreter install its SIGINT handler
    controller.term(termed.id)
    controller.kill(killed.id)
    controller.interrupt(interrupted.id)
    qrun(controller.wait_idle())
    qrun(sup.wait(interrupted.id))
    assert termed.exit is not None and termed.exit.reason == "terminated"
    assert killed.exit is not None and killed.exit.reason == "killed"
    assert [line.text for line in sup.read(interrupted.id).lines] == ["^C"]

    controller.dismiss(termed.id)
    assert termed.id not in [p.id for p in sup.procs()]
    assert seen.errors == []

    running = qrun(sup.spawn(SLEEP, session="s1", agent="a1"))
    controller.dismiss(running.id)
    controller.dismiss(9999)
    controller.term(9999)
    qrun(controller.wait_idle())
    assert len(seen.errors) == 3
    assert str(running.id) in seen.errors[0] and "running" in seen.errors[0]
    assert [(p, a) for p, a, _ in seen.failures] == [
        (running.id, "dismiss"),
        (9999, "dismiss"),
        (9999, "term"),
    ]


@pytest.mark.parametrize("action", ["term", "kill", "interrupt", "restart", "dismiss"])
def test_an_action_on_a_proc_that_does_not_exist_fails_with_its_id(
    sup: Supervisor, qrun: QRun, action: str
) -> None:
    controller = ProcController(sup)
    seen = Recorder(controller)
    getattr(controller, action)(4242)
    qrun(controller.wait_idle())
    assert seen.started == []
    [(proc_id, failed, message)] = seen.failures
    assert (proc_id, failed) == (4242, action)
    assert "4242" in message


def test_a_run_of_a_missing_command_fails_with_no_proc(sup: Supervisor, qrun: QRun) -> None:
    controller = ProcController(sup)
    seen = Recorder(controller)
    controller.run("s1", "", "no-such-command-procwindow --flag")
    qrun(controller.wait_idle())
    assert seen.failures == [(NO_PROC, "run", "command not found: 'no-such-command-procwindow'")]
    assert seen.started == []
    assert sup.procs() == []


def test_restart_stops_a_running_proc_and_starts_it_again(sup: Supervisor, qrun: QRun) -> None:
    controller = ProcController(sup)
    seen = Recorder(controller)
    first = qrun(sup.spawn(SLEEP, session="s1", agent="a1", tool="web_fetch"))
    controller.restart(first.id)
    qrun(controller.wait_idle())
    assert first.state == ProcState.EXITED
    [new_id] = seen.started
    again = sup.get(new_id)
    assert new_id > first.id
    assert (again.argv, again.tool, again.running) == (first.argv, "web_fetch", True)


def test_term_all_of_a_session_or_an_agent(sup: Supervisor, qrun: QRun) -> None:
    controller = ProcController(sup)
    seen = Recorder(controller)
    a1 = qrun(sup.spawn(SLEEP, session="s1", agent="a1"))
    a2 = qrun(sup.spawn(SLEEP, session="s1", agent="a2"))
    other = qrun(sup.spawn(SLEEP, session="s2", agent="a1"))
    controller.termAll("s1", "a2")
    qrun(controller.wait_idle())
    assert (a1.running, a2.running) == (True, False)
    controller.termAll("s1", "")
    qrun(controller.wait_idle())
    assert (a1.running, other.running) == (False, True)
    controller.termAll("", "")
    assert seen.failures == [(NO_PROC, "termAll", "choose a session first")]
    assert other.running


def test_an_action_outlives_its_controller(sup: Supervisor, qrun: QRun) -> None:
    controller = ProcController(sup)
    p = qrun(sup.spawn(SLEEP, session="s1", agent="a1"))
    controller.term(p.id)
    controller.run("s1", "a1", "no-such-command-here")  # fails, and reports to no one
    controller.deleteLater()
    qrun(asyncio.sleep(0))
    # Term was clicked before the window closed: it still happens.
    assert qrun(sup.wait(p.id)).reason == "terminated"


def test_active_scope(qtbot: QtBot) -> None:
    scope = ActiveScope()
    with qtbot.waitSignals([scope.sessionChanged, scope.agentChanged, scope.changed]):
        scope.setScope("s1", "a1")
    assert (scope.session, scope.agent) == ("s1", "a1")
    with qtbot.waitSignal(scope.changed), qtbot.assertNotEmitted(scope.sessionChanged):
        scope.agent = ""
    with qtbot.assertNotEmitted(scope.changed):
        scope.setScope("s1", "")
    with qtbot.waitSignal(scope.sessionChanged):
        scope.session = "s2"
    assert (scope.session, scope.agent) == ("s2", "")


def test_stats_of_a_live_child(sup: Supervisor, qrun: QRun, qtbot: QtBot) -> None:
    hog = py(
        """
        import time
        data = bytearray(32 * 1024 * 1024)  # touched: resident
        for i in range(0, len(data), 4096):
            data[i] = 1
        print("ready", flush=True)
        end = time.monotonic() + 30
        while time.monotonic() < end:
            pass
        """
    )
    p = qrun(sup.spawn(hog, session="s1", agent="a1"))
    qrun(until(lambda: sup.read(p.id).lines, what="memory touched"))
    sampler = StatsSampler(sup, interval_ms=200)
    assert (sampler.procId, sampler.rssBytes, sampler.rssText) == (-1, 0, "0 B")
    with qtbot.waitSignal(sampler.statsChanged):
        sampler.procId = p.id
    assert sampler.active
    assert sampler.rssBytes > 32 * 1024 * 1024
    assert sampler.rssText.endswith(" MiB")
    assert sampler.threads >= 1
    assert sampler.descendants == 0
    qrun(until(lambda: sampler.cpuPercent > 10, timeout=5, what="a busy CPU"))

    qrun(sup.kill(p.id))
    qrun(until(lambda: not sampler.active, timeout=5, what="sampling to stop"))
    assert (sampler.rssBytes, sampler.cpuPercent, sampler.threads) == (0, 0.0, 0)

    sampler.procId = 9999  # unknown: zeros, no error
    assert not sampler.active and sampler.rssBytes == 0
