"""Exited leaders kept as zombies while their process group has members.

A proc's first process leads its own process group, whose id is its pid. Once
that process is reaped and the group's last member is gone, the number is free:
a new process may get it and make it its own group's id, and a ``killpg`` sent
then, on a look at /proc taken a moment before, would reach a stranger's group.
So a leader's exit is taken with ``WNOWAIT`` (the status is read, the zombie
stays: ``Child.held``), and the zombie is reaped only once no other live
process is in its group. Until then its pid, and so the group id, cannot be
reused, and ``killpg`` to it reaches our processes only, however fast they
fork. A held zombie costs an entry in the process table, nothing more.

A leader whose group is empty when it exits (the usual case) is reaped at once
when its cgroup (``_cgroup``) is empty, else on the next turn of the loop, after
one fresh look at /proc shared by every exit of that turn. One whose group lives
on (a daemon it started in the background) is looked at again every
:data:`RECHECK` seconds, and every held zombie is reaped when the supervisor
closes.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from ._child import Child
from ._signals import TreeSignals
from ._soonest import Soonest

__all__ = ["RECHECK", "Leaders"]

log = logging.getLogger("procwindow")

#: Seconds between looks at the groups of held leaders that still have members.
RECHECK = 0.5


class Leaders:
    """The held zombies of one supervisor's exited leaders; ``reaped`` is called
    for each as it is reaped (its pid may be reused from then on)."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        signals: TreeSignals,
        reaped: Callable[[Child], None],
    ) -> None:
        self._loop = loop
        self._signals = signals
        self._reaped = reaped
        #: Held children, with the monotonic time each was held.
        self._held: dict[Child, float] = {}
        self._timer = Soonest(loop, self.check)

    def __len__(self) -> int:
        return len(self._held)

    def hold(self, child: Child) -> None:
        """``child``'s exit was just taken and its zombie kept: reap it once
        its group has no other live member."""
        if not child.held:
            return
        self._held[child] = time.monotonic()
        cgroups = self._signals.cgroups
        if cgroups is not None and cgroups.whole(child.id) and cgroups.members(child.id) == []:
            # Its cgroup holds its whole tree, so its whole group: nothing
            # lives, and a file read tells so without a look at all of /proc.
            # (Not for a leader that exited before it was moved: what it left
            # may be outside; the look at /proc decides then.)
            self.release(child)
            return
        self._timer.within(0.0)

    def check(self) -> None:
        """Reap every held leader whose group is empty, on one look at /proc
        taken after the newest was held."""
        if not self._held:
            return
        # A look taken after the newest was held (a member may have been
        # forked just before its leader exited), and not older than a recheck.
        newest = max(self._held.values())
        snap = self._signals.snap(max(0.0, min(time.monotonic() - newest, RECHECK / 2)))
        if snap is None:  # out of fds: look again later
            self._timer.within(RECHECK)
            return
        live_groups = {info.pgrp for info in snap.info.values() if info.state not in ("Z", "X")}
        for child in list(self._held):
            if child.proc.pgid not in live_groups:
                self.release(child)
        if self._held:
            self._timer.within(RECHECK)

    def release(self, child: Child) -> None:
        """Reap ``child``'s held zombie now, whatever is left of its group."""
        if self._held.pop(child, None) is None:
            return
        try:
            child.reap_held()
        finally:
            self._reaped(child)

    def close(self) -> None:
        """Reap every held zombie (the supervisor closes: what was left of
        their groups has been stopped, or is the watchdog's now)."""
        self._timer.cancel()
        for child in list(self._held):
            try:
                self.release(child)
            except Exception:
                log.exception("proc %d: reaping its process failed", child.id)
