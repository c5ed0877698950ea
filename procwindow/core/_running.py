"""Running: the parts of a supervisor that exist once it is bound to its event
loop (the capture of pipes, tree signals, the sweep, the starter, stopping and
launching), wired to what the supervisor owns from the start; and their
release when it closes."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from typing import TYPE_CHECKING, Protocol

from ._archive import reclaim_rings
from ._capture import Capture
from ._cgroup import Cgroups
from ._launch import Launcher
from ._leaders import Leaders
from ._output import OutputStore
from ._reaper import SWEEP_INTERVAL, Sweeper, own_child
from ._signals import TreeSignals
from ._starter import Starter
from ._statefile import recover_leftovers
from ._stopping import Stopping
from ._types import EventKind

if TYPE_CHECKING:
    from ._agent import Procs
    from ._archive import Archive
    from ._child import Child
    from ._events import EventHub
    from ._output import ReadBuffers, RingBudget
    from ._statefile import StateFile
    from ._types import Clock, Line, Stream
    from ._watchdog import Watchdog

__all__ = ["Owner", "Running", "release"]

log = logging.getLogger("procwindow")

#: A listed proc's ``log_error`` once its output was pruned from disk.
PRUNED = (
    "its logs were deleted to keep history within history_bytes and history_age;"
    " the lines still in memory remain"
)


class Owner(Protocol):
    """What the parts bound to the loop need of their supervisor (a
    ``Supervisor``): its settings, what it owns from the start, whether it is
    closing, and its procs as readiness checks read them."""

    ring_lines: int
    ring_bytes: int
    graceful_timeout: float
    _token: str
    _clock: Clock
    _archive: Archive
    _events: EventHub
    _children: dict[int, Child]
    _budget: RingBudget
    _buffers: ReadBuffers
    _watchdog: Watchdog | None
    _statefile: StateFile
    _want_subreaper: bool
    _closing: bool
    _closed: bool

    def _procs(self) -> Procs: ...


class Running:
    """The parts of ``sup`` bound to ``loop``. Made at the first use of the
    supervisor on a running loop, after stopping what dead supervisors left."""

    def __init__(self, sup: Owner, loop: asyncio.AbstractEventLoop) -> None:
        # Children of a supervisor that died with its watchdog: stop them now.
        try:
            recover_leftovers()
        except OSError as exc:
            log.warning("cannot look for leftovers of dead supervisors: %s", exc)
        self.loop = loop
        self._sup = sup
        self._prune_timer: asyncio.TimerHandle | None = None
        self.devnull = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        try:
            self.cgroups = Cgroups.make(sup._token)
            if self.cgroups is not None and sup._watchdog is not None:
                sup._watchdog.cgroups = self.cgroups.base
            self.signals = TreeSignals(sup._token, self._sweep_soon, self.cgroups)
        except BaseException:
            os.close(self.devnull)
            raise
        self.capture = Capture(
            loop,
            self._announce_output,
            lambda: sup._events.listening,
            sup._clock.time,
            self._output_closed,
            lambda: sup._budget.used > sup._budget.limit,
            self._reclaim,
            self._announce_partial,
            sup._buffers,
        )
        self.sweeper = Sweeper(
            loop,
            sup._children,
            self.signals,
            sup._statefile,
            sup._watchdog,
            lambda: sup._archive.seen(sup._clock.time()),
        )
        self.starter = Starter(
            loop,
            sup._archive,
            sup._token,
            self.devnull,
            lambda: sup._closing or sup._closed,
            self.cgroups,
        )
        self.stopping = Stopping(
            loop,
            self.signals,
            self.sweeper,
            self.capture,
            sup._children,
            sup._archive,
            sup._events,
            lambda: sup.graceful_timeout,
            lambda: sup._closing,
        )
        self.leaders = Leaders(loop, self.signals, lambda child: self.launcher.reaped(child))
        self.launcher = Launcher(
            loop,
            self.starter,
            self.capture,
            self.sweeper,
            sup._children,
            sup._archive,
            sup._events,
            sup._clock,
            [guard for guard in (sup._watchdog, sup._statefile) if guard is not None],
            lambda: OutputStore(
                sup.ring_lines, sup.ring_bytes, budget=sup._budget, buffers=sup._buffers
            ),
            self.stopping.time_out,
            sup._procs,
            self.leaders,
        )
        # History writes (spawns' rows, exits and their output counters) are
        # committed together, a moment after the first, off each spawn's path.
        sup._archive.defer_writes(loop.call_later)
        if sup._want_subreaper:
            self.sweeper.become_subreaper()

    def _announce_output(self, child: Child, stream: Stream, first: int, last: int) -> None:
        self._sup._events.publish(
            child.proc, EventKind.OUTPUT, stream=stream, first_seq=first, last_seq=last
        )

    def _announce_partial(self, child: Child, line: Line) -> None:
        self._sup._events.publish(
            child.proc, EventKind.PARTIAL, stream=line.stream, first_seq=line.seq, text=line.text
        )

    def _output_closed(self, child: Child) -> None:
        """Both pipes of a child closed: its output is complete on disk (and
        its cgroup goes if nothing of its tree is left in it)."""
        self._sup._archive.output(child)
        self._prune()
        if self.cgroups is not None:
            self.cgroups.tidy(child.id)

    def _prune(self) -> None:
        """Keep history within ``history_bytes`` and ``history_age``: the output
        of finished procs goes, oldest first, whether or not they are still
        listed (their rows stay, their ``log_error`` says so, and the lines
        still in memory stay readable). Within PRUNE_INTERVAL of the last
        prune, once more when the interval is over."""
        sup = self._sup
        busy = {i for i, c in sup._children.items() if c.open_streams or c.proc.exit is None}
        gone = sup._archive.prune(busy, sup._clock.time())
        if gone is None:
            if self._prune_timer is None:
                self._prune_timer = self.loop.call_later(
                    sup._archive.prune_wait(), self._prune_again
                )
            return
        for proc_id in gone:
            child = sup._children.get(proc_id)
            if child is not None:
                child.disk.pruned(PRUNED)

    def _prune_again(self) -> None:
        self._prune_timer = None
        self._prune()

    def _reclaim(self) -> None:
        """All rings together hold more than ``ring_budget``: finished procs whose
        lines are all on disk give theirs back, then the biggest rings shrink."""
        reclaim_rings(self._sup._children.values(), self._sup._budget)

    def _sweep_soon(self) -> None:
        """A tree could not be seen (fd limit): sweep for it later."""
        self.sweeper.schedule(SWEEP_INTERVAL)

    def release(self) -> None:
        """Let every child and every part go: timers, readiness checks, stdin,
        pipes and pidfds closed, the sweep and the spawn thread stopped."""
        children = self._sup._children.values()
        for child in children:
            child.cancel_timers()
            if child.ready_task is not None:
                child.ready_task.cancel()
            with contextlib.suppress(Exception):
                child.close_stdin(self.loop)
                self.capture.close(child)
        if self._prune_timer is not None:
            self._prune_timer.cancel()
            self._prune_timer = None
        self.sweeper.close()
        self.capture.flush()
        self.signals.close()
        self.starter.close()
        if self.cgroups is not None:  # what is left in them is killed, and they go
            self.cgroups.close()
        self.leaders.close()
        os.close(self.devnull)
        for child in children:
            # A child that survived SIGKILL (uninterruptible sleep): stop
            # watching it; the watchdog, not told goodbye, kills it.
            if child.close_pidfd(self.loop):
                own_child(child.os_pid, None)


def release(sup: Owner, run: Running | None, clean: bool) -> None:
    """Free every resource of ``sup`` (and of ``run``, its parts bound to the
    loop, if it has them); stand the watchdog and the state file down only if
    ``clean``: otherwise the watchdog kills whatever remains."""
    if run is not None:
        run.release()
    sup._events.close()
    for guard in (sup._watchdog, sup._statefile):
        if guard is not None:
            if clean:
                guard.close()
            else:
                guard.abandon()
    for child in sup._children.values():
        with contextlib.suppress(Exception):
            sup._archive.output(child)
    sup._archive.close()
    sup._closed = True
