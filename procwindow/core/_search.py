"""Searching output: live rings and on-disk history, in slices that keep the
event loop responsive.

On disk, the raw log files are scanned in big blocks with ``bytes.find`` or the
pattern's RE2 scan (C speed, in pieces: :mod:`._regex`); only the reads that
hold a candidate are split into lines (``_replay``), and each line is checked
again as text, so a hit is exactly a line ``read()`` returns.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._errors import InvalidPattern
from ._output import LINE_MAX, OutputStore
from ._regex import Regex
from ._replay import DiskOutput
from ._types import Line, Stream

if TYPE_CHECKING:
    from ._archive import Archive
    from ._child import Child

__all__ = ["Matcher", "SearchHit", "scan_disk", "scan_lines", "search_procs"]

log = logging.getLogger("procwindow")

#: Bytes scanned per block.
_BLOCK = 4 * 1024 * 1024
#: Seconds of work between two returns to the event loop.
_SLICE = 0.008


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One matching line of one proc."""

    proc_id: int
    session: str
    agent: str
    line: Line


class Matcher:
    """A search pattern: a test of one line's text, and a scan of raw log bytes
    for the lines that may match. Raises InvalidPattern at once."""

    def __init__(self, pattern: str, *, regex: bool, case_sensitive: bool) -> None:
        if not isinstance(pattern, str) or not pattern:
            raise InvalidPattern(str(pattern), "a search needs a non-empty pattern")
        self.pattern = pattern
        self._compiled = Regex(pattern, case_sensitive=case_sensitive, literal=not regex)
        self._needle: bytes | None = None
        self._lower = False
        if not regex and (case_sensitive or pattern.isascii()):
            self._lower = not case_sensitive
            self._needle = pattern.lower().encode() if self._lower else pattern.encode()
        self._text = pattern if not regex and case_sensitive else None

    def line(self, text: str) -> bool:
        """True if a line matches."""
        if self._text is not None:
            return self._text in text
        return self._compiled.search(text)

    def line_ends(self, block: bytes | bytearray, start: int, end: int) -> tuple[list[int], int]:
        """Scan a piece of the lines of ``block[start:end]`` (``start`` at a
        line's start): the offsets of the ends (``\n``, or ``end`` for an
        unterminated last line) of the lines that may match, and where the
        piece stopped. Bytes past ``end`` are ignored (a reused buffer's tail)."""
        needle = self._needle
        if needle is None:
            return self._compiled.line_ends(block, start, end)
        hay = block[start:end].lower() if self._lower else block
        shift = start if self._lower else 0
        ends: list[int] = []
        pos = hay.find(needle, start - shift, end - shift)
        while pos >= 0:
            nl = block.find(b"\n", pos + shift, end)
            if nl < 0:
                ends.append(end)
                break
            ends.append(nl)
            pos = hay.find(needle, nl + 1 - shift, end - shift)
        return ends, end


async def scan_lines(lines: Callable[[int], list[Line]], match: Matcher) -> AsyncIterator[Line]:
    """Matching lines of a ring, read ``lines(since)`` in batches."""
    since = 0
    while True:
        batch = lines(since)
        if not batch:
            return
        for line in batch:
            if match.line(line.text):
                yield line
        since = batch[-1].seq
        await asyncio.sleep(0)


async def scan_disk(out: DiskOutput, match: Matcher) -> AsyncIterator[Line]:
    """Matching lines of a proc's output on disk, in seq order."""
    records: dict[int, list[int]] = {}
    # Records replayed whole: the pieces of a matching line longer than
    # LINE_MAX were completed by several reads, and any of them may hold a hit.
    whole: set[int] = set()
    deadline = time.monotonic() + _SLICE
    # One buffer for the whole scan, read into: a new 4 MiB object per block
    # (and copies to join the carried tail) cost more than the search itself.
    buf = bytearray()
    for index, stream in enumerate((Stream.STDOUT, Stream.STDERR)):
        f = out.file(stream)
        size = out.stream_end(index)
        offset = 0
        keep = 0  # buf[:keep] is the unterminated line carried from the last block
        while offset < size:
            fd = f.fd  # read again each time: a reader closed meanwhile ends the scan
            if fd is None:
                break
            # The block is the carried line plus _BLOCK bytes, as it always was:
            # where blocks start shows in what ``\A`` and ``\Z`` match.
            want = min(_BLOCK, size - offset)
            _resize(buf, keep + want)
            n = _read_into(fd, buf, keep, offset)
            if n <= 0:
                break
            if n < want:
                del buf[keep + n :]
            base = offset - keep
            offset += n
            cut = buf.rfind(b"\n") + 1 if offset < size else len(buf)
            pos = 0
            while pos < cut:
                ends, pos = match.line_ends(buf, pos, cut)
                for end in ends:
                    k = out.record_at(index, base + end)
                    if k is not None:
                        records.setdefault(k, []).append(base + end)
                    start = buf.rfind(b"\n", 0, end) + 1
                    if end - start > LINE_MAX:
                        for j in out.records_over(index, base + start, base + end):
                            records.setdefault(j, [])
                            whole.add(j)
                if time.monotonic() > deadline:
                    await asyncio.sleep(0)
                    deadline = time.monotonic() + _SLICE
            keep = len(buf) - cut
            if cut:
                buf[:keep] = buf[cut:]
            if time.monotonic() > deadline:
                await asyncio.sleep(0)
                deadline = time.monotonic() + _SLICE
    for k in sorted(records):
        stream = (Stream.STDOUT, Stream.STDERR)[out.stream[k]]
        # Only the candidate lines, cut from the log; a replay of the whole
        # read where that would not be exact.
        lines = None if k in whole else out.lines_at(k, sorted(records[k]))
        if lines is None:
            lines = [ln for ln in out.record_lines(k) if ln.stream is stream]
        for line in lines:
            if match.line(line.text):
                yield line
        if time.monotonic() > deadline:
            await asyncio.sleep(0)
            deadline = time.monotonic() + _SLICE


def _resize(buf: bytearray, size: int) -> None:
    if len(buf) > size:
        del buf[size:]
    elif len(buf) < size:
        buf.extend(bytes(size - len(buf)))


def _read_into(fd: int, buf: bytearray, start: int, offset: int) -> int:
    """Read file ``offset..`` into ``buf[start:]``; the bytes read."""
    with memoryview(buf) as view, view[start:] as part:
        return os.preadv(fd, [part], offset)


def _ring_batch(store: OutputStore, since: int) -> list[Line]:
    return store.read(since, 5000)[0]


async def search_procs(
    children: Mapping[int, Child],
    archive: Archive,
    match: Matcher,
    *,
    session: str | None,
    agent: str | None,
    proc: int | None,
    since: float | None,
    limit: int | None,
) -> AsyncIterator[SearchHit]:
    """Hits across the live procs and the history, newest procs first."""
    rows = {r.id: r for r in archive.rows(session=session, agent=agent, since=since, proc=proc)}
    live = {
        c.id: c
        for c in children.values()
        if (session is None or c.proc.session == session)
        and (agent is None or c.proc.agent == agent)
        and (proc is None or c.id == proc)
        and (since is None or c.proc.started_at >= since)
    }
    found = 0
    for proc_id in sorted(rows.keys() | live.keys(), reverse=True):
        child = live.get(proc_id)
        if child is not None:
            scope = (child.proc.session, child.proc.agent)
            lines: AsyncIterator[Line]
            if child.disk.error is None:
                out = archive.reader(archive.logs.path, proc_id, finished=False)
                lines = scan_disk(out, match)
            else:
                store = child.store
                lines = scan_lines(functools.partial(_ring_batch, store), match)
        else:
            row = rows[proc_id]
            scope = (row.session, row.agent)
            finished = row.ended_at is not None or not row.live_run
            out = archive.reader(row.log_dir or archive.logs.path, proc_id, finished)
            lines = scan_disk(out, match)
        try:
            async for line in lines:
                yield SearchHit(proc_id, scope[0], scope[1], line)
                found += 1
                if limit is not None and found >= limit:
                    return
        except OSError as exc:  # forgotten or pruned meanwhile
            log.debug("search: proc %d: %s", proc_id, exc)
        await asyncio.sleep(0)
