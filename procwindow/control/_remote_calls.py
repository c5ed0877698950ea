"""RemoteSupervisor's bottom layer: its state, the link's status and listeners,
and the pool of connections its requests go over (the server's errors made the
core's again; a readiness check made the protocol's).

RemoteSupervisor is cut in layers that are base classes, so that every method
stays as it is (they share one object's state); each layer uses only those
below it: ``_Calls`` (here), ``_MirrorSync`` (:mod:`._remote_sync`: following
the events and keeping the mirror current), then ``RemoteSupervisor``
(:mod:`.remote`: the SupervisorAPI operations).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..core import (
    ExitInfo,
    ProcStats,
    ProcwindowError,
    Ready,
    SupervisorClosed,
)
from ..core._events import EventHub
from ._links import Disconnected, LinkError, LocalLink, SshLink, Target, make_link
from ._remote_lines import _Mirror
from ._remote_procs import RemoteProc
from .aclient import AsyncClient
from .client import ServerError

if TYPE_CHECKING:
    from ._remote_workspaces import RemoteWorkspaceRun

log = logging.getLogger("procwindow.remote")

#: Connections kept open between calls; calls in flight at once (quick ones, and
#: those that wait: term, kill, write, restart, search).
_IDLE_CLIENTS = 2
_QUICK_CALLS = 4
_LONG_CALLS = 16
#: ServerError types after which the connection was closed (AsyncClient's).
_BROKEN = frozenset({"ConnectionClosed", "ReplyTooLarge", "BadReply"})


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


class _Calls:
    """RemoteSupervisor's state, its link and the calls over it (see the module's docstring)."""

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
        self._workspace_runs: list[RemoteWorkspaceRun] = []
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
                raise exc.local() from None
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
