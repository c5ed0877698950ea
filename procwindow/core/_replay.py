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
where the journal marks its reads PLAIN and checked (``
``, UTF-8, over-long
lines) where it does not. The rare records whose bytes do not split that
simply (a piece of an over-long line, the line a cut started inside of, a
stream's unterminated last line) are replayed as lines.

The parts: :mod:`._journal` (the records, as columns, and the log files),
:mod:`._replay_lines` (lines) and :mod:`._replay_bytes` (bytes).
"""

from __future__ import annotations

from ._journal import Journal, LogWindow
from ._output import LINE_MAX
from ._replay_bytes import ByteBatch, ByteReplay, ByteSink, encode_lines
from ._replay_lines import lines_at, read, read_runs, record_lines
from ._types import Line, LineRun, Stream

__all__ = ["ByteBatch", "ByteSink", "DiskOutput", "encode_lines"]


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
        self.journal = j = Journal(logs, journal, finished=finished, line_max=line_max)
        self._bytes = ByteReplay(j)
        #: The journal's columns, one entry per record (search reads them).
        self.seq, self.stream, self.end, self.kind = j.seq, j.stream, j.end, j.kind

    def __enter__(self) -> DiskOutput:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.journal.close()

    # -- what it holds -------------------------------------------------------------

    @property
    def last_seq(self) -> int:
        """The seq of the last line the journal knows of (0: none)."""
        return self.journal.last_seq

    def cut(self) -> tuple[int, int]:
        """(lines, bytes) cut from the middle by the cap."""
        return self.journal.cut()

    def file(self, stream: Stream) -> LogWindow:
        return self.journal.file(stream)

    # -- reading ---------------------------------------------------------------------

    def read(
        self,
        since: int,
        limit: int | None = None,
        stream: Stream | None = None,
        upto: int | None = None,
    ) -> tuple[list[Line], int, int]:
        """Lines with ``since < seq < upto``: (lines, dropped, cursor), as
        ``OutputStore.read`` gives them (see ``_replay_lines.read``)."""
        return read(self.journal, since, limit, stream, upto)

    def read_runs(
        self,
        since: int,
        limit: int | None = None,
        stream: Stream | None = None,
        upto: int | None = None,
    ) -> tuple[list[LineRun], int, int]:
        """:meth:`read`'s lines as runs."""
        return read_runs(self.journal, since, limit, stream, upto)

    def read_bytes(
        self, sink: ByteSink, stream: Stream | None = None, upto: int | None = None
    ) -> bool:
        """Add to ``sink`` the lines with ``sink.cursor < seq < upto``, as bytes;
        True when it reached the end (see ``ByteReplay.read_bytes``)."""
        return self._bytes.read_bytes(sink, stream, upto)

    # -- searching --------------------------------------------------------------------

    def stream_end(self, index: int) -> int:
        """How far the journal covers a stream's log file."""
        return self.journal.stream_end(index)

    def record_at(self, index: int, offset: int) -> int | None:
        """The record that completed the line of stream ``index`` whose ``\n``
        is at file ``offset`` (see ``Journal.record_at``)."""
        return self.journal.record_at(index, offset)

    def records_over(self, index: int, start: int, end: int) -> list[int]:
        """The records of stream ``index`` with bytes of lines between file
        offsets ``start`` and ``end`` (see ``Journal.records_over``)."""
        return self.journal.records_over(index, start, end)

    def lines_at(self, k: int, ends: list[int]) -> list[Line] | None:
        """The lines of record ``k`` whose ``\n`` is at the file offsets ``ends``,
        cut straight from the log; None when only a replay gives them exactly."""
        return lines_at(self.journal, k, ends)

    def record_lines(self, k: int) -> list[Line]:
        """The lines record ``k`` completed."""
        return record_lines(self.journal, k)
