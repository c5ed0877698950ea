"""Reading a proc's earlier lines back from its log, above the pane's first line, without Qt.

An output pane holds the newest ``maxLines`` lines of a proc; the supervisor's
ring holds its newest ``ring_lines``, and the log files on disk keep the rest
(``Supervisor.read`` reads them back by seq). When the view reaches its top,
:class:`EarlierLines` reads the :data:`EARLIER_CHUNK` lines before the oldest
one held (``read_runs(since=…, limit=…)``) into the
:class:`~procwindow.qt.models._lines.LineBuffer`, before the others
(:meth:`~procwindow.qt.models._lines.LineBuffer.prepend`): they are rows
like the others, with their own seq, time and stream, and the filter applies
to them. Again at the top, the chunk before them, and so on up to line 1.

Memory stays bounded: lines read back are held over ``max_lines``
(``LineBuffer.extra``), up to :data:`HELD_FACTOR` × ``max_lines`` lines in
all. Past that the newest lines go to make room (the view is at its top, far
from them), and the reader's cursor goes back to the newest line kept: the
lines after it wait in the supervisor, counted in ``pendingLines``, as any
line does while the view holds still. Whenever the view follows the tail again
the lines read back go: trimmed from the front, or, if newest lines went, the
tail read again at once, as when the proc was selected (:meth:`release`).
While the view follows, a read never drops the newest lines: it takes what
fits.

The read is done on the GUI thread: a chunk of 10,000 lines took 1–2 ms to
read from the log and 3–4 ms in all, stripped, scanned and held (2 cores,
``benchmarks/bench_earlier.py``; up to ~10 ms on a busy machine), far under
the 50 ms that makes a stutter. A
:class:`~procwindow.control.remote.RemoteSupervisor` answers ``read`` from its
mirror, which fetches the lines before its first in the background (its
backfill) and answers nothing for them until they are there: the read is then
``waiting``, and the model reads again on the proc's next output event, which
the mirror publishes once they arrived.
"""

from __future__ import annotations

from collections.abc import Callable

from procwindow.core import LineRun, ProcwindowError, SupervisorAPI

from ._lines import LineBuffer, Staged
from ._reading import OutputReader

__all__ = ["EARLIER_CHUNK", "HELD_FACTOR", "EarlierLines"]

#: Lines read back from the log at a time (fewer for a pane of fewer ``maxLines``).
EARLIER_CHUNK = 10_000
#: A pane that reads earlier lines back holds at most this many times its
#: ``maxLines``; past it, the newest lines go to make room.
HELD_FACTOR = 2


class EarlierLines:
    """The lines before the oldest one ``buf`` holds, read back on demand (see the
    module's docstring) for the proc ``reader`` reads.

    ``rewound``: newest lines went to make room (following again reads the tail
    anew). ``waiting``: the last read found its lines not there yet (a remote
    mirror fetches them); read again on the proc's next output event.
    """

    def __init__(self, supervisor: SupervisorAPI, reader: OutputReader, buf: LineBuffer) -> None:
        self._sup = supervisor
        self._reader = reader
        self._buf = buf
        self.rewound = False
        self.waiting = False
        # Below the oldest line held (its seq, first), the lines down to ``reach``
        # (exclusive) were read back already, or are gone for good (cut by log_cap).
        self._examined = (0, 0)

    def reset(self) -> None:
        """Another proc, or its tail read anew: nothing read back."""
        self.rewound = self.waiting = False
        self._examined = (0, 0)

    def _first(self) -> int:
        """The seq of the oldest line held (with none, the one after the cursor)."""
        return self._buf.first_seq() if self._buf.held_count else self._reader.cursor + 1

    @property
    def reach(self) -> int:
        """The newest seq before the oldest line held that was not read back: lines
        1 to ``reach`` may be (0: none is left)."""
        first = self._first()
        known, reach = self._examined
        return reach if known == first else first - 1

    @property
    def available(self) -> bool:
        """True while some earlier line may be read back."""
        return self._reader.proc_id >= 0 and self.reach > 0

    def _cap(self) -> int:
        return HELD_FACTOR * self._buf.max_lines

    def load(self, dropped: Callable[[], None]) -> Staged | None:
        """Read the next chunk back; the lines to put before the others
        (``LineBuffer.prepend``, once views are told how many rows come), or None
        if they make no row (held already then) or none came (none is left, or
        not there yet). If the newest lines must go to make room, they go first,
        and ``dropped()`` is called then (the model tells its views)."""
        read = self._read()
        if read is None:
            return None
        since, runs = read
        buf = self._buf
        count = sum(len(run.texts) for run in runs)
        over = buf.held_count + count - self._cap()
        if over > 0:
            buf.drop_back(over)
            self.rewound = True
            # The lines after the newest held are not read: they wait in the supervisor.
            self._reader.rewind(buf.last_seq())
            dropped()
        first = runs[0].first if runs else self._first()
        self._examined = (first, since)
        buf.extra = max(0, min(buf.held_count + count, self._cap()) - buf.max_lines)
        staged = buf.stage(runs)
        if staged.rows:
            return staged
        buf.prepend(staged)
        return None

    def _read(self) -> tuple[int, list[LineRun]] | None:
        """The seq the next chunk reads after and its lines, oldest first (none: all
        of them were cut), or None when none can be read now (``waiting`` says if
        they are on their way)."""
        reach, buf, proc_id = self.reach, self._buf, self._reader.proc_id
        chunk = min(EARLIER_CHUNK, buf.max_lines)
        if not self._reader.held:  # following: the newest lines stay, take what fits
            chunk = min(chunk, self._cap() - buf.held_count)
        if proc_id < 0 or reach <= 0 or chunk <= 0:
            return None
        since = max(0, reach - chunk)
        try:
            batch = self._sup.read_runs(proc_id, since=since, limit=reach - since)
        except ProcwindowError:  # forgotten, or the link is down: nothing to read
            return None
        runs = [
            run if run.last <= reach else run._replace(texts=run.texts[: reach - run.first + 1])
            for run in batch.runs
            if run.first <= reach and not run.partial
        ]
        # A read reaches the lines held, unless its lines are not here yet: a
        # remote mirror fetches what is before its first in the background.
        self.waiting = batch.cursor < reach and (not runs or runs[-1].last < reach)
        return None if self.waiting else (since, runs)

    def release(self) -> bool:
        """The view follows the tail again: the lines read back may go. True if the
        tail must be read anew (newest lines went to make room); otherwise the
        buffer trims them (``extra`` is 0 again)."""
        self._buf.extra = 0
        self.waiting = False
        return self.rewound
