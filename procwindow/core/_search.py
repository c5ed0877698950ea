"""Searching output: live rings and on-disk history, in slices that keep the
event loop responsive.

On disk, the raw log files are scanned in big blocks with ``bytes.find`` or a
compiled regex (C speed); only the reads that hold a candidate are split into
lines (``_replay``), and each line is checked again as text, so a hit is
exactly a line ``read()`` returns. A regex with a literal that every match
holds finds its candidates as grep does: ``find`` the literal, then run the
regex on those lines only.
"""

from __future__ import annotations

import asyncio
import codecs
import functools
import importlib
import logging
import os
import re
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._errors import InvalidPattern
from ._output import LINE_MAX, OutputStore
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
#: The literal path gives way to the whole-text scan past this many lines
#: checked, plus one per 2**_DENSE_SHIFT bytes (a line checked costs about
#: what the regex takes over a few hundred bytes).
_DENSE_CHECKS = 64
_DENSE_SHIFT = 8
#: ASCII characters that ``re.IGNORECASE`` also matches with a character
#: outside ASCII (U+0130, U+0131, U+212A, U+017F); the tests recompute it.
_FOLDS_OUTSIDE_ASCII = frozenset("iks")
#: Regex nodes that match one character.
_CHAR_NODES = frozenset({"LITERAL", "NOT_LITERAL", "ANY", "IN"})
_REPEAT_NODES = frozenset({"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"})
_BOUNDARIES = frozenset({"AT_BOUNDARY", "AT_NON_BOUNDARY"})

try:  # the stdlib's own regex parser (private, so guarded: without it, no literal)
    _re_parser: Any = importlib.import_module("re._parser")
except ImportError:  # pragma: no cover
    _re_parser = None


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One matching line of one proc."""

    proc_id: int
    session: str
    agent: str
    line: Line


@dataclass(frozen=True, slots=True)
class _Literal:
    """ASCII text that every match of a regex holds, within one line."""

    text: bytes  # lower case where ``fold``
    fold: bool  # to be found case-insensitively
    unicode_safe: bool  # no character outside ASCII matches it (as "K" matches "k")
    boundary: bool  # the regex holds a \b or \B


def _required_literal(source: str, flags: int) -> _Literal | None:
    """The longest literal every match of ``source`` holds, when lines that
    match alone are then exactly those a scan of the whole text finds: no
    anchor, lookaround or backreference (their match depends on the text
    around a line or how it is cut into blocks). None otherwise."""
    if _re_parser is None:
        return None
    try:
        tree = _re_parser.parse(source, flags)
        runs: list[str] = []
        seen: set[str] = set()
        if not _literal_runs(tree, True, runs, seen):
            return None
        fold = bool(tree.state.flags & re.IGNORECASE)
    except Exception:  # a parser that changed shape: the plain scan stays exact
        return None
    if not runs:
        return None
    text = max(runs, key=len)
    # Digits and signs have no other case (the test of _FOLDS_OUTSIDE_ASCII
    # holds them to that): no need to fold the block for them.
    fold = fold and any(c.isalpha() for c in text)
    if fold:
        text = text.lower()
    return _Literal(
        text.encode("ascii"),
        fold,
        not (fold and _FOLDS_OUTSIDE_ASCII.intersection(text)),
        bool(seen & _BOUNDARIES),
    )


def _literal_runs(items: Any, required: bool, runs: list[str], seen: set[str]) -> bool:
    """Add to ``runs`` the runs of ASCII literals in ``items`` that every match
    holds (if ``required``); add the ``\\b``/``\\B`` met to ``seen``. False for a
    node outside the safe set."""
    run: list[str] = []
    for op, av in items:
        name = str(op)
        if name == "LITERAL" and av < 0x80 and chr(av) not in "\r\n":
            run.append(chr(av))
            continue
        if required and run:
            runs.append("".join(run))
        run = []
        if name in _CHAR_NODES:
            continue
        if name == "AT" and str(av) in _BOUNDARIES:
            seen.add(str(av))
            continue
        if name == "SUBPATTERN":
            _group, add_flags, del_flags, sub = av
            # Literals under other flags ((?i:...), (?-i:...)) are not used.
            ok = _literal_runs(sub, required and not (add_flags or del_flags), runs, seen)
        elif name in _REPEAT_NODES:
            low, _high, sub = av
            ok = _literal_runs(sub, required and low >= 1, runs, seen)
        elif name == "ATOMIC_GROUP":
            ok = _literal_runs(av, required, runs, seen)
        elif name == "BRANCH":
            ok = all(_literal_runs(alt, False, runs, seen) for alt in av[1])
        else:
            return False
        if not ok:
            return False
    if required and run:
        runs.append("".join(run))
    return True


class Matcher:
    """A search pattern, compiled for raw bytes (candidates) and for lines (hits)."""

    def __init__(self, pattern: str, *, regex: bool, case_sensitive: bool) -> None:
        if not isinstance(pattern, str) or not pattern:
            raise InvalidPattern(str(pattern), "a search needs a non-empty pattern")
        self.pattern = pattern
        flags = 0 if case_sensitive else re.IGNORECASE
        source = pattern if regex else re.escape(pattern)
        self._needle: bytes | None = None
        self._lower = False
        try:
            self._rx = re.compile(source, flags)
            self._raw_rx = re.compile(source, flags | re.M)
        except re.error as exc:
            raise InvalidPattern(pattern, str(exc)) from None
        if not regex and (case_sensitive or pattern.isascii()):
            self._lower = not case_sensitive
            self._needle = pattern.lower().encode() if self._lower else pattern.encode()
        self._text = pattern if not regex and case_sensitive else None
        self._literal = _required_literal(source, flags) if self._needle is None else None

    def line(self, text: str) -> bool:
        """True if a line matches."""
        if self._text is not None:
            return self._text in text
        return self._rx.search(text) is not None

    def line_ends(self, block: bytes | bytearray, end: int | None = None) -> Iterator[int]:
        """For each line of ``block[:end]`` that may match: the offset of its
        ``\\n`` (``end`` for an unterminated last line). Bytes past ``end`` are
        ignored (a reused buffer's tail)."""
        end = len(block) if end is None else end
        if end < len(block) // 2:
            # Mostly the start of a long line, carried read after read: cut it
            # off rather than fold or scan it again each time.
            block = block[:end]
        if self._needle is not None:
            hay = block.lower() if self._lower else block
            pos = hay.find(self._needle, 0, end)
            while pos >= 0:
                nl = block.find(b"\n", pos, end)
                if nl < 0:
                    yield end
                    return
                yield nl
                pos = hay.find(self._needle, nl + 1, end)
            return
        ends = self._literal_lines(block, end) if self._literal is not None else None
        if ends is not None:
            yield from ends
        else:
            yield from self._regex_lines(block if end == len(block) else block[:end])

    def _literal_lines(self, block: bytes | bytearray, end: int) -> list[int] | None:
        """The lines of ``block[:end]`` that hold the required literal and match
        on their own; None where only a scan of the whole text is exact."""
        lit = self._literal
        assert lit is not None
        if block.isascii():
            encoding = "ascii"
        elif not lit.unicode_safe:
            return None
        else:
            # Invalid UTF-8 reads differently here (surrogateescape) and in a
            # line's text (U+FFFD): keep such a block on the exact path.
            try:
                with memoryview(block) as view, view[:end] as part:
                    codecs.utf_8_decode(part, "strict", True)
            except UnicodeDecodeError:
                return None
            encoding = "utf-8"
        hay = block.lower() if lit.fold else block
        needle = lit.text
        search = self._rx.search
        ends: list[int] = []
        checks = 0
        pos = hay.find(needle, 0, end)
        while pos >= 0:
            checks += 1
            if checks > _DENSE_CHECKS + (pos >> _DENSE_SHIFT):
                return None  # a literal in most lines: the whole-text scan is faster
            first = block.rfind(b"\n", 0, pos) + 1
            nl = block.find(b"\n", pos, end)
            stop = end if nl < 0 else nl
            if search(block[first:stop].decode(encoding)) is not None:
                ends.append(stop)
            elif lit.boundary and stop - first > LINE_MAX:
                # Replayed in pieces, a line this long may match in a piece
                # (a \b at the cut) and not as a whole: only the whole-text
                # scan answers as before.
                return None
            if nl < 0:
                break
            pos = hay.find(needle, nl + 1, end)
        return ends

    def _regex_lines(self, block: bytes | bytearray) -> Iterator[int]:
        """The compiled regex over the whole block as text (re.M)."""
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
            for end in match.line_ends(buf, cut):
                k = out.record_at(index, base + end)
                if k is not None:
                    records.setdefault(k, []).append(base + end)
                start = buf.rfind(b"\n", 0, end) + 1
                if end - start > LINE_MAX:
                    for j in out.records_over(index, base + start, base + end):
                        records.setdefault(j, [])
                        whole.add(j)
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
