"""DiskLog: one proc's output on disk — a raw log file per stream and a journal.

The log files are byte-exact copies of what each pipe gave. The journal says
how the reads of both pipes interleaved: one fixed-size record per read, with
the time the lines of that read carry, the seq of the last line complete
after it, where it ends in its stream's file, and how many bytes of an
unfinished line that stream held after it. That is all a reader needs to
split the same lines, with the same seqs and times, in the same merged order
(``_replay``). A record also says whether its read was plain (``PLAIN``):
ASCII without ``\r``, no piece of an over-long line cut. Checked once as it
is written, that spares every reader of those bytes the same checks.

A cap bounds what one proc leaves on disk: the first ``cap / 4`` bytes (the
head) stay; past the cap, the middle is cut so that at least the last
``cap / 8`` bytes (the tail) stay. A cut falls between whole lines: the head
gives up its unfinished line, the tail the rest of the line it starts inside
of (and, while that line goes on, what comes of it until its newline). In each
file cut, a marker line takes the place of what went (``[procwindow: N lines
(SIZE) of this output were cut here …]``, rewritten at each later cut): the
tail moves to just after it. The journal records of what was cut are dropped;
a CUT record per stream takes their place, its end just after the marker,
carrying the bytes cut so far. No line is ever written twice.
"""

from __future__ import annotations

import contextlib
import errno
import os
import struct
import time
from collections.abc import Iterator
from typing import NamedTuple

from ._errors import UnsafePath
from ._private import open_private_file
from ._text import format_size
from ._types import Stream

__all__ = [
    "CUT",
    "DATA",
    "EOF",
    "MID",
    "PLAIN",
    "RECORD",
    "DiskLog",
    "LogFile",
    "Record",
    "journal_records",
]

#: One journal record: time, last seq, end offset in the stream's file, extra
#: (DATA: pending bytes after it; CUT: bytes cut from this stream so far),
#: stream index | kind << 8 | flags << 16 (``MID``, ``PLAIN``). Five 8-byte
#: words, so columns can be read with ``memoryview.cast`` without unpacking
#: each record.
RECORD = struct.Struct("<dQQQQ")
#: Kinds of journal record.
DATA, EOF, CUT = 0, 1, 2
#: Flags of a record. MID (CUT): the kept part starts inside a line. PLAIN
#: (DATA): the read's bytes are ASCII without ``\r`` and it cut no piece of an
#: over-long line, so its lines are the log's bytes, one per newline, and a
#: reader gives them as they are without checking them again. A record
#: without it (and any record of an older journal) is checked.
MID, PLAIN = 1, 2
STREAMS = (Stream.STDOUT, Stream.STDERR)

#: How often (seconds) an open log file is checked for having been removed.
_LOG_CHECK_INTERVAL = 1.0
#: Bytes copied at a time when a tail is moved down by hand.
_MOVE_CHUNK = 1024 * 1024


class Record(NamedTuple):
    time: float
    last_seq: int
    end: int
    extra: int
    stream: int
    kind: int
    flags: int = 0


def journal_records(data: bytes) -> list[Record]:
    """Parse a journal (a torn last record, from a crash, is ignored)."""
    usable = len(data) - len(data) % RECORD.size
    return [
        Record(t, seq, end, extra, sk & 0xFF, (sk >> 8) & 0xFF, sk >> 16)
        for t, seq, end, extra, sk in RECORD.iter_unpack(memoryview(data)[:usable])
    ]


class LogFile:
    """One raw, byte-exact log file. A failure to write never stops capture.

    On the first error (ENOSPC, EIO, a removed file…) the file is closed,
    ``error`` holds the OS error text, and later writes are dropped.
    """

    __slots__ = ("_checked", "_fd", "_opened", "error", "path", "size")

    def __init__(self, path: str) -> None:
        self.path = path
        self.error: str | None = None
        self.size = 0
        self._fd: int | None = None
        self._opened = False
        self._checked = time.monotonic()

    @property
    def fd(self) -> int | None:
        if not self._opened:
            self._open()
        return self._fd

    def _open(self) -> None:
        # Opened on first use, so an idle child costs no log fds. Whatever sits
        # at the path already (a planted FIFO, a symlink, someone else's file)
        # is refused without blocking and without writing a byte to it.
        self._opened = True
        try:
            self._fd = open_private_file(self.path, what="log file", readable=True)
        except UnsafePath as exc:
            self.error = str(exc)
        except OSError as exc:
            self.error = f"{self.path}: {exc.strerror or exc}"

    def write(self, data: bytes | memoryview) -> bool:
        """Append ``data``; on failure record the error, stop logging, return False."""
        fd = self.fd
        if fd is None:
            return False
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
                self.size += n
            now = time.monotonic()
            if now - self._checked > _LOG_CHECK_INTERVAL:
                self._checked = now
                if os.fstat(fd).st_nlink == 0:
                    raise OSError(errno.ENOENT, "log file was removed")
        except OSError as exc:
            self.fail(exc)
            return False
        return True

    @property
    def untouched(self) -> bool:
        """True while nothing was written (so no file was made)."""
        return not self._opened

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """The file open while a cut moves it, also once its stream ended (and
        closed again after)."""
        if self._fd is not None or not self._opened or self.error:
            yield
            return
        try:
            self._fd = os.open(self.path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:
            self.fail(exc)
            yield
            return
        try:
            yield
        finally:
            self.close()

    def fail(self, exc: OSError) -> None:
        self.error = f"{self.path}: {exc.strerror or exc}"
        self.close()

    def close(self) -> None:
        """Close the file (idempotent)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)


class DiskLog:
    """Writes one proc's raw logs and journal, within ``cap`` bytes (None: no cap).

    After the first error nothing more is written (what is on disk stays
    consistent and readable up to there); ``error`` says why, and ``complete``
    turns False.
    """

    def __init__(
        self, logs: dict[Stream, LogFile], journal_path: str | None, cap: int | None
    ) -> None:
        self.logs = logs
        self.journal_path = journal_path
        self.cap = cap
        self._head_cap = cap // 4 if cap is not None else None
        self._keep = max(cap // 8, 1) if cap is not None else 0
        self._journal: LogFile | None = LogFile(journal_path) if journal_path else None
        self._records = 0
        self._head_records: int | None = None  # records that make up the head
        self.cut_bytes = dict.fromkeys(STREAMS, 0)
        self.cut_lines = 0
        self._head_last_seq = 0
        # Per stream: a line the cut started inside of (cut whole, its end too), and
        # whether it is still unfinished after the cut...
        self._mid = {0: False, 1: False}
        self._open = {0: False, 1: False}
        # ...the lines cut, and where its marker line stands (once it has one).
        self._cut_lines = {0: 0, 1: 0}
        self._marker_at: dict[int, int] = {}
        self._marker_at_done: set[int] = set()
        self._stopped = False
        self._pruned: str | None = None

    def pruned(self, why: str) -> None:
        """Its files were deleted to keep history within its bounds: ``error``
        says so, and nothing more is read from or written to them."""
        self._pruned = why
        self._stopped = True
        self.close()

    @property
    def error(self) -> str | None:
        if self._pruned is not None:
            return self._pruned
        for f in (*self.logs.values(), self._journal):
            if f is not None and f.error:
                return f.error
        return None

    @property
    def complete(self) -> bool:
        """True while disk holds everything but what the cap cut."""
        return self._journal is not None and not self._stopped and self.error is None

    @property
    def disk_bytes(self) -> int:
        if self._pruned is not None:
            return 0
        journal = self._journal.size if self._journal is not None else 0
        return sum(f.size for f in self.logs.values()) + journal

    def write(
        self,
        stream: Stream,
        data: memoryview,
        now: float,
        last_seq: int,
        pending: int,
        *,
        split: bool,
    ) -> None:
        """Log one read of ``stream`` and journal it (``split``: the read cut a
        piece of an over-long line, or what it made of the read is unknown)."""
        if self._stopped:
            return
        log = self.logs[stream]
        if self._open[0 if stream is Stream.STDOUT else 1]:
            data, pending = self._drop_cut_line(stream, data, pending)
        if not log.write(data):
            self._stopped = True
            return
        flags = PLAIN if not split and self._journal is not None and _plain(data) else 0
        self._record(now, last_seq, log.size, pending, stream, DATA, flags)
        if self.cap is not None:
            if self._head_records is None:
                if sum(f.size for f in self.logs.values()) >= (self._head_cap or 0):
                    self._head_records = self._records
                    self._head_last_seq = last_seq
            elif self.disk_bytes > self.cap:
                self._cut(now)

    def end(self, stream: Stream, now: float, last_seq: int) -> None:
        """A stream ended (its last, unterminated line was flushed at ``now``).

        A stream that gave nothing leaves no file and no record: creating a
        file costs more than starting a short child, and a reader finds the
        same nothing either way (``_replay`` reads a missing file as empty).
        """
        log = self.logs[stream]
        if log.untouched:
            return
        if not self._stopped:
            self._record(now, last_seq, log.size, 0, stream, EOF)
        log.close()

    def _record(
        self,
        now: float,
        last_seq: int,
        end: int,
        extra: int,
        stream: Stream,
        kind: int,
        flags: int = 0,
    ) -> None:
        journal = self._journal
        if journal is None:
            return
        index = 0 if stream is Stream.STDOUT else 1
        tag = index | kind << 8 | flags << 16
        if journal.write(RECORD.pack(now, last_seq, end, extra, tag)):
            self._records += 1
        else:
            self._stopped = True

    def close(self) -> None:
        for f in (*self.logs.values(), self._journal):
            if f is not None:
                f.close()

    # -- the cap ---------------------------------------------------------------

    def _cut(self, now: float) -> None:
        """Cut the middle: keep the head, and the newest ``keep`` bytes of the rest,
        each part whole lines; a marker line in each cut file says what went."""
        journal = self._journal
        head = self._head_records
        assert journal is not None
        assert head is not None
        try:
            jfd = journal.fd
            if jfd is None:
                return
            data = os.pread(jfd, journal.size, 0)
            records = journal_records(data)
            # The tail: what follows the head and the CUT records of an earlier cut.
            tail = head
            while tail < len(records) and records[tail].kind == CUT:
                tail += 1
            ends = {0: 0, 1: 0}  # file offsets where each stream's tail starts
            for r in records[:tail]:
                ends[r.stream] = r.end
            first = self._first_kept(records, tail, ends)
            if first <= tail:
                return  # one read bigger than the tail: nothing can go yet
            out = bytearray(data[: head * RECORD.size])
            moves = self._cut_files(records, head, tail, first, ends, out)
            if moves is None:
                self._stopped = True
                return
            seq = records[first - 1].last_seq
            for index, stream in enumerate(STREAMS):
                # Each stream ever cut has its CUT record: where its kept part starts.
                if index in moves:
                    start = moves[index][1]
                elif index in self._marker_at_done:
                    start = ends[index]  # not cut this time: as the last cut left it
                else:
                    continue
                out += RECORD.pack(now, seq, start, self.cut_bytes[stream], index | CUT << 8)
            self.cut_lines = seq - self._head_last_seq + sum(self._mid.values())
            for r in records[first:]:
                src, dst = moves.get(r.stream, (0, 0))
                end = max(r.end - (src - dst), dst)  # a torn line's last bytes went too
                tag = r.stream | r.kind << 8 | r.flags << 16
                out += RECORD.pack(r.time, r.last_seq, end, r.extra, tag)
            os.pwrite(jfd, out, 0)
            os.ftruncate(jfd, len(out))
            os.lseek(jfd, len(out), os.SEEK_SET)
            journal.size = len(out)
            self._records = len(out) // RECORD.size
        except OSError as exc:
            journal.fail(exc)
            self._stopped = True

    def _first_kept(self, records: list[Record], tail: int, ends: dict[int, int]) -> int:
        """The first record of the newest ``keep`` bytes after ``tail``."""
        prev = dict(ends)
        size_of: list[int] = []
        for r in records[tail:]:
            size_of.append(r.end - prev[r.stream] if r.kind != CUT else 0)
            prev[r.stream] = r.end
        kept, first = 0, len(records)
        for i in range(len(records) - 1, tail - 1, -1):
            if kept >= self._keep:
                break
            kept += size_of[i - tail]
            first = i
        return first

    def _cut_files(
        self,
        records: list[Record],
        head: int,
        tail: int,
        first: int,
        ends: dict[int, int],
        out: bytearray,
    ) -> dict[int, tuple[int, int]] | None:
        """Cut each stream's file between its head and the records from ``first``
        on, at line boundaries, and write its marker line in the gap: per stream
        cut, where its kept bytes were and where they are now (None: a file
        failed). The head's unfinished line is cut too (its record in ``out``
        says so)."""
        moves: dict[int, tuple[int, int]] = {}
        for index, stream in enumerate(STREAMS):
            mine = [k for k in range(tail, first) if records[k].stream == index]
            if not mine:
                continue  # nothing of this stream in what goes
            log = self.logs[stream]
            last = records[mine[-1]]
            src = last.end
            if src == ends[index] and not self._open[index]:
                continue  # no byte of this stream goes (an end of stream, say)
            with log.held():
                if not self._cut_file(records, head, index, mine, src, ends[index], out, moves):
                    return None
        return moves

    def _cut_file(
        self,
        records: list[Record],
        head: int,
        index: int,
        mine: list[int],
        src: int,
        end: int,
        out: bytearray,
        moves: dict[int, tuple[int, int]],
    ) -> bool:
        """Cut stream ``index``'s file from its head (or marker) to ``src``."""
        stream = STREAMS[index]
        log = self.logs[stream]
        last = records[mine[-1]]
        # A line still open since the last cut is torn still (its bytes were dropped).
        self._mid[index] = (last.kind == DATA and last.extra > 0) or self._open[index]
        if self._mid[index]:  # the kept part starts inside a line: that line goes
            src = self._after_newline(log, src)
        # No newline yet: the rest of the line goes too, as it comes (``write``).
        self._open[index] = self._mid[index] and src >= log.size
        at = self._marker_at.get(index)
        if at is None:  # the first cut: the head keeps whole lines only
            at = self._marker_at[index] = self._trim_head(records, head, index, out)
        old_marker = end - at if index in self._marker_at_done else 0
        self.cut_bytes[stream] += src - at - old_marker
        self._cut_lines[index] += sum(
            records[k].last_seq - records[k - 1].last_seq for k in mine if k
        )
        marker = self._marker(index)
        if not (self._move(log, src, at + len(marker)) and self._write_at(log, at, marker)):
            return False
        self._marker_at_done.add(index)
        moves[index] = (src, at + len(marker))
        return True

    @staticmethod
    def _move_up(log: LogFile, fd: int, src: int, dst: int) -> bool:
        try:
            pos = log.size
            while pos > src:
                n = min(_MOVE_CHUNK, pos - src)
                chunk = os.pread(fd, n, pos - n)
                if len(chunk) != n or os.pwrite(fd, chunk, pos - n + dst - src) != n:
                    raise OSError(errno.EIO, "short copy while cutting a log")
                pos -= n
            log.size += dst - src
            os.lseek(fd, log.size, os.SEEK_SET)
        except OSError as exc:
            log.fail(exc)
            return False
        return True

    def _drop_cut_line(
        self, stream: Stream, data: memoryview, pending: int
    ) -> tuple[memoryview, int]:
        """What of a read goes to the log while the line a cut started inside of
        goes on: the bytes after its end (none while it has none), and the
        unfinished bytes after them."""
        nl = bytes(data).find(b"\n")
        if nl < 0:
            self.cut_bytes[stream] += len(data)
            return data[:0], 0
        self.cut_bytes[stream] += nl + 1
        self._open[0 if stream is Stream.STDOUT else 1] = False
        return data[nl + 1 :], pending

    @staticmethod
    def _after_newline(log: LogFile, pos: int) -> int:
        """The offset just after the first newline of ``log`` at or after ``pos``
        (its size when there is none)."""
        fd = log.fd
        while fd is not None and pos < log.size:
            chunk = os.pread(fd, min(_MOVE_CHUNK, log.size - pos), pos)
            if not chunk:
                break
            nl = chunk.find(b"\n")
            if nl >= 0:
                return pos + nl + 1
            pos += len(chunk)
        return log.size

    @staticmethod
    def _trim_head(records: list[Record], head: int, index: int, out: bytearray) -> int:
        """Where stream ``index``'s head ends on a line boundary: its last head
        record, without the unfinished line after it (which the cut takes; the
        record in ``out`` is made to say so)."""
        mine = [k for k in range(head) if records[k].stream == index]
        if not mine:
            return 0
        r = records[mine[-1]]
        if r.kind != DATA or r.extra == 0:
            return r.end
        tag = r.stream | r.kind << 8 | r.flags << 16
        start = mine[-1] * RECORD.size
        out[start : start + RECORD.size] = RECORD.pack(r.time, r.last_seq, r.end - r.extra, 0, tag)
        return r.end - r.extra

    def _marker(self, index: int) -> bytes:
        """The line a cut leaves in stream ``index``'s file, in place of what went."""
        lines = self._cut_lines[index] + self._mid[index]
        size = format_size(self.cut_bytes[STREAMS[index]])
        return (
            f"[procwindow: {lines:,} lines ({size}) of this output were cut here"
            f" to keep its log within log_cap]\n"
        ).encode()

    @staticmethod
    def _write_at(log: LogFile, at: int, data: bytes) -> bool:
        fd = log.fd
        if fd is None:
            return False
        try:
            os.pwrite(fd, data, at)
        except OSError as exc:
            log.fail(exc)
            return False
        return True

    @staticmethod
    def _move(log: LogFile, src: int, dst: int) -> bool:
        """Move the bytes of ``log`` from ``src`` to its end to ``dst``; truncate.
        Down, as a cut does; up (a marker line wider than what it replaces), from
        the end back."""
        if src == dst:
            return True
        fd = log.fd
        if fd is None:
            return False
        if dst > src:
            return DiskLog._move_up(log, fd, src, dst)
        try:
            length = log.size - src
            done = 0
            fast = True
            while done < length:
                # Pieces no longer than the distance never overlap themselves.
                want = min(length - done, src - dst, _MOVE_CHUNK * 16)
                n = 0
                if fast:
                    try:
                        n = os.copy_file_range(fd, fd, want, src + done, dst + done)
                    except OSError:
                        fast = False
                if not fast:
                    chunk = os.pread(fd, min(want, _MOVE_CHUNK), src + done)
                    n = os.pwrite(fd, chunk, dst + done)
                if n <= 0:
                    raise OSError(errno.EIO, "short copy while cutting a log")
                done += n
            os.ftruncate(fd, dst + length)
            os.lseek(fd, dst + length, os.SEEK_SET)
            log.size = dst + length
        except OSError as exc:
            log.fail(exc)
            return False
        return True


def _plain(data: memoryview) -> bool:
    """True when ``data`` is ASCII without ``\r``: its lines read back as they
    are. Checked as it is written, once, rather than at every read (a read
    buffer filled whole is checked in place; a part of one is copied first,
    as ``bytearray`` has no ranged ``isascii``)."""
    whole = data.obj
    if not isinstance(whole, bytes | bytearray) or len(whole) != len(data):
        whole = data.tobytes()
    return whole.find(b"\r") < 0 and whole.isascii()
