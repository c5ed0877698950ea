"""``out`` reads a proc in steps whose sizes it picks as it goes (``_lines_per_read``);
wherever those steps are cut, its reply (lines, dropped, cursor, eof) is the one
``read()`` gives: a fuzz over cut points, starting cursors, limits and streams, on a
proc whose lines cross from the disk into the ring and whose log was cut by the cap."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from procwindow import Supervisor
from procwindow.control import _handlers_streams
from procwindow.control._handlers_streams import _StreamVerbs
from procwindow.control._protocol import runs_from_json

from ..control.conftest import out_result
from ..core.helpers import py, until
from ..tiers import examples

CHILD = r"""
    import sys
    for i in range(6000):
        out = sys.stderr if i % 3 == 0 or 2000 < i < 2100 else sys.stdout
        out.write(f"{i} " + "x" * (i % 200) + "\n")
        if i % 50 == 0:
            out.flush()
"""


def runs_from_lines(elements: list) -> list:
    """The lines of an ``out`` reply's ``lines``, in either form."""
    return [line for run in runs_from_json(elements) for line in run.lines()]


async def _out(sup: Supervisor, proc_id: int, since: int, stream: str, limit: int) -> dict:
    """The result of an ``out`` reply, as the server writes it."""
    conn = _Collect()
    want = _handlers_streams.Stream(stream)
    await _StreamVerbs(sup)._out_reply(conn, 1, proc_id, since, want, limit)  # type: ignore[arg-type]
    return json.loads(conn.data)["result"]


class _Collect:
    """The connection ``out`` writes its reply to, piece by piece."""

    def __init__(self) -> None:
        self.data = bytearray()

    async def send(self, data: bytes, *, patient: bool = False) -> None:
        self.data += data


@pytest.mark.parametrize("log_cap", [None, 64 * 1024])
def test_out_gives_what_read_gives_wherever_its_reads_are_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, log_cap: int | None
) -> None:
    cuts: Iterator[int] = iter(())
    monkeypatch.setattr(
        _handlers_streams, "_lines_per_read", lambda count, size, current: next(cuts)
    )

    async def main() -> None:
        nonlocal cuts
        async with Supervisor(log_dir=tmp_path / "logs", ring_lines=1500, log_cap=log_cap) as sup:
            p = await sup.spawn(py(CHILD), session="s", agent="a")
            await sup.wait(p.id)
            await until(lambda: not sup.get(p.id).output_open)
            if log_cap is not None:
                assert sup.get(p.id).cut_lines > 0  # the cap cut the middle
            verbs = _StreamVerbs(sup)
            rnd = random.Random(20261204)
            for case in range(examples(300)):
                sizes = [rnd.choice([1, 2, 3, 7, 50, 333, 1000, 8192]) for _ in range(64)]
                cuts = iter(sizes * 1000)
                monkeypatch.setattr(_handlers_streams, "_FIRST_READ", rnd.choice([1, 5, 32, 900]))
                since = rnd.choice([0, 1, rnd.randrange(6000), 4400, 5990, 6000])
                limit = rnd.choice([None, 1, 2, 10, 777, rnd.randrange(1, 6000)])
                stream = rnd.choice([None, "stdout", "stderr"])
                conn = _Collect()
                want = None if stream is None else _handlers_streams.Stream(stream)
                await verbs._out_reply(conn, case, p.id, since, want, limit)  # type: ignore[arg-type]
                result = json.loads(conn.data)["result"]
                batch = sup.read(p.id, since, limit=limit, stream=stream)
                expected = out_result(batch)
                # ``out`` marks the line after a gap with how many are missing there.
                marked = sum(line.pop("cut", 0) for line in result["lines"])
                assert marked <= result["dropped"]
                got = {k: result[k] for k in expected}
                assert got == expected, (since, limit, stream, sizes[:8])
                # The run form says the same, wherever its reads are cut.
                cuts = iter(sizes * 1000)
                conn = _Collect()
                await verbs._out_reply(conn, case, p.id, since, want, limit, as_runs=True)  # type: ignore[arg-type]
                runs = json.loads(conn.data)["result"]
                decoded = [list(ln) for ln in runs_from_lines(runs["lines"])]
                assert decoded == [list(ln) for ln in batch.lines], (since, limit, stream)
                assert (runs["dropped"], runs["cursor"], runs["eof"]) == (
                    result["dropped"],
                    result["cursor"],
                    result["eof"],
                )
                objects = [ln for ln in runs["lines"] if type(ln) is dict]
                assert sum(ln.get("cut", 0) for ln in objects) == marked

    asyncio.run(main())


#: Two stderr lines, then stdout lines only: each written once the supervisor
#: has read what came before (its pipe is empty), so their order is fixed.
ERR_THEN_OUT = r"""
    import fcntl, struct, sys, termios, time
    def drained(f):
        f.flush()
        while struct.unpack("i", fcntl.ioctl(f.fileno(), termios.FIONREAD, b"\0" * 4))[0]:
            time.sleep(0.001)
    for i in range(2):
        print(f"err {i}", file=sys.stderr)
        drained(sys.stderr)
    for i in range(5):
        print(f"out {i}")
        drained(sys.stdout)
"""


def test_a_limit_met_by_a_stream_s_last_lines_reads_to_the_end(tmp_path: Path) -> None:
    """``out --stream stderr --limit 2`` when those two are the last stderr lines: past
    the stdout lines after them, at the end of a finished proc (eof), as ``read()``."""

    async def main() -> None:
        async with Supervisor(log_dir=tmp_path / "logs") as sup:
            p = await sup.spawn(py(ERR_THEN_OUT), session="s", agent="a")
            await sup.wait(p.id)
            await until(lambda: not sup.get(p.id).output_open)
            batch = sup.read(p.id, 0, limit=2, stream="stderr")
            assert (batch.cursor, batch.eof) == (7, True)
            result = await _out(sup, p.id, 0, "stderr", 2)
            assert {k: result[k] for k in out_result(batch)} == out_result(batch)

    asyncio.run(main())


#: One stdout line, twenty stderr lines, one stdout line, in that order.
OUT_ERRS_OUT = r"""
    import fcntl, struct, sys, termios, time
    def drained(f):
        f.flush()
        while struct.unpack("i", fcntl.ioctl(f.fileno(), termios.FIONREAD, b"\0" * 4))[0]:
            time.sleep(0.001)
    print("out 0"); drained(sys.stdout)
    for i in range(20):
        print(f"err {i}", file=sys.stderr)
        drained(sys.stderr)
    print("out 1"); drained(sys.stdout)
    sys.stdin.readline()
"""


def test_a_limit_met_on_disk_skips_the_other_stream_into_the_ring(tmp_path: Path) -> None:
    """``read(limit=1, stream=stdout)`` met by a line that left the ring: the cursor goes
    past the stderr lines after it, in the log and on into the ring, up to the next
    stdout line (as it does when the whole read is in the ring), and ``out`` agrees."""

    async def main() -> None:
        # The ring holds the last 10 of 22 lines: "out 0" and the first errs are on disk only.
        async with Supervisor(log_dir=tmp_path / "logs", ring_lines=10) as sup:
            p = await sup.spawn(py(OUT_ERRS_OUT), session="s", agent="a", stdin=True)
            await sup.wait_for(p.id, "^out 1$", timeout=10)
            batch = sup.read(p.id, 0, limit=1, stream="stdout")
            assert [line.text for line in batch.lines] == ["out 0"]
            assert (batch.cursor, batch.eof) == (21, False)
            result = await _out(sup, p.id, 0, "stdout", 1)
            assert {k: result[k] for k in out_result(batch)} == out_result(batch)
            await sup.close_stdin(p.id)
            await sup.wait(p.id, timeout=10)

    asyncio.run(main())
