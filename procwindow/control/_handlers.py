"""The server's answers: one method a request verb (run, out, events, term, ...)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from .. import __version__
from ..core import (
    DEFAULT_TOOL,
    Line,
    ProcNotFound,
    ProcwindowError,
    Supervisor,
    check_graceful_timeout,
    command_argv,
    count_scopes,
    scope_pattern,
)
from ..core.rules import check_tool
from ._conn import ClientGone, Conn
from ._protocol import (
    PROTOCOL_VERSION,
    ProtocolError,
    decode_request,
    encode,
    exit_to_json,
    proc_to_json,
)
from ._replies import (
    error_message,
    event_message,
    line_pieces,
    lines_head,
    lines_size,
    lines_tail,
    ok_message,
    os_error_message,
)

__all__ = ["Handlers"]

log = logging.getLogger("procwindow.control")

#: Text taken from the ring per step of an ``out`` reply (bytes, roughly): what one
#: connection holds in memory while its client catches up.
_READ_TEXT = 1024 * 1024
#: Lines per step until the lines seen tell how long they are.
_FIRST_READ = 32
_MAX_READ = 8192
#: How often a following ``out`` looks for new lines when no event woke it (seconds).
_FOLLOW_POLL = 0.25
#: Events an ``events`` client may have queued; beyond, it loses them (``missed``).
_EVENT_QUEUE = 1024

Handler = Callable[[dict[str, Any], Conn], Awaitable[Any]]


class _Replied(Exception):
    """A handler already wrote its answer."""


class Handlers:
    """Answers the requests of every connection to one supervisor.

    ``declared`` names sessions and agents that exist before any process does
    (from a workspace), for ``sessions``.
    """

    def __init__(self, supervisor: Supervisor, declared: Mapping[str, Sequence[str]]) -> None:
        self.sup = supervisor
        self.declared = declared
        self._verbs: dict[str, Handler] = {
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

    async def answer(self, line: bytes, conn: Conn) -> None:
        """Carry out one request line and send its reply (errors included)."""
        req_id: Any = None
        op = "request"
        try:
            req = decode_request(line)
            req_id = req.get("id")
            op = req["op"]
            result = await self._verbs[op](req, conn)
        except _Replied:
            return
        except (ClientGone, ConnectionError):
            raise
        except ProcwindowError as exc:
            message = error_message(req_id, exc)
        except (TypeError, ValueError) as exc:
            message = error_message(req_id, ProtocolError("bad-field", f"{op}: {exc}"))
        except OSError as exc:
            # A system limit (no free fd, no memory for a fork): the client is told,
            # and may try again once it is lifted.
            log.warning("control request %s failed: %s", op, exc)
            message = os_error_message(req_id, op, exc)
        except Exception as exc:
            log.exception("control request %s failed", op)
            message = error_message(req_id, exc, type_="InternalError")
        else:
            message = ok_message(req_id, result)
        await conn.send(encode(message))

    # -- requests --------------------------------------------------------------

    async def _hello(self, req: dict[str, Any], conn: Conn) -> Any:
        return {
            "protocol": PROTOCOL_VERSION,
            "server": f"procwindow {__version__}",
            "pid": os.getpid(),
        }

    async def _run(self, req: dict[str, Any], conn: Conn) -> Any:
        env = req.get("env")
        grace = req.get("graceful_timeout")
        try:
            argv = command_argv(req.get("argv"), req.get("shell"))
            if env is not None and not isinstance(env, dict):
                raise ProtocolError("bad-field", "run: 'env' must be an object of strings")
            if grace is not None:
                grace = check_graceful_timeout(grace)
            tool = check_tool(_str(req, "tool", DEFAULT_TOOL))
        except ValueError as exc:  # the rules' (a CommandError is a ValueError too)
            raise ProtocolError("bad-field", f"run: {exc}") from None
        p = await self.sup.spawn(
            argv,
            session=_str(req, "session"),
            agent=_str(req, "agent"),
            tool=tool,
            cwd=_opt_str(req, "cwd"),
            env=env,
            graceful_timeout=grace,
        )
        return {"id": p.id, "os_pid": p.os_pid}

    async def _top(self, req: dict[str, Any], conn: Conn) -> Any:
        return {"text": self.sup.top(_opt_str(req, "session"), _opt_str(req, "agent"))}

    async def _idx(self, req: dict[str, Any], conn: Conn) -> Any:
        return {"text": self.sup.idx(_opt_str(req, "session"), _opt_str(req, "agent"))}

    async def _procs(self, req: dict[str, Any], conn: Conn) -> Any:
        procs = self.sup.procs(_opt_str(req, "session"), _opt_str(req, "agent"))
        return [proc_to_json(p, self.sup.runtime(p.id)) for p in procs]

    async def _out(self, req: dict[str, Any], conn: Conn) -> Any:
        proc_id = _int(req, "proc", minimum=1)
        since = _int(req, "since", 0, minimum=0)
        stream = _opt_str(req, "stream")
        if stream is not None and stream not in ("stdout", "stderr"):
            raise ProtocolError("bad-field", "out: 'stream' is 'stdout' or 'stderr'")
        limit = None if req.get("limit") is None else _int(req, "limit", minimum=1)
        req_id = req.get("id")
        if _bool(req, "follow"):
            return await conn.stream(self._follow(conn, req_id, proc_id, since, stream))
        await self._out_reply(conn, req_id, proc_id, since, stream, limit)
        raise _Replied

    async def _out_reply(
        self,
        conn: Conn,
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
        await conn.send(lines_head(req_id, ok=True))
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
                await _send_lines(conn, lines, first=sent == 0)
                sent += len(lines)
                per_read = _lines_per_read(lines, per_read)
                if finished:
                    break
                await asyncio.sleep(0)  # capture and other clients go first
            eof = not p.output_open and cursor >= p.last_seq
            await conn.send(lines_tail(dropped, cursor, eof, final=True))
        except (ClientGone, ConnectionError, asyncio.CancelledError):
            raise
        except Exception:
            # Half a reply is on the wire: no error can follow it on this connection.
            log.exception("control request out failed mid-reply")
            conn.writer.transport.abort()
            raise ClientGone from None

    async def _follow(
        self, conn: Conn, req_id: Any, proc_id: int, since: int, stream: str | None
    ) -> Any:
        p = self.sup.get(proc_id)
        wake = asyncio.Event()
        sub = self.sup.subscribe(scope_pattern(p.session, p.agent), maxsize=64)

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
                    await conn.send(lines_head(req_id, ok=False))
                    await _send_lines(conn, batch.lines, first=True)
                    await conn.send(lines_tail(batch.dropped, batch.cursor, batch.eof))
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

    async def _term(self, req: dict[str, Any], conn: Conn) -> Any:
        return exit_to_json(await self.sup.term(_int(req, "proc", minimum=1)))

    async def _kill(self, req: dict[str, Any], conn: Conn) -> Any:
        return exit_to_json(await self.sup.kill(_int(req, "proc", minimum=1)))

    async def _interrupt(self, req: dict[str, Any], conn: Conn) -> Any:
        return {"delivered": await self.sup.interrupt(_int(req, "proc", minimum=1))}

    async def _dismiss(self, req: dict[str, Any], conn: Conn) -> Any:
        self.sup.dismiss(_int(req, "proc", minimum=1), keep_logs=_bool(req, "keep_logs"))
        return {}

    async def _restart(self, req: dict[str, Any], conn: Conn) -> Any:
        p = await self.sup.restart(_int(req, "proc", minimum=1))
        return {"id": p.id, "os_pid": p.os_pid}

    async def _events(self, req: dict[str, Any], conn: Conn) -> Any:
        pattern = req.get("pattern", ">")
        if not isinstance(pattern, str):
            raise ProtocolError("bad-field", "events: 'pattern' must be a string")
        req_id = req.get("id")

        async def body() -> None:
            # A client that does not keep up loses events (its queue is bounded
            # and counts them in 'missed'); what waits for it here is one message.
            async with self.sup.subscribe(pattern, maxsize=_EVENT_QUEUE) as sub:
                await conn.send(encode(ok_message(req_id, {"subscribed": pattern})))
                async for ev in sub:
                    await conn.send(event_message(req_id, ev), patient=True)

        await conn.stream(body())
        raise _Replied  # the supervisor closed: the stream simply ends

    async def _sessions(self, req: dict[str, Any], conn: Conn) -> Any:
        return [
            {
                "session": session,
                "agents": [
                    {"agent": agent, "running": counts.running, "total": counts.total}
                    for agent, counts in agents.items()
                ],
            }
            for session, agents in count_scopes(self.sup.procs(), self.declared).items()
        ]


async def _send_lines(conn: Conn, lines: list[Line], *, first: bool) -> None:
    for piece in line_pieces(lines, first=first):
        await conn.send(piece)


def _lines_per_read(lines: list[Line], current: int) -> int:
    """How many lines to take next so that a step holds about _READ_TEXT of text."""
    if not lines:
        return current
    return max(1, min(_MAX_READ, _READ_TEXT * len(lines) // lines_size(lines)))


# -- request fields --------------------------------------------------------------


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
