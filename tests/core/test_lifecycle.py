"""Spawning, exit detection, exit codes and reasons, signals."""

from __future__ import annotations

import asyncio
import os
import re
import signal

import psutil
import pytest

from procwindow import ExitReason, InvalidField, ProcState, Supervisor

from .helpers import IGNORES_TERM, alive, py, state_of, until

# Lifecycle, events and capture run on both event loops in the fast tier too.
pytestmark = pytest.mark.both_loops


def test_true_exits_before_spawn_returns(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(["true"], session="s", agent="a")
            assert p.id == 1
            assert p.pgid == p.os_pid
            info = await asyncio.wait_for(sup.wait(p.id), 5)
            assert (info.code, info.signal, info.reason) == (0, None, ExitReason.EXITED)
            assert p.state is ProcState.EXITED
            assert p.exit == info
            assert p.ended_at is not None
            assert p.ended_at >= p.started_at

    run(main())


def test_exit_codes_0_to_255_exactly(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            procs = []
            for code in range(256):
                procs.append(await sup.spawn(["sh", "-c", f"exit {code}"], session="s", agent="a"))
            for code, p in enumerate(procs):
                info = await sup.wait(p.id)
                assert info.code == code
                assert info.signal is None
                assert info.reason is (ExitReason.EXITED if code == 0 else ExitReason.FAILED)
            assert [p.id for p in sup.procs()] == list(range(256, 0, -1))

    run(main())


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGSEGV, signal.SIGUSR1])
def test_death_by_signal_reported_exactly(run, tmp_path, sig):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(
                py(f"import os; os.kill(os.getpid(), {int(sig)})"), session="s", agent="a"
            )
            info = await sup.wait(p.id)
            assert info.signal == sig
            assert info.code == 128 + sig
            assert info.reason is ExitReason.FAILED  # nobody here sent it

    run(main())


@pytest.mark.promise("Guarantees and limits: Each process runs in its own process group")
def test_sigterm_ignored_escalates_to_sigkill(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path, graceful_timeout=0.5) as sup:
            p = await sup.spawn(IGNORES_TERM, session="s", agent="a")
            await until(lambda: sup.read(p.id).lines, what="ready")
            loop = asyncio.get_running_loop()
            t0 = loop.time()
            info = await sup.term(p.id)
            assert loop.time() - t0 >= 0.45
            assert info.reason is ExitReason.ESCALATED
            assert info.signal == signal.SIGKILL
            assert not alive(p.os_pid)

    run(main())


def test_graceful_term_is_terminated(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path, graceful_timeout=10) as sup:
            p = await sup.spawn(["sleep", "60"], session="s", agent="a")
            assert p.state is ProcState.RUNNING
            info = await asyncio.wait_for(sup.term(p.id), 5)
            assert info.reason is ExitReason.TERMINATED
            assert info.signal == signal.SIGTERM

    run(main())


#: On SIGINT: say so, run a command of its own to clean up (its status goes to
#: argv[1]), exit 7. SIGTERM is ignored: only the stop signal asked for stops it.
#: (A loop of short sleeps, not ``sleep 60 & wait``: bash runs a trap for a signal
#: that comes between the ``&`` and the ``wait`` only once the wait is over.)
ON_INT = """
    trap '' TERM
    trap 'echo got INT; sleep 0.3; echo $? > "$1"; exit 7' INT
    echo ready
    while :; do sleep 0.05; done
"""


@pytest.mark.promise("Workspaces: Shutdown")
def test_terminate_sends_the_proc_s_stop_signal(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path, graceful_timeout=10) as sup:
            status = tmp_path / "status"
            argv = ["bash", "-c", ON_INT, "on-int", str(status)]
            p = await sup.spawn(argv, session="s", agent="a", stop_signal="INT")
            assert p.options.stop_signal == signal.SIGINT
            await until(lambda: "ready" in sup.read(p.id).text, what="ready")
            info = await asyncio.wait_for(sup.term(p.id), 5)  # no escalation: INT stops it
            assert (info.code, info.reason) == (7, ExitReason.TERMINATED)
            assert "got INT" in sup.read(p.id).text
            # The handler's own command ran to its end: the stop was sent once.
            assert status.read_text() == "0\n"
            # A restart keeps it; a timeout stops with it too.
            q = await sup.restart(p.id)
            assert q.options.stop_signal == signal.SIGINT
            await sup.kill(q.id)
            r = await sup.spawn(argv, session="s", agent="a", stop_signal=2, timeout=0.5)
            info = await asyncio.wait_for(sup.wait(r.id), 5)
            assert (info.code, info.reason) == (7, ExitReason.TIMEOUT)

    run(main())


@pytest.mark.promise("Guarantees and limits: Each process runs in its own process group")
def test_a_stop_handler_s_own_command_gets_no_second_signal(run, tmp_path):
    # SIGTERM handled by running a command: that command, forked after the
    # group's signal, must not be signalled again (it was, through the cgroup).
    async def main():
        async with Supervisor(log_dir=tmp_path, graceful_timeout=10) as sup:
            for attempt in range(3):
                status = tmp_path / f"status{attempt}"
                script = ON_INT.replace("trap '' TERM\n", "").replace("INT\n", "TERM\n")
                q = await sup.spawn(
                    ["bash", "-c", script, "on-term", str(status)], session="s", agent="a"
                )
                await until(lambda q=q: "ready" in sup.read(q.id).text, what="ready")
                info = await asyncio.wait_for(sup.term(q.id), 5)
                assert (info.code, info.reason) == (7, ExitReason.TERMINATED)
                assert status.read_text() == "0\n", f"attempt {attempt}: cut short"

    run(main())


#: Runs until the file argv[1] exists, then says so and exits 5; ignores SIGTERM.
UNTIL_FLAG = """
    trap '' TERM
    echo ready
    until test -f "$1"; do sleep 0.05; done
    echo asked; exit 5
"""


@pytest.mark.promise("Workspaces: Shutdown")
def test_a_stop_command_asks_instead_of_the_signal(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path, graceful_timeout=10) as sup:
            flag = tmp_path / "stop-now"
            # It runs in the proc's directory and environment (FLAG is the proc's own).
            p = await sup.spawn(
                ["bash", "-c", UNTIL_FLAG, "until-flag", str(flag)],
                session="s",
                agent="a",
                cwd=tmp_path,
                env={"FLAG": flag.name},
                stop_command=["sh", "-c", 'touch "$FLAG"'],
            )
            assert p.options.stop_command == ("sh", "-c", 'touch "$FLAG"')
            await until(lambda: "ready" in sup.read(p.id).text, what="ready")
            info = await asyncio.wait_for(sup.term(p.id), 5)
            assert (info.code, info.reason) == (5, ExitReason.TERMINATED)
            assert "asked" in sup.read(p.id).text
            # A stop command that fails: the stop signal asks instead.
            q = await sup.spawn(["sleep", "30"], session="s", agent="a", stop_command=["false"])
            info = await asyncio.wait_for(sup.term(q.id), 5)
            assert (info.signal, info.reason) == (signal.SIGTERM, ExitReason.TERMINATED)

    run(main())


def test_a_stop_command_that_does_not_stop_it_is_bounded_by_the_grace(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path, graceful_timeout=0.5) as sup:
            # It asks nothing and runs on: SIGKILL after the grace takes both.
            p = await sup.spawn(IGNORES_TERM, session="s", agent="a", stop_command=["sleep", "60"])
            await until(lambda: sup.read(p.id).lines, what="ready")
            info = await asyncio.wait_for(sup.term(p.id), 5)
            assert info.reason is ExitReason.ESCALATED
            assert not any(
                "sleep 60" in " ".join(c.cmdline()) for c in psutil.Process().children(True)
            )

    run(main())


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (0, "stop_signal must be a signal name (TERM, INT, HUP, KILL, USR1…) or a number from 1"),
        ("NOPE", "stop_signal must be a signal name (TERM, INT, HUP, KILL, USR1…) or a number"),
        (True, "stop_signal must be a signal name"),
    ],
)
def test_a_bad_stop_signal_is_refused(run, tmp_path, value, message):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            with pytest.raises(InvalidField, match=re.escape(message)):
                await sup.spawn(["true"], session="s", agent="a", stop_signal=value)
            assert sup.procs() == []

    run(main())


def test_stopped_child_still_exits_on_term(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path, graceful_timeout=10) as sup:
            p = await sup.spawn(["sleep", "60"], session="s", agent="a")
            os.kill(p.os_pid, signal.SIGSTOP)
            await until(lambda: state_of(p.os_pid) == "T", what="stopped")
            info = await asyncio.wait_for(sup.term(p.id), 5)  # no escalation needed
            assert info.reason is ExitReason.TERMINATED
            assert info.signal == signal.SIGTERM

    run(main())


def test_kill_interrupt_and_signal(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            a = await sup.spawn(["sleep", "60"], session="s", agent="a")
            info = await sup.kill(a.id)
            assert (info.reason, info.signal) == (ExitReason.KILLED, signal.SIGKILL)

            b = await sup.spawn(
                py("""
                    import signal, sys, time
                    signal.signal(signal.SIGUSR1, lambda *a: (print("usr1", flush=True), sys.exit(7)))
                    print("ready", flush=True)
                    time.sleep(60)
                """),
                session="s",
                agent="a",
            )
            await until(lambda: sup.read(b.id).lines)
            assert await sup.signal(b.id, signal.SIGUSR1) is True
            info = await sup.wait(b.id)
            assert info.code == 7
            assert info.reason is ExitReason.TERMINATED
            assert [line.text for line in sup.read(b.id).lines] == ["ready", "usr1"]

            c = await sup.spawn(
                py("import time; print('x', flush=True); time.sleep(60)"), session="s", agent="a"
            )
            await until(lambda: sup.read(c.id).lines)
            assert await sup.interrupt(c.id) is True
            info = await sup.wait(c.id)
            # Python dies of the SIGINT it re-raises after KeyboardInterrupt
            assert (info.code, info.signal) == (128 + signal.SIGINT, signal.SIGINT)
            assert info.reason is ExitReason.TERMINATED

    run(main())


def signal_mask(pid: int, field: str) -> set[int]:
    """The signals a process's /proc status lists in ``field`` (SigIgn, SigBlk…)."""
    with open(f"/proc/{pid}/status") as f:
        line = next(line for line in f if line.startswith(field + ":"))
    bits = int(line.split()[1], 16)
    return {sig for sig in range(1, 65) if bits >> (sig - 1) & 1}


@pytest.mark.parametrize("how", ["background job", "nohup"])
@pytest.mark.promise("Guarantees and limits: Signals reach them")
def test_a_host_ignoring_signals_does_not_pass_that_on(run, tmp_path, how):
    # A script's `serve &` ignores SIGINT and SIGQUIT, nohup SIGHUP: the children
    # start with them at their default, so interrupt() and signal() still work.
    ignored = [signal.SIGINT, signal.SIGQUIT] if how == "background job" else [signal.SIGHUP]
    before = {sig: signal.signal(sig, signal.SIG_IGN) for sig in ignored}

    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            # One spawn alone (started on the loop), then a burst (the spawn thread).
            procs = [await sup.spawn(["sleep", "60"], session="s", agent="a")]
            procs += await asyncio.gather(
                *(sup.spawn(["sleep", "60"], session="s", agent="a") for _ in range(3))
            )
            for p in procs:
                assert signal_mask(p.os_pid, "SigIgn").isdisjoint(ignored)
                if how == "background job":
                    assert await sup.interrupt(p.id) is True
                else:
                    assert await sup.signal(p.id, signal.SIGHUP) is True
                info = await asyncio.wait_for(sup.wait(p.id), 10)
                assert info.signal == ignored[0]

    try:
        run(main())
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


@pytest.mark.promise("Guarantees and limits: Signals never hit a reused pid")
def test_signal_after_reap_is_a_noop(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(["true"], session="s", agent="a")
            await sup.wait(p.id)
            assert await sup.signal(p.id, signal.SIGTERM) is False
            assert await sup.interrupt(p.id) is False
            assert (await sup.term(p.id)).reason is ExitReason.EXITED
            assert (await sup.kill(p.id)).reason is ExitReason.EXITED

    run(main())


def test_term_kill_dismiss_race_gives_one_final_state(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path, graceful_timeout=0.3) as sup:
            p = await sup.spawn(
                IGNORES_TERM,
                session="s",
                agent="a",
            )
            await until(lambda: sup.read(p.id).lines)
            results = await asyncio.gather(sup.term(p.id), sup.kill(p.id), sup.term(p.id))
            assert results[0] == results[1] == results[2]
            assert results[0].reason is ExitReason.KILLED
            sup.dismiss(p.id)
            assert sup.procs() == []

    run(main())


def test_restart_makes_a_new_proc_with_the_same_command(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            work = tmp_path / "work"
            work.mkdir()
            p = await sup.spawn(
                ["sh", "-c", 'echo "$PWD $GREETING"'],
                session="s",
                agent="a",
                tool="build",
                cwd=work,
                env={"GREETING": "hello"},
            )
            await sup.wait(p.id)
            q = await sup.restart(p.id)
            assert q.id == p.id + 1
            assert (q.argv, q.session, q.agent, q.tool, q.cwd) == (
                p.argv,
                p.session,
                p.agent,
                p.tool,
                p.cwd,
            )
            await sup.wait(q.id)
            assert [ln.text for ln in sup.read(q.id).lines] == [f"{work} hello"]

    run(main())


def test_close_terminates_everything(run, tmp_path):
    async def main():
        sup = Supervisor(log_dir=tmp_path, graceful_timeout=0.3)
        async with sup:
            procs = [await sup.spawn(["sleep", "60"], session="s", agent=f"a{i}") for i in range(5)]
            stubborn = await sup.spawn(
                IGNORES_TERM,
                session="s",
                agent="x",
            )
            await until(lambda: sup.read(stubborn.id).lines)
        assert sup.closed
        for p in procs:
            assert p.exit is not None
            assert p.exit.reason is ExitReason.TERMINATED
        assert stubborn.exit is not None
        assert stubborn.exit.reason is ExitReason.ESCALATED

    run(main())


def test_term_all_is_concurrent_and_scoped(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path, graceful_timeout=0.5) as sup:
            s1 = [await sup.spawn(IGNORES_TERM, session="s1", agent=f"a{i}") for i in range(4)]
            s2 = await sup.spawn(["sleep", "60"], session="s2", agent="a")
            await until(lambda: all(sup.read(p.id).lines for p in s1))
            loop = asyncio.get_running_loop()
            t0 = loop.time()
            await sup.term_all(session="s1")
            # four escalations in parallel take one graceful_timeout, not four
            assert loop.time() - t0 < 0.5 * 4
            assert all(p.exit and p.exit.reason is ExitReason.ESCALATED for p in s1)
            assert s2.running
            await sup.kill_all()
            assert s2.exit is not None
            assert s2.exit.reason is ExitReason.KILLED

    run(main())


def test_per_proc_graceful_timeout(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path, graceful_timeout=30) as sup:
            p = await sup.spawn(
                IGNORES_TERM,
                session="s",
                agent="a",
                graceful_timeout=0.2,
            )
            assert p.graceful_timeout == 0.2
            await until(lambda: sup.read(p.id).lines)
            info = await asyncio.wait_for(sup.term(p.id), 5)
            assert info.reason is ExitReason.ESCALATED
            q = await sup.restart(p.id)
            assert q.graceful_timeout == 0.2
            await sup.kill(q.id)
            with pytest.raises(ValueError, match="graceful_timeout"):
                await sup.spawn(["true"], session="s", agent="a", graceful_timeout=-1)

    run(main())
