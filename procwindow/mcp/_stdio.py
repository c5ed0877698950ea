"""The MCP session's stdin and stdout as pipes read and written on the event loop.

The SDK's stdio transport reads and writes the standard streams through worker
threads (anyio's ``wrap_file``): about nine thread hops a tool call (~1 ms on two
cores, a third of a small call), and a read of stdin that nothing but the client
can end, so a stop signal had to end the process under that thread. Given streams
of its own, the SDK uses them as they are: :func:`pipe_streams` gives it stdin and
stdout as asyncio pipes. As the SDK does with its own, fd 0 and 1 are moved aside
while it serves (fd 0 reads the null device, fd 1 writes to stderr), so that
nothing else in the process reads the wire or writes a stray line into it.

Only pipes, sockets and terminals can be watched by the loop; when stdin or stdout
is anything else (a regular file), :func:`pipe_streams` gives None and the SDK's
own transport serves.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import stat
from collections.abc import AsyncIterator, Callable

__all__ = ["LineReader", "PipeWriter", "pipe_streams", "refusal"]

#: The longest line read (one JSON-RPC message): past any message a client sends.
_LINE_LIMIT = 1 << 30


class LineReader:
    """The lines of stdin, as text (what ``async for line in stdin`` gives the SDK).

    A line the SDK would drop without a word (not JSON; a request whose params are
    not an object) is answered here with its JSON-RPC error through ``reply``:
    every request gets an answer.
    """

    def __init__(self, reader: asyncio.StreamReader, reply: Callable[[bytes], None]) -> None:
        self._reader = reader
        self._reply = reply

    def __aiter__(self) -> LineReader:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await self._reader.readline()
            if not line:
                raise StopAsyncIteration
            error = refusal(line)
            if error is None:
                return line.decode("utf-8", "replace")
            self._reply(error)


def refusal(line: bytes) -> bytes | None:
    """The JSON-RPC error that answers ``line`` when the SDK would not (None: the
    SDK answers it): -32700 for a line that is not JSON, -32600 for one that is not
    an object, -32602 for a request whose params are not an object."""
    if not line.strip():
        return None
    try:
        message = json.loads(line)
    except ValueError as exc:
        return _error(None, -32700, f"not JSON: {exc}")
    if not isinstance(message, dict):
        return _error(None, -32600, "a message is a JSON object")
    params = message.get("params")
    # A request (with an id; a notification gets no answer) whose params are no object.
    if "method" in message and "id" in message and not isinstance(params, dict | None):
        return _error(message.get("id"), -32602, "params must be an object")
    return None


def _error(message_id: object, code: int, text: str) -> bytes:
    if not isinstance(message_id, str | int) or isinstance(message_id, bool):
        message_id = None
    body = {"jsonrpc": "2.0", "id": message_id, "error": {"code": code, "message": text}}
    return (json.dumps(body) + "\n").encode()


class _Flow(asyncio.Protocol):
    """The write pipe's flow: paused while the pipe is full."""

    def __init__(self) -> None:
        self._resumed: asyncio.Future[None] | None = None

    def pause_writing(self) -> None:
        if self._resumed is None:
            self._resumed = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self._wake()

    def _wake(self) -> None:
        resumed, self._resumed = self._resumed, None
        if resumed is not None and not resumed.done():
            resumed.set_result(None)

    async def drained(self) -> None:
        if self._resumed is not None:
            await asyncio.shield(self._resumed)


class PipeWriter:
    """Stdout, as the SDK writes it: ``write`` a message, then ``flush`` (which
    waits while the pipe is full)."""

    def __init__(self, transport: asyncio.WriteTransport, flow: _Flow) -> None:
        self._transport = transport
        self._flow = flow

    async def write(self, text: str) -> None:
        if self._transport.is_closing():
            raise BrokenPipeError("the MCP client closed stdout")
        self._transport.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._flow.drained()


def _watchable(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)


@contextlib.asynccontextmanager
async def pipe_streams() -> AsyncIterator[tuple[LineReader, PipeWriter] | None]:
    """Stdin and stdout on the loop for as long as the context lasts, fd 0 and 1
    moved aside meanwhile (and restored after); None when either cannot be
    watched by the loop."""
    if not (_watchable(0) and _watchable(1)):
        yield None
        return
    loop = asyncio.get_running_loop()
    wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    saved = (os.dup(0), os.dup(1))
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    files = [os.fdopen(wire_in, "rb", buffering=0), os.fdopen(wire_out, "wb", buffering=0)]
    transports: list[asyncio.BaseTransport] = []
    try:
        reader = asyncio.StreamReader(limit=_LINE_LIMIT)
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), files[0]
        )
        transports.append(read_transport)
        write_transport, flow = await loop.connect_write_pipe(_Flow, files[1])
        transports.append(write_transport)
        yield LineReader(reader, write_transport.write), PipeWriter(write_transport, flow)
    finally:
        for transport in transports:
            transport.close()
        for file in files[len(transports) :]:  # not yet a transport's
            file.close()
        for fd, original in zip((0, 1), saved, strict=True):
            os.dup2(original, fd)
            os.close(original)
