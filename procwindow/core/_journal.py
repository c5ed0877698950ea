"""A proc's journal, read into columns (one list per field, one entry per
record), with its log files open: what a replay or a search looks records up
in. See ``_disklog`` for the format, and :mod:`._replay` for what reads it.
"""

from __future__ import annotations

import bisect
import itertools
import logging
import math
import operator
import os
from itertools import accumulate
from typing import Any

from ._disklog import CUT, DATA, EOF, MID, PLAIN, RECORD, STREAMS
from ._output import LINE_MAX
from ._types import Stream

__all__ = ["UNKNOWN", "Journal", "LogWindow"]

log = logging.getLogger("procwindow")

#: Bytes read from a log file at a time.
WINDOW = 1024 * 1024
#: The seq of a read past the journal's end (its lines are counted on the fly).
UNKNOWN = 1 << 62


class LogWindow:
    """Reads ranges of one log file through a window of ``WINDOW`` bytes."""

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
            self._buf = os.pread(self.fd, max(end - start, WINDOW), start)
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


class Journal:
    """One proc's journal records and log files as they are now.

    ``finished``: the proc will write nothing more, so bytes past the journal
    (the supervisor died between a write and its record) are taken in too, as
    records of unknown seq. Use it as a context manager (it holds the files
    open). Its records do not change once it is made.
    """

    def __init__(
        self, logs: dict[Stream, str], journal: str, *, finished: bool, line_max: int = LINE_MAX
    ) -> None:
        self.line_max = line_max
        self.files = {s: LogWindow(logs[s]) for s in STREAMS}
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
        #: Records skipped as damaged (overwritten or torn on disk).
        self.damaged = self._drop_damaged(tags)
        if self.damaged:
            log.warning(
                "%s: %d damaged records skipped; the lines they covered are read from the"
                " log, their times and the order of stdout and stderr there may be off",
                journal,
                self.damaged,
            )
        if finished:
            self._add_unjournaled()
        # Per stream: the indexes of its records, and of its CUT records.
        self.by_stream = {i: [k for k, s in enumerate(self.stream) if s == i] for i in (0, 1)}
        self.cuts = {i: [k for k in self.by_stream[i] if self.kind[k] == CUT] for i in (0, 1)}
        self.journal_size = len(data)
        self._data: dict[int, tuple[list[int], list[int]]] | None = None
        # Per record: where the complete lines end in its stream's file.
        self.done = [e - x for e, x in zip(self.end, self.extra, strict=True)]
        self._run_ends: list[int] | None = None
        self._rough: dict[int, list[int]] | None = None

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for f in self.files.values():
            f.close()

    def _drop_damaged(self, tags: list[int]) -> int:
        """Keep the records that can be true, in order; how many were dropped.

        A record is kept when its fields are in range (a stream, a kind, a
        finite time, an end within its log file) and it keeps the order of
        the ones kept before it (seq, and each stream's end, never go back)
        without passing the last sound record's seq. Bytes overwritten in the
        middle of a journal so cost only the records they hit: the lines
        those covered are read with the next kept record's.
        """
        sizes = [self.files[s].size() for s in STREAMS]
        if self._all_sound(tags, sizes):
            return 0
        kinds = (DATA, EOF, CUT)

        def sane(k: int) -> bool:
            index, t = self.stream[k], self.time[k]
            return (
                tags[k] < 1 << 24
                and index in (0, 1)
                and self.kind[k] in kinds
                and math.isfinite(t)
                and t >= 0
                and self.end[k] <= sizes[index]
                and (self.kind[k] != DATA or self.extra[k] <= self.end[k])
            )

        count = len(self.seq)
        last = next((k for k in range(count - 1, -1, -1) if sane(k)), -1)
        cap = self.seq[last] if last >= 0 else 0
        keep: list[int] = []
        # The bytes of data records lost before a stream's end: a data record
        # made for them, by the index of that end's record.
        lost: dict[int, tuple[int, int]] = {}
        seq, ends, tails = 0, [0, 0], [0, 0]
        for k in range(count):
            index = self.stream[k]
            if sane(k) and seq <= self.seq[k] <= cap and self.end[k] >= ends[index]:
                if self.kind[k] == EOF and self.end[k] > ends[index]:
                    lost[k] = self._lost_data(index, ends[index], self.end[k], tails[index])
                keep.append(k)
                seq, ends[index] = self.seq[k], self.end[k]
                tails[index] = self.extra[k] if self.kind[k] == DATA else 0
        if len(keep) == count:
            return 0
        pairs = zip([-1, *keep], keep, strict=False)
        gaps = {b for a, b in pairs if b != a + 1}
        columns = ("time", "seq", "end", "extra", "stream", "kind", "mid", "plain")
        rows: list[tuple[Any, ...]] = []
        after_gap: set[int] = set()
        for k in keep:
            if k in lost:  # the lost bytes, then the end
                end, extra = lost[k]
                after_gap.add(len(rows))
                rows.append((self.time[k], self.seq[k], end, extra, self.stream[k], DATA, 0, 0))
            if k in gaps:
                after_gap.add(len(rows))
            rows.append(tuple(getattr(self, c)[k] for c in columns))
        for i, column in enumerate(columns):
            setattr(self, column, [row[i] for row in rows])
        self._renumber(after_gap)
        return count - len(keep)

    def _lost_data(self, index: int, start: int, end: int, tail: int) -> tuple[int, int]:
        """A data record for the bytes ``start..end`` of stream ``index`` whose
        records were lost (its end came through): its end, and the bytes of
        its unfinished line (``tail`` of them before ``start``)."""
        data = self.files[STREAMS[index]].read(start, end)
        newline = data.rfind(b"\n")
        return end, len(data) - newline - 1 if newline >= 0 else tail + len(data)

    def _all_sound(self, tags: list[int], sizes: list[int]) -> bool:
        """The common case, checked column by column at C speed: no record is damaged."""
        seq, end, stream = self.seq, self.end, self.stream
        if not seq:
            return True
        if max(tags) >= 1 << 24 or not set(stream) <= {0, 1} or not set(self.kind) <= {0, 1, 2}:
            return False
        if not all(map(operator.le, seq, itertools.islice(seq, 1, None))):
            return False
        if min(self.time) < 0 or not all(map(math.isfinite, self.time)):
            return False
        for index in (0, 1):
            ends = list(itertools.compress(end, map(operator.eq, stream, itertools.repeat(index))))
            if ends and (
                ends[-1] > sizes[index]
                or not all(map(operator.le, ends, itertools.islice(ends, 1, None)))
            ):
                return False
        # (A cut's extra is the bytes it cut, which may pass its end: the
        # record-by-record check tells those apart.)
        return all(map(operator.le, self.extra, end))

    def _renumber(self, after_gap: set[int]) -> None:
        """Give the records that follow dropped ones the seqs their lines make.

        A dropped record's lines are counted by the next record of its stream,
        which may come after records of the other stream: from a gap until
        the count meets the journal again, each record's seq is the lines
        counted so far (newlines in the log, and an unfinished line at its
        stream's end), so that seqs go up one line at a time as a replay
        numbers them. A cut ends the count (its lines are not in the log).
        """
        pos, tail = [0, 0], [0, 0]
        counted: int | None = None  # None: the journal's seqs hold
        for k in range(len(self.seq)):
            index, kind = self.stream[k], self.kind[k]
            if k in after_gap and kind != CUT:
                counted = self.seq[k - 1] if k else 0
            if counted is not None and kind == DATA:
                data = self.files[STREAMS[index]].read(pos[index], self.end[k])
                counted += data.count(b"\n")
            elif counted is not None and kind == EOF:
                counted += 1 if tail[index] else 0
            if counted is not None and kind != CUT:
                if counted == self.seq[k]:
                    counted = None  # in step again
                else:
                    self.seq[k] = counted
            elif kind == CUT:
                counted = None
            pos[index] = self.end[k]
            tail[index] = self.extra[k] if kind == DATA else 0

    def _add_unjournaled(self) -> None:
        """Bytes a dead supervisor wrote but did not journal, and the last lines
        of streams that never saw their end."""
        last_time = self.time[-1] if self.time else 0.0
        ended = {s for s, k in zip(self.stream, self.kind, strict=True) if k == EOF}
        for index in (0, 1):
            ends = [
                e for e, s, k in zip(self.end, self.stream, self.kind, strict=True) if s == index
            ]
            written = self.files[STREAMS[index]].size() if self.files[STREAMS[index]].fd else 0
            last_end = ends[-1] if ends else 0
            if index not in ended and written > last_end:
                self._append(last_time, UNKNOWN, written, 0, index, DATA)
            if index not in ended and (written or ends):
                self._append(last_time, UNKNOWN, max(written, last_end), 0, index, EOF)

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
            if s != UNKNOWN:
                return s
        return 0

    def cut(self) -> tuple[int, int]:
        """(lines, bytes) cut from the middle by the cap."""
        lines = 0
        nbytes = 0
        for index in (0, 1):
            cuts = self.cuts[index]
            if cuts:
                nbytes += self.extra[cuts[-1]]
        cuts = sorted(self.cuts[0] + self.cuts[1])
        if cuts:
            head = cuts[0]
            lines = self.seq[cuts[-1]] - (self.seq[head - 1] if head else 0)
            lines += sum(self.mid[k] for k in cuts)
        return lines, nbytes

    def file(self, stream: Stream) -> LogWindow:
        return self.files[stream]

    def stream_end(self, index: int) -> int:
        """How far the journal covers a stream's log file."""
        mine = self.by_stream[index]
        return self.end[mine[-1]] if mine else 0

    def data_records(self) -> dict[int, tuple[list[int], list[int]]]:
        """Per stream: its DATA records, and where each one ends in its file."""
        if self._data is None:
            self._data = {}
            for i in (0, 1):
                mine = [k for k in self.by_stream[i] if self.kind[k] == DATA]
                self._data[i] = (mine, [self.end[k] for k in mine])
        return self._data

    def record_at(self, index: int, offset: int) -> int | None:
        """The record that completed the line of stream ``index`` whose ``\n``
        is at file ``offset`` (the end of the stream: its last, unterminated line)."""
        mine, ends = self.data_records()[index]
        j = bisect.bisect_right(ends, offset)
        if j < len(mine):
            return mine[j]
        eofs = [k for k in self.by_stream[index] if self.kind[k] == EOF]
        return eofs[-1] if eofs else None

    def records_over(self, index: int, start: int, end: int) -> list[int]:
        """The records of stream ``index`` that completed a line, or a piece of
        one, with bytes between file offsets ``start`` and ``end`` (a ``\n``):
        those of a line longer than ``line_max`` hold its pieces."""
        last = self.record_at(index, end)
        mine, ends = self.data_records()[index]
        first = bisect.bisect_right(ends, start)
        stop = bisect.bisect_right(mine, last) if last is not None else len(mine)
        return mine[first:stop]

    # -- indexes of its records ------------------------------------------------------

    def data_run_ends(self) -> list[int]:
        """Per record ``k``: the last record ``m >= k`` such that records
        ``k+1..m`` are DATA records of ``k``'s stream with known seqs (those a
        copy takes with ``k`` as one run). Made once: the records of a
        DiskOutput do not change."""
        ends = self._run_ends
        if ends is None:
            seq, kind, streams = self.seq, self.kind, self.stream
            ends = list(range(len(seq)))
            for k in range(len(seq) - 2, -1, -1):
                if streams[k + 1] == streams[k] and kind[k + 1] == DATA and seq[k + 1] != UNKNOWN:
                    ends[k] = ends[k + 1]
            self._run_ends = ends
        return ends

    def all_plain(self, off: int, m: int) -> bool:
        """True when the bytes of record ``m``'s stream from file offset
        ``off`` to where ``m`` ends are ASCII without ``\r`` and its lines
        hold no piece of an over-long line: every record whose read they
        came from is PLAIN (the unfinished line they start with may span
        many reads)."""
        records = self.data_records()
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

    def in_cut_line(self, index: int, r: int) -> bool:
        """True when stream ``index`` is, after its DATA record ``r``, still
        inside the line a cut started inside of (no newline since the cut):
        what a replay from before the cut skips."""
        cuts = self.cuts[index]
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
            and self.files[STREAMS[index]].read(floor, self.end[r]).find(b"\n") < 0
        )


def _no_follow(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC)
