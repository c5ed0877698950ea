"""The pieces of a workspace run that need no process: the restart policy
(``decide``), what a command's state means for its dependents (``verdict``),
and liveness probing against a stand-in supervisor."""

from __future__ import annotations

import asyncio

import pytest

from procwindow import Backoff, Command, Condition, ExitReason, Liveness, Phase, Ready
from procwindow.core._liveness import probe_liveness
from procwindow.core._proc import Proc
from procwindow.core._restart import decide, ended
from procwindow.core._slot import Slot, verdict
from procwindow.core._types import ExitInfo, Line, Stream

FAILED_1 = ExitInfo(1, None, ExitReason.FAILED, 0.5)
EXITED_0 = ExitInfo(0, None, ExitReason.EXITED, 0.5)
TERMED = ExitInfo(143, 15, ExitReason.TERMINATED, 0.5)


def command(restart: str = "on-failure", **kw) -> Command:
    kw.setdefault("backoff", Backoff(1, 2, 10))
    return Command("s", "a", ("prog",), name="c", restart=restart, **kw)


# -- decide -------------------------------------------------------------------------


def test_ended_says_code_reason_and_signal():
    assert ended(FAILED_1) == "exited with code 1 (failed)"
    assert ended(TERMED) == "exited with code 143 (terminated, signal 15)"


def test_a_crash_loop_backs_off_then_gives_up():
    c = command(max_restarts=4)
    streak, delays = 0, []
    while True:
        d = decide(c, FAILED_1, streak=streak)
        if not d.restart:
            break
        assert d.detail == "it exited with code 1 (failed)"
        delays.append(d.delay)
        streak = d.streak
    assert delays == [1.0, 2.0, 4.0, 8.0]
    assert d.phase is Phase.FAILED
    assert d.detail == "gave up after 4 restarts in a row: it exited with code 1 (failed)"
    assert d.streak == 4


def test_giving_up_after_one_restart_says_restart():
    d = decide(command(max_restarts=1), FAILED_1, streak=1)
    assert d.detail == "gave up after 1 restart in a row: it exited with code 1 (failed)"


def test_no_restarts_allowed_fails_without_giving_up():
    d = decide(command(max_restarts=0), FAILED_1, streak=0)
    assert (d.phase, d.detail, d.streak) == (Phase.FAILED, "it exited with code 1 (failed)", 0)


def test_a_run_as_long_as_the_cap_starts_a_new_loop():
    long_run = ExitInfo(1, None, ExitReason.FAILED, 10.0)
    d = decide(command(max_restarts=3), long_run, streak=3)
    assert (d.phase, d.streak, d.delay) == (Phase.RESTARTING, 1, 1.0)
    short_run = ExitInfo(1, None, ExitReason.FAILED, 9.99)
    assert decide(command(max_restarts=3), short_run, streak=3).phase is Phase.FAILED


@pytest.mark.parametrize(
    ("policy", "info", "phase"),
    [
        ("no", FAILED_1, Phase.FAILED),
        ("no", EXITED_0, Phase.COMPLETED),
        ("on-failure", EXITED_0, Phase.COMPLETED),
        ("on-failure", FAILED_1, Phase.RESTARTING),
        ("always", EXITED_0, Phase.RESTARTING),
        ("always", FAILED_1, Phase.RESTARTING),
    ],
)
def test_the_policy_decides_what_follows_an_exit(policy, info, phase):
    d = decide(command(policy), info, streak=0)
    assert d.phase is phase
    assert d.restart is (phase is Phase.RESTARTING)
    assert d.detail == (None if phase is Phase.COMPLETED else f"it {ended(info)}")


@pytest.mark.parametrize("reason", [ExitReason.TERMINATED, ExitReason.KILLED, ExitReason.ESCALATED])
def test_a_stop_somebody_asked_for_is_never_restarted(reason):
    info = ExitInfo(137, 9, reason, 0.5)
    d = decide(command("always"), info, streak=2)
    assert (d.phase, d.streak) == (Phase.STOPPED, 2)
    assert d.detail == f"stopped: it {ended(info)}"


def test_a_stop_for_failed_liveness_is_a_failure_with_its_reason():
    why = "liveness (port 127.0.0.1:1) failed 3 times in a row"
    d = decide(command(), TERMED, streak=0, unhealthy=True, detail=why)
    assert (d.phase, d.detail, d.streak, d.delay) == (Phase.RESTARTING, why, 1, 1.0)
    d = decide(command("no"), TERMED, streak=0, unhealthy=True, detail=why)
    assert (d.phase, d.detail) == (Phase.FAILED, why)


def test_a_restart_asked_for_restarts_at_once_and_starts_a_new_loop():
    for policy in ("no", "on-failure", "always"):
        for info in (FAILED_1, TERMED, None):
            d = decide(command(policy), info, streak=7, asked=True)
            assert (d.phase, d.detail, d.streak, d.delay) == (
                Phase.RESTARTING,
                "restarted on request",
                0,
                0.0,
            )


def test_a_run_that_could_not_start_is_a_failure():
    d = decide(command(), None, streak=0, detail="cannot start: no such file")
    assert (d.phase, d.detail) == (Phase.RESTARTING, "cannot start: no such file")
    d = decide(command("no"), None, streak=0)
    assert (d.phase, d.detail) == (Phase.FAILED, "it could not start")


# -- verdict ------------------------------------------------------------------------


def slot(phase: Phase = Phase.RUNNING, **state) -> Slot:
    s = Slot(Command("s", "a", ("prog",), name="db", ready=5432))
    s.phase = phase
    for key, value in state.items():
        setattr(s, key, value)
    return s


def test_started_holds_once_it_ran():
    assert verdict(Condition.STARTED, slot(Phase.STARTING)) is False
    assert verdict(Condition.STARTED, slot(runs=[4])) is True
    assert verdict(Condition.STARTED, slot(Phase.SKIPPED, detail="x never started")) == (
        "db never started (it was skipped (x never started))"
    )
    assert verdict(Condition.STARTED, slot(Phase.STOPPED)) == "db never started (it was stopped)"


def test_ready_holds_once_its_check_passed():
    assert verdict(Condition.READY, slot()) is False
    assert verdict(Condition.READY, slot(Phase.FAILED, ever_ready=True)) is True
    gave_up = slot(check_gave_up=True, detail="its check gave up after 5 s")
    assert verdict(Condition.READY, gave_up) == "db never became ready: its check gave up after 5 s"
    failed = slot(Phase.FAILED, last_exit=FAILED_1)
    assert verdict(Condition.READY, failed) == (
        "db never became ready: it exited with code 1 (failed)"
    )


def test_completed_holds_at_any_final_exit():
    assert verdict(Condition.COMPLETED, slot(Phase.RESTARTING, last_exit=FAILED_1)) is False
    assert verdict(Condition.COMPLETED, slot(Phase.FAILED, last_exit=FAILED_1)) is True
    assert verdict(Condition.COMPLETED, slot(Phase.COMPLETED, last_exit=EXITED_0)) is True
    assert verdict(Condition.COMPLETED, slot(Phase.FAILED, detail="cannot start: x")) == (
        "db never ran to its end (cannot start: x)"
    )


def test_completed_successfully_holds_only_at_code_0():
    cond = Condition.COMPLETED_SUCCESSFULLY
    assert verdict(cond, slot(Phase.COMPLETED, last_exit=EXITED_0)) is True
    assert verdict(cond, slot(Phase.RUNNING)) is False
    assert verdict(cond, slot(Phase.FAILED, last_exit=FAILED_1)) == (
        "db did not complete successfully: it exited with code 1 (failed)"
    )
    assert verdict(cond, slot(Phase.SKIPPED)) == "db did not complete successfully: it was skipped"


# -- liveness probing -------------------------------------------------------------------


class Host:
    """A supervisor as liveness probing sees it: beats at the given seqs, then none."""

    def __init__(self, proc: Proc, beats: list[int]) -> None:
        self.proc = proc
        self.beats = beats
        self.calls: list[str] = []

    async def wait_ready(self, proc_id: int, timeout: float | None = None) -> Proc:
        self.calls.append("wait_ready")
        return self.proc

    async def wait_for(self, proc_id, pattern, *, regex=True, stream=None, since=0, timeout=None):
        self.calls.append(f"wait_for since={since}")
        later = [seq for seq in self.beats if seq > since]
        if not later:
            await asyncio.sleep(timeout)
            raise TimeoutError
        return Line(later[0], Stream.STDOUT, 0.0, "alive")

    async def term(self, proc_id: int) -> ExitInfo:
        self.calls.append("term")
        return self.proc._set_exited(143, 15, ExitReason.TERMINATED, 0.0, 0.0)


def a_proc() -> Proc:
    return Proc(
        proc_id=3,
        os_pid=1,
        argv=("prog",),
        session="s",
        agent="a",
        tool="shell",
        cwd=None,
        env=None,
        started_at=0.0,
        started_mono=0.0,
    )


def test_liveness_terminates_after_its_failures_once_it_said_why():
    proc = a_proc()
    host = Host(proc, beats=[1, 2])
    live = Liveness(Ready(line="alive"), period=0.01, failures=2)
    said: list[str] = []

    def failed(why: str) -> None:
        said.append(why)
        host.calls.append("failed")

    asyncio.run(probe_liveness(host, proc, live, after_ready=True, on_failure=failed))
    assert said == ["liveness (line /alive/) failed 2 times in a row"]
    assert host.calls == [
        "wait_ready",
        "wait_for since=0",
        "wait_for since=1",
        "wait_for since=2",
        "wait_for since=2",
        "failed",
        "term",
    ]
    assert proc.exit is not None


def test_liveness_stops_probing_when_the_run_exits():
    proc = a_proc()
    host = Host(proc, beats=[])
    live = Liveness(Ready(line="alive"), period=0.01, failures=1)

    async def main() -> None:
        task = asyncio.create_task(
            probe_liveness(host, proc, live, after_ready=False, on_failure=pytest.fail)
        )
        proc._set_exited(0, None, ExitReason.EXITED, 0.0, 0.0)
        await task

    asyncio.run(main())
    assert host.calls == []
