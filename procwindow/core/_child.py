"""Child: the supervisor's private record of one child and everything it holds."""

from __future__ import annotations

import asyncio
import contextlib
import enum
import os
import subprocess
from typing import TYPE_CHECKING, Any

import psutil

from ._types import ExitInfo, ExitReason, Line, ReadBatch, RunBatch, Stream, runs_of

if TYPE_CHECKING:
    from ._disklog import DiskLog
    from ._output import OutputStore
    from ._proc import Proc
    from ._screen import TerminalScreen

__all__ = ["Child", "StopCause"]


class StopCause(enum.IntEnum):
    """Why the supervisor stopped a child, strongest last. Only ever raised."""

    NONE = 0
    SIGNALLED = 1  # term, interrupt or another signal was sent by us
    KILLED = 2  # kill (SIGKILL) was asked for
    ESCALATED = 3  # term's grace ran out and SIGKILL followed


class Child:
    """What the supervisor owns for one proc: the Popen, the pidfd, the read ends
    of both pipes, the log files and journal, the ring of lines, the exit
    future and the stop task. Nobody but the supervisor (and its parts) holds one; everyone
    else sees the :class:`Proc` in ``proc``.
    """

    __slots__ = (
        "capture_failed",
        "disk",
        "exit_fut",
        "exit_waiters",
        "final_seq",
        "held",
        "marker",
        "max_read",
        "open_streams",
        "out_pending",
        "partial_timers",
        "partials",
        "pidfd",
        "popen",
        "proc",
        "ps_cache",
        "ps_last",
        "read_size",
        "ready_task",
        "screen",
        "stdin_fd",
        "stdin_lock",
        "stop_cause",
        "stop_task",
        "store",
        "stream_fds",
        "timed_out",
        "timeout_handle",
        "waiters",
    )

    def __init__(
        self,
        proc: Proc,
        popen: subprocess.Popen[bytes],
        pidfd: int,
        stream_fds: dict[Stream, int],
        store: OutputStore,
        disk: DiskLog,
        exit_fut: asyncio.Future[ExitInfo],
    ) -> None:
        self.proc = proc
        self.popen = popen
        #: Its marker variable's value (``Spawned.marker``), for its check commands.
        self.marker = b""
        #: Open until the child is reaped: while it is, its pid cannot be reused.
        self.pidfd: int | None = pidfd
        #: It exited and its status was taken, but its zombie is kept (see
        #: ``_leaders``): its pid, and so its group id, are still its own.
        self.held = False
        self.stream_fds = stream_fds
        #: Streams whose pipe is still open (a descendant may hold it after exit).
        self.open_streams: set[Stream] = set(stream_fds)
        #: Bytes per read: grows to BIG_PIPE for a flood; at most a tenth of the
        #: disk cap, so that the cap can cut between reads.
        self.read_size = dict.fromkeys(stream_fds, 65536)
        self.max_read = 1 << 20 if disk.cap is None else max(4096, disk.cap // 10)
        self.store = store
        self.disk = disk
        self.exit_fut = exit_fut
        #: Futures of callers of ``until_exit``, done at the exit.
        self.exit_waiters: list[asyncio.Future[ExitInfo]] = []
        self.stop_task: asyncio.Task[ExitInfo] | None = None
        self.stop_cause = StopCause.NONE
        self.capture_failed = False
        #: Output not yet announced: {stream: [first seq, last seq]}.
        self.out_pending: dict[Stream, list[int]] = {}
        #: psutil handles of the tree, kept between stats() calls for CPU %.
        self.ps_cache: dict[int, psutil.Process] = {}
        #: The last stats() (monotonic seconds, pids, result, per pid): callers
        #: within STATS_MIN_INTERVAL share it (see _reports.tree_sample).
        self.ps_last: tuple[float, list[int], Any, Any] | None = None
        #: The write end of its stdin pipe (spawned with stdin=True), until closed.
        self.stdin_fd: int | None = None
        self.stdin_lock = asyncio.Lock()
        #: The seq of its last line when it exited (its final cursor).
        self.final_seq: int | None = None
        #: Unterminated lines shown to readers: {stream: Line(partial=True)}.
        self.partials: dict[Stream, Line] = {}
        self.partial_timers: dict[Stream, asyncio.TimerHandle] = {}
        #: Futures of readers waiting for anything new (lines, a partial, the exit).
        self.waiters: list[asyncio.Future[None]] = []
        self.timeout_handle: asyncio.TimerHandle | None = None
        self.timed_out = False
        self.ready_task: asyncio.Task[None] | None = None
        #: Its terminal's screen, spawned with ``pty`` (None: pipes).
        self.screen: TerminalScreen | None = None
        proc._attach(self)

    @property
    def id(self) -> int:
        return self.proc.id

    @property
    def os_pid(self) -> int:
        return self.proc.os_pid

    @property
    def unreaped(self) -> bool:
        """True until it is reaped (it runs, or its zombie is held): its pid and
        group id are still its own."""
        return self.pidfd is not None

    @property
    def running(self) -> bool:
        """True until its exit is seen."""
        return self.pidfd is not None and not self.held

    def changed(self, loop: asyncio.AbstractEventLoop) -> asyncio.Future[None]:
        """A future that is done at the next wake-up (see ``wake``)."""
        fut: asyncio.Future[None] = loop.create_future()
        self.waiters.append(fut)
        return fut

    async def until_exit(self, timeout: float | None = None) -> ExitInfo:
        """Wait for the exit (TimeoutError after ``timeout`` seconds).

        Each caller waits on a future of its own, which the exit completes
        directly (``set_exit``): cancelling it leaves ``exit_fut`` alone, as
        ``asyncio.shield`` would, without the extra pass of the loop a shield
        takes to pass the result on.
        """
        if self.exit_fut.done():
            return self.exit_fut.result()
        fut: asyncio.Future[ExitInfo] = self.exit_fut.get_loop().create_future()
        self.exit_waiters.append(fut)
        try:
            if timeout is None:
                return await fut
            return await asyncio.wait_for(fut, timeout)
        finally:
            if not fut.done() or fut.cancelled():
                with contextlib.suppress(ValueError):
                    self.exit_waiters.remove(fut)

    def set_exit(self, info: ExitInfo) -> None:
        """The child exited: complete ``exit_fut`` and every ``until_exit``."""
        if not self.exit_fut.done():
            self.exit_fut.set_result(info)
        waiters, self.exit_waiters = self.exit_waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(info)

    def wake(self) -> None:
        """Something readable changed: new lines, a partial line, the exit."""
        waiters, self.waiters = self.waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    def with_partials(self, batch: ReadBatch, limit: int | None, want: Stream | None) -> ReadBatch:
        """``batch`` with the unterminated lines (of stream ``want``, None: both)
        shown last, if it reached the last complete line and ``limit`` leaves
        room for them all; otherwise ``batch`` as it is."""
        shown = self._partials_after(batch.cursor, len(batch.lines), limit, want)
        if not shown:
            return batch
        return ReadBatch(batch.lines + shown, batch.dropped, batch.cursor, batch.eof)

    def runs_with_partials(
        self, batch: RunBatch, limit: int | None, want: Stream | None
    ) -> RunBatch:
        """:meth:`with_partials` for runs: each unterminated line a run of its own."""
        shown = self._partials_after(batch.cursor, len(batch), limit, want)
        if not shown:
            return batch
        return RunBatch(batch.runs + runs_of(shown), batch.dropped, batch.cursor, batch.eof)

    def _partials_after(
        self, cursor: int, count: int, limit: int | None, want: Stream | None
    ) -> list[Line]:
        if not self.partials or cursor < self.store.last_seq:
            return []
        # The seq it will have once complete: after every line complete now.
        seq = self.store.last_seq + 1
        shown = [
            line._replace(seq=seq)
            for line in self.partials.values()
            if want is None or line.stream is want
        ]
        if limit is not None and count + len(shown) > limit:
            return []
        shown.sort(key=lambda line: line.time)
        return shown

    def note_stop(self, cause: StopCause) -> None:
        """Record why we stop it; a stronger cause wins (a kill after a term)."""
        self.stop_cause = max(self.stop_cause, cause)

    def exit_reason(self, code: int, sig: int | None, stolen: bool) -> ExitReason:
        """How it ended, from its status and what we did to it."""
        if self.timed_out:
            return ExitReason.TIMEOUT
        if self.stop_cause is StopCause.ESCALATED:
            return ExitReason.ESCALATED
        if self.stop_cause is StopCause.KILLED:
            return ExitReason.KILLED
        if self.stop_cause is StopCause.SIGNALLED:
            return ExitReason.TERMINATED
        if sig is None and code == 0 and not stolen:
            return ExitReason.EXITED
        return ExitReason.FAILED

    def close_pidfd(self, loop: asyncio.AbstractEventLoop | None) -> bool:
        """Stop watching for its exit and close the pidfd; False if already closed."""
        pidfd, self.pidfd = self.pidfd, None
        if pidfd is None:
            return False
        if loop is not None:
            loop.remove_reader(pidfd)
        os.close(pidfd)
        return True

    def take_exit(
        self, loop: asyncio.AbstractEventLoop | None
    ) -> tuple[int, int | None, bool] | None:
        """Take its exit status if it has exited: ``(code, signal, stolen)``, or
        None while it runs (or once taken). ``code`` is 128+N after death by
        signal N; ``stolen``: someone else reaped it (code 255).

        The status is read with ``WNOWAIT``: the zombie stays, ``held``, until
        :meth:`reap_held` (its pid is not free for reuse until then); the pidfd
        is no longer watched. A stolen child's pidfd is closed at once.
        """
        if self.pidfd is None or self.held:
            return None
        try:
            res = os.waitid(os.P_PIDFD, self.pidfd, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            res = None
            stolen = True
        else:
            stolen = False
            if res is None:
                return None
        if res is None:
            self.close_pidfd(loop)
            code, sig = 255, None
        else:
            if loop is not None:
                loop.remove_reader(self.pidfd)
            self.held = True
            if res.si_code == os.CLD_EXITED:
                code, sig = res.si_status, None
            else:
                code, sig = 128 + res.si_status, res.si_status
        self.popen.returncode = code if sig is None else -sig
        return code, sig, stolen

    def reap_held(self) -> bool:
        """Reap its held zombie and close the pidfd; False if none was held."""
        if not self.held or self.pidfd is None:
            return False
        with contextlib.suppress(ChildProcessError):
            os.waitid(os.P_PIDFD, self.pidfd, os.WEXITED | os.WNOHANG)
        self.held = False
        self.close_pidfd(None)
        return True

    def close_stream(self, stream: Stream, loop: asyncio.AbstractEventLoop | None) -> bool:
        """Close one pipe's read end; False if it was closed already."""
        if stream not in self.open_streams:
            return False
        self.open_streams.discard(stream)
        fd = self.stream_fds[stream]
        if loop is not None:
            loop.remove_reader(fd)
        os.close(fd)
        return True

    def terminal_fd(self) -> int | None:
        """An fd of its terminal's master while one is open (spawned with
        ``pty``): where output is read from, or where input goes."""
        if self.screen is None:
            return None
        if Stream.STDOUT in self.open_streams:
            return self.stream_fds[Stream.STDOUT]
        return self.stdin_fd

    def close_logs(self) -> None:
        with contextlib.suppress(OSError):
            self.disk.close()

    def close_stdin(self, loop: asyncio.AbstractEventLoop | None) -> bool:
        """Close the write end of its stdin (the child reads EOF); False if closed."""
        fd, self.stdin_fd = self.stdin_fd, None
        if fd is None:
            return False
        if loop is not None:
            loop.remove_writer(fd)
        os.close(fd)
        return True

    def cancel_timers(self) -> None:
        """Stop its timeout and partial-line timers (it exited, or is dismissed)."""
        if self.timeout_handle is not None:
            self.timeout_handle.cancel()
            self.timeout_handle = None
        for handle in self.partial_timers.values():
            handle.cancel()
        self.partial_timers.clear()
