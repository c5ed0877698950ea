"""Signals to a proc's whole tree, and the stop sequence (TERM, grace, KILL)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING

from . import _linux
from ._child import Child, StopCause
from ._tree import FRESH_TTL, SNAPSHOT_TTL, Scanner, Snapshot
from ._types import ExitInfo

if TYPE_CHECKING:
    from ._cgroup import Cgroups

log = logging.getLogger("procwindow")

__all__ = ["TreeSignals", "tree_in"]

#: Poll interval while waiting for a proc's leftover descendants to die.
TREE_POLL = 0.02
#: Seconds to wait for what was SIGKILLed at the end of a grace to be gone.
KILL_WAIT = 2.0


def tree_in(snap: Snapshot, child: Child, held: Iterable[int] = ()) -> dict[int, int]:
    """The live members of ``child``'s tree in ``snap``, leader excluded: {pid: start}.

    Its descendants by parentage while the leader is unreaped, plus every
    process carrying its marker (found even after a ``setsid`` and the
    leader's exit), plus ``held``: the processes its cgroup holds (those
    escape nothing, not even a scrubbed environment).
    """
    pids = set(snap.marked.get(child.id, ()))
    pids.update(held)
    if child.unreaped:
        pids.update(snap.descendants(child.os_pid))
    pids.discard(child.os_pid)
    out: dict[int, int] = {}
    for pid in pids:
        info = snap.info.get(pid)
        if info is None and pid in held:  # forked since the look at /proc
            with contextlib.suppress(OSError):
                info = _linux.stat_fields(pid)
        if info is not None and info.state not in ("Z", "X"):
            out[pid] = info.start
    return out


class TreeSignals:
    """Reaches every process of a proc's tree, and stops it with escalation.

    Snapshots of /proc are shared by the signals of one burst (``term_all`` of
    500 procs reads /proc once, not 500 times). When /proc cannot be read (out
    of fds) it falls back to the process group and the pidfd, which need no
    new fd, and remembers the proc: ``on_retry`` asks for a later sweep, which
    calls :meth:`retry`.
    """

    def __init__(
        self, token: str, on_retry: Callable[[], None], cgroups: Cgroups | None = None
    ) -> None:
        self._scanner = Scanner(token)
        self._on_retry = on_retry
        self._retry: set[Child] = set()
        #: A cgroup per proc, where they can be made (see ``_cgroup``).
        self.cgroups = cgroups

    def close(self) -> None:
        self._scanner.close()
        self._retry.clear()

    def _held(self, child: Child) -> list[int]:
        """The processes of the child's cgroup, if it has one."""
        if self.cgroups is None:
            return []
        return self.cgroups.members(child.id) or []

    def snap(self, max_age: float = SNAPSHOT_TTL) -> Snapshot | None:
        return self._scanner.snap(max_age)

    def tree(self, child: Child, max_age: float = SNAPSHOT_TTL) -> dict[int, int] | None:
        """Live members of the tree, leader excluded: {pid: start time}; None
        when /proc cannot be read (out of fds), which is not "nothing left"."""
        snap = self._scanner.snap(max_age)
        return None if snap is None else tree_in(snap, child, self._held(child))

    # -- sending ------------------------------------------------------------------

    def signal_group(self, child: Child, sig: int) -> bool:
        """``sig`` to the child's process group; False once it is reaped."""
        pidfd = child.pidfd
        if pidfd is None:
            return False
        pgid = child.proc.pgid
        # The leader is unreaped (running, or its zombie held while its group
        # lives: ``_leaders``), so its pid — and so its group id — cannot have
        # been reused: killpg is safe. If the leader left its group (or that
        # cannot be looked up, at the fd limit), reach it by its pidfd as well.
        try:
            leader = _linux.stat_fields(child.os_pid)
            left_group = leader is not None and leader.pgrp != pgid
        except OSError:
            left_group = True
        if left_group:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(pidfd, sig)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)
        return True

    def signal_tree(self, child: Child, sig: int, max_age: float = SNAPSHOT_TTL) -> None:
        """``sig`` to the group and to every descendant, wherever it went."""
        pgid = child.proc.pgid
        if sig == signal.SIGKILL and self.cgroups is not None:
            self.cgroups.kill(child.id)  # all of its cgroup at once: no fork escapes
        group_sent = self.signal_group(child, sig)
        snap = self._scanner.snap(max_age)
        if snap is None:
            if sig == signal.SIGKILL:
                self.retry_later(child)
            return
        tree = tree_in(snap, child, self._held(child))
        if not group_sent and any(
            (info := snap.info.get(pid)) is not None and info.pgrp == pgid for pid in tree
        ):
            # The leader is gone but its group is not: a group id stays taken
            # while any member lives, so it still names ours. One killpg also
            # catches a member forking right now, which a pid-by-pid chase of
            # a process that keeps re-forking would not.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, sig)
            group_sent = True
        for pid, start in tree.items():
            info = snap.info.get(pid)
            if info is None:  # forked since the look at /proc (its cgroup holds it)
                with contextlib.suppress(OSError):
                    info = _linux.stat_fields(pid)
            if group_sent and info is not None and info.pgrp == pgid:
                # The group signal reached it, or it was forked after, by a
                # member handling that signal (a stop handler's own command):
                # a second one would cut that handler short.
                continue
            try:
                _linux.signal_if_same(pid, start, sig)
            except OSError:  # out of fds: cannot check it is still that process
                if sig == signal.SIGKILL:
                    self.retry_later(child)

    def kill_leftovers(self, child: Child, max_age: float = FRESH_TTL) -> None:
        """SIGKILL whatever is left of the tree (the leader has exited)."""
        tree = self.tree(child, max_age)
        if tree is None:
            self.retry_later(child)
        elif tree:
            self.signal_tree(child, signal.SIGKILL)

    # -- what could not be seen -------------------------------------------------------

    def retry_later(self, child: Child) -> None:
        """The tree could not be seen (fd limit): the sweep kills it once it can."""
        self._retry.add(child)
        self._on_retry()

    def forget(self, child: Child) -> None:
        """A dismissed child: nothing more to retry; its cgroup, if it has one,
        is killed and removed."""
        self._retry.discard(child)
        if self.cgroups is not None:
            self.cgroups.discard(child.id)

    @property
    def retry_pending(self) -> bool:
        return bool(self._retry)

    def retry(self) -> None:
        """Kill the leftovers of every tree that could not be seen before."""
        pending, self._retry = self._retry, set()
        for child in pending:
            self.kill_leftovers(child, SNAPSHOT_TTL)

    # -- stopping ----------------------------------------------------------------------

    async def terminate(
        self,
        child: Child,
        grace: float,
        on_stopping: Callable[[Child], None],
        ask: Callable[[], Awaitable[bool]] | None = None,
    ) -> ExitInfo:
        """Ask the proc to stop: ``ask`` (its stop command), else (or when that
        fails) its stop signal (SIGTERM unless it has its own) and SIGCONT to the
        tree; SIGKILL after ``grace`` seconds; then stop what the leader left
        behind by the same deadline."""
        proc = child.proc
        if proc.exit is not None:  # it exited before this task first ran
            await self.stop_leftovers(child, grace)
            return proc.exit
        child.note_stop(StopCause.SIGNALLED)
        on_stopping(child)
        asking = asyncio.ensure_future(self._ask(child, ask)) if ask is not None else None
        if asking is None:
            self._send_stop(child)
        deadline = time.monotonic() + grace
        try:
            await asyncio.wait_for(asyncio.shield(child.exit_fut), grace)
        except TimeoutError:
            if proc.exit is None:
                child.note_stop(StopCause.ESCALATED)
                self.signal_tree(child, signal.SIGKILL, FRESH_TTL)
            await asyncio.shield(child.exit_fut)
        finally:
            if asking is not None:
                asking.cancel()  # the stop command goes with its group
                await asyncio.gather(asking, return_exceptions=True)
        await self._await_tree_gone(child, deadline)
        assert proc.exit is not None
        return proc.exit

    def _send_stop(self, child: Child) -> None:
        self.signal_tree(child, child.proc.options.stop_signal or signal.SIGTERM)
        self.signal_tree(child, signal.SIGCONT)

    async def _ask(self, child: Child, ask: Callable[[], Awaitable[bool]]) -> None:
        """Run the stop command; if it fails (it cannot start, or exits non-zero)
        while the proc runs, the stop signal asks instead."""
        if not await ask() and child.proc.exit is None:
            log.warning("proc %d: its stop command failed; sending its stop signal", child.id)
            self._send_stop(child)

    async def stop_leftovers(self, child: Child, grace: float) -> None:
        """After the leader exited: TERM what remains of its tree, KILL it after
        ``grace`` seconds."""
        tree = await self._tree_after(child, time.monotonic())
        if tree is not None and not tree:
            return
        self.signal_tree(child, signal.SIGTERM)
        self.signal_tree(child, signal.SIGCONT)
        await self._await_tree_gone(child, time.monotonic() + grace)

    async def await_killed(self, child: Child) -> None:
        """After SIGKILL to the tree: return once it is gone (what forked since
        the signal is killed too), within KILL_WAIT."""
        since = time.monotonic()
        tree = await self._tree_after(child, since)
        if tree is not None and not tree:
            return
        self.kill_leftovers(child, FRESH_TTL)
        await self._poll_tree_gone(child, since, since + KILL_WAIT)

    async def _tree_after(self, child: Child, since: float) -> dict[int, int] | None:
        """``tree`` from a look at /proc taken at ``since`` or later. It waits one
        turn of the loop first: procs that ended together share the look."""
        await asyncio.sleep(0)
        return self.tree(child, time.monotonic() - since)

    async def _await_tree_gone(self, child: Child, deadline: float) -> None:
        """Wait until the tree is gone; KILL what is left at ``deadline``.

        Gone means gone in a look at /proc taken after the signals and the
        leader's end: a shared look from just before may predate a member forked
        since, and term() would return with that member alive.
        """
        since = time.monotonic()
        tree = await self._tree_after(child, since)
        if tree is not None and not tree:
            return
        if await self._poll_tree_gone(child, since, deadline):
            return
        self.kill_leftovers(child, FRESH_TTL)
        # SIGKILL cannot be refused, but dying takes a moment (longer for a
        # process inside the kernel): term() returns once it is done.
        await self._poll_tree_gone(child, time.monotonic(), time.monotonic() + KILL_WAIT)

    async def _poll_tree_gone(self, child: Child, since: float, deadline: float) -> bool:
        """Look at /proc every TREE_POLL until the tree is gone (True) or ``deadline``."""
        # Nothing signals "a non-child pid died": poll /proc.
        while time.monotonic() < deadline:
            tree = self.tree(child, min(TREE_POLL, time.monotonic() - since))
            if tree is not None and not tree:
                return True
            await asyncio.sleep(TREE_POLL)
        return False
