"""When the terminal view asks the supervisor for its proc's screen.

A PTY child's screen changes with every byte it writes, but the supervisor
announces lines, not bytes: the echo of a key, a prompt, or a full-screen
program drawing with cursor moves (no newline) comes as an output event only
with a newline, or as a partial line a fifth of a second later. So
:class:`ScreenFeed` looks when there is a reason to, and goes on looking for a
while: an event of the proc, a key written (its echo is looked for
``ECHO_MS`` after the write), a resize, or a fetch that found the screen
changed all open a *watch* of ``WATCH_MS``, during which the screen is fetched
once a frame while it changes, and ever less often while it does not (twice the
interval after each fetch that found it as it was, up to ``WATCH_BACKOFF_MS``):
a fetch costs milliseconds of the GUI thread (the screen's runs are made anew).
Fetches are at least ``FRAME_MS`` apart, never more than one is under way, and
a fetch that finds the screen as it was costs no paint. An idle terminal costs
nothing.

A key's echo is the exception to the frame's pacing: it is looked for
``ECHO_MS`` after the write even if the last fetch started less than a frame
ago (at least ``ECHO_GAP_MS`` ago), so that a key typed while the screen is
watched is not drawn up to a frame later. Keys come far slower than frames:
the fetches stay about one a frame, and the pacing starts again from there.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, QTimer

from procwindow.core import NoTerminal, ProcNotFound, ProcwindowError, ScreenText, SupervisorAPI

from ._support import current_loop

__all__ = ["ECHO_GAP_MS", "ECHO_MS", "FRAME_MS", "WATCH_BACKOFF_MS", "WATCH_MS", "ScreenFeed"]

log = logging.getLogger("procwindow.qt")

#: Milliseconds between the starts of two fetches, at least: one a frame.
FRAME_MS = 16
#: Milliseconds after a key is written before its echo is looked for: the
#: child reads the key, writes the echo, the supervisor reads it (well under
#: this on an idle machine; a later echo is found by the next frame's fetch).
ECHO_MS = 2
#: Milliseconds the screen is fetched every frame after a reason to look.
WATCH_MS = 300
#: Milliseconds between two fetches of a watch that keep finding the screen unchanged, at most.
WATCH_BACKOFF_MS = 128
#: Milliseconds between the start of a fetch and that of a key's echo, at least.
ECHO_GAP_MS = 4


class ScreenFeed:
    """Fetches the screen of one proc (``follow``) when ``poke`` says it may have changed.

    ``on_screen(screen)`` gets every screen fetched and answers whether it
    differs from the last; ``on_gone(error)`` hears that the proc has no
    terminal (any more): then nothing is fetched until the next ``follow``.
    """

    def __init__(
        self,
        owner: QObject,
        supervisor: SupervisorAPI,
        on_screen: Callable[[ScreenText], bool],
        on_gone: Callable[[ProcwindowError], None],
    ) -> None:
        self._sup = supervisor
        self._on_screen = on_screen
        self._on_gone = on_gone
        self._proc_id = -1
        self._task: asyncio.Task[None] | None = None
        self._timer = QTimer(owner)
        self._timer.setSingleShot(True)
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.timeout.connect(self._start)
        self._last_start = -math.inf  # time.monotonic() of the last fetch's start
        self._watch_until = 0.0
        self._interval = FRAME_MS  # between a watch's fetches now (ms)
        self._again: float | None = None  # poked while a fetch was under way: the gap
        #: Fetches started (for tests and benchmarks).
        self.fetches = 0

    @property
    def proc_id(self) -> int:
        """The proc whose screen is fetched; -1: none."""
        return self._proc_id

    @property
    def busy(self) -> bool:
        """True while a fetch is under way or due."""
        return self._task is not None or self._timer.isActive()

    def follow(self, proc_id: int) -> None:
        """Fetch ``proc_id``'s screen from now on (-1: nobody's); nothing is fetched
        until the next ``poke``."""
        self.stop()
        self._proc_id = proc_id
        self._last_start = -math.inf

    def poke(
        self, delay_ms: float = 0.0, watch_ms: float = WATCH_MS, *, echo: bool = False
    ) -> None:
        """The screen may have changed: fetch it ``delay_ms`` from now (or as soon
        as a frame allows; ``echo``: a key's echo, ``ECHO_GAP_MS`` after the last
        fetch's start will do), and every frame for ``watch_ms``."""
        if self._proc_id < 0:
            return
        now = time.monotonic()
        self._watch_until = max(self._watch_until, now + watch_ms / 1000)
        self._interval = FRAME_MS
        self._due(now + delay_ms / 1000, ECHO_GAP_MS if echo else FRAME_MS)

    def stop(self) -> None:
        """Fetch nothing more (a fetch under way is cancelled)."""
        self._timer.stop()
        self._again = None
        self._watch_until = 0.0
        task, self._task = self._task, None
        if task is not None and not task.done() and not task.get_loop().is_closed():
            task.cancel()

    def _due(self, when: float, gap_ms: float = FRAME_MS) -> None:
        """A fetch at ``when`` (time.monotonic()), or once ``gap_ms`` have passed
        since the last fetch started."""
        if self._task is not None:
            self._again = gap_ms if self._again is None else min(self._again, gap_ms)
            return
        when = max(when, self._last_start + gap_ms / 1000)
        ms = max(0, math.ceil((when - time.monotonic()) * 1000))
        if self._timer.isActive() and self._timer.remainingTime() <= ms:
            return
        self._timer.start(ms)

    def _start(self) -> None:
        if self._task is not None or self._proc_id < 0:
            return
        self._again = None
        self._last_start = time.monotonic()
        self.fetches += 1
        self._task = current_loop().create_task(
            self._fetch(self._proc_id), name=f"procwindow.qt screen {self._proc_id}"
        )

    async def _fetch(self, proc_id: int) -> None:
        try:
            screen = await self._sup.screen(proc_id, styled=True)
        except (NoTerminal, ProcNotFound) as exc:
            if self._done(proc_id):
                self._proc_id = -1
                self._watch_until = 0.0
                self._on_gone(exc)
            return
        except Exception as exc:  # a connection lost, or a bug: try again when poked
            log.log(
                logging.DEBUG if isinstance(exc, ProcwindowError | OSError) else logging.ERROR,
                "procwindow.qt: no screen of %d: %r",
                proc_id,
                exc,
            )
            self._done(proc_id)
            return
        if not self._done(proc_id):
            return  # another proc's now
        now = time.monotonic()
        if self._on_screen(screen):
            # It is drawing: look again next frame even without an event.
            self._watch_until = max(self._watch_until, now + WATCH_MS / 1000)
            self._interval = FRAME_MS
        else:
            self._interval = min(2 * self._interval, WATCH_BACKOFF_MS)
        if self._again is not None:
            self._due(now, self._again)
        elif now < self._watch_until:
            self._due(self._last_start + self._interval / 1000)

    def _done(self, proc_id: int) -> bool:
        """The fetch of ``proc_id`` ended: True if it is still the one wanted."""
        if self._task is asyncio.current_task():
            self._task = None
        return proc_id == self._proc_id
