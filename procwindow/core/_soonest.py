"""A callback run once at the soonest of the times asked for (a sweep asked for
in 1 s and in 0.1 s runs in 0.1 s, once)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

__all__ = ["Soonest"]


class Soonest:
    """Runs ``callback`` on ``loop`` at the soonest time asked for by :meth:`within`."""

    def __init__(self, loop: asyncio.AbstractEventLoop, callback: Callable[[], None]) -> None:
        self._loop = loop
        self._callback = callback
        self._handle: asyncio.TimerHandle | None = None
        self._due = 0.0

    def within(self, delay: float) -> None:
        """Run it in ``delay`` seconds, or sooner if it is due sooner already."""
        due = self._loop.time() + delay
        if self._handle is not None:
            if self._due <= due:
                return
            self._handle.cancel()
        self._due = due
        self._handle = self._loop.call_later(delay, self._run)

    def _run(self) -> None:
        self._handle = None
        self._callback()

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
