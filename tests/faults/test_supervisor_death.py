"""The supervisor dies, its children die: the watchdog, and the state file behind it."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from procwindow.core._statefile import recover_leftovers, state_dir

from ..core.helpers import alive

ROOT = Path(__file__).resolve().parents[2]

HOST = textwrap.dedent(
    """
    import asyncio, sys
    from procwindow import Supervisor

    TREE = '''
    import os, subprocess, sys, time
    subprocess.Popen(["sleep", "600"], start_new_session=True)          # left its group
    subprocess.Popen(["sleep", "600"])                                  # in the group
    if os.fork() == 0:                                                  # a double-forked daemon
        os.setsid()
        if os.fork() == 0:
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            time.sleep(600)
        os._exit(0)
    print("ready", flush=True)
    time.sleep(600)
    '''

    async def main():
        sup = Supervisor(watchdog=WATCHDOG)
        await sup.__aenter__()
        for agent in ("a", "b"):
            p = await sup.spawn([sys.executable, "-c", TREE], session="s", agent=agent)
            while not sup.read(p.id).lines:
                await asyncio.sleep(0.01)
        print("up", flush=True)
        await asyncio.sleep(600)

    asyncio.run(main())
    """
)


def _watchdog_of(pid: int) -> list[int]:
    import psutil

    return [
        c.pid
        for c in psutil.Process(pid).children()
        if c.status() != psutil.STATUS_ZOMBIE and c.cmdline()[1:3] == ["-I", "-S"]
    ]


def _marked(token_prefix: str) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/environ", "rb") as f:
                    if f"PROCWINDOW_PROC={token_prefix}".encode() in f.read() and alive(int(name)):
                        found.append(int(name))
            except OSError:
                pass
    return found


def _start_host(tmp_path: Path, watchdog: bool) -> tuple[subprocess.Popen[str], list[int]]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), XDG_STATE_HOME=str(tmp_path / "state"))
    if not watchdog:
        # The state file's own test: without cgroups, which any supervisor that
        # starts meanwhile (another test's) would kill as a dead one's leftovers.
        env["PROCWINDOW_NO_CGROUPS"] = "1"
    host = subprocess.Popen(
        [sys.executable, "-c", HOST.replace("WATCHDOG", str(watchdog))],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert host.stdout.readline() == "up\n"
    time.sleep(0.3)  # let the daemons settle
    victims = _marked(f"{host.pid}.")
    assert len(victims) >= 8, victims  # 2 × (leader, setsid sleep, sleep, daemon)
    return host, victims


def _wait_dead(pids: list[int], timeout: float = 10.0) -> list[int]:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        left = [pid for pid in pids if alive(pid)]
        if not left:
            return []
        time.sleep(0.05)
    return [pid for pid in pids if alive(pid)]


@pytest.mark.promise("Guarantees and limits: The supervisor dies, its children die")
def test_sigkill_of_the_host_kills_every_descendant(tmp_path):
    host, victims = _start_host(tmp_path, watchdog=True)
    host.kill()
    host.wait()
    host.stdout.close()
    assert _wait_dead(victims) == []


@pytest.mark.promise(
    "Guarantees and limits: If the watchdog died too, the state file finishes the job"
)
def test_state_file_finishes_the_job_when_the_watchdog_died_too(tmp_path, monkeypatch):
    host, victims = _start_host(tmp_path, watchdog=False)
    host.kill()  # no watchdog: the children live on, re-parented to init
    host.wait()
    host.stdout.close()
    time.sleep(0.2)
    assert all(alive(pid) for pid in victims)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert sorted(os.listdir(state_dir())) == [
        name for name in os.listdir(state_dir()) if name.endswith(".pids")
    ]
    from procwindow import Supervisor

    async def next_start():
        async with Supervisor(log_dir=tmp_path / "logs"):
            pass  # starting is enough: it reads the dead supervisor's state file

    asyncio.run(next_start())
    assert _wait_dead(victims) == []
    assert os.listdir(state_dir()) == []


@pytest.mark.promise(
    "Guarantees and limits: If the watchdog died too, the state file finishes the job"
)
def test_state_file_never_kills_a_reused_pid(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    bystander = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        # A dead supervisor's file lists the bystander's pid with another start time:
        # the pid was reused. The bystander must survive.
        (folder / "1.deadbeef.pids").write_text(f"supervisor 999999999 1\n+ {bystander.pid} 1\n")
        assert recover_leftovers(str(folder)) == []
        assert bystander.poll() is None
        assert os.listdir(folder) == []
        # A file whose supervisor is alive (this process) is left alone.
        me = os.getpid()
        with open(f"/proc/{me}/stat") as f:
            my_start = f.read().rsplit(")", 1)[1].split()[19]
        (folder / f"{me}.live.pids").write_text(
            f"supervisor {me} {my_start}\n+ {bystander.pid} 1\n"
        )
        assert recover_leftovers(str(folder)) == []
        assert os.listdir(folder) == [f"{me}.live.pids"]
    finally:
        bystander.kill()
        bystander.wait()


def test_clean_close_leaves_no_state_and_no_watchdog(run, tmp_path):
    from procwindow import Supervisor

    async def main():
        async with Supervisor(log_dir=tmp_path / "logs") as sup:
            p = await sup.spawn(["sleep", "60"], session="s", agent="a")
            watchdog = sup._watchdog.pid
            assert watchdog is not None and alive(watchdog)
            assert len(os.listdir(state_dir())) == 1
        assert p.exit is not None
        assert not alive(watchdog)
        assert os.listdir(state_dir()) == []

    run(main())


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGHUP])
def test_watchdog_ignores_terminal_signals(tmp_path, sig):
    host, victims = _start_host(tmp_path, watchdog=True)
    try:
        watchdog = _watchdog_of(host.pid)
        assert len(watchdog) == 1
        os.kill(watchdog[0], sig)
        time.sleep(0.2)
        assert alive(watchdog[0])
        assert all(alive(pid) for pid in victims)
    finally:
        host.kill()
        host.wait()
        host.stdout.close()
    assert _wait_dead(victims) == []
