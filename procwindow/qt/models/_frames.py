"""The frame clock of an output pane: when to read the supervisor, how much, when to show.

:class:`FrameLoop` paces :class:`~procwindow.qt.models.OutputModel`. Output
events (at once after a quiet spell, else one per stream every 50 ms) only ask
for a frame (:meth:`FrameLoop.schedule`, ``FRAME_MS`` later); a frame reads
``FRAME_READ_MIN`` to ``FRAME_READ_LIMIT`` lines (as many as fit
``FRAME_READ_BUDGET``, by what a line cost lately), up to ``FRAME_READS`` such
reads, each in its own turn of the event loop, while it catches up, and then, in
the next turn (so that what waits runs between them), has the model change its
rows: at most once per frame (``FRAME_MS``; ``FLOOD_FRAME_MS`` while lines come
much faster than the pane shows them), going on frame after frame while lines
keep coming.

The loop decides when; the model does the work, through the three steps it
hands the loop: ``begin`` (a frame starts), ``read(limit)`` (take up to
``limit`` lines into the buffer; how many) and ``show`` (change the rows).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, QTimer

from .._support import Later
from ._lines import LineBuffer
from ._reading import OutputReader

__all__ = [
    "FLOOD_FRAME_MS",
    "FRAME_MS",
    "FRAME_READS",
    "FRAME_READ_BUDGET",
    "FRAME_READ_LIMIT",
    "FRAME_READ_MIN",
    "FrameLoop",
]

#: Milliseconds from the end of one append to the next: at most one change of
#: the rows per frame.
FRAME_MS = 16
#: The same while lines come much faster than the pane can show them (more than
#: FRAME_READS reads' worth since the last frame): a flood is shown at ~30
#: frames a second, and the loop keeps more time to capture it.
FLOOD_FRAME_MS = 33
#: Lines read from the supervisor per frame, at most; a faster producer is
#: caught up over the next frames, so a frame's work stays bounded.
FRAME_READ_LIMIT = 2_000
#: Lines read per frame at least, whatever they cost.
FRAME_READ_MIN = 1_000
#: Seconds a frame's read should take: between the two limits, a frame reads
#: as many lines as took this long in the frames before (a line costs ~2 µs,
#: more on a busy machine).
FRAME_READ_BUDGET = 0.004
#: Reads a frame makes, at most, each in its own turn of the loop, while it
#: catches up with a backlog whose producer has slowed down (fewer lines came
#: since the last frame than one read takes): a burst is shown sooner. A flood
#: gets one read a frame: what it adds is skipped past anyway.
FRAME_READS = 3


class FrameLoop:
    """Frames for one output model (see the module's docstring).

    ``begin``, ``read`` and ``show`` are the model's steps; they are
    attributes, so that a benchmark can time them.
    """

    def __init__(
        self,
        owner: QObject,
        reader: OutputReader,
        buf: LineBuffer,
        *,
        begin: Callable[[], None],
        read: Callable[[int | None], int],
        show: Callable[[], None],
    ) -> None:
        self._reader = reader
        self._buf = buf
        self.begin, self.read, self.show = begin, read, show
        self.timer = QTimer(owner)
        self.timer.setSingleShot(True)
        self.timer.setTimerType(Qt.TimerType.PreciseTimer)
        self.timer.setInterval(FRAME_MS)
        self.timer.timeout.connect(self.frame)
        self.read_later = Later(owner, self._read_more)
        self._show_later = Later(owner, self._show)
        self._arrived = 0  # lines that came between the last two frames
        self._reads = 0  # reads this frame made
        self._got = 0  # lines this frame's reads took
        self._show_due = False  # read, not shown yet

    def pending(self) -> bool:
        """True while lines wait: a read hit its limit, or some are not scanned yet."""
        return self._reader.backlog or self._buf.pending

    def schedule(self) -> None:
        """A frame soon, if there is anything to read or show (and none is due)."""
        if (self.pending() or self._reader.reading) and not self.timer.isActive():
            self.timer.start(FRAME_MS)

    def stop(self) -> None:
        """No more frames (until the next :meth:`schedule`)."""
        self.timer.stop()
        self.read_later.stop()
        self._show_later.stop()
        self._show_due = False

    def frame(self) -> None:
        """A frame: read (in up to FRAME_READS turns), then show."""
        if self._show_due:  # the last read is not shown yet: come back
            self.timer.start(FRAME_MS)
            return
        self.begin()
        self._got = self._reads = 0
        self._show_due = True
        self._read_more()

    def _read_more(self) -> None:
        newest, limit = self._reader.newest, self._read_limit()
        self._got += self.read(limit)
        if not self._reads:  # what came since the last frame
            self._arrived = self._reader.newest - newest
        self._reads += 1
        if self._reader.backlog and self._reads < FRAME_READS and self._arrived < limit:
            self.read_later.start()
        else:
            self._show_later.start()

    def _show(self) -> None:
        self._show_due = False
        self.show()
        # While lines keep coming, look again next frame rather than wait for
        # the next (coalesced) event: appends stay a frame's worth each.
        if self.pending() or self._got:
            flood = self._arrived > FRAME_READS * FRAME_READ_LIMIT
            self.timer.start(FLOOD_FRAME_MS if flood else FRAME_MS)

    def _read_limit(self) -> int:
        """The lines this frame reads: as many as fit FRAME_READ_BUDGET lately."""
        cost = self._reader.line_cost
        fit = int(FRAME_READ_BUDGET / cost) if cost > 0 else FRAME_READ_LIMIT
        return max(FRAME_READ_MIN, min(FRAME_READ_LIMIT, fit))
