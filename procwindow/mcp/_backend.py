"""Where the MCP tools send their requests: the control socket, and a private
server behind it when nothing else answers there.

:class:`Backend` finds (or starts) the server and keeps a few idle connections
for the next calls; :func:`tool_client` is the connection of one tool call, which
turns every failure into the tool's error;
:class:`Scope` is the session and agent of the procs the agent starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..control.aclient import AsyncClient
from ..control.client import CannotConnect, ServerError
from ..core import ProcwindowError

if TYPE_CHECKING:
    from ..control.server import ControlServer
    from ..core import Supervisor

__all__ = ["Backend", "Scope", "tool_client"]

log = logging.getLogger("procwindow.mcp")

#: Idle connections kept for the next tool calls (a call that ends badly drops its own).
_IDLE = 4


@dataclass
class Scope:
    """The session and agent of the procs the agent starts; ``agent`` None: the MCP
    client's name, learnt at the first tool call."""

    session: str
    agent: str | None


class Backend:
    """The control socket the tools talk to, and the private server behind it when
    nothing else answers there.

    The first connection checks whether a server answers at ``path``; if none
    does, a private one is started in this process (a supervisor and a control
    server on ``path``). A later connection that finds nothing (the window was
    closed) starts one too. :meth:`close` stops it and its children.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._sup: Supervisor | None = None
        self._server: ControlServer | None = None
        self._starting: asyncio.Task[None] | None = None
        self._deciding = asyncio.Lock()
        self._checked = False
        self._closed = False
        self._idle: list[AsyncClient] = []

    @property
    def private(self) -> bool:
        """True while this process serves the socket itself."""
        return self._server is not None

    async def connect(self) -> AsyncClient:
        """A connection to the server: an idle one still open at both ends, or a new
        one; starts the private server if nothing answers."""
        while self._idle:
            client = self._idle.pop()
            if client.usable:
                return client
            client.abort()
        if not self._checked:
            await self._ensure_server()
            self._checked = True
        try:
            return await AsyncClient.connect(self.path)
        except CannotConnect:
            if self.private or self._closed:
                raise
        await self._ensure_server()
        return await AsyncClient.connect(self.path)

    def release(self, client: AsyncClient) -> None:
        """A call ended well with ``client``: keep it for the next one (or drop it)."""
        if client.usable and not self._closed and len(self._idle) < _IDLE:
            self._idle.append(client)
        else:
            client.abort()

    async def _ensure_server(self) -> None:
        """Return once a server answers at the path: another one, or ours."""
        async with self._deciding:  # concurrent first calls start one server, not two
            if self.private:
                return
            starting = self._starting
            if starting is None:
                if await _answers(self.path):
                    return
                starting = self._starting = asyncio.ensure_future(self._start_private())
                starting.add_done_callback(self._started)
        # Shielded: a cancelled tool call must not leave a half-started server.
        await asyncio.shield(starting)

    def _started(self, task: asyncio.Task[None]) -> None:
        # A failed start is retried by the next call (its error reached this one).
        if not task.cancelled():
            task.exception()  # retrieved: a call that was cancelled meanwhile never sees it
        self._starting = None

    async def _start_private(self) -> None:
        if self._closed:
            raise ServerError("Closed", "the MCP session is ending")
        from ..control.server import ControlServer
        from ..core import Supervisor

        sup = Supervisor(subreaper=True)
        await sup.__aenter__()
        server = ControlServer(sup, self.path)
        try:
            await server.start()
        except BaseException:
            await sup.close()
            if await _answers(self.path):  # another one won the race to the socket
                return
            raise
        self._sup, self._server = sup, server
        print(
            f"procwindow mcp: no server answered at {self.path}; serving one here"
            " until this MCP session ends",
            file=sys.stderr,
            flush=True,
        )

    async def kill_all(self) -> None:
        """Kill every process of the private server now (a second stop signal)."""
        if self._sup is not None:
            print("procwindow mcp: killing every process now", file=sys.stderr, flush=True)
            try:
                await self._sup.kill_all()
            except Exception as exc:  # closing the supervisor still stops everything
                log.warning("killing every process failed: %s", exc)

    async def close(self) -> None:
        """Stop the private server, if any: its socket, then every child."""
        self._closed = True
        for client in self._idle:
            client.abort()
        self._idle.clear()
        if self._starting is not None:
            with contextlib.suppress(Exception):
                await self._starting
        server, self._server = self._server, None
        sup = self._sup
        try:
            if server is not None:
                await server.close()
        finally:
            if sup is not None:
                await sup.close()
                self._sup = None


async def _answers(path: str) -> bool:
    """True if a server answers at ``path``."""
    try:
        async with AsyncClient(path) as client:
            await client.call("hello")
    except CannotConnect:
        return False
    except ServerError:
        return True  # it answered, if only to refuse: its errors will reach the agent
    return True


@contextlib.asynccontextmanager
async def tool_client(backend: Backend) -> AsyncIterator[AsyncClient]:
    """A connection for one tool call; every failure becomes the tool's error,
    one line for the agent to read."""
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        client = await backend.connect()
        try:
            yield client
        except BaseException:
            client.abort()  # cancelled, or failed: its connection may be out of step
            raise
        backend.release(client)
    except ServerError as exc:
        raise ToolError(_one_line(str(exc))) from None
    except (ProcwindowError, OSError) as exc:  # CannotConnect, SocketDirError…
        raise ToolError(_one_line(str(exc))) from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise ToolError(
            f"unexpected reply from the server at {backend.path}: {type(exc).__name__}: {exc}"
        ) from None


def _one_line(text: str) -> str:
    return " ".join(text.split()) if "\n" in text or "\r" in text else text
