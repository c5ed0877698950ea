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
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import dataclasses
import logging
import os
import random
import re
import time
from collections import OrderedDict
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ..core import (
    DEFAULT_TOOL,
    CommandNotFound,
    CwdMissing,
    EventKind,
    ExitInfo,
    ExitReason,
    InvalidArgv,
    InvalidPattern,
    InvalidScope,
    Line,
    NotExecutable,
    Phase,
    PhaseEvent,
    Proc,
    ProcNotFound,
    ProcRunning,
    ProcState,
    ProcStats,
    ProcwindowError,
    ReadBatch,
    Ready,
    SearchHit,
    SpawnFailed,
    StdinClosed,
    Stream,
    Subscription,
    SupervisorAPI,
    SupervisorClosed,
    UnsafePath,
    WorkspaceRun,
)
from ..core._events import DEFAULT_QUEUE_SIZE, EventHub
from ..core._proc import SpawnOptions
from ..core._search import Matcher
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
from ._protocol import HistoryUnavailable
from .aclient import AsyncClient
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

#: Seconds before the first attempt to reconnect; doubled each failure up to BACKOFF_MAX.
BACKOFF_MIN = 0.1
BACKOFF_MAX = 5.0
#: A link that stayed up this long starts its next backoff from BACKOFF_MIN again.
_STABLE = 10.0
#: Lines asked for per ``out`` request (about 0.5 MB of JSON for 100-byte lines).
FETCH_LINES = 5000
#: Lines held per mirrored proc (the OutputModel keeps 100,000).
MIRROR_LINES = 200_000
#: Procs whose lines are mirrored at once; reading another drops the least recently read.
MIRRORED_PROCS = 16
#: Seconds an exit of a mirrored proc waits for its last lines before it is published.
EXIT_HOLD = 0.25
#: After an exit, seconds between looks for the end of the output (a descendant
#: may hold the pipes), then it is left to the next event.
_EOF_POLLS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0)
#: Seconds ``spawn`` waits for its proc's start event before fetching it itself.
_START_WAIT = 5.0
#: Seconds ``term``/``kill`` wait for the exit event after the server's reply.
_EXIT_EVENT_WAIT = 1.0
#: Connections kept open between calls; calls in flight at once (quick ones, and
#: those that wait: term, kill, write, restart, search).
_IDLE_CLIENTS = 2
_QUICK_CALLS = 4
_LONG_CALLS = 16
#: Seconds a history answer is served before it is fetched again.
_HISTORY_TTL = 1.0
#: Past procs (dismissed, or from the history) remembered for ``get``.
_PAST_PROCS = 10_000
#: Seconds ``close`` waits for the dismisses on their way to the server.
_CLOSE_WAIT = 5.0
#: Text per ``write`` request (well under the request limit however it is escaped).
_WRITE_CHUNK = 128 * 1024
#: ServerError types after which the connection was closed (AsyncClient's).
_BROKEN = frozenset({"ConnectionClosed", "ReplyTooLarge", "BadReply"})
_STREAMS = {"stdout": Stream.STDOUT, "stderr": Stream.STDERR}
_ZERO_STATS = ProcStats(0.0, 0, 0, 0, 0, 0)


class LogsElsewhere(ProcwindowError):
    """A proc's log files are on the server's side, not readable here by path."""


class _Subject(NamedTuple):
    """What an event is about, for publishing it (a proc, or a workspace command)."""

    id: int
    session: str
    agent: str


class _Deferred(NamedTuple):
    """An event held back until the lines it follows are here."""

    subject: _Subject | RemoteProc
    kind: EventKind
    at: float | None
    fields: dict[str, Any]


# -- procs ---------------------------------------------------------------------------


def _exit_of(data: Any) -> ExitInfo | None:
    if not isinstance(data, Mapping):
        return None
    return ExitInfo(
        int(data["code"]),
        data.get("signal"),
        ExitReason(data["reason"]),
        float(data.get("runtime") or 0.0),
    )


class RemoteProc(Proc):
    """A proc of a remote supervisor, as its mirror has it: a :class:`Proc`.

    Updated in place by the events, like an in-process Proc. ``disconnected``
    is true while the link to its supervisor is down (its state is then the
    last one known). ``env``, ``graceful_timeout`` and ``options.ready`` are
    not sent by the server (None); ``output_bytes`` and ``held_bytes`` are 0.
    """

    __slots__ = ("_cut_bytes", "_cut_lines", "_disconnected", "_last", "_log_err", "_on")

    def __init__(self, record: Mapping[str, Any], now_mono: float) -> None:
        super().__init__(
            proc_id=int(record["id"]),
            os_pid=int(record.get("os_pid") or 0),
            argv=tuple(record.get("argv") or ()),
            session=str(record["session"]),
            agent=str(record["agent"]),
            tool=str(record.get("tool") or DEFAULT_TOOL),
            cwd=record.get("cwd"),
            env=None,
            started_at=float(record.get("started_at") or 0.0),
            started_mono=now_mono,
            options=SpawnOptions(
                timeout=record.get("timeout"),
                merge_stderr=bool(record.get("merge_stderr")),
                stdin=bool(record.get("stdin")),
            ),
        )
        self._disconnected = False
        self._last = 0
        self._on = True
        self._log_err: str | None = None
        self._cut_lines = 0
        self._cut_bytes = 0
        self._take(record, now_mono)

    def _take(self, record: Mapping[str, Any], now_mono: float) -> None:
        """The state of a ``procs`` or ``history`` record."""
        exit_ = _exit_of(record.get("exit"))
        runtime = exit_.runtime if exit_ is not None else float(record.get("runtime") or 0.0)
        self._started_mono = now_mono - runtime
        self._exit = exit_
        self._state = ProcState(record.get("state", "running"))
        if exit_ is not None:
            self._state = ProcState.EXITED
            self._ended_mono = now_mono
            self._ended_at = record.get("ended_at")
        else:
            self._ended_mono = self._ended_at = None
        self._ready = bool(record.get("ready", True))
        self._on = bool(record.get("live", True))
        self._log_err = record.get("log_error")
        self._cut_lines = int(record.get("cut_lines") or 0)
        self._cut_bytes = int(record.get("cut_bytes") or 0)
        last = record.get("last_seq")
        if isinstance(last, int):
            self._last = max(self._last, last)

    def _as_started(self) -> None:
        """Back to the state of its start event (its record may be newer)."""
        self._state, self._exit = ProcState.RUNNING, None
        self._ended_mono = self._ended_at = None

    def _exited(self, info: ExitInfo, at: float | None) -> None:
        self._exit = info
        self._state = ProcState.EXITED
        self._ended_mono = self._started_mono + info.runtime
        self._ended_at = at

    @property
    def disconnected(self) -> bool:
        """True while the link to its supervisor is down (the state shown is the last known)."""
        return self._disconnected

    @property
    def live(self) -> bool:
        return self._on

    @property
    def last_seq(self) -> int:
        return self._last

    @property
    def log_error(self) -> str | None:
        return self._log_err

    @property
    def cut_lines(self) -> int:
        return self._cut_lines

    @property
    def cut_bytes(self) -> int:
        return self._cut_bytes

    @property
    def output_open(self) -> bool:
        return self.running

    @property
    def output_bytes(self) -> int:
        return 0

    @property
    def held_bytes(self) -> int:
        return 0

    def __repr__(self) -> str:
        extra = f" code={self._exit.code}" if self._exit else ""
        link = " disconnected" if self._disconnected else ""
        return f"<RemoteProc {self._id} {self._tool} {self._state} pid={self._os_pid}{extra}{link}>"


# -- lines ---------------------------------------------------------------------------


_new_tuple = tuple.__new__


def _line(d: Mapping[str, Any]) -> Line:
    # A reply may hold thousands of lines: no NamedTuple __new__ keyword handling.
    return _new_tuple(
        Line,
        (
            d["seq"],
            _STREAMS[d["stream"]],
            d["time"],
            d["text"],
            d.get("split", False),
            d.get("partial", False),
        ),
    )


def _seq(line: Line) -> int:
    return line.seq


class _Mirror:
    """The lines of one proc held here: every seq in ``(start, end]`` is in
    ``lines`` or missing for good (cut). ``target`` is the newest seq known to
    exist; ``deferred`` the events that wait for the lines they announce."""

    __slots__ = (
        "backfill",
        "deferred",
        "end",
        "eof",
        "fetched",
        "gone",
        "hold",
        "id",
        "lines",
        "more",
        "news",
        "partials",
        "start",
        "target",
        "task",
    )

    def __init__(self, proc_id: int, since: int) -> None:
        self.id = proc_id
        self.lines: list[Line] = []
        self.start = self.end = self.target = since
        self.eof = False
        self.fetched = False
        self.gone = False
        self.news = False  # a partial line changed: ask again
        self.more = False  # the last reply was full: there is more
        self.partials: list[Line] = []
        self.backfill: int | None = None
        self.deferred: list[_Deferred] = []
        self.hold: asyncio.TimerHandle | None = None
        self.task: asyncio.Task[None] | None = None

    def read(
        self, since: int, limit: int | None, stream: Stream | None, partial: bool
    ) -> ReadBatch:
        if since < self.start or since >= self.end:  # before what is held (being fetched)
            shown = self._partials(since, stream) if partial and since == self.end else []
            return ReadBatch(shown, 0, since, self.eof and since >= self.end)
        lines = self.lines
        first = bisect.bisect_right(lines, since, key=_seq)
        if stream is None:
            stop = len(lines) if limit is None else min(len(lines), first + limit)
            out = lines[first:stop]
            limited = stop < len(lines)
        else:
            out = []
            limited = False
            for line in lines[first:]:
                if line.stream is stream:
                    if limit is not None and len(out) >= limit:
                        limited = True
                        break
                    out.append(line)
        cursor = out[-1].seq if limited else self.end
        held = bisect.bisect_right(lines, cursor, key=_seq) - first
        dropped = max(0, cursor - since - held)
        if partial and not limited:
            out = out + self._partials(cursor, stream)
        return ReadBatch(out, dropped, cursor, self.eof and cursor >= self.end)

    def _partials(self, cursor: int, stream: Stream | None) -> list[Line]:
        return [
            p for p in self.partials if p.seq > cursor and (stream is None or p.stream is stream)
        ]

    def take(self, reply: Mapping[str, Any]) -> list[Line]:
        """Hold the lines of an ``out`` reply that reads on from ``end``; the new ones."""
        end = self.end
        lines = [_line(d) for d in reply.get("lines", ())]
        new = [line for line in lines if line.seq > end and not line.partial]
        partials = [line for line in lines if line.partial] if lines and lines[-1].partial else []
        self.lines += new
        self.end = max(self.end, int(reply.get("cursor", self.end)))
        self.target = max(self.target, self.end)
        self.eof = bool(reply.get("eof"))
        self.partials = partials
        self.fetched = True
        excess = len(self.lines) - MIRROR_LINES
        if excess > MIRROR_LINES // 8:
            self.start = self.lines[excess - 1].seq
            del self.lines[:excess]
        return new


# -- errors ----------------------------------------------------------------------------

#: Server error types that are core errors, rebuilt here with their message.
_ERRORS: dict[str, type[ProcwindowError]] = {
    cls.__name__: cls
    for cls in (
        CommandNotFound,
        CwdMissing,
        InvalidArgv,
        InvalidPattern,
        InvalidScope,
        NotExecutable,
        SpawnFailed,
        SupervisorClosed,
        UnsafePath,
        HistoryUnavailable,
    )
}
#: Attributes of the rebuilt errors, read back from their messages.
_ATTRS: dict[str, tuple[re.Pattern[str], tuple[str, ...]]] = {
    "CommandNotFound": (re.compile(r"command not found: '(.*)'$"), ("command",)),
    "CwdMissing": (re.compile(r"working directory unusable: '(.*)' \((.*)\)$"), ("cwd", "why")),
    "NotExecutable": (re.compile(r"not executable: '(.*)' \((.*)\)$"), ("path", "why")),
    "InvalidPattern": (re.compile(r"invalid pattern '(.*)': (.*)$", re.S), ("pattern", "why")),
    "HistoryUnavailable": (re.compile(r"history is off: (.*)$"), ("why",)),
}


def _local_error(exc: ServerError, proc_id: int | None = None) -> ProcwindowError:
    """The error the in-process Supervisor would have raised, from the server's."""
    kind, message = exc.type, exc.message
    if proc_id is not None:
        if kind == "ProcNotFound":
            return ProcNotFound(proc_id)
        if kind == "ProcRunning":
            return ProcRunning(proc_id)
        if kind == "StdinClosed":
            prefix = f"proc {proc_id}: "
            return StdinClosed(proc_id, message.removeprefix(prefix))
    cls = _ERRORS.get(kind)
    if cls is None:
        return exc
    err = cls.__new__(cls)
    BaseException.__init__(err, message)
    pattern, names = _ATTRS.get(kind, (None, ()))
    found = pattern.match(message) if pattern is not None else None
    for i, name in enumerate(names):
        setattr(err, name, found.group(i + 1) if found else None)
    return err


def _ready_json(ready: Ready | str | int | Mapping[str, object] | None) -> Any:
    """``spawn``'s ``ready`` as the protocol's object."""
    if ready is None:
        return None
    r = Ready.of(ready)
    out: dict[str, Any] = {}
    if r.line is not None:
        out = {"line": r.line, "regex": r.regex}
        if r.stream is not None:
            out["stream"] = r.stream.value
    elif r.port is not None:
        out = {"port": r.port, "host": r.host}
    else:
        out = {"command": list(r.command or ())}
    out["interval"] = r.interval
    if r.timeout is not None:
        out["timeout"] = r.timeout
    return out


# -- the supervisor ----------------------------------------------------------------------

_BASE_FIELDS = frozenset({"topic", "kind", "proc_id", "session", "agent", "time", "missed"})


def _event_fields(d: Mapping[str, Any]) -> dict[str, Any]:
    """An event message's own fields (by kind), typed as the core's events have them."""
    out: dict[str, Any] = {}
    for key, value in d.items():
        if key in _BASE_FIELDS or key == "proc" or value is None:
            continue
        if key == "reason":
            value = ExitReason(value)
        elif key == "stream":
            value = _STREAMS[value]
        elif key == "phase":
            value = Phase(value)
        elif key == "waiting_for":
            value = tuple(tuple(pair) for pair in value)
        out[key] = value
    return out


#: The fields each kind of event may carry (a newer server's extra fields are left out).
_KIND_FIELDS: dict[EventKind, frozenset[str]] = {
    EventKind.START: frozenset({"os_pid", "tool", "cmd"}),
    EventKind.OUTPUT: frozenset({"stream", "first_seq", "last_seq"}),
    EventKind.PARTIAL: frozenset({"stream", "first_seq", "text"}),
    EventKind.EXIT: frozenset({"code", "signal", "reason", "runtime", "tool", "cmd", "last_seq"}),
    EventKind.STOPPING: frozenset(),
    EventKind.READY: frozenset(),
    EventKind.DISMISS: frozenset(),
}


_PHASE_FIELDS = frozenset(f.name for f in dataclasses.fields(PhaseEvent)) - _BASE_FIELDS


class RemoteSupervisor:
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
        self._link: LocalLink | SshLink = make_link(
            target,
            ssh_command=list(ssh_command) if ssh_command is not None else None,
            remote_procwindow=remote_procwindow,
        )
        self._reconnect = reconnect
        self._hub = EventHub(time.time)
        self._live: dict[int, RemoteProc] = {}
        self._past: OrderedDict[int, RemoteProc] = OrderedDict()
        self._mirrors: OrderedDict[int, _Mirror] = OrderedDict()
        self._records: dict[int, Mapping[str, Any]] = {}  # fetched, start event not yet seen
        self._known: dict[int, list[asyncio.Future[RemoteProc | None]]] = {}
        self._exits: dict[int, list[asyncio.Future[ExitInfo | None]]] = {}
        self._connected = False
        self._linking = False
        self._closed = False
        self._generation = 0
        self._last_error: str | None = None
        self._history_on = False
        self._history: dict[tuple[Any, ...], tuple[float, list[int]]] = {}
        self._stats: dict[int, ProcStats] = {}
        self._stats_wanted: set[int] = set()
        self._stats_off = False
        self._idle: list[AsyncClient] = []
        self._sparing = False
        self._clients: set[AsyncClient] = set()
        self._quick: asyncio.Semaphore | None = None
        self._long: asyncio.Semaphore | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._sending: set[asyncio.Task[Any]] = set()  # dismisses on their way
        self._life: asyncio.Task[None] | None = None
        self._listeners: list[Callable[[str], None]] = []

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

    # -- the link -------------------------------------------------------------------

    @property
    def where(self) -> str:
        """The server: its socket path, or ``ssh://host/NAME``."""
        return self._link.where

    @property
    def connected(self) -> bool:
        """True while the link is up (the mirror is current)."""
        return self._connected

    @property
    def closed(self) -> bool:
        """True once ``close`` was called."""
        return self._closed

    @property
    def last_error(self) -> str | None:
        """Why the link last went down or failed to come back, one line (None: never)."""
        return self._last_error

    @property
    def link(self) -> LocalLink | SshLink:
        """How the server is reached (an SshLink lists its ssh processes' pids)."""
        return self._link

    def add_listener(self, callback: Callable[[str], None]) -> Callable[[], None]:
        """Call ``callback(what)`` on ``"connected"``, ``"disconnected"`` (also
        each failed attempt to reconnect) and ``"history"`` (a history answer
        was fetched: ask again). Returns the function that removes it."""
        self._listeners.append(callback)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(callback)

        return remove

    def _notify(self, what: str) -> None:
        for callback in list(self._listeners):
            try:
                callback(what)
            except Exception:
                log.exception("a RemoteSupervisor listener failed")

    async def _establish(self) -> AsyncGenerator[dict[str, Any], None]:
        """Subscribe, take the snapshot, apply it; the events stream."""
        self._linking = True
        client: AsyncClient | None = None
        stream: AsyncGenerator[dict[str, Any], None] | None = None
        try:
            client = await self._link.open()
            self._clients.add(client)
            stream = client.stream("events", pattern=">")
            await anext(stream)  # subscribed: from here on no event is lost
            records = await self._call("procs")
            try:
                await self._call("history", limit=1)
                self._history_on = True
            except HistoryUnavailable:
                self._history_on = False
            self._apply_snapshot(records)
        except BaseException as exc:
            if stream is not None:
                await stream.aclose()
            self._drop_clients()
            self._linking = False
            if isinstance(exc, ServerError):
                raise Disconnected(f"{self.where}: {exc}") from None
            raise
        self._linking = False
        self._connected = True
        for p in self._all_procs():
            p._disconnected = False
        for m in self._mirrors.values():
            m.news = True
            self._pull(m)
        self._notify("connected")
        return stream

    async def _follow(self, stream: AsyncGenerator[dict[str, Any], None] | None) -> None:
        """Apply the events; on a drop, reconnect with backoff until closed."""
        backoff = BACKOFF_MIN
        while True:
            if stream is not None:
                since = time.monotonic()
                error = "the connection to the server closed"
                try:
                    async for message in stream:
                        event = message.get("event")
                        if isinstance(event, dict):
                            await self._on_event(event)
                except (ServerError, LinkError, OSError) as exc:
                    error = str(exc)
                except Exception as exc:
                    log.exception("following %s failed", self.where)
                    error = f"{type(exc).__name__}: {exc}"
                finally:
                    await stream.aclose()
                stream = None
                self._lost(error)
                if time.monotonic() - since > _STABLE:
                    backoff = BACKOFF_MIN
            if self._closed or not self._reconnect:
                return
            await asyncio.sleep(backoff * random.uniform(0.8, 1.2))
            backoff = min(backoff * 2, BACKOFF_MAX)
            try:
                stream = await self._establish()
            except LinkError as exc:
                self._last_error = str(exc)
                self._notify("disconnected")

    def _lost(self, error: str) -> None:
        self._connected = False
        self._last_error = error
        self._drop_clients()
        for p in self._all_procs():
            p._disconnected = True
        if not self._closed:
            log.warning("lost the link to %s: %s", self.where, error)
            self._notify("disconnected")

    def _drop_clients(self) -> None:
        self._generation += 1
        for client in list(self._clients):
            client.abort()
        self._clients.clear()
        self._idle.clear()

    def _all_procs(self) -> list[RemoteProc]:
        return [*self._live.values(), *self._past.values()]

    # -- calls ------------------------------------------------------------------------

    def _check_link(self) -> None:
        if self._closed:
            raise SupervisorClosed(f"the link to {self.where} is closed")
        if not self._connected and not self._linking:
            why = f" ({self._last_error})" if self._last_error else ""
            raise Disconnected(f"{self.where} is disconnected{why}; reconnecting")

    async def _call(
        self, op: str, *, long: bool = False, proc_id: int | None = None, **fields: Any
    ) -> Any:
        """One request on a connection of the pool; core errors as the Supervisor's."""
        self._check_link()
        if self._quick is None or self._long is None:
            self._quick, self._long = (
                asyncio.Semaphore(_QUICK_CALLS),
                asyncio.Semaphore(_LONG_CALLS),
            )
        gate = self._long if long else self._quick
        async with gate:
            self._check_link()
            generation = self._generation
            client = self._idle.pop() if self._idle else None
            self._keep_spare()
            if client is None:
                try:
                    client = await self._link.open()
                except LinkError as exc:
                    raise Disconnected(str(exc)) from None
                if generation != self._generation:  # the link dropped meanwhile
                    client.abort()
                    self._check_link()
                    raise Disconnected(f"{self.where}: the link dropped")
                self._clients.add(client)
            in_step = False
            try:
                result = await client.call(op, **fields)
                in_step = True
                return result
            except ServerError as exc:
                if exc.type in _BROKEN:
                    raise Disconnected(f"{self.where}: {exc.message}") from None
                in_step = True
                raise _local_error(exc, proc_id) from None
            finally:
                if in_step and generation == self._generation and len(self._idle) < _IDLE_CLIENTS:
                    self._idle.append(client)
                else:
                    client.abort()
                    self._clients.discard(client)

    def _keep_spare(self) -> None:
        """Over ssh a new connection takes a handshake and a remote start (a
        second or so): keep one open ahead, so that a ``term`` never waits for it."""
        if (
            isinstance(self._link, SshLink)
            and not self._idle
            and not self._sparing
            and (self._connected or self._linking)
        ):
            self._sparing = True
            self._spawn_task(self._open_spare(), "procwindow remote spare")

    async def _open_spare(self) -> None:
        generation = self._generation
        try:
            client = await self._link.open()
        except LinkError:
            return
        finally:
            self._sparing = False
        if generation != self._generation or self._closed or len(self._idle) >= _IDLE_CLIENTS:
            client.abort()
            return
        self._clients.add(client)
        self._idle.append(client)

    def _spawn_task(self, coro: Any, name: str) -> asyncio.Task[Any]:
        task: asyncio.Task[Any] = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            if not isinstance(exc, (LinkError, ProcwindowError)):
                log.error("%s failed: %r", task.get_name(), exc)

    # -- events ---------------------------------------------------------------------------

    def _publish(
        self, subject: _Subject | RemoteProc, kind: EventKind, at: float | None, **f: Any
    ) -> None:
        self._hub.publish(subject, kind, at=at, **f)

    async def _on_event(self, d: dict[str, Any]) -> None:
        if d.get("kind") == EventKind.MISSED.value:
            await self._resync()
            return
        try:
            kind = EventKind(str(d.get("kind")))
            pid = int(d["proc"])
            subject = _Subject(pid, str(d["session"]), str(d["agent"]))
            at = float(d["time"])
            fields = _event_fields(d)
        except (KeyError, ValueError, TypeError):
            return  # a kind or a shape this client does not know
        allowed = _PHASE_FIELDS if kind is EventKind.PHASE else _KIND_FIELDS.get(kind)
        if allowed is not None:
            fields = {k: v for k, v in fields.items() if k in allowed}
        match kind:
            case EventKind.START:
                await self._on_start(subject, at, fields)
            case EventKind.STOPPING:
                p = self._live.get(pid)
                if p is not None and p._set_stopping():
                    self._publish(p, kind, at)
            case EventKind.READY:
                p = self._live.get(pid)
                if p is not None and p._set_ready():
                    self._publish(p, kind, at)
            case EventKind.EXIT:
                p = self._live.get(pid)
                if p is not None and p.exit is None:
                    self._on_exit(p, at, fields)
            case EventKind.DISMISS:
                self._on_dismiss(pid, at)
            case EventKind.OUTPUT | EventKind.PARTIAL:
                self._on_output(subject, kind, at, fields)
            case _:
                self._publish(subject, kind, at, **fields)
        if d.get("missed"):
            await self._resync()

    async def _on_start(self, subject: _Subject, at: float, fields: dict[str, Any]) -> None:
        pid = subject.id
        if pid in self._live:
            return
        record = self._records.pop(pid, None)
        if record is None:
            records = await self._call("procs", session=subject.session, agent=subject.agent)
            for r in records:
                if r["id"] not in self._live:
                    self._records[r["id"]] = r
            record = self._records.pop(pid, None)
        if record is None:  # gone already (dismissed): its dismiss event follows
            return
        p = self._past.pop(pid, None)
        if p is None:
            p = RemoteProc(record, time.monotonic())
        else:
            p._take(record, time.monotonic())
        p._as_started()  # its stopping and exit are told by their own events
        p._disconnected = False
        self._live[pid] = p
        self._publish(p, EventKind.START, at, **fields)
        self._resolve(self._known, pid, p)

    def _on_exit(self, p: RemoteProc, at: float | None, fields: dict[str, Any]) -> None:
        info = ExitInfo(
            int(fields.get("code", 0)),
            fields.get("signal"),
            fields.get("reason", ExitReason.EXITED),
            float(fields.get("runtime", 0.0)),
        )
        p._exited(info, at)
        last = fields.get("last_seq")
        if isinstance(last, int):
            p._last = max(p._last, last)
        fields = {"tool": p.tool, "cmd": p.cmd, "last_seq": p.last_seq} | fields
        self._resolve(self._exits, p.id, info)
        m = self._mirrors.get(p.id)
        if m is None or (m.fetched and m.eof and m.end >= p.last_seq):
            self._publish(p, EventKind.EXIT, at, **fields)
            return
        # Its last lines first (and the end of its output), as in process.
        m.target = max(m.target, p.last_seq)
        m.deferred.append(self._event(p, EventKind.EXIT, at, fields))
        if m.hold is None:
            m.hold = asyncio.get_running_loop().call_later(EXIT_HOLD, self._flush, m)
        self._pull(m)

    def _on_dismiss(self, pid: int, at: float | None) -> None:
        p = self._live.pop(pid, None)
        if p is None:
            return
        p._on = False
        self._remember(p)
        self._stats.pop(pid, None)
        self._publish(p, EventKind.DISMISS, at)

    def _on_output(
        self, subject: _Subject, kind: EventKind, at: float, fields: dict[str, Any]
    ) -> None:
        p = self._live.get(subject.id) or self._past.get(subject.id)
        last = fields.get("last_seq")
        if p is not None and isinstance(last, int):
            p._last = max(p._last, last)
        m = self._mirrors.get(subject.id)
        if m is None or (kind is EventKind.OUTPUT and isinstance(last, int) and m.end >= last):
            self._publish(p or subject, kind, at, **fields)
            return
        if isinstance(last, int):
            m.target = max(m.target, last)
        if kind is EventKind.PARTIAL:
            m.news = True
        m.deferred.append(self._event(p or subject, kind, at, fields))
        self._pull(m)

    @staticmethod
    def _event(
        subject: _Subject | RemoteProc, kind: EventKind, at: float | None, fields: dict[str, Any]
    ) -> _Deferred:
        """An event to publish once the lines it follows are here."""
        return _Deferred(subject, kind, at, fields)

    def _flush(self, m: _Mirror) -> None:
        """Publish the events that waited for ``m``'s lines."""
        if m.hold is not None:
            m.hold.cancel()
            m.hold = None
        deferred, m.deferred = m.deferred, []
        for item in deferred:
            self._publish(item.subject, item.kind, item.at, **item.fields)

    def _resolve(self, waiters: dict[int, list[asyncio.Future[Any]]], pid: int, value: Any) -> None:
        for fut in waiters.pop(pid, ()):
            if not fut.done():
                fut.set_result(value)

    def _remember(self, p: RemoteProc) -> None:
        self._past[p.id] = p
        self._past.move_to_end(p.id)
        while len(self._past) > _PAST_PROCS:
            self._past.popitem(last=False)

    async def _resync(self) -> None:
        """Events were lost: take a snapshot and apply the difference."""
        self._apply_snapshot(await self._call("procs"))
        for m in self._mirrors.values():
            m.news = True
            self._pull(m)

    def _apply_snapshot(self, records: list[dict[str, Any]]) -> None:
        """Make the live procs those of ``records``, publishing the differences as events."""
        now = time.monotonic()
        self._records.clear()
        seen = set()
        for record in sorted(records, key=lambda r: int(r["id"])):
            pid = int(record["id"])
            seen.add(pid)
            p = self._live.get(pid)
            if p is None:
                p = self._past.pop(pid, None) or RemoteProc(record, now)
                p._take(record, now)
                p._disconnected = False
                self._live[pid] = p
                self._publish(p, EventKind.START, None, os_pid=p.os_pid, tool=p.tool, cmd=p.cmd)
                if p.exit is not None:
                    self._publish(p, EventKind.EXIT, p.ended_at, **self._exit_fields(p))
                self._resolve(self._known, pid, p)
                continue
            state, exit_, ready = p.state, p.exit, p.ready
            p._take(record, now)
            p._disconnected = False
            if not ready and p.ready:
                self._publish(p, EventKind.READY, None)
            if exit_ is None and p.exit is not None:
                info = p.exit
                p._exit = None  # _on_exit applies it, and holds it for the lines if need be
                self._on_exit(p, p.ended_at, self._exit_fields(p, info))
            elif state is ProcState.RUNNING and p.state is ProcState.STOPPING:
                self._publish(p, EventKind.STOPPING, None)
            elif exit_ is not None and p.exit is None:  # cannot come back to life
                p._exited(exit_, p.ended_at)
        for pid in [pid for pid in self._live if pid not in seen]:
            self._on_dismiss(pid, None)

    @staticmethod
    def _exit_fields(p: RemoteProc, info: ExitInfo | None = None) -> dict[str, Any]:
        info = info or p.exit
        assert info is not None
        fields: dict[str, Any] = {
            "code": info.code,
            "reason": info.reason,
            "runtime": info.runtime,
            "tool": p.tool,
            "cmd": p.cmd,
            "last_seq": p.last_seq,
        }
        if info.signal is not None:
            fields["signal"] = info.signal
        return fields

    # -- lines ------------------------------------------------------------------------------

    def _pull(self, m: _Mirror) -> None:
        """Fetch what ``m`` lacks, in a task of its own (unless one runs)."""
        if (m.task is None or m.task.done()) and self._connected and not self._closed:
            m.task = self._spawn_task(self._pull_lines(m), f"procwindow remote lines {m.id}")

    async def _pull_lines(self, m: _Mirror) -> None:
        polls = retries = 0
        while self._connected and not self._closed and self._mirrors.get(m.id) is m:
            try:
                if m.backfill is not None:
                    await self._backfill(m)
                    continue
                p = self._live.get(m.id) or self._past.get(m.id)
                ended = p is None or p.exit is not None or not p.live
                behind = not m.fetched or m.end < m.target or m.news or m.more
                if not behind and not (ended and not m.eof):
                    break
                if not behind:  # only the end of its output is awaited
                    if polls >= len(_EOF_POLLS):
                        break
                    await asyncio.sleep(_EOF_POLLS[polls])
                    polls += 1
                m.news = False
                reply = await self._call(
                    "out", proc_id=m.id, proc=m.id, since=m.end, limit=FETCH_LINES, partial=True
                )
            except ProcNotFound:
                m.gone = True
                break
            except (Disconnected, SupervisorClosed):
                # One connection went (its ssh was killed, say): while the link
                # holds, try again; else the lines are fetched once it is back.
                retries += 1
                if not self._connected or retries > 5:
                    return
                await asyncio.sleep(0.05 * retries)
                continue
            if self._mirrors.get(m.id) is not m:
                return
            new = m.take(reply)
            # A full reply: more is there already; go on without waiting for an event.
            m.more = len(reply.get("lines", ())) >= FETCH_LINES
            if p is not None:
                p._last = max(p._last, m.end)
            if new and not any(d.kind is EventKind.OUTPUT for d in m.deferred):
                self._announce(m, new)
            if m.end >= m.target and not (m.news or m.more) and (m.eof or not ended):
                self._flush(m)
            await asyncio.sleep(0)  # the window draws between batches
        self._flush(m)

    async def _backfill(self, m: _Mirror) -> None:
        """Fetch the lines before ``m.start`` from ``m.backfill`` on."""
        since = m.backfill
        assert since is not None
        start = m.start
        got: list[Line] = []
        cursor = since
        while cursor < start:
            reply = await self._call(
                "out", proc_id=m.id, proc=m.id, since=cursor, limit=FETCH_LINES
            )
            lines = [_line(d) for d in reply.get("lines", ())]
            got += [line for line in lines if line.seq <= start]
            after = int(reply.get("cursor", cursor))
            if after <= cursor or not lines:
                break
            cursor = after
        if self._mirrors.get(m.id) is not m or m.start != start:
            return
        m.backfill = None if m.backfill == since else m.backfill
        m.lines[0:0] = got
        m.start = since
        if got:
            self._announce(m, got)

    def _announce(self, m: _Mirror, new: list[Line]) -> None:
        """Tell the readers of ``m`` that lines arrived."""
        p = self._live.get(m.id) or self._past.get(m.id)
        if p is None:
            return
        self._publish(
            p,
            EventKind.OUTPUT,
            None,
            stream=new[-1].stream,
            first_seq=new[0].seq,
            last_seq=new[-1].seq,
        )

    # -- queries (SupervisorAPI) ----------------------------------------------------------

    @property
    def history_enabled(self) -> bool:
        """True when the server keeps a history database."""
        return self._history_on

    @property
    def workspaces(self) -> list[WorkspaceRun]:
        """Empty: a server's workspace runs stay there (their commands' procs show
        here as any others; their phases are not mirrored yet)."""
        return []

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
            raise _local_error(exc) from None
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

    async def write(self, proc_id: int, data: bytes | str) -> int:
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
