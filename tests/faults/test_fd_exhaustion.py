"""At the fd limit the supervisor keeps control of every child.

Each case runs a host in a subprocess with ``ulimit -n`` lowered, fills its fd
table with SIGTERM-ignoring children (each costs pipes and a pidfd) and then
with plain open files, and checks that term, kill and close still stop
everything, that a failed attempt is never cached as a proc's fate, and that
the watchdog is told goodbye only when nothing of ours runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

ROOT = Path(__file__).resolve().parents[2]

HOST = textwrap.dedent(
    """
    import asyncio, errno, json, os, resource, sys
    import procwindow.core._tree as tree
    from procwindow import SpawnFailed, Supervisor

    LIMIT = int(os.environ["LIMIT"])
    tree.FD_RESERVE = int(os.environ["RESERVE"])
    STUBBORN = ["sh", "-c", "trap '' TERM; while :; do sleep 1; done"]

    def fill():
        held = []
        while True:
            try:
                held.append(os.open(os.devnull, os.O_RDONLY))
            except OSError as exc:
                assert exc.errno == errno.EMFILE, exc
                return held

    async def main():
        resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, LIMIT))
        report = {"pids": []}
        sup = Supervisor(log_dir=os.environ["LOGS"], graceful_timeout=0.5)
        await sup.__aenter__()
        procs = []
        while True:
            try:
                procs.append(await sup.spawn(STUBBORN, session="s", agent="a"))
            except SpawnFailed as exc:
                report["spawn_error"] = [exc.errno, str(exc)]
                break
        report["children"] = len(procs)
        report["pids"] = [p.os_pid for p in procs]
        report["state_file"] = sup._statefile.path
        held = fill()
        # At the limit: term escalates, and a second term on the same proc works.
        info = await sup.term(procs[0].id)
        report["term"] = info.reason.value
        report["term_again"] = (await sup.term(procs[0].id)).reason.value
        report["kill"] = (await sup.kill(procs[1].id)).reason.value
        # The fds term and kill freed are enough to read the leader's memory.
        report["stats_ok"] = sup.stats(procs[2].id).rss > 0
        try:
            await sup.close()
            report["close"] = "ok"
        except BaseException as exc:
            report["close"] = repr(exc)
        report["reasons"] = sorted({p.exit.reason.value for p in procs if p.exit})
        report["running"] = sum(p.running for p in procs)
        report["state_file_left"] = os.path.exists(report["state_file"])
        for fd in held:
            os.close(fd)
        print(json.dumps(report), flush=True)

    asyncio.run(main())
    """
)


def _run_host(tmp_path: Path, limit: int, reserve: int) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", HOST],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(
            os.environ,
            PYTHONPATH=str(ROOT),
            XDG_STATE_HOME=str(tmp_path / "state"),
            LOGS=str(tmp_path / "logs"),
            LIMIT=str(limit),
            RESERVE=str(reserve),
        ),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def _assert_all_gone(pids: list[int], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        alive = [pid for pid in pids if _alive(pid)]
        if not alive or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert not alive, f"{len(alive)} of {len(pids)} children outlived the host's close"


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.timeout(180)
@pytest.mark.promise(
    "Guarantees and limits: Running out of file descriptors never loses control of a child"
)
def test_term_kill_and_close_at_the_common_fd_limit(tmp_path):
    report = _run_host(tmp_path, limit=1024, reserve=4)
    assert report["children"] > 250  # hundreds of stubborn children fill 1024 fds
    errno_, message = report["spawn_error"]
    assert errno_ == 24 and "Too many open files" in message and "1024" in message
    assert report["term"] == "escalated"
    assert report["term_again"] == "escalated"
    assert report["kill"] == "killed"
    assert report["stats_ok"] is True
    assert report["close"] == "ok"
    assert report["running"] == 0
    assert report["reasons"] == ["escalated", "killed"]
    # Nothing of ours ran any more, so the state file was stood down.
    assert report["state_file_left"] is False
    _assert_all_gone(report["pids"])


@pytest.mark.timeout(180)
@pytest.mark.promise(
    "Guarantees and limits: Running out of file descriptors never loses control of a child"
)
def test_without_spare_fds_stopping_falls_back_to_groups(tmp_path):
    # No reserve: /proc cannot be read at all at the limit. Signals still reach
    # every group through the pidfds, and close finishes once exits free fds.
    report = _run_host(tmp_path, limit=256, reserve=0)
    assert report["children"] > 50
    assert report["term"] == "escalated"
    assert report["term_again"] == "escalated"
    assert report["kill"] == "killed"
    assert report["close"] == "ok"
    assert report["running"] == 0
    _assert_all_gone(report["pids"])


GRANDCHILD_HOST = r"""
import asyncio, errno, os, resource, sys
import procwindow.core._tree as tree
from procwindow import Supervisor

tree.FD_RESERVE = 0
OUT = os.environ["OUT"]
ESCAPES = [
    "sh", "-c",
    "setsid sh -c 'trap \"\" TERM; echo $$ > \"$OUT.tmp\"; mv \"$OUT.tmp\" \"$OUT\"; "
    "exec sleep 60' & trap '' TERM; sleep 60",
]

def grandchild_gone(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(") ", 1)[1][0] == "Z"
    except FileNotFoundError:
        return True

async def hog(held):
    # A host that uses up every fd it can get, as a leak elsewhere would: at every
    # turn of the loop, so that an fd the supervisor closes (a pidfd, a pipe) is
    # taken before the supervisor's next look at /proc.
    while True:
        try:
            held.append(os.open(os.devnull, os.O_RDONLY))
        except OSError:
            await asyncio.sleep(0)

async def main():
    sup = Supervisor(log_dir=os.environ["LOGS"], graceful_timeout=0.3)
    await sup.__aenter__()
    p = await sup.spawn(ESCAPES, session="s", agent="a", env={"OUT": OUT})
    while not os.path.exists(OUT):
        await asyncio.sleep(0.02)
    grandchild = int(open(OUT).read())
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + 8, hard))
    held = []
    hogging = asyncio.ensure_future(hog(held))
    await asyncio.sleep(0.05)
    # The setsid grandchild is outside the group and /proc is unreadable.
    info = await sup.term(p.id)
    print("term", info.reason.value, flush=True)
    if os.environ["MODE"] == "close":
        await sup.close()
        print("closed", "state file kept" if os.path.exists(sup._statefile.path) else "", flush=True)
        hogging.cancel()
        for fd in held:
            os.close(fd)
        # Not told goodbye, the watchdog stopped what we could not see.
        for _ in range(500):
            if grandchild_gone(grandchild):
                print("grandchild stopped", flush=True)
                return
            await asyncio.sleep(0.02)
        print("grandchild survived", flush=True)
        return
    hogging.cancel()
    for fd in held:
        os.close(fd)
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    # Once fds are back, the sweep finishes the job without being asked.
    for _ in range(500):
        if grandchild_gone(grandchild):
            print("grandchild stopped", flush=True)
            break
        await asyncio.sleep(0.02)
    else:
        print("grandchild survived", flush=True)
    await sup.close()

asyncio.run(main())
"""


def _run_grandchild_host(tmp_path: Path, mode: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", GRANDCHILD_HOST],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(
            os.environ,
            PYTHONPATH=str(ROOT),
            XDG_STATE_HOME=str(tmp_path / "state"),
            LOGS=str(tmp_path / "logs"),
            OUT=str(tmp_path / "grandchild.pid"),
            MODE=mode,
            # What is tested is the fallback where no cgroup holds the tree: with
            # one, its cgroup.kill may find an fd at close, or may not.
            PROCWINDOW_NO_CGROUPS="1",
        ),
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done.stdout.splitlines()


def test_a_tree_that_could_not_be_seen_is_killed_once_fds_free_up(tmp_path):
    out = _run_grandchild_host(tmp_path, "sweep")
    assert out == ["term escalated", "grandchild stopped"]


def test_close_that_cannot_see_the_tree_leaves_it_to_the_watchdog(tmp_path):
    out = _run_grandchild_host(tmp_path, "close")
    assert out == ["term escalated", "closed state file kept", "grandchild stopped"]
