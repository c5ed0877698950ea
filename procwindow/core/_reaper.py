"""Leftovers and orphans: the sweep that kills what dismissed procs left behind
and keeps the guards current, and the subreaper's reaping of orphans."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Mapping

from . import _linux
from ._child import Child
from ._signals import TREE_POLL, TreeSignals
from ._soonest import Soonest
from ._statefile import StateFile
from ._tree import FRESH_TTL
from ._watchdog import Watchdog

__all__ = [
    "SPAWNING",
    "SWEEP_INTERVAL",
    "Sweeper",
    "own_child",
    "own_child_pending",
    "reap_orphans",
]

log = logging.getLogger("procwindow")

#: How often (seconds) leftovers of dismissed procs are looked for.
SWEEP_INTERVAL = 1.0
#: How often (seconds) a subreaper looks for orphans to reap; much more often
#: while orphans keep dying (a process that keeps re-forking).
REAP_INTERVAL = 0.1
_REAP_BUSY = 0.01

_subreaper_users = 0
#: Process-wide, across supervisors: the children each reaps itself (through
#: its pidfd), with the call that does it. Orphan reaping never takes these.
_OWN_CHILDREN: dict[int, Callable[[], None]] = {}


#: Held while a child is started and registered (in a spawn thread): orphan
#: reaping waits, so that a child that exits at once is never taken for an orphan.
SPAWNING = threading.Lock()


def _not_yet() -> None:
    """The owner of a child whose supervisor has not taken it in yet."""


def own_child(pid: int, reap: Callable[[], None] | None) -> None:
    """Register (``reap``) or drop (None) a child that its supervisor reaps itself."""
    if reap is None:
        _OWN_CHILDREN.pop(pid, None)
    else:
        _OWN_CHILDREN[pid] = reap


def reap_orphans() -> int:
    """Reap every zombie child of this process; return how many were orphans.

    Only for a subreaper that owns its process: a zombie that is one of our
    procs (or a watchdog) is handed to its owner, which records its exit; any
    other is an orphan re-parented here, reaped by its own pid. ``WNOWAIT``
    peeks without reaping, so the owner still gets its status.
    """
    if not SPAWNING.acquire(blocking=False):
        return 0  # a child is being started: the next round reaps
    try:
        return _reap_orphans()
    finally:
        SPAWNING.release()


def own_child_pending(pid: int) -> None:
    """Register a child just started, whose supervisor takes it in soon."""
    _OWN_CHILDREN.setdefault(pid, _not_yet)


def _reap_orphans() -> int:
    reaped = 0
    last = 0
    while True:
        try:
            res = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return reaped
        if res is None:
            return reaped
        pid = res.si_pid
        owner = _OWN_CHILDREN.get(pid)
        if owner is not None:
            if pid == last:
                # Its owner keeps it (a leader's zombie held while its group
                # lives) or has not taken it in yet: waitid(P_ALL) would name
                # it again and again, so reap the orphans behind it by pid.
                return reaped + _reap_listed()
            last = pid
            owner()
            continue
        with contextlib.suppress(ChildProcessError):
            os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG)
        reaped += 1


def _reap_listed() -> int:
    """Reap the exited orphans among this process's children as /proc lists
    them (every thread's ``children``), passing over our own; how many."""
    reaped = 0
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return 0
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/children", "rb") as f:
                pids = [int(word) for word in f.read().split()]
        except (OSError, ValueError):  # a thread that ended, or no fd to spare
            continue
        for pid in pids:
            if pid in _OWN_CHILDREN:
                continue
            try:
                if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG) is not None:
                    reaped += 1
            except ChildProcessError:
                pass
    return reaped


class Sweeper:
    """Runs on the loop while a supervisor is open.

    The sweep kills whatever carries the marker of a dismissed proc (a daemon
    that let go of the pipes) and the trees that could not be seen before (fd
    limit), while any are found; it keeps the watchdog and the state file up
    to date (a restarted watchdog is told what runs) while any child runs.
    As subreaper it also reaps every orphan re-parented to this process.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        children: Mapping[int, Child],
        signals: TreeSignals,
        statefile: StateFile,
        watchdog: Watchdog | None,
        tick: Callable[[], None] | None = None,
    ) -> None:
        self._loop = loop
        self._tick = tick
        self._children = children
        self._signals = signals
        self._statefile = statefile
        self._watchdog = watchdog
        self._sweeps = Soonest(loop, self._sweep)
        self._scan_due = False  # the next sweep reads /proc
        self._reap_handle: asyncio.TimerHandle | None = None
        self._subreaper = False
        self._closed = False

    # -- subreaper ------------------------------------------------------------------

    def become_subreaper(self) -> bool:
        """Reap orphans from now on (process-wide, shared with other supervisors)."""
        global _subreaper_users
        if _subreaper_users or _linux.set_subreaper(True):
            _subreaper_users += 1
            self._subreaper = True
            self._reap_handle = self._loop.call_later(REAP_INTERVAL, self._reap_tick)
        return self._subreaper

    @property
    def subreaper(self) -> bool:
        return self._subreaper

    def _reap_tick(self) -> None:
        self._reap_handle = None
        if self._closed:
            return
        try:
            reaped = reap_orphans()
        except Exception:
            log.exception("reaping orphans failed")
            reaped = 0
        delay = _REAP_BUSY if reaped else REAP_INTERVAL
        self._reap_handle = self._loop.call_later(delay, self._reap_tick)

    # -- the sweep --------------------------------------------------------------------

    def schedule(self, delay: float, *, scan: bool = True) -> None:
        """Sweep in ``delay`` seconds (or sooner, if one is due sooner). ``scan``:
        that sweep reads /proc for leftovers; without it, it only checks on the
        watchdog and the state file, which costs next to nothing."""
        if self._closed:
            return
        self._scan_due = self._scan_due or scan
        self._sweeps.within(delay)

    def _sweep(self) -> None:
        if self._scan_due:
            self._scan_due = False
            try:
                self._scan_due = self._sweep_once() or self._signals.retry_pending
            except Exception:  # a sweep must never take the loop down
                log.exception("leftover sweep failed")
                self._scan_due = True
        try:
            delivered = self._statefile.flush()
            if self._watchdog is not None:
                delivered = self._watchdog.flush() and delivered
        except Exception:
            log.exception("keeping the watchdog up to date failed")
            delivered = False
        if self._tick is not None:
            try:
                self._tick()
            except Exception:
                log.exception("the sweep's tick failed")
        running = any(c.unreaped for c in self._children.values())
        if self._scan_due or not delivered or running:
            self.schedule(SWEEP_INTERVAL, scan=self._scan_due)

    def _sweep_once(self) -> bool:
        """One sweep; True if it found something to kill (or could not look)."""
        snap = self._signals.snap(FRESH_TTL)
        if snap is None:
            return True
        found = False
        for proc_id, pids in snap.marked.items():
            if proc_id in self._children:
                continue
            for pid in pids:  # a leftover of a dismissed proc
                try:
                    found = (
                        _linux.signal_if_same(pid, snap.info[pid].start, signal.SIGKILL) or found
                    )
                except OSError:
                    return True
        self._signals.retry()
        return found

    async def wait_gone(self, deadline: float) -> bool:
        """After the final kill: wait (bounded) until no process carries our
        marker; True if none does, False if some do or /proc cannot be read."""
        while True:
            if self._subreaper:
                reap_orphans()
            snap = self._signals.snap(FRESH_TTL)
            if snap is not None and not snap.marked:
                return True
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(TREE_POLL)

    def close(self) -> None:
        """Stop sweeping and reaping; reap the orphans that came before."""
        self._closed = True
        self._sweeps.cancel()
        if self._reap_handle is not None:
            self._reap_handle.cancel()
            self._reap_handle = None
        if self._subreaper:
            global _subreaper_users
            _subreaper_users -= 1
            if _subreaper_users == 0:
                _linux.set_subreaper(False)
            self._subreaper = False
            # Orphans re-parented before that are still ours to reap.
            with contextlib.suppress(Exception):
                reap_orphans()
