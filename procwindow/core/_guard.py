"""Guard: what keeps a list of the running children so that they are stopped
even if the host dies (the watchdog process, the state file)."""

from __future__ import annotations

import contextlib
import os
import weakref

__all__ = ["Guard"]

# Every open guard, so that a forked child lets go of them.
_live: weakref.WeakSet[Guard] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    for guard in list(_live):
        guard._forget_after_fork()


os.register_at_fork(after_in_child=_after_fork_in_child)


class Guard:
    """Lists running children (pid → start time) until it is closed.

    ``close`` stands down only when nothing is listed; with children still
    listed it ``abandon``-s, leaving them to be stopped. Subclasses say how a
    change is recorded (``_record``), how to stand down and how to let go.

    A reap is recorded with the next start, or by ``flush`` (the supervisor's
    sweep, within a second): one write per child instead of two, and none
    between a child's exit and its waiter. Until then the record still lists
    the reaped pid, which is harmless: whoever stops what is listed first
    checks that each pid still has the start time it was listed with.
    """

    def __init__(self) -> None:
        self._listed: dict[int, int] = {}
        #: Reaped, not recorded yet.
        self._reaped: list[int] = []
        self._fd: int | None = None
        self._closed = False
        _live.add(self)

    @property
    def listed(self) -> dict[int, int]:
        """A copy of the children listed now: pid -> start time."""
        return dict(self._listed)

    def started(self, pid: int, start_time: int) -> None:
        """A child started (its pid leads its own group)."""
        if self._closed:
            return
        self._listed[pid] = start_time
        self._record(self._take_reaped() + f"+ {pid} {start_time}\n")

    def reaped(self, pid: int) -> None:
        """A child was reaped: its pid may be reused from now on (recorded
        with the next start, or by ``flush``)."""
        if self._closed or self._listed.pop(pid, None) is None:
            return
        self._reaped.append(pid)

    def flush(self) -> bool:
        """Record the reaps not recorded yet; True once the record is up to date."""
        text = self._take_reaped()
        if text and not self._closed:
            self._record(text)
        return True

    def _take_reaped(self) -> str:
        reaped, self._reaped = self._reaped, []
        return "".join(f"- {pid}\n" for pid in reaped)

    def close(self) -> None:
        """Stand down if nothing is listed, else ``abandon``. Idempotent."""
        if self._closed:
            return
        if self._listed:
            self.abandon()
            return
        self._set_closed()
        self._stand_down()

    def abandon(self) -> None:
        """Let go, leaving what is listed to be stopped. Idempotent."""
        if self._closed:
            return
        Guard.flush(self)
        self._let_go()

    def _set_closed(self) -> None:
        self._closed = True
        _live.discard(self)

    def _close_fd(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)

    def _forget_after_fork(self) -> None:
        # In a forked child: it neither writes nor removes its parent's records.
        self._close_fd()
        self._listed = {}
        self._reaped = []
        self._closed = True

    # -- for subclasses ------------------------------------------------------------

    def _record(self, line: str) -> None:
        raise NotImplementedError

    def _stand_down(self) -> None:
        raise NotImplementedError

    def _let_go(self) -> None:
        """Called once, still open: must end with ``_set_closed()``."""
        raise NotImplementedError
