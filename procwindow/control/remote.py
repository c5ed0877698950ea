"""RemoteSupervisor: the supervisor of another process, through its control socket.

It implements :class:`~procwindow.core.SupervisorAPI` over the control
protocol, for a window attached to ``procwindow serve``, another window or an
MCP server, here or on another machine through ssh (see :mod:`._links`)::

    sup = await RemoteSupervisor.connect("ssh://build/ci")
    for p in sup.procs("s1"):
        print(p.id, p.state)
    await sup.close()  # stops nothing there

**The mirror.** The window's models call ``get``, ``procs``, ``read``,
``stats`` and ``history`` synchronously, from slots and frame timers; none of
them may wait for the network. So they are answered from a local mirror:

- the live procs, as :class:`RemoteProc` objects (the same object for a proc
  for as long as it is known, updated in place, as the in-process Supervisor's
  Procs are), taken from a ``procs`` snapshot and kept current by one
  ``events`` connection following every topic;
- the lines of the procs someone reads (at most MIRRORED_PROCS of them, each
  at most MIRROR_LINES lines): ``read(id, since)`` answers with what is held
  and starts fetching (``out`` by cursor) what is not; when lines arrive, an
  output event for that proc is published, so a reader that reads on events
  (the OutputModel) comes back within a frame. Server events about a mirrored
  proc's output are published once its lines are held, and its exit after
  them (or after EXIT_HOLD at most), so that a reader that reads on the exit
  sees every line and the end of the output, as in process.
- resource use and history: ``stats`` and ``history`` answer the values last
  fetched and fetch them again in the background.

**Links fail.** When the events connection drops, every proc's
``disconnected`` turns true, actions raise :class:`Disconnected`, listeners
(``add_listener``) are told, and the link is opened again with exponential
backoff (BACKOFF_MIN to BACKOFF_MAX seconds). On reconnecting it subscribes
first, then takes a snapshot and applies the difference as events (a proc
that started, exited, with its reason, or was dismissed meanwhile), then
fetches each mirrored proc's lines from its cursor: no line twice, none
missing. Events lost by a slow client (``missed``) are repaired the same way.

Calls go over a small pool of further connections (one request at a time
each; actions that wait, ``term`` or ``write``, take their own), so a slow
``term`` never holds up reading. Closing stops nothing remote.

**Where it is.** RemoteSupervisor is a facade over parts, one mechanism each,
none a base class of another: :mod:`._remote_calls` (the link's status and the
pool of connections), :mod:`._remote_sync` (the events connection and its
reconnecting; the events applied to the procs of :mod:`._remote_procs`),
:mod:`._remote_lines` (the mirrored lines), :mod:`._remote_workspaces` and
:mod:`._remote_fetched` (history and resource use).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from typing import Any, cast

from ..core import (
    DEFAULT_QUEUE_SIZE,
    DEFAULT_TOOL,
    EventHub,
    ExitInfo,
    ExitReason,
    ListeningPort,
    Matcher,
    Proc,
    ProcNotFound,
    ProcRunning,
    ProcStats,
    ProcwindowError,
    ReadBatch,
    Ready,
    RunBatch,
    ScreenText,
    SearchHit,
    StdinClosed,
    Stream,
    Subscription,
    SupervisorAPI,
    SupervisorClosed,
    TreeProcess,
    WorkspaceRun,
    spec,
)
from ._links import (
    Disconnected,
    LinkError,
    LocalLink,
    NoServer,
    RemoteNotInstalled,
    SshFailed,
    SshLink,
    Target,
    make_link,
)
from ._protocol import WRITE_CHUNK, line_from_json, screen_from_json, tree_from_json
from ._remote_calls import _Calls, _ready_json
from ._remote_fetched import _Fetched
from ._remote_lines import MIRROR_LINES, MIRRORED_PROCS, _Reader
from ._remote_procs import RemoteProc, _exit_of, _Procs
from ._remote_sync import BACKOFF_MAX, BACKOFF_MIN, _Events, _Life
from ._remote_workspaces import _Workspaces

__all__ = [
    "BACKOFF_MAX",
    "BACKOFF_MIN",
    "MIRRORED_PROCS",
    "MIRROR_LINES",
    "Disconnected",
    "LinkError",
    "LogsElsewhere",
    "NoServer",
    "RemoteNotInstalled",
    "RemoteProc",
    "RemoteSupervisor",
    "SshFailed",
]

log = logging.getLogger("procwindow.remote")


class LogsElsewhere(ProcwindowError):
    """A proc's log files are on the server's side, not readable here by path."""


class RemoteSupervisor(SupervisorAPI):
    """A :class:`~procwindow.core.SupervisorAPI` over the control socket of
    another procwindow (see the module's docstring for how).

    ``target``: a server name (default ``default``), a socket path, or
    ``ssh://[user@]host[:port][/NAME]``. ``ssh_command`` (default
    ``$PROCWINDOW_SSH``, else ``ssh``) and ``remote_procwindow`` (default
    ``$PROCWINDOW_REMOTE``, else ``procwindow``) tune the ssh link.
    ``reconnect=False`` gives up when the link drops.

    Use ``await RemoteSupervisor.connect(target)`` (which raises a
    :class:`LinkError` with a one-line message when it cannot connect) and
    ``await close()``, or ``async with``.
    """

    def __init__(
        self,
        target: str | Target | None = None,
        *,
        ssh_command: Sequence[str] | None = None,
        remote_procwindow: str | None = None,
        reconnect: bool = True,
    ) -> None:
        link = make_link(
            target,
            ssh_command=list(ssh_command) if ssh_command is not None else None,
            remote_procwindow=remote_procwindow,
        )
        self._hub = EventHub(time.time)
        self._calls = calls = _Calls(link)
        self._procs = procs = _Procs()
        self._reader = reader = _Reader(calls, procs, self._hub)
        self._workspaces = workspaces = _Workspaces(calls)
        self._fetched = fetched = _Fetched(calls, procs)
        self._events = events = _Events(calls, procs, reader, workspaces, fetched, self._hub)
        self._life = _Life(calls, procs, reader, fetched, events, self._hub, reconnect=reconnect)

    # -- lifecycle ----------------------------------------------------------------

    @classmethod
    async def connect(cls, target: str | Target | None = None, **options: Any) -> RemoteSupervisor:
        """A RemoteSupervisor whose link is up; LinkError (one line) if it cannot be."""
        sup = cls(target, **options)
        try:
            await sup.open()
        except BaseException:
            await sup.close()
            raise
        return sup

    async def open(self) -> None:
        """Connect, take the snapshot and follow the events; LinkError if it fails."""
        await self._life.open()

    def open_later(self, error: str) -> None:
        """Reach the server in the background (it could not be reached now:
        ``error`` says why), with backoff, as a dropped link is; ``connected``
        turns true, and the listeners hear "connected", once it answers."""
        self._life.open_later(error)

    async def close(self) -> None:
        """Close every connection (and ssh process) and end every subscription.
        Nothing on the server side is stopped."""
        await self._life.close()

    async def __aenter__(self) -> RemoteSupervisor:
        if self._life.task is None:
            await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- the link -------------------------------------------------------------------

    @property
    def where(self) -> str:
        """The server: its socket path, or ``ssh://host/NAME``."""
        return self._calls.where

    @property
    def connected(self) -> bool:
        """True while the link is up (the mirror is current)."""
        return self._calls.connected

    @property
    def closed(self) -> bool:
        """True once ``close`` was called."""
        return self._calls.closed

    @property
    def last_error(self) -> str | None:
        """Why the link last went down or failed to come back, one line (None: never)."""
        return self._calls.last_error

    @property
    def link(self) -> LocalLink | SshLink:
        """How the server is reached (an SshLink lists its ssh processes' pids)."""
        return self._calls.link

    def add_listener(self, callback: Callable[[str], None]) -> Callable[[], None]:
        """Call ``callback(what)`` on ``"connected"``, ``"disconnected"`` (also
        each failed attempt to reconnect) and ``"history"`` (a history answer
        was fetched: ask again). Returns the function that removes it."""
        return self._calls.add_listener(callback)

    # -- queries (SupervisorAPI) ----------------------------------------------------------

    @property
    def history_enabled(self) -> bool:
        """True when the server keeps a history database."""
        return self._fetched.history_on

    @property
    def workspaces(self) -> list[WorkspaceRun]:
        """The workspaces running on the server, mirrored: each answers
        ``name``, ``states()``, ``state(name)`` and ``state_of(proc_id)`` as a
        WorkspaceRun does, kept current by the server's ``phase`` events
        (:class:`~procwindow.control._remote_workspaces.RemoteWorkspaceRun`;
        starting and stopping them is the server's: ``ctl up``/``down``)."""
        return cast("list[WorkspaceRun]", list(self._workspaces.runs))

    def get(self, proc_id: int) -> Proc:
        """The proc with this id: live, dismissed, or listed by ``history``."""
        p = self._procs.find(proc_id) if isinstance(proc_id, int) else None
        if p is None:
            raise ProcNotFound(proc_id)
        return p

    def procs(self, session: str | None = None, agent: str | None = None) -> list[Proc]:
        return [
            p
            for _, p in sorted(self._procs.live.items(), reverse=True)
            if (session is None or p.session == session) and (agent is None or p.agent == agent)
        ]

    def runtime(self, proc_id: int) -> float:
        """Seconds the proc has run (until its exit), as the server counts them."""
        return self.get(proc_id).runtime(time.monotonic())

    def read(
        self,
        proc_id: int,
        since: int = 0,
        *,
        limit: int | None = None,
        stream: Stream | str | None = None,
        partial: bool = False,
    ) -> ReadBatch:
        """The lines held after ``since``; those not held yet are fetched, and an
        output event of the proc announces them (read again then)."""
        batch = self.read_runs(proc_id, since, limit=limit, stream=stream, partial=partial)
        return ReadBatch(batch.lines(), batch.dropped, batch.cursor, batch.eof)

    def read_runs(
        self,
        proc_id: int,
        since: int = 0,
        *,
        limit: int | None = None,
        stream: Stream | str | None = None,
        partial: bool = False,
    ) -> RunBatch:
        """:meth:`read`'s answer as runs (the lines are held as runs here)."""
        if isinstance(proc_id, bool) or not isinstance(proc_id, int) or proc_id < 1:
            raise ProcNotFound(proc_id)
        if limit is not None and limit < 1:
            raise ValueError(f"limit must be positive, got {limit}")
        want = Stream(stream) if stream is not None else None
        return self._reader.read_runs(proc_id, max(0, since), limit, want, partial)

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
        """The last answer of the server's history to these filters (empty the
        first time): it is fetched again in the background, and listeners hear
        ``"history"`` when a new answer is in."""
        reason_ = ExitReason(reason).value if reason is not None else None
        return list(self._fetched.history((session, agent, tool, reason_, since, limit, command)))

    def stats(self, proc_id: int) -> ProcStats:
        """The resource use last fetched (zeros at first); fetched again at
        once, so calling it at a steady interval gives values one call old."""
        return self._fetched.stats(proc_id)

    async def ports(self, proc_id: int) -> list[ListeningPort]:
        reply = await self._calls.call("ports", proc=proc_id)
        return [ListeningPort(p["port"], p["host"], p["os_pid"]) for p in reply["ports"]]

    async def tree(self, proc_id: int) -> list[TreeProcess]:
        reply = await self._calls.call("tree", proc=proc_id)
        return [tree_from_json(p) for p in reply["tree"]]

    def log_path(self, proc_id: int, stream: Stream | str = Stream.STDOUT) -> str:
        """LogsElsewhere: the logs are the server's (``read`` gives their lines)."""
        self.get(proc_id)
        raise LogsElsewhere(f"proc {proc_id}: its logs are kept by {self.where}")

    def subscribe(
        self, pattern: str = ">", *, proc: int | None = None, maxsize: int = DEFAULT_QUEUE_SIZE
    ) -> Subscription:
        """Events whose topic matches ``pattern``, as the Supervisor's (the server's
        events, and those of the changes found on reconnecting)."""
        return self._hub.subscribe(pattern, maxsize, proc)

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
        """The server's search, streamed; InvalidPattern at once."""
        Matcher(pattern, regex=regex, case_sensitive=case_sensitive)
        return self._search(
            {
                "pattern": pattern,
                "regex": regex or None,
                "case_sensitive": case_sensitive or None,
                "session": session,
                "agent": agent,
                "proc": proc,
                "since": since,
                "limit": limit,
            }
        )

    async def _search(self, fields: dict[str, Any]) -> AsyncGenerator[SearchHit, None]:
        async with contextlib.aclosing(self._calls.stream("search", **fields)) as messages:
            async for message in messages:
                hit = message.get("hit")
                if hit is not None:
                    yield SearchHit(hit["proc"], hit["session"], hit["agent"], line_from_json(hit))

    def dismiss(self, proc_id: int) -> None:
        """Remove an exited proc from the live view, here at once and on the server."""
        p = self._must_be_live(proc_id)
        if p.exit is None:
            raise ProcRunning(proc_id)
        self._calls.check_link()
        self._events.on_dismiss(proc_id, None)
        self._calls.spawn_task(
            self._dismiss(proc_id), f"procwindow remote dismiss {proc_id}", sending=True
        )

    async def _dismiss(self, proc_id: int) -> None:
        try:
            await self._calls.call("dismiss", proc_id=proc_id, proc=proc_id)
        except ProcNotFound:
            pass  # dismissed there already
        except ProcwindowError as exc:
            if isinstance(exc, (Disconnected, SupervisorClosed)):
                return  # the next snapshot tells whether it went
            log.warning("dismiss %d on %s failed: %s", proc_id, self.where, exc)
            with contextlib.suppress(ProcwindowError):
                await self._events.resync()

    # -- actions ------------------------------------------------------------------------

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
        """Start a command on the server (``run``); its proc once the mirror has it."""
        result = await self._calls.call(
            "run",
            long=True,
            argv=list(argv) if argv is not None else None,
            shell=shell,
            session=session,
            agent=agent,
            tool=tool,
            cwd=os.fspath(cwd) if cwd is not None else None,
            env=dict(env) if env is not None else None,
            graceful_timeout=graceful_timeout,
            stop_signal=stop_signal,
            stop_command=list(stop_command) if stop_command is not None else None,
            timeout=timeout,
            merge_stderr=merge_stderr or None,
            stdin=stdin or None,
            pty=pty or None,
            rows=rows,
            cols=cols,
            ready=_ready_json(ready),
            reuse=reuse or None,
        )
        return await self._events.started(int(result["id"]), session, agent)

    async def restart(self, proc_id: int) -> Proc:
        """Start the proc's command again (``restart``) as a new proc."""
        p = self.get(proc_id)
        result = await self._calls.call("restart", long=True, proc_id=proc_id, proc=proc_id)
        return await self._events.started(int(result["id"]), p.session, p.agent)

    async def term(self, proc_id: int) -> ExitInfo:
        """SIGTERM, then SIGKILL after its grace, on the server; how it ended."""
        reply = await self._calls.call("term", long=True, proc_id=proc_id, proc=proc_id)
        info = _exit_of(reply)
        assert info is not None
        return await self._events.exited(proc_id, info)

    async def kill(self, proc_id: int) -> ExitInfo:
        """SIGKILL now, on the server; how it ended."""
        reply = await self._calls.call("kill", long=True, proc_id=proc_id, proc=proc_id)
        info = _exit_of(reply)
        assert info is not None
        return await self._events.exited(proc_id, info)

    async def interrupt(self, proc_id: int) -> bool:
        reply = await self._calls.call("interrupt", proc_id=proc_id, proc=proc_id)
        return bool(reply["delivered"])

    async def signal(self, proc_id: int, signal: int | str, *, os_pid: int | None = None) -> bool:
        args = spec.check("signal", proc=proc_id, signal=signal, os_pid=os_pid)
        reply = await self._calls.call("signal", proc_id=proc_id, **args)
        return bool(reply["sent"])

    async def write(self, proc_id: int, data: bytes | str = "") -> int:
        """Write to the proc's stdin (as UTF-8); the bytes written."""
        self._must_be_live(proc_id)
        text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
        written = 0
        for i in range(0, len(text), WRITE_CHUNK):
            reply = await self._calls.call(
                "write", long=True, proc_id=proc_id, proc=proc_id, data=text[i : i + WRITE_CHUNK]
            )
            written += int(reply["written"])
        return written

    async def resize(self, proc_id: int, rows: int, cols: int) -> None:
        await self._calls.call("resize", proc_id=proc_id, proc=proc_id, rows=rows, cols=cols)

    async def screen(self, proc_id: int, *, styled: bool = False) -> ScreenText:
        reply = await self._calls.call(
            "screen", proc_id=proc_id, proc=proc_id, styled=styled or None
        )
        return screen_from_json(reply)

    async def close_stdin(self, proc_id: int) -> bool:
        p = self._must_be_live(proc_id)
        if not p.options.stdin:
            return False
        try:
            reply = await self._calls.call(
                "write", long=True, proc_id=proc_id, proc=proc_id, data="", close=True
            )
        except StdinClosed:
            return False
        return bool(reply.get("closed"))

    def _must_be_live(self, proc_id: int) -> RemoteProc:
        p = self._procs.live.get(proc_id) if isinstance(proc_id, int) else None
        if p is None:
            raise ProcNotFound(proc_id)
        return p

    async def term_all(self, session: str | None = None, agent: str | None = None) -> None:
        await asyncio.gather(*(self.term(p.id) for p in self.procs(session, agent) if p.running))

    async def kill_all(self, session: str | None = None, agent: str | None = None) -> None:
        await asyncio.gather(*(self.kill(p.id) for p in self.procs(session, agent) if p.running))

    async def wait(self, proc_id: int, timeout: float | None = None) -> ExitInfo:
        """Wait until the mirror sees the proc exit; how it ended."""
        p = self.get(proc_id)
        if p.exit is not None:
            return p.exit
        info = await self._procs.wait(self._procs.exits, proc_id, timeout)
        if info is None:
            raise SupervisorClosed(f"the link to {self.where} is closed")
        return info

    async def sessions(self) -> dict[str, list[str]]:
        """The server's sessions and their agents, declared ones (a workspace's)
        included: what ``procwindow ctl sessions`` lists."""
        reply = await self._calls.call("sessions")
        return {s["session"]: [a["agent"] for a in s["agents"]] for s in reply}

    def __repr__(self) -> str:
        state = "closed" if self.closed else "connected" if self.connected else "disconnected"
        return f"<RemoteSupervisor {self.where} {state} procs={len(self._procs.live)}>"
