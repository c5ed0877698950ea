"""No zombie accumulates: neither the host's own nor those of a process that re-forks.

By default the supervisor leaves the host's process alone (no subreaper), so a
host that runs ``sh -c 'cmd &'`` itself keeps init as the reaper of those
orphans. ``subreaper=True`` (``procwindow serve``, the window) reaps every
orphan that is re-parented to the process, at once and in bursts.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from procwindow import ExitReason, Supervisor
from procwindow.core._tree import FRESH_TTL

from ..core.helpers import py

ROOT = Path(__file__).resolve().parents[2]


def _last_pid() -> int:
    """The pid the kernel gave last in this pid namespace."""
    with open("/proc/sys/kernel/ns_last_pid") as f:
        return int(f.read())


def _pids_since(first: int) -> int:
    """How many pids the kernel gave since ``_last_pid()`` said ``first`` (they wrap)."""
    with open("/proc/sys/kernel/pid_max") as f:
        pid_max = int(f.read())
    return (_last_pid() - first) % pid_max


def _zombie_children(pid: int) -> int:
    try:
        children = psutil.Process(pid).children()
    except psutil.NoSuchProcess:
        return 0
    count = 0
    for child in children:
        try:
            count += child.status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            continue
    return count


HOST_USES_SUBPROCESS = textwrap.dedent(
    """
    import asyncio, os, subprocess, sys, time
    import psutil
    from procwindow import Supervisor

    async def main():
        async with Supervisor(log_dir=os.environ["LOGS"]) as sup:
            p = await sup.spawn(["sleep", "30"], session="s", agent="a")
            codes = []
            for _ in range(20):
                # The host's own commands, backgrounding grandchildren of their own.
                codes.append(subprocess.run(["sh", "-c", "sleep 0.05 & exit 7"]).returncode)
                popen = subprocess.Popen(["sh", "-c", "exit 3"])
                codes.append(popen.wait())
            await asyncio.sleep(1.0)  # every backgrounded sleep has ended by now
            zombies = [
                c.pid for c in psutil.Process().children()
                if c.status() == psutil.STATUS_ZOMBIE
            ]
            print(sorted(set(codes)), len(zombies), flush=True)
            await sup.kill(p.id)

    asyncio.run(main())
    """
)


@pytest.mark.promise("Guarantees and limits: The host's own children are left alone")
def test_a_host_that_runs_commands_of_its_own_keeps_their_statuses_and_no_zombies(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", HOST_USES_SUBPROCESS],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ, PYTHONPATH=str(ROOT), LOGS=str(tmp_path / "logs")),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[3,", "7]", "0"], done.stdout


#: The proc's leader starts a process whose every generation forks the next and
#: exits at once: thousands of orphans a second, all in the proc's process group.
PID_HOPPER = py(
    """
    import os, time
    if os.fork() == 0:
        while True:
            if os.fork():
                os._exit(0)
    time.sleep(60)
    """
)


@pytest.mark.promise("Guarantees and limits: The host's own children are left alone")
def test_a_pid_hopper_leaves_no_zombie_pile_under_a_subreaper(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path, subreaper=True, graceful_timeout=1) as sup:
            p = await sup.spawn(PID_HOPPER, session="s", agent="a")
            peak = 0
            first = _last_pid()
            started = time.monotonic()
            while time.monotonic() - started < 2.0:
                peak = max(peak, _zombie_children(os.getpid()))
                await asyncio.sleep(0.05)
            forks = _pids_since(first)
            info = await sup.term(p.id)  # stops the whole group
            assert info.reason is ExitReason.TERMINATED
            return peak, forks

    peak, forks = run(main())
    # Unreaped, every hop of the two seconds stays a zombie (thousands); reaped as
    # they come, those of one turn of the loop at most: how many that is depends on
    # the machine's speed and load (90-220 of ~6,000 here), the share does not.
    assert forks > 500, forks  # it did hop
    assert peak * 5 < forks, (peak, forks)


def test_a_pid_hopper_is_stopped_by_term_without_a_subreaper(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path, graceful_timeout=1) as sup:
            p = await sup.spawn(PID_HOPPER, session="s", agent="a")
            await asyncio.sleep(0.3)
            await sup.term(p.id)
            assert sup._run is not None
            snap = sup._run.signals.snap(FRESH_TTL)
            assert snap is not None
            assert snap.marked.get(p.id, []) == []

    run(main())


#: Waits for a line on stdin, then forks a child that ignores SIGTERM, says its
#: pid, and sleeps (the leader exits at SIGTERM at once).
LATE_STUBBORN_CHILD = py(
    """
    import os, signal, sys, time
    print("ready", flush=True)
    sys.stdin.readline()
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(60)
        os._exit(0)
    print("child", pid, flush=True)
    time.sleep(60)
    """
)


def test_term_waits_for_a_member_newer_than_the_last_look_at_proc(run, tmp_path):
    """term() returns once the whole tree is gone, judged by a look at /proc taken
    after the leader ended: one taken a moment before (shared between signals)
    does not know a member forked since, which would outlive term."""

    async def main():
        async with Supervisor(log_dir=tmp_path, graceful_timeout=0.5) as sup:
            p = await sup.spawn(LATE_STUBBORN_CHILD, session="s", agent="a", stdin=True)
            await sup.wait_for(p.id, "ready", timeout=10)
            assert sup._run is not None
            sup._run.signals.snap(0)  # a look at /proc now, before the child exists
            await sup.write(p.id, b"\n")
            line = await sup.wait_for(p.id, "child", timeout=10)
            child = int(line.text.split()[1])
            info = await sup.term(p.id)
            assert info.reason is ExitReason.TERMINATED
            assert not psutil.pid_exists(child) or (
                psutil.Process(child).status() == psutil.STATUS_ZOMBIE
            ), "a member of the tree outlived term()"

    run(main())
