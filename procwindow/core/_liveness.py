"""Liveness probing of one run of a workspace command: from its readiness on,
a probe every period; after too many failures in a row the run is terminated
(its restart policy, :mod:`._restart`, decides what follows).

Apart from the run's driver (:mod:`._orchestra`), which starts it beside the
run and cancels it at the exit.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Protocol

from ._agent import CheckContext, probe
from ._command import Liveness
from ._errors import NoMatch, NotReady, ProcNotFound
from ._proc import Proc
from ._types import ExitInfo, Line, Stream

__all__ = ["Probed", "probe_liveness"]


class Probed(Protocol):
    """What probing needs of a supervisor (a ``Supervisor``)."""

    async def wait_ready(self, proc_id: int, timeout: float | None = None) -> Proc: ...

    def _check_context(self, proc_id: int) -> CheckContext: ...

    async def wait_for(
        self,
        proc_id: int,
        pattern: str,
        *,
        regex: bool = True,
        stream: Stream | str | None = None,
        since: int = 0,
        timeout: float | None = None,
    ) -> Line: ...

    async def term(self, proc_id: int) -> ExitInfo: ...


async def probe_liveness(
    sup: Probed,
    proc: Proc,
    live: Liveness,
    *,
    after_ready: bool,
    on_failure: Callable[[str], None],
) -> None:
    """Probe the run every period once it is ready (``after_ready``: wait for
    its readiness check first); terminate it after too many failures in a row,
    once ``on_failure`` was told why (before the exit it causes is seen)."""
    if after_ready:
        with contextlib.suppress(NotReady, ProcNotFound):
            await sup.wait_ready(proc.id)  # a check that gave up: probe anyway
    await asyncio.sleep(live.delay)
    loop = asyncio.get_running_loop()
    cursor = proc.last_seq
    failures = 0
    while proc.exit is None:
        began = loop.time()
        if live.check.line is not None:
            try:
                cursor = await _heartbeat(sup, proc, live, cursor)
                ok = True
            except TimeoutError:
                ok = False
            except (NoMatch, ProcNotFound):
                return  # it exited: the driver takes it from there
        else:
            try:
                context = sup._check_context(proc.id)
                ok = await asyncio.wait_for(probe(live.check, context), live.timeout)
            except TimeoutError:
                ok = False
        if proc.exit is not None:
            return
        failures = 0 if ok else failures + 1
        if failures >= live.failures:
            times = "once" if failures == 1 else f"{failures} times in a row"
            on_failure(f"liveness ({live.describe()}) failed {times}")
            with contextlib.suppress(ProcNotFound):
                await sup.term(proc.id)
            return
        await asyncio.sleep(max(0.0, live.period - (loop.time() - began)))


async def _heartbeat(sup: Probed, proc: Proc, live: Liveness, cursor: int) -> int:
    """Wait (at most a period) for a line that matches after ``cursor``; return
    the cursor of the next look: past every line so far (one beat is enough for a
    period, and beats faster than the period must not pile up for the next ones,
    which would find a hang hours late)."""
    check = live.check
    assert check.line is not None
    line = await sup.wait_for(
        proc.id,
        check.line,
        regex=check.regex,
        stream=check.stream,
        since=cursor,
        timeout=live.period,
    )
    return max(line.seq - 1 if line.partial else line.seq, proc.last_seq)
