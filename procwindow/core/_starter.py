"""Starter: starts children on the event loop, or in a spawn thread when several
come at once (the loop runs on while they exec), and leaves nothing behind when
a start is given up."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

from . import _spawn
from ._errors import SupervisorClosed
from ._reaper import SPAWNING, own_child, own_child_pending

if TYPE_CHECKING:
    from ._archive import Archive
    from ._cgroup import Cgroups
    from ._disklog import DiskLog

__all__ = ["IDLE_LINGER", "Spawned", "Starter"]

#: Seconds the spawn thread waits for the next start before it goes: a burst of
#: spawns (an agent's build, a test matrix) shares one thread instead of making
#: one per spawn (~0.2 ms each), and an idle supervisor still has none.
IDLE_LINGER = 1.0


class Spawned(NamedTuple):
    """A child started for a spawn: its id, its log files, and what runs."""

    proc_id: int
    disk: DiskLog
    started: _spawn.Started
    #: The value of the marker variable its tree carries (its checks get it too).
    marker: bytes


class Starter:
    """Starts children one at a time (so one id is reserved at a time).

    The first start of a pass of the event loop runs on the loop itself: the
    loop waits for that one child to exec (as ``posix_spawn`` would), and a
    spawn costs no thread hand-off (two wake-ups, 0.3-0.7 ms on a 2-core
    machine: a third of a short child's spawn-to-exit). Every other start of
    that pass, and any start while one is under way in the thread or another
    supervisor holds the id counter, runs in a thread of its own while the
    loop runs on: a burst of spawns never holds the loop for more than one
    exec.

    The thread is made on demand and let go once no start has been under way
    for IDLE_LINGER seconds: a supervisor that is not spawning has no thread.
    A start that is given up (cancelled, or the supervisor began closing
    meanwhile) kills its child and closes what it was given.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        archive: Archive,
        token: str,
        devnull: int,
        closing: Callable[[], bool],
        cgroups: Cgroups | None = None,
    ) -> None:
        self._loop = loop
        self._cgroups = cgroups
        self._archive = archive
        self._token = token
        self._devnull = devnull
        self._closing = closing
        self._thread: concurrent.futures.ThreadPoolExecutor | None = None
        self._idle: asyncio.TimerHandle | None = None
        #: Starts under way in the thread.
        self._starting: set[asyncio.Future[Spawned]] = set()
        #: A child was started on the loop in this pass of it.
        self._started_here = False

    async def start(
        self,
        args: tuple[str, ...],
        exe: str,
        cwd: str | None,
        env: dict[bytes, bytes],
        wiring: _spawn.Wiring,
    ) -> Spawned:
        """Reserve an id, prepare its logs and start ``args`` (``_spawn.start``),
        on the loop or in the spawn thread; ``env`` gets the child's marker.

        Raises what ``_spawn.start`` raises, or SupervisorClosed if the
        supervisor began closing meanwhile. Given up (cancelled, closing), it
        leaves nothing behind: a child that started is killed and reaped.
        """
        if not self._starting and not self._started_here:
            spawned = self._start(args, exe, cwd, env, wiring, wait=False)
            if spawned is not None:
                self._started_here = True
                self._loop.call_soon(self._next_pass)
                return spawned
        work = self._loop.run_in_executor(
            self._spawn_thread(), self._start_waiting, args, exe, cwd, env, wiring
        )
        self._starting.add(work)
        work.add_done_callback(self._starting.discard)
        try:
            spawned = await asyncio.shield(work)
        except asyncio.CancelledError:
            # The child may be starting: it must not run unwatched.
            work.add_done_callback(_discard_started)
            raise
        finally:
            if not self._starting:  # let the thread go unless another start comes soon
                self._idle = self._loop.call_later(IDLE_LINGER, self.close)
        if self._closing():
            _discard(spawned)
            raise SupervisorClosed("this supervisor is closing")
        return spawned

    async def settle(self) -> None:
        """Wait for the starts under way (each gives its child up if it sees
        the supervisor closing)."""
        if self._starting:
            await asyncio.gather(*self._starting, return_exceptions=True)

    def close(self) -> None:
        """Let the spawn thread go now (no start is under way)."""
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        if self._thread is not None:
            self._thread.shutdown(wait=True)
            self._thread = None

    def _next_pass(self) -> None:
        self._started_here = False

    def _spawn_thread(self) -> concurrent.futures.ThreadPoolExecutor:
        """The thread that starts children: made on demand, gone when idle, so a
        supervisor that is not spawning has no thread."""
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        if self._thread is None:
            self._thread = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="procwindow-spawn"
            )
        return self._thread

    def _start_waiting(
        self,
        args: tuple[str, ...],
        exe: str,
        cwd: str | None,
        env: dict[bytes, bytes],
        wiring: _spawn.Wiring,
    ) -> Spawned:
        # In the spawn thread: the loop runs on while the locks are waited for
        # and the child execs (which takes milliseconds on a busy machine).
        spawned = self._start(args, exe, cwd, env, wiring, wait=True)
        assert spawned is not None  # waiting, it never gives up
        return spawned

    def _start(
        self,
        args: tuple[str, ...],
        exe: str,
        cwd: str | None,
        env: dict[bytes, bytes],
        wiring: _spawn.Wiring,
        *,
        wait: bool = True,
    ) -> Spawned | None:
        """Start the child: in the spawn thread (``wait``: the locks are waited
        for), or on the loop (None, and nothing done, if a lock is taken)."""
        # SPAWNING first: orphan reaping waits while a child is started and
        # registered (``_reaper``), and the id is only reserved once it is held.
        if not SPAWNING.acquire(blocking=wait):
            return None
        try:
            with self._archive.reserve_id(wait=wait) as proc_id:
                if proc_id is None:
                    return None
                marker = env[_spawn.MARKER_KEY] = f"{self._token}:{proc_id}".encode()
                disk = self._archive.prepare(proc_id)
                try:
                    started = _spawn.start(args, exe, cwd, env, self._devnull, wiring)
                except BaseException:
                    disk.close()
                    raise
                if self._cgroups is not None:
                    # At once: it has only just exec'd (a program forks later than that).
                    self._cgroups.add(proc_id, started.popen.pid)
                own_child_pending(started.popen.pid)
        finally:
            SPAWNING.release()
        return Spawned(proc_id, disk, started, marker)


def _discard(spawned: Spawned) -> None:
    """A child started for a spawn that was given up (cancelled, or the
    supervisor closed meanwhile): kill it and close what it was given."""
    started = spawned.started
    with contextlib.suppress(ProcessLookupError):
        os.killpg(started.popen.pid, signal.SIGKILL)
    started.popen.wait()
    own_child(started.popen.pid, None)
    for fd in (started.pidfd, started.stdout, started.stderr, started.stdin):
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
    with contextlib.suppress(OSError):
        spawned.disk.close()


def _discard_started(work: asyncio.Future[Spawned]) -> None:
    if not work.cancelled() and work.exception() is None:
        _discard(work.result())
