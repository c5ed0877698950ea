"""An asyncio client for the control socket (what ``procwindow mcp`` uses).

The same protocol as :mod:`.client`, over ``asyncio.open_unix_connection``: one
request at a time per connection; open several connections to have several in
flight (connecting to a Unix socket is cheap).

>>> async def demo(path):  # doctest: +SKIP
...     async with AsyncClient(path) as c:
...         print((await c.call("idx"))["text"])
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

from ._protocol import PROTOCOL_VERSION, encode
from .client import CannotConnect, ServerError, _result

__all__ = ["READ_LIMIT", "AsyncClient", "Opener"]

#: The longest reply line read (an ``out`` reply may run to several MB).
READ_LIMIT = 64 * 1024 * 1024

#: Makes the connection itself, for a transport other than a Unix socket path
#: (a pipe to ``ssh host procwindow ctl bridge``): given the read limit, the
#: streams to speak the protocol over.
Opener = Callable[[int], Awaitable[tuple[asyncio.StreamReader, asyncio.StreamWriter]]]


class AsyncClient:
    """One connection to a control server, for asyncio.

    ``async with AsyncClient(path) as c`` connects and closes; so do
    ``c = await AsyncClient.connect(path)`` and ``await c.close()``. ``call``
    returns a request's result; ``stream`` yields a streaming request's
    messages. Both raise the blocking client's errors: :class:`CannotConnect`
    when nothing answers at ``path``, :class:`ServerError` for a refused
    request, a lost connection or a reply that makes no sense.

    A request that is cancelled, or that fails in a way that leaves the
    connection out of step (a lost connection, a reply line longer than
    ``limit``), closes the connection: a later request raises ServerError.

    ``opener`` makes the connection instead of connecting to ``path`` (which
    then only names it in messages); its errors propagate as they are.
    """

    def __init__(self, path: str, *, limit: int = READ_LIMIT, opener: Opener | None = None) -> None:
        self.path = path
        self.limit = limit
        self._opener = opener
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._next_id = 1
        self._closed = False

    @classmethod
    async def connect(
        cls, path: str, *, limit: int = READ_LIMIT, opener: Opener | None = None
    ) -> AsyncClient:
        """A connected client; CannotConnect if nothing answers at ``path``."""
        client = cls(path, limit=limit, opener=opener)
        await client._open()
        return client

    async def _open(self) -> None:
        if self._writer is not None or self._closed:
            raise ServerError("ConnectionClosed", "this client is already connected or closed")
        if self._opener is not None:
            self._reader, self._writer = await self._opener(self.limit)
            return
        try:
            self._reader, self._writer = await asyncio.open_unix_connection(
                self.path, limit=self.limit
            )
        except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
            raise CannotConnect(self.path, getattr(exc, "strerror", None) or str(exc)) from None

    @property
    def closed(self) -> bool:
        """True once the connection is closed (or was never opened)."""
        return self._writer is None

    @property
    def usable(self) -> bool:
        """True while the connection is open at both ends, as far as this side
        has seen: a server that closed it (it stopped) makes it False."""
        writer, reader = self._writer, self._reader
        return not (writer is None or reader is None or writer.is_closing() or reader.at_eof())

    def abort(self) -> None:
        """Drop the connection at once, without waiting (its fd is closed by the
        loop's next turn)."""
        writer, self._writer, self._reader = self._writer, None, None
        self._closed = True
        if writer is not None:
            writer.transport.abort()

    async def close(self) -> None:
        """Close the connection; never raises (a cancellation closes it all the same)."""
        writer, self._writer, self._reader = self._writer, None, None
        self._closed = True
        if writer is None:
            return
        writer.close()
        try:
            await writer.wait_closed()
        except (OSError, ConnectionError):
            pass
        except asyncio.CancelledError:
            writer.transport.abort()
            raise

    async def __aenter__(self) -> AsyncClient:
        if self._writer is None:
            await self._open()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, *rest: object) -> None:
        if exc_type is not None and issubclass(exc_type, asyncio.CancelledError):
            self.abort()  # awaiting again would only be cancelled again
        else:
            await self.close()

    # -- requests --------------------------------------------------------------

    async def call(self, op: str, **fields: Any) -> Any:
        """Send one request and return its result; ServerError if it failed.

        Fields that are None are left out of the request.
        """
        try:
            await self._send(op, fields)
            message = await self._receive()
        except BaseException:
            self.abort()
            raise
        return _result(message)

    async def stream(self, op: str, **fields: Any) -> AsyncGenerator[dict[str, Any], None]:
        """Send a streaming request; yield each message until its final result,
        which is yielded too, as ``{"result": ...}`` (as :meth:`Client.stream`).

        Leaving the loop early (or a cancellation) closes the connection: the
        server stops the stream when its client goes. Wrap the iterator in
        ``contextlib.aclosing`` to have that happen at once.
        """
        finished = False
        try:
            await self._send(op, fields)
            while True:
                message = await self._receive()
                if "ok" in message:
                    result = _result(message)
                    yield {"result": result}
                    if op != "events":
                        finished = True
                        return
                    continue
                yield message
        except ServerError as exc:
            if exc.type in _BROKEN:
                self.abort()
            else:
                finished = True  # a refused request: the connection stays in step
            raise
        finally:
            if not finished:
                self.abort()

    async def _send(self, op: str, fields: dict[str, Any]) -> None:
        writer = self._writer
        if writer is None:
            raise ServerError("ConnectionClosed", "the connection to the server is closed")
        req_id = self._next_id
        self._next_id += 1
        # hello goes without a version: any server answers it in its own, and
        # says which it speaks (see _links.hello).
        body: dict[str, Any] = {"op": op, "id": req_id}
        if op != "hello":
            body["v"] = PROTOCOL_VERSION
        body.update({k: v for k, v in fields.items() if v is not None})
        try:
            writer.write(encode(body))
            await writer.drain()
        except (OSError, ConnectionError) as exc:
            self.abort()
            raise ServerError(
                "ConnectionClosed",
                f"lost the connection to the server: {getattr(exc, 'strerror', None) or exc}",
            ) from None

    async def _receive(self) -> dict[str, Any]:
        reader = self._reader
        if reader is None:
            raise ServerError("ConnectionClosed", "the connection to the server is closed")
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            self.abort()
            if exc.partial:
                raise ServerError(
                    "ConnectionClosed", "the server closed the connection in the middle of a reply"
                ) from None
            raise ServerError("ConnectionClosed", "the server closed the connection") from None
        except asyncio.LimitOverrunError:
            self.abort()
            raise ServerError(
                "ReplyTooLarge",
                f"the server sent a reply line longer than {self.limit // (1024 * 1024)} MiB;"
                " the connection was closed",
            ) from None
        except (OSError, ConnectionError) as exc:
            self.abort()
            raise ServerError(
                "ConnectionClosed",
                f"lost the connection to the server: {getattr(exc, 'strerror', None) or exc}",
            ) from None
        try:
            message = json.loads(line)
        except (ValueError, RecursionError) as exc:
            self.abort()
            raise ServerError(
                "BadReply", f"the server sent something that is not JSON: {exc}"
            ) from None
        if not isinstance(message, dict):
            self.abort()
            raise ServerError("BadReply", "the server sent something that is not a JSON object")
        return message


#: ServerError types after which the connection is out of step and was closed.
_BROKEN = frozenset({"ConnectionClosed", "ReplyTooLarge", "BadReply"})
