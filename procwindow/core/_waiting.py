"""Waiting: for a proc's exit, for a line that matches (in the ring, in the
logs, or a partial line) and for a proc's readiness check to pass."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from . import _terminal
from ._agent import SCAN_CHUNK, Procs, run_check
from ._errors import NoMatch, NotReady, ProcRunning, Timeout
from ._match import LineMatch
from ._ready import Ready, check_timeout
from ._types import EventKind, ExitInfo, Line, Stream

if TYPE_CHECKING:
    from ._child import Child
    from ._proc import Proc

__all__ = ["wait_exit", "wait_for", "wait_ready", "watch_ready"]

#: Seconds of scanning the ring between two returns to the event loop.
SCAN_SLICE = 0.005


async def wait_exit(procs: Procs, proc_id: int, timeout: float | None) -> ExitInfo:
    """``Supervisor.wait``: how the proc ended, once it has (a past id: its
    recorded exit)."""
    child = procs.live(proc_id)
    if child is None:
        past = procs.get(proc_id)
        if past.exit is None:
            raise ProcRunning(proc_id)
        return past.exit
    try:
        return await child.until_exit(timeout)
    except Timeout:
        raise
    except TimeoutError:
        raise Timeout.waiting(proc_id, timeout or 0.0, "did not exit") from None


async def wait_for(
    procs: Procs,
    proc_id: int,
    pattern: str,
    *,
    regex: bool = True,
    stream: Stream | str | None = None,
    since: int = 0,
    timeout: float | None = None,
) -> Line:
    """``Supervisor.wait_for``: the first line after ``since`` that matches."""
    match = LineMatch(pattern, regex=regex)
    want = Stream(stream) if stream is not None else None
    limit = check_timeout(timeout)
    try:
        async with asyncio.timeout(limit):
            return await _scan_for(procs, proc_id, match, want, since)
    except Timeout:
        raise
    except TimeoutError:
        raise Timeout(
            proc_id,
            limit or 0.0,
            f"proc {proc_id}: no line matched {pattern!r} within {limit:g} s",
        ) from None


async def _scan_for(
    procs: Procs, proc_id: int, match: LineMatch, want: Stream | None, since: int
) -> Line:
    cursor = since
    screen_upto: int | None = None  # the screen is looked at as of this byte
    loop = asyncio.get_running_loop()
    while True:
        child = procs.live(proc_id)
        # Registered before reading, so nothing that arrives meanwhile is missed.
        changed = child.changed(loop) if child is not None else None
        try:
            more = False
            if child is not None and cursor + 1 >= child.store.first_seq:
                # In the ring: skip blocks that cannot match, unsplit, and give
                # the loop back every SCAN_SLICE seconds.
                deadline = time.monotonic() + SCAN_SLICE
                hit, cursor = child.store.find(cursor, want, match.line, match.block, deadline)
                if hit is not None:
                    return hit
                if cursor < child.store.last_seq:
                    await asyncio.sleep(0)
                    continue
                for line in sorted(child.partials.values(), key=lambda x: x.time):
                    if (want is None or line.stream is want) and match.line(line.text):
                        return line._replace(seq=child.store.last_seq + 1)
                if child.screen is not None and want is not Stream.STDERR:
                    if screen_upto is None:  # as screen() does: never chase a faster writer
                        screen_upto = child.screen.added
                    if not child.screen.catch_up(SCAN_SLICE, screen_upto):
                        await asyncio.sleep(0)
                        continue
                    screen_upto = None
                    row = _terminal.full_screen_row(child, match.line)
                    if row is not None:
                        return row
                eof = not child.open_streams and cursor >= child.store.last_seq
            else:
                batch = procs.read(proc_id, cursor, limit=SCAN_CHUNK, stream=want)
                for line in batch.lines:
                    if match.line(line.text):
                        return line
                more = len(batch.lines) >= SCAN_CHUNK
                cursor, eof = batch.cursor, batch.eof
            p = child.proc if child is not None else procs.get(proc_id)
            if (
                not more
                and p.exit is not None
                and (eof or child is None or cursor >= (child.final_seq or 0))
            ):
                raise NoMatch(proc_id, match.pattern, p.exit, cursor)
            if more:
                await asyncio.sleep(0)
            elif changed is None:
                # Running under another supervisor: its lines reach us on disk.
                await asyncio.sleep(0.25)
            else:
                await changed
        finally:
            if changed is not None and not changed.done():
                changed.cancel()


async def wait_ready(procs: Procs, proc_id: int, timeout: float | None = None) -> Proc:
    """``Supervisor.wait_ready``: wait until the proc's readiness check passes."""
    limit = check_timeout(timeout)
    child = procs.live(proc_id)
    p = child.proc if child is not None else procs.get(proc_id)
    if p.ready:
        return p
    if child is None or child.ready_task is None:
        if p.exit is not None:
            raise NotReady.exited(p.id, p.exit)
        raise NotReady(p.id, "its check runs under another supervisor")
    try:
        await asyncio.wait_for(asyncio.shield(child.ready_task), limit)
    except TimeoutError:
        raise Timeout.waiting(proc_id, limit or 0.0, "was not ready") from None
    if p.ready:
        return p
    if p.exit is not None:
        raise NotReady.exited(p.id, p.exit)
    check = p.options.ready
    assert check is not None
    assert check.timeout is not None
    raise NotReady(p.id, f"its check ({check.describe()}) gave up after {check.timeout:g} s")


async def watch_ready(
    procs: Procs, child: Child, ready: Ready, publish: Callable[[Proc, EventKind], None]
) -> None:
    """Run a proc's readiness check; mark it ready and announce it (``publish``)."""
    deadline = None if ready.timeout is None else time.monotonic() + ready.timeout
    try:
        async with asyncio.timeout_at(_loop_deadline(deadline)):
            if ready.line is not None:
                await wait_for(procs, child.id, ready.line, regex=ready.regex, stream=ready.stream)
                ok = True
            else:
                ok = await run_check(ready, child)
    except (TimeoutError, NoMatch):
        return
    if ok and child.proc._set_ready():
        publish(child.proc, EventKind.READY)
        child.wake()


def _loop_deadline(deadline: float | None) -> float | None:
    """A ``time.monotonic()`` deadline on the running loop's clock."""
    if deadline is None:
        return None
    loop = asyncio.get_running_loop()
    return loop.time() + (deadline - time.monotonic())
