"""One beat for every process table: a single timer that ticks once a second, shared.

Each :class:`~procwindow.qt.ProcModel` refreshes the runtimes of its running
rows, the countdowns of workspace restarts and the CPU and memory of the rows
on screen once a second. A window of several tables (the main window's
overview, a ProcWindow or two) used to run a timer each, at phases of their
own. They share one :class:`Ticker` now (:func:`shared_ticker`), for three
reasons: one wake-up a second instead of one per table; every table's
runtimes turn over in the same frame; and a proc two tables show is sampled
once per tick. ``Supervisor.stats`` measures CPU since the previous call for
the same processes, so of two tables sampling a proc a few milliseconds apart
the second would read the CPU of those milliseconds: :meth:`Ticker.stats_reader`
hands a sample taken this tick by one table to the others.

A tick's ``now`` (wall-clock seconds, taken as it starts) is the time the
models compute what they show from: the countdown of a restart, and, with the
tick's count, how long their memos of runtimes and workspace texts hold.

The timer runs while anyone listens; subscribers are held weakly, so a model
that is collected (or deleted by Qt) without closing is dropped at the next
tick, and the timer stops with the last one.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable
from typing import Protocol

import shiboken6
from PySide6.QtCore import QObject, QTimer

from procwindow.core import ProcStats

__all__ = ["TICK_INTERVAL_MS", "Ticker", "shared_ticker"]

#: Milliseconds between two ticks of the shared ticker.
TICK_INTERVAL_MS = 1000


class _Sampled(Protocol):
    def stats(self, proc_id: int) -> ProcStats: ...


class Ticker:
    """A timer that calls its subscribers every ``interval_ms`` while there are any.

    ``Ticker(None)`` never ticks by itself: :meth:`tick` ticks it (tests and
    benchmarks drive their models so). ``now`` is the wall-clock time at the
    last tick (or when the ticker was made); ``count`` the ticks so far.
    """

    def __init__(self, interval_ms: int | None = TICK_INTERVAL_MS) -> None:
        self._interval_ms = interval_ms
        self._timer: QTimer | None = None
        if interval_ms is not None:
            self._timer = QTimer()
            self._timer.setInterval(interval_ms)
            self._timer.timeout.connect(self.tick)
        self._beats: list[weakref.WeakMethod[Callable[[], None]]] = []
        # (supervisor, proc id) -> (who sampled it this tick, what it read)
        self._samples: dict[tuple[int, int], tuple[object, ProcStats]] = {}
        self.now = time.time()
        self.count = 0

    @property
    def interval(self) -> float:
        """Seconds between two ticks (1.0 for a ticker that ticks by hand)."""
        return (self._interval_ms if self._interval_ms is not None else 1000) / 1000

    def subscribe(self, beat: Callable[[], None]) -> None:
        """Call ``beat`` (a bound method, held weakly) at every tick from now on."""
        if not self.has(beat):
            self._beats.append(weakref.WeakMethod(beat))
        if self._timer is not None and not self._timer.isActive():
            self._timer.start()

    def unsubscribe(self, beat: Callable[[], None]) -> None:
        """Stop calling ``beat``; the timer stops with the last subscriber."""
        self._beats = [w for w in self._beats if w() not in (None, beat)]
        if not self._beats:
            self._stop()

    def has(self, beat: Callable[[], None]) -> bool:
        """True while ``beat`` is called at every tick."""
        return any(w() == beat for w in self._beats)

    def tick(self) -> None:
        """A tick: take ``now``, forget this tick's samples, call every subscriber."""
        self.now = time.time()
        self.count += 1
        self._samples.clear()
        beats = [beat for w in self._beats if (beat := _alive(w())) is not None]
        if len(beats) != len(self._beats):  # some were collected, or deleted by Qt
            self._beats = [w for w in self._beats if _alive(w()) is not None]
        if not beats:
            self._stop()
        for beat in beats:
            beat()

    def stats_reader(self, supervisor: _Sampled, owner: object) -> Callable[[int], ProcStats]:
        """``supervisor.stats`` for ``owner`` (any object that stays the same for
        one reader), answered from a sample another owner took this tick."""
        where = id(supervisor)
        samples = self._samples

        def read(proc_id: int) -> ProcStats:
            key = (where, proc_id)
            taken = samples.get(key)
            if taken is not None and taken[0] is not owner:
                return taken[1]
            sample = supervisor.stats(proc_id)
            samples[key] = (owner, sample)
            return sample

        return read

    def _stop(self) -> None:
        if self._timer is not None:
            self._timer.stop()
        self._samples.clear()


def _alive(beat: Callable[[], None] | None) -> Callable[[], None] | None:
    """``beat`` if it can still be called: not collected, and its QObject (a
    model deleted by its parent or by ``deleteLater``) not deleted; else None."""
    owner = getattr(beat, "__self__", None)
    return None if isinstance(owner, QObject) and not shiboken6.isValid(owner) else beat


_shared: Ticker | None = None


def shared_ticker() -> Ticker:
    """The ticker every ProcModel shares unless given one (made on first use)."""
    global _shared
    if _shared is None:
        _shared = Ticker()
    return _shared
