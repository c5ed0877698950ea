"""A pid hopper outside the group: a descendant that leaves its session, drops
its descriptors and its environment (the marker with them), and forks and
exits over and over, so that no pid of it lives long. Where a cgroup can be
made, its proc's cgroup holds it whatever it does, and term, kill and the
supervisor's close leave none of it running.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid

import pytest

from procwindow import Supervisor
from procwindow.core._cgroup import Cgroups

#: The leader: a child that leaves everything behind and becomes the hopper.
LEADER = textwrap.dedent(
    """
    import os, sys, time
    hopper = os.fork()
    if hopper:
        print("started", hopper, flush=True)  # the hopper's group: all of its pids
        time.sleep(600)
        sys.exit(0)
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.execve(sys.executable, [sys.executable, "-c", sys.argv[1], sys.argv[2]], {})
    """
)
#: The hopper: fork, let the parent go, again; a pid lives about 10 ms (slow enough
#: not to run through the machine's pids under other tests, and no look at /proc
#: finds it anyway: no marker, no group of ours, no parent of ours). It counts
#: its hops in a file (its
#: heartbeat) and ends when a stop file appears (so that a test that fails
#: leaves nothing running).
HOPPER = textwrap.dedent(
    """
    import os, sys, time
    beat, stop = sys.argv[1], sys.argv[1] + ".stop"
    n = 0
    while not os.path.exists(stop):
        try:
            if os.fork():
                os._exit(0)
        except OSError:
            pass
        n += 1
        if n % 2 == 0:
            with open(beat, "a") as f:
                f.write(".")
        time.sleep(0.01)
    """
)


def _beats(beat: str) -> int:
    try:
        return os.path.getsize(beat)
    except FileNotFoundError:
        return 0


async def _alive(beat: str, within: float = 0.3) -> bool:
    """Whether the hopper still hops: its heartbeat grows within ``within`` s."""
    before = _beats(beat)
    await asyncio.sleep(within)
    return _beats(beat) > before


def _cgroups_here() -> bool:
    probe = Cgroups.make(f"probe-{uuid.uuid4().hex[:8]}")
    if probe is None:
        return False
    probe.close()
    return True


needs_cgroups = pytest.mark.skipif(
    not _cgroups_here(), reason="no cgroup v2 here that this user may write"
)


def _stop_hopper(beat: str, group: int | None) -> None:
    """Whatever happened, stop the hopper: its stop file, and, if it still
    beats, SIGKILL to its group (one signal reaches a group whole, forks under
    way included). Only then: a group that is gone may name another one by
    now (pids are reused within seconds while hoppers run), and must not be
    signalled."""
    with open(beat + ".stop", "w"):
        pass
    if group is not None and asyncio.run(_alive(beat, 0.2)):
        with contextlib.suppress(OSError):
            os.killpg(group, signal.SIGKILL)
    time.sleep(0.05)


async def _start_hopper(sup: Supervisor, beat: str, groups: list[int]) -> int:
    p = await sup.spawn([sys.executable, "-c", LEADER, HOPPER, beat], session="s", agent="hop")
    started = await sup.wait_for(p.id, "started", timeout=10)
    groups.append(int(started.text.split()[1]))
    deadline = time.monotonic() + 10
    while _beats(beat) < 10:  # dozens of pids later
        assert time.monotonic() < deadline, "the hopper never ran"
        await asyncio.sleep(0.01)
    assert await _alive(beat)
    return p.id


@needs_cgroups
@pytest.mark.promise("Guarantees and limits: Where a cgroup can be made, nothing escapes")
@pytest.mark.parametrize("how", ["kill", "term", "close"])
def test_a_pid_hopper_outside_the_group_is_stopped(how: str, tmp_path) -> None:
    beat = str(tmp_path / "beat")
    groups: list[int] = []

    async def main() -> None:
        async with Supervisor(history=False, graceful_timeout=0.5) as sup:
            proc_id = await _start_hopper(sup, beat, groups)
            if how == "kill":
                await sup.kill(proc_id)
            elif how == "term":
                await sup.term(proc_id)
            if how != "close":
                assert not await _alive(beat)
        assert not await _alive(beat)

    try:
        asyncio.run(main())
    finally:
        _stop_hopper(beat, groups[0] if groups else None)


@needs_cgroups
def test_cgroups_are_removed_when_their_procs_are_done(tmp_path) -> None:
    async def main() -> list[str]:
        async with Supervisor(history=False) as sup:
            run = sup._bind_loop()
            assert run.cgroups is not None
            base = run.cgroups.base
            p = await sup.spawn(["true"], session="s", agent="a")
            await sup.wait(p.id)
            deadline = time.monotonic() + 10
            while str(p.id) in os.listdir(base):  # its output ended: its cgroup went
                assert time.monotonic() < deadline
                await asyncio.sleep(0.01)
            q = await sup.spawn(["sleep", "60"], session="s", agent="a")
            assert str(q.id) in os.listdir(base)
        return os.listdir(os.path.dirname(base)) if os.path.exists(base) else []

    leftovers = asyncio.run(main())
    assert not [name for name in leftovers if name.startswith("procwindow-")]


HOST = textwrap.dedent(
    """
    import asyncio, sys
    from procwindow import Supervisor

    async def main():
        sup = Supervisor(history=False)
        await sup.__aenter__()
        p = await sup.spawn([sys.executable, "-c"] + sys.argv[1:], session="s", agent="hop")
        started = await sup.wait_for(p.id, "started", timeout=10)
        print(sup._bind_loop().cgroups.base, started.text.split()[1], flush=True)
        await asyncio.sleep(600)

    asyncio.run(main())
    """
)


@needs_cgroups
@pytest.mark.promise("Guarantees and limits: Where a cgroup can be made, nothing escapes")
def test_a_pid_hopper_goes_when_its_host_is_killed(tmp_path) -> None:
    beat = str(tmp_path / "beat")
    group = ""
    host = subprocess.Popen(
        [sys.executable, "-c", HOST, LEADER, HOPPER, beat],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    try:
        assert host.stdout is not None
        base, group = host.stdout.readline().split()
        assert os.path.isdir(base)
        deadline = time.monotonic() + 10
        while _beats(beat) < 10:
            assert time.monotonic() < deadline, "the hopper never ran"
            time.sleep(0.01)
        host.kill()  # no close: the watchdog must stop it, by its cgroup
        host.wait()
        deadline = time.monotonic() + 10
        while os.path.exists(base) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not asyncio.run(_alive(beat))
        assert not os.path.exists(base)  # and the cgroups went with it
    finally:
        if host.poll() is None:
            host.kill()
            host.wait()
        if host.stdout is not None:
            host.stdout.close()
        _stop_hopper(beat, int(group) if group else None)


@needs_cgroups
def test_what_a_proc_forked_before_it_was_moved_goes_into_its_cgroup() -> None:
    """A loaded machine may put a proc in its cgroup some time after its exec:
    the processes it forked by then (and theirs) are moved in with it."""
    cgroups = Cgroups.make(f"early-{uuid.uuid4().hex[:8]}")
    assert cgroups is not None
    leader = subprocess.Popen(
        ["sh", "-c", "sh -c 'sleep 60 & sleep 60' & sleep 60"], start_new_session=True
    )
    try:
        deadline = time.monotonic() + 10
        while len(_tree(leader.pid)) < 4:  # sh, sh, and a sleep under each
            assert time.monotonic() < deadline, _tree(leader.pid)
            time.sleep(0.01)
        assert cgroups.add(1, leader.pid)
        members = sorted(cgroups.members(1) or [])
        assert members == sorted([leader.pid, *_tree(leader.pid)])
    finally:
        os.killpg(leader.pid, signal.SIGKILL)  # unreaped: the group is ours
        cgroups.close()
        leader.wait()


def _tree(pid: int) -> list[int]:
    """The descendants of ``pid``, by parentage."""
    out: list[int] = []
    todo = [pid]
    while todo:
        node = todo.pop()
        for tid in os.listdir(f"/proc/{node}/task"):
            with contextlib.suppress(OSError):
                with open(f"/proc/{node}/task/{tid}/children") as f:
                    kids = [int(w) for w in f.read().split()]
                out += kids
                todo += kids
    return out


@needs_cgroups
def test_only_dead_supervisors_of_our_pid_namespace_lose_their_cgroups() -> None:
    """A supervisor in another pid namespace (a container, ``unshare --pid``)
    sees other pids: what it takes for dead is not, and the cgroup tree is
    shared. A dead supervisor's cgroup is removed only by one of its namespace."""
    from procwindow.core import _cgroup

    root = _cgroup.cgroup2_root()
    assert root is not None
    dead = 2**22 + 1  # above any pid_max: no process has it
    ours = _cgroup._pid_namespace()
    theirs = os.path.join(root, f"procwindow-{ours + 1}.{dead}.abcd0001")
    stale = os.path.join(root, f"procwindow-{ours}.{dead}.abcd0002")
    victim = subprocess.Popen(["sleep", "60"])
    try:
        for base in (theirs, stale):
            os.makedirs(os.path.join(base, "1"))
        with open(os.path.join(theirs, "1", "cgroup.procs"), "w") as f:
            f.write(str(victim.pid))
        _cgroup._clear_stale(root)
        assert os.path.isdir(theirs) and victim.poll() is None  # left alone
        assert not os.path.exists(stale)  # removed
    finally:
        victim.kill()
        victim.wait()
        for base in (theirs, stale):
            with contextlib.suppress(OSError):
                os.rmdir(os.path.join(base, "1"))
            with contextlib.suppress(OSError):
                os.rmdir(base)
