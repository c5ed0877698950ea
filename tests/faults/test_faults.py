"""Faults: odd children, races, pid reuse, resource exhaustion. Each ends with the leak check."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from procwindow import ExitReason, ProcState, Supervisor

from ..core.helpers import alive, ignores_term, py, until

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.promise("Guarantees and limits: Exit is seen from the child, not from its pipes")
def test_child_closing_its_pipes_keeps_running(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(
                py("""
                    import os, time
                    print("bye pipes", flush=True)
                    os.close(1); os.close(2)
                    time.sleep(60)
                """),
                session="s",
                agent="a",
            )
            await until(lambda: not p.output_open, what="both pipes closed")
            await asyncio.sleep(0.3)
            assert p.state is ProcState.RUNNING
            assert [ln.text for ln in sup.read(p.id).lines] == ["bye pipes"]
            assert (await sup.term(p.id)).reason is ExitReason.TERMINATED

    run(main())


@pytest.mark.promise("Guarantees and limits: Descendants that leave the group are still found")
def test_child_that_changes_its_own_process_group_is_still_killed(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path, graceful_timeout=0.3) as sup:
            p = await sup.spawn(
                ignores_term("""
                    import os, subprocess
                    # leave its own group for its parent's (the supervisor's!) group,
                    # and start a child in a group of its own
                    os.setpgid(0, os.getpgid(os.getppid()))
                    kid = subprocess.Popen(["sleep", "60"], process_group=0)
                    print("moved", os.getpgid(0), kid.pid, flush=True)
                """),
                session="s",
                agent="a",
            )
            await until(lambda: sup.read(p.id).lines)
            moved_to, kid = map(int, sup.read(p.id).lines[0].text.split()[1:])
            assert moved_to == os.getpgid(0) != p.pgid
            info = await sup.term(p.id)  # must not signal the group it joined: ours
            assert info.reason is ExitReason.ESCALATED
            await until(lambda: not alive(kid), what="its child killed too")

    run(main())


def test_term_during_spawn_and_racing_verbs(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path, graceful_timeout=0.3) as sup:
            spawning = asyncio.ensure_future(sup.spawn(["sleep", "60"], session="s", agent="a"))
            # term of everything in the scope while the spawn is in flight
            await asyncio.gather(sup.term_all(session="s"), spawning)
            p = spawning.result()
            results = await asyncio.gather(
                sup.term(p.id),
                sup.kill(p.id),
                sup.wait(p.id),
                sup.term(p.id),
                return_exceptions=True,
            )
            assert all(r == results[0] for r in results), results
            assert p.exit == results[0]
            sup.dismiss(p.id)
            assert sup.procs() == []

    run(main())


PID_REUSE = textwrap.dedent(
    """
    import asyncio, os, signal, subprocess, sys
    from procwindow import Supervisor

    async def main():
        async with Supervisor(graceful_timeout=0.5) as sup:
            p = await sup.spawn(["true"], session="s", agent="a")
            await sup.wait(p.id)
            old = p.os_pid
            while os.path.exists(f"/proc/{old}"):  # reaped a moment after its exit
                await asyncio.sleep(0.01)
            # make the kernel hand out that pid again, to an unrelated process
            with open("/proc/sys/kernel/ns_last_pid", "w") as f:
                f.write(str(old - 1))
            bystander = subprocess.Popen(["sleep", "60"])
            assert bystander.pid == old, (bystander.pid, old)
            assert await sup.signal(p.id, signal.SIGKILL) is False
            assert await sup.interrupt(p.id) is False
            await sup.term(p.id)
            await sup.kill(p.id)
            sup.dismiss(p.id)
            await asyncio.sleep(0.2)
            assert bystander.poll() is None, "the bystander was hit"
            bystander.kill()
            bystander.wait()
            print("bystander untouched")

    asyncio.run(main())
    """
)


@pytest.mark.promise("Guarantees and limits: Signals never hit a reused pid")
def test_reused_pid_is_never_signalled(tmp_path):
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare(1) for a private pid namespace")
    done = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", PID_REUSE],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, PYTHONPATH=str(ROOT), XDG_STATE_HOME=str(tmp_path)),
    )
    if done.returncode != 0 and "unshare failed" in done.stderr:
        pytest.skip(f"no pid namespace here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "bystander untouched"


EMFILE = textwrap.dedent(
    """
    import asyncio, errno, os, resource
    from procwindow import Supervisor, SpawnFailed

    async def main():
        async with Supervisor(log_dir=os.environ["LOGS"]) as sup:
            warm = await sup.spawn(["true"], session="s", agent="a")
            await sup.wait(warm.id)
            used = len(os.listdir("/proc/self/fd"))
            soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
            resource.setrlimit(resource.RLIMIT_NOFILE, (used + 2, hard))
            try:
                await sup.spawn(["sleep", "60"], session="s", agent="a")
            except SpawnFailed as exc:
                assert exc.errno == errno.EMFILE, exc
                print("refused:", exc)
            else:
                raise AssertionError("spawn did not fail")
            assert [p.id for p in sup.procs()] == [warm.id]  # nothing half-made
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
            p = await sup.spawn(["echo", "still working"], session="s", agent="a")
            await sup.wait(p.id)
            while p.output_open:
                await asyncio.sleep(0.01)
            print(sup.read(p.id).lines[0].text)

    asyncio.run(main())
    """
)


def test_emfile_at_spawn_is_a_clean_error(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", EMFILE],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(
            os.environ,
            PYTHONPATH=str(ROOT),
            XDG_STATE_HOME=str(tmp_path),
            LOGS=str(tmp_path / "logs"),
        ),
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout.splitlines()
    assert out[0].startswith("refused:") and "Too many open files" in out[0]
    assert out[1] == "still working"


@pytest.mark.promise("Guarantees and limits: Each process runs in its own process group")
def test_signal_to_a_stopped_group_member_then_term(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path, graceful_timeout=5) as sup:
            p = await sup.spawn(["sh", "-c", "sleep 60 & wait"], session="s", agent="a")
            await asyncio.sleep(0.2)
            assert await sup.signal(p.id, signal.SIGSTOP) is True
            info = await asyncio.wait_for(sup.term(p.id), 5)  # SIGCONT follows SIGTERM
            assert info.reason is ExitReason.TERMINATED

    run(main())


def test_a_failure_in_capture_is_logged_and_the_child_stays_managed(
    run, tmp_path, monkeypatch, caplog
):
    from procwindow.core._output import OutputStore

    real_feed = OutputStore.feed
    calls = []

    def flaky_feed(self, stream, buf, size, now, **kw):
        calls.append(size)
        if len(calls) == 2:
            raise RuntimeError("injected capture bug")
        return real_feed(self, stream, buf, size, now, **kw)

    monkeypatch.setattr(OutputStore, "feed", flaky_feed)

    async def main():
        async with Supervisor(log_dir=tmp_path, graceful_timeout=0.3) as sup:
            # 4 MiB through the pipe: if draining stopped, the child would block forever
            p = await sup.spawn(
                py("""
                    import sys, time
                    for i in range(4):
                        sys.stdout.write(("x" * 1023 + "\\n") * 1024); sys.stdout.flush()
                        time.sleep(0.05)
                    print("done", flush=True)
                    time.sleep(60)
                """),
                session="s",
                agent="a",
            )
            await until(lambda: sup.read(p.id).lines and sup.read(p.id).lines[-1].text == "done")
            # every byte was read and logged, though one read's lines are lost
            assert os.path.getsize(sup.log_path(p.id)) == 4 * 1024 * 1024 + 5
            assert (await sup.term(p.id)).reason is ExitReason.TERMINATED

    with caplog.at_level("ERROR", logger="procwindow"):
        run(main())
    assert "capture failed" in caplog.text
    assert "injected capture bug" in caplog.text
