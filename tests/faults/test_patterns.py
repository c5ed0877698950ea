"""Patterns that users give never hold the event loop.

A backtracking bomb (``(a+)+$``, seconds per 27-byte line for Python's ``re``) is
instant; a pattern that is slow even for RE2 (a few MB/s) is scanned in pieces,
so other clients are answered and a timeout is honoured meanwhile; what RE2 lacks
is refused the same way at every surface: library, protocol, ctl, workspace files.
"""

from __future__ import annotations

import asyncio
import json
import socket
import textwrap
import threading
import time
from pathlib import Path

import pytest

from procwindow import InvalidPattern, NoMatch, Ready, Supervisor, Timeout

from ..control.conftest import Server, read_message, start_server, stop_server
from ..core.helpers import py, until

#: Two lines that take ``re`` seconds each against BOMB.
BOMB = r"(a+)+$"
BOMB_LINES = "print('a' * 26 + '!'); print('a' * 26 + '!')"
#: Linear but slow for RE2 (its automaton has ~2**20 states): a few MB/s on ab-lines.
SLOW = r"[ab]*a[ab]{20}$"
#: ~12 MB of lines of random a and b that SLOW never matches (each ends with 21 b):
#: random, so that RE2's automaton meets ever new states.
AB_LINES = """
    import os, sys
    table = bytes(b"ab"[i & 1] for i in range(256))
    rows = os.urandom(100 * 100_000).translate(table)
    tail = b"b" * 21 + b"\\n"
    sys.stdout.buffer.write(b"".join(rows[i : i + 100] + tail for i in range(0, len(rows), 100)))
"""
#: Each is refused, and the message names what RE2 lacks.
REFUSED = [
    (r"(a)\1", "backreferences"),
    (r"a(?=b)", "lookahead"),
    (r"(?<!x)a", "lookbehind"),
    (r"(?>ab)", "atomic groups"),
    (r"a++", "possessive"),
    (r"a\Z", r"\\Z is written \\z"),
]


PROMISE = pytest.mark.promise("Guarantees and limits: No pattern freezes anything")


@PROMISE
def test_a_backtracking_bomb_is_answered_at_once(run) -> None:
    async def main() -> None:
        async with Supervisor() as sup:
            p = await sup.spawn(py(BOMB_LINES), session="s", agent="a")
            await sup.wait(p.id)
            await until(lambda: not sup.get(p.id).output_open)
            assert [h async for h in sup.search(BOMB, regex=True)] == []

            async def best_of_3(pattern: str, regex: bool) -> float:
                times = []
                for _ in range(3):
                    began = time.perf_counter()
                    async for _hit in sup.search(pattern, regex=regex):
                        pass
                    times.append(time.perf_counter() - began)
                return min(times)

            # A backtracking engine takes seconds per line; RE2 what a substring takes.
            plain = await best_of_3("aaaa", False)
            assert await best_of_3(BOMB, True) < 100 * plain
            with pytest.raises(NoMatch):
                await sup.wait_for(p.id, BOMB, timeout=2)
            hit = await sup.wait_for(p.id, r"(a+)+!$", timeout=2)
            assert hit.seq == 1
            q = await sup.spawn(
                py(BOMB_LINES + "; import time; time.sleep(60)"),
                session="s",
                agent="a",
                ready=Ready(line=r"(a+)+!$"),
            )
            assert (await sup.wait_ready(q.id, timeout=10)).ready
            await sup.term(q.id)

    run(main())


@PROMISE
@pytest.mark.slow
def test_a_slow_pattern_leaves_the_loop_to_other_clients(tmp_path: Path) -> None:
    server = start_server(tmp_path)
    try:
        ran = server.ctl("run", "--session", "s", "--agent", "a", "--", *py(AB_LINES))
        proc_id = int(ran.stdout.strip())
        server.ctl("wait", str(proc_id))
        # The whole scan, alone: the baseline of this run.
        started = time.monotonic()
        none = server.ctl("search", "-E", SLOW, check=False)
        alone = time.monotonic() - started
        assert (none.returncode, none.stdout, none.stderr) == (1, "", "")
        sock = server.connect()
        sock.settimeout(120)
        sock.sendall(json.dumps({"op": "search", "id": 1, "pattern": SLOW, "regex": True}).encode())
        sock.sendall(b"\n")
        finished: list[float] = []
        reader = threading.Thread(target=lambda: finished.append(_until_done(sock)))
        reader.start()
        answered = []
        while reader.is_alive() and len(answered) < 5:
            reply = server.request({"op": "idx", "id": "x"})
            assert reply["ok"] is True
            answered.append(time.monotonic())
        reader.join()
        sock.close()
        # Other clients were answered while the scan went on: the loop was not held.
        assert len(answered) == 5, (alone, answered, finished)
        assert answered[-1] < finished[0]
    finally:
        _stop(server)


@PROMISE
@pytest.mark.slow
def test_a_timeout_is_honoured_during_a_slow_scan(run) -> None:
    async def main() -> None:
        async with Supervisor(ring_bytes=64 * 1024 * 1024) as sup:
            p = await sup.spawn(py(AB_LINES), session="s", agent="a")
            await sup.wait(p.id)
            await until(lambda: not sup.get(p.id).output_open)
            started = time.monotonic()
            assert [h async for h in sup.search(SLOW, regex=True)] == []
            whole = time.monotonic() - started
            q = await sup.spawn(
                py(textwrap.dedent(AB_LINES) + "sys.stdout.flush()\nimport time; time.sleep(60)"),
                session="s",
                agent="a",
            )
            await until(lambda: sup.read(q.id, since=99_999, limit=1).lines != [])
            ticks = 0

            async def tick() -> None:
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.001)
                    ticks += 1

            ticker = asyncio.create_task(tick())
            started = time.monotonic()
            with pytest.raises(Timeout):
                await sup.wait_for(q.id, SLOW, timeout=0.5)
            waited = time.monotonic() - started
            ticker.cancel()
            await sup.term(q.id)
            # The timeout fired well before one scan of the ring would have ended,
            # and the loop kept ticking meanwhile (held by one scan, it would not
            # have ticked until the scan's end).
            assert waited < whole / 2, (waited, whole)
            assert ticks >= 5

    run(main())


@PROMISE
@pytest.mark.parametrize(("pattern", "why"), REFUSED)
def test_what_re2_lacks_is_refused_by_the_library(run, pattern: str, why: str) -> None:
    async def main() -> None:
        async with Supervisor() as sup:
            p = await sup.spawn(["echo", "ab"], session="s", agent="a")
            for attempt in (
                lambda: sup.search(pattern, regex=True),
                lambda: sup.wait_for(p.id, pattern, timeout=1),
                lambda: Ready(line=pattern),
            ):
                with pytest.raises(InvalidPattern, match=why) as caught:  # noqa: PT012
                    result = attempt()
                    if asyncio.iscoroutine(result):
                        await result
                assert "\n" not in str(caught.value)
                assert "RE2" in str(caught.value)
            await sup.wait(p.id)

    run(main())


@PROMISE
def test_what_re2_lacks_is_refused_alike_by_ctl_and_workspace_files(tmp_path: Path) -> None:
    server = start_server(tmp_path)
    try:
        for pattern, why in REFUSED:
            for args in (
                ("search", "-E", pattern),
                (
                    "run",
                    "--session",
                    "s",
                    "--agent",
                    "a",
                    "--ready",
                    f"line:{pattern}",
                    "--",
                    "true",
                ),
            ):
                done = server.ctl(*args, check=False)
                assert done.returncode != 0
                lines = done.stderr.strip().splitlines()
                assert len(lines) == 1 and "RE2" in lines[0], (args, done.stderr)
                assert why.replace("\\\\", "\\") in lines[0], (args, done.stderr)
            file = tmp_path / "w.toml"
            escaped = pattern.replace("\\", "\\\\")
            file.write_text(
                '[[session]]\nname = "s"\n[[session.agent]]\nname = "a"\n'
                f'[[session.agent.command]]\nshell = "true"\nready = {{ line = "{escaped}" }}\n'
            )
            done = server.ctl("up", str(file), check=False)
            assert done.returncode != 0
            lines = done.stderr.strip().splitlines()
            assert len(lines) == 1 and "w.toml:7" in lines[0] and "RE2" in lines[0], done.stderr
        assert server.request({"op": "idx", "id": 1})["ok"] is True
    finally:
        _stop(server)


def _until_done(sock: socket.socket) -> float:
    """Read a streamed reply to its end; when it ended."""
    while True:
        message = read_message(sock)
        if "ok" in message:
            assert message["ok"] is True, message
            return time.monotonic()


def _stop(server: Server) -> None:
    assert stop_server(server) == 0
