"""Replaying a proc's output as bytes (``read_bytes``): the lines ``read``
gives, without an object per line (see :mod:`._replay` for how).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ._disklog import DATA, STREAMS
from ._journal import UNKNOWN, Journal, LogWindow
from ._output import _split_text
from ._replay_lines import read as read_lines
from ._types import Line, Stream

__all__ = ["ByteBatch", "ByteReplay", "ByteSink", "encode_lines"]

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


class ByteReplay:
    """``read_bytes`` over one journal, with the places where earlier calls
    ended inside a record (a call that pages on starts there)."""

    def __init__(self, journal: Journal) -> None:
        self._j = journal
        # seq -> (stream index, file offset just past that line): where a
        # read_bytes call ended inside a record, so the next one starts there.
        self._resume: dict[int, tuple[int, int]] = {}

    def read_bytes(
        self, sink: ByteSink, stream: Stream | None = None, upto: int | None = None
    ) -> bool:
        """Add to ``sink`` the lines with ``sink.cursor < seq < upto``, as
        ``read`` gives them, as bytes (see ``ByteBatch``). True when it reached
        the end (of what the journal holds, or ``upto``), False when it stopped
        at one of the sink's bounds."""
        seq, streams = self._j.seq, self._j.stream
        run_ends = self._j.data_run_ends()
        n = len(seq)
        hi = upto if upto is not None else UNKNOWN
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
            known = seq[k] != UNKNOWN
            if known and seq[k] <= floor:
                k += 1  # no lines (a stream's end after a newline)
                continue
            cautious = True
            top = min(seq[k] + 1, hi) if known else upto
            stop = min(seq[k], hi - 1) if known else None
            if not self._add_replayed(sink, floor, top, stream, stop):
                return False
            if not known:
                return not sink.full
            floor = max(floor, min(seq[k], hi - 1))
            k += 1
        return True

    def _add_replayed(
        self, sink: ByteSink, floor: int, top: int | None, stream: Stream | None, stop: int | None
    ) -> bool:
        """Add to ``sink`` the lines after ``floor`` (below ``top``) replayed as
        lines, as ``read`` with the sink's bounds gives them; False when a bound
        stopped it before seq ``stop`` (None: where the record ends is unknown)."""
        j = self._j
        if sink.full:
            # As ``read`` with a limit: past what is gone and the other
            # stream's lines, up to the next line it would have returned.
            _, dropped, cursor = read_lines(j, floor, 0, stream, upto=top)
            sink.dropped += dropped
            sink.cursor = max(sink.cursor, cursor)
            return stop is not None and cursor >= stop
        lines, dropped, cursor = read_lines(j, floor, sink.lines_left(), stream, upto=top)
        before = sink.count
        if not sink.add_lines(encode_lines(lines)):
            # What ``read`` with a limit of the lines taken counts and passes.
            _, dropped, cursor = read_lines(j, floor, sink.count - before, stream, upto=top)
            sink.dropped += dropped
            sink.cursor = max(sink.cursor, cursor)
            return False
        sink.dropped += dropped
        sink.cursor = max(sink.cursor, cursor)
        # False: the limit stopped it inside the record.
        return not (sink.full and (stop is None or cursor < stop))

    def _run_start(self, k: int) -> int | None:
        """Where the lines record ``k`` completes start in its stream's file,
        or None when the record must be replayed as lines (not DATA, seq
        unknown, or its stream's unfinished line before it was cut)."""
        if self._j.kind[k] != DATA or self._j.seq[k] == UNKNOWN:
            return None
        index = self._j.stream[k]
        mine = self._j.by_stream[index]
        j = bisect.bisect_left(mine, k) - 1
        if j < 0:
            return 0
        r = mine[j]
        if self._j.kind[r] != DATA:
            return None
        return None if self._j.in_cut_line(index, r) else self._j.done[r]

    def _copy_run(
        self, k: int, m: int, start: int, floor: int, hi: int, sink: ByteSink
    ) -> tuple[int, int, bool] | None:
        """Copy the lines after ``floor`` of records ``k..m`` (consecutive
        DATA records of one stream, the first one's lines starting at file
        offset ``start``) into ``sink``, within its bounds and below ``hi``.

        Returns (the next record, the seq reached, whether that record must be
        replayed as lines), or None when record ``k`` must be."""
        seq, done = self._j.seq, self._j.done
        index = self._j.stream[k]
        f = self._j.files[STREAMS[index]]
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
        plain = self._j.all_plain(off, m)
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

    def _skip(self, k: int, start: int, base: int, floor: int) -> int | None:
        """The file offset of line ``floor + 1``, inside record ``k`` whose
        lines (``base + 1`` on) start at ``start``; None when the record does
        not split plainly."""
        index = self._j.stream[k]
        hit = self._resume.get(floor)
        stop = self._j.done[k]
        if hit is not None and hit[0] == index and start <= hit[1] <= stop:
            return hit[1]
        data = self._j.files[STREAMS[index]].read(start, stop)
        total = self._j.seq[k] - base
        if len(data) != stop - start or not data.endswith(b"\n"):
            return None
        if _long_stretch(data, 0, len(data), self._j.line_max) and data.count(b"\n") != total:
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
        self, f: LogWindow, start: int, stop: int, total: int, want: int, cap: int | None
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
            if rest.endswith(b"\n") and not _long_stretch(rest, 0, len(rest), self._j.line_max):
                return start + cut, total - rest.count(b"\n")
        return start + cut, data.count(b"\n", 0, cut)

    def _line_end(self, f: LogWindow, start: int, stop: int) -> int | None:
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
        limit = self._j.line_max
        if cut and data[cut - 1] != 10:
            return False
        if plain:
            return True
        if (
            _long_stretch(data, 0, cut, limit)
            and data.count(b"\n", 0, cut) != self._j.seq[j] - base
        ):
            return False
        return not _long_stretch(data, cut, len(data), limit)

    def _plain_prefix(self, data: bytes, off: int, k: int, j: int, base: int) -> tuple[int, int]:
        """The whole records from ``k`` that split plainly: (file offset, seq) after them."""
        pos, at = off, base
        for i in range(k, j + 1):
            stop = self._j.done[i]
            a, b = pos - off, stop - off
            if b > len(data) or (b > a and data[b - 1] != 10):
                break
            long = _long_stretch(data, a, b, self._j.line_max)
            if (long or b == a) and data.count(b"\n", a, b) != self._j.seq[i] - at:
                break
            pos, at = stop, self._j.seq[i]
        return pos, at

    def _remember(self, seq: int, index: int, offset: int) -> None:
        if len(self._resume) >= _RESUME_POINTS:
            self._resume.clear()
        self._resume[seq] = (index, offset)


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
