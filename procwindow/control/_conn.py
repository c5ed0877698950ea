"""One client connection: reading its requests and writing its replies, within limits.

What one client costs is bounded: its unfinished request (REQUEST_BUFFER, more
from a RequestBudget shared by every connection, REQUEST_TIMEOUT to finish it)
and its unread replies (WRITE_HIGH plus one piece; a client that stops taking
them for SEND_TIMEOUT is cut off).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
import time
from collections.abc import Coroutine
from typing import Any

from ._protocol import MAX_REQUEST, ProtocolError

__all__ = [
    "LARGE_REQUEST_BUDGET",
    "REQUEST_BUFFER",
    "REQUEST_TIMEOUT",
    "SEND_TIMEOUT",
    "WRITE_HIGH",
    "WRITE_LOW",
    "BusyLog",
    "ClientGone",
    "Conn",
    "RequestBudget",
]

log = logging.getLogger("procwindow.control")

#: Seconds from the first byte of a request to its newline.
REQUEST_TIMEOUT = 10.0
#: A client with more than WRITE_HIGH bytes of replies waiting that takes less than
#: WRITE_LOW of them in this many seconds is cut off. An events stream drops events instead.
SEND_TIMEOUT = 10.0
#: Bytes of unfinished request each connection may hold on its own.
REQUEST_BUFFER = 64 * 1024
#: Bytes of unfinished requests beyond REQUEST_BUFFER, shared by all connections.
LARGE_REQUEST_BUDGET = 16 * 1024 * 1024
#: A connection's write buffer: writing waits above WRITE_HIGH until it is below WRITE_LOW.
WRITE_HIGH = 256 * 1024
WRITE_LOW = 64 * 1024

#: Seconds between two log lines about refused connections or requests.
_BUSY_LOG_INTERVAL = 10.0


class ClientGone(Exception):
    """The client left, or was cut off; nothing more can be said to it."""


class BusyLog:
    """Warnings about refused clients, at most one per _BUSY_LOG_INTERVAL."""

    def __init__(self) -> None:
        self._logged = -_BUSY_LOG_INTERVAL

    def warn(self, message: str, *args: object) -> None:
        now = time.monotonic()
        if now - self._logged >= _BUSY_LOG_INTERVAL:
            self._logged = now
            log.warning(message, *args)


class RequestBudget:
    """Bytes of unfinished requests beyond REQUEST_BUFFER, shared by every connection."""

    def __init__(self, limit: int, busy: BusyLog) -> None:
        self.limit = limit
        self.used = 0
        self._busy = busy

    def claim(self, conn: Conn) -> None:
        """Count what ``conn`` buffers beyond REQUEST_BUFFER; ProtocolError if it is too much."""
        need = max(0, len(conn.buf) - REQUEST_BUFFER)
        more = need - conn.claimed
        if more > 0 and self.used + more > self.limit:
            self._busy.warn(
                "refusing a large control request: %d bytes of unfinished requests held (pid %d)",
                self.used,
                conn.pid,
            )
            raise ProtocolError(
                "busy",
                "the server is receiving too many large requests at once; try again later",
            )
        self.used += more
        conn.claimed = need

    def release(self, conn: Conn) -> None:
        """Give back all that ``conn`` held."""
        self.used -= conn.claimed
        conn.claimed = 0


class Conn:
    """One client connection: its streams, its unread input, its share of the budget."""

    __slots__ = (
        "budget",
        "buf",
        "claimed",
        "eof",
        "pid",
        "reader",
        "request_timeout",
        "send_timeout",
        "waiting_since",
        "writer",
    )

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        budget: RequestBudget,
        *,
        request_timeout: float = REQUEST_TIMEOUT,
        send_timeout: float = SEND_TIMEOUT,
    ) -> None:
        self.reader = reader
        self.writer = writer
        self.budget = budget
        self.request_timeout = request_timeout
        self.send_timeout = send_timeout
        self.buf = bytearray()
        self.claimed = 0  # bytes of buf counted against the budget
        self.eof = False
        self.pid = 0
        #: Since when (loop time) it waits for a request, idle or unfinished; None
        #: while one is answered.
        self.waiting_since: float | None = asyncio.get_running_loop().time()
        writer.transport.set_write_buffer_limits(high=WRITE_HIGH, low=WRITE_LOW)

    def peer_uid(self) -> int | None:
        """The peer's uid (SO_PEERCRED; its pid goes to ``pid``), or None if unknown."""
        sock = self.writer.get_extra_info("socket")
        try:
            creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        except (OSError, AttributeError):
            return None
        pid, uid, _gid = struct.unpack("3i", creds)
        self.pid = pid
        return int(uid)

    def close(self) -> None:
        """Give back the budget; close, or abort if the client left replies unread."""
        self.budget.release(self)
        if self.writer.transport.get_write_buffer_size():
            self.writer.transport.abort()  # a client that stopped reading: do not wait on it
        else:
            self.writer.close()

    async def next_line(self) -> bytes | None:
        """The next non-blank request line, without its newline; None at the end.

        Raises ProtocolError (the connection is then closed) for a request that is
        too long, too slow to arrive, cut short by the end of the connection, or
        that would take more of the shared budget than is left.
        """
        loop = asyncio.get_running_loop()
        started: float | None = None
        if self.waiting_since is None:
            self.waiting_since = loop.time()
        while True:
            end = self.buf.find(b"\n")
            if end > MAX_REQUEST or (end < 0 and len(self.buf) > MAX_REQUEST):
                raise ProtocolError("too-large", f"request longer than {MAX_REQUEST} bytes")
            if end >= 0:
                line = bytes(self.buf[:end])
                del self.buf[: end + 1]
                self.budget.claim(self)
                if line.strip():
                    self.waiting_since = None
                    return line
                started = None
                continue
            pending = bool(self.buf.strip())
            if self.eof:
                if pending:
                    raise ProtocolError("malformed", "request without a final newline")
                return None
            timeout: float | None = None
            if pending:
                if started is None:
                    started = loop.time()
                timeout = started + self.request_timeout - loop.time()
                if timeout <= 0:
                    raise ProtocolError(
                        "too-slow",
                        f"request not completed (no newline) within {self.request_timeout:g} s",
                    )
            try:
                async with asyncio.timeout(timeout):
                    data = await self.reader.read(REQUEST_BUFFER)
            except TimeoutError:
                continue  # the check above answers
            if not data:
                self.eof = True
                continue
            self.buf += data
            self.budget.claim(self)

    async def send(self, data: bytes, *, patient: bool = False) -> None:
        """Write ``data``; wait while the client has more than WRITE_HIGH bytes unread.

        A client that takes less than WRITE_LOW bytes in ``send_timeout`` seconds
        is cut off; with ``patient``, it is waited for as long as it takes (the
        caller bounds what piles up meanwhile).
        """
        transport = self.writer.transport
        if transport.is_closing():
            raise ClientGone
        self.writer.write(data)
        if patient or transport.get_write_buffer_size() <= WRITE_HIGH:
            await self.writer.drain()
            return
        while True:
            before = transport.get_write_buffer_size()
            try:
                async with asyncio.timeout(self.send_timeout):
                    await self.writer.drain()
                return
            except TimeoutError:
                after = transport.get_write_buffer_size()
                if before - after >= WRITE_LOW:
                    continue  # slow, but reading
            log.warning(
                "cut off control client pid %d: it left %d bytes of replies unread for %g s",
                self.pid,
                after,
                self.send_timeout,
            )
            transport.abort()
            raise ClientGone

    async def stream(self, body: Coroutine[Any, Any, Any]) -> Any:
        """Run a streaming request until it ends or the client leaves.

        Without this, a stream that has nothing to send would notice the client's
        departure only at its next write, which may never come.
        """
        work = asyncio.ensure_future(body)
        watch = asyncio.ensure_future(self._watch_eof())
        try:
            await asyncio.wait({work, watch}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (work, watch):
                task.cancel()
            await asyncio.gather(work, watch, return_exceptions=True)
        if work.cancelled():
            raise ClientGone
        return work.result()

    async def _watch_eof(self) -> None:
        """Return once the client has closed its side; keep what it sends meanwhile."""
        try:
            while (room := REQUEST_BUFFER - len(self.buf)) > 0:
                data = await self.reader.read(room)
                if not data:
                    self.eof = True
                    return
                self.buf += data
        except ConnectionError:
            self.eof = True
            return
        # Its next requests fill the buffer: the end could no longer be seen
        # from here; the stream notices it when it writes.
        await asyncio.get_running_loop().create_future()
