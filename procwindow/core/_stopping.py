"""Stopping: terminating a child and its descendants (SIGTERM, SIGKILL after
its grace), at its timeout too; killing them; dismissing an exited child (what
it left behind killed, its pipes closed); and stopping every child when the
supervisor closes."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import signal
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ._agent import check_context, run_command
from ._child import StopCause
from ._errors import ProcRunning
from ._tree import FRESH_TTL, SNAPSHOT_TTL
from ._types import EventKind, ExitInfo

if TYPE_CHECKING:
    from ._archive import Archive
    from ._capture import Capture
    from ._child import Child
    from ._events import EventHub
    from ._proc import Proc
    from ._reaper import Sweeper
    from ._signals import TreeSignals

__all__ = ["Stopping"]

log = logging.getLogger("procwindow")

#: How long close() waits for children that got SIGKILL (a process in
#: uninterruptible sleep dies only when its I/O returns).
_KILL_WAIT = 5.0
#: How long close() waits for what the children left behind to die.
_LEFTOVER_WAIT = 2.0
#: Delay of the sweep that follows a dismiss (coalesces bursts).
_SWEEP_SOON = 0.1


class Stopping:
    """Stops the children of a supervisor bound to ``loop``.

    ``grace`` gives the supervisor's ``graceful_timeout`` (read at each stop; a
    proc's own wins), ``closing`` whether the supervisor is closing.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        signals: TreeSignals,
        sweeper: Sweeper,
        capture: Capture,
        children: dict[int, Child],
        archive: Archive,
        events: EventHub,
        grace: Callable[[], float],
        closing: Callable[[], bool],
    ) -> None:
        self._loop = loop
        self._signals = signals
        self._sweeper = sweeper
        self._capture = capture
        self._children = children
        self._archive = archive
        self._events = events
        self._default_grace = grace
        self._closing = closing

    def _grace(self, p: Proc) -> float:
        return self._default_grace() if p.graceful_timeout is None else p.graceful_timeout

    def _mark_stopping(self, child: Child) -> None:
        if child.proc._set_stopping():
            self._events.publish(child.proc, EventKind.STOPPING)

    async def term(self, child: Child) -> ExitInfo:
        """``Supervisor.term``: on an exited child, its leftovers."""
        exit_ = child.proc.exit
        if exit_ is not None:
            await self._signals.stop_leftovers(child, self._grace(child.proc))
            return exit_
        task = child.stop_task
        if task is None or (task.done() and (task.cancelled() or task.exception() is not None)):
            # A stop that failed (out of fds, say) is not the proc's fate: try again.
            grace = self._grace(child.proc)
            stop = self._signals.terminate(child, grace, self._mark_stopping, _asker(child, grace))
            task = child.stop_task = asyncio.ensure_future(stop)
        return await asyncio.shield(task)

    async def kill(self, child: Child) -> ExitInfo:
        """``Supervisor.kill``: on an exited child, its leftovers."""
        if child.proc.exit is None:
            child.note_stop(StopCause.KILLED)
            self._mark_stopping(child)
            self._signals.signal_tree(child, signal.SIGKILL)
        else:
            self._signals.kill_leftovers(child)
        exit_ = await child.until_exit()
        await self._signals.await_killed(child)  # as term(): the whole tree is gone
        return exit_

    def time_out(self, child: Child) -> None:
        """Its ``timeout`` ran out: terminate it (reason ``timeout``)."""
        child.timeout_handle = None
        if child.proc.exit is not None or self._closing():
            return
        child.timed_out = True
        task = asyncio.ensure_future(self.term(child))
        task.add_done_callback(_log_failure(f"proc {child.id}: terminating it at its timeout"))

    def dismiss(self, child: Child) -> None:
        """``Supervisor.dismiss``: ProcRunning if it still runs."""
        if child.proc.exit is None:
            raise ProcRunning(child.id)
        if child.open_streams:
            # Someone still holds its pipes: find and kill them now.
            self._signals.kill_leftovers(child)
        else:
            # Leftovers that let go of the pipes (daemons) are found by the next
            # sweep, which kills whatever carries the marker of a dismissed proc.
            self._sweeper.schedule(_SWEEP_SOON)
        self._capture.close(child)
        child.close_stdin(self._loop)
        if child.ready_task is not None:
            child.ready_task.cancel()
        self._archive.output(child)
        self._archive.hide(child.id)
        del self._children[child.id]
        child.store.shrink(0)
        self._signals.forget(child)
        self._capture.forget(child)
        self._events.publish(child.proc, EventKind.DISMISS)

    async def stop_everything(self) -> bool:
        """Stop every proc and what it left behind; True if nothing of ours runs."""
        checks = [c.ready_task for c in self._children.values() if c.ready_task is not None]
        for task in checks:
            task.cancel()
        await asyncio.gather(*checks, return_exceptions=True)
        terms = (self.term(c) for c in reversed(self._children.values()) if c.proc.running)
        results = await asyncio.gather(*terms, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                log.error("term failed while closing: %s", result)
        running = [c for c in self._children.values() if c.proc.running]
        if running:  # term failed: SIGKILL by group and pidfd, which need no fds
            for child in running:
                child.note_stop(StopCause.KILLED)
                self._signals.signal_group(child, signal.SIGKILL)
            done = asyncio.gather(*(asyncio.shield(c.exit_fut) for c in running))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done, _KILL_WAIT)
        clean = not any(c.proc.running for c in self._children.values())
        if self._signals.snap(FRESH_TTL) is None:
            clean = False
        else:
            for child in list(self._children.values()):
                self._signals.kill_leftovers(child, SNAPSHOT_TTL)
        for child in self._children.values():
            self._capture.close(child)
        gone = await self._sweeper.wait_gone(deadline=time.monotonic() + _LEFTOVER_WAIT)
        return clean and gone


def _asker(child: Child, grace: float) -> Callable[[], Awaitable[bool]] | None:
    """What runs the proc's stop command (None: it has none; its signal asks)."""
    command = child.proc.options.stop_command
    if command is None:
        return None
    context = check_context(child)
    return functools.partial(run_command, command, context.cwd, context, grace, "stop command")


def _log_failure(what: str) -> Callable[[asyncio.Future[Any]], None]:
    """A done-callback that logs a background task's failure."""

    def done(task: asyncio.Future[Any]) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.error("%s failed: %s", what, task.exception())

    return done
