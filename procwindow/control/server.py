"""The control server: a Unix socket that speaks the JSON-lines protocol.

This module owns the socket file and its lock, and accepts the clients;
``_conn`` reads each client's requests and writes its replies within its
limits, ``_handlers`` answers the requests (its verb families in
``_handlers_*``), ``_replies`` encodes the answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import logging
import os
import socket
import stat
from collections.abc import Mapping, Sequence

from ..core import Supervisor, UnsafePath, open_private_file, private_dir
from ._conn import (
    LARGE_REQUEST_BUDGET,
    REQUEST_BUFFER,
    REQUEST_TIMEOUT,
    SEND_TIMEOUT,
    WRITE_HIGH,
    BusyLog,
    ClientGone,
    Conn,
    RequestBudget,
)
from ._handlers import Handlers
from ._protocol import ProtocolError, encode
from ._replies import error_message
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

#: Connections served at once. Past it, a new client waits in the kernel's
#: backlog until the connection that has waited longest for a request (idle, or
#: with its request unfinished) is closed for it, or until one ends.
MAX_CLIENTS = 256
#: Seconds before accepting again after the process ran out of fds.
_ACCEPT_RETRY = 0.1
#: Seconds to wait for the connections to close when the server closes.
_CLOSE_WAIT = 1.0


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
        self._listener: socket.socket | None = None
        self._accepting: asyncio.Task[None] | None = None
        self._room = asyncio.Event()
        self._conns: dict[asyncio.Task[None], Conn] = {}
        self._closing = False
        self._busy = BusyLog()
        self._budget = RequestBudget(large_request_budget, self._busy)
        self._handlers = Handlers(supervisor, self.declared)
        self._bound: tuple[int, int] | None = None
        self._lock_fd: int | None = None
        self._lock_id: tuple[int, int] | None = None

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
            self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self._listener.setblocking(False)
            self._listener.bind(self.path)
            st = os.stat(self.path)
            self._bound = (st.st_dev, st.st_ino)
            os.chmod(self.path, 0o600)
            # Clients past MAX_CLIENTS wait here, in the kernel, not in this process.
            self._listener.listen(socket.SOMAXCONN)
        except BaseException:
            if self._listener is not None:
                self._listener.close()
                self._listener = None
            self._remove_socket()
            self._release_lock()
            raise
        self._accepting = asyncio.get_running_loop().create_task(self._accept(self._listener))
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
        if self._listener is not None:
            self._closing = True
            if self._accepting is not None:
                self._accepting.cancel()
                await asyncio.gather(self._accepting, return_exceptions=True)
                self._accepting = None
            self._listener.close()
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
            self._listener = None
        self._release_lock()

    async def __aenter__(self) -> ControlServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- connections -----------------------------------------------------------

    async def _accept(self, listener: socket.socket) -> None:
        """Accept clients while fewer than ``max_clients`` are served; at the
        cap, close the connection that has waited longest for a request (idle,
        or its request unfinished) to serve the new one, or wait for one to
        end. Meanwhile new clients wait in the kernel's backlog."""
        loop = asyncio.get_running_loop()
        while True:
            try:
                client, _ = await loop.sock_accept(listener)
            except OSError as exc:  # EMFILE, ENFILE, ENOBUFS: they wait in the backlog
                self._busy.warn("cannot accept control connections: %s", exc)
                await asyncio.sleep(_ACCEPT_RETRY)
                continue
            try:
                while self._served() >= self.max_clients and not self._evict():
                    self._room.clear()
                    await self._room.wait()
                reader, writer = await asyncio.open_unix_connection(
                    sock=client, limit=REQUEST_BUFFER
                )
            except BaseException:
                client.close()
                raise
            conn = Conn(
                reader,
                writer,
                self._budget,
                request_timeout=self.request_timeout,
                send_timeout=self.send_timeout,
            )
            self._conns[loop.create_task(self._serve_client(conn))] = conn

    def _served(self) -> int:
        """Connections that count against the cap (not those closed to make room)."""
        return sum(1 for c in self._conns.values() if not c.writer.transport.is_closing())

    def _evict(self) -> bool:
        """Close the connection that has waited longest for a request, if any waits."""
        waiting = [c for c in self._conns.values() if c.waiting_since is not None]
        waiting = [c for c in waiting if not c.writer.transport.is_closing()]
        if not waiting:
            return False
        oldest = min(waiting, key=lambda c: c.waiting_since or 0.0)
        self._busy.warn(
            "%d control connections open: closing the one that waited longest for a"
            " request (pid %d) to serve a new one",
            self.max_clients,
            oldest.pid,
        )
        refusal = ProtocolError(
            "busy",
            f"the server serves {self.max_clients} connections at most: this one, which"
            " waited longest for a request, was closed for a new one",
        )
        oldest.writer.write(encode(error_message(None, refusal)))
        oldest.writer.transport.close()
        return True

    async def _serve_client(self, conn: Conn) -> None:
        task = asyncio.current_task()
        assert task is not None
        try:
            if self._closing:
                return
            if not self._peer_allowed(conn):
                return
            while True:
                try:
                    line = await conn.next_line()
                except ProtocolError as exc:
                    await conn.send(encode(error_message(None, exc)))
                    return
                if line is None:
                    return
                await self._handlers.answer(line, conn)
        except (ClientGone, ConnectionError):
            pass
        except asyncio.CancelledError:
            # Only close() and the loop's shutdown cancel this task, and nothing
            # awaits it but close(). Ending quietly matters on Python 3.11, whose
            # stream callback calls task.exception() and logs the CancelledError.
            pass
        except Exception:
            log.exception("control client failed")
        finally:
            self._conns.pop(task, None)
            conn.close()
            self._room.set()

    def _peer_allowed(self, conn: Conn) -> bool:
        uid = conn.peer_uid()
        if uid is None:
            return False
        if uid == os.getuid():
            return True
        log.warning("refused control connection from pid %d uid %d", conn.pid, uid)
        refusal = ProtocolError(
            "forbidden", f"uid {uid} may not use this server (uid {os.getuid()})"
        )
        conn.writer.write(encode(error_message(None, refusal)))
        return False
