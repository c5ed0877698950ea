"""The supervisor: spawns, watches, captures, signals and reaps children."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import functools
import logging
import os
import secrets
import shutil
import signal
import subprocess
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Protocol

import psutil

from . import _linux, _spawn
from ._errors import (
    ProcNotFound,
    ProcRunning,
    ProcwindowError,
    SpawnFailed,
    SupervisorClosed,
)
from ._events import Subscription
from ._output import LogFile, OutputStore
from ._private import check_private_file, private_dir, private_state_root
from ._proc import Proc
from ._reports import idx_text, top_text
from ._spawn import check_cwd, check_env, resolve
from ._statefile import StateFile, recover_leftovers
from ._text import format_runtime
from ._topics import Pattern, topic_for
from ._tree import Scanner, Snapshot
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
from .rules import (
    DEFAULT_GRACEFUL_TIMEOUT,
    check_argv,
    check_graceful_timeout,
    check_scope_name,
    check_tool,
)

__all__ = ["Clock", "Subscription", "Supervisor", "format_runtime"]

log = logging.getLogger("procwindow")

#: Default bound of the in-memory ring, in lines per proc.
DEFAULT_RING_LINES = 100_000
#: Default bound of the in-memory ring, in bytes per proc.
DEFAULT_RING_BYTES = 32 * 1024 * 1024
#: Default bound of a subscriber's queue; past it, events are counted as missed.
DEFAULT_QUEUE_SIZE = 4096
#: Output events are coalesced per proc and stream over this many seconds.
OUTPUT_EVENT_INTERVAL = 0.05
#: How often (seconds) leftovers of dismissed procs are looked for.
SWEEP_INTERVAL = 1.0
#: How often (seconds) a subreaper looks for orphans to reap; much more often
#: while orphans keep dying (a process that keeps re-forking).
REAP_INTERVAL = 0.1
_REAP_BUSY = 0.01
#: A pipe that fills is enlarged to this size (F_SETPIPE_SZ): fewer, bigger reads.
BIG_PIPE = 1024 * 1024
#: How long close() waits for children that got SIGKILL (a process in
#: uninterruptible sleep dies only when its I/O returns).
_KILL_WAIT = 5.0
#: Delay of the sweep that follows an exit or a dismiss (coalesces bursts).
_SWEEP_SOON = 0.1
#: Poll interval while waiting for a proc's leftover descendants to die.
_TREE_POLL = 0.02

_subreaper_users = 0
#: Process-wide, across supervisors: the children each reaps itself (through
#: its pidfd), with the call that does it. Orphan reaping never takes these.
_OWN_CHILDREN: dict[int, Callable[[], None]] = {}


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
    removes that directory on close; a given ``log_dir`` is kept. Either must be
    a directory of ours that nobody else can write to (UnsafePath otherwise).

    ``subreaper=True`` is for a process that belongs to the supervisor (as
    ``procwindow serve`` and the window do): it becomes the child subreaper
    (``PR_SET_CHILD_SUBREAPER``) and the supervisor reaps *every* orphan that
    is re-parented to it, so a process that keeps re-forking leaves no zombies
    behind. Do not use it in a process that waits for children of its own
    (``subprocess``, a thread pool of workers): their statuses could be taken.
    By default the supervisor finds descendants by their marker instead, and
    orphans go to init as usual.

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
        subreaper: bool = False,
        watchdog: bool = True,
        clock: Clock | None = None,
    ) -> None:
        _linux.require_linux()
        if ring_lines < 1 or ring_bytes < 1:
            raise ValueError("ring_lines and ring_bytes must be positive")
        self.ring_lines = ring_lines
        self.ring_bytes = ring_bytes
        self.graceful_timeout = check_graceful_timeout(graceful_timeout)
        self._clock: Clock = clock or _SystemClock()
        self._token = f"{os.getpid()}.{secrets.token_hex(4)}"
        if log_dir is None:
            stamp = time.strftime("%Y%m%d-%H%M%S")
            self._log_dir = os.path.join(private_state_root(), "logs", f"{stamp}-{self._token}")
            self._own_log_dir = True
        else:
            self._log_dir = os.fspath(log_dir)
            self._own_log_dir = False
            # Refuse an unsafe directory now, not at the first spawn.
            private_dir(self._log_dir, what="log_dir", create=False)
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
        self._scanner: Scanner | None = None
        self._read_buf = bytearray(BIG_PIPE)
        self._read_view = memoryview(self._read_buf)
        self._sweep_handle: asyncio.Handle | None = None
        self._sweep_due = 0.0
        self._reap_handle: asyncio.TimerHandle | None = None
        self._out_flush: asyncio.Handle | None = None
        self._out_dirty: set[Proc] = set()
        self._retry_kill: set[int] = set()  # procs whose tree could not be seen (fd limit)
        self._scan_due = False  # the next sweep reads /proc
        self._closed = False
        self._closing = False

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
                raise SupervisorClosed("this supervisor is closed")
            # Children of a supervisor that died with its watchdog: stop them now.
            try:
                recover_leftovers()
            except OSError as exc:
                log.warning("cannot look for leftovers of dead supervisors: %s", exc)
            self._devnull = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
            self._scanner = Scanner(self._token)
            self._loop = loop
            if self._want_subreaper:
                global _subreaper_users
                if _subreaper_users or _linux.set_subreaper(True):
                    _subreaper_users += 1
                    self._is_subreaper = True
                    self._reap_handle = loop.call_later(REAP_INTERVAL, self._reap_tick)
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
        behind, close every pipe and log, and end every subscription.

        It never raises: whatever fails is logged and the cleanup goes on (a
        cancellation propagates, once the cleanup is done). The
        watchdog and the state file are stood down only once nothing of ours
        is seen running; otherwise the watchdog is left to kill what remains.
        """
        if self._closed or self._closing:
            return
        self._closing = True
        clean = False
        try:
            clean = True if self._loop is None else await self._stop_everything()
        except Exception:
            log.exception("closing the supervisor failed; its watchdog stops what is left")
        finally:
            # Also when cancelled: every fd is closed, and without a goodbye
            # the watchdog stops whatever still runs.
            self._release(clean)

    async def _stop_everything(self) -> bool:
        """Stop every proc and what it left behind; True if nothing of ours runs."""
        results = await asyncio.gather(
            *(self.term(p.id) for p in self.procs() if p.running), return_exceptions=True
        )
        for result in results:
            if isinstance(result, BaseException):
                log.error("term failed while closing: %s", result)
        running = [p for p in self._procs.values() if p.running]
        if running:  # term failed: SIGKILL by group and pidfd, which need no fds
            for p in running:
                p._kill_requested = True
                self._signal_group(p, signal.SIGKILL)
            done = asyncio.gather(*(asyncio.shield(p._exit_fut) for p in running))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done, _KILL_WAIT)
        clean = not any(p.running for p in self._procs.values())
        if self._snap(fresh=True) is None:
            clean = False
        else:
            for p in list(self._procs.values()):
                self._kill_leftovers(p, fresh=False)
        for p in self._procs.values():
            self._close_streams(p)
        gone = await self._await_leftovers_gone(deadline=time.monotonic() + 2.0)
        return clean and gone

    def _release(self, clean: bool) -> None:
        """Free every resource; stand the watchdog down only if ``clean``."""
        for p in self._procs.values():
            with contextlib.suppress(Exception):
                self._close_streams(p)
        for handle in (self._sweep_handle, self._out_flush, self._reap_handle):
            if handle is not None:
                handle.cancel()
        self._flush_output_events()
        for sub in list(self._subs):
            sub.close()
        if self._devnull is not None:
            os.close(self._devnull)
            self._devnull = None
        if self._scanner is not None:
            self._scanner.close()
        for p in self._procs.values():
            # A child that survived SIGKILL (uninterruptible sleep): stop
            # watching it; the watchdog, not told goodbye, kills it.
            if p._pidfd is not None:
                if self._loop is not None:
                    self._loop.remove_reader(p._pidfd)
                os.close(p._pidfd)
                p._pidfd = None
                _OWN_CHILDREN.pop(p.os_pid, None)
        if self._watchdog is not None:
            if clean:
                self._watchdog.close()
            else:
                self._watchdog.abandon()
        if clean:
            self._statefile.close()
        else:
            self._statefile.abandon()
        if self._is_subreaper:
            global _subreaper_users
            _subreaper_users -= 1
            if _subreaper_users == 0:
                _linux.set_subreaper(False)
            self._is_subreaper = False
            # Orphans re-parented before that are still ours to reap.
            with contextlib.suppress(Exception):
                _reap_orphans()
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
        a variable). ``graceful_timeout`` overrides the supervisor's for this proc
        (0 to MAX_GRACEFUL_TIMEOUT seconds).

        Raises CommandNotFound, NotExecutable, CwdMissing, InvalidArgv,
        InvalidScope, UnsafePath (an unsafe log directory, or a FIFO, symlink
        or foreign file where a log file goes), SupervisorClosed or SpawnFailed
        (EMFILE at the fd limit, EAGAIN…), and then leaves nothing behind.
        """
        loop = self._bind_loop()
        if self._closing or self._closed:
            raise SupervisorClosed("this supervisor is closing")
        args = check_argv(argv)
        check_scope_name("session", session)
        check_scope_name("agent", agent)
        check_tool(tool)
        cwd_s = check_cwd(cwd)
        overrides = check_env(env)
        grace = None if graceful_timeout is None else check_graceful_timeout(graceful_timeout)
        proc_id = self._next_id
        child_env = dict(os.environ)
        for key, value in (overrides or {}).items():
            if value is None:
                child_env.pop(key, None)
            else:
                child_env[key] = value
        child_env[_linux.MARKER_VAR] = f"{self._token}:{proc_id}"
        exe = resolve(args[0], child_env, cwd_s)
        self._ensure_log_dir()
        if self._log_dir_ready:
            for stream in Stream:
                check_private_file(self.log_path(proc_id, stream), what="log file")

        with contextlib.ExitStack() as undo:
            # Until the child is handed to the loop, any failure unwinds
            # everything acquired so far, in reverse: the child too.
            try:
                # The write ends are the child's: closed here whatever happens.
                with contextlib.ExitStack() as write_ends:
                    out_r, out_w = os.pipe2(os.O_CLOEXEC)
                    undo.callback(os.close, out_r)
                    write_ends.callback(os.close, out_w)
                    err_r, err_w = os.pipe2(os.O_CLOEXEC)
                    undo.callback(os.close, err_r)
                    write_ends.callback(os.close, err_w)
                    popen = _spawn.popen(args, exe, cwd_s, child_env, self._devnull, out_w, err_w)
            except ProcwindowError:
                raise
            except OSError as exc:  # EMFILE, ENFILE
                raise SpawnFailed(
                    exc.errno,
                    f"cannot create pipes for {args[0]!r}: {_spawn.os_error_text(exc)}",
                ) from exc
            undo.callback(_kill_unwatched, popen)
            try:
                pidfd = os.pidfd_open(popen.pid)
                undo.callback(os.close, pidfd)
                fields = _linux.stat_fields(popen.pid)
            except OSError as exc:
                # We cannot watch it: do not let it run unsupervised.
                raise SpawnFailed(
                    exc.errno, f"cannot watch {args[0]!r}: {_spawn.os_error_text(exc)}"
                ) from exc
            if fields is None:
                raise SpawnFailed(None, f"{args[0]!r} vanished as it started")
            undo.pop_all()
        self._next_id += 1
        if self._watchdog is not None:
            self._watchdog.started(popen.pid, fields[3])
        self._statefile.started(popen.pid, fields[3])
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
            graceful_timeout=grace,
        )
        self._procs[proc_id] = p
        _OWN_CHILDREN[p.os_pid] = functools.partial(self._on_pidfd, p)
        for stream, fd in stream_fds.items():
            os.set_blocking(fd, False)
            loop.add_reader(fd, self._on_readable, p, stream)
        loop.add_reader(pidfd, self._on_pidfd, p)
        self._publish(p, EventKind.START, os_pid=p.os_pid, tool=tool, cmd=p.cmd, at=now_wall)
        self._schedule_sweep(SWEEP_INTERVAL, scan=False)
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
        if self._log_dir_ready:
            return
        try:
            if self._own_log_dir:
                # Every level of ours is checked: procwindow/, logs/, the run's.
                root = private_state_root()
                private_dir(root, what="state directory")
                private_dir(os.path.dirname(self._log_dir), what="log root")
            private_dir(self._log_dir, what="log_dir")
        except ProcwindowError:
            raise  # unsafe: refuse rather than write output where others can reach it
        except OSError as exc:
            # Cannot be created (read-only, EACCES): capture goes on in memory
            # and each LogFile carries the error.
            log.warning("cannot create log dir %s: %s", self._log_dir, exc)
            return
        self._log_dir_ready = True

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
        _OWN_CHILDREN.pop(p.os_pid, None)
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
        self._schedule_sweep(SWEEP_INTERVAL, scan=False)  # to flush the guards

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
        task = p._stop_task
        if task is None or (task.done() and (task.cancelled() or task.exception() is not None)):
            # A stop that failed (out of fds, say) is not the proc's fate: try again.
            task = p._stop_task = asyncio.ensure_future(self._terminate(p))
        return await asyncio.shield(task)

    async def kill(self, proc_id: int) -> ExitInfo:
        """SIGKILL to the proc's group and descendants now; wait for the exit."""
        p = self.get(proc_id)
        if p._exit is None:
            p._kill_requested = True
            self._mark_stopping(p)
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
        self._retry_kill.discard(proc_id)
        self._out_dirty.discard(p)
        self._publish(p, EventKind.DISMISS)

    async def term_all(self, session: str | None = None, agent: str | None = None) -> None:
        """``term`` every running proc of a scope (None: any), concurrently."""
        await asyncio.gather(*(self.term(p.id) for p in self.procs(session, agent) if p.running))

    async def kill_all(self, session: str | None = None, agent: str | None = None) -> None:
        """``kill`` every running proc of a scope (None: any), concurrently."""
        await asyncio.gather(*(self.kill(p.id) for p in self.procs(session, agent) if p.running))

    def _mark_stopping(self, p: Proc) -> None:
        if p._state is not ProcState.STOPPING:
            p._state = ProcState.STOPPING
            self._publish(p, EventKind.STOPPING)

    async def _terminate(self, p: Proc) -> ExitInfo:
        if p._exit is not None:  # it exited before this task first ran
            await self._stop_leftovers(p)
            return p._exit
        p._signalled = True
        self._mark_stopping(p)
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
        await self._stop_leftovers(p, deadline=deadline, termed=True)
        assert p._exit is not None
        return p._exit

    def _grace(self, p: Proc) -> float:
        return self.graceful_timeout if p.graceful_timeout is None else p.graceful_timeout

    async def _stop_leftovers(
        self, p: Proc, deadline: float | None = None, *, termed: bool = False
    ) -> None:
        """After the leader exited: TERM what remains of its tree, KILL it at the
        deadline. ``termed``: the tree already got SIGTERM with the leader."""
        tree = self._tree(p)
        if tree is not None and not tree:
            return
        if not termed:
            self._signal_tree(p, signal.SIGTERM)
            self._signal_tree(p, signal.SIGCONT)
        if deadline is None:
            deadline = time.monotonic() + self._grace(p)
        # Nothing signals "a non-child pid died": poll /proc.
        while time.monotonic() < deadline:
            tree = self._tree(p)
            if tree is not None and not tree:
                return
            await asyncio.sleep(_TREE_POLL)
        self._kill_leftovers(p, fresh=True)

    def _kill_leftovers(self, p: Proc, fresh: bool = True) -> None:
        # Snapshots are shared by signals sent in one burst (term_all of 500
        # procs reads /proc once, not 500 times); ``fresh`` forces a new one.
        tree = self._tree(p, fresh=fresh)
        if tree is None:
            self._retry_later(p)
        elif tree:
            self._signal_tree(p, signal.SIGKILL)

    def _retry_later(self, p: Proc) -> None:
        """The tree could not be seen (fd limit): the sweep kills it once it can."""
        self._retry_kill.add(p.id)
        self._schedule_sweep(SWEEP_INTERVAL)

    def _snap(self, fresh: bool = False) -> Snapshot | None:
        return self._scanner.snap(fresh) if self._scanner is not None else None

    def _tree(self, p: Proc, fresh: bool = False) -> dict[int, int] | None:
        """Live members of a proc's tree, leader excluded: {pid: start time}; None
        when /proc cannot be read (out of fds), which is not "nothing left".

        Its descendants by parentage while the leader lives, plus every process
        carrying its marker (found even after a ``setsid`` and the leader's exit).
        """
        snap = self._snap(fresh)
        return None if snap is None else _tree_in(snap, p)

    def _signal_group(self, p: Proc, sig: int) -> bool:
        pidfd = p._pidfd
        if pidfd is None:
            return False
        # The leader is unreaped, so its pid — and so its group id — cannot have
        # been reused: killpg is safe. If the leader left its group (or that
        # cannot be looked up, at the fd limit), reach it by its pidfd as well.
        try:
            leader = _linux.stat_fields(p.os_pid)
            left_group = leader is not None and leader[2] != p.pgid
        except OSError:
            left_group = True
        if left_group:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(pidfd, sig)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(p.pgid, sig)
        return True

    def _signal_tree(self, p: Proc, sig: int, fresh: bool = False) -> None:
        group_sent = self._signal_group(p, sig)
        snap = self._snap(fresh)
        if snap is None:
            if sig == signal.SIGKILL:
                self._retry_later(p)
            return
        tree = _tree_in(snap, p)
        if not group_sent and any(snap.info[pid][1] == p.pgid for pid in tree):
            # The leader is gone but its group is not: a group id stays taken
            # while any member lives, so it still names ours. One killpg also
            # catches a member forking right now, which a pid-by-pid chase of
            # a process that keeps re-forking would not.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(p.pgid, sig)
            group_sent = True
        for pid, start in tree.items():
            info = snap.info.get(pid)
            if group_sent and info is not None and info[1] == p.pgid:
                continue  # the group signal reached it
            try:
                now = _linux.stat_fields(pid)
            except OSError:  # out of fds: cannot check it is still that process
                if sig == signal.SIGKILL:
                    self._retry_later(p)
                continue
            if now is None or now[3] != start:
                continue  # gone, or its pid was reused since the snapshot
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)

    # -- leftovers and orphans -------------------------------------------------

    def _schedule_sweep(self, delay: float, *, scan: bool = True) -> None:
        """Sweep in ``delay`` seconds (or sooner, if one is due sooner). ``scan``:
        that sweep reads /proc for leftovers; without it, it only checks on the
        watchdog and the state file, which costs next to nothing."""
        if self._loop is None or self._closed:
            return
        self._scan_due = self._scan_due or scan
        due = self._loop.time() + delay
        if self._sweep_handle is not None:
            if self._sweep_due <= due:
                return
            self._sweep_handle.cancel()
        self._sweep_due = due
        self._sweep_handle = self._loop.call_later(delay, self._sweep)

    def _sweep(self) -> None:
        """Kill what dismissed procs left behind and the trees that could not be
        seen before (fd limit), while any are found; keep the watchdog and the
        state file up to date (a restarted watchdog is told what runs) while
        any child runs."""
        self._sweep_handle = None
        if self._scan_due:
            self._scan_due = False
            try:
                self._scan_due = self._sweep_once() or bool(self._retry_kill)
            except Exception:  # a sweep must never take the loop down
                log.exception("leftover sweep failed")
                self._scan_due = True
        try:
            delivered = self._statefile.flush()
            if self._watchdog is not None:
                delivered = self._watchdog.flush() and delivered
        except Exception:
            log.exception("keeping the watchdog up to date failed")
            delivered = False
        running = any(p._pidfd is not None for p in self._procs.values())
        if self._scan_due or not delivered or running:
            self._schedule_sweep(SWEEP_INTERVAL, scan=self._scan_due)

    def _sweep_once(self) -> bool:
        """One sweep; True if it found something to kill (or could not look)."""
        snap = self._snap(fresh=True)
        if snap is None:
            return True
        found = False
        for proc_id, pids in snap.marked.items():
            if proc_id in self._procs:
                continue
            for pid in pids:  # a leftover of a dismissed proc
                start = snap.info[pid][2]
                try:
                    now = _linux.stat_fields(pid)
                except OSError:
                    return True
                if now is not None and now[3] == start:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
                    found = True
        for proc_id in list(self._retry_kill):
            self._retry_kill.discard(proc_id)
            p = self._procs.get(proc_id)
            if p is not None:
                self._kill_leftovers(p, fresh=False)
        return found

    def _reap_tick(self) -> None:
        self._reap_handle = None
        if self._closed or self._loop is None:
            return
        try:
            reaped = _reap_orphans()
        except Exception:
            log.exception("reaping orphans failed")
            reaped = 0
        delay = _REAP_BUSY if reaped else REAP_INTERVAL
        self._reap_handle = self._loop.call_later(delay, self._reap_tick)

    async def _await_leftovers_gone(self, deadline: float) -> bool:
        """After the final kill: wait (bounded) until no process carries our
        marker; True if none does, False if some do or /proc cannot be read."""
        while True:
            if self._is_subreaper:
                _reap_orphans()
            snap = self._snap(fresh=True)
            if snap is not None and not snap.marked:
                return True
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(_TREE_POLL)

    # -- reports ---------------------------------------------------------------

    def idx(self, session: str | None = None, agent: str | None = None) -> str:
        """The machine-readable index: a TSV with a header line, newest first.

        ``pid status exit_code tool cmd start_unix runtime_sec``; ``pid`` is the
        proc id, status ``running|exited``, exit code ``-1`` while running
        (``128+N`` after death by signal N), runtime with one decimal. Control
        characters in a command are escaped, so each proc is one row.
        """
        return idx_text(self.procs(session, agent), self._clock.monotonic())

    def top(self, session: str | None = None, agent: str | None = None) -> str:
        """A human-readable table of a scope's procs, newest first."""
        return top_text(self.procs(session, agent), self._clock.monotonic())

    def stats(self, proc_id: int) -> ProcStats:
        """CPU %, RSS, I/O bytes and threads of the proc's whole live tree.

        CPU % is measured since the previous call for the same processes (0.0 the
        first time), so call it at a steady interval (the window: once a second).
        Out of file descriptors it counts what it can (the leader at least).
        """
        p = self.get(proc_id)
        pids = list(self._tree(p) or ())
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
            except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied, OSError):
                continue
        p._ps_cache = fresh
        return ProcStats(cpu, rss, rd, wr, threads, max(0, len(fresh) - (p._pidfd is not None)))


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


def _tree_in(snap: Snapshot, p: Proc) -> dict[int, int]:
    """The live members of ``p``'s tree in ``snap``, leader excluded: {pid: start}."""
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


def _kill_unwatched(popen: subprocess.Popen[bytes]) -> None:
    """A child we could not start watching: it must not run unsupervised."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(popen.pid, signal.SIGKILL)
    popen.wait()


def _reap_orphans() -> int:
    """Reap every zombie child of this process; return how many were orphans.

    Only for a subreaper that owns its process: a zombie that is one of our
    procs (or a watchdog) is handed to its owner, which records its exit; any
    other is an orphan re-parented here, reaped by its own pid. ``WNOWAIT``
    peeks without reaping, so the owner still gets its status.
    """
    reaped = 0
    last = 0
    while True:
        try:
            res = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return reaped
        if res is None:
            return reaped
        pid = res.si_pid
        owner = _OWN_CHILDREN.get(pid)
        if owner is not None:
            if pid == last:
                return reaped  # its owner did not reap it (yet): do not spin
            last = pid
            owner()
            continue
        with contextlib.suppress(ChildProcessError):
            os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG)
        reaped += 1
