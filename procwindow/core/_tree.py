"""Who belongs to which proc: snapshots of /proc that still work at the fd limit."""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field

from . import _linux

__all__ = ["FD_RESERVE", "FRESH_TTL", "SNAPSHOT_TTL", "Scanner", "Snapshot"]

log = logging.getLogger("procwindow")

#: Spare fds kept for looking at /proc when the process runs out (a scan needs two).
FD_RESERVE = 4
#: How long a snapshot is reused by signals sent in the same burst (seconds).
SNAPSHOT_TTL = 0.1
#: How old a "fresh" snapshot may be: the escalations of 500 procs whose grace
#: ran out together share one scan instead of making 500.
FRESH_TTL = 0.02


@dataclass(slots=True)
class Snapshot:
    """One pass over /proc: who is whose child, who carries our marker."""

    taken: float
    children: dict[int, list[int]] = field(default_factory=dict)
    info: dict[int, _linux.Stat] = field(default_factory=dict)
    marked: dict[int, list[int]] = field(default_factory=dict)

    def descendants(self, pid: int) -> list[int]:
        """Every process below ``pid`` by parentage."""
        out: list[int] = []
        todo = [pid]
        while todo:
            for child in self.children.get(todo.pop(), ()):
                out.append(child)
                todo.append(child)
        return out


def _take_snapshot(needle: bytes, markers: dict[int, tuple[int, int | None]]) -> Snapshot:
    """One pass over /proc. ``markers`` caches {pid: (start time, proc id or None)}
    across passes: a process's marker is read once, not on every pass."""
    snap = Snapshot(time.monotonic())
    me = os.getpid()
    seen: dict[int, tuple[int, int | None]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        fields = _linux.stat_fields(pid)
        if fields is None:
            continue
        state, ppid, _pgrp, start = fields
        snap.info[pid] = fields
        snap.children.setdefault(ppid, []).append(pid)
        known = markers.get(pid)
        if known is None or known[0] != start:
            known = (start, None if pid == me else _linux.read_marker(pid, needle))
        seen[pid] = known
        if known[1] is not None and state not in ("Z", "X"):
            snap.marked.setdefault(known[1], []).append(pid)
    markers.clear()
    markers.update(seen)
    # Its age counts from the end of the scan: a scan slower than the reuse
    # window must not make every caller of a burst scan again.
    snap.taken = time.monotonic()
    return snap


class Scanner:
    """Takes and caches snapshots of /proc for one supervisor.

    Out of file descriptors, it gives its spare ones back for the length of a
    scan and tries again. When even that fails, ``snap`` answers None: the
    caller then knows it cannot see the tree (and must not conclude that
    nothing is left of it); it falls back to the process group and the pidfd,
    and looks again later.
    """

    def __init__(self, token: str, reserve: int = FD_RESERVE) -> None:
        self.needle = _linux.marker_needle(token)
        #: {pid: (start time, proc id or None)}, kept across passes.
        self.markers: dict[int, tuple[int, int | None]] = {}
        self._reserve = _linux.FdReserve(reserve)
        self._last: Snapshot | None = None
        self._failed_at = -1.0
        self._warned = False

    def snap(self, max_age: float = SNAPSHOT_TTL) -> Snapshot | None:
        """A snapshot at most ``max_age`` seconds old (FRESH_TTL: fresh, one of a
        burst); None if /proc cannot be read for want of file descriptors."""
        now = time.monotonic()
        last = self._last
        if last is not None and now - last.taken <= max_age:
            return last
        if now - self._failed_at <= FRESH_TTL:
            return None  # it just failed: do not rescan /proc for every signal of a burst
        try:
            try:
                snap = _take_snapshot(self.needle, self.markers)
            except OSError as exc:
                if not _linux.is_fd_exhaustion(exc):
                    raise
                with self._reserve.released():
                    snap = _take_snapshot(self.needle, self.markers)
        except OSError as exc:
            if not _linux.is_fd_exhaustion(exc):
                raise
            if not self._warned:
                self._warned = True
                log.warning(
                    "cannot read /proc (%s): stopping by process group only until fds free up",
                    exc.strerror,
                )
            self._last = None
            self._failed_at = time.monotonic()
            return None
        self._warned = False
        self._last = snap
        return snap

    def close(self) -> None:
        """Give the spare fds back."""
        self._reserve.close()
        self._last = None
