"""Output capture: the per-proc ring of lines.

Capture must stay cheap (DESIGN.md: one Python object per line at capture time
costs ~9× the throughput). So the ring stores *blocks*: the complete lines of one
read, as the raw bytes they arrived in, with the seq of their first line and a
line count. Lines are decoded and split only when someone reads them. Because
``\\n`` can never occur inside a UTF-8 multibyte sequence, decoding a block of
whole lines at once gives exactly what an incremental decoder would.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter
from typing import Protocol

from ._types import Line, LineRun, Stream, lines_of

__all__ = ["LINE_MAX", "OutputStore", "ReadBuffers", "RingBudget"]

#: A line longer than this many bytes is split into pieces marked ``split``.
LINE_MAX = 64 * 1024

#: How often (seconds) an open log file is checked for having been removed.
_LOG_CHECK_INTERVAL = 1.0


@dataclass(slots=True)
class _Block:
    first: int  # seq of the first line
    count: int  # number of lines
    stream: Stream
    time: float
    # The lines joined by b"\n", without a final newline: ``head + data``.
    # ``data`` is bytes, or a view of a read buffer handed to the ring (see
    # ReadBuffers); only such a block has a ``head``: the start of its first
    # line, which came in earlier reads.
    data: bytes | memoryview
    split: bool  # a single piece of an over-long line (count == 1)
    head: bytes = b""

    @property
    def size(self) -> int:
        return len(self.head) + len(self.data)

    def text(self) -> str:
        raw = b"".join((self.head, self.data)) if self.head else self.data
        return str(raw, "utf-8", "replace")


def _utf8_cut(data: bytes, limit: int) -> int:
    """A cut position ≤ limit that does not fall inside a UTF-8 sequence."""
    cut = limit
    # Step back over at most 3 continuation bytes (10xxxxxx).
    for _ in range(3):
        if cut <= 0 or (data[cut] & 0xC0) != 0x80:
            break
        cut -= 1
    return cut if cut > 0 else limit


def _decode_lines(data: bytes) -> list[str]:
    return _split_text(data.decode("utf-8", "replace"))


class BlockTest(Protocol):
    """A test of lines joined by ``\n``: whether any of them may pass."""

    @property
    def size(self) -> int:
        """About how many characters to give it at once."""
        ...

    def __call__(self, text: str) -> bool: ...


def _group_end(texts: list[str], k: int, count: int, chars: int) -> int:
    """The end of the run of lines from ``k`` whose joined text is about ``chars`` long."""
    j, size = k, 0
    while j < count and (j == k or size + len(texts[j]) < chars):
        size += len(texts[j]) + 1
        j += 1
    return j


def _split_text(text: str) -> list[str]:
    """A decoded block's lines, each as a terminal shows it."""
    lines = text.split("\n")
    if "\r" in text:
        for i, line in enumerate(lines):
            if "\r" in line:
                # "\r\n" ends a line; a bare "\r" redraws it: keep the last state.
                line = line.removesuffix("\r")
                lines[i] = line.rpartition("\r")[2] if "\r" in line else line
    return lines


class RingBudget:
    """The bytes held by every ring of one supervisor, against one limit."""

    __slots__ = ("limit", "used")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0

    @property
    def over(self) -> bool:
        return self.used > self.limit


class ReadBuffers:
    """Spare read buffers of one size, shared by a capture and its rings.

    A full read is handed to its ring as it is, instead of copied into it
    (``OutputStore.feed(..., handed=True)``): in a flood every read is full,
    and the copy was a third of what capture costs beyond the kernel's own.
    The reader then takes another buffer, and a ring gives each buffer back
    when its lines fall off; a few are kept spare, so a flood reuses the same
    memory instead of allocating a buffer per read.
    """

    __slots__ = ("_spare", "keep", "size")

    def __init__(self, size: int, keep: int = 2) -> None:
        self.size = size
        self.keep = keep
        self._spare: list[bytearray] = []

    def take(self) -> bytearray:
        return self._spare.pop() if self._spare else bytearray(self.size)

    def give(self, buf: bytearray) -> None:
        if len(self._spare) < self.keep and len(buf) == self.size:
            self._spare.append(buf)

    @property
    def spare(self) -> int:
        return len(self._spare)


class _Pending:
    """The unterminated tail of one stream."""

    __slots__ = ("data",)

    def __init__(self) -> None:
        self.data = b""


class OutputStore:
    """The bounded in-memory ring of one proc's output.

    Bounded by ``max_lines`` (exactly, as seen by readers) and ``max_bytes``
    (whole blocks fall off the front). What falls off stays in the log file.

    Lines end at ``\n`` (a ``\r`` before it is dropped). A bare ``\r`` starts
    the line over, as on a terminal, so a progress bar keeps its last state.
    A line that grows past ``line_max`` bytes is cut into pieces marked
    ``split``; cuts fall on character boundaries. Where the reads happen to
    be cut never changes the lines (the fuzz tests hold it to a byte-by-byte
    model of these rules).
    """

    def __init__(
        self,
        max_lines: int,
        max_bytes: int,
        line_max: int = LINE_MAX,
        budget: RingBudget | None = None,
        buffers: ReadBuffers | None = None,
    ) -> None:
        self._max_lines = max_lines
        self._max_bytes = max_bytes
        self._line_max = line_max
        self._budget = budget
        self._buffers = buffers
        self._blocks: list[_Block] = []
        self._head = 0  # index of the first live block in _blocks
        #: Pieces cut from over-long lines so far.
        self.pieces = 0
        self._bytes = 0
        self._lines = 0  # lines held in live blocks
        self._last_seq = 0
        self._pending = {Stream.STDOUT: _Pending(), Stream.STDERR: _Pending()}
        self._now = 0.0
        self.total_bytes = 0
        #: The block read last, and its lines as text (see ``_texts``).
        self._decoded_block: _Block | None = None
        self._decoded: list[str] = []

    # -- capture -------------------------------------------------------------

    def feed(
        self,
        stream: Stream,
        buf: bytes | bytearray,
        size: int,
        now: float,
        *,
        handed: bool = False,
    ) -> tuple[int, int] | None:
        """Take one read (``buf[:size]``) made at time ``now``; return the (first,
        last) seq of lines it completed. Every line it completes carries ``now``.

        ``buf`` may be the caller's reusable read buffer: what is kept is copied
        out of it exactly once. With ``handed`` (a full buffer from this store's
        ReadBuffers) the buffer is the store's from now on, and must never be
        written again: the ring keeps it as it is, or gives it back at once.
        """
        self._now = now
        self.total_bytes += size
        pending = self._pending[stream]
        first = self._last_seq + 1
        view = memoryview(buf)
        end = buf.rfind(b"\n", 0, size)
        if end >= 0:
            head = pending.data
            pending.data = bytes(view[end + 1 : size])
            if handed and size == len(buf) and isinstance(buf, bytearray):
                handed = not self._add_handed(stream, head, buf, end)
            else:
                self._add_whole(stream, b"".join((head, view[:end])) if head else bytes(view[:end]))
        else:
            pending.data = b"".join((pending.data, view[:size]))
        view.release()
        if handed and self._buffers is not None and isinstance(buf, bytearray):
            self._buffers.give(buf)
        if len(pending.data) > self._line_max:
            self._overflow(stream, pending)
        return (first, self._last_seq) if self._last_seq >= first else None

    def _add_handed(self, stream: Stream, head: bytes, buf: bytearray, end: int) -> bool:
        """Keep the complete lines ``head + buf[:end]`` without copying them, and
        return True; or return False (nothing kept) when a line may be too long."""
        limit = self._line_max
        if len(head) + end > limit and (
            _may_hold_long_line(buf, limit, end) or len(head) + buf.find(b"\n", 0, end + 1) > limit
        ):
            self._add_whole(stream, b"".join((head, memoryview(buf)[:end])))
            return False
        # buf[end] is the last newline of buf, so it holds one more than buf[:end].
        count = count_newlines(buf)
        self._append(stream, memoryview(buf)[:end], count, split=False, head=head)
        return True

    def flush(self, stream: Stream, now: float) -> tuple[int, int] | None:
        """End of stream at time ``now``: the unterminated tail becomes a last line."""
        self._now = now
        pending = self._pending[stream]
        if not pending.data:
            return None
        first = self._last_seq + 1
        data, pending.data = pending.data, b""
        self._add_whole(stream, data)
        return (first, self._last_seq)

    def _add_whole(self, stream: Stream, data: bytes) -> None:
        """Store complete lines (joined by \n, without the last one's \n)."""
        limit = self._line_max
        # The per-line path runs only when a cheap probe finds a stretch long
        # enough to hold an over-long line; almost all reads take one append.
        if not (len(data) > limit and _may_hold_long_line(data, limit)):
            self._append(stream, data, count_newlines(data) + 1, split=False)
            return
        short: list[bytes] = []
        for line in data.split(b"\n"):
            if len(line) <= limit:
                short.append(line)
                continue
            if short:
                self._append(stream, b"\n".join(short), len(short), split=False)
                short = []
            pieces, rest = _redraw(b"", line.removesuffix(b"\r"), limit)
            for piece in pieces:
                self._append(stream, piece, 1, split=True)
            self._append(stream, rest, 1, split=False)
        if short:
            self._append(stream, b"\n".join(short), len(short), split=False)

    def _overflow(self, stream: Stream, pending: _Pending) -> None:
        """The unterminated line outgrew ``line_max``: apply its redraws and cut pieces."""
        data = pending.data
        # A trailing "\r" may be the first half of "\r\n": keep it undecided.
        keep_cr = data.endswith(b"\r")
        pieces, rest = _redraw(b"", data[:-1] if keep_cr else data, self._line_max)
        for piece in pieces:
            self._append(stream, piece, 1, split=True)
        pending.data = rest + b"\r" if keep_cr else rest

    def _append(
        self,
        stream: Stream,
        data: bytes | memoryview,
        count: int,
        *,
        split: bool,
        head: bytes = b"",
    ) -> None:
        block = _Block(self._last_seq + 1, count, stream, self._now, data, split, head)
        if split:
            self.pieces += 1
        self._blocks.append(block)
        self._last_seq += count
        self._lines += count
        size = block.size
        self._bytes += size
        if self._budget is not None:
            self._budget.used += size
        self._evict()

    def _evict(self) -> None:
        self._drop_front(self._max_bytes, keep_last=True)

    def _drop_front(self, max_bytes: int, *, keep_last: bool) -> None:
        """Let blocks fall off the front until both bounds hold."""
        blocks = self._blocks
        freed = 0
        while self._head < len(blocks) - keep_last:
            front = blocks[self._head]
            over_bytes = self._bytes > max_bytes
            over_lines = self._lines - front.count >= self._max_lines
            if not (over_bytes or over_lines):
                break
            self._head += 1
            self._lines -= front.count
            size = front.size
            self._bytes -= size
            freed += size
            self._free(front)  # now; the list is compacted in bulk below
            if front is self._decoded_block:
                self._decoded_block, self._decoded = None, []
        if self._head > 64 and self._head * 2 > len(blocks):
            del blocks[: self._head]
            self._head = 0
        if self._budget is not None:
            self._budget.used -= freed

    def _free(self, block: _Block) -> None:
        data, block.data, block.head = block.data, b"", b""
        if isinstance(data, memoryview):
            buf = data.obj
            try:
                data.release()
            except BufferError:  # still looked at somewhere: not to be written again
                return
            if self._buffers is not None and isinstance(buf, bytearray):
                self._buffers.give(buf)

    def shrink(self, max_bytes: int) -> int:
        """Give memory back: let whole blocks fall off until at most ``max_bytes``
        are held (0: all of them). Returns the bytes freed. Their lines are
        still in the log files."""
        before = self._bytes
        self._decoded_block, self._decoded = None, []
        self._drop_front(max_bytes, keep_last=False)
        return before - self._bytes

    def resume(self, last_seq: int, pending: dict[Stream, bytes]) -> None:
        """Start from a known state (replaying from disk): the seq of the last line
        before, and each stream's unterminated bytes at that point."""
        self._last_seq = last_seq
        for stream, data in pending.items():
            self._pending[stream].data = data

    def skip_line(self, stream: Stream) -> None:
        """Forget what a stream has of an unfinished line (its start was cut)."""
        self._pending[stream].data = b""

    def pending_size(self, stream: Stream) -> int:
        """Bytes of a stream's unterminated line held now."""
        return len(self._pending[stream].data)

    def partial_text(self, stream: Stream) -> str | None:
        """What a terminal would show of a stream's unterminated line now (its
        latest state after each ``\r``), or None when there is none."""
        data = self._pending[stream].data
        if not data:
            return None
        data = data.removesuffix(b"\r")
        if b"\r" in data:
            data = data.rpartition(b"\r")[2]
        return data.decode("utf-8", "replace")

    # -- reading -------------------------------------------------------------

    @property
    def last_seq(self) -> int:
        """The seq of the newest complete line (0 when there is none)."""
        return self._last_seq

    @property
    def first_seq(self) -> int:
        """The seq of the oldest line still readable from memory."""
        if self._head >= len(self._blocks):
            return self._last_seq + 1
        return max(self._blocks[self._head].first, self._last_seq - self._max_lines + 1)

    @property
    def nbytes(self) -> int:
        """Bytes of line data held in memory."""
        return self._bytes + sum(len(p.data) for p in self._pending.values())

    def read(
        self, since: int, limit: int | None = None, stream: Stream | None = None
    ) -> tuple[list[Line], int, int]:
        """Lines with seq > since: (lines, dropped, cursor)."""
        runs, dropped, cursor = self.read_runs(since, limit, stream)
        return lines_of(runs), dropped, cursor

    def read_runs(
        self, since: int, limit: int | None = None, stream: Stream | None = None
    ) -> tuple[list[LineRun], int, int]:
        """:meth:`read`'s lines as runs (one per block read): (runs, dropped, cursor)."""
        first_live = self.first_seq
        dropped = max(0, first_live - since - 1)
        start = max(since + 1, first_live)
        blocks = self._blocks
        i = bisect.bisect_right(blocks, start, lo=self._head, key=_FIRST) - 1
        i = max(i, self._head)
        out: list[LineRun] = []
        got = 0
        cursor = since
        while i < len(blocks):
            block = blocks[i]
            i += 1
            if block.first + block.count <= start:
                continue
            if stream is not None and block.stream is not stream:
                cursor = block.first + block.count - 1
                continue
            skip = max(0, start - block.first)
            take = block.count - skip
            if limit is not None:
                if got >= limit:
                    return out, dropped, cursor
                take = min(take, limit - got)
            first = block.first + skip
            rest = skip + take < block.count  # the limit falls within this block
            texts = self._texts(block, keep=rest)
            if skip or rest:
                texts = texts[skip : skip + take]
            out.append(LineRun(first, block.stream, block.time, texts, block.split))
            got += take
            cursor = first + take - 1
            if rest:
                return out, dropped, cursor
        if dropped and not out:
            cursor = max(cursor, first_live - 1)
        return out, dropped, max(cursor, since)

    def _texts(self, block: _Block, *, keep: bool) -> list[str]:
        """A block's lines as text. With ``keep`` (a read stopped within the
        block) they are kept until the next read: a reader taking a big block a
        frame's worth at a time decodes it once, and a ring nobody is in the
        middle of reading holds no text."""
        texts = self._decoded if block is self._decoded_block else _split_text(block.text())
        self._decoded_block, self._decoded = (block, texts) if keep else (None, [])
        return texts

    def find(
        self,
        since: int,
        stream: Stream | None,
        line_test: Callable[[str], bool],
        block_test: BlockTest | None = None,
        deadline: float | None = None,
    ) -> tuple[Line | None, int]:
        """The first line in the ring with seq > since (of ``stream``, if given)
        whose text passes ``line_test``, and the seq scanned up to.

        ``block_test`` sees lines joined by ``\n`` (about its ``size``
        characters at a time) and says whether any of them may pass:
        lines it rules out are not tested one by one. Past ``deadline``
        (``time.monotonic()``) the scan stops where it is: a seq scanned up to
        below ``last_seq`` says there is more to scan. Lines before the ring are
        not seen (``first_seq`` says where it starts).
        """
        start = max(since + 1, self.first_seq)
        blocks = self._blocks
        i = max(self._head, bisect.bisect_right(blocks, start, lo=self._head, key=_FIRST) - 1)
        cursor = since
        for block in blocks[i:]:
            last = block.first + block.count - 1
            if last < start:
                continue
            if stream is not None and block.stream is not stream:
                cursor = last
                continue
            if deadline is not None and cursor > since and time.monotonic() > deadline:
                break
            text = block.text()
            skip = max(0, start - block.first)
            test = block_test if "\r" not in text else None
            if test is not None and len(text) <= test.size:
                if not test(text):
                    cursor = last
                    continue
                test = None  # some line may pass: test each
            texts = _split_text(text)
            k = skip
            while k < block.count:
                j = block.count if test is None else _group_end(texts, k, block.count, test.size)
                if test is None or test("\n".join(texts[k:j])):
                    for n in range(k, j):
                        if line_test(texts[n]):
                            seq = block.first + n
                            return Line(seq, block.stream, block.time, texts[n], block.split), seq
                k = j
                if deadline is not None and k < block.count and time.monotonic() > deadline:
                    return None, max(block.first + k - 1, since)
            cursor = last
        return None, max(cursor, since)


_FIRST = attrgetter("first")


def _redraw(current: bytes, data: bytes, limit: int) -> tuple[list[bytes], bytes]:
    """Run ``data`` (no \n) after ``current``: each \r starts the line over, and a
    line longer than ``limit`` gives up a piece. Returns (pieces, what remains)."""
    pieces: list[bytes] = []
    for i, segment in enumerate(data.split(b"\r")):
        current = segment if i else current + segment
        while len(current) > limit:
            cut = _utf8_cut(current, limit)
            pieces.append(current[:cut])
            current = current[cut:]
    return pieces, current


def count_newlines(data: bytes | bytearray) -> int:
    """How many newlines ``data`` holds.

    ``bytes.count`` of one byte compares every byte in a plain loop (~1.2 GB/s
    here); ``bytes.replace`` finds them with ``memchr``, which is several times
    faster once lines are a few dozen bytes long (~6 GB/s at 100 bytes) and far
    slower when they are very short. So: when the first KiB has lines that
    long, replace, allowed one newline per 32 bytes; if it used them all the
    lines are short after all, and ``count`` does it.
    """
    size = len(data)
    if size < 4096 or data.count(b"\n", 0, 1024) > 32:
        return data.count(b"\n")
    allowed = size >> 5
    found = size - len(data.replace(b"\n", b"", allowed))
    return found if found < allowed else data.count(b"\n")


def _may_hold_long_line(data: bytes | bytearray, limit: int, size: int | None = None) -> bool:
    # A line longer than ``limit`` covers at least one whole aligned window of
    # limit // 2 bytes, so if every such window holds a newline there is none.
    half = max(1, limit // 2)
    for start in range(0, (len(data) if size is None else size) - half + 1, half):
        if data.find(b"\n", start, start + half) < 0:
            return True
    return False
