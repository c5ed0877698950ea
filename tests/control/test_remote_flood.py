"""A RemoteSupervisor reading a flood as it comes asks for the next batch as soon
as a reply comes back busy, not once an output event says more is there: the
server's events lag behind a flood (they queue behind its pipe reads), and a
reader that waited for them sat idle for tens of milliseconds per burst."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import pytest

from procwindow.control._protocol import lines_count
from procwindow.control._remote_lines import BUSY_LINES
from procwindow.control.aclient import AsyncClient
from procwindow.control.remote import RemoteSupervisor
from tests.core.helpers import until

from .conftest import Server

BURST = 3 * BUSY_LINES
#: Writes a burst, waits for a line on stdin, writes another, then stays.
CHILD = (
    "import sys, time\n"
    f"n = {BURST}\n"
    "sys.stdout.write(''.join(f'a {i:05d}\\n' for i in range(n))); sys.stdout.flush()\n"
    "sys.stdin.readline()\n"
    "sys.stdout.write(''.join(f'b {i:05d}\\n' for i in range(n))); sys.stdout.flush()\n"
    "time.sleep(60)\n"
)


def test_a_busy_reply_asks_again_without_waiting_for_an_event(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No output event reaches the reader here. Its first busy reply is held until
    the second burst is on the server: the reader still fetches it, on its own."""

    async def scenario() -> list[str]:
        sup = await RemoteSupervisor.connect(server.path)
        raw = await AsyncClient.connect(server.path)
        try:
            p = await sup.spawn([sys.executable, "-c", CHILD], session="s", agent="a", stdin=True)

            async def last_seq() -> int:
                return int((await raw.call("get", proc=p.id))["last_seq"])

            seen = 0

            async def has_first_burst() -> None:
                nonlocal seen
                while (seen := await last_seq()) < BURST:
                    await asyncio.sleep(0.01)

            await asyncio.wait_for(has_first_burst(), 10)
            monkeypatch.setattr(sup._reader, "on_output", lambda *args, **kwargs: None)
            real_call = sup._calls.call
            held: list[int] = []

            async def call(op: str, **fields: Any) -> Any:
                reply = await real_call(op, **fields)
                got = lines_count(reply.get("lines", ())) if op == "out" else 0
                if not held and BUSY_LINES <= got < fields["limit"]:
                    held.append(got)  # a busy reply, not a full one: the case
                    await raw.call("write", proc=p.id, data="go\n")
                    while await last_seq() < 2 * BURST:
                        await asyncio.sleep(0.01)
                return reply

            monkeypatch.setattr(sup._calls, "call", call)
            texts: list[str] = []
            cursor = 0

            def more() -> bool:
                nonlocal cursor
                batch = sup.read(p.id, cursor)
                texts.extend(line.text for line in batch.lines)
                cursor = batch.cursor
                return len(texts) >= 2 * BURST

            await until(more, timeout=10, what="the second burst, with no event")
            assert held, "no busy reply was seen"
            await sup.kill(p.id)
            return texts
        finally:
            await raw.close()
            await sup.close()

    texts = asyncio.run(scenario())
    assert texts == [f"a {i:05d}" for i in range(BURST)] + [f"b {i:05d}" for i in range(BURST)]
