"""Process trees: grandchildren holding pipes, setsid escapees, orphans."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import psutil
import pytest

from procwindow import ExitReason, Supervisor

from .helpers import alive, py, until

# The child starts a grandchild that inherits stdout, prints its pid, and exits.
GRANDCHILD_HOLDS_STDOUT = """
    import subprocess, sys
    g = subprocess.Popen([sys.executable, "-c",
        "import time\\nfor i in range(600):\\n    print('tick', i, flush=True)\\n    time.sleep(0.1)"])
    print("grandchild", g.pid, flush=True)
"""

SETSID_GRANDCHILD = """
    import subprocess, sys
    g = subprocess.Popen(["sleep", "600"], start_new_session=True, stdout=subprocess.DEVNULL)
    h = subprocess.Popen(["sleep", "600"], stdout=subprocess.DEVNULL)
    print("setsid", g.pid, flush=True)
    print("plain", h.pid, flush=True)
    {tail}
"""


def _pids(sup, proc_id, word):
    return [int(ln.text.split()[1]) for ln in sup.read(proc_id).lines if ln.text.startswith(word)]


@pytest.mark.promise("Guarantees and limits: Exit is seen from the child, not from its pipes")
def test_grandchild_holding_stdout_does_not_keep_proc_running(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(py(GRANDCHILD_HOLDS_STDOUT), session="s", agent="a")
            info = await asyncio.wait_for(sup.wait(p.id), 5)  # promptly, pipe still open
            assert info.reason is ExitReason.EXITED
            assert p.output_open
            (gpid,) = _pids(sup, p.id, "grandchild")
            assert alive(gpid)
            # its output still reaches the ring and the log after the exit
            await until(
                lambda: len([ln for ln in sup.read(p.id).lines if ln.text.startswith("tick")]) >= 3
            )
            assert b"tick 2\n" in Path(sup.log_path(p.id, "stdout")).read_bytes()
            await sup.term(p.id)  # stops what the proc left behind
            await until(lambda: not alive(gpid), what="grandchild killed by term")
            await until(lambda: not p.output_open, what="pipe closed")

    run(main())


def test_dismiss_kills_grandchild_holding_stdout(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(py(GRANDCHILD_HOLDS_STDOUT), session="s", agent="a")
            await sup.wait(p.id)
            await until(lambda: _pids(sup, p.id, "grandchild"))
            (gpid,) = _pids(sup, p.id, "grandchild")
            sup.dismiss(p.id)
            await until(lambda: not alive(gpid), what="grandchild killed by dismiss")

    run(main())


@pytest.mark.promise("Guarantees and limits: Descendants that leave the group are still found")
def test_term_kills_setsid_grandchild(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path, graceful_timeout=2) as sup:
            p = await sup.spawn(
                py(SETSID_GRANDCHILD.format(tail="import time; time.sleep(600)")),
                session="s",
                agent="a",
            )
            await until(lambda: _pids(sup, p.id, "plain"))
            tree = [_pids(sup, p.id, "setsid")[0], _pids(sup, p.id, "plain")[0]]
            assert os.getpgid(tree[0]) != p.pgid  # it really left the group
            info = await sup.term(p.id)
            assert info.reason is ExitReason.TERMINATED
            await until(lambda: not any(alive(pid) for pid in tree), what="tree gone")

    run(main())


def test_kill_returns_once_the_tree_is_gone(run, tmp_path):
    """As term does: a harness that rebinds a port right after kill() must not
    meet a descendant still dying."""

    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            for _ in range(3):
                p = await sup.spawn(
                    py(SETSID_GRANDCHILD.format(tail="import time; time.sleep(600)")),
                    session="s",
                    agent="a",
                )
                await until(lambda p=p: _pids(sup, p.id, "plain"))
                tree = [_pids(sup, p.id, "setsid")[0], _pids(sup, p.id, "plain")[0]]
                info = await sup.kill(p.id)
                assert info.reason is ExitReason.KILLED
                assert [pid for pid in tree if alive(pid)] == []

    run(main())


def test_orphaned_setsid_grandchild_is_killed_after_leader_exit(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(py(SETSID_GRANDCHILD.format(tail="")), session="s", agent="a")
            await sup.wait(p.id)
            setsid_pid = _pids(sup, p.id, "setsid")[0]
            plain_pid = _pids(sup, p.id, "plain")[0]
            assert alive(setsid_pid)
            assert alive(plain_pid)
            await sup.term(p.id)
            await until(lambda: not alive(setsid_pid) and not alive(plain_pid))
        assert psutil.Process().children(recursive=True) == []

    run(main())


def test_double_forked_daemon_is_killed_on_close(run, tmp_path):
    daemon = """
        import os, sys, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                print("daemon", os.getpid(), flush=True)
                time.sleep(600)
            os._exit(0)
        os.wait()
    """

    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(py(daemon), session="s", agent="a")
            await sup.wait(p.id)
            await until(lambda: _pids(sup, p.id, "daemon"))
            (dpid,) = _pids(sup, p.id, "daemon")
            assert alive(dpid)
        assert not alive(dpid)

    run(main())


def test_dismiss_kills_a_daemon_that_let_go_of_the_pipes(run, tmp_path):
    daemon = """
        import os, sys, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                print("daemon", os.getpid(), flush=True)
                devnull = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(devnull, fd)
                time.sleep(600)
            os._exit(0)
        os.wait()
        time.sleep(0.2)
    """

    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(py(daemon), session="s", agent="a")
            await sup.wait(p.id)
            await until(lambda: not p.output_open)
            (dpid,) = _pids(sup, p.id, "daemon")
            assert alive(dpid)
            sup.dismiss(p.id)
            await until(lambda: not alive(dpid), what="daemon killed after dismiss")

    run(main())


def test_reaping_orphans_never_steals_a_host_childs_status(run, tmp_path):
    """The host's own children keep their exit statuses; the orphans of our procs
    are not left as zombies of the host."""
    orphan_maker = """
        import subprocess, sys
        for _ in range(3):
            subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3)"], start_new_session=True)
    """

    async def main():
        import subprocess

        async with Supervisor(log_dir=tmp_path) as sup:
            host_children = [subprocess.Popen(["sh", "-c", f"sleep 0.5; exit {c}"]) for c in (3, 4)]
            p = await sup.spawn(py(orphan_maker), session="s", agent="a")
            await sup.wait(p.id)
            # orphans die at ~0.3 s (init reaps them); host children exit at 0.5 s
            await asyncio.sleep(2.5)
            assert [c.wait(timeout=5) for c in host_children] == [3, 4]
            assert not [
                c for c in psutil.Process().children() if c.status() == psutil.STATUS_ZOMBIE
            ]

    run(main())
