"""The process table's resource sampler: CPU and memory of the rows a view shows.

A :class:`~procwindow.qt.ProcModel` owns one :class:`RowSampler` and drives it
from its 1 s timer, with the ids of the running rows its view shows (the view
reports them, see ``ProcModel.setVisibleRows``). Each sample is
``Supervisor.stats(id)``: the proc's whole live tree, CPU % measured since the
previous call for the same processes (the supervisor keeps their psutil
handles). What a row was sampled keeps a ring of the last
:data:`HISTORY_LENGTH` samples, the sparkline of its CPU and Mem cells; a row
that exits stops being sampled and keeps its ring.

The rings are also kept as :class:`Trace` polylines in (sample number, value)
coordinates, one point appended per sample: a
:class:`~procwindow.qt.sparkline.Sparkline` draws them through a transform, so
nothing is rebuilt per sample or per frame. No QObject here: the model, the
benchmark and the tests drive it alike.

A tick's samples can be taken a few rows at a time (:meth:`RowSampler.sample_in_turns`),
one batch per turn of the event loop: a sample reads several files under /proc
(~0.3 ms, and now and then the scan of /proc that finds each tree), and a window
with rows of busy processes must not hold the loop for all of them at once.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from PySide6.QtCore import QPointF
from PySide6.QtGui import QPolygonF

from procwindow.core import ProcNotFound, ProcStats

__all__ = [
    "CPU_SCALE",
    "GAP",
    "HISTORY_LENGTH",
    "NO_VALUE",
    "SAMPLE_BATCH",
    "Drawing",
    "RowSampler",
    "StatsHistory",
    "Trace",
    "cpu_text",
    "memory_text",
]

#: Samples a row keeps: one minute at one sample a second.
HISTORY_LENGTH = 60
#: The value a ring holds where sampling paused (the row was off screen): the
#: sparkline breaks there instead of joining samples minutes apart.
GAP = math.nan
#: A sample later than this many intervals after the previous one follows a gap.
GAP_AFTER_INTERVALS = 2.5
#: The CPU sparkline's full height, in % of one core, unless a sample went higher.
CPU_SCALE = 100.0
#: A cell's text with no value to show (an exited proc, one never sampled).
NO_VALUE = "–"
#: Procs sampled per turn of the event loop by :meth:`RowSampler.sample_in_turns`.
SAMPLE_BATCH = 4

_SUFFIXES = ("K", "M", "G", "T")

#: What a sparkline draws: runs of (sample number, value) points, the newest
#: sample number (drawn at the right edge), and the value drawn at the top.
Drawing = tuple[list[QPolygonF], float, float]


def cpu_text(percent: float) -> str:
    """A CPU cell: ``"12%"`` (rounded half up, as the window's gauge), ``–`` below 0.

    >>> cpu_text(12.5), cpu_text(0.2), cpu_text(-1.0)
    ('13%', '0%', '–')
    """
    return NO_VALUE if percent < 0 else f"{math.floor(percent + 0.5)}%"


def memory_text(rss: int) -> str:
    """A Mem cell, short as ``top`` prints it (powers of 1024): ``"640K"``, ``"12.3M"``,
    ``"512M"``, ``"1.2G"``; ``–`` below 0.

    >>> memory_text(655360), memory_text(12_900_000), memory_text(536_870_912), memory_text(-1)
    ('640K', '12.3M', '512M', '–')
    """
    if rss < 0:
        return NO_VALUE
    if rss < 1024:
        return f"{rss}B"
    value = rss / 1024
    for suffix in _SUFFIXES:
        if value < 1000 or suffix == _SUFFIXES[-1]:
            if suffix == "K" or value >= 100:
                return f"{value:.0f}{suffix}"
            return f"{value:.1f}{suffix}"
        value /= 1024
    raise AssertionError("unreachable")


def _scaled(values: Iterable[float], top: float) -> list[float]:
    """``values`` divided by ``top`` (0…1); gaps stay gaps."""
    return [v / top for v in values] if top > 0 else [0.0 if v == v else v for v in values]


class Trace:
    """One series of a row as polylines of (sample number, value) points, split at
    gaps, holding the last :data:`HISTORY_LENGTH` sample numbers.

    >>> trace = Trace()
    >>> for value in (1.0, 2.0, 3.0):
    ...     trace.add(value, gap=False)
    >>> trace.last, [run.size() for run in trace.runs]
    (2, [3])
    """

    __slots__ = ("last", "runs")

    def __init__(self) -> None:
        self.runs: list[QPolygonF] = []
        #: The number of the newest sample (-1 before the first).
        self.last = -1

    def add(self, value: float, *, gap: bool) -> None:
        """Append a sample (after a gap: it starts a new run); drop what left the window."""
        self.last += 1
        if gap:
            self.last += 1  # the gap takes a place, as it does in the ring
        if gap or not self.runs:
            self.runs.append(QPolygonF())
        self.runs[-1].append(QPointF(self.last, value))
        first = self.last - HISTORY_LENGTH + 1
        while self.runs[0].first().x() < first:
            self.runs[0].removeFirst()
            if self.runs[0].isEmpty():
                del self.runs[0]


@dataclass(slots=True, eq=False)
class StatsHistory:
    """What one row was sampled: its last values and a ring of the last minute."""

    cpu: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY_LENGTH))
    rss: deque[float] = field(default_factory=lambda: deque(maxlen=HISTORY_LENGTH))
    #: The latest CPU % and RSS (bytes); -1 before the first sample.
    cpu_now: float = -1.0
    rss_now: int = -1
    #: When the ring last took a sample (monotonic seconds; 0: never).
    sampled_at: float = 0.0
    #: Samples taken into the ring (a view repaints when it changes).
    count: int = 0
    #: The rings as polylines, for the sparklines.
    cpu_trace: Trace = field(default_factory=Trace)
    rss_trace: Trace = field(default_factory=Trace)
    # The rings scaled for the sparklines, made when first asked for after a sample.
    _cpu_points: list[float] | None = None
    _rss_points: list[float] | None = None

    def add(self, stats: ProcStats, now: float, interval: float) -> None:
        """Take a sample into the ring (after a gap marker if the last one is old)."""
        gap = bool(self.sampled_at) and now - self.sampled_at > GAP_AFTER_INTERVALS * interval
        if gap:
            self.cpu.append(GAP)
            self.rss.append(GAP)
        self.cpu.append(stats.cpu_percent)
        self.rss.append(float(stats.rss))
        self.cpu_trace.add(stats.cpu_percent, gap=gap)
        self.rss_trace.add(float(stats.rss), gap=gap)
        self.sampled_at = now
        self.count += 1
        self.set_now(stats)

    def set_now(self, stats: ProcStats) -> None:
        """Take the latest values only (a row off screen, refreshed for the sort)."""
        self.cpu_now, self.rss_now = stats.cpu_percent, stats.rss
        self._cpu_points = self._rss_points = None

    def cpu_top(self) -> float:
        """The CPU sparkline's full height: ``max(CPU_SCALE, peak of the ring)``."""
        return max(CPU_SCALE, max((v for v in self.cpu if v == v), default=0.0))

    def rss_top(self) -> float:
        """The memory sparkline's full height: the peak of the ring."""
        return max((v for v in self.rss if v == v), default=0.0)

    def cpu_points(self) -> list[float]:
        """The CPU ring, oldest first, as heights 0…1 of :meth:`cpu_top`."""
        if self._cpu_points is None:
            self._cpu_points = _scaled(self.cpu, self.cpu_top())
        return self._cpu_points

    def rss_points(self) -> list[float]:
        """The memory ring, oldest first, as heights 0…1 of :meth:`rss_top`."""
        if self._rss_points is None:
            self._rss_points = _scaled(self.rss, self.rss_top())
        return self._rss_points


class RowSampler:
    """Samples procs by id and keeps each one's :class:`StatsHistory`.

    ``stats`` is ``Supervisor.stats``. ``calls`` counts the samples taken (the
    tests check that rows off screen cost nothing).

    >>> sampler = RowSampler(sup.stats)  # doctest: +SKIP
    >>> sampler.sample([5, 7])  # doctest: +SKIP
    [5, 7]
    >>> sampler.history(5).cpu_now  # doctest: +SKIP
    0.0
    """

    def __init__(
        self,
        stats: Callable[[int], ProcStats],
        interval: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stats = stats
        self._interval = interval
        self._clock = clock
        self._histories: dict[int, StatsHistory] = {}
        self.calls = 0
        self._round = 0  # the sample_in_turns under way (an older one stops)
        self._next_other = 0  # where sample_others goes on

    def history(self, proc_id: int) -> StatsHistory | None:
        """What ``proc_id`` was sampled, or None if never."""
        return self._histories.get(proc_id)

    def drawing(self, proc_id: int, series: str) -> Drawing | None:
        """The trace of ``proc_id``'s ``series`` (``"cpu"`` or ``"memory"``) as a
        sparkline draws it, or None (never sampled, or no such series)."""
        h = self._histories.get(proc_id)
        if h is None:
            return None
        if series == "cpu":
            return h.cpu_trace.runs, float(h.cpu_trace.last), h.cpu_top()
        if series == "memory":
            return h.rss_trace.runs, float(h.rss_trace.last), h.rss_top()
        return None

    def sample(self, proc_ids: Iterable[int], *, ring: bool = True) -> list[int]:
        """Sample each of ``proc_ids``; return those sampled (a dismissed one is not).

        ``ring=False`` takes only the latest values, not a point of the sparkline
        (a row off screen, kept current for a sort by CPU or memory).
        """
        now = self._clock()
        done: list[int] = []
        for proc_id in proc_ids:
            self.calls += 1
            try:
                stats = self._stats(proc_id)
            except ProcNotFound:  # dismissed; its event is on the way
                continue
            history = self._histories.get(proc_id)
            if history is None:
                history = self._histories[proc_id] = StatsHistory()
            if ring:
                history.add(stats, now, self._interval)
            else:
                history.set_now(stats)
            done.append(proc_id)
        return done

    def sample_in_turns(
        self,
        proc_ids: Iterable[int],
        done: Callable[[list[int]], None],
        later: Callable[[Callable[[], None]], None],
        batch: int = SAMPLE_BATCH,
    ) -> None:
        """:meth:`sample` ``batch`` procs now and each next ``batch`` in a call
        that ``later`` schedules (the next turn of the loop); ``done`` gets the
        ids each batch sampled. A new round (or :meth:`clear`) stops the one
        under way."""
        self._round += 1
        self._sample_batches(self._round, list(proc_ids), batch, done, later)

    def _sample_batches(
        self,
        round_: int,
        proc_ids: list[int],
        batch: int,
        done: Callable[[list[int]], None],
        later: Callable[[Callable[[], None]], None],
    ) -> None:
        if round_ != self._round:
            return
        rest = proc_ids[batch:]
        if rest:
            later(lambda: self._sample_batches(round_, rest, batch, done, later))
        done(self.sample(proc_ids[:batch]))

    def sample_others(self, running: set[int], shown: set[int], count: int) -> bool:
        """Take the latest values (no ring point) of ``count`` of ``running`` not in
        ``shown``, in turn from where the last call stopped; True if any was read."""
        others = sorted(running - shown)
        if not others:
            return False
        start = self._next_other % len(others)
        batch = (others[start:] + others[:start])[:count]
        self._next_other = start + len(batch)
        return bool(self.sample(batch, ring=False))

    def forget(self, proc_ids: Iterable[int]) -> None:
        """Drop the histories of ``proc_ids`` (their rows went away)."""
        for proc_id in proc_ids:
            self._histories.pop(proc_id, None)

    def keep_only(self, proc_ids: set[int]) -> None:
        """Drop the histories of every proc but ``proc_ids`` (the model shows
        another scope: the procs it shares with the last keep theirs); a
        sampling under way stops."""
        for proc_id in self._histories.keys() - proc_ids:
            del self._histories[proc_id]
        self._round += 1

    def __len__(self) -> int:
        return len(self._histories)
