"""Attaching through a real sshd: a RemoteSupervisor on ``ssh://user@127.0.0.1:PORT/test``
reaches a `procwindow serve` through ``ssh … procwindow ctl bridge test``; the link is
cut by killing the ssh processes in the middle of a flood and restored."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from procwindow.control.remote import (
    NoServer,
    RemoteNotInstalled,
    RemoteSupervisor,
    SshFailed,
)
from procwindow.core import ExitReason, Line, ProcState
from tests.control.conftest import ROOT, Server, start_server, stop_server
from tests.core.helpers import py, until

from .conftest import REMOTE_PROCWINDOW, Sshd

pytestmark = pytest.mark.slow


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    srv = start_server(tmp_path)
    try:
        yield srv
    finally:
        assert stop_server(srv) == 0


def remote_command(server: Server) -> str:
    """The far side's procwindow, with the serve's runtime directory (an ssh
    session starts with a fresh environment)."""
    runtime = Path(server.path).parent.parent
    return f"env XDG_RUNTIME_DIR={runtime} {REMOTE_PROCWINDOW}"


async def attach(sshd: Sshd, server: Server, name: str = "test") -> RemoteSupervisor:
    return await RemoteSupervisor.connect(
        sshd.url(name), ssh_command=sshd.ssh_command, remote_procwindow=remote_command(server)
    )


async def read_all(sup: RemoteSupervisor, proc_id: int, timeout: float = 30) -> list[Line]:
    lines: list[Line] = []
    cursor = 0
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while True:
        batch = sup.read(proc_id, cursor)
        lines += batch.lines
        cursor = batch.cursor
        if batch.eof:
            return lines
        assert loop.time() < end, f"no end of output after {len(lines)} lines"
        await asyncio.sleep(0.01)


def test_run_stream_search_term_kill_dismiss_over_ssh(sshd: Sshd, server: Server) -> None:
    async def scenario() -> None:
        sup = await attach(sshd, server)
        try:
            assert sup.connected and sup.where == sshd.url()
            p = await sup.spawn(
                ["sh", "-c", "for i in $(seq 1 500); do echo row $i; done; echo oops >&2"],
                session="s1",
                agent="a1",
            )
            lines = await read_all(sup, p.id)
            assert [ln.text for ln in lines] == [f"row {i}" for i in range(1, 501)] + ["oops"]
            hits = [h.line.text async for h in sup.search("row 50", session="s1")]
            assert hits == ["row 50", *(f"row {i}" for i in range(500, 501))]
            sleeper = await sup.spawn(["sleep", "30"], session="s1", agent="a1")
            assert (await sup.term(sleeper.id)).reason is ExitReason.TERMINATED
            other = await sup.spawn(["sleep", "30"], session="s1", agent="a1")
            assert (await sup.kill(other.id)).reason is ExitReason.KILLED
            sup.dismiss(sleeper.id)
            assert sleeper.id not in [q.id for q in sup.procs()]
        finally:
            await sup.close()

    asyncio.run(scenario())
    # What the window did is what the server has.
    rows = [line.split("\t")[0] for line in server.ctl("idx").stdout.splitlines()[1:]]
    assert rows == ["3", "1"]  # the dismissed one is gone


FLOOD = py(
    """
    import sys, time
    for i in range(40000):
        print(f"flood {i:06d}")
        if i % 1000 == 0:
            sys.stdout.flush()
            time.sleep(0.02)
    """
)


def test_killing_ssh_mid_flood_loses_and_repeats_nothing(sshd: Sshd, server: Server) -> None:
    async def scenario() -> tuple[int, list[Line]]:
        sup = await attach(sshd, server)
        try:
            heard: list[str] = []
            sup.add_listener(heard.append)
            p = await sup.spawn(FLOOD, session="s1", agent="a1")
            lines: list[Line] = []
            cursor = 0
            cut = False
            loop = asyncio.get_running_loop()
            end = loop.time() + 90
            while True:
                batch = sup.read(p.id, cursor)
                lines += batch.lines
                cursor = batch.cursor
                if batch.eof:
                    break
                if not cut and cursor > 5000:
                    cut = True
                    for pid in sup.link.pids():  # the link is cut: every ssh dies
                        os.kill(pid, signal.SIGKILL)
                    await until(lambda: not sup.connected, what="the link seen down")
                    assert sup.get(p.id).state is not ProcState.EXITED or p.disconnected
                assert loop.time() < end, f"stuck at {cursor}"
                await asyncio.sleep(0.01)
            assert cut and heard[:2] == ["disconnected", "connected"]
            return p.id, lines
        finally:
            await sup.close()

    proc_id, lines = asyncio.run(scenario())
    assert [ln.text for ln in lines] == [f"flood {i:06d}" for i in range(40000)]
    assert [ln.seq for ln in lines] == list(range(1, 40001))
    out = subprocess.run(
        [sys.executable, "-m", "procwindow", "ctl", "--socket", server.path, "out", str(proc_id)],
        capture_output=True,
        text=True,
        env=server.env,
        cwd=ROOT,
        check=True,
    ).stdout
    assert out.splitlines() == [ln.text for ln in lines]


def test_failures_are_one_line(sshd: Sshd, server: Server, tmp_path: Path) -> None:
    async def scenario() -> None:
        with pytest.raises(NoServer) as no_server:
            await attach(sshd, server, name="nobody")
        with pytest.raises(RemoteNotInstalled) as not_installed:
            await RemoteSupervisor.connect(
                sshd.url(),
                ssh_command=sshd.ssh_command,
                remote_procwindow=str(tmp_path / "no-procwindow-here"),
            )
        closed_port = sshd.port  # the server is stopped for the last one
        sshd.proc.terminate()
        sshd.proc.wait(timeout=10)
        with pytest.raises(SshFailed) as ssh_failed:
            await RemoteSupervisor.connect(
                f"ssh://127.0.0.1:{closed_port}/test", ssh_command=sshd.ssh_command
            )
        for caught in (no_server, not_installed, ssh_failed):
            assert "\n" not in str(caught.value)
        assert "nobody" in str(no_server.value)
        assert "no-procwindow-here" in str(not_installed.value)
        # A path: no word of a PATH it was never looked for on.
        assert "PATH" not in str(not_installed.value)
        assert "check the path given to --remote-procwindow" in str(not_installed.value)
        assert "refused" in str(ssh_failed.value).lower()

    asyncio.run(scenario())


def _connections_to(port: int) -> int:
    """Established TCP connections from this machine's clients to ``port``."""
    import psutil

    return sum(
        1
        for c in psutil.net_connections("tcp")
        if c.raddr and c.raddr.port == port and c.status == psutil.CONN_ESTABLISHED
    )


def test_every_connection_to_a_host_rides_one_ssh(sshd: Sshd, server: Server) -> None:
    """An attached server takes several connections; a second attach to the same
    host takes more: all of them ride one ssh connection (a master of ours), which
    goes with the last of them."""

    async def scenario() -> None:
        first = await attach(sshd, server)
        second = await attach(sshd, server)
        try:
            p = await second.spawn(["echo", "over one ssh"], session="s1", agent="a1")
            lines = await read_all(first, p.id)
            assert [ln.text for ln in lines] == ["over one ssh"]
            assert len(first.link.pids()) > 2  # the master and its connections
            assert _connections_to(sshd.port) == 1
            (master,) = {first.link.pids()[0], second.link.pids()[0]}
        finally:
            await first.close()
        # The second one's connections still ride it.
        assert second.connected and master in second.link.pids()
        q = await second.spawn(["echo", "still"], session="s1", agent="a1")
        assert [ln.text for ln in await read_all(second, q.id)] == ["still"]
        await second.close()
        assert _connections_to(sshd.port) == 0
        assert not os.path.exists(f"/proc/{master}")

    asyncio.run(scenario())


def _parked_pids(sup: RemoteSupervisor) -> set[int]:
    """The ssh processes of the connections parked on ``sup``'s master."""
    master = sup.link._master  # type: ignore[union-attr]
    assert master is not None
    return {item[0][1].proc.pid for held in master._parked.values() for item in held}


def test_a_second_attach_takes_connections_opened_ahead(sshd: Sshd, server: Server) -> None:
    """Once an attach is up, two connections to its server wait on the host's
    master (PARKED): a second attach takes them and starts no ssh session to
    connect; with two links on the master no more are parked (an sshd's
    MaxSessions); closing the last link ends the master."""
    from procwindow.control._ssh_master import PARKED

    async def scenario() -> None:
        first = await attach(sshd, server)
        try:
            await until(lambda: len(_parked_pids(first)) == PARKED)
            ahead = _parked_pids(first)
            assert all(os.path.exists(f"/proc/{pid}") for pid in ahead)
            second = await attach(sshd, server)
            try:
                master = second.link.pids()[0]
                assert set(second.link.pids()[1:]) == ahead  # its connections: those
                p = await second.spawn(["echo", "parked"], session="s1", agent="a1")
                assert [ln.text for ln in await read_all(second, p.id)] == ["parked"]
                # Two links ride the master now: none is parked for a third (MaxSessions).
                await asyncio.sleep(0.5)
                assert _parked_pids(second) == set()
            finally:
                await second.close()
            # One link again: two are parked for the next attach.
            await until(lambda: len(_parked_pids(first)) == PARKED)
            again = _parked_pids(first)
            assert not again & ahead
        finally:
            await first.close()
        assert not any(os.path.exists(f"/proc/{pid}") for pid in (master, *ahead, *again))
        assert _connections_to(sshd.port) == 0

    asyncio.run(scenario())


#: Attaches over ssh, says its ssh master's pid, and waits to be killed.
ATTACHED_HOST = r"""
import asyncio, json, sys
from procwindow.control.remote import RemoteSupervisor

async def main():
    url, ssh, remote = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
    sup = await RemoteSupervisor.connect(url, ssh_command=ssh, remote_procwindow=remote)
    print(sup.link.pids()[0], flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
"""


def test_the_ssh_master_ends_with_a_host_that_is_killed(sshd: Sshd, server: Server) -> None:
    """No close, no goodbye: the master's far side reads a pipe from the host,
    which closes when the host dies, and the master goes with it."""
    import json

    host = subprocess.Popen(
        [
            sys.executable,
            "-c",
            ATTACHED_HOST,
            sshd.url(),
            json.dumps(sshd.ssh_command),
            remote_command(server),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    )
    try:
        assert host.stdout is not None
        master = int(host.stdout.readline())
        with open(f"/proc/{master}/cmdline", "rb") as f:
            assert b"-M" in f.read().split(b"\0")  # the master indeed
        host.kill()
        host.wait()

        def gone() -> bool:
            try:
                with open(f"/proc/{master}/stat", "rb") as f:
                    return f.read().rsplit(b")", 1)[1].split()[0] == b"Z"
            except FileNotFoundError:
                return True

        asyncio.run(until(gone, timeout=15, what="the master gone with its host"))
    finally:
        if host.poll() is None:
            host.kill()
            host.wait()
        if host.stdout is not None:
            host.stdout.close()
