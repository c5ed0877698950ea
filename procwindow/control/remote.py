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

**Where it is.** This module holds the operations; the layers under them are
base classes of RemoteSupervisor, each in a module of its own:
:mod:`._remote_sync` follows the events and keeps the mirror current,
:mod:`._remote_calls` holds the state and the pool of connections;
:mod:`._remote_procs` has RemoteProc, :mod:`._remote_lines` a proc's held lines.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from ..core import (
    DEFAULT_TOOL,
    ExitInfo,
    ExitReason,
    Proc,
    ProcNotFound,
    ProcRunning,
    ProcStats,
    ProcwindowError,
    ReadBatch,
    Ready,
    RunBatch,
    SearchHit,
    StdinClosed,
    Stream,
    Subscription,
    SupervisorAPI,
    SupervisorClosed,
    WorkspaceRun,
)
from ..core._events import DEFAULT_QUEUE_SIZE
from ..core._search import Matcher
from ._links import (
    Disconnected,
    LinkError,
    NoServer,
    RemoteNotInstalled,
    SshFailed,
    Target,
)
from ._protocol import HistoryUnavailable
from ._remote_calls import _BROKEN, _ready_json
from ._remote_lines import MIRROR_LINES, _line, _Mirror, _Subject
from ._remote_procs import RemoteProc, _exit_of
from ._remote_sync import BACKOFF_MAX, BACKOFF_MIN, _MirrorSync
from ._remote_sync import EXIT_HOLD as EXIT_HOLD
from ._remote_sync import FETCH_LINES as FETCH_LINES
from .client import ServerError

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

#: Procs whose lines are mirrored at once; reading another drops the least recently read.
MIRRORED_PROCS = 16
#: Seconds ``spawn`` waits for its proc's start event before fetching it itself.
_START_WAIT = 5.0
#: Seconds ``term``/``kill`` wait for the exit event after the server's reply.
_EXIT_EVENT_WAIT = 1.0
#: Seconds a history answer is served before it is fetched again.
_HISTORY_TTL = 1.0
#: Seconds ``close`` waits for the dismisses on their way to the server.
_CLOSE_WAIT = 5.0
#: Text per ``write`` request (well under the request limit however it is escaped).
_WRITE_CHUNK = 128 * 1024
_ZERO_STATS = ProcStats(0.0, 0, 0, 0, 0, 0)


class LogsElsewhere(ProcwindowError):
    """A proc's log files are on the server's side, not readable here by path."""


class RemoteSupervisor(_MirrorSync):
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
        if self._life is not None or self._closed:
            raise RuntimeError("this RemoteSupervisor is already open or closed")
        stream = await self._establish()
        self._life = asyncio.get_running_loop().create_task(
            self._follow(stream), name=f"procwindow remote {self.where}"
        )

    async def close(self) -> None:
        """Close every connection (and ssh process) and end every subscription.
        Nothing on the server side is stopped."""
        if self._closed:
            return
        if self._sending:  # a dismiss done here is done there too
            await asyncio.wait(set(self._sending), timeout=_CLOSE_WAIT)
        self._closed = True
        was = self._connected
        self._connected = False
        tasks = [t for t in (self._life, *self._tasks) if t is not None]
        for task in tasks:
            task.cancel()
        for m in self._mirrors.values():
            if m.hold is not None:
                m.hold.cancel()
        self._drop_clients()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        await self._link.aclose()
        for pid in list(self._known):
            self._resolve(self._known, pid, None)
        for pid in list(self._exits):
            self._resolve(self._exits, pid, None)
        self._hub.close()
        if was:
            self._notify("disconnected")

    async def __aenter__(self) -> RemoteSupervisor:
        if self._life is None:
            await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- queries (SupervisorAPI) ----------------------------------------------------------

    @property
    def history_enabled(self) -> bool:
        """True when the server keeps a history database."""
        return self._history_on

    @property
    def workspaces(self) -> list[WorkspaceRun]:
        """The workspaces running on the server, mirrored: each answers
        ``name``, ``states()``, ``state(name)`` and ``state_of(proc_id)`` as a
        WorkspaceRun does, kept current by the server's ``phase`` events
        (:class:`~procwindow.control._remote_workspaces.RemoteWorkspaceRun`;
        starting and stopping them is the server's: ``ctl up``/``down``)."""
        return cast("list[WorkspaceRun]", list(self._workspace_runs))

    def get(self, proc_id: int) -> Proc:
        """The proc with this id: live, dismissed, or listed by ``history``."""
        p = self._live.get(proc_id) if isinstance(proc_id, int) else None
        if p is None:
            p = self._past.get(proc_id) if isinstance(proc_id, int) else None
        if p is None:
            raise ProcNotFound(proc_id)
        return p

    def procs(self, session: str | None = None, agent: str | None = None) -> list[Proc]:
        """The live procs of a scope (None: any), newest first."""
        return [
            p
            for _, p in sorted(self._live.items(), reverse=True)
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
        if isinstance(proc_id, bool) or not isinstance(proc_id, int) or proc_id < 1:
            raise ProcNotFound(proc_id)
        if limit is not None and limit < 1:
            raise ValueError(f"limit must be positive, got {limit}")
        want = Stream(stream) if stream is not None else None
        since = max(0, since)
        m = self._mirrors.get(proc_id)
        if m is None:
            m = self._mirrors[proc_id] = _Mirror(proc_id, since)
            while len(self._mirrors) > MIRRORED_PROCS:
                _, old = self._mirrors.popitem(last=False)
                if old.task is not None:
                    old.task.cancel()
                self._flush(old)
        else:
            self._mirrors.move_to_end(proc_id)
        if m.gone:
            raise ProcNotFound(proc_id)
        if since < m.start:
            if m.start - since > MIRROR_LINES // 2:  # too far back: start over from there
                self._flush(m)
                m.lines, m.partials = [], []
                m.start = m.end = since
                m.fetched = m.eof = False
                m.backfill = None
            elif m.backfill is None or since < m.backfill:
                m.backfill = since
        if not m.fetched or m.backfill is not None:
            self._pull(m)
        return m.read(since, limit, want, partial)

    def read_runs(
        self,
        proc_id: int,
        since: int = 0,
        *,
        limit: int | None = None,
        stream: Stream | str | None = None,
        partial: bool = False,
    ) -> RunBatch:
        """:meth:`read`'s answer grouped into runs."""
        return RunBatch.of(self.read(proc_id, since, limit=limit, stream=stream, partial=partial))

    def history(
        self,
        *,
        session: str | None = None,
        agent: str | None = None,
        tool: str | None = None,
        reason: ExitReason | str | None = None,
        since: float | None = None,
        limit: int | None = None,
    ) -> list[Proc]:
        """The last answer of the server's history to these filters (empty the
        first time): it is fetched again in the background, and listeners hear
        ``"history"`` when a new answer is in."""
        reason_ = ExitReason(reason).value if reason is not None else None
        key = (session, agent, tool, reason_, since, limit)
        held = self._history.get(key)
        if (held is None or time.monotonic() - held[0] > _HISTORY_TTL) and self._connected:
            self._history[key] = (time.monotonic(), held[1] if held else [])
            self._spawn_task(self._fetch_history(key), "procwindow remote history")
        ids = held[1] if held else []
        return [p for pid in ids if (p := self._live.get(pid) or self._past.get(pid)) is not None]

    async def _fetch_history(self, key: tuple[Any, ...]) -> None:
        session, agent, tool, reason, since, limit = key
        try:
            records = await self._call(
                "history",
                session=session,
                agent=agent,
                tool=tool,
                reason=reason,
                since=since,
                limit=limit,
            )
        except HistoryUnavailable:
            self._history_on = False
            records = []
        except (Disconnected, SupervisorClosed):
            return
        now = time.monotonic()
        ids = []
        for record in records:
            pid = int(record["id"])
            ids.append(pid)
            if pid in self._live:
                continue
            p = self._past.get(pid)
            if p is None:
                p = RemoteProc(record, now)
            else:
                p._take(record, now)
            self._remember(p)
        old = self._history.get(key)
        self._history[key] = (now, ids)
        if old is None or old[1] != ids or records:
            self._notify("history")

    def stats(self, proc_id: int) -> ProcStats:
        """The resource use last fetched (zeros at first); fetched again at
        once, so calling it at a steady interval gives values one call old."""
        if proc_id not in self._live:
            raise ProcNotFound(proc_id)
        if not self._stats_off and self._connected:
            if not self._stats_wanted:
                self._spawn_task(self._fetch_stats(), "procwindow remote stats")
            self._stats_wanted.add(proc_id)
        return self._stats.get(proc_id, _ZERO_STATS)

    async def _fetch_stats(self) -> None:
        await asyncio.sleep(0)  # the ids asked for in this turn, in one request
        ids, self._stats_wanted = sorted(self._stats_wanted), set()
        try:
            reply = await self._call("stats", procs=ids)
        except ServerError:
            self._stats_off = True  # an older server
            return
        except (Disconnected, SupervisorClosed):
            return
        for item in reply.get("stats", ()):
            pid = item.pop("proc")
            if pid in self._live:
                self._stats[pid] = ProcStats(**item)

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
        self._check_link()
        try:
            client = await self._link.open()
        except LinkError as exc:
            raise Disconnected(str(exc)) from None
        self._clients.add(client)
        try:
            async with contextlib.aclosing(client.stream("search", **fields)) as messages:
                async for message in messages:
                    hit = message.get("hit")
                    if hit is not None:
                        yield SearchHit(hit["proc"], hit["session"], hit["agent"], _line(hit))
        except ServerError as exc:
            if exc.type in _BROKEN:
                raise Disconnected(f"{self.where}: {exc.message}") from None
            raise exc.local() from None
        finally:
            client.abort()
            self._clients.discard(client)

    def dismiss(self, proc_id: int) -> None:
        """Remove an exited proc from the live view, here at once and on the server."""
        p = self._live.get(proc_id) if isinstance(proc_id, int) else None
        if p is None:
            raise ProcNotFound(proc_id)
        if p.exit is None:
            raise ProcRunning(proc_id)
        self._check_link()
        self._on_dismiss(proc_id, None)
        task = self._spawn_task(self._dismiss(proc_id), f"procwindow remote dismiss {proc_id}")
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _dismiss(self, proc_id: int) -> None:
        try:
            await self._call("dismiss", proc_id=proc_id, proc=proc_id)
        except ProcNotFound:
            pass  # dismissed there already
        except ProcwindowError as exc:
            if isinstance(exc, (Disconnected, SupervisorClosed)):
                return  # the next snapshot tells whether it went
            log.warning("dismiss %d on %s failed: %s", proc_id, self.where, exc)
            with contextlib.suppress(ProcwindowError):
                await self._resync()

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
        timeout: float | None = None,
        merge_stderr: bool = False,
        stdin: bool = False,
        ready: Ready | str | int | Mapping[str, object] | None = None,
        reuse: bool = False,
    ) -> Proc:
        """Start a command on the server (``run``); its proc once the mirror has it."""
        result = await self._call(
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
            timeout=timeout,
            merge_stderr=merge_stderr or None,
            stdin=stdin or None,
            ready=_ready_json(ready),
            reuse=reuse or None,
        )
        return await self._proc_known(int(result["id"]), session, agent)

    async def restart(self, proc_id: int) -> Proc:
        """Start the proc's command again (``restart``) as a new proc."""
        p = self.get(proc_id)
        result = await self._call("restart", long=True, proc_id=proc_id, proc=proc_id)
        return await self._proc_known(int(result["id"]), p.session, p.agent)

    async def _proc_known(self, pid: int, session: str, agent: str) -> RemoteProc:
        """The proc once its start event was applied (fetched here if it is late)."""
        p = self._live.get(pid)
        if p is not None:
            return p
        fut: asyncio.Future[RemoteProc | None] = asyncio.get_running_loop().create_future()
        self._known.setdefault(pid, []).append(fut)
        try:
            known = await asyncio.wait_for(asyncio.shield(fut), _START_WAIT)
        except TimeoutError:
            known = None
        if known is not None:
            return known
        self._check_link()
        await self._on_start(_Subject(pid, session, agent), time.time(), {})
        p = self._live.get(pid) or self._past.get(pid)
        if p is None:
            raise ProcNotFound(pid)
        return p

    async def _exit_known(self, proc_id: int, info: ExitInfo) -> ExitInfo:
        """``info`` once the proc's exit event was applied (or applied here if late)."""
        p = self._live.get(proc_id)
        if p is None or p.exit is not None:
            return p.exit if p is not None and p.exit is not None else info
        fut: asyncio.Future[ExitInfo | None] = asyncio.get_running_loop().create_future()
        self._exits.setdefault(proc_id, []).append(fut)
        try:
            known = await asyncio.wait_for(asyncio.shield(fut), _EXIT_EVENT_WAIT)
        except TimeoutError:
            known = None
        if known is None and p.exit is None and not self._closed:
            self._on_exit(p, time.time(), self._exit_fields(p, info))
        return known or info

    async def term(self, proc_id: int) -> ExitInfo:
        """SIGTERM, then SIGKILL after its grace, on the server; how it ended."""
        reply = await self._call("term", long=True, proc_id=proc_id, proc=proc_id)
        info = _exit_of(reply)
        assert info is not None
        return await self._exit_known(proc_id, info)

    async def kill(self, proc_id: int) -> ExitInfo:
        """SIGKILL now, on the server; how it ended."""
        reply = await self._call("kill", long=True, proc_id=proc_id, proc=proc_id)
        info = _exit_of(reply)
        assert info is not None
        return await self._exit_known(proc_id, info)

    async def interrupt(self, proc_id: int) -> bool:
        """SIGINT; False if it already exited."""
        reply = await self._call("interrupt", proc_id=proc_id, proc=proc_id)
        return bool(reply["delivered"])

    async def write(self, proc_id: int, data: bytes | str = "") -> int:
        """Write to the proc's stdin (as UTF-8); the bytes written."""
        self._must_be_live(proc_id)
        text = data.decode("utf-8", errors="replace") if isinstance(data, bytes) else data
        written = 0
        for i in range(0, len(text), _WRITE_CHUNK):
            reply = await self._call(
                "write", long=True, proc_id=proc_id, proc=proc_id, data=text[i : i + _WRITE_CHUNK]
            )
            written += int(reply["written"])
        return written

    async def close_stdin(self, proc_id: int) -> bool:
        """Close the proc's stdin; False if it had none or it was closed already."""
        p = self._must_be_live(proc_id)
        if not p.options.stdin:
            return False
        try:
            reply = await self._call(
                "write", long=True, proc_id=proc_id, proc=proc_id, data="", close=True
            )
        except StdinClosed:
            return False
        return bool(reply.get("closed"))

    def _must_be_live(self, proc_id: int) -> RemoteProc:
        p = self._live.get(proc_id) if isinstance(proc_id, int) else None
        if p is None:
            raise ProcNotFound(proc_id)
        return p

    async def term_all(self, session: str | None = None, agent: str | None = None) -> None:
        """``term`` every running proc of a scope (None: any), concurrently."""
        await asyncio.gather(*(self.term(p.id) for p in self.procs(session, agent) if p.running))

    async def kill_all(self, session: str | None = None, agent: str | None = None) -> None:
        """``kill`` every running proc of a scope (None: any), concurrently."""
        await asyncio.gather(*(self.kill(p.id) for p in self.procs(session, agent) if p.running))

    async def wait(self, proc_id: int, timeout: float | None = None) -> ExitInfo:
        """Wait until the mirror sees the proc exit; how it ended."""
        p = self.get(proc_id)
        if p.exit is not None:
            return p.exit
        fut: asyncio.Future[ExitInfo | None] = asyncio.get_running_loop().create_future()
        self._exits.setdefault(proc_id, []).append(fut)
        info = await asyncio.wait_for(asyncio.shield(fut), timeout)
        if info is None:
            raise SupervisorClosed(f"the link to {self.where} is closed")
        return info

    async def sessions(self) -> dict[str, list[str]]:
        """The server's sessions and their agents, declared ones (a workspace's)
        included: what ``procwindow ctl sessions`` lists."""
        reply = await self._call("sessions")
        return {s["session"]: [a["agent"] for a in s["agents"]] for s in reply}

    def __repr__(self) -> str:
        state = "closed" if self._closed else "connected" if self._connected else "disconnected"
        return f"<RemoteSupervisor {self.where} {state} procs={len(self._live)}>"


if TYPE_CHECKING:

    def _conforms(sup: RemoteSupervisor) -> SupervisorAPI:
        # mypy checks here that RemoteSupervisor has every operation of the protocol.
        return sup
