"""Reading a proc's output back from disk: the same lines, seqs and times it
had while it ran, in the same merged order (see ``_disklog`` for the format).

A read starts at any seq without replaying what came before: the journal
gives the seq at every read and each stream's unfinished bytes at that
point, which are the whole state of the line splitter. Where the cap cut
the middle, a stream's first line after the cut is incomplete; it is
skipped and counted as dropped with the lines that were cut.

``read_bytes`` gives the same lines as bytes without making an object per
line: the lines a run of consecutive records of one stream completed are one
contiguous range of that stream's log, from where the unfinished line stood
before the run's first record to where it stood after its last. The journal
gives both ends and the seqs, so a run is copied as one slice, given as it is
where the journal marks its reads PLAIN and checked (``\r``, UTF-8, over-long
lines) where it does not. The rare records whose bytes do not split that
simply (a piece of an over-long line, the line a cut started inside of, a
stream's unterminated last line) are replayed as lines.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import accumulate

from ._disklog import CUT, DATA, EOF, MID, PLAIN, RECORD, STREAMS
from ._output import LINE_MAX, OutputStore, _decode_lines, _split_text
from ._types import Line, Stream

__all__ = ["ByteBatch", "ByteSink", "DiskOutput"]

#: Bytes read from a log file at a time.
_WINDOW = 1024 * 1024
#: The seq of a read past the journal's end (its lines are counted on the fly).
_UNKNOWN = 1 << 62
#: Bytes looked at, at first, for the end of a line that does not fit a call's bound.
_LINE_PROBE = 64 * 1024
#: Offsets remembered where a ``read_bytes`` call ended inside a record.
_RESUME_POINTS = 16


@dataclass(frozen=True, slots=True)
class ByteBatch:
    """The answer to ``Supervisor.read_bytes``: lines as one ``bytes``.

    ``data`` holds ``count`` lines, each followed by ``\n``: exactly the text
    of the lines ``read()`` returns from the same ``since`` (and ``stream``),
    UTF-8 encoded, so ``data == read(...).text.encode()``. Where the output is
    valid UTF-8 without ``\r`` and no line is longer than ``LINE_MAX``, those
    are the log's own bytes; otherwise a ``\r`` redraw is applied, invalid
    bytes are U+FFFD and an over-long line comes in pieces, one per seq, as
    ``read()`` gives them. A last line without a newline gets one.
    ``dropped``, ``cursor`` and ``eof`` are those of ``ReadBatch``.
    """

    data: bytes
    count: int
    dropped: int
    cursor: int
    eof: bool

    def __bytes__(self) -> bytes:
        return self.data


class ByteSink:
    """What one ``read_bytes`` call has gathered, within its bounds: at most
    ``limit`` lines and ``max_bytes`` bytes, but always at least one line."""

    __slots__ = ("_limit", "_max", "count", "cursor", "dropped", "full", "parts", "size")

    def __init__(self, since: int, limit: int | None, max_bytes: int | None) -> None:
        self.parts: list[bytes] = []
        self.size = 0
        self.count = 0
        self.dropped = 0
        self.cursor = since
        self._limit = limit
        self._max = max_bytes
        #: A bound was met: no more lines are taken.
        self.full = limit is not None and limit <= 0

    def lines_left(self) -> int | None:
        return None if self._limit is None else self._limit - self.count

    def room(self) -> int | None:
        """Bytes that may still be added (None: no bound)."""
        return None if self._max is None else self._max - self.size

    def add(self, data: bytes, count: int, last_seq: int) -> None:
        """Whole lines the caller fitted within the bounds."""
        self.parts.append(data)
        self.size += len(data)
        self.count += count
        self.cursor = last_seq
        if self.count == self._limit or self.size == self._max:
            self.full = True

    def add_lines(self, lines: Iterable[tuple[int, bytes]]) -> bool:
        """Take lines (seq, bytes with its newline) in order while they fit;
        False when one did not."""
        for seq, data in lines:
            if self.full or (
                self._max is not None and self.count and self.size + len(data) > self._max
            ):
                self.full = True
                return False
            self.add(data, 1, seq)
        return True

    def batch(self, eof: bool) -> ByteBatch:
        # One part is returned as it is: join does not copy a lone bytes.
        return ByteBatch(b"".join(self.parts), self.count, self.dropped, self.cursor, eof)


def encode_lines(lines: Iterable[Line]) -> Iterator[tuple[int, bytes]]:
    """Lines as ``ByteSink.add_lines`` takes them."""
    for line in lines:
        yield line.seq, line.text.encode() + b"\n"


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

    def read(self, start: int, end: int) -> bytes:
        """Bytes ``start..end`` read at once, past the window (short at EOF)."""
        if self.fd is None or end <= start:
            return b""
        return os.pread(self.fd, end - start, start)

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
        self.mid = [(t >> 16) & MID for t in tags]
        self.plain = [(t >> 16) & PLAIN for t in tags]
        if finished:
            self._add_unjournaled()
        # Per stream: the indexes of its records, and of its CUT records.
        self._by_stream = {i: [k for k, s in enumerate(self.stream) if s == i] for i in (0, 1)}
        self._cuts = {i: [k for k in self._by_stream[i] if self.kind[k] == CUT] for i in (0, 1)}
        self.journal_size = len(data)
        self._data: dict[int, tuple[list[int], list[int]]] | None = None
        # Per record: where the complete lines end in its stream's file.
        self._done = [e - x for e, x in zip(self.end, self.extra, strict=True)]
        # seq -> (stream index, file offset just past that line): where a
        # read_bytes call ended inside a record, so the next one starts there.
        self._resume: dict[int, tuple[int, int]] = {}
        self._run_ends: list[int] | None = None
        self._rough: dict[int, list[int]] | None = None

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
        self.plain.append(0)

    # -- what it holds -------------------------------------------------------------

    @property
    def last_seq(self) -> int:
        """The seq of the last line the journal knows of (0: none)."""
        # Only the records added for a dead supervisor's last bytes are unknown.
        for s in reversed(self.seq):
            if s != _UNKNOWN:
                return s
        return 0

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
        ``OutputStore.read`` gives them. The cursor moves past the lines
        counted in ``dropped``, so that a read from it does not count them again."""
        out: list[Line] = []
        dropped = 0
        cursor = since
        for lines, missing, gone_to in self._chunks(since, upto):
            if missing:
                dropped += missing
                cursor = max(cursor, gone_to)
            for line in lines:
                if stream is not None and line.stream is not stream:
                    cursor = line.seq
                    continue
                if limit is not None and len(out) >= limit:
                    return out, dropped, cursor
                out.append(line)
                cursor = line.seq
        return out, dropped, cursor

    # -- reading bytes -----------------------------------------------------------------

    def read_bytes(
        self, sink: ByteSink, stream: Stream | None = None, upto: int | None = None
    ) -> bool:
        """Add to ``sink`` the lines with ``sink.cursor < seq < upto``, as
        ``read`` gives them, as bytes (see ``ByteBatch``). True when it reached
        the end (of what the journal holds, or ``upto``), False when it stopped
        at one of the sink's bounds."""
        seq, streams = self.seq, self.stream
        run_ends = self._data_run_ends()
        n = len(seq)
        hi = upto if upto is not None else _UNKNOWN
        want = None if stream is None else STREAMS.index(stream)
        # Everything up to ``floor`` is accounted for (given, passed over or
        # dropped); ``k`` is the first record with lines after it.
        floor = sink.cursor
        k = bisect.bisect_right(seq, floor)
        replay = False  # record k is known to need replaying as lines
        cautious = False  # the last record was replayed: try one record first
        while k < n and floor < hi - 1:
            index = streams[k]
            start = None if replay else self._run_start(k)
            if start is not None:
                m = k if cautious else run_ends[k]
                if seq[m] <= floor:
                    k = m + 1  # no lines
                    continue
                if want is not None and index != want:
                    # The other stream's lines: the cursor moves past them.
                    floor = max(floor, min(seq[m], hi - 1))
                    sink.cursor = max(sink.cursor, floor)
                    k = m + 1
                    continue
                if sink.full:
                    return False
                step = self._copy_run(k, m, start, floor, hi, sink)
                if step is not None:
                    k, floor, replay = step
                    cautious = False
                    if sink.full and floor < min(seq[m], hi - 1):
                        return False  # a bound stopped it inside the run
                    continue
            # Replayed as lines: this record, or all that is left once the
            # journal no longer knows the seqs.
            replay = False
            known = seq[k] != _UNKNOWN
            if known and seq[k] <= floor:
                k += 1  # no lines (a stream's end after a newline)
                continue
            cautious = True
            top = min(seq[k] + 1, hi) if known else upto
            if sink.full:
                # As ``read`` with a limit: past what is gone and the other
                # stream's lines, up to the next line it would have returned.
                _, dropped, cursor = self.read(floor, 0, stream, upto=top)
                sink.dropped += dropped
                sink.cursor = max(sink.cursor, cursor)
                if not known or cursor < min(seq[k], hi - 1):
                    return False
            else:
                lines, dropped, cursor = self.read(floor, sink.lines_left(), stream, upto=top)
                before = sink.count
                if not sink.add_lines(encode_lines(lines)):
                    # What ``read`` with a limit of the lines taken counts and passes.
                    _, dropped, cursor = self.read(floor, sink.count - before, stream, upto=top)
                    sink.dropped += dropped
                    sink.cursor = max(sink.cursor, cursor)
                    return False
                sink.dropped += dropped
                sink.cursor = max(sink.cursor, cursor)
                if sink.full and (not known or cursor < min(seq[k], hi - 1)):
                    return False  # the limit stopped it inside the record
            if not known:
                return not sink.full
            floor = max(floor, min(seq[k], hi - 1))
            k += 1
        return True

    def _data_run_ends(self) -> list[int]:
        """Per record ``k``: the last record ``m >= k`` such that records
        ``k+1..m`` are DATA records of ``k``'s stream with known seqs (those a
        copy takes with ``k`` as one run). Made once: the records of a
        DiskOutput do not change."""
        ends = self._run_ends
        if ends is None:
            seq, kind, streams = self.seq, self.kind, self.stream
            ends = list(range(len(seq)))
            for k in range(len(seq) - 2, -1, -1):
                if streams[k + 1] == streams[k] and kind[k + 1] == DATA and seq[k + 1] != _UNKNOWN:
                    ends[k] = ends[k + 1]
            self._run_ends = ends
        return ends

    def _run_start(self, k: int) -> int | None:
        """Where the lines record ``k`` completes start in its stream's file,
        or None when the record must be replayed as lines (not DATA, seq
        unknown, or its stream's unfinished line before it was cut)."""
        if self.kind[k] != DATA or self.seq[k] == _UNKNOWN:
            return None
        index = self.stream[k]
        mine = self._by_stream[index]
        j = bisect.bisect_left(mine, k) - 1
        if j < 0:
            return 0
        r = mine[j]
        if self.kind[r] != DATA:
            return None
        return None if self._in_cut_line(index, r) else self._done[r]

    def _copy_run(
        self, k: int, m: int, start: int, floor: int, hi: int, sink: ByteSink
    ) -> tuple[int, int, bool] | None:
        """Copy the lines after ``floor`` of records ``k..m`` (consecutive
        DATA records of one stream, the first one's lines starting at file
        offset ``start``) into ``sink``, within its bounds and below ``hi``.

        Returns (the next record, the seq reached, whether that record must be
        replayed as lines), or None when record ``k`` must be."""
        seq, done = self.seq, self._done
        index = self.stream[k]
        f = self._files[STREAMS[index]]
        base = seq[k - 1] if k else 0
        if seq[m] <= floor:
            return m + 1, floor, False
        off = start
        if floor > base:  # ``since`` fell inside record k
            found = self._skip(k, start, base, floor)
            if found is None:
                return None
            off, base = found, floor
        last = min(seq[m], hi - 1)
        left = sink.lines_left()
        if left is not None:
            last = min(last, base + left)
        room = sink.room()
        cap = None if room is None else off + room
        # Whole records first: where their lines end, and their seqs, are in
        # the journal.
        j = bisect.bisect_right(seq, last, k, m + 1) - 1
        if cap is not None:
            j = min(j, bisect.bisect_right(done, cap, k, m + 1) - 1)
        whole, got = (done[j], seq[j]) if j >= k else (off, base)
        end = whole
        r = j + 1
        if (
            r <= m
            and got < last
            and (cap is None or (cap > whole and (last < seq[r] or whole - off < (cap - off) // 4)))
        ):
            # Lines of the next record, up to ``last`` or ``cap`` (by bytes
            # only when whole records fill less than a quarter of the room: that
            # costs counting the newlines of part of a record).
            end, more = self._inside(f, whole, done[r], seq[r] - got, last - got, cap)
            got += more
        if got == base:
            if sink.count:
                sink.full = True
                return k, floor, False
            # Not even one line fits: one is always given.
            found = self._line_end(f, off, done[m])
            if found is None:
                return None
            end, got = found, base + 1
        data = f.read(off, end)
        if len(data) != end - off:
            return None
        replay = False
        plain = self._plain(off, m)
        if not self._splits_plainly(data, off, j, base, whole, plain):
            # A piece of an over-long line: keep the records before it.
            good, good_seq = self._plain_prefix(data, off, k, j, base)
            if good == off:
                return None
            data, end, got, replay = data[: good - off], good, good_seq, True
        text = data if plain else _cook(data)
        if room is None or len(text) <= room:
            sink.add(text, got - base, got)
            if text is data:
                self._remember(got, index, end)
        else:
            # Decoding made it longer than the room: as many lines as fit.
            pieces = text.split(b"\n")[:-1]
            sink.add_lines((base + 1 + i, p + b"\n") for i, p in enumerate(pieces))
            replay = False
            got = max(sink.cursor, base)
        if room is not None and not replay and got < last:
            sink.full = True  # the bytes bound stopped it
        return bisect.bisect_right(seq, got, k, m + 1), got, replay

    def _plain(self, off: int, m: int) -> bool:
        """True when the bytes of record ``m``'s stream from file offset
        ``off`` to where ``m`` ends are ASCII without ``\r`` and its lines
        hold no piece of an over-long line: every record whose read they
        came from is PLAIN (the unfinished line they start with may span
        many reads)."""
        records = self._data_records()
        index = self.stream[m]
        mine, ends = records[index]
        rough = self._rough
        if rough is None:
            # Per stream: how many of its DATA records before each one are not PLAIN.
            plain = self.plain
            rough = self._rough = {
                i: list(accumulate((not plain[r] for r in records[i][0]), initial=0))
                for i in (0, 1)
            }
        first = bisect.bisect_right(ends, off)
        last = bisect.bisect_left(mine, m)
        return rough[index][last + 1] == rough[index][first]

    def _skip(self, k: int, start: int, base: int, floor: int) -> int | None:
        """The file offset of line ``floor + 1``, inside record ``k`` whose
        lines (``base + 1`` on) start at ``start``; None when the record does
        not split plainly."""
        index = self.stream[k]
        hit = self._resume.get(floor)
        stop = self._done[k]
        if hit is not None and hit[0] == index and start <= hit[1] <= stop:
            return hit[1]
        data = self._files[STREAMS[index]].read(start, stop)
        total = self.seq[k] - base
        if len(data) != stop - start or not data.endswith(b"\n"):
            return None
        if _long_stretch(data, 0, len(data), self._line_max) and data.count(b"\n") != total:
            return None
        skip = floor - base
        if skip <= total - skip:
            pos = -1
            for _ in range(skip):
                pos = data.find(b"\n", pos + 1)
        else:
            pos = len(data)
            for _ in range(total - skip + 1):
                pos = data.rfind(b"\n", 0, pos)
        return start + pos + 1

    def _inside(
        self, f: _Window, start: int, stop: int, total: int, want: int, cap: int | None
    ) -> tuple[int, int]:
        """Inside one record whose ``total`` lines (from file offset ``start``)
        end at ``stop``: where its first ``want`` lines, or as many as end
        before ``cap``, end, and how many those are."""
        hold = stop if cap is None else min(stop, cap)
        data = f.read(start, hold)
        if want < total:
            pos = -1
            got = 0
            while got < want:
                nl = data.find(b"\n", pos + 1)
                if nl < 0:
                    break
                pos = nl
                got += 1
            return start + pos + 1, got
        cut = data.rfind(b"\n") + 1
        if cut > (stop - start) // 2:
            # Fewer newlines after the cut than before it: count those, if
            # they are one per seq there.
            rest = f.read(start + cut, stop)
            if rest.endswith(b"\n") and not _long_stretch(rest, 0, len(rest), self._line_max):
                return start + cut, total - rest.count(b"\n")
        return start + cut, data.count(b"\n", 0, cut)

    def _line_end(self, f: _Window, start: int, stop: int) -> int | None:
        """Where the line starting at ``start`` ends (past its newline)."""
        size = _LINE_PROBE
        while True:
            hold = min(stop, start + size)
            nl = f.read(start, hold).find(b"\n")
            if nl >= 0:
                return start + nl + 1
            if hold >= stop:
                return None
            size *= 4

    def _splits_plainly(
        self, data: bytes, off: int, j: int, base: int, whole: int, plain: bool
    ) -> bool:
        """True when ``data`` (from file offset ``off``) holds whole lines
        and no piece of an over-long line: its seqs are one per newline.

        ``plain``: its records cut no piece (``PLAIN``). Otherwise: a piece is
        cut only from more than ``line_max`` bytes without a newline
        (``_output``), so where no such stretch exists no piece was. Where one
        does (a long but legal line, or a piece), the newlines of the whole
        records are counted against the journal's seqs; a part of a record
        past them must hold no such stretch at all."""
        if data and not data.endswith(b"\n"):
            return False
        cut = whole - off
        limit = self._line_max
        if cut and data[cut - 1] != 10:
            return False
        if plain:
            return True
        if _long_stretch(data, 0, cut, limit) and data.count(b"\n", 0, cut) != self.seq[j] - base:
            return False
        return not _long_stretch(data, cut, len(data), limit)

    def _plain_prefix(self, data: bytes, off: int, k: int, j: int, base: int) -> tuple[int, int]:
        """The whole records from ``k`` that split plainly: (file offset, seq) after them."""
        pos, at = off, base
        for i in range(k, j + 1):
            stop = self._done[i]
            a, b = pos - off, stop - off
            if b > len(data) or (b > a and data[b - 1] != 10):
                break
            long = _long_stretch(data, a, b, self._line_max)
            if (long or b == a) and data.count(b"\n", a, b) != self.seq[i] - at:
                break
            pos, at = stop, self.seq[i]
        return pos, at

    def _remember(self, seq: int, index: int, offset: int) -> None:
        if len(self._resume) >= _RESUME_POINTS:
            self._resume.clear()
        self._resume[seq] = (index, offset)

    def _chunks(self, since: int, upto: int | None) -> Iterator[tuple[list[Line], int, int]]:
        """Per journal record from the one holding ``since + 1``: the lines it
        completed that lie in (since, upto), how many of those are gone, and
        the seq of the last one gone."""
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
            missing = gone_to = 0
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
                yield [ln for ln in lines if since < ln.seq < hi], missing, gone_to
                return
            if lines and lines[0].seq <= since:
                lines = [ln for ln in lines if ln.seq > since]
            yield lines, missing, gone_to
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
        if self._in_cut_line(index, r):
            return end, True, b""
        pend = self.extra[r]
        return end, False, self._files[STREAMS[index]].get(end - pend, end)

    def _in_cut_line(self, index: int, r: int) -> bool:
        """True when stream ``index`` is, after its DATA record ``r``, still
        inside the line a cut started inside of (no newline since the cut):
        what a replay from before the cut skips."""
        cuts = self._cuts[index]
        c = bisect.bisect_left(cuts, r) - 1
        if c < 0:
            return False
        floor = self.end[cuts[c]]
        if self.end[r] - self.extra[r] < floor:
            return True
        # Pieces of an over-long line move its unfinished part past the cut
        # without a newline: the line is still the one the cut started inside.
        return (
            bool(self.mid[cuts[c]])
            and self._files[STREAMS[index]].read(floor, self.end[r]).find(b"\n") < 0
        )

    # -- searching --------------------------------------------------------------------

    def stream_end(self, index: int) -> int:
        """How far the journal covers a stream's log file."""
        mine = self._by_stream[index]
        return self.end[mine[-1]] if mine else 0

    def _data_records(self) -> dict[int, tuple[list[int], list[int]]]:
        """Per stream: its DATA records, and where each one ends in its file."""
        if self._data is None:
            self._data = {}
            for i in (0, 1):
                mine = [k for k in self._by_stream[i] if self.kind[k] == DATA]
                self._data[i] = (mine, [self.end[k] for k in mine])
        return self._data

    def record_at(self, index: int, offset: int) -> int | None:
        """The record that completed the line of stream ``index`` whose ``\n``
        is at file ``offset`` (the end of the stream: its last, unterminated line)."""
        mine, ends = self._data_records()[index]
        j = bisect.bisect_right(ends, offset)
        if j < len(mine):
            return mine[j]
        eofs = [k for k in self._by_stream[index] if self.kind[k] == EOF]
        return eofs[-1] if eofs else None

    def records_over(self, index: int, start: int, end: int) -> list[int]:
        """The records of stream ``index`` that completed a line, or a piece of
        one, with bytes between file offsets ``start`` and ``end`` (a ``\n``):
        those of a line longer than ``line_max`` hold its pieces."""
        last = self.record_at(index, end)
        mine, ends = self._data_records()[index]
        first = bisect.bisect_right(ends, start)
        stop = bisect.bisect_right(mine, last) if last is not None else len(mine)
        return mine[first:stop]

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
        if prev is not None and (self.kind[prev] == CUT or self._in_cut_line(index, prev)):
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


def _cook(data: bytes) -> bytes:
    """Whole lines (each ending in ``\n``) as ``read()`` gives their text,
    UTF-8 encoded: ``data`` itself unless it holds a ``\r`` or is not valid
    UTF-8. Decoding many lines at once gives what decoding each one gives: a
    ``\n`` ends any unfinished UTF-8 sequence."""
    if b"\r" not in data:
        if data.isascii():
            return data
        try:
            data.decode()
        except UnicodeDecodeError:
            pass
        else:
            return data
    text = data.decode("utf-8", "replace")
    if "\r" in text:
        text = "\n".join(_split_text(text))
    return text.encode()


def _long_stretch(data: bytes, start: int, stop: int, limit: int) -> bool:
    """True when ``data[start:stop]`` may hold more than ``limit`` bytes
    without a newline (False: it surely does not). Such a stretch covers a
    whole window of ``limit // 2`` bytes on any grid, so one ``find`` per
    window decides."""
    half = max(1, limit // 2)
    find = data.find
    # A plain loop: a generator and any() cost more per window than its find.
    for pos in range(start, stop - half + 1, half):  # noqa: SIM110
        if find(b"\n", pos, pos + half) < 0:
            return True
    return False


def _no_follow(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC)
