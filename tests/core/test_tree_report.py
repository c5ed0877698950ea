"""tree() and signal(os_pid=...): a proc's processes one by one, and a signal to one."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys

import pytest

from procwindow import InvalidField, ProcNotFound, Supervisor

from .helpers import alive, py, state_of, until

# A leader with a child, a grandchild, a setsid escapee and a busy loop, each
# printing its pid.
FAMILY = """
    import subprocess, sys
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    kid = subprocess.Popen(["sh", "-c", "sleep 600 & echo grandchild $!; wait"])
    away = subprocess.Popen(["sleep", "601"], start_new_session=True)
    print("busy", busy.pid, flush=True)
    print("kid", kid.pid, flush=True)
    print("away", away.pid, flush=True)
    sys.stdin.read()
"""


def _pid(sup, proc_id, word):
    for line in sup.read(proc_id).lines:
        if line.text.startswith(word + " "):
            return int(line.text.split()[1])
    return None


async def _family(sup):
    p = await sup.spawn(py(FAMILY), session="s", agent="a", stdin=True)
    words = ("busy", "kid", "away", "grandchild")
    try:  # five processes start here: on a loaded machine that is slow
        await until(lambda: all(_pid(sup, p.id, w) for w in words), timeout=30)
    except AssertionError:
        said = [line.text for line in sup.read(p.id).lines]
        raise AssertionError(f"not every pid printed: {said} ({sup.get(p.id).state})") from None
    return p, {w: _pid(sup, p.id, w) for w in ("busy", "kid", "away", "grandchild")}


async def _tree_has(sup, proc_id, pids):
    """The tree once it lists ``pids`` (a new process shows within a scan's age),
    each with its own command (a child just forked shows its parent's until it
    execs)."""
    deadline = asyncio.get_running_loop().time() + 10
    while True:
        tree = await sup.tree(proc_id)
        shown = {t.os_pid: t.command for t in tree}
        if set(pids) <= set(shown) and not any(
            shown[pid] == shown.get(t.ppid) for pid in pids for t in tree if t.os_pid == pid
        ):
            return tree
        assert asyncio.get_running_loop().time() < deadline, (pids, tree)
        await asyncio.sleep(0.2)


def test_tree_lists_each_process_under_its_parent_with_its_use(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p, pid = await _family(sup)
            sup.stats(p.id)  # the first sample: CPU % counts from here
            await asyncio.sleep(0.7)
            tree = await _tree_has(sup, p.id, pid.values())
            by_pid = {t.os_pid: t for t in tree}
            assert tree[0].os_pid == p.os_pid and tree[0].depth == 0
            assert tree[0].command.startswith(sys.executable + " -c")
            assert by_pid[pid["kid"]].ppid == p.os_pid and by_pid[pid["kid"]].depth == 1
            assert by_pid[pid["grandchild"]].ppid == pid["kid"]
            assert by_pid[pid["grandchild"]].depth == 2
            assert by_pid[pid["grandchild"]].command == "sleep 600"
            assert by_pid[pid["away"]].depth == 1  # found by its marker
            assert by_pid[pid["busy"]].cpu_percent > 20
            assert by_pid[pid["grandchild"]].state == "sleeping"
            assert all(t.rss > 0 and t.threads >= 1 and t.started > 0 for t in tree)
            # Parents come before their children.
            order = [t.os_pid for t in tree]
            assert order.index(pid["kid"]) < order.index(pid["grandchild"])
            # One sample: the processes add up to the proc's stats.
            stats = sup.stats(p.id)
            tree = await sup.tree(p.id)
            assert sum(t.cpu_percent for t in tree) == pytest.approx(stats.cpu_percent)
            assert sum(t.rss for t in tree) == stats.rss
            await sup.kill(p.id)
            assert await sup.tree(p.id) == []
            sup.dismiss(p.id)
            assert await sup.tree(p.id) == []  # from the history now: nothing runs
            with pytest.raises(ProcNotFound):
                await sup.tree(p.id + 1000)

    run(main())


def test_a_signal_to_one_process_of_the_tree_leaves_the_others(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p, pid = await _family(sup)
            await _tree_has(sup, p.id, pid.values())
            assert await sup.signal(p.id, "term", os_pid=pid["grandchild"])
            await until(lambda: not alive(pid["grandchild"]), what="grandchild gone")
            assert alive(pid["busy"]) and alive(pid["away"])
            assert sup.get(p.id).running
            # A member's state is read when asked: stopped, then running on again.
            assert await sup.signal(p.id, "STOP", os_pid=pid["busy"])
            await until(lambda: state_of(pid["busy"]) == "T", what="busy stopped")
            tree = {t.os_pid: t for t in await sup.tree(p.id)}
            assert tree[pid["busy"]].state == "stopped"
            assert await sup.signal(p.id, "CONT", os_pid=pid["busy"])
            await until(lambda: state_of(pid["busy"]) == "R", what="busy running")
            tree = {t.os_pid: t for t in await sup.tree(p.id)}
            assert tree[pid["busy"]].state == "running"
            assert await sup.signal(p.id, signal.SIGKILL, os_pid=pid["away"])
            await until(lambda: not alive(pid["away"]), what="setsid escapee gone")
            assert sup.get(p.id).running
            await sup.kill(p.id)

    run(main())


def test_a_pid_outside_the_tree_is_not_signalled(run, tmp_path):
    stranger = subprocess.Popen(["sleep", "600"])
    try:

        async def main():
            async with Supervisor(log_dir=tmp_path) as sup:
                p = await sup.spawn(["sleep", "600"], session="s", agent="a")
                assert not await sup.signal(p.id, "KILL", os_pid=stranger.pid)
                await asyncio.sleep(0.1)
                assert stranger.poll() is None
                # The proc's own process, by its pid: that process alone.
                assert await sup.signal(p.id, "SIGTERM", os_pid=p.os_pid)
                info = await sup.wait(p.id)
                assert info.signal == signal.SIGTERM
                # Exited: nothing to send to.
                assert not await sup.signal(p.id, "TERM")
                assert not await sup.signal(p.id, "TERM", os_pid=p.os_pid)

        run(main())
    finally:
        stranger.kill()
        stranger.wait()


def test_the_tree_outlives_its_leader_and_a_left_process_can_be_stopped(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(
                ["sh", "-c", "setsid sleep 602 >/dev/null 2>&1 & echo away $!"],
                session="s",
                agent="a",
            )
            await sup.wait(p.id)
            away = _pid(sup, p.id, "away")
            tree = await _tree_has(sup, p.id, [away])
            while tree[0].command == "setsid sleep 602":  # not exec'd yet
                await asyncio.sleep(0.05)
                tree = await sup.tree(p.id)
            assert [(t.os_pid, t.depth, t.command) for t in tree] == [(away, 1, "sleep 602")]
            assert await sup.signal(p.id, 15, os_pid=away)
            await until(lambda: not alive(away), what="the left process gone")

    run(main())


@pytest.mark.parametrize("bad", ["NOPE", -1, 65, True, "SIG_IGN", 1.5])
def test_a_bad_signal_is_refused_with_one_line(run, tmp_path, bad):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(["sleep", "600"], session="s", agent="a")
            with pytest.raises(InvalidField) as err:
                await sup.signal(p.id, bad)
            assert str(err.value).startswith("signal must be a signal name")
            assert "\n" not in str(err.value)
            assert sup.get(p.id).running
            with pytest.raises(InvalidField, match="os_pid must be an integer of at least 1"):
                await sup.signal(p.id, "TERM", os_pid=0)
            await sup.kill(p.id)

    run(main())


def test_a_process_that_execs_shows_its_new_command(run, tmp_path):
    """An exec changes a process's command line, not its pid or its start."""
    execs = py(
        """
        import os, sys
        print("up", flush=True)
        sys.stdin.readline()
        os.execvp("sleep", ["sleep", "601"])
        """
    )

    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(execs, session="s", agent="a", stdin=True)
            await sup.wait_for(p.id, "up", timeout=10)
            (before,) = await sup.tree(p.id)
            assert before.command.startswith(sys.executable + " -c")
            await sup.write(p.id, "go\n")
            # The new command line, not only the new name: the kernel names the
            # process before its exec has set the arguments (meanwhile it shows
            # "[sleep]", as ps does).
            await until(
                lambda: state_of(p.os_pid) is not None and _cmdline(p.os_pid) == "sleep 601"
            )
            (after,) = await sup.tree(p.id)
            assert (after.os_pid, after.started) == (before.os_pid, before.started)
            assert after.command == "sleep 601"
            await sup.kill(p.id)

    run(main())


def _cmdline(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().rstrip(b"\0").replace(b"\0", b" ").decode()
    except OSError:
        return None
