"""Reading a proc's output back from disk: the same lines, seqs and times it
had while it ran, in the same merged order (see ``_disklog`` for the format).

A read starts at any seq without replaying what came before: the journal
gives the seq at every read and each stream's unfinished bytes at that
point, which are the whole state of the line splitter. Where the cap cut
the middle, a stream's first line after the cut is incomplete; it is
skipped and counted as dropped with the lines that were cut.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterator

from ._disklog import CUT, DATA, EOF, RECORD, STREAMS
from ._output import LINE_MAX, OutputStore, _decode_lines
from ._types import Line, Stream

__all__ = ["DiskOutput"]

#: Bytes read from a log file at a time.
_WINDOW = 1024 * 1024
#: The seq of a read past the journal's end (its lines are counted on the fly).
_UNKNOWN = 1 << 62


class _Window:
    """Reads ranges of one log file through a window of ``_WINDOW`` bytes."""

    def __init__(self, path: str) -> None:
        try:
            self.fd: int | None = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            self.fd = None
        self._base = 0
        self._buf = b""

    def size(self) -> int:
        return os.fstat(self.fd).st_size if self.fd is not None else 0

    def get(self, start: int, end: int) -> bytes:
        if self.fd is None or end <= start:
            return b""
        base = self._base
        if start < base or end > base + len(self._buf):
            self._buf = os.pread(self.fd, max(end - start, _WINDOW), start)
            self._base = base = start
        return self._buf[start - base : end - base]

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class DiskOutput:
    """One proc's output as the log files and journal hold it now.

    ``finished``: the proc will write nothing more, so bytes past the journal
    (the supervisor died between a write and its record) are read too, and an
    unfinished last line is returned as a line. Use it as a context manager
    (it holds the files open).
    """

    def __init__(
        self, logs: dict[Stream, str], journal: str, *, finished: bool, line_max: int = LINE_MAX
    ) -> None:
        self._line_max = line_max
        self._files = {s: _Window(logs[s]) for s in STREAMS}
        try:
            with open(journal, "rb", opener=_no_follow) as f:
                data = f.read()
        except OSError:
            data = b""
        data = data[: len(data) - len(data) % RECORD.size]
        words = memoryview(data).cast("Q")
        self.time: list[float] = memoryview(data).cast("d")[0::5].tolist()  # type: ignore[assignment]
        self.seq: list[int] = words[1::5].tolist()
        self.end: list[int] = words[2::5].tolist()
        self.extra: list[int] = words[3::5].tolist()
        tags: list[int] = words[4::5].tolist()
        self.stream = [t & 0xFF for t in tags]
        self.kind = [(t >> 8) & 0xFF for t in tags]
        self.mid = [t >> 16 for t in tags]
        if finished:
            self._add_unjournaled()
        # Per stream: the indexes of its records, and of its CUT records.
        self._by_stream = {i: [k for k, s in enumerate(self.stream) if s == i] for i in (0, 1)}
        self._cuts = {i: [k for k in self._by_stream[i] if self.kind[k] == CUT] for i in (0, 1)}
        self.journal_size = len(data)
        self._data: dict[int, tuple[list[int], list[int]]] | None = None

    def __enter__(self) -> DiskOutput:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for f in self._files.values():
            f.close()

    def _add_unjournaled(self) -> None:
        """Bytes a dead supervisor wrote but did not journal, and the last lines
        of streams that never saw their end."""
        last_time = self.time[-1] if self.time else 0.0
        ended = {s for s, k in zip(self.stream, self.kind, strict=True) if k == EOF}
        for index in (0, 1):
            ends = [
                e for e, s, k in zip(self.end, self.stream, self.kind, strict=True) if s == index
            ]
            written = self._files[STREAMS[index]].size() if self._files[STREAMS[index]].fd else 0
            last_end = ends[-1] if ends else 0
            if index not in ended and written > last_end:
                self._append(last_time, _UNKNOWN, written, 0, index, DATA)
            if index not in ended and (written or ends):
                self._append(last_time, _UNKNOWN, max(written, last_end), 0, index, EOF)

    def _append(self, t: float, seq: int, end: int, extra: int, stream: int, kind: int) -> None:
        self.time.append(t)
        self.seq.append(seq)
        self.end.append(end)
        self.extra.append(extra)
        self.stream.append(stream)
        self.kind.append(kind)
        self.mid.append(0)

    # -- what it holds -------------------------------------------------------------

    @property
    def last_seq(self) -> int:
        """The seq of the last line the journal knows of (0: none)."""
        known = [s for s in self.seq if s != _UNKNOWN]
        return known[-1] if known else 0

    def cut(self) -> tuple[int, int]:
        """(lines, bytes) cut from the middle by the cap."""
        lines = 0
        nbytes = 0
        for index in (0, 1):
            cuts = self._cuts[index]
            if cuts:
                nbytes += self.extra[cuts[-1]]
        cuts = sorted(self._cuts[0] + self._cuts[1])
        if cuts:
            head = cuts[0]
            lines = self.seq[cuts[-1]] - (self.seq[head - 1] if head else 0)
            lines += sum(self.mid[k] for k in cuts)
        return lines, nbytes

    # -- reading ---------------------------------------------------------------------

    def read(
        self,
        since: int,
        limit: int | None = None,
        stream: Stream | None = None,
        upto: int | None = None,
    ) -> tuple[list[Line], int, int]:
        """Lines with ``since < seq < upto``: (lines, dropped, cursor), as
        ``OutputStore.read`` gives them."""
        out: list[Line] = []
        dropped = 0
        cursor = since
        for lines, missing in self._chunks(since, upto):
            dropped += missing
            for line in lines:
                if stream is not None and line.stream is not stream:
                    cursor = line.seq
                    continue
                if limit is not None and len(out) >= limit:
                    return out, dropped, cursor
                out.append(line)
                cursor = line.seq
        return out, dropped, cursor

    def _chunks(self, since: int, upto: int | None) -> Iterator[tuple[list[Line], int]]:
        """Per journal record from the one holding ``since + 1``: the lines it
        completed that lie in (since, upto), and how many of those are gone."""
        seq = self.seq
        n = len(seq)
        first = bisect.bisect_right(seq, since)
        if first >= n:
            return
        base = seq[first - 1] if first else 0
        store = OutputStore(1 << 62, 1 << 62, line_max=self._line_max)
        ends: dict[int, int] = {}
        skip: dict[int, bool] = {}
        pending: dict[Stream, bytes] = {}
        for index in (0, 1):
            ends[index], skip[index], data = self._state_before(index, first)
            pending[STREAMS[index]] = data
        store.resume(base, pending)
        hi = upto if upto is not None else _UNKNOWN
        for k in range(first, n):
            index = self.stream[k]
            kind = self.kind[k]
            s = STREAMS[index]
            before = store.last_seq
            if kind == CUT:
                skip[index] = bool(self.mid[k])
                ends[index] = self.end[k]
                store.skip_line(s)
            elif kind == DATA:
                data = self._files[s].get(ends[index], self.end[k])
                ends[index] = self.end[k]
                if skip[index]:
                    nl = data.find(b"\n")
                    data = data[nl + 1 :] if nl >= 0 else b""
                    skip[index] = nl < 0
                store.feed(s, data, len(data), self.time[k])
            else:
                if not skip[index]:
                    store.flush(s, self.time[k])
                skip[index] = False
            lines = store.read(before)[0] if store.last_seq > before else []
            store.shrink(0)
            missing = 0
            want = seq[k]
            if want != _UNKNOWN and want != store.last_seq:
                # Lines the journal counted but the bytes no longer hold (cut):
                # the first of this record's seqs.
                shift = want - store.last_seq
                lines = [line._replace(seq=line.seq + shift) for line in lines]
                gone_to = min(before + max(shift, 0), hi - 1)
                missing = max(0, gone_to - max(before, since))
                store.resume(want, {})
            if lines and lines[-1].seq >= hi:
                yield [ln for ln in lines if since < ln.seq < hi], missing
                return
            if lines and lines[0].seq <= since:
                lines = [ln for ln in lines if ln.seq > since]
            yield lines, missing
            if store.last_seq >= hi - 1:
                return

    def _state_before(self, index: int, k: int) -> tuple[int, bool, bytes]:
        """Where stream ``index`` stands before record ``k``: its file offset,
        whether its unfinished line was cut, and the unfinished bytes."""
        mine = self._by_stream[index]
        j = bisect.bisect_left(mine, k) - 1
        if j < 0:
            return 0, False, b""
        r = mine[j]
        end = self.end[r]
        if self.kind[r] == CUT:
            return end, bool(self.mid[r]), b""
        if self.kind[r] == EOF:
            return end, False, b""
        pend = self.extra[r]
        cuts = self._cuts[index]
        c = bisect.bisect_left(cuts, r) - 1
        floor = self.end[cuts[c]] if c >= 0 else 0
        if end - pend < floor:
            return end, True, b""
        return end, False, self._files[STREAMS[index]].get(end - pend, end)

    # -- searching --------------------------------------------------------------------

    def stream_end(self, index: int) -> int:
        """How far the journal covers a stream's log file."""
        mine = self._by_stream[index]
        return self.end[mine[-1]] if mine else 0

    def record_at(self, index: int, offset: int) -> int | None:
        """The record that completed the line of stream ``index`` whose ``\n``
        is at file ``offset`` (the end of the stream: its last, unterminated line)."""
        if self._data is None:
            self._data = {}
            for i in (0, 1):
                mine = [k for k in self._by_stream[i] if self.kind[k] == DATA]
                self._data[i] = (mine, [self.end[k] for k in mine])
        mine, ends = self._data[index]
        j = bisect.bisect_right(ends, offset)
        if j < len(mine):
            return mine[j]
        eofs = [k for k in self._by_stream[index] if self.kind[k] == EOF]
        return eofs[-1] if eofs else None

    def lines_at(self, k: int, ends: list[int]) -> list[Line] | None:
        """The lines of record ``k`` whose ``\n`` is at the file offsets
        ``ends`` (sorted), cut straight from the log; None when only a replay
        of the record gives them exactly (an over-long line, a cut)."""
        if self.kind[k] != DATA or self.seq[k] == _UNKNOWN or k == 0:
            return None
        index = self.stream[k]
        mine = self._by_stream[index]
        j = bisect.bisect_left(mine, k)
        prev = mine[j - 1] if j else None
        if prev is not None and self.kind[prev] == CUT:
            return None
        start = self.end[prev] if prev is not None else 0
        f = self._files[STREAMS[index]]
        data = f.get(start, self.end[k])
        if data.count(b"\n") != self.seq[k] - self.seq[k - 1]:
            return None  # pieces of an over-long line took seqs too
        out: list[Line] = []
        seq = self.seq[k - 1]
        pos = 0
        for end in ends:
            rel = end - start
            seq += data.count(b"\n", pos, rel + 1)
            pos = rel + 1
            first = data.rfind(b"\n", 0, rel) + 1
            if first == 0:  # the line began in an earlier read
                pend = self.extra[prev] if prev is not None else 0
                head = f.get(start - pend, start) if pend else b""
                raw = head + data[:rel]
            else:
                raw = data[first:rel]
            if len(raw) > self._line_max:
                return None
            text = _decode_lines(raw)[0]
            out.append(Line(seq, STREAMS[index], self.time[k], text, False))
        return out

    def record_lines(self, k: int) -> list[Line]:
        """The lines record ``k`` completed."""
        before = self.seq[k - 1] if k else 0
        return self.read(before, upto=self.seq[k] + 1 if self.seq[k] != _UNKNOWN else None)[0]

    def file(self, stream: Stream) -> _Window:
        return self._files[stream]


def _no_follow(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC)
