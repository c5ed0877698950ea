"""The supervisor: spawns, watches, captures, signals and reaps children."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import logging
import os
import secrets
import shutil
import signal
import subprocess
import time
import warnings
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import TracebackType
from typing import Protocol

import psutil

from . import _linux
from ._errors import (
    CommandNotFound,
    CwdMissing,
    InvalidArgv,
    NotExecutable,
    ProcNotFound,
    ProcRunning,
    ProcwindowError,
    SpawnFailed,
)
from ._output import LogFile, OutputStore, prepare_log_dir
from ._proc import Proc
from ._statefile import StateFile, recover_leftovers
from ._topics import Pattern, check_scope_name, topic_for
from ._types import (
    Event,
    EventKind,
    ExitInfo,
    ExitReason,
    ProcState,
    ProcStats,
    ReadBatch,
    Stream,
)
from ._watchdog import Watchdog

__all__ = ["Clock", "Subscription", "Supervisor"]

log = logging.getLogger("procwindow")

#: Default bound of the in-memory ring, in lines per proc.
DEFAULT_RING_LINES = 100_000
#: Default bound of the in-memory ring, in bytes per proc.
DEFAULT_RING_BYTES = 32 * 1024 * 1024
#: Default seconds between SIGTERM and SIGKILL.
DEFAULT_GRACEFUL_TIMEOUT = 5.0
#: Default bound of a subscriber's queue; past it, events are counted as missed.
DEFAULT_QUEUE_SIZE = 4096
#: Output events are coalesced per proc and stream over this many seconds.
OUTPUT_EVENT_INTERVAL = 0.05
#: How often (seconds) orphaned descendants are looked for and reaped.
SWEEP_INTERVAL = 1.0
#: A pipe that fills is enlarged to this size (F_SETPIPE_SZ): fewer, bigger reads.
BIG_PIPE = 1024 * 1024
#: How long a /proc snapshot is reused by signals sent in the same burst.
_SNAPSHOT_TTL = 0.1
#: Delay of the sweep that follows an exit or a dismiss (coalesces bursts).
_SWEEP_SOON = 0.1
#: Poll interval while waiting for a proc's leftover descendants to die.
_TREE_POLL = 0.02

_subreaper_users = 0


class Clock(Protocol):
    """Where the supervisor gets time from (a seam for tests)."""

    def time(self) -> float:
        """Wall-clock seconds since the epoch."""
        ...

    def monotonic(self) -> float:
        """Monotonic seconds, for runtimes."""
        ...


class _SystemClock:
    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()


@dataclass(slots=True)
class _Snapshot:
    """One pass over /proc: who is whose child, who carries our marker."""

    taken: float
    children: dict[int, list[int]] = field(default_factory=dict)
    info: dict[int, tuple[str, int, int]] = field(default_factory=dict)  # state, pgrp, start
    marked: dict[int, list[int]] = field(default_factory=dict)

    def descendants(self, pid: int) -> list[int]:
        out: list[int] = []
        todo = [pid]
        while todo:
            for child in self.children.get(todo.pop(), ()):
                out.append(child)
                todo.append(child)
        return out


def _take_snapshot(needle: bytes, markers: dict[int, tuple[int, int | None]]) -> _Snapshot:
    """One pass over /proc. ``markers`` caches {pid: (start time, proc id or None)}
    across passes: a process's marker is read once, not on every pass."""
    snap = _Snapshot(time.monotonic())
    me = os.getpid()
    seen: dict[int, tuple[int, int | None]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        fields = _linux.stat_fields(pid)
        if fields is None:
            continue
        state, ppid, pgrp, start = fields
        snap.info[pid] = (state, pgrp, start)
        snap.children.setdefault(ppid, []).append(pid)
        known = markers.get(pid)
        if known is None or known[0] != start:
            known = (start, None if pid == me else _linux.read_marker(pid, needle))
        seen[pid] = known
        if known[1] is not None and state not in ("Z", "X"):
            snap.marked.setdefault(known[1], []).append(pid)
    markers.clear()
    markers.update(seen)
    return snap


class Subscription:
    """An async iterator of the events whose topic matches a pattern.

    Its queue is bounded: when it is full, new events are dropped and counted,
    and the next event delivered carries the count in ``Event.missed``.
    ``missed`` is the running total. Close it (or leave ``async with``) to stop.
    """

    def __init__(self, pattern: Pattern, maxsize: int, on_close: _Unsubscribe) -> None:
        self.pattern = pattern
        self.missed = 0
        self._maxsize = maxsize
        self._queue: deque[Event] = deque()
        self._pending_missed = 0
        self._waiter: asyncio.Future[None] | None = None
        self._closed = False
        self._on_close = on_close

    def _push(self, ev: Event) -> None:
        if self._closed:
            return
        if len(self._queue) >= self._maxsize:
            self.missed += 1
            self._pending_missed += 1
            return
        if self._pending_missed:
            ev = replace(ev, missed=self._pending_missed)
            self._pending_missed = 0
        self._queue.append(ev)
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def get_nowait(self) -> Event | None:
        """The next queued event, or None."""
        return self._queue.popleft() if self._queue else None

    def close(self) -> None:
        """Stop receiving; iteration ends after the queued events."""
        if not self._closed:
            self._closed = True
            self._on_close(self)
            self._wake()

    @property
    def closed(self) -> bool:
        """True once closed (by the caller or by the supervisor's close)."""
        return self._closed

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Event:
        while not self._queue:
            if self._closed:
                raise StopAsyncIteration
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._queue.popleft()

    async def __aenter__(self) -> Subscription:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<Subscription {self.pattern.text!r} queued={len(self._queue)}>"


class _Unsubscribe(Protocol):
    def __call__(self, sub: Subscription, /) -> None: ...


def _default_log_root() -> str:
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return os.path.join(base, "procwindow", "logs")


class Supervisor:
    """Supervises child processes on the running asyncio loop (Linux).

    >>> async def demo():  # doctest: +SKIP
    ...     async with Supervisor() as sup:
    ...         p = await sup.spawn(["echo", "hi"], session="s1", agent="a1")
    ...         await sup.wait(p.id)
    ...         return [line.text for line in sup.read(p.id).lines]

    Each child runs in its own process group with stdin on /dev/null; both pipes
    are always drained into a raw log file per stream and a bounded ring of
    lines. Exit is seen through a pidfd, never from pipe EOF. Leaving the
    ``async with`` block (or ``await close()``) terminates every running child
    with escalation and leaves no process, fd or thread behind.

    ``log_dir=None`` logs under ``$XDG_STATE_HOME/procwindow/logs/<run>/`` and
    removes that directory on close; a given ``log_dir`` is kept.
    ``subreaper=True`` makes this process the reaper of orphaned descendants
    (``PR_SET_CHILD_SUBREAPER``), so a ``setsid`` grandchild cannot escape.
    ``watchdog=True`` starts, with the first child, a small process that kills
    every child and descendant if this process dies without closing the
    supervisor (SIGKILL, a crash); a state file under ``$XDG_STATE_HOME``
    lets the next supervisor finish the job if the watchdog died too.
    """

    def __init__(
        self,
        log_dir: str | os.PathLike[str] | None = None,
        ring_lines: int = DEFAULT_RING_LINES,
        graceful_timeout: float = DEFAULT_GRACEFUL_TIMEOUT,
        *,
        ring_bytes: int = DEFAULT_RING_BYTES,
        subreaper: bool = True,
        watchdog: bool = True,
        clock: Clock | None = None,
    ) -> None:
        _linux.require_linux()
        if ring_lines < 1 or ring_bytes < 1:
            raise ValueError("ring_lines and ring_bytes must be positive")
        if graceful_timeout < 0:
            raise ValueError("graceful_timeout must be ≥ 0")
        self.ring_lines = ring_lines
        self.ring_bytes = ring_bytes
        self.graceful_timeout = graceful_timeout
        self._clock: Clock = clock or _SystemClock()
        self._token = f"{os.getpid()}.{secrets.token_hex(4)}"
        if log_dir is None:
            stamp = time.strftime("%Y%m%d-%H%M%S")
            self._log_dir = os.path.join(_default_log_root(), f"{stamp}-{self._token}")
            self._own_log_dir = True
        else:
            self._log_dir = os.fspath(log_dir)
            self._own_log_dir = False
        self._log_dir_ready = False
        self._want_subreaper = subreaper
        self._watchdog = Watchdog(self._token) if watchdog else None
        self._statefile = StateFile(self._token)
        self._is_subreaper = False
        self._procs: dict[int, Proc] = {}
        self._next_id = 1
        self._subs: list[Subscription] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._devnull: int | None = None
        self._snapshot: _Snapshot | None = None
        self._needle = _linux.marker_needle(self._token)
        self._read_buf = bytearray(BIG_PIPE)
        self._read_view = memoryview(self._read_buf)
        self._markers: dict[int, tuple[int, int | None]] = {}
        self._adopted: dict[int, int] = {}  # orphaned descendant pid -> its start time
        self._pgids: set[int] = set()  # process groups our procs led
        self._sweep_handle: asyncio.Handle | None = None
        self._sweep_due = 0.0
        self._out_flush: asyncio.Handle | None = None
        self._out_dirty: set[Proc] = set()
        self._closed = False
        self._closing = False
        self._tasks: set[asyncio.Task[object]] = set()

    # -- lifecycle -----------------------------------------------------------

    async def __aenter__(self) -> Supervisor:
        self._bind_loop()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def _bind_loop(self) -> asyncio.AbstractEventLoop:
        loop = asyncio.get_running_loop()
        if self._loop is None:
            if self._closed:
                raise ProcwindowError("this supervisor is closed")
            self._loop = loop
            # Children of a supervisor that died with its watchdog: stop them now.
            recover_leftovers()
            self._devnull = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
            if self._want_subreaper:
                global _subreaper_users
                if _subreaper_users or _linux.set_subreaper(True):
                    _subreaper_users += 1
                    self._is_subreaper = True
        elif loop is not self._loop:
            raise ProcwindowError("a Supervisor is bound to the event loop it first ran on")
        return loop

    @property
    def closed(self) -> bool:
        """True once ``close`` has finished."""
        return self._closed

    @property
    def log_dir(self) -> str:
        """Where the raw log files go."""
        return self._log_dir

    async def close(self) -> None:
        """Terminate every running proc (with escalation), kill what they left
        behind, close every pipe and log, and end every subscription."""
        if self._closed or self._closing:
            return
        self._closing = True
        try:
            if self._loop is not None:
                await self.term_all()
                self._snap(fresh=True)
                for p in list(self._procs.values()):
                    self._kill_leftovers(p, fresh=False)
                    self._close_streams(p)
                await self._reap_adopted(deadline=time.monotonic() + 2.0)
        finally:
            for p in self._procs.values():
                self._close_streams(p)
            for task in list(self._tasks):
                task.cancel()
            for handle in (self._sweep_handle, self._out_flush):
                if handle is not None:
                    handle.cancel()
            self._flush_output_events()
            for sub in list(self._subs):
                sub.close()
            if self._devnull is not None:
                os.close(self._devnull)
                self._devnull = None
            if self._watchdog is not None:
                self._watchdog.close()
            self._statefile.close()
            if self._is_subreaper:
                global _subreaper_users
                _subreaper_users -= 1
                if _subreaper_users == 0:
                    _linux.set_subreaper(False)
                self._is_subreaper = False
            if self._own_log_dir and self._log_dir_ready:
                shutil.rmtree(self._log_dir, ignore_errors=True)
            self._closed = True

    def __del__(self) -> None:
        if getattr(self, "_loop", None) is not None and not getattr(self, "_closed", True):
            warnings.warn(
                f"unclosed {self!r}: its children were left running (call close())",
                ResourceWarning,
                stacklevel=2,
            )

    def __repr__(self) -> str:
        running = sum(p.running for p in self._procs.values())
        state = "closed" if self._closed else "open"
        return f"<Supervisor {state} procs={len(self._procs)} running={running}>"

    # -- spawning ------------------------------------------------------------

    async def spawn(
        self,
        argv: Sequence[str],
        *,
        session: str,
        agent: str,
        tool: str = "shell",
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str | None] | None = None,
        graceful_timeout: float | None = None,
    ) -> Proc:
        """Start ``argv`` for scope ``(session, agent)``; return its Proc.

        No shell is involved: metacharacters reach the child literally. ``env``
        adds to or overrides the inherited environment (a value of None removes
        a variable). ``graceful_timeout`` overrides the supervisor's for this proc.

        Raises CommandNotFound, NotExecutable, CwdMissing, InvalidArgv,
        InvalidScope or SpawnFailed, and then leaves nothing behind.
        """
        loop = self._bind_loop()
        if self._closing or self._closed:
            raise ProcwindowError("this supervisor is closing")
        args = _check_argv(argv)
        check_scope_name("session", session)
        check_scope_name("agent", agent)
        if not isinstance(tool, str) or not tool or any(c in tool for c in "\t\n\r\0"):
            raise InvalidArgv(f"tool must be a non-empty single-line string, got {tool!r}")
        cwd_s = _check_cwd(cwd)
        overrides = _check_env(env)
        if graceful_timeout is not None and not graceful_timeout >= 0:
            raise ValueError(f"graceful_timeout must be ≥ 0, got {graceful_timeout!r}")
        proc_id = self._next_id
        child_env = dict(os.environ)
        for key, value in (overrides or {}).items():
            if value is None:
                child_env.pop(key, None)
            else:
                child_env[key] = value
        child_env[_linux.MARKER_VAR] = f"{self._token}:{proc_id}"
        exe = _resolve(args[0], child_env, cwd_s)
        self._ensure_log_dir()

        fds: list[int] = []
        try:
            try:
                out_r, out_w = os.pipe2(os.O_CLOEXEC)
                fds += (out_r, out_w)
                err_r, err_w = os.pipe2(os.O_CLOEXEC)
                fds += (err_r, err_w)
            except OSError as exc:  # EMFILE, ENFILE
                raise SpawnFailed(
                    exc.errno, f"cannot create pipes for {args[0]!r}: {exc.strerror}"
                ) from exc
            popen = _popen(args, exe, cwd_s, child_env, self._devnull, out_w, err_w)
        except BaseException:
            for fd in fds:
                os.close(fd)
            raise
        os.close(out_w)
        os.close(err_w)
        try:
            pidfd = os.pidfd_open(popen.pid)
        except OSError as exc:
            # We cannot watch it: do not let it run unsupervised.
            os.killpg(popen.pid, signal.SIGKILL)
            popen.wait()
            os.close(out_r)
            os.close(err_r)
            raise SpawnFailed(exc.errno, f"pidfd_open: {exc.strerror}") from exc
        self._next_id += 1
        start_time = _linux.stat_fields(popen.pid)
        if start_time is not None:
            if self._watchdog is not None:
                self._watchdog.started(popen.pid, start_time[3])
            self._statefile.started(popen.pid, start_time[3])
        now_wall, now_mono = self._clock.time(), self._clock.monotonic()
        stream_fds = {Stream.STDOUT: out_r, Stream.STDERR: err_r}
        p = Proc(
            proc_id=proc_id,
            argv=args,
            session=session,
            agent=agent,
            tool=tool,
            cwd=cwd_s,
            env=dict(overrides) if overrides is not None else None,
            popen=popen,
            pidfd=pidfd,
            store=OutputStore(self.ring_lines, self.ring_bytes, self._clock.time),
            logs={s: LogFile(self.log_path(proc_id, s)) for s in Stream},
            stream_fds=stream_fds,
            started_at=now_wall,
            started_mono=now_mono,
            exit_fut=loop.create_future(),
            graceful_timeout=graceful_timeout,
        )
        self._procs[proc_id] = p
        self._pgids.add(p.pgid)
        for stream, fd in stream_fds.items():
            os.set_blocking(fd, False)
            loop.add_reader(fd, self._on_readable, p, stream)
        loop.add_reader(pidfd, self._on_pidfd, p)
        self._publish(p, EventKind.START, os_pid=p.os_pid, tool=tool, cmd=p.cmd, at=now_wall)
        self._schedule_sweep(SWEEP_INTERVAL)
        return p

    async def restart(self, proc_id: int) -> Proc:
        """Start the same argv, scope, tool, cwd and env again, as a new proc (new id)."""
        p = self.get(proc_id)
        return await self.spawn(
            p.argv,
            session=p.session,
            agent=p.agent,
            tool=p.tool,
            cwd=p.cwd,
            env=p.env,
            graceful_timeout=p.graceful_timeout,
        )

    def _ensure_log_dir(self) -> None:
        if not self._log_dir_ready:
            try:
                prepare_log_dir(self._log_dir)
                self._log_dir_ready = True
            except OSError as exc:
                # Logging is best effort: each LogFile will carry the error.
                log.warning("cannot create log dir %s: %s", self._log_dir, exc)

    # -- capture -------------------------------------------------------------

    def _on_readable(self, p: Proc, stream: Stream) -> None:
        fd = p._stream_fds[stream]
        size = p._read_size[stream]
        try:
            n = os.readv(fd, [self._read_view[:size]])
        except BlockingIOError:
            return
        except OSError:
            n = 0
        if not n:
            self._end_stream(p, stream)
            return
        self._ingest(p, stream, n)
        if n == size and size < BIG_PIPE:
            # The pipe was full: the child writes faster than we wake up.
            # A bigger pipe means fewer, larger reads (DESIGN.md: ~3× throughput).
            with contextlib.suppress(OSError):
                fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, BIG_PIPE)
                p._read_size[stream] = BIG_PIPE

    def _ingest(self, p: Proc, stream: Stream, n: int) -> None:
        # One shared read buffer: reads never allocate, and the ring copies out
        # only what it keeps (a fresh 1 MiB bytes per read fragments the heap).
        p._logs[stream].write(self._read_view[:n])
        try:
            seqs = p._store.feed(stream, self._read_buf, n)
        except Exception:
            # A failure of ours must not stop the draining (the child would block
            # on a full pipe): log it once per proc, lose these lines, go on.
            if not p._capture_failed:
                p._capture_failed = True
                log.exception("proc %d: capture failed; its %s lines are lost", p.id, stream)
            return
        if seqs is not None and self._subs:
            self._note_output(p, stream, seqs)

    def _drain(self, p: Proc, stream: Stream) -> None:
        """Read what is in the pipe now, without waiting."""
        fd = p._stream_fds.get(stream)
        while fd is not None and stream in p._open_streams:
            try:
                n = os.readv(fd, [self._read_view])
            except BlockingIOError:
                return
            except OSError:
                n = 0
            if not n:
                self._end_stream(p, stream)
                return
            self._ingest(p, stream, n)

    def _end_stream(self, p: Proc, stream: Stream) -> None:
        if stream not in p._open_streams:
            return
        p._open_streams.discard(stream)
        fd = p._stream_fds[stream]
        if self._loop is not None:
            self._loop.remove_reader(fd)
        os.close(fd)
        seqs = p._store.flush(stream)
        if seqs is not None and self._subs:
            self._note_output(p, stream, seqs)
        p._logs[stream].finish()

    def _close_streams(self, p: Proc) -> None:
        for stream in list(p._open_streams):
            self._end_stream(p, stream)
        for log_file in p._logs.values():
            log_file.close()

    def _note_output(self, p: Proc, stream: Stream, seqs: tuple[int, int]) -> None:
        span = p._out_pending.get(stream)
        if span is None:
            p._out_pending[stream] = [seqs[0], seqs[1]]
        else:
            span[1] = seqs[1]
        self._out_dirty.add(p)
        if self._out_flush is None and self._loop is not None:
            self._out_flush = self._loop.call_later(
                OUTPUT_EVENT_INTERVAL, self._flush_output_events
            )

    def _flush_output_events(self) -> None:
        self._out_flush = None
        dirty, self._out_dirty = self._out_dirty, set()
        for p in sorted(dirty, key=lambda q: q.id):
            pending, p._out_pending = p._out_pending, {}
            for stream, (first, last) in pending.items():
                self._publish(p, EventKind.OUTPUT, stream=stream, first_seq=first, last_seq=last)

    # -- exit ----------------------------------------------------------------

    def _on_pidfd(self, p: Proc) -> None:
        pidfd = p._pidfd
        if pidfd is None:
            return
        try:
            res = os.waitid(os.P_PIDFD, pidfd, os.WEXITED | os.WNOHANG)
        except ChildProcessError:
            res = None
            stolen = True
        else:
            stolen = False
            if res is None:  # woken, but not exited yet
                return
        assert self._loop is not None
        self._loop.remove_reader(pidfd)
        os.close(pidfd)
        p._pidfd = None
        if self._watchdog is not None:
            self._watchdog.reaped(p.os_pid)
        self._statefile.reaped(p.os_pid)
        if res is None:
            log.warning("proc %d: its exit status was reaped by someone else", p.id)
            code, sig = 255, None
        elif res.si_code == os.CLD_EXITED:
            code, sig = res.si_status, None
        else:
            code, sig = 128 + res.si_status, res.si_status
        p._popen.returncode = code if sig is None else -sig
        # Everything the child wrote is in the pipes now: take it before
        # announcing the exit, so a reader woken by the exit sees all output.
        try:
            for stream in Stream:
                self._drain(p, stream)
        except Exception:  # the exit must be recorded whatever happened above
            log.exception("proc %d: draining its pipes at exit failed", p.id)
        p._ended_at = self._clock.time()
        p._ended_mono = self._clock.monotonic()
        reason = _exit_reason(p, code, sig, stolen)
        p._exit = ExitInfo(code, sig, reason, p.runtime(p._ended_mono))
        p._state = ProcState.EXITED
        if not p._exit_fut.done():
            p._exit_fut.set_result(p._exit)
        self._publish(
            p,
            EventKind.EXIT,
            code=code,
            signal=sig,
            reason=reason,
            runtime=p._exit.runtime,
            tool=p.tool,
            cmd=p.cmd,
            at=p._ended_at,
        )
        # Its orphans were just re-parented to us: adopt them soon, while they live.
        self._schedule_sweep(_SWEEP_SOON)

    # -- queries -------------------------------------------------------------

    def get(self, proc_id: int) -> Proc:
        """The proc with this id; ProcNotFound if there is none."""
        try:
            return self._procs[proc_id]
        except (KeyError, TypeError):
            raise ProcNotFound(proc_id) from None

    def procs(self, session: str | None = None, agent: str | None = None) -> list[Proc]:
        """The procs of a scope (None: any), newest first."""
        return [
            p
            for p in reversed(self._procs.values())
            if (session is None or p.session == session) and (agent is None or p.agent == agent)
        ]

    def runtime(self, proc_id: int) -> float:
        """Seconds the proc has run (until its exit)."""
        return self.get(proc_id).runtime(self._clock.monotonic())

    def read(
        self,
        proc_id: int,
        since: int = 0,
        *,
        limit: int | None = None,
        stream: Stream | str | None = None,
    ) -> ReadBatch:
        """Lines with ``seq > since``, oldest first, across both streams.

        Pass the returned ``cursor`` as ``since`` next time to get each line once.
        ``dropped`` counts lines after ``since`` that fell off the ring; they are
        still in the log files (``log_path``).
        """
        p = self.get(proc_id)
        want = Stream(stream) if stream is not None else None
        lines, dropped, cursor = p._store.read(since, limit, want)
        eof = not p._open_streams and cursor >= p._store.last_seq
        return ReadBatch(lines, dropped, cursor, eof)

    def log_path(self, proc_id: int, stream: Stream | str = Stream.STDOUT) -> str:
        """Path of the raw log file of a proc's stream (named from ids only)."""
        return os.path.join(self._log_dir, f"{int(proc_id)}.{Stream(stream).value}.log")

    async def wait(self, proc_id: int) -> ExitInfo:
        """Wait until the proc exits; return how it ended."""
        p = self.get(proc_id)
        return await asyncio.shield(p._exit_fut)

    # -- events --------------------------------------------------------------

    def subscribe(self, pattern: str, *, maxsize: int = DEFAULT_QUEUE_SIZE) -> Subscription:
        """Events whose topic matches ``pattern`` (``*`` one token, ``>`` the rest).

        Topics are ``session.{sid}.agent.{aid}.proc.{start|stopping|exit|output|dismiss}``.
        Raises InvalidPattern for a malformed pattern.
        """
        sub = Subscription(Pattern(pattern), maxsize, self._unsubscribe)
        if self._closed:
            sub.close()
        else:
            self._subs.append(sub)
        return sub

    def _unsubscribe(self, sub: Subscription) -> None:
        with contextlib.suppress(ValueError):
            self._subs.remove(sub)

    def _publish(
        self, p: Proc, kind: EventKind, *, at: float | None = None, **fields: object
    ) -> None:
        if not self._subs:
            return
        topic = topic_for(p.session, p.agent, kind.value)
        ev: Event | None = None
        for sub in list(self._subs):
            if sub.pattern.matches(topic):
                if ev is None:
                    ev = Event(
                        topic=topic,
                        kind=kind,
                        proc_id=p.id,
                        session=p.session,
                        agent=p.agent,
                        time=self._clock.time() if at is None else at,
                        **fields,  # type: ignore[arg-type]
                    )
                sub._push(ev)

    # -- signals -------------------------------------------------------------

    async def term(self, proc_id: int) -> ExitInfo:
        """SIGTERM then SIGCONT to the proc's group and descendants; SIGKILL after
        ``graceful_timeout``. Returns how it ended. On an exited proc it stops
        what the proc left behind (a grandchild holding its pipes) the same way."""
        p = self.get(proc_id)
        if p._exit is not None:
            await self._stop_leftovers(p)
            return p._exit
        if p._stop_task is None:
            p._stop_task = asyncio.ensure_future(self._terminate(p))
        return await asyncio.shield(p._stop_task)

    async def kill(self, proc_id: int) -> ExitInfo:
        """SIGKILL to the proc's group and descendants now; wait for the exit."""
        p = self.get(proc_id)
        if p._exit is None:
            p._kill_requested = True
            if p._state is not ProcState.STOPPING:
                p._state = ProcState.STOPPING
                self._publish(p, EventKind.STOPPING)
            self._signal_tree(p, signal.SIGKILL)
        else:
            self._kill_leftovers(p)
        return await asyncio.shield(p._exit_fut)

    async def interrupt(self, proc_id: int) -> bool:
        """SIGINT to the proc's group, as Ctrl-C would. False if it already exited."""
        return await self.signal(proc_id, signal.SIGINT)

    async def signal(self, proc_id: int, sig: int) -> bool:
        """Send ``sig`` to the proc's process group. False if it already exited.

        Sent only while the child is unreaped, so a reused pid is never hit.
        """
        p = self.get(proc_id)
        if p._pidfd is None:
            return False
        if sig not in (0, signal.SIGCONT):
            p._signalled = True
        return self._signal_group(p, sig)

    def dismiss(self, proc_id: int, keep_logs: bool = False) -> None:
        """Forget an exited proc: kill what it left behind, close its pipes, and
        delete its log files unless ``keep_logs``. ProcRunning if it still runs."""
        p = self.get(proc_id)
        if p._exit is None:
            raise ProcRunning(proc_id)
        if p._open_streams:
            # Someone still holds its pipes: find and kill them now.
            self._kill_leftovers(p)
        else:
            # Leftovers that let go of the pipes (daemons) are found by the next
            # sweep, which kills whatever carries the marker of a dismissed proc.
            self._schedule_sweep(_SWEEP_SOON)
        self._close_streams(p)
        if not keep_logs:
            for stream in Stream:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.log_path(proc_id, stream))
        del self._procs[proc_id]
        self._out_dirty.discard(p)
        self._publish(p, EventKind.DISMISS)

    async def term_all(self, session: str | None = None, agent: str | None = None) -> None:
        """``term`` every running proc of a scope (None: any), concurrently."""
        await asyncio.gather(*(self.term(p.id) for p in self.procs(session, agent) if p.running))

    async def kill_all(self, session: str | None = None, agent: str | None = None) -> None:
        """``kill`` every running proc of a scope (None: any), concurrently."""
        await asyncio.gather(*(self.kill(p.id) for p in self.procs(session, agent) if p.running))

    async def _terminate(self, p: Proc) -> ExitInfo:
        if p._exit is not None:  # it exited before this task first ran
            await self._stop_leftovers(p)
            return p._exit
        p._state = ProcState.STOPPING
        p._signalled = True
        self._publish(p, EventKind.STOPPING)
        self._signal_tree(p, signal.SIGTERM)
        self._signal_tree(p, signal.SIGCONT)
        grace = self._grace(p)
        deadline = time.monotonic() + grace
        try:
            await asyncio.wait_for(asyncio.shield(p._exit_fut), grace)
        except TimeoutError:
            if p._exit is None:
                p._escalated = True
                self._signal_tree(p, signal.SIGKILL, fresh=True)
            await asyncio.shield(p._exit_fut)
        await self._stop_leftovers(p, deadline=deadline, already_termed=True)
        assert p._exit is not None
        return p._exit

    def _grace(self, p: Proc) -> float:
        return self.graceful_timeout if p.graceful_timeout is None else p.graceful_timeout

    async def _stop_leftovers(
        self, p: Proc, deadline: float | None = None, already_termed: bool = False
    ) -> None:
        """After the leader exited: TERM what remains of its tree, KILL it at the deadline."""
        if not self._tree(p):
            return
        if not already_termed:
            self._signal_tree(p, signal.SIGTERM)
            self._signal_tree(p, signal.SIGCONT)
        if deadline is None:
            deadline = time.monotonic() + self._grace(p)
        # Nothing signals "a non-child pid died": poll /proc.
        while self._tree(p) and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(_TREE_POLL)
        self._kill_leftovers(p, fresh=True)

    def _kill_leftovers(self, p: Proc, fresh: bool = True) -> None:
        # Snapshots are shared by signals sent in one burst (term_all of 500
        # procs reads /proc once, not 500 times); ``fresh`` forces a new one.
        if self._tree(p, fresh=fresh):
            self._signal_tree(p, signal.SIGKILL)
            self._schedule_sweep(_TREE_POLL)

    def _snap(self, fresh: bool = False) -> _Snapshot:
        snap = self._snapshot
        if fresh or snap is None or time.monotonic() - snap.taken > _SNAPSHOT_TTL:
            snap = self._snapshot = _take_snapshot(self._needle, self._markers)
        return snap

    def _tree(self, p: Proc, fresh: bool = False) -> dict[int, int]:
        """Live members of a proc's tree, leader excluded: {pid: start time}.

        Its descendants by parentage while the leader lives, plus every process
        carrying its marker (found even after a ``setsid`` and the leader's exit).
        """
        snap = self._snap(fresh)
        pids = set(snap.marked.get(p.id, ()))
        if p._pidfd is not None:
            pids.update(snap.descendants(p.os_pid))
        pids.discard(p.os_pid)
        out: dict[int, int] = {}
        for pid in pids:
            info = snap.info.get(pid)
            if info is not None and info[0] not in ("Z", "X"):
                out[pid] = info[2]
        return out

    def _signal_group(self, p: Proc, sig: int) -> bool:
        pidfd = p._pidfd
        if pidfd is None:
            return False
        # The leader is unreaped, so its pid — and so its group id — cannot have
        # been reused: killpg is safe. If the leader left its group, reach it by pidfd.
        leader = _linux.stat_fields(p.os_pid)
        if leader is not None and leader[2] != p.pgid:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(pidfd, sig)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(p.pgid, sig)
        return True

    def _signal_tree(self, p: Proc, sig: int, fresh: bool = False) -> None:
        group_sent = self._signal_group(p, sig)
        snap = self._snap(fresh)
        for pid, start in self._tree(p).items():
            info = snap.info.get(pid)
            if group_sent and info is not None and info[1] == p.pgid:
                continue  # the group signal reached it
            now = _linux.stat_fields(pid)
            if now is None or now[3] != start:
                continue  # gone, or its pid was reused since the snapshot
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
            self._adopted.setdefault(pid, start)

    # -- orphans ---------------------------------------------------------------

    def _schedule_sweep(self, delay: float) -> None:
        if self._loop is None or self._closed:
            return
        due = self._loop.time() + delay
        if self._sweep_handle is not None:
            if self._sweep_due <= due:
                return
            self._sweep_handle.cancel()
        self._sweep_due = due
        self._sweep_handle = self._loop.call_later(delay, self._sweep)

    def _sweep(self) -> None:
        """Kill what dismissed procs left behind; adopt orphaned descendants
        (re-parented to us as subreaper) and reap the dead ones.

        Never ``waitpid(-1)``: that would steal statuses of children the host
        started. Only pids known to be ours are reaped, each by its own pid.
        """
        self._sweep_handle = None
        try:
            self._sweep_once()
        except Exception:  # a sweep must never take the loop down
            log.exception("orphan sweep failed")
        if any(p._pidfd is not None for p in self._procs.values()) or self._adopted:
            self._schedule_sweep(SWEEP_INTERVAL)

    def _sweep_once(self) -> None:
        me = os.getpid()
        snap = self._snap(fresh=True)
        for proc_id, pids in snap.marked.items():
            if proc_id in self._procs:
                continue
            for pid in pids:  # a leftover of a dismissed proc
                start = snap.info[pid][2]
                now = _linux.stat_fields(pid)
                if now is not None and now[3] == start:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
                    self._adopted.setdefault(pid, start)
        if not self._is_subreaper:
            self._adopted.clear()  # init reaps them
            return
        leaders = {p.os_pid for p in self._procs.values() if p._pidfd is not None}
        # Groups our procs led, also after their dismiss, while anything is in them.
        present = {info[1] for info in snap.info.values()}
        self._pgids.intersection_update(present | {p.pgid for p in self._procs.values()})
        for pid in snap.children.get(me, ()):
            if pid in leaders:
                continue
            state, pgrp, start = snap.info[pid]
            marker = self._markers.get(pid)
            ours = (
                self._adopted.get(pid) == start
                # seen alive with our marker (a zombie's environment is empty)
                or (marker is not None and marker[0] == start and marker[1] is not None)
                # a member, never the leader, of a group one of our procs led: the
                # host's own children cannot be in it (a reused pid would lead it)
                or (pgrp in self._pgids and pgrp != pid)
            )
            if not ours:
                continue  # the host's own child: its status is not ours to take
            if state == "Z":
                with contextlib.suppress(ChildProcessError):
                    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG)
                self._adopted.pop(pid, None)
            else:
                self._adopted.setdefault(pid, start)
        for pid, start in list(self._adopted.items()):
            info = snap.info.get(pid)
            if info is None or info[2] != start:
                del self._adopted[pid]  # gone (reaped by init, or not our child)

    async def _reap_adopted(self, deadline: float) -> None:
        while self._is_subreaper:
            self._sweep_once()
            if not self._adopted or time.monotonic() >= deadline:
                return
            await asyncio.sleep(_TREE_POLL)

    # -- reports ---------------------------------------------------------------

    def idx(self, session: str | None = None, agent: str | None = None) -> str:
        """The machine-readable index: a TSV with a header line, newest first.

        ``pid status exit_code tool cmd start_unix runtime_sec``; ``pid`` is the
        proc id, status ``running|exited``, exit code ``-1`` while running
        (``128+N`` after death by signal N), runtime with one decimal.
        """
        now = self._clock.monotonic()
        rows = ["pid\tstatus\texit_code\ttool\tcmd\tstart_unix\truntime_sec"]
        for p in self.procs(session, agent):
            status = "exited" if p._exit is not None else "running"
            code = p._exit.code if p._exit is not None else -1
            rows.append(
                f"{p.id}\t{status}\t{code}\t{p.tool}\t{p.cmd}\t{int(p.started_at)}"
                f"\t{p.runtime(now):.1f}"
            )
        return "\n".join(rows) + "\n"

    def top(self, session: str | None = None, agent: str | None = None) -> str:
        """A human-readable table of a scope's procs, newest first."""
        now = self._clock.monotonic()
        head = ("ID", "PID", "SCOPE", "TOOL", "STATUS", "EXIT", "RUNTIME", "COMMAND")
        rows = [head]
        for p in self.procs(session, agent):
            code = f"{p._exit.code} {p._exit.reason}" if p._exit is not None else "-"
            status = p.state.value
            rows.append(
                (
                    str(p.id),
                    str(p.os_pid),
                    f"{p.session}/{p.agent}",
                    p.tool,
                    status,
                    code,
                    format_runtime(p.runtime(now)),
                    p.cmd,
                )
            )
        widths = [max(len(r[i]) for r in rows) for i in range(len(head) - 1)]
        return "".join(
            "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1] + "\n"
            for r in rows
        )

    def stats(self, proc_id: int) -> ProcStats:
        """CPU %, RSS, I/O bytes and threads of the proc's whole live tree.

        CPU % is measured since the previous call for the same processes (0.0 the
        first time), so call it at a steady interval (the window: once a second).
        """
        p = self.get(proc_id)
        pids = list(self._tree(p))
        if p._pidfd is not None:
            pids.insert(0, p.os_pid)
        cache = p._ps_cache
        fresh: dict[int, psutil.Process] = {}
        cpu = 0.0
        rss = rd = wr = threads = 0
        for pid in pids:
            proc = cache.get(pid)
            try:
                if proc is None:
                    proc = psutil.Process(pid)
                with proc.oneshot():
                    cpu += proc.cpu_percent(None)
                    rss += proc.memory_info().rss
                    threads += proc.num_threads()
                    with contextlib.suppress(psutil.AccessDenied, AttributeError):
                        io = proc.io_counters()
                        rd += io.read_bytes
                        wr += io.write_bytes
                fresh[pid] = proc
            except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
                continue
        p._ps_cache = fresh
        return ProcStats(cpu, rss, rd, wr, threads, max(0, len(fresh) - (p._pidfd is not None)))


def format_runtime(seconds: float) -> str:
    """``45s``, ``2m 34s``, ``1h 02m`` — the window's and ``top``'s runtime text."""
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m {s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h {s % 3600 // 60:02d}m"
    return f"{s // 86400}d {s % 86400 // 3600:02d}h"


# -- spawn helpers -----------------------------------------------------------------


def _check_argv(argv: object) -> tuple[str, ...]:
    if isinstance(argv, (str, bytes)):
        raise InvalidArgv(f"argv must be a sequence of strings, not a {type(argv).__name__}")
    if not isinstance(argv, Iterable):
        raise InvalidArgv(f"argv must be a sequence of strings, got {argv!r}")
    args = tuple(argv)
    if not args:
        raise InvalidArgv("argv is empty")
    for i, arg in enumerate(args):
        if not isinstance(arg, str):
            raise InvalidArgv(f"argv[{i}] is a {type(arg).__name__}, not a str: {arg!r}")
        if "\0" in arg:
            raise InvalidArgv(f"argv[{i}] contains a NUL byte: {arg!r}")
    if not args[0]:
        raise InvalidArgv("argv[0] is empty")
    return args


def _check_cwd(cwd: str | os.PathLike[str] | None) -> str | None:
    if cwd is None:
        return None
    path = os.fspath(cwd)
    if "\0" in path:
        raise CwdMissing(path, "contains a NUL byte")
    if not os.path.exists(path):
        raise CwdMissing(path)
    if not os.path.isdir(path):
        raise CwdMissing(path, "not a directory")
    return path


def _check_env(env: Mapping[str, str | None] | None) -> dict[str, str | None] | None:
    if env is None:
        return None
    out: dict[str, str | None] = {}
    for key, value in env.items():
        if not isinstance(key, str) or not key or "=" in key or "\0" in key:
            raise InvalidArgv(f"invalid environment variable name: {key!r}")
        if value is not None and not isinstance(value, str):
            raise InvalidArgv(f"environment variable {key} must be a str or None, got {value!r}")
        if value is not None and "\0" in value:
            raise InvalidArgv(f"environment variable {key} contains a NUL byte: {value!r}")
        out[key] = value
    return out


def _resolve(cmd: str, env: Mapping[str, str], cwd: str | None) -> str:
    """The file to execute, or CommandNotFound / NotExecutable."""
    if "/" in cmd:
        path = cmd if os.path.isabs(cmd) else os.path.join(cwd or os.getcwd(), cmd)
        if not os.path.exists(path):
            raise CommandNotFound(cmd)
        _check_executable(cmd, path)
        return path
    denied: str | None = None
    for folder in os.get_exec_path(dict(env)):
        path = os.path.join(folder or ".", cmd)
        if os.path.isfile(path):
            if os.access(path, os.X_OK):
                return path
            denied = denied or path
    if denied is not None:
        raise NotExecutable(denied)
    raise CommandNotFound(cmd)


def _check_executable(cmd: str, path: str) -> None:
    if os.path.isdir(path):
        raise NotExecutable(cmd, "is a directory")
    if not os.access(path, os.X_OK):
        raise NotExecutable(cmd)


def _popen(
    args: tuple[str, ...],
    exe: str,
    cwd: str | None,
    env: dict[str, str],
    stdin: int | None,
    out_w: int,
    err_w: int,
) -> subprocess.Popen[bytes]:
    try:
        # Popen takes the vfork/posix_spawn fast path (no preexec_fn). process_group=0
        # puts the child in a group of its own before it execs.
        return subprocess.Popen(
            args,
            executable=exe,
            stdin=stdin,
            stdout=out_w,
            stderr=err_w,
            cwd=cwd,
            env=env,
            process_group=0,
            close_fds=True,
        )
    except FileNotFoundError as exc:
        if cwd is not None and exc.filename == cwd:
            raise CwdMissing(cwd) from exc
        raise CommandNotFound(args[0]) from exc
    except PermissionError as exc:
        raise NotExecutable(exe, exc.strerror or "permission denied") from exc
    except IsADirectoryError as exc:
        raise NotExecutable(exe, "is a directory") from exc
    except OSError as exc:
        if exc.errno == errno.E2BIG:
            size = sum(len(a) + 1 for a in args)
            raise InvalidArgv(
                f"argument list too long for the kernel ({size} bytes, E2BIG)"
            ) from exc
        if exc.errno == errno.ENOEXEC:
            raise NotExecutable(exe, "exec format error") from exc
        raise SpawnFailed(exc.errno, f"cannot start {args[0]!r}: {exc.strerror}") from exc


def _exit_reason(p: Proc, code: int, sig: int | None, stolen: bool) -> ExitReason:
    if p._escalated:
        return ExitReason.ESCALATED
    if p._kill_requested:
        return ExitReason.KILLED
    if p._signalled:
        return ExitReason.TERMINATED
    if sig is None and code == 0 and not stolen:
        return ExitReason.EXITED
    return ExitReason.FAILED
