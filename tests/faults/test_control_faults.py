"""Faults at the control socket: greedy, slow, hostile or broken clients and servers,
exhausted resources, racing servers, and stop signals at awkward times.

Servers are real: a `procwindow serve` subprocess, or a ControlServer in this
process on a real socket. Each test ends with the leak check.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import selectors
import signal
import socket
import stat
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import psutil
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from procwindow import Supervisor
from procwindow.control import ControlServer, SocketDirError, default_socket_path, socket_dir
from procwindow.control._protocol import MAX_DEPTH, PROTOCOL_VERSION, ProtocolError, decode_request
from procwindow.control.server import REQUEST_TIMEOUT, SEND_TIMEOUT

from ..control.conftest import (
    ROOT,
    Server,
    isolated_env,
    out_result,
    read_message,
    start_server,
)
from ..core.helpers import IGNORES_TERM, IGNORES_TERM_READY, alive, py
from ..tiers import examples, scaled

#: Far above what a server needs, far below what ten stuck `out` clients would cost
#: if each reply were built whole (gigabytes).
RSS_BOUND = 300 * 1024 * 1024
#: A well-behaved client's round trip while others misbehave (seconds; generous).
LATENCY_BOUND = 2.0
#: Lines of 1,000 NUL bytes, as fast as the pipe takes them: JSON makes each 6 KB.
NUL_FLOOD = (
    "import sys\nline = '\\0' * 1000 + '\\n'\nwhile True:\n    sys.stdout.write(line * 1000)"
)


def wait_until(cond: Callable[[], object], timeout: float = 20.0, what: str = "") -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what or cond}")
        time.sleep(0.05)


def rss(pid: int) -> int:
    return psutil.Process(pid).memory_info().rss


def hello_latency(server: Server, sock: socket.socket) -> float:
    start = time.monotonic()
    reply = server.request({"op": "hello", "id": "ping"}, sock)
    assert reply["ok"] is True
    return time.monotonic() - start


def non_reading(server: Server, request: bytes) -> socket.socket:
    """A client that sends ``request`` and never reads: a tiny receive buffer, non-blocking."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(server.path)
    sock.sendall(request)
    sock.setblocking(False)
    return sock


def read_to_end(sock: socket.socket, timeout: float) -> bytes:
    """Everything until the server closes; fails if it does not within ``timeout``."""
    sock.setblocking(True)
    sock.settimeout(timeout)
    data = bytearray()
    with contextlib.suppress(ConnectionResetError):
        while chunk := sock.recv(1 << 20):
            data += chunk
    return bytes(data)


def finish(server: Server) -> str:
    """Stop the server with SIGTERM; it must exit 0 without a traceback. Its stderr."""
    server.proc.send_signal(signal.SIGTERM)
    try:
        _out, err = server.proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        server.proc.kill()
        server.proc.communicate()
        raise
    assert "Traceback" not in err, err
    assert server.proc.returncode == 0, err
    return err


# -- in-process servers ------------------------------------------------------------------


@contextlib.asynccontextmanager
async def served(tmp_path: Path, **options: Any) -> AsyncIterator[tuple[Supervisor, ControlServer]]:
    logs = tmp_path / "logs"
    logs.mkdir(mode=0o700, exist_ok=True)
    async with (
        Supervisor(log_dir=logs, graceful_timeout=0.5) as sup,
        ControlServer(sup, default_socket_path("t"), **options) as server,
    ):
        yield sup, server


class AClient:
    """A well-behaved client on the test's own loop."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @classmethod
    async def connect(cls, path: str) -> AClient:
        reader, writer = await asyncio.open_unix_connection(path, limit=256 * 1024 * 1024)
        return cls(reader, writer)

    async def send(self, message: dict[str, Any] | bytes) -> None:
        raw = message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n"
        self.writer.write(raw)
        await self.writer.drain()

    async def receive(self, timeout: float = 20.0) -> dict[str, Any]:
        line = await asyncio.wait_for(self.reader.readline(), timeout)
        if not line.endswith(b"\n"):
            raise ConnectionError(f"closed after {line[:200]!r}")
        message: dict[str, Any] = json.loads(line)
        return message

    async def request(self, message: dict[str, Any] | bytes) -> dict[str, Any]:
        await self.send(message)
        return await self.receive()

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(OSError):
            await self.writer.wait_closed()


async def call(path: str, message: dict[str, Any] | bytes) -> dict[str, Any]:
    client = await AClient.connect(path)
    try:
        return await client.request(message)
    finally:
        await client.close()


async def wait_for(cond: Callable[[], object], timeout: float = 20.0, what: str = "") -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what or cond}")
        await asyncio.sleep(0.02)


def raw_socket(path: str, rcvbuf: int | None = 4096) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if rcvbuf is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.connect(path)
    sock.setblocking(False)
    return sock


async def closed_by_server(sock: socket.socket, timeout: float) -> bytes:
    """Read (without blocking the loop) until the server closes the connection."""
    loop = asyncio.get_running_loop()
    data = bytearray()
    end = loop.time() + timeout
    while loop.time() < end:
        try:
            chunk = sock.recv(1 << 20)
        except BlockingIOError:
            await asyncio.sleep(0.02)
            continue
        except ConnectionResetError:
            return bytes(data)
        if not chunk:
            return bytes(data)
        data += chunk
    raise AssertionError(f"the server did not close the connection within {timeout} s")


# -- 1. no client makes the server grow or stall -----------------------------------------


@pytest.mark.slow
def test_stuck_out_clients_during_a_flood_keep_the_server_small_and_live(server):
    with server.connect() as good:
        reply = server.request(
            {"op": "run", "session": "s", "agent": "a", "argv": [sys.executable, "-c", NUL_FLOOD]},
            good,
        )
        proc = reply["result"]["id"]
        # Until the ring is full (32 MiB): each stuck reply then starts at its biggest.
        # (Once the 64 MiB disk cap cuts, the ring has long been full.)
        wait_until(
            lambda: any(
                p["id"] == proc and p["cut_bytes"] > 0
                for p in server.request({"op": "procs"}, good)["result"]
            ),
            what="the ring to wrap",
        )
        stuck = [non_reading(server, b'{"op": "out", "proc": %d}\n' % proc) for _ in range(10)]
        try:
            peak, slowest = 0, 0.0
            end = time.monotonic() + SEND_TIMEOUT + 5
            while time.monotonic() < end:
                peak = max(peak, rss(server.proc.pid))
                slowest = max(slowest, hello_latency(server, good))
                time.sleep(0.1)
            assert peak < RSS_BOUND, f"server RSS reached {peak / 2**20:.0f} MB"
            assert slowest < LATENCY_BOUND, f"a hello took {slowest:.2f} s"
            # Each stuck client was cut off mid-reply rather than buffered for.
            for sock in stuck:
                data = read_to_end(sock, timeout=SEND_TIMEOUT + 10)
                assert data.startswith(
                    b'{"v":%d,"id":null,"ok":true,"result":{"lines":[' % PROTOCOL_VERSION
                )
                assert not data.endswith(b"}}\n")
        finally:
            for sock in stuck:
                sock.close()
        assert server.request({"op": "kill", "proc": proc}, good)["ok"] is True
    err = finish(server)
    assert err.count("cut off control client") == 10, err


@pytest.mark.slow
def test_half_sent_requests_pin_little_memory_and_end(server):
    """500 connections each send up to 1 MiB of a request and never its newline."""
    partial = b'{"op": "idx", "pad": "' + b"x" * (1024 * 1024 - 32)
    socks: list[socket.socket] = []
    good = server.connect()  # before the others take every connection there is
    try:
        for _ in range(500):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(server.path)
            sock.setblocking(False)
            sent = 0
            while sent < len(partial):
                try:
                    sent += sock.send(partial[sent : sent + 65536])
                except BlockingIOError:
                    break  # as much as the kernel and the server take for now
                except OSError:
                    break  # refused and closed already
            socks.append(sock)
        peak, slowest = 0, 0.0
        for _ in range(20):
            peak = max(peak, rss(server.proc.pid))
            slowest = max(slowest, hello_latency(server, good))
            time.sleep(0.1)
        assert peak < RSS_BOUND, f"server RSS reached {peak / 2**20:.0f} MB"
        assert slowest < LATENCY_BOUND
        # A fresh client is served while they are all there: one of them makes room.
        with server.connect() as fresh:
            assert hello_latency(server, fresh) < LATENCY_BOUND
        # Each is told why, and closed: too many at once, or too slow to finish.
        codes: dict[str, int] = {}
        open_ = {sock.fileno(): sock for sock in socks}
        buffers: dict[int, bytes] = dict.fromkeys(open_, b"")
        end = time.monotonic() + REQUEST_TIMEOUT + 20
        with selectors.DefaultSelector() as sel:
            for sock in socks:
                sel.register(sock, selectors.EVENT_READ)
            while open_ and time.monotonic() < end:
                for key, _ in sel.select(1.0):
                    fd = key.fd
                    try:
                        chunk = open_[fd].recv(65536)
                    except ConnectionResetError:
                        chunk = b""
                    if chunk:
                        buffers[fd] += chunk
                        continue
                    sel.unregister(open_.pop(fd))
                    code = json.loads(buffers[fd].split(b"\n")[0])["error"]["code"]
                    codes[code] = codes.get(code, 0) + 1
        assert not open_, f"{len(open_)} connections still open"
        assert set(codes) <= {"busy", "too-slow"}, codes
        assert sum(codes.values()) == 500
        assert hello_latency(server, good) < LATENCY_BOUND
    finally:
        good.close()
        for sock in socks:
            sock.close()
    with server.connect() as again:  # and new clients are served once they are gone
        assert hello_latency(server, again) < LATENCY_BOUND


def test_out_reply_written_in_pieces_equals_one_read(tmp_path):
    """The piecewise reply is the same one JSON line a single read would give."""
    child = py(r"""
        import sys
        for i in range(30000):
            out = sys.stderr if i % 7 == 0 else sys.stdout
            out.write(f"{i} é\0\x01 \"q\" \\ " + "x" * (i % 300) + "\n")
        sys.stdout.write("y" * 200000 + "\n")  # split into pieces of 64 KiB
        sys.stdout.flush()
    """)

    async def main() -> None:
        logs = tmp_path / "logs"
        logs.mkdir(mode=0o700)
        async with (
            Supervisor(log_dir=logs, ring_lines=20000) as sup,
            ControlServer(sup, default_socket_path("t")) as server,
        ):
            p = await sup.spawn(child, session="s", agent="a")
            await sup.wait(p.id)
            await wait_for(lambda: not p.output_open)
            client = await AClient.connect(server.path)
            try:
                for since, limit, stream in [
                    (0, None, None),
                    (0, None, "stderr"),
                    (15000, None, None),
                    (12000, 1, None),
                    (12000, 4321, "stdout"),
                    (29990, None, "stderr"),
                    (10**9, None, None),
                ]:
                    req = {"op": "out", "proc": p.id, "since": since, "id": [since]}
                    if limit is not None:
                        req["limit"] = limit
                    if stream is not None:
                        req["stream"] = stream
                    reply = await client.request(req)
                    assert reply["id"] == [since]
                    want = out_result(sup.read(p.id, since, limit=limit, stream=stream))
                    assert reply["result"] == want, (since, limit, stream)
                assert (await client.request({"op": "hello"}))["ok"] is True
            finally:
                await client.close()

    asyncio.run(main())


@pytest.mark.promise("Guarantees and limits: No client can grow or stall the server")
def test_a_client_that_stops_reading_is_cut_off_and_others_are_served(run, tmp_path):
    big = py("""
        import sys, time
        sys.stdout.write(("z" * 500 + "\\n") * 20000)  # 10 MB in the ring
        sys.stdout.flush()
        time.sleep(60)
    """)
    steady = py("""
        import sys, time
        while True:
            sys.stdout.write(("\\0" * 1000 + "\\n") * 200)
            sys.stdout.flush()
            time.sleep(0.01)
    """)

    async def main() -> None:
        async with served(tmp_path, send_timeout=1.0) as (sup, server):
            p = await sup.spawn(big, session="s", agent="a")
            await wait_for(lambda: p.last_seq >= 20000, what="the output")
            flood = await sup.spawn(steady, session="s", agent="b")
            once = raw_socket(server.path)
            once.send(b'{"op": "out", "proc": %d}\n' % p.id)
            follow = raw_socket(server.path)
            follow.send(b'{"op": "out", "proc": %d, "follow": true}\n' % flood.id)
            good = await AClient.connect(server.path)
            try:
                slowest = 0.0
                end = time.monotonic() + 3.0
                while time.monotonic() < end:
                    start = time.monotonic()
                    assert (await good.request({"op": "hello"}))["ok"] is True
                    slowest = max(slowest, time.monotonic() - start)
                    await asyncio.sleep(0.05)
                assert slowest < LATENCY_BOUND
                cut = await closed_by_server(once, timeout=10)
                assert cut.startswith(
                    b'{"v":%d,"id":null,"ok":true,"result":{"lines":[' % PROTOCOL_VERSION
                )
                assert not cut.endswith(b"\n")
                await closed_by_server(follow, timeout=10)
                assert (await good.request({"op": "kill", "proc": flood.id}))["ok"] is True
                assert (await good.request({"op": "kill", "proc": p.id}))["ok"] is True
            finally:
                await good.close()
                once.close()
                follow.close()

    run(main())


async def hello_when_served(path: str, timeout: float = 10.0) -> None:
    """Connect until a connection is served (a closing one may still count)."""
    end = time.monotonic() + timeout
    while True:
        reply = await call(path, {"op": "hello"})
        if reply.get("ok"):
            return
        assert reply["error"]["code"] == "busy"
        assert time.monotonic() < end, "still busy"
        await asyncio.sleep(0.05)


@pytest.mark.promise("Guarantees and limits: No client can grow or stall the server")
def test_past_the_cap_the_longest_waiting_connection_makes_room(run, tmp_path):
    async def main() -> None:
        async with served(tmp_path, max_clients=3) as (_sup, server):
            held = [await AClient.connect(server.path) for _ in range(3)]
            for client in held:
                assert (await client.request({"op": "hello"}))["ok"] is True
            # A fourth is served: the one idle longest is told why and closed.
            fresh = await AClient.connect(server.path)
            assert (await fresh.request({"op": "hello"}))["ok"] is True
            oldest = held.pop(0)
            reply = await oldest.receive()
            assert reply["error"]["code"] == "busy"
            assert "waited longest" in reply["error"]["message"]
            assert await oldest.reader.read() == b""
            await oldest.close()
            for client in held:
                assert (await client.request({"op": "idx"}))["ok"] is True
            await fresh.close()
            for client in held:
                await client.close()

    run(main())


@pytest.mark.slow
def test_five_hundred_clients_at_once_are_all_answered(server):
    socks = []
    try:
        for n in range(500):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(server.path)  # the backlog holds those not accepted yet
            sock.sendall(json.dumps({"op": "hello", "id": n}).encode() + b"\n")
            socks.append(sock)
        for n, sock in enumerate(socks):
            sock.settimeout(30)
            reply = read_message(sock)
            assert reply["id"] == n and reply["ok"] is True, reply
    finally:
        for sock in socks:
            sock.close()


def test_past_the_cap_with_every_connection_busy_a_new_one_waits_its_turn(run, tmp_path):
    async def main() -> None:
        async with served(tmp_path, max_clients=3) as (_sup, server):
            streams = [await AClient.connect(server.path) for _ in range(3)]
            for n, client in enumerate(streams):
                await client.send({"op": "events", "id": n, "pattern": "#"})
                assert (await client.receive())["ok"] is True
            # None of them waits for a request: the new client is not refused,
            # it waits (in the backlog) until one of them ends.
            waiting = await AClient.connect(server.path)
            await waiting.send({"op": "hello", "id": "w"})
            with pytest.raises(TimeoutError):
                await waiting.receive(timeout=0.5)
            await streams.pop().close()
            reply = await waiting.receive(timeout=10)
            assert reply["id"] == "w" and reply["ok"] is True
            await waiting.close()
            for client in streams:
                await client.close()

    run(main())


def test_a_request_must_be_finished_in_time_but_idle_is_fine(tmp_path):
    async def main() -> None:
        async with served(tmp_path, request_timeout=0.5) as (_sup, server):
            idle = await AClient.connect(server.path)
            slow = await AClient.connect(server.path)
            await slow.send(b'{"op": "id')
            reply = await slow.receive(timeout=5)
            assert reply["error"]["code"] == "too-slow"
            assert await slow.reader.read() == b""
            await slow.close()
            # Blank lines and a connection that says nothing are not a started request.
            await idle.send(b"\n\n")
            await asyncio.sleep(1.0)
            assert (await idle.request({"op": "hello"}))["ok"] is True
            await idle.close()

    asyncio.run(main())


@pytest.mark.promise("Guarantees and limits: No client can grow or stall the server")
def test_large_unfinished_requests_share_a_budget(tmp_path):
    async def main() -> None:
        loop = asyncio.get_running_loop()
        async with served(tmp_path, large_request_budget=300 * 1024) as (_sup, server):
            big = [raw_socket(server.path, rcvbuf=None) for _ in range(4)]
            try:
                for sock in big:
                    with contextlib.suppress(ConnectionError):
                        await loop.sock_sendall(sock, b'{"op": "idx", "pad": "' + b"x" * 200_000)
                    await asyncio.sleep(0.1)
                refused = 0
                for sock in big:
                    try:
                        data = sock.recv(65536)
                    except BlockingIOError:
                        continue
                    assert json.loads(data)["error"]["code"] == "busy"
                    refused += 1
                # Each holds 64 KiB on its own and 136 KB of the 300 KiB shared.
                assert refused == 2
                assert (await call(server.path, {"op": "hello"}))["ok"] is True
            finally:
                for sock in big:
                    sock.close()
            # Their share comes back when they leave: a request needing all of it fits.
            whole = b'{"op": "hello", "pad": "' + b"x" * 360_000 + b'"}\n'
            end = time.monotonic() + 10
            while (reply := await call(server.path, whole))["error"]["code"] == "busy":
                assert time.monotonic() < end
                await asyncio.sleep(0.05)
            assert reply["error"]["code"] == "bad-field"  # read whole, then judged

    asyncio.run(main())


def test_handler_os_errors_and_bugs_get_a_reply(tmp_path, monkeypatch):
    async def main() -> None:
        async with served(tmp_path) as (sup, server):

            def no_fds(*args: object) -> str:
                raise OSError(24, "Too many open files")

            def bug(*args: object) -> str:
                raise RuntimeError("boom")

            client = await AClient.connect(server.path)
            monkeypatch.setattr(sup, "idx", no_fds)
            reply = await client.request({"op": "idx", "id": 1})
            assert reply["id"] == 1
            assert reply["error"] == {
                "type": "OSError",
                "message": "idx: Too many open files",
                "errno": "EMFILE",
            }
            monkeypatch.setattr(sup, "top", bug)
            reply = await client.request({"op": "top", "id": 2})
            assert reply["error"]["type"] == "InternalError"
            assert (await client.request({"op": "hello"}))["ok"] is True
            await client.close()

    asyncio.run(main())


# -- 2. events ---------------------------------------------------------------------------


def test_events_are_forwarded_as_the_subscription_yields_them(tmp_path):
    async def main() -> None:
        async with served(tmp_path) as (_sup, server):
            watcher = await AClient.connect(server.path)
            ack = await watcher.request({"op": "events", "id": "w", "pattern": "session.s.>"})
            assert ack["result"] == {"subscribed": "session.s.>"}
            reply = await call(
                server.path,
                {"op": "run", "session": "s", "agent": "a", "argv": ["sh", "-c", "exit 3"]},
            )
            proc = reply["result"]["id"]
            kinds = []
            while "exit" not in kinds:
                message = await watcher.receive()
                assert message["id"] == "w"
                ev = message["event"]
                assert ev["proc"] == proc
                assert ev["topic"] == f"session.s.agent.a.proc.{ev['kind']}"
                kinds.append(ev["kind"])
                if ev["kind"] == "exit":
                    assert (ev["code"], ev["reason"]) == (3, "failed")
                    assert "signal" not in ev  # fields that do not apply are left out
            assert kinds[0] == "start"
            await watcher.close()

    asyncio.run(main())


def running(server: Server, sock: socket.socket) -> int:
    sessions = server.request({"op": "sessions"}, sock)["result"]
    return sum(a["running"] for s in sessions for a in s["agents"])


@pytest.mark.slow
def test_stuck_event_subscribers_lose_events_not_memory(server):
    stuck = [non_reading(server, b'{"op": "events"}\n') for _ in range(10)]
    try:
        with server.connect() as busy:
            # Start and exit events carry the command: about 4 KB per run, 12 MB
            # per subscriber over 3,000 runs; kept for ten, 120 MB.
            run = {"op": "run", "session": "s", "agent": "b", "argv": ["true", "x" * 2000]}
            server.request(run, busy)
            base = rss(server.proc.pid)
            for _ in range(6):
                busy.sendall((json.dumps(run).encode() + b"\n") * 500)
                replies = [read_message(busy) for _ in range(500)]
                assert all(r["ok"] for r in replies)
                wait_until(lambda: running(server, busy) == 0)
                for r in replies:  # only the events remain
                    server.request({"op": "dismiss", "proc": r["result"]["id"]}, busy)
            grown = rss(server.proc.pid) - base
        assert grown < 60 * 1024 * 1024, f"grew by {grown / 2**20:.0f} MB"
        # Well past SEND_TIMEOUT, they are still subscribed, and told what they lost.
        for sock in stuck:
            sock.setblocking(True)
            sock.settimeout(10)
            stream = sock.makefile("rb")
            missed = 0
            while not missed:
                missed = json.loads(stream.readline()).get("event", {}).get("missed", 0)
            stream.close()
    finally:
        for sock in stuck:
            sock.close()


# -- 3. shutdown -------------------------------------------------------------------------


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
@pytest.mark.promise("Guarantees and limits: One server per socket, and a clean stop")
def test_stop_signal_with_stream_clients_is_bounded_and_clean(tmp_path, sig):
    srv = start_server(tmp_path, "--graceful-timeout", "2")
    clients: list[socket.socket] = []
    try:
        with srv.connect() as c:
            stubborn = srv.request(
                {"op": "run", "session": "s", "agent": "a", "argv": IGNORES_TERM}, c
            )["result"]["id"]
            talker = srv.request(
                {
                    "op": "run",
                    "session": "s",
                    "agent": "a",
                    "argv": py(
                        "import time\nwhile True: print('hi', flush=True); time.sleep(0.05)"
                    ),
                },
                c,
            )["result"]["id"]
            wait_until(lambda: srv.ctl("out", str(stubborn)).stdout == f"{IGNORES_TERM_READY}\n")
        left = srv.connect()
        left.sendall(b'{"op": "events"}\n')
        read_message(left)
        left.close()  # an events client that came and went
        events = srv.connect()
        events.sendall(b'{"op": "events"}\n')
        read_message(events)
        follow = srv.connect()
        follow.sendall(b'{"op": "out", "proc": %d, "follow": true}\n' % talker)
        read_message(follow)
        clients += [events, follow]
        srv.proc.send_signal(sig)
        start = time.monotonic()
        _out, err = srv.proc.communicate(timeout=30)
        took = time.monotonic() - start
    finally:
        for sock in clients:
            sock.close()
        if srv.proc.poll() is None:
            srv.proc.kill()
            srv.proc.communicate()
    assert "Traceback" not in err, err
    assert srv.proc.returncode == 0, err
    assert took < 2 + scaled(5), f"stopping took {took:.1f} s"
    assert not os.path.exists(srv.path)


def test_second_stop_signal_kills_at_once(tmp_path):
    srv = start_server(tmp_path, "--graceful-timeout", "30")
    try:
        pid = srv.request({"op": "run", "session": "s", "agent": "a", "argv": IGNORES_TERM})[
            "result"
        ]["os_pid"]
        wait_until(lambda: srv.ctl("out", "1").stdout == f"{IGNORES_TERM_READY}\n")
        srv.proc.send_signal(signal.SIGTERM)
        assert srv.proc.stderr is not None
        while "stopping" not in (line := srv.proc.stderr.readline()):
            assert line, "serve ended before it said it was stopping"
        start = time.monotonic()
        srv.proc.send_signal(signal.SIGINT)
        srv.proc.wait(timeout=20)
        took = time.monotonic() - start
        err = srv.proc.stderr.read()
    finally:
        if srv.proc.poll() is None:
            srv.proc.kill()
        srv.proc.communicate()
    assert srv.proc.returncode == 0, err
    assert "Traceback" not in err, err
    assert "killing every process now" in err
    assert took < scaled(10), f"the second signal took {took:.1f} s to end it (grace is 30 s)"
    assert not alive(pid)


def serve_cli(tmp_path: Path, *args: str, limit_fds: int | None = None, timeout: float = 30):
    env, _runtime = isolated_env(tmp_path, "rt")
    if limit_fds is None:
        argv = [sys.executable, "-m", "procwindow", "serve", *args]
    else:
        argv = [sys.executable, "-c", LIMITED, str(limit_fds), "serve", *args]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)


#: Runs the command line under a lower RLIMIT_NOFILE: argv[1] is the limit.
LIMITED = textwrap.dedent("""
    import resource, sys
    limit = int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
    from procwindow.cli import main
    sys.exit(main(sys.argv[2:]))
""")


@pytest.mark.parametrize("value", ["inf", "1e999", "nan", "-1", "61", "-inf"])
def test_serve_refuses_an_unbounded_graceful_timeout(tmp_path, value):
    done = serve_cli(tmp_path, f"--graceful-timeout={value}")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith("procwindow serve: --graceful-timeout must be between 0 and 60")


@pytest.mark.parametrize(
    ("args", "limit_fds", "status", "fact"),
    [
        (("--socket", "LONG"), None, 1, "path too long"),
        (("--name", "ok"), 9, 1, "Too many open files"),
        (("--name", "../x"), None, 2, "--name: invalid server name"),
        (("--name", ""), None, 2, "--name: invalid server name"),
    ],
)
def test_serve_failures_are_one_line(tmp_path, args, limit_fds, status, fact):
    args = tuple(str(tmp_path / ("x" * 120 + ".sock")) if a == "LONG" else a for a in args)
    done = serve_cli(tmp_path, *args, limit_fds=limit_fds)
    assert done.returncode == status, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("procwindow serve: ")
    assert done.stderr.count("\n") == 1, done.stderr
    assert fact in done.stderr


# -- 4. protocol input -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "code", "fact"),
    [
        (b"[" * 100000, "malformed", "nested more than"),
        (b'{"op": "hello", "id": ' + b"[" * 40 + b"]" * 40 + b"}", "malformed", "nested"),
        (b'{"op": "hello", "id": ' + b"1" * 5000 + b"}", "malformed", "not a JSON object"),
        (b'{"op": "hello", "id": NaN}', "malformed", "NaN is not JSON"),
        (b'{"op": "hello", "id": Infinity}', "malformed", "Infinity is not JSON"),
        (b'{"op": "hello", "v": true}', "version", "protocol version True"),
        (
            b'{"op": "out", "proc": 1, "since": -1}',
            "bad-field",
            "since must be an integer of at least 0",
        ),
        (
            b'{"op": "out", "proc": 1, "limit": 0}',
            "bad-field",
            "limit must be an integer of at least 1",
        ),
        (b'{"op": "out", "proc": 1, "limit": true}', "bad-field", "limit must be an integer of at"),
        (b'{"op": "out", "proc": 1, "limit": 1.5}', "bad-field", "limit must be an integer of at"),
        (b'{"op": "out", "proc": true}', "bad-field", "proc must be an integer of at least 1"),
        (b'{"op": "term", "proc": -3}', "bad-field", "proc must be an integer of at least 1"),
        (b'{"op": "kill", "proc": 0}', "bad-field", "proc must be an integer of at least 1"),
        (b'{"op": "out", "proc": 1, "follow": "yes"}', "bad-field", "follow must be true or false"),
        (
            b'{"op": "dismiss", "proc": 1, "keep_logs": 1}',
            "bad-field",
            "unknown field 'keep_logs': dismiss takes proc",
        ),
        (
            b'{"op": "run", "session": "s", "agent": "a", "argv": ["true"], '
            b'"graceful_timeout": 1e999}',
            "bad-field",
            "graceful_timeout must be between 0 and 60",
        ),
        (
            b'{"op": "run", "session": "s", "agent": "a", "argv": ["true"], '
            b'"graceful_timeout": -1}',
            "bad-field",
            "graceful_timeout must be between 0 and 60",
        ),
        (
            b'{"op": "run", "session": "s", "agent": "a", "argv": ["true"], '
            b'"graceful_timeout": true}',
            "bad-field",
            "graceful_timeout must be a number",
        ),
    ],
)
def test_hostile_requests_get_errors_and_the_connection_stays_usable(server, line, code, fact):
    with server.connect() as sock:
        reply = server.request(line + b"\n", sock)
        assert reply["ok"] is False
        assert reply["error"]["code"] == code
        assert fact in reply["error"]["message"]
        assert server.request({"op": "hello", "id": "after"}, sock)["id"] == "after"
    assert "\n1\t" not in server.ctl("idx").stdout  # no run got through


nested = st.recursive(
    st.none() | st.integers() | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=2), inner),
    max_leaves=60,
)


@settings(max_examples=examples(300), deadline=None)
@given(
    st.one_of(
        st.integers(1, 3000).map(lambda n: b'{"op": "hello", "id": ' + b"[" * n + b"]" * n + b"}"),
        st.integers(1, 3000).map(lambda n: b"{" + b'"a":{' * n + b"}" * (n + 1)),
        nested.map(lambda v: json.dumps({"op": "hello", "id": v}).encode()),
        st.binary(max_size=50).map(lambda b: b"[" * 2000 + b),
    )
)
def test_decode_request_survives_any_nesting(raw):
    try:
        req = decode_request(raw)
    except ProtocolError as exc:
        code = exc.code
    else:
        code = None
        json.dumps(req)  # echoing its id can never hit the recursion limit
        depth, stack = 0, [(req, 1)]
        while stack:
            value, d = stack.pop()
            depth = max(depth, d)
            if isinstance(value, dict):
                stack += [(v, d + 1) for v in value.values()]
            elif isinstance(value, list):
                stack += [(v, d + 1) for v in value]
        assert depth <= MAX_DEPTH + 1
    assert code in {None, "malformed", "bad-field", "unknown-op", "version"}


# -- 5. ctl never prints a traceback -----------------------------------------------------


def ctl(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "procwindow", "ctl", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )


def ctl_env(runtime: Path) -> dict[str, str]:
    env = dict(os.environ, XDG_RUNTIME_DIR=str(runtime), PYTHONPATH=str(ROOT))
    env.pop("PROCWINDOW_SOCKET", None)
    return env


def one_line_error(done: subprocess.CompletedProcess[str], status: int, fact: str) -> None:
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == status, done.stderr
    assert done.stderr.startswith("procwindow ctl: "), done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert fact in done.stderr, done.stderr


@pytest.mark.parametrize(
    ("args", "fact"),
    [
        (("--name", "../x", "idx"), "invalid server name '../x'"),
        (("--name", "", "idx"), "invalid server name ''"),
        (("--name", "a/b", "idx"), "invalid server name"),
        (
            ("run", "--session", "s", "--agent", "a", "--graceful-timeout", "inf", "--", "true"),
            "graceful_timeout must be between 0 and 60 seconds, got inf",
        ),
    ],
)
def test_ctl_usage_errors(tmp_path, args, fact):
    runtime = tmp_path / "rt"
    runtime.mkdir(mode=0o700)
    one_line_error(ctl(ctl_env(runtime), *args), 2, fact)


NOBODY = 65534


@pytest.mark.parametrize("kind", ["symlink", "other-user", "mode-0777", "file"])
def test_ctl_refuses_a_hostile_socket_directory(tmp_path, kind):
    runtime = tmp_path / "rt"
    runtime.mkdir(mode=0o700)
    target = runtime / "procwindow"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    if kind == "symlink":
        target.symlink_to(elsewhere)
        fact = "is a symlink"
    elif kind == "other-user":
        if os.geteuid() != 0:
            pytest.skip("needs root to give a directory to another user")
        target.mkdir(mode=0o700)
        os.chown(target, NOBODY, NOBODY)
        fact = f"belongs to uid {NOBODY}"
    elif kind == "mode-0777":
        target.mkdir()
        target.chmod(0o777)
        fact = "writable by others"
    else:
        target.write_text("")
        fact = "not a directory"
    one_line_error(ctl(ctl_env(runtime), "idx"), 3, fact)
    # The server refuses it too, in one line, and changes nothing.
    done = serve_cli(tmp_path)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1
    assert fact in done.stderr
    if kind == "mode-0777":
        assert stat.S_IMODE(target.stat().st_mode) == 0o777


def test_ctl_socket_path_that_is_a_regular_file(tmp_path):
    plain = tmp_path / "plain.sock"
    plain.write_text("not a socket")
    one_line_error(ctl(ctl_env(tmp_path), "--socket", str(plain), "idx"), 3, "cannot connect")
    one_line_error(
        ctl(ctl_env(tmp_path), "--socket", str(tmp_path / "nothing.sock"), "idx"),
        3,
        "cannot connect",
    )


class FakeServer:
    """Answers each connection with ``reply`` (raw bytes), then closes it."""

    def __init__(self, path: str, reply: bytes) -> None:
        self.reply = reply
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        self.sock.listen()
        self.sock.settimeout(0.1)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(5)
                with contextlib.suppress(OSError):
                    while b"\n" not in conn.recv(65536):
                        pass
                    conn.sendall(self.reply)

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        self.sock.close()


@pytest.mark.parametrize(
    ("reply", "fact"),
    [
        (b'{"v":1,"id":1,"ok":true,"result":{"te', "closed the connection in the middle"),
        (b"", "the server closed the connection"),
        (b"garbage\n", "not JSON"),
        (b"[1, 2]\n", "not a JSON object"),
        (b"\xff\xfe\n", "not JSON"),
        (b"[" * 100000 + b"\n", "not JSON"),
        (b'{"v":1,"id":1,"ok":true,"result":null}\n', "unexpected reply"),
        (b'{"v":1,"id":1,"ok":true,"result":{"text":5}}\n', "unexpected reply"),
        (b'{"v":1,"id":1,"ok":false,"error":"no"}\n', "without a result or an error"),
        (b'{"v":1,"id":1}\n', "without a result or an error"),
    ],
)
def test_ctl_against_a_broken_server(tmp_path, reply, fact):
    path = str(tmp_path / "fake.sock")
    fake = FakeServer(path, reply)
    try:
        done = ctl(ctl_env(tmp_path), "--socket", path, "idx")
    finally:
        fake.close()
    one_line_error(done, 1, fact)


# -- 6. the socket directory -------------------------------------------------------------


def test_socket_dir_of_ours_readable_by_others_is_narrowed(tmp_path, monkeypatch):
    runtime = tmp_path / "rt"
    runtime.mkdir(mode=0o700)
    (runtime / "procwindow").mkdir(mode=0o755)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    assert socket_dir(create=False) == str(runtime / "procwindow")
    assert (
        stat.S_IMODE((runtime / "procwindow").stat().st_mode) == 0o755
    )  # a client changes nothing
    assert socket_dir() == str(runtime / "procwindow")
    assert stat.S_IMODE((runtime / "procwindow").stat().st_mode) == 0o700
    (runtime / "procwindow").chmod(0o770)
    with pytest.raises(SocketDirError, match=r"unsafe socket directory .* writable by others"):
        socket_dir()


# -- 7. one server per socket ------------------------------------------------------------


@pytest.mark.promise("Guarantees and limits: One server per socket, and a clean stop")
def test_same_name_servers_started_at_once_leave_exactly_one(tmp_path):
    env, runtime = isolated_env(tmp_path, "rt")
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "procwindow", "serve", "--name", "race"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(5)
    ]
    path = runtime / "procwindow" / "race.sock"
    try:
        wait_until(lambda: sum(p.poll() is not None for p in procs) >= 4, timeout=30)
        time.sleep(0.5)  # a fifth exit would show now
        losers = [p for p in procs if p.poll() is not None]
        assert len(losers) == 4
        for proc in losers:
            assert proc.stderr is not None
            err = proc.stderr.read()
            assert proc.returncode == 1, err
            assert err == f"procwindow serve: another server is already listening on {path}\n"
        (survivor,) = [p for p in procs if p not in losers]
        wait_until(path.exists)
        done = ctl(ctl_env(runtime), "--name", "race", "idx")
        assert done.returncode == 0, done.stderr
        survivor.send_signal(signal.SIGTERM)
        _out, err = survivor.communicate(timeout=30)
        assert survivor.returncode == 0, err
        assert "Traceback" not in err
        assert not path.exists()
        assert not (runtime / "procwindow" / "race.lock").exists()
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()


def test_a_server_between_its_lock_and_its_listen_is_not_displaced(tmp_path):
    """The moment the old probe missed: a server has claimed the name but does not
    listen yet. Holding its lock is enough to keep a second one out."""
    folder = tmp_path / "rt" / "procwindow"
    folder.mkdir(mode=0o700, parents=True)
    with open(folder / "x.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        done = serve_cli(tmp_path, "--name", "x")
    assert done.returncode == 1, done.stderr
    assert done.stderr == (
        f"procwindow serve: another server is already listening on {folder / 'x.sock'}\n"
    )
    assert not (folder / "x.sock").exists()
    assert (folder / "x.lock").exists()  # the holder's, left alone


def test_a_replaced_socket_file_is_left_alone(tmp_path):
    srv = start_server(tmp_path)
    os.unlink(srv.path)
    Path(srv.path).write_text("someone else's")
    err = finish(srv)
    assert Path(srv.path).read_text() == "someone else's"
    assert "Traceback" not in err


def test_a_killed_servers_socket_is_taken_over(tmp_path):
    srv = start_server(tmp_path)
    srv.proc.kill()
    srv.proc.communicate()
    assert os.path.exists(srv.path)  # stale, and its lock file too
    again = start_server(tmp_path)
    assert again.ctl("idx").returncode == 0
    finish(again)
    assert not os.path.exists(again.path)


def test_a_live_server_without_the_lock_is_not_displaced(tmp_path):
    runtime = tmp_path / "runtime"
    (runtime / "procwindow").mkdir(mode=0o700, parents=True)
    path = str(runtime / "procwindow" / "test.sock")
    squatter = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    squatter.bind(path)
    squatter.listen()
    try:
        done = serve_cli(tmp_path, "--socket", path)
    finally:
        squatter.close()
    assert done.returncode == 1, done.stderr
    assert done.stderr == f"procwindow serve: another server is already listening on {path}\n"
    assert os.path.exists(path)
    os.unlink(path)


# -- fd exhaustion -----------------------------------------------------------------------


@pytest.mark.slow
def test_server_at_its_fd_limit_answers_recovers_and_stops(tmp_path):
    env, runtime = isolated_env(tmp_path, "runtime")
    path = str(runtime / "procwindow" / "f.sock")
    proc = subprocess.Popen(
        [sys.executable, "-c", LIMITED, "48", "serve", "--name", "f", "--graceful-timeout", "1"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    srv = Server(proc, path, env)
    conns: list[socket.socket] = []
    try:
        wait_until(lambda: os.path.exists(path) or proc.poll() is not None)
        main = srv.connect()
        conns.append(main)
        running = srv.request(
            {"op": "run", "session": "s", "agent": "a", "argv": ["sleep", "60"]}, main
        )["result"]["id"]
        # Connect until the server can no longer accept: every fd it has is in use.
        while True:
            sock = srv.connect()
            conns.append(sock)
            sock.settimeout(3)
            try:
                srv.request({"op": "hello"}, sock)
            except TimeoutError:
                break
            assert len(conns) < 60, "the fd limit was never reached"
        # Requests on a connection it has still get replies, errors included.
        spawn = srv.request(
            {"op": "run", "session": "s", "agent": "a", "argv": ["sleep", "60"]}, main
        )
        assert spawn["ok"] is False
        assert spawn["error"]["message"]
        assert "ok" in srv.request({"op": "term", "proc": running}, main)
        assert srv.request({"op": "idx"}, main)["ok"] is True
        # Once fds are free again, the waiting connection is accepted and served.
        for sock in conns[1:11]:
            sock.close()
        del conns[1:11]
        conns[-1].settimeout(10)
        assert read_message(conns[-1])["ok"] is True
        # And at the limit again, SIGTERM still ends it cleanly.
        for _ in range(12):
            conns.append(srv.connect())
        time.sleep(0.5)
        err = finish(srv)
        assert "cannot accept control connections: [Errno 24] Too many open files" in err
    finally:
        for sock in conns:
            sock.close()
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
