"""A proc's first process leads its group; once it exits, its zombie is kept
unreaped while other processes of the group live, so that the group id cannot
be handed to a stranger while a ``killpg`` to it may still be sent. It is reaped
as soon as the group is empty, at once when nothing was left, and always by the
supervisor's close; orphans re-parented to a subreaper are reaped behind it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
import uuid

import pytest

from procwindow import Supervisor
from procwindow.core import _cgroup
from procwindow.core._leaders import RECHECK

from .test_pid_hopper import needs_cgroups

#: A leader that leaves a member of its group running in the background.
LEAVES_A_MEMBER = "sleep 60 >/dev/null 2>&1 & echo $!"


def _state(pid: int) -> str | None:
    """The process's state letter in /proc (``Z``: a zombie), None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0].decode()
    except FileNotFoundError:
        return None


def _pgrp(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[2])
    except FileNotFoundError:
        return None


def _children() -> list[int]:
    """This process's children, zombies included, whichever thread forked them."""
    pids: list[int] = []
    for tid in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{tid}/children") as f:
            pids += [int(word) for word in f.read().split()]
    return pids


async def _gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while _state(pid) is not None:
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


async def _member(sup: Supervisor, proc_id: int) -> int:
    """Wait for the leader to exit; the pid of the member it printed."""
    await sup.wait(proc_id, timeout=10)
    lines = sup.read(proc_id)
    return int(lines.lines[0].text)


def test_a_leader_with_nothing_left_is_reaped_at_once_with_its_status() -> None:
    async def main() -> None:
        async with Supervisor() as sup:
            exited = await sup.spawn(["sh", "-c", "exit 3"], session="s", agent="a")
            killed = await sup.spawn(["sh", "-c", "kill -TERM $$"], session="s", agent="a")
            first = await sup.wait(exited.id, timeout=10)
            second = await sup.wait(killed.id, timeout=10)
            assert (first.code, first.signal) == (3, None)
            assert (second.code, second.signal) == (128 + 15, 15)
            assert await _gone(exited.os_pid, within=5)
            assert await _gone(killed.os_pid, within=5)

    asyncio.run(main())


def test_a_leader_s_zombie_is_held_while_its_group_has_members() -> None:
    async def main() -> None:
        async with Supervisor() as sup:
            proc = await sup.spawn(["sh", "-c", LEAVES_A_MEMBER], session="s", agent="a")
            member = await _member(sup, proc.id)
            assert _pgrp(member) == proc.os_pid  # in the leader's group
            await asyncio.sleep(3 * RECHECK)
            # The leader is a zombie of ours: its pid, the group's id, is not free.
            assert _state(proc.os_pid) == "Z"
            assert proc.exit is not None and proc.exit.code == 0
            # The member is stopped through the group; then the zombie goes.
            await sup.kill(proc.id)
            assert _state(member) in (None, "Z")
            assert await _gone(proc.os_pid, within=10)

    asyncio.run(main())


def test_a_held_leader_s_pid_is_not_reused_after_its_last_member_dies() -> None:
    """Between the death of the last member and the next look at the group, the
    group id may still be signalled: the held zombie keeps it ours."""
    ns_last_pid = "/proc/sys/kernel/ns_last_pid"
    if not os.access(ns_last_pid, os.W_OK):
        pytest.skip("choosing the next pid needs CAP_SYS_ADMIN")

    async def main() -> None:
        async with Supervisor() as sup:
            proc = await sup.spawn(["sh", "-c", LEAVES_A_MEMBER], session="s", agent="a")
            member = await _member(sup, proc.id)
            # No await from here on: the supervisor cannot look at the group.
            os.kill(member, 9)
            deadline = time.monotonic() + 10
            while _state(member) not in (None, "Z") and time.monotonic() < deadline:
                time.sleep(0.005)  # noqa: ASYNC251 (the loop must not run here)
            with open(ns_last_pid, "w") as f:
                f.write(str(proc.os_pid - 1))
            taker = subprocess.Popen(["true"])
            taker.wait()
            seen = (proc.os_pid, _state(proc.os_pid), member, _state(member), taker.pid)
            assert taker.pid != proc.os_pid, seen
            assert _state(proc.os_pid) == "Z", seen
            assert await _gone(proc.os_pid, within=10), seen

    asyncio.run(main())


@needs_cgroups
def test_a_cgroup_whose_leader_exited_while_it_was_moved_does_not_say_it_is_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a loaded machine a leader may exit after it was put in its cgroup and
    before its early children were moved after it: they are orphans then, no
    one's children to move, outside. Its empty cgroup must not be taken for an
    empty group (``Leaders.hold`` reaps at once only a ``whole`` one's leader)."""
    real_move = _cgroup._move_children

    def late_move(procs: str, pid: int, most: int) -> None:
        deadline = time.monotonic() + 10
        while _state(pid) != "Z":  # as a busy machine gets here: after its exit
            assert time.monotonic() < deadline
            time.sleep(0.005)
        real_move(procs, pid, most)

    cgroups = _cgroup.Cgroups.make(f"late-{uuid.uuid4().hex[:8]}")
    assert cgroups is not None
    early = subprocess.Popen(["sh", "-c", "sleep 60 & echo $!; sleep 0.2"], stdout=subprocess.PIPE)
    on_time = subprocess.Popen(["sh", "-c", "sleep 61 & echo $!; sleep 60"], stdout=subprocess.PIPE)
    assert early.stdout is not None and on_time.stdout is not None
    members = [int(early.stdout.readline()), int(on_time.stdout.readline())]
    try:
        monkeypatch.setattr(_cgroup, "_move_children", late_move)
        assert cgroups.add(1, early.pid)
        monkeypatch.setattr(_cgroup, "_move_children", real_move)
        assert cgroups.add(2, on_time.pid)
        # The first's member is left outside: its cgroup is empty, and says so.
        assert (cgroups.members(1), cgroups.whole(1)) == ([], False)
        assert _state(members[0]) == "S"
        # The second's leader ran on while its child was moved: whole.
        assert {on_time.pid, members[1]} <= set(cgroups.members(2) or [])
        assert cgroups.whole(2)
    finally:
        for pid in members:
            os.kill(pid, signal.SIGKILL)
        on_time.kill()
        cgroups.close()
        for proc in (early, on_time):
            proc.wait()
            assert proc.stdout is not None
            proc.stdout.close()


def test_dismissed_and_closed_supervisors_reap_held_leaders() -> None:
    async def main() -> tuple[int, int]:
        async with Supervisor() as sup:
            dismissed = await sup.spawn(["sh", "-c", LEAVES_A_MEMBER], session="s", agent="a")
            kept = await sup.spawn(["sh", "-c", LEAVES_A_MEMBER], session="s", agent="a")
            await _member(sup, dismissed.id)
            kept_member = await _member(sup, kept.id)
            sup.dismiss(dismissed.id)  # kills what is left; the zombie follows
            assert await _gone(dismissed.os_pid, within=10)
            assert _state(kept.os_pid) == "Z"
        return kept.os_pid, kept_member

    leader, member = asyncio.run(main())
    assert _state(leader) is None
    assert _state(member) in (None, "Z")


def test_orphans_are_reaped_behind_a_held_leader() -> None:
    """waitid(P_ALL) names the held zombie first, again and again: the orphans
    re-parented to a subreaper must still be reaped."""

    async def main() -> None:
        async with Supervisor(subreaper=True) as sup:
            held = await sup.spawn(["sh", "-c", LEAVES_A_MEMBER], session="s", agent="a")
            await _member(sup, held.id)
            # A daemon: its parent exits at once, so it is re-parented to us.
            daemon = await sup.spawn(
                ["sh", "-c", "(sleep 0.3 &) ; sleep 0.1; echo $$"], session="s", agent="a"
            )
            await sup.wait(daemon.id, timeout=10)
            await asyncio.sleep(1.5)
            assert [pid for pid in _children() if _state(pid) == "Z"] == [held.os_pid]

    asyncio.run(main())
