"""The watchdog and the state file under faults: restarts, forked helpers, a stopped
watchdog, a full disk, hostile state directories, and standing down."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import gc
import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from procwindow import Supervisor
from procwindow.core._statefile import StateFile, recover_leftovers, state_dir
from procwindow.core._watchdog import Watchdog

from ..core.helpers import alive, state_of, until
from ..tiers import scaled
from .test_supervisor_death import _marked, _wait_dead

ROOT = Path(__file__).resolve().parents[2]

#: Pids above PID_MAX_LIMIT (2**22): no process can have them.
FAKE = 5_000_000


def _wait_for(cond: Callable[[], object], timeout: float = 15.0, what: str = "") -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what or cond}")
        time.sleep(0.01)


def _start_time(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as f:
        raw = f.read()
    return int(raw[raw.rfind(b")") + 2 :].split()[19])


def _token(tag: str) -> str:
    # Starts like a supervisor's token, so the leak check sees marked strays.
    return f"{os.getpid()}.{tag}{time.monotonic_ns() % 10**6}"


def _kill(pids: list[int]) -> None:
    """SIGKILL stragglers; reap them if they were re-parented to us."""
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    for pid in pids:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)


@contextlib.contextmanager
def _rescue_after(seconds: float, pid: Callable[[], int | None]) -> Iterator[list[bool]]:
    """Continue a stopped process after ``seconds`` if the test is stuck on it, so a
    blocked write fails the test instead of hanging it; yields [fired]."""
    fired = [False]

    def rescue() -> None:
        target = pid()
        if target is not None:
            fired[0] = True
            with contextlib.suppress(OSError):
                os.kill(target, signal.SIGCONT)

    timer = threading.Timer(seconds, rescue)
    timer.start()
    try:
        yield fired
    finally:
        timer.cancel()
        timer.join()


def _stop(pid: int) -> None:
    os.kill(pid, signal.SIGSTOP)
    _wait_for(lambda: state_of(pid) == "T", what=f"{pid} stopped")


def _dumped(watchdog: Watchdog, path: Path) -> dict[int, int]:
    """What the watchdog process itself has listed, through its DUMP request."""
    _wait_for(watchdog.flush, what="the queue delivered")
    assert watchdog.dump(str(path))
    _wait_for(path.exists, what="the watchdog's dump")
    out = {}
    for line in path.read_text().splitlines():
        pid, start = line.split()
        out[int(pid)] = int(start)
    path.unlink()
    return out


def _sleeper(env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", "120"], start_new_session=True, env=env)


# -- the watchdog: restarts --------------------------------------------------


def test_a_restarted_watchdog_is_told_every_listed_child(tmp_path):
    w = Watchdog(_token("restart"))
    try:
        w.started(FAKE + 1, 11)
        w.started(FAKE + 2, 22)
        first = w.pid
        assert first is not None
        assert _dumped(w, tmp_path / "dump") == {FAKE + 1: 11, FAKE + 2: 22}
        os.kill(first, signal.SIGKILL)
        _wait_for(lambda: state_of(first) == "Z", what="the watchdog dead")
        w.started(FAKE + 3, 33)
        assert w.pid not in (None, first)
        assert _dumped(w, tmp_path / "dump") == {FAKE + 1: 11, FAKE + 2: 22, FAKE + 3: 33}
        # Noticed by the periodic flush too, with nothing new to say.
        second = w.pid
        os.kill(second, signal.SIGKILL)
        _wait_for(lambda: state_of(second) == "Z", what="the second watchdog dead")
        w.reaped(FAKE + 2)  # recorded by the next start or flush: nothing sent yet
        assert w.pid == second
        w.flush()
        assert w.pid not in (None, first, second)
        assert _dumped(w, tmp_path / "dump") == {FAKE + 1: 11, FAKE + 3: 33}
        third = w.pid
        os.kill(third, signal.SIGKILL)
        _wait_for(lambda: state_of(third) == "Z", what="the third watchdog dead")
        _wait_for(w.flush, what="a new watchdog")
        assert w.pid not in (None, first, second, third)
        assert _dumped(w, tmp_path / "dump") == {FAKE + 1: 11, FAKE + 3: 33}
    finally:
        w.abandon()


RESTART_HOST = textwrap.dedent(
    """
    import asyncio, os, sys
    from procwindow import Supervisor

    def state(pid):
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                return f.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            return None

    async def unmarked(sup):
        # env -i leaves no marker: only the watchdog's list can find it
        p = await sup.spawn(["env", "-i", "sleep", "600"], session="s", agent="a")
        while open(f"/proc/{p.os_pid}/environ", "rb").read():
            await asyncio.sleep(0.01)
        return p.os_pid

    async def main():
        sup = Supervisor(log_dir=sys.argv[1])
        await sup.__aenter__()
        pids = [await unmarked(sup), await unmarked(sup)]
        first = sup._watchdog.pid
        os.kill(first, 9)
        while state(first) not in (b"Z", None):
            await asyncio.sleep(0.01)
        pids.append(await unmarked(sup))
        assert sup._watchdog.pid not in (None, first)
        print("up", *pids, flush=True)
        await asyncio.sleep(600)

    asyncio.run(main())
    """
)


def test_sigkill_of_the_host_after_a_watchdog_restart_kills_every_child(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    host = subprocess.Popen(
        [sys.executable, "-c", RESTART_HOST, str(tmp_path / "logs")],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    victims: list[int] = []
    try:
        word, *rest = host.stdout.readline().split()
        assert word == "up"
        victims = [int(pid) for pid in rest]
        assert len(victims) == 3 and all(alive(pid) for pid in victims)
        host.kill()
        host.wait()
        assert _wait_dead(victims) == []
    finally:
        host.kill()
        host.wait()
        host.stdout.close()
        _kill(victims)


# -- the watchdog: forked helpers --------------------------------------------

FORKING_HOST = textwrap.dedent(
    """
    import asyncio, multiprocessing, os, subprocess, sys, time
    from procwindow import Supervisor

    TREE = '''
    import subprocess, time
    subprocess.Popen(["sleep", "600"], start_new_session=True)  # left its group
    subprocess.Popen(["sleep", "600"])                          # in the group
    print("ready", flush=True)
    time.sleep(600)
    '''

    async def main():
        sup = Supervisor(log_dir=sys.argv[1])
        await sup.__aenter__()
        for agent in ("a", "b"):
            p = await sup.spawn([sys.executable, "-c", TREE], session="s", agent=agent)
            while not sup.read(p.id).lines:
                await asyncio.sleep(0.01)
        helpers = []
        if sys.argv[2] == "fork":
            pid = os.fork()
            if pid == 0:
                time.sleep(600)
                os._exit(0)
            helpers.append(pid)
            mp = multiprocessing.get_context("fork").Process(target=time.sleep, args=(600,))
            mp.start()
            helpers.append(mp.pid)
        else:  # a helper that holds the pipe whatever the fork hooks do
            fd = os.dup(sup._watchdog._fd)
            helpers.append(subprocess.Popen(["sleep", "600"], pass_fds=[fd]).pid)
            os.close(fd)
        print("up", *helpers, flush=True)
        await asyncio.sleep(600)

    asyncio.run(main())
    """
)


@pytest.mark.parametrize("helper", ["fork", "holds-the-pipe"])
@pytest.mark.promise("Guarantees and limits: The supervisor dies, its children die")
def test_a_forked_helper_does_not_keep_the_watchdog_from_seeing_the_host_die(tmp_path, helper):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    host = subprocess.Popen(
        [sys.executable, "-c", FORKING_HOST, str(tmp_path / "logs"), helper],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    helpers: list[int] = []
    victims: list[int] = []
    try:
        word, *rest = host.stdout.readline().split()
        assert word == "up"
        helpers = [int(pid) for pid in rest]
        _wait_for(lambda: len(_marked(f"{host.pid}.")) >= 6, what="every child up")
        victims = _marked(f"{host.pid}.")
        host.kill()
        host.wait()
        assert _wait_dead(victims) == []
        assert all(alive(pid) for pid in helpers)  # the helpers outlived the host
    finally:
        host.kill()
        host.wait()
        host.stdout.close()
        _kill(helpers + victims)


def test_a_forked_child_lets_go_of_the_pipe_and_the_state_file(tmp_path):
    w = Watchdog(_token("fork"))
    s = StateFile(_token("fork"), str(tmp_path / "run"))
    w.started(FAKE, 1)
    s.started(FAKE, 1)
    fds = [w._fd, s._fd]
    assert None not in fds
    pid = os.fork()
    if pid == 0:  # the child: both fds closed, and closing its copies changes nothing
        code = 0
        for fd in fds:
            try:
                os.fstat(fd)
                code = 1
            except OSError:
                pass
        w.close()
        s.close()
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert os.path.exists(s.path)  # the child's close did not remove it
    assert _dumped(w, tmp_path / "dump") == {FAKE: 1}
    w.reaped(FAKE)
    s.reaped(FAKE)
    refs = [weakref.ref(w), weakref.ref(s)]
    w.close()
    s.close()
    del w, s
    gc.collect()
    assert [ref() for ref in refs] == [None, None]  # the fork hook holds no reference


# -- the watchdog: stopped, slow, standing down ------------------------------


def test_a_stopped_watchdog_never_blocks_the_host(tmp_path):
    child = _sleeper()
    w = Watchdog(_token("stopped"))
    try:
        w.started(child.pid, _start_time(child.pid))
        _wait_for(w.flush, what="the first line delivered")
        watchdog = w.pid
        _stop(watchdog)
        expected = {child.pid: _start_time(child.pid)}
        most = 0
        with _rescue_after(60, lambda: watchdog) as rescued:
            began = time.monotonic()
            for i in range(100_000):
                w.started(FAKE + i, 1000 + i)
                if i % 1000:
                    w.reaped(FAKE + i)
                else:
                    expected[FAKE + i] = 1000 + i
                if i % 64 == 0:
                    most = max(most, w.backlog)
                    assert w.backlog <= w.backlog_limit
            took = time.monotonic() - began
        assert not rescued[0], "a call blocked on the stopped watchdog"
        assert took < scaled(30), took
        assert most > 0  # the pipe was full: the queue was used
        assert w.listed == expected
        assert state_of(watchdog) == "T"
        os.kill(watchdog, signal.SIGCONT)
        assert _dumped(w, tmp_path / "dump") == expected
        assert w.pid == watchdog
        # Closed with a child still listed: no goodbye, so it is killed.
        w.close()
        assert child.wait(timeout=15) == -signal.SIGKILL
        assert w.pid is None and state_of(watchdog) is None
    finally:
        w.abandon()
        child.kill()
        child.wait()


@pytest.mark.promise("Guarantees and limits: Shutdown is bounded")
def test_close_is_bounded_when_the_watchdog_is_stopped():
    token = _token("bounded")
    # Carries the marker: a watchdog that took close for a crash would kill it.
    marked = _sleeper(dict(os.environ, PROCWINDOW_PROC=f"{token}:1"))
    w = Watchdog(token)
    try:
        w.started(FAKE, 1)
        _wait_for(w.flush, what="the first line delivered")
        watchdog = w.pid
        _stop(watchdog)
        for i in range(1, 20_000):
            w.started(FAKE + i, 1)
            w.reaped(FAKE + i)
        w.reaped(FAKE)
        assert not w.flush() and w.listed == {}  # the pipe is full
        with _rescue_after(60, lambda: watchdog) as rescued:
            began = time.monotonic()
            w.close()
            took = time.monotonic() - began
        assert not rescued[0], "close blocked on the stopped watchdog"
        assert took < scaled(15), took
        assert w.pid is None and state_of(watchdog) is None  # gone and reaped
        w.close()  # idempotent
        w.abandon()
        time.sleep(0.2)
        assert marked.poll() is None
    finally:
        w.abandon()
        marked.kill()
        marked.wait()


def test_close_says_goodbye_only_when_nothing_is_listed():
    token = _token("bye")
    marked = _sleeper(dict(os.environ, PROCWINDOW_PROC=f"{token}:1"))
    child = _sleeper()
    try:
        w = Watchdog(token)
        w.started(child.pid, _start_time(child.pid))
        w.reaped(child.pid)
        watchdog = w.pid
        w.close()  # nothing listed: goodbye, nothing killed
        assert state_of(watchdog) is None
        time.sleep(0.2)
        assert child.poll() is None and marked.poll() is None

        w = Watchdog(token)
        w.started(child.pid, _start_time(child.pid))
        w.close()  # a child still listed: no goodbye, the watchdog kills it and the marked
        w.close()
        assert child.wait(timeout=15) == -signal.SIGKILL
        assert marked.wait(timeout=15) == -signal.SIGKILL
        w.started(child.pid, 1)  # closed: ignored, nothing started
        assert w.pid is None
    finally:
        for p in (child, marked):
            p.kill()
            p.wait()


def test_abandon_continues_a_stopped_watchdog_so_it_kills_what_is_left():
    child = _sleeper()
    w = Watchdog(_token("abandon"))
    try:
        w.started(child.pid, _start_time(child.pid))
        _wait_for(w.flush, what="the line delivered")
        _stop(w.pid)
        w.abandon()
        assert child.wait(timeout=15) == -signal.SIGKILL
        assert w.pid is None
    finally:
        w.abandon()
        child.kill()
        child.wait()


# -- the state file: a full disk ---------------------------------------------


def tmpfs(tmp_path: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (``64k``, ``1m``) under ``tmp_path`` while the generator
    runs, unmounted afterwards; the test is skipped without mount rights."""
    where = tmp_path / "fs"
    where.mkdir()
    try:
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(where)],
            check=True,
            capture_output=True,
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"cannot mount a tmpfs here: {exc}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False, capture_output=True)


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs."""
    yield from tmpfs(tmp_path, "64k")


def _fill(disk: Path, name: str) -> None:
    """Fill the file system to the last byte."""
    with open(disk / name, "ab", buffering=0) as f:
        for size in (4096, 1):
            while True:
                try:
                    f.write(b"x" * size)
                except OSError as exc:
                    if exc.errno != errno.ENOSPC:
                        raise
                    break


def _state_files(folder: str) -> list[str]:
    return sorted(os.listdir(folder)) if os.path.isdir(folder) else []


def _recorded(path: str) -> dict[int, int]:
    """Parse a state file strictly: header first, whole lines only, no malformed line."""
    data = Path(path).read_bytes()
    assert data.endswith(b"\n"), data[-40:]
    head, *records = data.decode().splitlines()
    word, pid, start, boot = head.split(" ")
    assert (word, int(pid), int(start)) == ("supervisor", os.getpid(), _start_time(os.getpid()))
    assert boot == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    out: dict[int, int] = {}
    for line in records:
        parts = line.split(" ")
        if parts[0] == "+":
            assert len(parts) == 3, line
            out[int(parts[1])] = int(parts[2])
        else:
            assert parts[0] == "-" and len(parts) == 2, line
            out.pop(int(parts[1]), None)
    return out


def test_a_full_disk_never_leaves_a_headerless_or_half_written_state_file(
    tiny_disk, monkeypatch, caplog
):
    monkeypatch.setenv("XDG_STATE_HOME", str(tiny_disk))
    caplog.set_level(logging.WARNING, logger="procwindow")
    folder = state_dir()
    _fill(tiny_disk, "filler")
    s = StateFile(_token("full"))
    s.started(FAKE + 1, 11)
    s.started(FAKE + 2, 22)
    # No room for the header: no file at all, not a headerless one.
    assert [n for n in _state_files(folder)] == []
    assert not s.flush()
    warnings = [r for r in caplog.records if "state file" in r.getMessage()]
    assert len(warnings) == 1, [r.getMessage() for r in warnings]

    os.unlink(tiny_disk / "filler")
    assert s.flush()  # the retry writes the whole set
    assert _state_files(folder) == [os.path.basename(s.path)]
    assert _recorded(s.path) == {FAKE + 1: 11, FAKE + 2: 22}

    # Full again, mid-file: appends fail, some of them halfway through a line.
    _fill(tiny_disk, "filler")
    i = 3
    while s.in_sync:
        s.started(FAKE + i, 1000 + i)
        i += 1
    for j in range(i, i + 50):
        s.started(FAKE + j, 1000 + j)
    s.reaped(FAKE + 1)
    on_disk = _recorded(s.path)  # whole lines only
    assert set(on_disk) <= set(s.listed) | {FAKE + 1}
    assert recover_leftovers() == []  # its owner (this process) is alive
    assert _state_files(folder) == [os.path.basename(s.path)]

    os.unlink(tiny_disk / "filler")
    assert s.flush()
    assert _recorded(s.path) == s.listed
    assert FAKE + 1 not in s.listed and len(s.listed) == i + 50 - 3 + 1
    for pid in s.listed:
        s.reaped(pid)
    s.close()
    s.close()
    assert _state_files(folder) == []


def test_a_state_file_is_removed_only_when_nothing_is_listed(tmp_path):
    folder = str(tmp_path / "run")
    s = StateFile(_token("standdown"), folder)
    s.started(FAKE, 1)
    s.close()  # still listed: kept for recover_leftovers, the fd closed
    s.close()
    assert _recorded(s.path) == {FAKE: 1}
    s.started(FAKE + 1, 2)  # closed: ignored
    assert _recorded(s.path) == {FAKE: 1}
    os.unlink(s.path)

    s = StateFile(_token("standdown"), folder)
    s.started(FAKE, 1)
    s.reaped(FAKE)
    s.close()
    s.abandon()
    assert _state_files(folder) == []


def test_a_state_file_stays_small_through_many_starts(tmp_path):
    s = StateFile(_token("compact"), str(tmp_path / "run"))
    s.started(FAKE, 1)
    for i in range(1, 20_000):
        s.started(FAKE + i, i)
        s.reaped(FAKE + i)
        assert os.path.getsize(s.path) < 80 * 1024
    assert _recorded(s.path) == {FAKE: 1, FAKE + 19_999: 19_999}  # its reap not yet written
    assert s.flush()
    assert _recorded(s.path) == {FAKE: 1}
    s.reaped(FAKE)
    s.close()
    assert _state_files(str(tmp_path / "run")) == []


def test_a_reap_is_recorded_with_the_next_start_or_by_the_flush(tmp_path):
    # A reap alone writes nothing (a child's exit reaches its waiter without a
    # write); the next start carries it in the same append, or the flush does.
    s = StateFile(_token("deferred"), str(tmp_path / "run"))
    s.started(FAKE, 1)
    s.started(FAKE + 1, 2)
    size = os.path.getsize(s.path)
    s.reaped(FAKE)
    assert s.listed == {FAKE + 1: 2}
    assert os.path.getsize(s.path) == size
    s.started(FAKE + 2, 3)
    assert _recorded(s.path) == {FAKE + 1: 2, FAKE + 2: 3}
    s.reaped(FAKE + 1)
    s.reaped(FAKE + 2)
    assert _recorded(s.path) == {FAKE + 1: 2, FAKE + 2: 3}
    assert s.flush()
    assert _recorded(s.path) == {}
    s.close()
    assert _state_files(str(tmp_path / "run")) == []

    w = Watchdog(_token("deferred"))
    try:
        w.started(FAKE + 1, 11)
        w.started(FAKE + 2, 22)
        w.reaped(FAKE + 1)
        w.started(FAKE + 3, 33)
        assert _dumped(w, tmp_path / "dump") == {FAKE + 2: 22, FAKE + 3: 33}
        w.reaped(FAKE + 2)
        assert _dumped(w, tmp_path / "dump") == {FAKE + 3: 33}  # its flush sent the reap
        w.reaped(FAKE + 3)
    finally:
        w.close()


def test_a_supervisor_records_its_reaps_within_a_sweep(tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path / "logs", watchdog=False) as sup:
            path = sup._statefile.path
            first = await sup.spawn(["true"], session="s", agent="a")
            await sup.wait(first.id)
            # Reaped (at once, or once a look at /proc finds its group empty).
            await until(lambda: not os.path.exists(f"/proc/{first.os_pid}"))
            keep = await sup.spawn(["sleep", "60"], session="s", agent="a")
            # The second start carried the first one's reap.
            assert _recorded(path) == {keep.os_pid: _start_time(keep.os_pid)}
            other = await sup.spawn(["true"], session="s", agent="a")
            await sup.wait(other.id)
            deadline = time.monotonic() + 10
            while other.os_pid in _recorded(path):  # the sweep writes it (SWEEP_INTERVAL)
                assert time.monotonic() < deadline, "the reap was never recorded"
                await asyncio.sleep(0.05)
            assert _recorded(path) == {keep.os_pid: _start_time(keep.os_pid)}

    asyncio.run(main())


# -- the state directory: ours or refused ------------------------------------


def _plant(folder: Path, victim: int, *, name: str = "77.deadbeef.pids", **kw: object) -> Path:
    """A dead supervisor's file, valid in every way, listing ``victim`` with its start time."""
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    header = kw.get("header", f"supervisor 999999999 1 {boot}")
    body = kw.get("body", f"+ {victim} {_start_time(victim)}\n")
    path = folder / name
    path.write_text(f"{header}\n{body}")
    path.chmod(0o600)
    return path


def test_recover_kills_what_a_dead_supervisor_listed_in_our_own_dir(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir(mode=0o700)
    victim = _sleeper()
    try:
        _plant(folder, victim.pid)
        assert recover_leftovers(str(folder)) == [victim.pid]
        assert victim.wait(timeout=15) == -signal.SIGKILL
        assert os.listdir(folder) == []
    finally:
        victim.kill()
        victim.wait()


def _make_hostile(how: str, state: Path) -> Path:
    """Make the state directory (or its parent) hostile; return where files would go."""
    root = state / "procwindow"
    root.mkdir(mode=0o700, parents=True)
    run = root / "run"
    if how == "run-is-a-symlink":
        elsewhere = state / "elsewhere"
        elsewhere.mkdir(mode=0o700)
        run.symlink_to(elsewhere)
        return elsewhere
    run.mkdir(mode=0o700)
    if how == "run-is-world-writable":
        run.chmod(0o777)
    elif how == "run-is-another-users":
        os.chown(run, 65534, 65534)
    elif how == "parent-is-world-writable":
        root.chmod(0o777)
    return run


HOSTILE = [
    "run-is-a-symlink",
    "run-is-world-writable",
    "run-is-another-users",
    "parent-is-world-writable",
]


@pytest.mark.parametrize("how", HOSTILE)
@pytest.mark.promise(
    "Guarantees and limits: If the watchdog died too, the state file finishes the job"
)
def test_a_hostile_state_dir_is_never_read_nor_written(tmp_path, monkeypatch, caplog, how):
    if how == "run-is-another-users" and os.getuid() != 0:
        pytest.skip("needs root to chown")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    caplog.set_level(logging.WARNING, logger="procwindow")
    where = _make_hostile(how, tmp_path / "state")
    bystander = _sleeper()
    try:
        planted = _plant(where, bystander.pid)
        before = sorted(os.listdir(where))
        assert recover_leftovers() == []

        from procwindow import Supervisor

        async def main() -> None:
            async with Supervisor(log_dir=tmp_path / "logs") as sup:
                p = await sup.spawn(["sleep", "60"], session="s", agent="a")
                await sup.spawn(["true"], session="s", agent="a")
                assert p.running
            assert p.exit is not None

        asyncio.run(main())
        time.sleep(0.2)
        assert bystander.poll() is None
        assert planted.exists() and sorted(os.listdir(where)) == before
        refusals = [r.getMessage() for r in caplog.records if "no state file" in r.getMessage()]
        assert len(refusals) == 1, refusals
        assert "unsafe state directory" in refusals[0]
    finally:
        bystander.kill()
        bystander.wait()


def test_recover_removes_what_is_not_ours_without_trusting_it(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir(mode=0o700)
    outside = tmp_path / "outside"
    outside.mkdir(mode=0o700)
    bystander = _sleeper()
    try:
        pid, start = bystander.pid, _start_time(bystander.pid)
        target = _plant(outside, pid)
        (folder / "1.aaaa.pids").symlink_to(target)
        os.mkfifo(folder / "2.bbbb.pids", 0o600)
        _plant(folder, pid, name="4.dddd.pids").chmod(0o666)
        linked = _plant(outside, pid, name="5.eeee.pids")
        os.link(linked, folder / "5.eeee.pids")
        _plant(folder, pid, name="6.ffff.pids", header="supervisor x 1 -")
        _plant(folder, pid, name="7.abcd.pids", header="")
        _plant(folder, pid, name="not-a-state-file")
        other_boot = "00000000-0000-0000-0000-000000000000"
        _plant(folder, pid, name="8.abcd.pids", header=f"supervisor 999999999 1 {other_boot}")
        _plant(
            folder,
            pid,
            name="9.abcd.pids",
            body=f"+ {pid} {start + 1}\n+ {pid}\n+ x {start}\n- \n+ {pid} {start}",  # cut short
        )
        # No boot id (an older format): start times alone are not trusted to name a process.
        _plant(folder, pid, name="13.abcd.pids", header="supervisor 999999999 1")
        if os.getuid() == 0:
            os.chown(_plant(folder, pid, name="3.cccc.pids"), 65534, 65534)
        (folder / "10.abcd.pids").mkdir()
        fresh = folder / ".11.abcd.tmp"
        fresh.write_text("supervisor")
        stale = folder / ".12.abcd.tmp"
        stale.write_text("")
        os.utime(stale, (time.time() - 3600, time.time() - 3600))

        assert recover_leftovers(str(folder)) == []
        assert bystander.poll() is None
        assert sorted(os.listdir(folder)) == [".11.abcd.tmp", "10.abcd.pids"]
        assert target.exists() and linked.exists()
    finally:
        bystander.kill()
        bystander.wait()
