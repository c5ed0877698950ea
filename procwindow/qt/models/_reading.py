"""Reading one proc's output from the supervisor into a line buffer, by cursor, without Qt.

:class:`OutputReader` is what :class:`~procwindow.qt.models.OutputModel` reads
with: it keeps the cursor (the seq read up to), reads
``Supervisor.read_runs(since=cursor)`` into a
:class:`~procwindow.qt.models._lines.LineBuffer`, holds the line the proc has
begun and not ended (``partial``), and says when nothing more will come. How
many lines a frame reads, and when, is the model's to decide (its frame timer);
the reader measures what a line costs to read (``line_cost``) for it.
"""

from __future__ import annotations

import os
import time
from typing import NamedTuple

from procwindow.core import Line, Proc, ProcNotFound, ProcwindowError, Stream, SupervisorAPI

from .. import ansi
from ._lines import LineBuffer

__all__ = ["LogFacts", "OutputReader"]

#: Lines a read must take before its time per line counts in ``line_cost``.
_COSTED = 100


class LogFacts(NamedTuple):
    """A proc's log files that hold something (stdout's first), and the lines and
    bytes the disk cap cut from their middle (each cut marked in the file)."""

    files: list[str]
    cut_lines: int = 0
    cut_bytes: int = 0
    #: The server that keeps them, when they are not on this side (an attached
    #: supervisor's ``where``): its ``out`` reads them.
    kept_by: str = ""


def _has_bytes(path: str) -> bool:
    try:
        return os.stat(path).st_size > 0
    except OSError:
        return False


class OutputReader:
    """Reads the lines of proc ``proc_id`` into ``buf`` (see the module's docstring).

    ``reading`` stays true while the proc may still produce lines: it turns
    false at the end of its output (both pipes closed and all read) or once
    the supervisor no longer knows it (dismissed); what was read stays.
    ``backlog``: the last read hit its limit (more lines wait). ``newest``:
    the proc's newest seq at the last read. ``held``: read nothing for now (a
    person reads what is there); ``pending`` counts the lines written since,
    as the proc's events tell (``hear``).
    """

    def __init__(self, supervisor: SupervisorAPI, buf: LineBuffer) -> None:
        self._sup = supervisor
        self._buf = buf
        self.proc_id = -1
        self.cursor = 0  # the supervisor seq read up to
        self.reading = False  # the proc may still produce lines
        self.backlog = False  # the last read hit its limit
        self.line_cost = 0.0  # seconds a line took to read (a running average)
        self.newest = 0  # the proc's newest seq at the last read
        self.heard = 0  # the proc's newest seq its events told of
        self.held = False
        self.partial: Line | None = None  # the line begun and not ended

    def start(self, proc: Proc | None) -> None:
        """Read ``proc`` from now on (None: nothing), from the newest ``max_lines``
        lines it has."""
        self.proc_id = proc.id if proc is not None else -1
        self.partial = None
        self.cursor = self.newest = self.heard = 0
        self.reading = self.backlog = self.held = False
        if proc is not None:
            self.reading = True
            self.cursor = max(0, proc.last_seq - self._buf.max_lines)

    def rewind(self, seq: int) -> None:
        """The lines after ``seq`` went from the buffer (to make room for earlier
        ones): read on from there, and count those written since as pending."""
        self.heard = max(self.heard, self.newest)
        self.cursor = seq
        self.partial = None
        self.reading = True

    def stop(self) -> None:
        """Read no more (the lines read stay)."""
        self.reading = False
        self.partial = None

    @property
    def earlier_lines(self) -> int:
        """Lines of the proc up to the newest one held that are not held (seq counts
        every line from 1). Not only those before the oldest held: a reader that
        falls behind a flood skips ahead to the newest ``max_lines``, and what it
        held before stays, so the lines held may have gaps."""
        buf = self._buf
        return buf.last_seq() - buf.held_count if buf.held_count else self.cursor

    @property
    def partial_text(self) -> str:
        """The unfinished line, ANSI stripped ("" for none)."""
        return "" if self.partial is None else ansi.strip_ansi(self.partial.text)

    @property
    def partial_is_stderr(self) -> bool:
        return self.partial is not None and self.partial.stream is Stream.STDERR

    @property
    def pending(self) -> int:
        """While held: lines the proc wrote that are not read yet (0 otherwise)."""
        return max(0, self.heard - self.cursor) if self.held and self.reading else 0

    def hear(self, newest: int) -> bool:
        """The proc's events tell of lines up to seq ``newest``; True if ``pending`` grew."""
        grew = newest > self.heard
        self.heard = max(self.heard, newest)
        return grew and self.held

    def read(self, limit: int | None) -> int:
        """Take up to ``limit`` new lines (None: all) into the buffer, not rows yet;
        how many (none while held)."""
        self.backlog = False
        if not self.reading or self.held:
            return 0
        started = time.perf_counter()
        try:
            newest = self.newest = self._sup.get(self.proc_id).last_seq
            if newest - self.cursor > self._buf.max_lines:
                # Lines this far behind would be trimmed as soon as they came in:
                # skip to the newest maxLines (the log file keeps everything).
                self.cursor = newest - self._buf.max_lines
            batch = self._sup.read_runs(self.proc_id, since=self.cursor, limit=limit, partial=True)
        except ProcNotFound:  # dismissed: what we hold stays on screen
            self.stop()
            return 0
        runs = batch.runs
        # Unfinished lines come last (a run each), and only in a read that reached
        # the end; the cursor stays before them: the next read has them again, or
        # their end.
        complete = len(runs)
        while complete and runs[complete - 1].partial:
            complete -= 1
        self.partial = next(runs[-1].lines()) if complete < len(runs) else None
        if complete < len(runs):
            runs = runs[:complete]
        self._buf.extend_runs(runs)
        got = sum(len(run.texts) for run in runs)
        if got >= _COSTED:
            cost = (time.perf_counter() - started) / got
            self.line_cost = cost if not self.line_cost else 0.8 * self.line_cost + 0.2 * cost
        self.cursor = batch.cursor
        self.backlog = limit is not None and got >= limit
        if batch.eof:  # both pipes closed and all read: nothing more will come
            self.stop()
        return got

    def logs(self) -> LogFacts:
        """The proc's :class:`LogFacts` (none for no proc, or one no longer known)."""
        if self.proc_id < 0:
            return LogFacts([])
        try:
            p = self._sup.get(self.proc_id)
        except ProcwindowError:
            return LogFacts([])
        if self._sup.where:  # attached: the logs are the server's, read through it
            return LogFacts([], p.cut_lines, p.cut_bytes, kept_by=self._sup.where)
        try:
            paths = [self._sup.log_path(self.proc_id, stream) for stream in Stream]
        except ProcwindowError:
            return LogFacts([])
        return LogFacts([path for path in paths if _has_bytes(path)], p.cut_lines, p.cut_bytes)
