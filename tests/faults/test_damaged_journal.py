"""A damaged journal (``logs/<id>.journal``: bytes overwritten in the middle, or
all of it garbage) still reads: every line the logs hold comes back in each
stream's order, seqs go up one at a time, and the damage is said in the log, not
raised as ``tuple index out of range`` from every read, excerpt, search and wait."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
from pathlib import Path

import pytest

from procwindow import ReadBatch, Supervisor
from procwindow.control import ControlServer

from ..core.helpers import py, until

LINES = 20_000
#: stdout and stderr interleaved, flushed in small reads: many journal records.
CHILD = f"""
    import sys
    for i in range({LINES}):
        print("line", i, flush=i % 50 == 0)
        if i % 7 == 0:
            print("err", i, file=sys.stderr, flush=True)
"""
OUT = [f"line {i}" for i in range(LINES)]
ERR = [f"err {i}" for i in range(0, LINES, 7)]


def _record(tmp_path: Path) -> int:
    async def main() -> int:
        async with Supervisor(log_dir=tmp_path / "logs", state_dir=tmp_path / "state") as sup:
            p = await sup.spawn(py(CHILD), session="s", agent="a")
            await sup.wait(p.id)
            await until(lambda: not sup.get(p.id).output_open)
            return p.id

    return asyncio.run(main())


def _every_line(batch: ReadBatch) -> list[str]:
    """The texts of ``batch``, once it is checked to hold every line the child
    wrote, each stream in its order, seqs one after another."""
    texts = [line.text for line in batch.lines]
    assert [t for t in texts if t.startswith("line")] == OUT
    assert [t for t in texts if t.startswith("err")] == ERR
    assert [line.seq for line in batch.lines] == list(range(1, len(OUT) + len(ERR) + 1))
    return texts


def _damage(journal: Path, how: str) -> None:
    size = journal.stat().st_size
    with journal.open("r+b") as f:
        if how == "garbage":
            f.write(os.urandom(size))
            return
        f.seek(size // 2)
        f.write(os.urandom(400) if how == "random" else bytes(400))


@pytest.mark.promise("Guarantees and limits: A broken log never stops capture")
@pytest.mark.parametrize("how", ["random", "zeros"])
def test_a_journal_overwritten_in_the_middle_reads_every_line(
    tmp_path: Path, how: str, caplog: pytest.LogCaptureFixture
) -> None:
    proc_id = _record(tmp_path)
    _damage(tmp_path / "logs" / f"{proc_id}.journal", how)

    async def main() -> None:
        async with Supervisor(log_dir=tmp_path / "logs", state_dir=tmp_path / "state") as sup:
            with caplog.at_level(logging.WARNING, logger="procwindow"):
                batch = sup.read(proc_id)
            texts = _every_line(batch)
            assert batch.dropped == 0
            assert "damaged records skipped" in caplog.text
            # Read by cursor, in small steps across the damage: the same lines.
            stepped, cursor = [], 0
            while True:
                part = sup.read(proc_id, since=cursor, limit=997)
                stepped += part.lines
                cursor = part.cursor
                if not part.lines:
                    break
            assert [line.text for line in stepped] == texts
            assert (await sup.excerpt(proc_id)).text.endswith(texts[-1] + "\n")
            middle = OUT[LINES // 2]
            hits = [h.line.text async for h in sup.search(middle + "$", regex=True)]
            assert hits == [middle]
            hit = await sup.wait_for(proc_id, f"^line {LINES - 1}$", timeout=5)
            assert hit.text == f"line {LINES - 1}"

    asyncio.run(main())


def test_lines_whose_records_went_before_their_streams_end_still_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Damage up to the last records: each stream's end comes through, its last data
    records do not. The lines between the last data record kept and the end are
    read from the log all the same (they were lost: a CI run's journal once had
    them so)."""
    proc_id = _record(tmp_path)
    journal = tmp_path / "logs" / f"{proc_id}.journal"
    records = journal.stat().st_size // 40
    with journal.open("r+b") as f:  # all but the first quarter and the last two (the ends)
        f.seek(records // 4 * 40)
        f.write(bytes((records - 2 - records // 4) * 40))

    async def main() -> None:
        async with Supervisor(log_dir=tmp_path / "logs", state_dir=tmp_path / "state") as sup:
            with caplog.at_level(logging.WARNING, logger="procwindow"):
                batch = sup.read(proc_id)
            _every_line(batch)
            assert "damaged records skipped" in caplog.text

    asyncio.run(main())


def test_a_journal_of_garbage_still_gives_the_logs(tmp_path: Path) -> None:
    proc_id = _record(tmp_path)
    _damage(tmp_path / "logs" / f"{proc_id}.journal", "garbage")

    async def main() -> None:
        async with Supervisor(log_dir=tmp_path / "logs", state_dir=tmp_path / "state") as sup:
            texts = [line.text for line in sup.read(proc_id).lines]
            assert [t for t in texts if t.startswith("line")] == OUT
            assert [t for t in texts if t.startswith("err")] == ERR
            assert (await sup.excerpt(proc_id)).text
            assert [h async for h in sup.search("line 123$", regex=True)]

    asyncio.run(main())


def test_a_damaged_journal_keeps_the_connection_in_frame(tmp_path: Path) -> None:
    proc_id = _record(tmp_path)
    _damage(tmp_path / "logs" / f"{proc_id}.journal", "random")

    async def main() -> None:
        async with (
            Supervisor(log_dir=tmp_path / "logs", state_dir=tmp_path / "state") as sup,
            ControlServer(sup, str(tmp_path / "s.sock")) as server,
        ):

            def talk() -> list[dict]:
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                    sock.settimeout(30)
                    sock.connect(server.path)
                    reader = sock.makefile("rb")
                    replies = []
                    for n, request in enumerate(
                        [
                            {"op": "out", "proc": proc_id},
                            {"op": "excerpt", "proc": proc_id},
                            {"op": "wait_for", "proc": proc_id, "pattern": "line 19999"},
                            {"op": "idx"},
                        ]
                    ):
                        sock.sendall(json.dumps({**request, "id": n}).encode() + b"\n")
                        replies.append(json.loads(reader.readline()))
                    return replies

            replies = await asyncio.to_thread(talk)
            assert [r["id"] for r in replies] == [0, 1, 2, 3]
            assert all(r["ok"] is True for r in replies), replies[-1]
            out = replies[0]["result"]
            assert len(out["lines"]) == len(OUT) + len(ERR)
            assert out["dropped"] == 0

    asyncio.run(main())
