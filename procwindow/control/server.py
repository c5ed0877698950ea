"""The control server: a Unix socket that speaks the JSON-lines protocol."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import json
import logging
import os
import socket
import stat
import struct
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any

from .. import __version__
from ..core import (
    Line,
    ProcNotFound,
    ProcwindowError,
    Supervisor,
    UnsafePath,
    check_graceful_timeout,
)
from ..core._private import open_private_file, private_dir
from ._protocol import (
    MAX_REQUEST,
    PROTOCOL_VERSION,
    ProtocolError,
    decode_request,
    encode,
    event_to_json,
    exit_to_json,
    line_to_json,
    proc_to_json,
)
from ._sockdir import SocketDirError, lock_path_for

__all__ = [
    "LARGE_REQUEST_BUDGET",
    "MAX_CLIENTS",
    "REQUEST_BUFFER",
    "REQUEST_TIMEOUT",
    "SEND_TIMEOUT",
    "WRITE_HIGH",
    "ControlServer",
]

log = logging.getLogger("procwindow.control")

#: Connections served at once; one more is told ``busy`` and closed.
MAX_CLIENTS = 256
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

#: Text taken from the ring per step of an ``out`` reply (bytes, roughly): what one
#: connection holds in memory while its client catches up.
_READ_TEXT = 1024 * 1024
#: Text encoded per write (bytes, roughly); escaping may make it up to 6 times bigger.
_PIECE_TEXT = 64 * 1024
#: Lines per step until the lines seen tell how long they are.
_FIRST_READ = 32
_MAX_READ = 8192
#: What a line costs besides its text, in its JSON and in memory (bytes, roughly).
_LINE_OVERHEAD = 64
#: How often a following ``out`` looks for new lines when no event woke it (seconds).
_FOLLOW_POLL = 0.25
#: Events an ``events`` client may have queued; beyond, it loses them (``missed``).
_EVENT_QUEUE = 1024
#: Seconds between two log lines about refused connections or requests.
_BUSY_LOG_INTERVAL = 10.0
#: Seconds to wait for the connections to close when the server closes.
_CLOSE_WAIT = 1.0

Handler = Callable[[dict[str, Any], "_Conn"], Awaitable[Any]]


class _Replied(Exception):
    """Internal: a handler already wrote its answer."""


class _ClientGone(Exception):
    """Internal: the client left, or was cut off; nothing more can be said to it."""


class _Conn:
    """One client connection: its streams, its unread input, its share of the budget."""

    __slots__ = ("buf", "claimed", "eof", "pid", "reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.buf = bytearray()
        self.claimed = 0  # bytes of buf counted against LARGE_REQUEST_BUDGET
        self.eof = False
        self.pid = 0


class ControlServer:
    """Serves one supervisor on a Unix socket.

    The socket's directory must be ours and writable by nobody else; the socket
    is 0600, and every connection's peer uid is checked with SO_PEERCRED. A lock
    file beside the socket (``<name>.lock``), held for the server's life, keeps
    two servers from claiming the same path; on close the socket file is removed
    only if it is still the one this server bound.

    Each client is served by its own task, one request after the other; a
    streaming request (``events``, ``out`` with ``follow``) holds its connection
    until the client leaves or the stream ends. What one client costs is
    bounded: its unfinished request (REQUEST_BUFFER, more from a shared
    LARGE_REQUEST_BUDGET, REQUEST_TIMEOUT to finish it), and its unread replies
    (WRITE_HIGH plus one piece; replies are encoded piece by piece as the client
    reads them, and a client that stops taking them for SEND_TIMEOUT is cut
    off). At most ``max_clients`` connections are served at once.

    ``declared`` names sessions and agents that exist before any process does
    (from a workspace), for ``sessions``.
    """

    def __init__(
        self,
        supervisor: Supervisor,
        path: str,
        *,
        declared: Mapping[str, Sequence[str]] | None = None,
        max_clients: int = MAX_CLIENTS,
        request_timeout: float = REQUEST_TIMEOUT,
        send_timeout: float = SEND_TIMEOUT,
        large_request_budget: int = LARGE_REQUEST_BUDGET,
    ) -> None:
        self.sup = supervisor
        self.path = path
        self.declared = {s: list(a) for s, a in (declared or {}).items()}
        self.max_clients = max_clients
        self.request_timeout = request_timeout
        self.send_timeout = send_timeout
        self.large_request_budget = large_request_budget
        self._server: asyncio.AbstractServer | None = None
        self._conns: dict[asyncio.Task[None], _Conn] = {}
        self._closing = False
        self._large_used = 0
        self._busy_logged = -_BUSY_LOG_INTERVAL
        self._bound: tuple[int, int] | None = None
        self._lock_fd: int | None = None
        self._lock_id: tuple[int, int] | None = None
        self._handlers: dict[str, Handler] = {
            "hello": self._hello,
            "run": self._run,
            "top": self._top,
            "idx": self._idx,
            "procs": self._procs,
            "out": self._out,
            "term": self._term,
            "kill": self._kill,
            "interrupt": self._interrupt,
            "dismiss": self._dismiss,
            "restart": self._restart,
            "events": self._events,
            "sessions": self._sessions,
        }

    # -- lifecycle -----------------------------------------------------------

    async def start(self) -> None:
        """Bind and listen.

        Raises SocketDirError if the directory is unsafe, the path holds
        something other than a socket, or another server owns the path.
        """
        self._check_folder()
        self._take_lock()
        try:
            self._clear_stale_socket()
            # A backlog as deep as the connections served: a burst of clients
            # waits to be accepted (or told 'busy') instead of being refused.
            self._server = await asyncio.start_unix_server(
                self._serve_client,
                path=self.path,
                limit=REQUEST_BUFFER,
                backlog=max(self.max_clients, 128),
            )
            st = os.stat(self.path)
            self._bound = (st.st_dev, st.st_ino)
            os.chmod(self.path, 0o600)
        except BaseException:
            if self._server is not None:
                self._server.close()
                self._server = None
            self._remove_socket()
            self._release_lock()
            raise
        log.info("control socket at %s", self.path)

    def _check_folder(self) -> None:
        folder = os.path.dirname(self.path) or "."
        try:
            private_dir(folder, what="socket directory", create=False)
        except UnsafePath as exc:
            raise SocketDirError(str(exc)) from exc
        if not os.path.isdir(folder):
            raise SocketDirError(f"socket directory {folder} does not exist")

    def _take_lock(self) -> None:
        lock_path = lock_path_for(self.path)
        # A server that stops removes the lock file; one that opened it just
        # before may then lock a file nobody else will see: check, and retry.
        for _ in range(10):
            try:
                fd = open_private_file(lock_path, what="socket lock", append=True)
            except UnsafePath:
                if os.path.lexists(lock_path):
                    raise
                continue  # removed between its open and its checks: "0 hard links"
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                held = os.fstat(fd)
                try:
                    named = os.lstat(lock_path)
                except FileNotFoundError:
                    continue
                if (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino):
                    self._lock_fd, fd = fd, -1
                    self._lock_id = (held.st_dev, held.st_ino)
                    return
            except BlockingIOError:
                raise SocketDirError(
                    f"another server is already listening on {self.path}"
                ) from None
            finally:
                if fd >= 0:
                    os.close(fd)
        raise SocketDirError(f"cannot lock {lock_path}: it keeps being replaced")

    def _release_lock(self) -> None:
        if self._lock_fd is None:
            return
        try:
            st = os.lstat(lock_path_for(self.path))
            if (st.st_dev, st.st_ino) == self._lock_id:
                os.unlink(lock_path_for(self.path))
        except OSError:
            pass
        os.close(self._lock_fd)
        self._lock_fd = self._lock_id = None

    def _clear_stale_socket(self) -> None:
        """Remove a socket left by a server that died; refuse anything else."""
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return
        if not stat.S_ISSOCK(st.st_mode):
            raise SocketDirError(f"{self.path} exists and is not a socket; refusing to replace it")
        # We hold the lock, so no procwindow server owns it; but a server that
        # takes no lock (an older procwindow) may still listen there.
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.settimeout(1.0)
        try:
            probe.connect(self.path)
        except OSError as exc:
            if exc.errno not in (errno.ECONNREFUSED, errno.ENOENT):
                raise SocketDirError(
                    f"another server may be listening on {self.path} ({exc})"
                ) from None
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
        else:
            raise SocketDirError(f"another server is already listening on {self.path}")
        finally:
            probe.close()

    def _remove_socket(self) -> None:
        """Unlink the socket file, if it is still the one we bound."""
        if self._bound is None:
            return
        try:
            st = os.lstat(self.path)
            if (st.st_dev, st.st_ino) == self._bound:
                os.unlink(self.path)
        except OSError:
            pass
        self._bound = None

    async def close(self) -> None:
        """Stop listening, end every client connection, remove the socket and the lock."""
        if self._server is not None:
            self._closing = True
            self._server.close()
            self._remove_socket()
            writers = []
            # A connection accepted just before close() registers when its task
            # first runs, which may be during the wait below: go round again.
            while self._conns:
                conns = dict(self._conns)
                writers += [c.writer for c in conns.values()]
                for task in conns:
                    task.cancel()
                await asyncio.gather(*conns, return_exceptions=True)
            waits = [asyncio.ensure_future(w.wait_closed()) for w in writers]
            if waits:
                _done, pending = await asyncio.wait(waits, timeout=_CLOSE_WAIT)
                for fut in pending:
                    fut.cancel()
                await asyncio.gather(*waits, return_exceptions=True)
            await self._server.wait_closed()
            self._server = None
        self._release_lock()

    async def __aenter__(self) -> ControlServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- connections -----------------------------------------------------------

    async def _serve_client(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        conn = _Conn(reader, writer)
        self._conns[task] = conn
        try:
            if self._closing:
                return
            writer.transport.set_write_buffer_limits(high=WRITE_HIGH, low=WRITE_LOW)
            if not self._peer_allowed(conn):
                return
            if len(self._conns) > self.max_clients:
                self._refuse_busy(conn)
                return
            while True:
                try:
                    line = await self._next_line(conn)
                except ProtocolError as exc:
                    await self._send(conn, encode(_error_message(None, exc)))
                    return
                if line is None:
                    return
                await self._handle_line(line, conn)
        except (_ClientGone, ConnectionError):
            pass
        except asyncio.CancelledError:
            # Only close() and the loop's shutdown cancel this task, and nothing
            # awaits it but close(). Ending quietly matters on Python 3.11, whose
            # stream callback calls task.exception() and logs the CancelledError.
            pass
        except Exception:
            log.exception("control client failed")
        finally:
            del self._conns[task]
            self._large_used -= conn.claimed
            conn.claimed = 0
            if writer.transport.get_write_buffer_size():
                writer.transport.abort()  # a client that stopped reading: do not wait on it
            else:
                writer.close()

    def _peer_allowed(self, conn: _Conn) -> bool:
        sock = conn.writer.get_extra_info("socket")
        try:
            creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        except (OSError, AttributeError):
            return False
        pid, uid, _gid = struct.unpack("3i", creds)
        conn.pid = pid
        if uid == os.getuid():
            return True
        log.warning("refused control connection from pid %d uid %d", pid, uid)
        conn.writer.write(
            encode(
                _error_message(
                    None,
                    ProtocolError(
                        "forbidden", f"uid {uid} may not use this server (uid {os.getuid()})"
                    ),
                )
            )
        )
        return False

    def _log_busy(self, message: str, *args: object) -> None:
        now = time.monotonic()
        if now - self._busy_logged >= _BUSY_LOG_INTERVAL:
            self._busy_logged = now
            log.warning(message, *args)

    def _refuse_busy(self, conn: _Conn) -> None:
        self._log_busy(
            "refusing control connections: %d already open (pid %d was turned away)",
            self.max_clients,
            conn.pid,
        )
        conn.writer.write(
            encode(
                _error_message(
                    None,
                    ProtocolError(
                        "busy",
                        f"the server already serves {self.max_clients} connections; "
                        "try again later",
                    ),
                )
            )
        )

    async def _next_line(self, conn: _Conn) -> bytes | None:
        """The next non-blank request line, without its newline; None at the end.

        Raises ProtocolError (the connection is then closed) for a request that is
        too long, too slow to arrive, cut short by the end of the connection, or
        that would take more of the shared budget than is left.
        """
        loop = asyncio.get_running_loop()
        started: float | None = None
        while True:
            end = conn.buf.find(b"\n")
            if end > MAX_REQUEST or (end < 0 and len(conn.buf) > MAX_REQUEST):
                raise ProtocolError("too-large", f"request longer than {MAX_REQUEST} bytes")
            if end >= 0:
                line = bytes(conn.buf[:end])
                del conn.buf[: end + 1]
                self._claim(conn)
                if line.strip():
                    return line
                started = None
                continue
            pending = bool(conn.buf.strip())
            if conn.eof:
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
                    data = await conn.reader.read(REQUEST_BUFFER)
            except TimeoutError:
                continue  # the check above answers
            if not data:
                conn.eof = True
                continue
            conn.buf += data
            self._claim(conn)

    def _claim(self, conn: _Conn) -> None:
        """Count what ``conn`` buffers beyond REQUEST_BUFFER against the shared budget."""
        need = max(0, len(conn.buf) - REQUEST_BUFFER)
        more = need - conn.claimed
        if more > 0 and self._large_used + more > self.large_request_budget:
            self._log_busy(
                "refusing a large control request: %d bytes of unfinished requests held (pid %d)",
                self._large_used,
                conn.pid,
            )
            raise ProtocolError(
                "busy",
                "the server is receiving too many large requests at once; try again later",
            )
        self._large_used += more
        conn.claimed = need

    async def _handle_line(self, line: bytes, conn: _Conn) -> None:
        req_id: Any = None
        op = "request"
        try:
            req = decode_request(line)
            req_id = req.get("id")
            op = req["op"]
            result = await self._handlers[op](req, conn)
        except _Replied:
            return
        except (_ClientGone, ConnectionError):
            raise
        except ProcwindowError as exc:
            message = _error_message(req_id, exc)
        except (TypeError, ValueError) as exc:
            message = _error_message(req_id, ProtocolError("bad-field", f"{op}: {exc}"))
        except OSError as exc:
            # A system limit (no free fd, no memory for a fork): the client is told,
            # and may try again once it is lifted.
            log.warning("control request %s failed: %s", op, exc)
            message = _os_error_message(req_id, op, exc)
        except Exception as exc:
            log.exception("control request %s failed", op)
            message = _error_message(req_id, exc, type_="InternalError")
        else:
            message = {"v": PROTOCOL_VERSION, "id": req_id, "ok": True, "result": result}
        await self._send(conn, encode(message))

    async def _send(self, conn: _Conn, data: bytes, *, patient: bool = False) -> None:
        """Write ``data``; wait while the client has more than WRITE_HIGH bytes unread.

        A client that takes less than WRITE_LOW bytes in ``send_timeout`` seconds
        is cut off; with ``patient``, it is waited for as long as it takes (the
        caller bounds what piles up meanwhile).
        """
        transport = conn.writer.transport
        if transport.is_closing():
            raise _ClientGone
        conn.writer.write(data)
        if patient or transport.get_write_buffer_size() <= WRITE_HIGH:
            await conn.writer.drain()
            return
        while True:
            before = transport.get_write_buffer_size()
            try:
                async with asyncio.timeout(self.send_timeout):
                    await conn.writer.drain()
                return
            except TimeoutError:
                after = transport.get_write_buffer_size()
                if before - after >= WRITE_LOW:
                    continue  # slow, but reading
            log.warning(
                "cut off control client pid %d: it left %d bytes of replies unread for %g s",
                conn.pid,
                after,
                self.send_timeout,
            )
            transport.abort()
            raise _ClientGone

    async def _stream(self, conn: _Conn, body: Coroutine[Any, Any, Any]) -> Any:
        """Run a streaming request until it ends or the client leaves.

        Without this, a stream that has nothing to send would notice the client's
        departure only at its next write, which may never come.
        """
        work = asyncio.ensure_future(body)
        watch = asyncio.ensure_future(self._watch_eof(conn))
        try:
            await asyncio.wait({work, watch}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (work, watch):
                task.cancel()
            await asyncio.gather(work, watch, return_exceptions=True)
        if work.cancelled():
            raise _ClientGone
        return work.result()

    async def _watch_eof(self, conn: _Conn) -> None:
        """Return once the client has closed its side; keep what it sends meanwhile."""
        try:
            while (room := REQUEST_BUFFER - len(conn.buf)) > 0:
                data = await conn.reader.read(room)
                if not data:
                    conn.eof = True
                    return
                conn.buf += data
        except ConnectionError:
            conn.eof = True
            return
        # Its next requests fill the buffer: the end could no longer be seen
        # from here; the stream notices it when it writes.
        await asyncio.get_running_loop().create_future()

    # -- requests --------------------------------------------------------------

    async def _hello(self, req: dict[str, Any], conn: _Conn) -> Any:
        return {
            "protocol": PROTOCOL_VERSION,
            "server": f"procwindow {__version__}",
            "pid": os.getpid(),
        }

    async def _run(self, req: dict[str, Any], conn: _Conn) -> Any:
        argv = req.get("argv")
        shell = req.get("shell")
        if (argv is None) == (shell is None):
            raise ProtocolError(
                "bad-field", "run: give exactly one of 'argv' (a list) or 'shell' (a string)"
            )
        if shell is not None:
            if not isinstance(shell, str) or not shell.strip():
                raise ProtocolError("bad-field", "run: 'shell' must be a non-empty string")
            argv = ["/bin/sh", "-c", shell]
        if not isinstance(argv, list):
            raise ProtocolError("bad-field", "run: 'argv' must be a list of strings")
        env = req.get("env")
        if env is not None and not isinstance(env, dict):
            raise ProtocolError("bad-field", "run: 'env' must be an object of strings")
        grace = req.get("graceful_timeout")
        if grace is not None:
            try:
                grace = check_graceful_timeout(grace)
            except ValueError as exc:
                raise ProtocolError("bad-field", f"run: {exc}") from None
        p = await self.sup.spawn(
            argv,
            session=_str(req, "session"),
            agent=_str(req, "agent"),
            tool=_str(req, "tool", "shell"),
            cwd=_opt_str(req, "cwd"),
            env=env,
            graceful_timeout=grace,
        )
        return {"id": p.id, "os_pid": p.os_pid}

    async def _top(self, req: dict[str, Any], conn: _Conn) -> Any:
        return {"text": self.sup.top(_opt_str(req, "session"), _opt_str(req, "agent"))}

    async def _idx(self, req: dict[str, Any], conn: _Conn) -> Any:
        return {"text": self.sup.idx(_opt_str(req, "session"), _opt_str(req, "agent"))}

    async def _procs(self, req: dict[str, Any], conn: _Conn) -> Any:
        procs = self.sup.procs(_opt_str(req, "session"), _opt_str(req, "agent"))
        return [proc_to_json(p, self.sup.runtime(p.id)) for p in procs]

    async def _out(self, req: dict[str, Any], conn: _Conn) -> Any:
        proc_id = _int(req, "proc", minimum=1)
        since = _int(req, "since", 0, minimum=0)
        stream = _opt_str(req, "stream")
        if stream is not None and stream not in ("stdout", "stderr"):
            raise ProtocolError("bad-field", "out: 'stream' is 'stdout' or 'stderr'")
        limit = None if req.get("limit") is None else _int(req, "limit", minimum=1)
        if _bool(req, "follow"):
            return await self._stream(
                conn, self._follow(conn, req.get("id"), proc_id, since, stream)
            )
        await self._out_reply(conn, req.get("id"), proc_id, since, stream, limit)
        raise _Replied

    async def _out_reply(
        self,
        conn: _Conn,
        req_id: Any,
        proc_id: int,
        since: int,
        stream: str | None,
        limit: int | None,
    ) -> None:
        """One reply line, written piece by piece as the client takes it.

        It holds the lines up to the newest one when the request came; lines
        that fall off the ring while the client reads are counted in ``dropped``.
        """
        p = self.sup.get(proc_id)
        end = p.last_seq
        await self._send(conn, _head(req_id, ok=True))
        try:
            cursor, dropped, sent = since, 0, 0
            per_read = _FIRST_READ
            while cursor < end and (limit is None or sent < limit):
                want = per_read if limit is None else min(per_read, limit - sent)
                try:
                    batch = self.sup.read(proc_id, cursor, limit=want, stream=stream)
                except ProcNotFound:  # dismissed meanwhile: its lines are gone
                    dropped, cursor = dropped + end - cursor, end
                    break
                if batch.dropped and cursor + batch.dropped >= end:
                    dropped, cursor = dropped + end - cursor, end
                    break
                dropped += batch.dropped
                lines = batch.lines
                if lines and lines[-1].seq > end:
                    keep = next(i for i, line in enumerate(lines) if line.seq > end)
                    cursor = lines[keep].seq - 1
                    lines = lines[:keep]
                    finished = True
                else:
                    cursor = batch.cursor
                    finished = not lines
                await self._write_lines(conn, lines, first=sent == 0)
                sent += len(lines)
                per_read = _lines_per_read(lines, per_read)
                if finished:
                    break
                await asyncio.sleep(0)  # capture and other clients go first
            eof = not p.output_open and cursor >= p.last_seq
            await self._send(conn, _tail(dropped, cursor, eof, final=True))
        except (_ClientGone, ConnectionError, asyncio.CancelledError):
            raise
        except Exception:
            # Half a reply is on the wire: no error can follow it on this connection.
            log.exception("control request out failed mid-reply")
            conn.writer.transport.abort()
            raise _ClientGone from None

    async def _write_lines(self, conn: _Conn, lines: list[Line], *, first: bool) -> None:
        """Lines as JSON array elements, in pieces of about _PIECE_TEXT each."""
        if not lines:
            return
        size = sum(len(line.text) for line in lines) + _LINE_OVERHEAD * len(lines)
        step = max(1, _PIECE_TEXT * len(lines) // size)
        for i in range(0, len(lines), step):
            piece = _dumps([line_to_json(line) for line in lines[i : i + step]])[1:-1]
            await self._send(conn, piece if first and i == 0 else b"," + piece)

    async def _follow(
        self,
        conn: _Conn,
        req_id: Any,
        proc_id: int,
        since: int,
        stream: str | None,
    ) -> Any:
        p = self.sup.get(proc_id)
        wake = asyncio.Event()
        sub = self.sup.subscribe(f"session.{p.session}.agent.{p.agent}.proc.>", maxsize=64)

        async def pump() -> None:
            async for ev in sub:
                if ev.proc_id == proc_id or ev.missed:
                    wake.set()

        pumper = asyncio.ensure_future(pump())
        try:
            cursor = since
            per_read = _FIRST_READ
            while True:
                wake.clear()
                batch = self.sup.read(proc_id, cursor, limit=per_read, stream=stream)
                if batch.lines or batch.dropped:
                    # The client's pace sets the server's: a batch waits for room,
                    # and lines that fall off the ring meanwhile come back as dropped.
                    await self._send(conn, _head(req_id, ok=False))
                    await self._write_lines(conn, batch.lines, first=True)
                    await self._send(conn, _tail(batch.dropped, batch.cursor, batch.eof))
                    per_read = _lines_per_read(batch.lines, per_read)
                cursor = batch.cursor
                if batch.eof:
                    return {"cursor": cursor, "eof": True, "exit": exit_to_json(p.exit)}
                if batch.lines:
                    await asyncio.sleep(0)
                else:
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(_FOLLOW_POLL):
                            await wake.wait()
        finally:
            sub.close()
            pumper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pumper

    async def _term(self, req: dict[str, Any], conn: _Conn) -> Any:
        return exit_to_json(await self.sup.term(_int(req, "proc", minimum=1)))

    async def _kill(self, req: dict[str, Any], conn: _Conn) -> Any:
        return exit_to_json(await self.sup.kill(_int(req, "proc", minimum=1)))

    async def _interrupt(self, req: dict[str, Any], conn: _Conn) -> Any:
        return {"delivered": await self.sup.interrupt(_int(req, "proc", minimum=1))}

    async def _dismiss(self, req: dict[str, Any], conn: _Conn) -> Any:
        self.sup.dismiss(_int(req, "proc", minimum=1), keep_logs=_bool(req, "keep_logs"))
        return {}

    async def _restart(self, req: dict[str, Any], conn: _Conn) -> Any:
        p = await self.sup.restart(_int(req, "proc", minimum=1))
        return {"id": p.id, "os_pid": p.os_pid}

    async def _events(self, req: dict[str, Any], conn: _Conn) -> Any:
        pattern = req.get("pattern", ">")
        if not isinstance(pattern, str):
            raise ProtocolError("bad-field", "events: 'pattern' must be a string")
        req_id = req.get("id")

        async def body() -> None:
            # A client that does not keep up loses events (its queue is bounded
            # and counts them in 'missed'); what waits for it here is one message.
            async with self.sup.subscribe(pattern, maxsize=_EVENT_QUEUE) as sub:
                await self._send(
                    conn,
                    encode(
                        {
                            "v": PROTOCOL_VERSION,
                            "id": req_id,
                            "ok": True,
                            "result": {"subscribed": pattern},
                        }
                    ),
                )
                async for ev in sub:
                    message = {"v": PROTOCOL_VERSION, "id": req_id, "event": event_to_json(ev)}
                    await self._send(conn, encode(message), patient=True)

        await self._stream(conn, body())
        raise _Replied  # the supervisor closed: the stream simply ends

    async def _sessions(self, req: dict[str, Any], conn: _Conn) -> Any:
        tree: dict[str, dict[str, list[int]]] = {}
        for session, agents in self.declared.items():
            for agent in agents:
                tree.setdefault(session, {}).setdefault(agent, [0, 0])
            tree.setdefault(session, {})
        for p in self.sup.procs():
            counts = tree.setdefault(p.session, {}).setdefault(p.agent, [0, 0])
            counts[0] += p.running
            counts[1] += 1
        return [
            {
                "session": session,
                "agents": [
                    {"agent": agent, "running": c[0], "total": c[1]}
                    for agent, c in sorted(agents.items())
                ],
            }
            for session, agents in sorted(tree.items())
        ]


def _dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def _head(req_id: Any, *, ok: bool) -> bytes:
    """The start of a message whose ``lines`` follow: a final reply, or a batch."""
    start = b'{"v":%d,"id":%s,' % (PROTOCOL_VERSION, _dumps(req_id))
    return start + (b'"ok":true,"result":{"lines":[' if ok else b'"lines":[')


def _tail(dropped: int, cursor: int, eof: bool, *, final: bool = False) -> bytes:
    body = b'],"dropped":%d,"cursor":%d,"eof":%s}' % (
        dropped,
        cursor,
        b"true" if eof else b"false",
    )
    return body + (b"}\n" if final else b"\n")


def _lines_per_read(lines: list[Line], current: int) -> int:
    """How many lines to take next so that a step holds about _READ_TEXT of text."""
    if not lines:
        return current
    size = sum(len(line.text) for line in lines) + _LINE_OVERHEAD * len(lines)
    return max(1, min(_MAX_READ, _READ_TEXT * len(lines) // size))


def _error_message(req_id: Any, exc: Exception, type_: str | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"type": type_ or type(exc).__name__, "message": str(exc)}
    code = getattr(exc, "code", None)
    if isinstance(code, str):
        error["code"] = code
    return {"v": PROTOCOL_VERSION, "id": req_id, "ok": False, "error": error}


def _os_error_message(req_id: Any, op: str, exc: OSError) -> dict[str, Any]:
    error: dict[str, Any] = {"type": "OSError", "message": f"{op}: {exc.strerror or exc}"}
    if exc.errno is not None:
        error["errno"] = errno.errorcode.get(exc.errno, str(exc.errno))
    return {"v": PROTOCOL_VERSION, "id": req_id, "ok": False, "error": error}


def _str(req: dict[str, Any], key: str, default: str | None = None) -> str:
    value = req.get(key, default)
    if not isinstance(value, str):
        raise ProtocolError("bad-field", f"{req['op']}: '{key}' must be a string")
    return value


def _opt_str(req: dict[str, Any], key: str) -> str | None:
    value = req.get(key)
    if value is not None and not isinstance(value, str):
        raise ProtocolError("bad-field", f"{req['op']}: '{key}' must be a string")
    return value


def _int(
    req: dict[str, Any], key: str, default: int | None = None, *, minimum: int | None = None
) -> int:
    value = req.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ProtocolError("bad-field", f"{req['op']}: '{key}' must be an integer")
    if minimum is not None and value < minimum:
        raise ProtocolError("bad-field", f"{req['op']}: '{key}' must be at least {minimum}")
    return value


def _bool(req: dict[str, Any], key: str) -> bool:
    value = req.get(key, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ProtocolError("bad-field", f"{req['op']}: '{key}' must be true or false")
    return value
