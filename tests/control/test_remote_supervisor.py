"""RemoteSupervisor against a real `procwindow serve`: the same scenarios give the
same results as the in-process Supervisor; errors are the core's; a link cut in
the middle of a flood is restored without a duplicated or a missing line."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from procwindow.control import remote as remote_mod
from procwindow.control._links import LocalLink, NoServer, parse_target
from procwindow.control.remote import Disconnected, RemoteProc, RemoteSupervisor
from procwindow.core import (
    CommandNotFound,
    CwdMissing,
    Event,
    EventKind,
    ExitEvent,
    ExitReason,
    InvalidPattern,
    Line,
    ProcNotFound,
    ProcRunning,
    ProcState,
    StdinClosed,
    Supervisor,
    SupervisorAPI,
)
from tests.core.helpers import py, until

from .conftest import ROOT, Server, start_server, stop_server

Opener = Callable[[], contextlib.AbstractAsyncContextManager[SupervisorAPI]]


@pytest.fixture(params=["inproc", "remote"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """A way to open "a supervisor": in process, or a RemoteSupervisor on a serve."""
    if request.param == "inproc":

        @contextlib.asynccontextmanager
        async def inproc() -> AsyncIterator[SupervisorAPI]:
            async with Supervisor(graceful_timeout=1) as sup:
                yield sup

        yield inproc
        return
    server = start_server(tmp_path)
    try:

        @contextlib.asynccontextmanager
        async def remote() -> AsyncIterator[SupervisorAPI]:
            sup = await RemoteSupervisor.connect(server.path)
            try:
                yield sup
            finally:
                await sup.close()

        yield remote
    finally:
        assert stop_server(server) == 0


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    srv = start_server(tmp_path)
    try:
        yield srv
    finally:
        assert stop_server(srv) == 0


async def read_all(
    sup: SupervisorAPI, proc_id: int, since: int = 0, timeout: float = 20
) -> list[Line]:
    """Every line after ``since``, by cursor, until the end of the output."""
    lines: list[Line] = []
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while True:
        batch = sup.read(proc_id, since)
        lines += batch.lines
        since = batch.cursor
        if batch.eof:
            return lines
        if loop.time() > end:
            raise AssertionError(f"proc {proc_id}: no end of output after {len(lines)} lines")
        await asyncio.sleep(0.01)


async def exited(sup: SupervisorAPI, proc_id: int) -> None:
    await until(lambda: sup.get(proc_id).exit is not None, what=f"proc {proc_id} exits")


def drain(sub: Any) -> list[Event]:
    out = []
    while (ev := sub.get_nowait()) is not None:
        out.append(ev)
    return out


# -- the same results --------------------------------------------------------------


@pytest.mark.promise("Watching other processes and machines")
def test_run_read_and_events_match(opener: Opener) -> None:
    async def scenario() -> None:
        async with opener() as sup:
            sub = sup.subscribe("session.s1.>")
            p = await sup.spawn(
                py(
                    """
                    import fcntl, struct, sys, termios, time
                    for i in range(3000):
                        print("out", i)
                    # Across two pipes, lines keep their order only once the first
                    # is read: wait until the supervisor has read stdout.
                    sys.stdout.flush()
                    while struct.unpack("i", fcntl.ioctl(1, termios.FIONREAD, b"0000"))[0]:
                        time.sleep(0.001)
                    print("oops", file=sys.stderr)
                    sys.exit(3)
                    """
                ),
                session="s1",
                agent="a1",
                tool="build",
            )
            assert (p.session, p.agent, p.tool, p.state) == ("s1", "a1", "build", ProcState.RUNNING)
            lines = await read_all(sup, p.id)
            assert [ln.text for ln in lines] == [f"out {i}" for i in range(3000)] + ["oops"]
            assert [ln.seq for ln in lines] == list(range(1, 3002))
            assert lines[-1].stream == "stderr"
            await exited(sup, p.id)
            info = sup.get(p.id).exit
            assert info is not None
            assert (info.code, info.reason) == (3, ExitReason.FAILED)
            assert sup.get(p.id).last_seq == 3001
            # Read again from a cursor: only what follows it.
            batch = sup.read(p.id, 2990, limit=5)
            assert [ln.seq for ln in batch] == [2991, 2992, 2993, 2994, 2995]
            assert batch.cursor == 2995 and not batch.eof
            runs = sup.read_runs(p.id, 2990, limit=5)
            assert runs.lines() == batch.lines
            assert (runs.dropped, runs.cursor, runs.eof) == (0, 2995, False)
            assert [ln.text for ln in sup.read(p.id, 2995, stream="stderr")] == ["oops"]
            assert [q.id for q in sup.procs("s1")] == [p.id]
            assert sup.procs("other") == []
            assert sup.runtime(p.id) == pytest.approx(info.runtime, abs=0.01)
            await until(lambda: any(e.kind is EventKind.EXIT for e in sub._queue))
            events = drain(sub)
            kinds = [e.kind for e in events]
            assert kinds[0] is EventKind.START and kinds.count(EventKind.START) == 1
            assert kinds.count(EventKind.EXIT) == 1
            # Output is announced up to the exit's final cursor before the exit.
            exit_ev = next(e for e in events if isinstance(e, ExitEvent))
            assert exit_ev.last_seq == 3001 and exit_ev.reason is ExitReason.FAILED
            before = events[: events.index(exit_ev)]
            assert max(e.last_seq or 0 for e in before if e.kind is EventKind.OUTPUT) == 3001
            sub.close()

    asyncio.run(scenario())


def test_actions_match(opener: Opener) -> None:
    async def scenario() -> None:
        async with opener() as sup:
            sleeper = await sup.spawn(["sleep", "30"], session="s1", agent="a1")
            info = await sup.term(sleeper.id)
            assert (info.code, info.reason) == (143, ExitReason.TERMINATED)
            assert sup.get(sleeper.id).exit == info  # known as soon as term returns
            killed = await sup.spawn(["sleep", "30"], session="s1", agent="a1")
            assert (await sup.kill(killed.id)).reason is ExitReason.KILLED
            assert await sup.interrupt(killed.id) is False
            napper = await sup.spawn(["sleep", "30"], session="s1", agent="a1")
            assert await sup.interrupt(napper.id) is True
            await exited(sup, napper.id)
            assert sup.get(napper.id).exit.reason is ExitReason.TERMINATED
            # stdin
            cat = await sup.spawn(["cat"], session="s1", agent="a1", stdin=True)
            assert await sup.write(cat.id, "hello\n") == 6
            assert await sup.write(cat.id, b"bytes too\n") == 10
            assert await sup.close_stdin(cat.id) is True
            assert [ln.text for ln in await read_all(sup, cat.id)] == ["hello", "bytes too"]
            await exited(sup, cat.id)
            assert sup.get(cat.id).exit.code == 0
            # restart: a new proc with the same command
            again = await sup.restart(cat.id)
            assert again.id > cat.id and again.argv == cat.argv and again.options.stdin
            await sup.kill(again.id)
            # dismiss: gone from the live view at once, still known by id
            sup.dismiss(sleeper.id)
            assert sleeper.id not in [p.id for p in sup.procs()]
            assert sup.get(sleeper.id).live is False
            await sup.term_all("s1")
            assert all(not p.running for p in sup.procs("s1"))

    asyncio.run(scenario())


def test_errors_match(opener: Opener, tmp_path: Path) -> None:
    async def scenario() -> None:
        async with opener() as sup:
            for call in (sup.term, sup.kill, sup.interrupt, sup.restart):
                with pytest.raises(ProcNotFound) as caught:
                    await call(4242)
                assert caught.value.proc_id == 4242
            with pytest.raises(ProcNotFound):
                sup.get(4242)
            with pytest.raises(ProcNotFound):
                sup.dismiss(4242)
            with pytest.raises(ProcNotFound):
                await sup.write(4242, "x")
            with pytest.raises(CommandNotFound) as missing:
                await sup.spawn(["no-such-command-here"], session="s1", agent="a1")
            assert missing.value.command == "no-such-command-here"
            with pytest.raises(CwdMissing):
                await sup.spawn(["true"], session="s1", agent="a1", cwd=str(tmp_path / "nope"))
            p = await sup.spawn(["sleep", "30"], session="s1", agent="a1")
            with pytest.raises(ProcRunning):
                sup.dismiss(p.id)
            with pytest.raises(StdinClosed):
                await sup.write(p.id, "x\n")
            assert await sup.close_stdin(p.id) is False
            with pytest.raises(InvalidPattern):
                sup.search("(", regex=True)
            with pytest.raises(InvalidPattern):
                sup.subscribe("session..")
            await sup.kill(p.id)

    asyncio.run(scenario())


def test_history_and_search_match(opener: Opener) -> None:
    async def scenario() -> None:
        async with opener() as sup:
            assert sup.history_enabled
            a = await sup.spawn(["sh", "-c", "echo alpha; echo needle 1"], session="h", agent="x")
            b = await sup.spawn(["sh", "-c", "echo needle 2; exit 1"], session="h", agent="y")
            for p in (a, b):
                await read_all(sup, p.id)
                await exited(sup, p.id)
            sup.dismiss(a.id)
            await until(
                lambda: [p.id for p in sup.history(session="h")] == [b.id, a.id],
                what="the history of both",
            )
            assert [p.id for p in sup.history(session="h", reason="failed")] in ([], [b.id])
            await until(lambda: [p.id for p in sup.history(session="h", reason="failed")] == [b.id])
            await until(lambda: [p.id for p in sup.history(command="ECHO ALPHA")] == [a.id])
            hits = [(h.proc_id, h.line.text) async for h in sup.search("NEEDLE", session="h")]
            assert hits == [(b.id, "needle 2"), (a.id, "needle 1")]
            # A dismissed proc's lines are still read.
            assert [ln.text for ln in await read_all(sup, a.id)] == ["alpha", "needle 1"]

    asyncio.run(scenario())


LISTENER = py(
    """
    import socket, time
    s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
    print(s.getsockname()[1], flush=True)
    time.sleep(60)
    """
)


def test_ports_a_tree_listens_on(opener: Opener) -> None:
    async def scenario() -> None:
        async with opener() as sup:
            p = await sup.spawn(LISTENER, session="p", agent="a")
            await until(lambda: sup.read(p.id).lines, what="the port")
            port = int(sup.read(p.id).lines[0].text)
            ports = await sup.ports(p.id)
            assert [(x.port, x.host, x.os_pid) for x in ports] == [(port, "127.0.0.1", p.os_pid)]
            await sup.kill(p.id)
            assert await sup.ports(p.id) == []
            with pytest.raises(ProcNotFound):
                await sup.ports(10**6)

    asyncio.run(scenario())


def test_tree_and_a_signal_to_one_of_it(opener: Opener) -> None:
    async def scenario() -> None:
        async with opener() as sup:
            p = await sup.spawn(["sh", "-c", "sleep 600 & echo $!; wait"], session="t", agent="a")
            await until(lambda: sup.read(p.id).lines, what="the child's pid")
            child = int(sup.read(p.id).lines[0].text)
            tree = await sup.tree(p.id)
            for _ in range(100):
                if len(tree) == 2 and tree[1].command == "sleep 600":  # exec'd
                    break
                await asyncio.sleep(0.1)
                tree = await sup.tree(p.id)
            assert [(t.os_pid, t.ppid, t.depth) for t in tree][1] == (child, p.os_pid, 1)
            assert tree[0].os_pid == p.os_pid and tree[1].command == "sleep 600"
            assert await sup.signal(p.id, "USR1", os_pid=child)
            await exited(sup, p.id)  # sleep dies of it, and its shell ends with it
            assert sup.get(p.id).exit is not None
            assert await sup.tree(p.id) == []
            assert not await sup.signal(p.id, "TERM")
            with pytest.raises(ProcNotFound):
                await sup.tree(10**6)

    asyncio.run(scenario())


def test_stats_of_a_running_proc(opener: Opener) -> None:
    async def scenario() -> None:
        async with opener() as sup:
            p = await sup.spawn(["sleep", "30"], session="s1", agent="a1")
            await until(lambda: sup.stats(p.id).rss > 0, what="resident memory")
            assert sup.stats(p.id).threads >= 1
            await sup.kill(p.id)
            sup.dismiss(p.id)
            with pytest.raises(ProcNotFound):
                sup.stats(p.id)

    asyncio.run(scenario())


# -- only remote -----------------------------------------------------------------------


def test_no_server_is_one_line(tmp_path: Path) -> None:
    async def scenario() -> None:
        with pytest.raises(NoServer) as caught:
            await RemoteSupervisor.connect(str(tmp_path / "nobody.sock"))
        assert "\n" not in str(caught.value) and "nobody.sock" in str(caught.value)

    asyncio.run(scenario())


def test_targets() -> None:
    assert parse_target("ssh://me@build:2222/ci").host == "build"
    assert parse_target("/run/x.sock").path == "/run/x.sock"
    assert parse_target("ci").path.endswith("/ci.sock")
    for bad in ("ssh://", "http://x", "ssh://h/bad name", "bad name"):
        with pytest.raises(remote_mod.LinkError):
            parse_target(bad)


def test_closing_stops_nothing_there(server: Server) -> None:
    async def scenario() -> int:
        sup = await RemoteSupervisor.connect(server.path)
        p = await sup.spawn(["sleep", "30"], session="s1", agent="a1")
        await sup.close()
        assert sup.closed and not sup.connected
        return p.id

    proc_id = asyncio.run(scenario())
    idx = server.ctl("idx").stdout
    assert f"{proc_id}\trunning" in idx
    server.ctl("kill", str(proc_id))


def test_actions_while_disconnected_raise_and_the_rows_say_so(server: Server) -> None:
    async def scenario() -> None:
        sup = await RemoteSupervisor.connect(server.path, reconnect=False)
        heard: list[str] = []
        sup.add_listener(heard.append)
        p = await sup.spawn(["sleep", "30"], session="s1", agent="a1")
        assert isinstance(p, RemoteProc) and not p.disconnected
        for client in list(sup._calls.clients):
            client.abort()  # the link drops
        await until(lambda: not sup.connected, what="disconnected")
        assert heard == ["disconnected"]
        assert p.disconnected and sup.get(p.id).state is ProcState.RUNNING  # not "exited"
        with pytest.raises(Disconnected):
            await sup.term(p.id)
        with pytest.raises(Disconnected):
            await sup.spawn(["true"], session="s1", agent="a1")
        assert sup.read(p.id).lines == []  # answered from the mirror, never blocks
        await sup.close()

    asyncio.run(scenario())
    server.ctl("term", "1")


FLOOD = py(
    """
    import sys, time
    for i in range(60000):
        print(f"line {i:06d}")
        if i % 2000 == 0:
            sys.stdout.flush()
            time.sleep(0.02)
    """
)


@pytest.mark.promise("Watching other processes and machines")
def test_a_cut_mid_flood_resyncs_by_cursor(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    """The link drops twice while a child floods and another exits meanwhile:
    the lines read are the server's, each once; the exit is shown with its reason."""

    async def scenario() -> tuple[int, list[Line]]:
        sup = await RemoteSupervisor.connect(server.path)
        events = sup.subscribe(">")
        heard: list[str] = []
        sup.add_listener(heard.append)
        flood = await sup.spawn(FLOOD, session="s1", agent="a1")
        lines: list[Line] = []
        cursor = 0
        cuts = 0
        loop = asyncio.get_running_loop()
        end = loop.time() + 60
        real_open = LocalLink.open
        while True:
            batch = sup.read(flood.id, cursor)
            lines += batch.lines
            cursor = batch.cursor
            if batch.eof and sup.get(flood.id).exit is not None:
                break
            if cuts == 0 and cursor > 5000:
                cuts = 1
                for client in list(sup._calls.clients):
                    client.abort()
            elif cuts == 1 and cursor > 20000 and sup.connected:
                cuts = 2
                # A longer outage: the link cannot be opened for a while, during
                # which a child known before exits, and another starts and exits.
                short = await sup.spawn(["sh", "-c", "sleep 1; exit 7"], session="s1", agent="a1")

                async def refused(self: LocalLink) -> Any:
                    raise NoServer("refused for the test")

                monkeypatch.setattr(LocalLink, "open", refused)
                for client in list(sup._calls.clients):
                    client.abort()
                await until(lambda: not sup.connected)
                assert sup.get(short.id).exit is None and sup.get(short.id).disconnected
                ran = await asyncio.to_thread(
                    server.ctl,
                    "run",
                    "--session",
                    "s1",
                    "--agent",
                    "a2",
                    "--",
                    "sh",
                    "-c",
                    "exit 5",
                )
                unseen = int(ran.stdout.split()[0])
                await asyncio.sleep(1.5)
                assert sup.get(short.id).exit is None  # not known until the link is back
                monkeypatch.setattr(LocalLink, "open", real_open)
            assert loop.time() < end, f"stuck at {cursor}"
            await asyncio.sleep(0.005)
        assert cuts == 2
        await until(lambda: sup.get(short.id).exit is not None, what="the exit seen on resync")
        info = sup.get(short.id).exit
        assert (info.code, info.reason) == (7, ExitReason.FAILED)
        await until(lambda: sup.get(unseen).exit is not None, what="the unseen one")
        assert sup.get(unseen).exit.code == 5 and sup.get(unseen).session == "s1"
        assert heard.count("connected") == 2 and heard.count("disconnected") >= 2
        seen = drain(events)
        exits = [e for e in seen if isinstance(e, ExitEvent) and e.proc_id == short.id]
        assert len(exits) == 1 and exits[0].code == 7
        assert [e.kind for e in seen if e.proc_id == unseen] == [EventKind.START, EventKind.EXIT]
        await sup.close()
        return flood.id, lines

    flood_id, lines = asyncio.run(scenario())
    assert [ln.text for ln in lines] == [f"line {i:06d}" for i in range(60000)]
    assert [ln.seq for ln in lines] == list(range(1, 60001))
    # The server's own log says the same.
    out = subprocess.run(
        [sys.executable, "-m", "procwindow", "ctl", "--socket", server.path, "out", str(flood_id)],
        capture_output=True,
        text=True,
        env=server.env,
        cwd=ROOT,
        check=True,
    ).stdout
    assert out.splitlines() == [ln.text for ln in lines]


def test_procs_of_a_restarted_server_stay_with_their_end_and_output(tmp_path: Path) -> None:
    """The server restarts (the same state directory): the procs its first run had
    do not vanish from the attached view; they keep their output, and each says how
    it ended as the history has it (a running one: terminated by that server's stop,
    or lost)."""
    first = start_server(tmp_path)

    async def scenario() -> None:
        sup = await RemoteSupervisor.connect(first.path)
        try:
            done = await sup.spawn(["echo", "said before"], session="s", agent="a")
            await sup.wait(done.id)
            running = await sup.spawn(["sleep", "60"], session="s", agent="a")
            await until(lambda: sup.read(done.id).eof, what="its output")
            assert stop_server(first) == 0
            await until(lambda: not sup.connected, what="the link down")
            second = start_server(tmp_path)
            try:
                await until(lambda: sup.connected, timeout=30, what="the link back")
                await until(lambda: sup.get(running.id).exit is not None, what="its end")
                assert {p.id for p in sup.procs()} >= {done.id, running.id}
                assert sup.get(running.id).exit.reason in (ExitReason.TERMINATED, ExitReason.LOST)
                assert [ln.text for ln in sup.read(done.id).lines] == ["said before"]
                sup.dismiss(done.id)  # ours to let go of, though the server no longer lists it
                assert done.id not in {p.id for p in sup.procs()}
            finally:
                await sup.close()
                assert stop_server(second) == 0
        finally:
            await sup.close()

    asyncio.run(scenario())
