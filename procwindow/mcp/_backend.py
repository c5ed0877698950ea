"""Where the MCP tools send their requests: the control socket, and a private
server behind it when nothing else answers there.

:class:`Backend` finds (or starts) the server; :func:`tool_client` is the
connection of one tool call, which turns every failure into the tool's error;
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

    @property
    def private(self) -> bool:
        """True while this process serves the socket itself."""
        return self._server is not None

    async def connect(self) -> AsyncClient:
        """A connection to the server; starts the private one if nothing answers."""
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
        async with client:
            yield client
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
