"""The link of a RemoteSupervisor and the calls over it: the link's status and
listeners, the pool of connections requests go over (the server's errors made
the core's again), the tasks it runs meanwhile, and a readiness check made the
protocol's.

The bottom part of RemoteSupervisor: every other part calls through it; it knows
nothing of the mirror.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import Any

from ..core import ProcwindowError, Ready, SupervisorClosed
from ._links import Disconnected, LinkError, LocalLink, SshLink
from .aclient import _BROKEN, AsyncClient
from .client import ServerError

log = logging.getLogger("procwindow.remote")

#: Connections kept open between calls; calls in flight at once (quick ones, and
#: those that wait: term, kill, write, restart, search).
_IDLE_CLIENTS = 2
_QUICK_CALLS = 4
_LONG_CALLS = 16


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
    """The link's status, its listeners and the calls over it (see the module's docstring)."""

    def __init__(self, link: LocalLink | SshLink) -> None:
        self.link = link
        self.connected = False
        self.linking = False  # the events connection is being made
        self.closed = False
        self.last_error: str | None = None
        self.clients: set[AsyncClient] = set()
        self.tasks: set[asyncio.Task[Any]] = set()
        self.sending: set[asyncio.Task[Any]] = set()  # requests close waits for
        self._generation = 0
        self._idle: list[AsyncClient] = []
        self._sparing = False
        self._quick: asyncio.Semaphore | None = None
        self._long: asyncio.Semaphore | None = None
        self._listeners: list[Callable[[str], None]] = []

    @property
    def where(self) -> str:
        return self.link.where

    def add_listener(self, callback: Callable[[str], None]) -> Callable[[], None]:
        self._listeners.append(callback)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(callback)

        return remove

    def notify(self, what: str) -> None:
        for callback in list(self._listeners):
            try:
                callback(what)
            except Exception:
                log.exception("a RemoteSupervisor listener failed")

    def drop_clients(self) -> None:
        self._generation += 1
        for client in list(self.clients):
            client.abort()
        self.clients.clear()
        self._idle.clear()

    # -- calls ------------------------------------------------------------------------

    def check_link(self) -> None:
        if self.closed:
            raise SupervisorClosed(f"the link to {self.where} is closed")
        if not self.connected and not self.linking:
            why = f" ({self.last_error})" if self.last_error else ""
            raise Disconnected(f"{self.where} is disconnected{why}; reconnecting")

    async def call(
        self, op: str, *, long: bool = False, proc_id: int | None = None, **fields: Any
    ) -> Any:
        """One request on a connection of the pool; core errors as the Supervisor's."""
        self.check_link()
        if self._quick is None or self._long is None:
            self._quick, self._long = (
                asyncio.Semaphore(_QUICK_CALLS),
                asyncio.Semaphore(_LONG_CALLS),
            )
        gate = self._long if long else self._quick
        async with gate:
            self.check_link()
            generation = self._generation
            client = self._idle.pop() if self._idle else None
            self.keep_spare()
            if client is None:
                try:
                    client = await self.link.open()
                except LinkError as exc:
                    raise Disconnected(str(exc)) from None
                if generation != self._generation:  # the link dropped meanwhile
                    client.abort()
                    self.check_link()
                    raise Disconnected(f"{self.where}: the link dropped")
                self.clients.add(client)
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
                    self.clients.discard(client)

    async def stream(self, op: str, **fields: Any) -> AsyncGenerator[dict[str, Any], None]:
        """The messages of a streamed request, on a connection of its own."""
        self.check_link()
        try:
            client = await self.link.open()
        except LinkError as exc:
            raise Disconnected(str(exc)) from None
        self.clients.add(client)
        try:
            async with contextlib.aclosing(client.stream(op, **fields)) as messages:
                async for message in messages:
                    yield message
        except ServerError as exc:
            if exc.type in _BROKEN:
                raise Disconnected(f"{self.where}: {exc.message}") from None
            raise exc.local() from None
        finally:
            client.abort()
            self.clients.discard(client)

    def keep_spare(self) -> None:
        """Over ssh a new connection takes a handshake and a remote start (a
        second or so): keep one open ahead, so that a ``term`` never waits for it."""
        if (
            isinstance(self.link, SshLink)
            and not self._idle
            and not self._sparing
            and (self.connected or self.linking)
        ):
            self._sparing = True
            self.spawn_task(self._open_spare(), "procwindow remote spare")

    async def _open_spare(self) -> None:
        generation = self._generation
        try:
            client = await self.link.open()
        except LinkError:
            return
        finally:
            self._sparing = False
        if generation != self._generation or self.closed or len(self._idle) >= _IDLE_CLIENTS:
            client.abort()
            return
        self.clients.add(client)
        self._idle.append(client)

    # -- tasks ------------------------------------------------------------------------

    def spawn_task(self, coro: Any, name: str, *, sending: bool = False) -> asyncio.Task[Any]:
        """Run ``coro`` until it ends or the link closes; ``sending``: close waits
        for it a while (a request whose effect was shown here already)."""
        task: asyncio.Task[Any] = asyncio.get_running_loop().create_task(coro, name=name)
        self.tasks.add(task)
        task.add_done_callback(self._task_done)
        if sending:
            self.sending.add(task)
            task.add_done_callback(self.sending.discard)
        return task

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self.tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            if not isinstance(exc, (LinkError, ProcwindowError)):
                log.error("%s failed: %r", task.get_name(), exc)
