"""The disk cap (``log_cap``) cuts a log between whole lines and leaves a marker
line saying what went: whatever sizes the reads and lines have, every line left in
a log file is one the process wrote, whole, in order; each cut file has one marker
line, at the cut; ``read()`` of the capped output gives those lines and counts
the cut (issue: "2347656 → 68285 → 26168286", a line torn by the cut)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from procwindow import Stream, Supervisor
from procwindow.core import format_size

from ..core.helpers import py

#: Lines of varied lengths on both pipes, flushed at odd sizes so that reads end
#: inside lines; each line says its stream and number.
WRITER = """
    import os, random, sys
    rnd = random.Random({seed})
    out = {{1: bytearray(), 2: bytearray()}}
    for i in range({count}):
        fd = 1 if rnd.random() < 0.8 else 2
        out[fd] += b"%s %07d %s\\n" % (b"o" if fd == 1 else b"e", i, b"x" * rnd.randrange(0, 300))
        if len(out[fd]) > rnd.randrange(1, 9000):
            cut = rnd.randrange(1, len(out[fd]) + 1)
            os.write(fd, out[fd][:cut])
            del out[fd][:cut]
    for fd in (1, 2):
        os.write(fd, out[fd])
"""
MARKER = re.compile(
    rb"\[procwindow: ([\d,]+) lines \(([^)]+)\) of this output were cut here to keep its log"
    rb" within log_cap\]"
)
LINE = re.compile(rb"([oe]) (\d{7}) x*")


def _check_file(path: Path, tag: bytes) -> tuple[list[int], int]:
    """The numbers of the whole lines in a log file, and how many lines its
    marker says were cut (0: no marker)."""
    data = path.read_bytes() if path.exists() else b""
    assert not data or data.endswith(b"\n")
    numbers: list[int] = []
    said = 0
    for line in data.split(b"\n")[:-1]:
        m = MARKER.fullmatch(line)
        if m:
            assert said == 0, "one marker per file"
            said = int(m.group(1).replace(b",", b""))
            continue
        m = LINE.fullmatch(line)
        assert m and m.group(1) == tag, f"a torn or foreign line in {path.name}: {line[:60]!r}"
        numbers.append(int(m.group(2)))
    assert numbers == sorted(numbers)
    return numbers, said


@pytest.mark.parametrize(("cap", "seed"), [(64 * 1024, 1), (100 * 1024, 2), (160 * 1024, 3)])
def test_a_cut_keeps_whole_lines_and_leaves_a_marker(tmp_path: Path, cap: int, seed: int) -> None:
    count = 20000

    where = {"log_dir": tmp_path / "logs", "state_dir": tmp_path / "state", "log_cap": cap}

    async def main() -> tuple[int, int, int]:
        async with Supervisor(**where) as sup:
            p = await sup.spawn(py(WRITER.format(seed=seed, count=count)), session="s", agent="a")
            await sup.wait(p.id)
            while sup.get(p.id).output_open:  # every byte read from the pipes
                await asyncio.sleep(0.05)
            q = sup.get(p.id)
            return p.id, q.cut_lines, q.cut_bytes

    async def reopen(proc_id: int) -> tuple[list[tuple[int, str]], int, tuple[int, int]]:
        async with Supervisor(**where) as sup:  # what disk holds, with no ring
            batch = sup.read(proc_id)
            p = sup.get(proc_id)
            kept = [(ln.seq, ln.text) for ln in batch.lines]
            return kept, batch.dropped, (p.cut_lines, p.cut_bytes)

    proc_id, cut_lines, cut_bytes = asyncio.run(main())
    kept, dropped, recorded = asyncio.run(reopen(proc_id))
    assert recorded == (cut_lines, cut_bytes)
    logs = tmp_path / "logs"
    found: dict[Stream, list[int]] = {}
    said_total = 0
    for stream, tag in ((Stream.STDOUT, b"o"), (Stream.STDERR, b"e")):
        numbers, said = _check_file(logs / f"{proc_id}.{stream.value}.log", tag)
        found[stream] = numbers
        said_total += said
    on_disk = sorted(found[Stream.STDOUT] + found[Stream.STDERR])
    assert (cut_lines, dropped, said_total) == (count - len(on_disk),) * 3
    # read() gives exactly the lines left on disk, whole
    assert sorted(int(text[2:9]) for _, text in kept) == on_disk
    assert cut_bytes > 0 and format_size(cut_bytes)
