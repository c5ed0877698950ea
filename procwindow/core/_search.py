"""Searching output: live rings and on-disk history, in slices that keep the
event loop responsive.

On disk, the raw log files are scanned in big blocks with ``bytes.find`` or a
compiled regex (C speed); only the reads that hold a candidate are split into
lines (``_replay``), and each line is checked again as text, so a hit is
exactly a line ``read()`` returns.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._errors import InvalidPattern
from ._output import OutputStore
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
    """A search pattern, compiled for raw bytes (candidates) and for lines (hits)."""

    def __init__(self, pattern: str, *, regex: bool, case_sensitive: bool) -> None:
        if not isinstance(pattern, str) or not pattern:
            raise InvalidPattern(str(pattern), "a search needs a non-empty pattern")
        self.pattern = pattern
        flags = 0 if case_sensitive else re.IGNORECASE
        self._needle: bytes | None = None
        self._lower = False
        try:
            self._rx = re.compile(pattern if regex else re.escape(pattern), flags)
            self._raw_rx = re.compile(pattern if regex else re.escape(pattern), flags | re.M)
        except re.error as exc:
            raise InvalidPattern(pattern, str(exc)) from None
        if not regex and (case_sensitive or pattern.isascii()):
            self._lower = not case_sensitive
            self._needle = pattern.lower().encode() if self._lower else pattern.encode()
        self._text = pattern if not regex and case_sensitive else None

    def line(self, text: str) -> bool:
        """True if a line matches."""
        if self._text is not None:
            return self._text in text
        return self._rx.search(text) is not None

    def line_ends(self, block: bytes) -> Iterator[int]:
        """For each line of ``block`` that may match: the offset of its ``\\n``
        (``len(block)`` for an unterminated last line)."""
        if self._needle is not None:
            hay = block.lower() if self._lower else block
            pos = hay.find(self._needle)
            while pos >= 0:
                end = block.find(b"\n", pos)
                if end < 0:
                    yield len(block)
                    return
                yield end
                pos = hay.find(self._needle, end + 1)
            return
        text = block.decode("utf-8", "surrogateescape")
        ascii_ = block.isascii()
        chars = 0  # text[:chars] is block[:nbytes]
        nbytes = 0
        m = self._raw_rx.search(text)
        while m is not None:
            end = text.find("\n", m.start())
            if end < 0:
                yield len(block)
                return
            if ascii_:
                nbytes = end
            else:
                nbytes += len(text[chars:end].encode("utf-8", "surrogateescape"))
            chars = end
            yield nbytes
            m = self._raw_rx.search(text, end + 1)


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
    deadline = time.monotonic() + _SLICE
    for index, stream in enumerate((Stream.STDOUT, Stream.STDERR)):
        f = out.file(stream)
        size = out.stream_end(index)
        offset = 0
        carry = b""
        while offset < size:
            chunk = f.get(offset, min(size, offset + _BLOCK))
            if not chunk:
                break
            block = carry + chunk
            base = offset - len(carry)
            offset += len(chunk)
            cut = block.rfind(b"\n") + 1 if offset < size else len(block)
            carry = block[cut:]
            for end in match.line_ends(block[:cut] if cut < len(block) else block):
                k = out.record_at(index, base + end)
                if k is not None:
                    records.setdefault(k, []).append(base + end)
            if time.monotonic() > deadline:
                await asyncio.sleep(0)
                deadline = time.monotonic() + _SLICE
    for k in sorted(records):
        stream = (Stream.STDOUT, Stream.STDERR)[out.stream[k]]
        # Only the candidate lines, cut from the log; a replay of the whole
        # read where that would not be exact.
        lines = out.lines_at(k, sorted(records[k]))
        if lines is None:
            lines = [ln for ln in out.record_lines(k) if ln.stream is stream]
        for line in lines:
            if match.line(line.text):
                yield line
        if time.monotonic() > deadline:
            await asyncio.sleep(0)
            deadline = time.monotonic() + _SLICE


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
