"""The supervisor: a facade over its reads (``_reads``), launching and exits
(``_launch``), stopping (``_stopping``) and the parts bound to its event loop
(``_running``: capture, signals, the sweep), which live in modules of their own."""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import signal
import warnings
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING

from . import _agent, _members, _stdin, _terminal, _waiting, spec
from ._agent import Excerpt
from ._archive import DEFAULT_HISTORY_AGE, DEFAULT_HISTORY_BYTES, DEFAULT_LOG_CAP, Archive
from ._capture import BIG_PIPE
from ._child import Child
from ._errors import SupervisorClosed, WrongLoop
from ._events import DEFAULT_QUEUE_SIZE, EventHub, Subscription
from ._interface import SupervisorAPI
from ._linux import require_linux
from ._orchestra import run_of
from ._output import ReadBuffers, RingBudget
from ._private import private_state_root
from ._proc import Proc
from ._reads import Reads, past_id
from ._ready import Ready
from ._replay import ByteBatch
from ._reports import idx_text, top_text, tree_ports, tree_stats
from ._running import Running, release
from ._screen import ScreenText
from ._search import SearchHit
from ._statefile import StateFile
from ._types import (
    SYSTEM_CLOCK,
    Clock,
    ExitInfo,
    ExitReason,
    Line,
    ListeningPort,
    ProcStats,
    ReadBatch,
    RunBatch,
    Stream,
    TreeProcess,
)
from ._watchdog import Watchdog
from .rules import DEFAULT_GRACEFUL_TIMEOUT, DEFAULT_TOOL, check_graceful_timeout

if TYPE_CHECKING:
    from ._orchestra import WorkspaceRun

__all__ = ["Supervisor"]

log = logging.getLogger("procwindow")

#: Default bound of the in-memory ring, in lines per proc.
DEFAULT_RING_LINES = 100_000
#: Default bound of the in-memory ring, in bytes per proc.
DEFAULT_RING_BYTES = 32 * 1024 * 1024
#: Default bound of all rings together, in bytes.
DEFAULT_RING_BUDGET = 256 * 1024 * 1024


class Supervisor(SupervisorAPI):
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

    History (``history=True``, the default): every proc is recorded in
    ``<state_dir>/history.db`` (``state_dir`` defaults to
    ``$XDG_STATE_HOME/procwindow``), its raw logs and journal stay in
    ``<state_dir>/logs/`` (or ``log_dir``), and ``get``/``read``/``log_path``
    accept the id of a proc of any earlier run. Ids are unique across every
    supervisor sharing ``state_dir``. Disk is bounded: ``log_cap`` bytes per
    proc (head and tail kept, the middle cut and counted), ``history_bytes`` for
    all finished procs and ``history_age`` seconds (oldest pruned first; a
    running proc never). ``history=False`` keeps nothing after close: ids start
    at 1 and the default log directory is removed. Every directory must be ours
    and writable by nobody else (UnsafePath otherwise).

    Memory: rings of ``ring_lines`` lines and ``ring_bytes`` bytes per proc,
    ``ring_budget`` bytes in all (README, "Memory is bounded").

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
        ring_budget: int = DEFAULT_RING_BUDGET,
        history: bool = True,
        state_dir: str | os.PathLike[str] | None = None,
        log_cap: int | None = DEFAULT_LOG_CAP,
        history_bytes: int | None = DEFAULT_HISTORY_BYTES,
        history_age: float | None = DEFAULT_HISTORY_AGE,
        subreaper: bool = False,
        watchdog: bool = True,
        clock: Clock | None = None,
    ) -> None:
        require_linux()
        if ring_lines < 1 or ring_bytes < 1 or ring_budget < 1:
            raise ValueError("ring_lines, ring_bytes and ring_budget must be positive")
        self.ring_lines = ring_lines
        self.ring_bytes = ring_bytes
        self.graceful_timeout = check_graceful_timeout(graceful_timeout)
        self._clock: Clock = clock or SYSTEM_CLOCK
        self._token = f"{os.getpid()}.{secrets.token_hex(4)}"
        self._archive = Archive(
            token=self._token,
            history=history,
            state_dir=os.fspath(state_dir) if state_dir is not None else private_state_root(),
            log_dir=log_dir,
            log_cap=log_cap,
            history_bytes=history_bytes,
            history_age=history_age,
        )
        self._budget = RingBudget(ring_budget)
        self._buffers = ReadBuffers(BIG_PIPE)
        self._want_subreaper = subreaper
        self._watchdog = Watchdog(self._token) if watchdog else None
        self._statefile = StateFile(self._token)
        self._children: dict[int, Child] = {}
        self._events = EventHub(self._clock.time)
        self._run: Running | None = None
        self._closed = False
        self._closing = False
        #: The workspaces running here (``Workspace.start`` adds, their stop
        #: removes); close() stops them first, each dependents first.
        self._workspaces: list[WorkspaceRun] = []
        self._reads = Reads(self._children, self._archive)

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

    def _bind_loop(self) -> Running:
        loop = asyncio.get_running_loop()
        if self._run is None:
            if self._closed:
                raise SupervisorClosed("this supervisor is closed")
            self._run = Running(self, loop)
        elif loop is not self._run.loop:
            raise WrongLoop
        return self._run

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def log_dir(self) -> str:
        """Where the raw log files go."""
        return self._archive.logs.path

    @property
    def history_enabled(self) -> bool:
        return self._archive.on

    @property
    def workspaces(self) -> list[WorkspaceRun]:
        return list(self._workspaces)

    @property
    def where(self) -> str:
        return ""

    @property
    def connected(self) -> bool:
        return True

    def add_listener(self, callback: Callable[[str], None]) -> Callable[[], None]:
        del callback
        return lambda: None  # an in-process supervisor's link never changes

    @property
    def history_error(self) -> str | None:
        """Why history is off or stopped (a broken database, a read-only
        directory), or None. Supervision goes on either way."""
        return self._archive.error

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
            for workspace in reversed(list(self._workspaces)):  # spawns are refused now
                try:
                    await workspace.stop()
                except Exception:
                    log.exception("stopping a workspace in order failed; closing goes on")
            if self._run is not None:  # each start under way gives its child up
                await self._run.starter.settle()
            clean = True if self._run is None else await self._run.stopping.stop_everything()
        except Exception:
            log.exception("closing the supervisor failed; its watchdog stops what is left")
        finally:
            # Also when cancelled: every fd is closed, and without a goodbye
            # the watchdog stops whatever still runs.
            release(self, self._run, clean)

    def __del__(self) -> None:
        if getattr(self, "_run", None) is None or getattr(self, "_closed", True):
            return
        running = sum(c.proc.running for c in getattr(self, "_children", {}).values())
        left = (
            f"{running} of its children were left running" if running else "its fds were left open"
        )
        warnings.warn(
            f"unclosed {self!r}: {left} (call close())",
            ResourceWarning,
            stacklevel=2,
        )

    def __repr__(self) -> str:
        running = sum(c.proc.running for c in self._children.values())
        state = "closed" if self._closed else "open"
        return f"<Supervisor {state} procs={len(self._children)} running={running}>"

    # -- spawning ------------------------------------------------------------

    async def spawn(
        self,
        argv: Sequence[str] | None = None,
        *,
        session: str,
        agent: str,
        shell: str | None = None,
        tool: str = DEFAULT_TOOL,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str | None] | None = None,
        graceful_timeout: float | None = None,
        stop_signal: int | str | None = None,
        stop_command: Sequence[str] | None = None,
        timeout: float | None = None,
        merge_stderr: bool = False,
        stdin: bool = False,
        pty: bool = False,
        rows: int | None = None,
        cols: int | None = None,
        ready: Ready | str | int | Mapping[str, object] | None = None,
        reuse: bool = False,
    ) -> Proc:
        run = self._bind_loop()
        if self._closing or self._closed:
            raise SupervisorClosed("this supervisor is closing")
        values = spec.check(
            "run",
            argv=argv,
            shell=shell,
            session=session,
            agent=agent,
            tool=tool,
            cwd=None if cwd is None else os.fspath(cwd),
            env=env,
            graceful_timeout=graceful_timeout,
            stop_signal=stop_signal,
            stop_command=stop_command,
            timeout=timeout,
            merge_stderr=merge_stderr,
            stdin=stdin,
            pty=pty,
            rows=rows,
            cols=cols,
            ready=ready,
            reuse=reuse,
        )
        return await run.launcher.spawn(values)

    async def restart(self, proc_id: int) -> Proc:
        p = self.get(proc_id)
        owner = run_of(self, proc_id)
        if owner is not None:
            run, name = owner
            return await run.restart(name)
        return await self.spawn(
            p.argv,
            session=p.session,
            agent=p.agent,
            tool=p.tool,
            cwd=p.cwd,
            env=p.env,
            graceful_timeout=p.graceful_timeout,
            **p.options.spawn_args(),
        )

    # -- queries -------------------------------------------------------------

    def _child(self, proc_id: int) -> Child:
        return self._reads.child(proc_id)

    def _check_context(self, proc_id: int) -> _agent.CheckContext:
        """Where a proc's check commands run (see ``_agent.probe``)."""
        child = self._reads.live(proc_id)
        return _agent.check_context(child) if child is not None else _agent.NO_CONTEXT

    def _procs(self) -> _agent.Procs:
        """What the agent layer needs of us: our procs, live or past."""
        return _agent.Procs(self._reads.live, self.get, self.read)

    def get(self, proc_id: int) -> Proc:
        return self._reads.get(proc_id)

    def history(
        self,
        *,
        session: str | None = None,
        agent: str | None = None,
        tool: str | None = None,
        reason: ExitReason | str | None = None,
        since: float | None = None,
        limit: int | None = None,
        command: str | None = None,
    ) -> list[Proc]:
        return self._reads.history(session, agent, tool, reason, since, limit, command)

    def procs(self, session: str | None = None, agent: str | None = None) -> list[Proc]:
        return self._reads.procs(session, agent)

    def runtime(self, proc_id: int) -> float:
        return self.get(proc_id).runtime(self._clock.monotonic())

    def read(
        self,
        proc_id: int,
        since: int = 0,
        *,
        limit: int | None = None,
        stream: Stream | str | None = None,
        partial: bool = False,
    ) -> ReadBatch:
        return self._reads.read(proc_id, since, limit, stream, partial)

    def read_runs(
        self,
        proc_id: int,
        since: int = 0,
        *,
        limit: int | None = None,
        stream: Stream | str | None = None,
        partial: bool = False,
    ) -> RunBatch:
        return self._reads.read_runs(proc_id, since, limit, stream, partial)

    def read_bytes(
        self,
        proc_id: int,
        since: int = 0,
        *,
        limit: int | None = None,
        max_bytes: int | None = None,
        stream: Stream | str | None = None,
    ) -> ByteBatch:
        """The lines ``read()`` returns, as one ``bytes``: for a viewer, an
        export or a pipe, where a ``Line`` per line costs too much.

        ``data`` is the lines' text, UTF-8 encoded, each followed by ``\n``
        (a last line without one gets one): ``read_bytes(id, s).data ==
        read(id, s).text.encode()``, and ``count``, ``dropped``, ``cursor`` and
        ``eof`` are what ``read()`` gives. The lines are copied from the log
        files in large slices: the log's own bytes, wherever they are valid
        UTF-8 without ``\r`` and no line is longer than ``LINE_MAX``.

        ``limit`` bounds the lines and ``max_bytes`` the bytes of one call (whole
        lines, at least one); pass ``cursor`` as ``since`` to go on. A call ends
        where one of the child's reads (at most 1 MiB each) ended if that fills a
        quarter of ``max_bytes``, so it may return less. 1-2 MiB a call is the
        fastest way through a long output (pages that fit the CPU's caches).
        """
        return self._reads.read_bytes(proc_id, since, limit, max_bytes, stream)

    def log_path(self, proc_id: int, stream: Stream | str = Stream.STDOUT) -> str:
        return self._reads.log_path(proc_id, stream)

    async def wait(self, proc_id: int, timeout: float | None = None) -> ExitInfo:
        limit = spec.check("wait", proc=proc_id, timeout=timeout)["timeout"]
        return await _waiting.wait_exit(self._procs(), proc_id, limit)

    # -- the agent layer -------------------------------------------------------

    async def wait_for(
        self,
        proc_id: int,
        pattern: str,
        *,
        regex: bool = True,
        stream: Stream | str | None = None,
        since: int = 0,
        timeout: float | None = None,
    ) -> Line:
        """The first line after ``since`` that matches ``pattern`` (an RE2 regex
        searched for in the line: :class:`Regex`, or a substring with
        ``regex=False``); waits for it if need be.

        An unterminated line that stands still (a prompt such as ``Continue?
        [y/N] ``), and a row of a full-screen program's screen (``pty``), are
        matched too: then the Line has ``partial`` set. To go on after a hit,
        read from ``line.seq`` (``line.seq - 1`` for a partial line). Raises
        NoMatch (with the exit) when the proc ended without a matching line,
        TimeoutError after ``timeout`` seconds (the proc is left
        alone), InvalidPattern for a bad pattern.
        """
        args = spec.check(
            "wait_for",
            proc=proc_id,
            pattern=pattern,
            regex=regex,
            stream=stream,
            since=since,
            timeout=timeout,
        )
        del args["proc"], args["pattern"]
        return await _waiting.wait_for(self._procs(), proc_id, pattern, **args)

    async def wait_ready(self, proc_id: int, timeout: float | None = None) -> Proc:
        """Wait until the proc's readiness check passes (``spawn(ready=...)``);
        return the proc. At once for a proc without a check.

        Raises NotReady when the proc exits first or its check gives up (its
        ``Ready.timeout``), TimeoutError after ``timeout`` seconds (the proc is
        left alone).
        """
        limit = spec.check("ready", proc=proc_id, timeout=timeout)["timeout"]
        return await _waiting.wait_ready(self._procs(), proc_id, limit)

    async def excerpt(
        self,
        proc_id: int,
        *,
        head: int = 20,
        tail: int = 40,
        max_bytes: int = 8000,
        since: int = 0,
    ) -> Excerpt:
        """The output after ``since``, sized for a context window: the first
        ``head`` and last ``tail`` lines, with ``… K lines (J bytes) omitted …``
        between them, the whole at most ``max_bytes`` of text (fewer lines are
        shown rather than more bytes; over-long lines are clipped). Returns the
        cursor to continue from and, once it exited, the exit."""
        spec.check("excerpt", proc=proc_id, head=head, tail=tail, max_bytes=max_bytes, since=since)
        return await _agent.excerpt(
            self._procs(), proc_id, head=head, tail=tail, max_bytes=max_bytes, since=since
        )

    # -- stdin ------------------------------------------------------------------

    async def write(self, proc_id: int, data: bytes | str = "") -> int:
        child = self._child(proc_id)
        buf = _stdin.as_bytes(data)
        return await _stdin.write(proc_id, child, buf, self._bind_loop().loop)

    async def close_stdin(self, proc_id: int) -> bool:
        child = self._child(proc_id)
        return await _stdin.close(child, self._run.loop if self._run is not None else None)

    async def resize(self, proc_id: int, rows: int, cols: int) -> None:
        spec.check("resize", proc=proc_id, rows=rows, cols=cols)
        _terminal.resize(self._child(proc_id), rows, cols)

    async def screen(self, proc_id: int, *, styled: bool = False) -> ScreenText:
        return await _terminal.screen(self._child(proc_id), styled)

    def search(
        self,
        pattern: str,
        *,
        regex: bool = False,
        case_sensitive: bool = False,
        session: str | None = None,
        agent: str | None = None,
        proc: int | None = None,
        since: float | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[SearchHit]:
        return self._reads.search(
            pattern, regex, case_sensitive, session, agent, proc, since, limit
        )

    # -- events --------------------------------------------------------------

    def subscribe(
        self, pattern: str = ">", *, proc: int | None = None, maxsize: int = DEFAULT_QUEUE_SIZE
    ) -> Subscription:
        return self._events.subscribe(pattern, maxsize, proc)

    # -- signals -------------------------------------------------------------

    async def term(self, proc_id: int) -> ExitInfo:
        child = self._child(proc_id)
        return await self._bind_loop().stopping.term(child)

    async def kill(self, proc_id: int) -> ExitInfo:
        child = self._child(proc_id)
        return await self._bind_loop().stopping.kill(child)

    async def interrupt(self, proc_id: int) -> bool:
        return await self.signal(proc_id, signal.SIGINT)

    async def signal(self, proc_id: int, signal: int | str, *, os_pid: int | None = None) -> bool:
        args = spec.check("signal", proc=proc_id, signal=signal, os_pid=os_pid)
        child = self._child(proc_id)
        return _members.send(child, self._bind_loop().signals, args["signal"], args["os_pid"])

    def dismiss(self, proc_id: int) -> None:
        child = self._child(proc_id)
        assert self._run is not None  # it ran, so the supervisor is bound
        self._run.stopping.dismiss(child)

    def forget(self, proc_id: int) -> None:
        """Delete an exited proc for good: its history record, log files and
        journal (dismissing it first if it is live). ProcRunning if it still
        runs, here or under another supervisor; ProcNotFound if unknown."""
        if isinstance(proc_id, int) and proc_id in self._children:
            self.dismiss(proc_id)
            self._archive.forget(proc_id, None)
            return
        self._archive.forget_past(past_id(proc_id))

    async def term_all(self, session: str | None = None, agent: str | None = None) -> None:
        await asyncio.gather(*(self.term(p.id) for p in self.procs(session, agent) if p.running))

    async def kill_all(self, session: str | None = None, agent: str | None = None) -> None:
        await asyncio.gather(*(self.kill(p.id) for p in self.procs(session, agent) if p.running))

    # -- reports ---------------------------------------------------------------

    def idx(self, session: str | None = None, agent: str | None = None) -> str:
        """The machine-readable index, newest first: a header line, then
        ``pid status exit_code tool cmd start_unix runtime_sec`` (``pid`` is the
        proc id; exit code -1 while running, 128+N after signal N) a row each."""
        return idx_text(self.procs(session, agent), self._clock.monotonic())

    def top(self, session: str | None = None, agent: str | None = None) -> str:
        """A human-readable table of a scope's procs, newest first."""
        return top_text(self.procs(session, agent), self._clock.monotonic())

    def stats(self, proc_id: int) -> ProcStats:
        return tree_stats(*self._tree(proc_id))

    async def ports(self, proc_id: int) -> list[ListeningPort]:
        return tree_ports(*self._tree(proc_id)) if self.get(proc_id).live else []

    async def tree(self, proc_id: int) -> list[TreeProcess]:
        if not self.get(proc_id).live:
            return []
        child = self._child(proc_id)
        return _members.tree_processes(child, self._run.signals if self._run else None)

    def _tree(self, proc_id: int) -> tuple[Child, list[int]]:
        return _members.live_tree(self._child(proc_id), self._run.signals if self._run else None)
