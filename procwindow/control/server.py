"""The control server: a Unix socket that speaks the JSON-lines protocol."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import socket
import stat
import struct
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from .. import __version__
from ..core import ProcwindowError, Supervisor
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
from ._sockdir import SocketDirError

__all__ = ["ControlServer"]

log = logging.getLogger("procwindow.control")

#: Lines per message when streaming output.
_OUT_BATCH = 2000
#: How often a following ``out`` looks for new lines when no event woke it (seconds).
_FOLLOW_POLL = 0.25

Handler = Callable[[dict[str, Any], asyncio.StreamWriter], Awaitable[Any]]


class _Reply(Exception):
    """Internal: a handler already streamed its answer."""


class ControlServer:
    """Serves one supervisor on a Unix socket.

    The socket's directory is 0700 and the socket 0600; every connection's peer
    uid is checked with SO_PEERCRED and must be ours. Each client is served by
    its own task, one request after the other; a streaming request (``events``,
    ``out`` with ``follow``) holds its connection until the client leaves or the
    stream ends. A client that stops reading only stalls its own task.

    ``declared`` names sessions and agents that exist before any process does
    (from a workspace), for ``sessions``.
    """

    def __init__(
        self,
        supervisor: Supervisor,
        path: str,
        *,
        declared: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        self.sup = supervisor
        self.path = path
        self.declared = {s: list(a) for s, a in (declared or {}).items()}
        self._server: asyncio.AbstractServer | None = None
        self._clients: set[asyncio.Task[None]] = set()
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
        """Bind and listen. Refuses if another live server owns the path."""
        self._claim_path()
        self._server = await asyncio.start_unix_server(
            self._serve_client, path=self.path, limit=MAX_REQUEST + 1
        )
        os.chmod(self.path, 0o600)
        log.info("control socket at %s", self.path)

    def _claim_path(self) -> None:
        folder = os.path.dirname(self.path) or "."
        st = os.lstat(folder)
        if st.st_uid != os.getuid() or st.st_mode & 0o077:
            raise SocketDirError(
                f"{folder} must belong to us and be private (mode 0700) to hold a control socket"
            )
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return
        if not stat.S_ISSOCK(st.st_mode):
            raise SocketDirError(f"{self.path} exists and is not a socket; refusing to replace it")
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(self.path)
        except OSError as exc:
            if exc.errno not in (errno.ECONNREFUSED, errno.ENOENT):
                raise
            os.unlink(self.path)  # a stale socket: its server is gone
        else:
            raise SocketDirError(f"another server is already listening on {self.path}")
        finally:
            probe.close()

    async def close(self) -> None:
        """Stop listening, end every client connection, remove the socket."""
        if self._server is not None:
            self._server.close()
            for task in list(self._clients):
                task.cancel()
            await asyncio.gather(*self._clients, return_exceptions=True)
            await self._server.wait_closed()
            self._server = None
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)

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
        self._clients.add(task)
        try:
            if not self._peer_allowed(writer):
                return
            while True:
                try:
                    line = await reader.readuntil(b"\n")
                except asyncio.IncompleteReadError as exc:
                    if exc.partial.strip():
                        await self._send_error(
                            writer,
                            None,
                            ProtocolError("malformed", "request without a final newline"),
                        )
                    return
                except asyncio.LimitOverrunError:
                    await self._send_error(
                        writer,
                        None,
                        ProtocolError("too-large", f"request longer than {MAX_REQUEST} bytes"),
                    )
                    return  # cannot find where the next request starts
                if not line.strip():
                    continue
                if not await self._handle_line(line, writer):
                    return
        except (ConnectionError, BrokenPipeError):
            pass  # the client left
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("control client failed")
        finally:
            self._clients.discard(task)
            if writer.transport.get_write_buffer_size():
                writer.transport.abort()  # a client that stopped reading: do not wait on it
            else:
                writer.close()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(writer.wait_closed(), 1.0)

    def _peer_allowed(self, writer: asyncio.StreamWriter) -> bool:
        sock = writer.get_extra_info("socket")
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        pid, uid, _gid = struct.unpack("3i", creds)
        if uid == os.getuid():
            return True
        log.warning("refused control connection from pid %d uid %d", pid, uid)
        writer.write(
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

    async def _handle_line(self, line: bytes, writer: asyncio.StreamWriter) -> bool:
        req_id: Any = None
        try:
            req = decode_request(line)
            req_id = req.get("id")
            result = await self._handlers[req["op"]](req, writer)
        except _Reply:
            return True
        except ProcwindowError as exc:
            await self._send_error(writer, req_id, exc)
            return True
        except (TypeError, ValueError) as exc:
            await self._send_error(writer, req_id, ProtocolError("bad-field", str(exc)))
            return True
        await _send(writer, {"v": PROTOCOL_VERSION, "id": req_id, "ok": True, "result": result})
        return True

    async def _send_error(self, writer: asyncio.StreamWriter, req_id: Any, exc: Exception) -> None:
        await _send(writer, _error_message(req_id, exc))

    # -- requests --------------------------------------------------------------

    async def _hello(self, req: dict[str, Any], writer: asyncio.StreamWriter) -> Any:
        return {
            "protocol": PROTOCOL_VERSION,
            "server": f"procwindow {__version__}",
            "pid": os.getpid(),
        }

    async def _run(self, req: dict[str, Any], writer: asyncio.StreamWriter) -> Any:
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
        p = await self.sup.spawn(
            argv,
            session=_str(req, "session"),
            agent=_str(req, "agent"),
            tool=_str(req, "tool", "shell"),
            cwd=_opt_str(req, "cwd"),
            env=env,
            graceful_timeout=_opt_float(req, "graceful_timeout"),
        )
        return {"id": p.id, "os_pid": p.os_pid}

    async def _top(self, req: dict[str, Any], writer: asyncio.StreamWriter) -> Any:
        return {"text": self.sup.top(_opt_str(req, "session"), _opt_str(req, "agent"))}

    async def _idx(self, req: dict[str, Any], writer: asyncio.StreamWriter) -> Any:
        return {"text": self.sup.idx(_opt_str(req, "session"), _opt_str(req, "agent"))}

    async def _procs(self, req: dict[str, Any], writer: asyncio.StreamWriter) -> Any:
        procs = self.sup.procs(_opt_str(req, "session"), _opt_str(req, "agent"))
        return [proc_to_json(p, self.sup.runtime(p.id)) for p in procs]

    async def _out(self, req: dict[str, Any], writer: asyncio.StreamWriter) -> Any:
        proc_id = _int(req, "proc")
        since = _int(req, "since", 0)
        stream = _opt_str(req, "stream")
        if stream is not None and stream not in ("stdout", "stderr"):
            raise ProtocolError("bad-field", "out: 'stream' is 'stdout' or 'stderr'")
        limit = req.get("limit")
        if limit is not None and (not isinstance(limit, int) or limit < 1):
            raise ProtocolError("bad-field", "out: 'limit' must be a positive integer")
        if not req.get("follow"):
            batch = self.sup.read(proc_id, since, limit=limit, stream=stream)
            return _batch_json(batch)
        return await self._follow(req.get("id"), proc_id, since, stream, writer)

    async def _follow(
        self,
        req_id: Any,
        proc_id: int,
        since: int,
        stream: str | None,
        writer: asyncio.StreamWriter,
    ) -> Any:
        p = self.sup.get(proc_id)
        wake = asyncio.Event()
        sub = self.sup.subscribe(f"session.{p.session}.agent.{p.agent}.proc.>", maxsize=64)

        async def pump() -> None:
            async for ev in sub:
                if ev.proc_id == proc_id:
                    wake.set()

        pumper = asyncio.ensure_future(pump())
        try:
            cursor = since
            while True:
                batch = self.sup.read(proc_id, cursor, limit=_OUT_BATCH, stream=stream)
                if batch.lines or batch.dropped:
                    # drain() waits for a slow client here; the supervisor goes on.
                    await _send(writer, {"v": PROTOCOL_VERSION, "id": req_id, **_batch_json(batch)})
                cursor = batch.cursor
                if batch.eof:
                    return {"cursor": cursor, "eof": True, "exit": exit_to_json(p.exit)}
                if not batch.lines:
                    wake.clear()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(wake.wait(), _FOLLOW_POLL)
        finally:
            sub.close()
            pumper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pumper

    async def _term(self, req: dict[str, Any], writer: asyncio.StreamWriter) -> Any:
        return exit_to_json(await self.sup.term(_int(req, "proc")))

    async def _kill(self, req: dict[str, Any], writer: asyncio.StreamWriter) -> Any:
        return exit_to_json(await self.sup.kill(_int(req, "proc")))

    async def _interrupt(self, req: dict[str, Any], writer: asyncio.StreamWriter) -> Any:
        return {"delivered": await self.sup.interrupt(_int(req, "proc"))}

    async def _dismiss(self, req: dict[str, Any], writer: asyncio.StreamWriter) -> Any:
        self.sup.dismiss(_int(req, "proc"), keep_logs=bool(req.get("keep_logs", False)))
        return {}

    async def _restart(self, req: dict[str, Any], writer: asyncio.StreamWriter) -> Any:
        p = await self.sup.restart(_int(req, "proc"))
        return {"id": p.id, "os_pid": p.os_pid}

    async def _events(self, req: dict[str, Any], writer: asyncio.StreamWriter) -> Any:
        pattern = req.get("pattern", ">")
        if not isinstance(pattern, str):
            raise ProtocolError("bad-field", "events: 'pattern' must be a string")
        req_id = req.get("id")
        # A slow client loses events (counted in 'missed'), never stalls the supervisor.
        async with self.sup.subscribe(pattern, maxsize=1024) as sub:
            await _send(
                writer,
                {
                    "v": PROTOCOL_VERSION,
                    "id": req_id,
                    "ok": True,
                    "result": {"subscribed": pattern},
                },
            )
            async for ev in sub:
                await _send(
                    writer, {"v": PROTOCOL_VERSION, "id": req_id, "event": event_to_json(ev)}
                )
        raise _Reply  # the supervisor closed: the stream simply ends

    async def _sessions(self, req: dict[str, Any], writer: asyncio.StreamWriter) -> Any:
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


def _batch_json(batch: Any) -> dict[str, Any]:
    return {
        "lines": [line_to_json(line) for line in batch.lines],
        "dropped": batch.dropped,
        "cursor": batch.cursor,
        "eof": batch.eof,
    }


def _error_message(req_id: Any, exc: Exception) -> dict[str, Any]:
    error: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc)}
    code = getattr(exc, "code", None)
    if isinstance(code, str):
        error["code"] = code
    return {"v": PROTOCOL_VERSION, "id": req_id, "ok": False, "error": error}


async def _send(writer: asyncio.StreamWriter, message: dict[str, Any]) -> None:
    writer.write(encode(message))
    await writer.drain()


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


def _int(req: dict[str, Any], key: str, default: int | None = None) -> int:
    value = req.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ProtocolError("bad-field", f"{req['op']}: '{key}' must be an integer")
    return value


def _opt_float(req: dict[str, Any], key: str) -> float | None:
    value = req.get(key)
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise ProtocolError("bad-field", f"{req['op']}: '{key}' must be a number")
    return float(value)
