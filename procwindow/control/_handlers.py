"""The server's answers: one method a request verb (run, out, search, events, term, ...)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .. import __version__
from ..core import (
    DEFAULT_TOOL,
    ExitInfo,
    ExitReason,
    Line,
    PartialEvent,
    Proc,
    ProcNotFound,
    ProcwindowError,
    Ready,
    SearchHit,
    StdinClosed,
    Stream,
    Supervisor,
    WorkspaceNotFound,
    WorkspaceRun,
    check_graceful_timeout,
    command_argv,
    count_scopes,
    scope_pattern,
)
from ..core._agent import check_timeout
from ..core._orchestra import CommandState, commands_table, idx_rows
from ..core.rules import check_tool
from ._conn import ClientGone, Conn
from ._protocol import (
    PROTOCOL_VERSION,
    HistoryUnavailable,
    ProtocolError,
    Timeout,
    decode_request,
    encode,
    excerpt_to_json,
    exit_to_json,
    line_to_json,
    proc_to_json,
)
from ._replies import (
    error_message,
    event_message,
    hit_message,
    line_pieces,
    lines_head,
    lines_size,
    lines_tail,
    ok_message,
    os_error_message,
)
from .workspace import load_workspace

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
#: Bounds of an ``excerpt``: its text (bytes) and its head and tail lines together.
MIN_EXCERPT_BYTES = 256
MAX_EXCERPT_BYTES = 1024 * 1024
MAX_EXCERPT_LINES = 10_000

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
            "forget": self._forget,
            "restart": self._restart,
            "events": self._events,
            "sessions": self._sessions,
            "history": self._history,
            "search": self._search,
            "wait_for": self._wait_for,
            "ready": self._wait_ready,
            "excerpt": self._excerpt,
            "write": self._write,
            "up": self._up,
            "down": self._down,
            "workspaces": self._workspaces,
            "stats": self._stats,
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
        except StdinClosed as exc:  # a BrokenPipeError, but the child's, not the client's
            message = error_message(req_id, exc)
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

    async def _stats(self, req: dict[str, Any], conn: Conn) -> Any:
        """Resource use of each live proc of ``procs`` (ids not live are left out)."""
        ids = req.get("procs")
        if not isinstance(ids, list) or not all(
            isinstance(i, int) and not isinstance(i, bool) for i in ids
        ):
            raise ProtocolError("bad-field", "stats: 'procs' must be a list of ids")
        out = []
        for proc_id in dict.fromkeys(ids):
            try:
                st = self.sup.stats(proc_id)
            except ProcNotFound:
                continue
            out.append({"proc": proc_id} | dataclasses.asdict(st))
        return {"stats": out}

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
        timeout = _opt_seconds(req, "timeout")
        ready = _ready_check(req)
        reuse = _bool(req, "reuse")
        # spawn does not yield before it picks a running copy to reuse, so the ids
        # known now tell a reused proc from a new one.
        known = {p.id for p in self.sup.procs()} if reuse else set()
        p = await self.sup.spawn(
            argv,
            session=_str(req, "session"),
            agent=_str(req, "agent"),
            tool=tool,
            cwd=_opt_str(req, "cwd"),
            env=env,
            graceful_timeout=grace,
            timeout=timeout,
            merge_stderr=_bool(req, "merge_stderr"),
            stdin=_bool(req, "stdin"),
            ready=ready,
            reuse=reuse,
        )
        return {"id": p.id, "os_pid": p.os_pid, "reused": p.id in known}

    async def _top(self, req: dict[str, Any], conn: Conn) -> Any:
        session, agent = _opt_str(req, "session"), _opt_str(req, "agent")
        text = self.sup.top(session, agent)
        states = self._states(session, agent)
        if states:  # what the workspaces' commands do, waiting ones included
            text += "\n" + commands_table(states)
        return {"text": text, "commands": [st.to_json() for st in states]}

    async def _idx(self, req: dict[str, Any], conn: Conn) -> Any:
        session, agent = _opt_str(req, "session"), _opt_str(req, "agent")
        states = self._states(session, agent)
        # Commands that have not started (waiting, skipped) have rows of their own.
        text = self.sup.idx(session, agent) + idx_rows(states)
        return {"text": text, "commands": [st.to_json() for st in states]}

    def _states(self, session: str | None, agent: str | None) -> list[CommandState]:
        """The states of the running workspaces' commands of a scope."""
        return [
            st
            for run in self.sup.workspaces
            for st in run.states()
            if (session is None or st.session == session) and (agent is None or st.agent == agent)
        ]

    async def _procs(self, req: dict[str, Any], conn: Conn) -> Any:
        procs = self.sup.procs(_opt_str(req, "session"), _opt_str(req, "agent"))
        return [proc_to_json(p, self._runtime(p)) for p in procs]

    def _runtime(self, p: Proc) -> float:
        """Seconds ``p`` ran. A proc of the history knows its own (from wall-clock
        times); asking the supervisor would look it up in the database again."""
        return self.sup.runtime(p.id) if p.live else p.runtime(time.monotonic())

    async def _history(self, req: dict[str, Any], conn: Conn) -> Any:
        reason = _opt_str(req, "reason")
        if reason is not None and reason not in _REASONS:
            raise ProtocolError(
                "bad-field", f"history: 'reason' is one of {', '.join(sorted(_REASONS))}"
            )
        since = _opt_number(req, "since")
        limit = _opt_int(req, "limit", minimum=1)
        if not self.sup.history_enabled:
            raise HistoryUnavailable(self.sup.history_error)
        procs = self.sup.history(
            session=_opt_str(req, "session"),
            agent=_opt_str(req, "agent"),
            tool=_opt_str(req, "tool"),
            reason=reason,
            since=since,
            limit=limit,
        )
        return [proc_to_json(p, self._runtime(p)) for p in procs]

    async def _out(self, req: dict[str, Any], conn: Conn) -> Any:
        proc_id = _int(req, "proc", minimum=1)
        since = _int(req, "since", 0, minimum=0)
        want = _stream(req)
        limit = _opt_int(req, "limit", minimum=1)
        partial = _bool(req, "partial")
        req_id = req.get("id")
        if _bool(req, "follow"):
            return await conn.stream(self._follow(conn, req_id, proc_id, since, want, partial))
        await self._out_reply(conn, req_id, proc_id, since, want, limit, partial)
        raise _Replied

    async def _out_reply(
        self,
        conn: Conn,
        req_id: Any,
        proc_id: int,
        since: int,
        stream: Stream | None,
        limit: int | None,
        partial: bool = False,
    ) -> None:
        """One reply line, written piece by piece as the client takes it.

        For a live proc it holds the lines up to the newest one when the request
        came; for a proc of the history (dismissed, of an earlier run or another
        server), every line it has. Lines missing (cut by the disk cap, or the
        proc forgotten meanwhile) are counted in ``dropped``. ``partial``: the
        unterminated lines shown now end the list (the cursor stays before them).
        """
        p = self.sup.get(proc_id)
        end = p.last_seq if p.live else None
        reader = _LineReader(self.sup, proc_id, since, stream)
        await conn.send(lines_head(req_id, ok=True))
        try:
            dropped = sent = 0
            while True:
                room = None if limit is None else limit - sent
                try:
                    step = reader.read(room=room, upto=end)
                except ProcNotFound:  # forgotten meanwhile: its lines are gone
                    dropped += reader.lose(end)
                    break
                await _send_lines(conn, step.lines, step.cuts, first=sent == 0)
                sent += len(step.lines)
                dropped += step.dropped
                at_end = end is not None and reader.cursor >= end
                if step.done or at_end or (limit is not None and sent >= limit):
                    break
                await asyncio.sleep(0)  # capture and other clients go first
            if partial:
                shown = self._partials(proc_id, reader.cursor, stream)
                if shown and (limit is None or sent + len(shown) <= limit):
                    await _send_lines(conn, shown, {}, first=sent == 0)
            tail = lines_tail(dropped, reader.cursor, reader.eof, p.cut_bytes, final=True)
            await conn.send(tail)
        except (ClientGone, ConnectionError, asyncio.CancelledError):
            raise
        except Exception:
            # Half a reply is on the wire: no error can follow it on this connection.
            log.exception("control request out failed mid-reply")
            conn.writer.transport.abort()
            raise ClientGone from None

    def _partials(self, proc_id: int, cursor: int, stream: Stream | None) -> list[Line]:
        """The unterminated lines a live proc shows now, if no complete line
        follows ``cursor`` (else they would come out of order); of ``stream`` only."""
        try:
            p = self.sup.get(proc_id)
        except ProcNotFound:
            return []
        if not p.live or p.last_seq > cursor:
            return []
        batch = self.sup.read(proc_id, cursor, stream=stream, partial=True)
        return [line for line in batch.lines if line.partial]

    async def _follow(
        self,
        conn: Conn,
        req_id: Any,
        proc_id: int,
        since: int,
        stream: Stream | None,
        partial: bool = False,
    ) -> Any:
        p = self.sup.get(proc_id)
        wake = asyncio.Event()
        sub = self.sup.subscribe(scope_pattern(p.session, p.agent), proc=proc_id, maxsize=64)
        news = _PartialNews(pending=partial)  # a prompt shown already counts too

        async def pump() -> None:
            async for ev in sub:
                if ev.proc_id == proc_id or ev.missed:
                    if isinstance(ev, PartialEvent):
                        news.pending = True
                    wake.set()

        pumper = asyncio.ensure_future(pump())
        try:
            reader = _LineReader(self.sup, proc_id, since, stream)
            while True:
                wake.clear()
                step = reader.read()
                if step.lines or step.dropped:
                    # The client's pace sets the server's: a batch waits for room;
                    # lines that leave the ring meanwhile are read back from disk.
                    await conn.send(lines_head(req_id, ok=False))
                    await _send_lines(conn, step.lines, step.cuts, first=True)
                    await conn.send(
                        lines_tail(step.dropped, reader.cursor, reader.eof, p.cut_bytes)
                    )
                if reader.eof:
                    exit_ = _exit_now(self.sup, proc_id, p)
                    return {"cursor": reader.cursor, "eof": True, "exit": exit_to_json(exit_)}
                if not step.done:
                    await asyncio.sleep(0)
                else:
                    if partial and news.pending:  # caught up: show the prompt or progress
                        news.pending = False
                        for line in news.fresh(self._partials(proc_id, reader.cursor, stream)):
                            message = {"v": PROTOCOL_VERSION, "id": req_id}
                            message["partial"] = line_to_json(line)
                            await conn.send(encode(message))
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(_FOLLOW_POLL):
                            await wake.wait()
        finally:
            sub.close()
            pumper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await pumper

    async def _search(self, req: dict[str, Any], conn: Conn) -> Any:
        limit = _opt_int(req, "limit", minimum=1)
        hits = self.sup.search(  # InvalidPattern now, before anything is streamed
            _str(req, "pattern"),
            regex=_bool(req, "regex"),
            case_sensitive=_bool(req, "case_sensitive"),
            session=_opt_str(req, "session"),
            agent=_opt_str(req, "agent"),
            proc=_opt_int(req, "proc", minimum=1),
            since=_opt_number(req, "since"),
            limit=limit,
        )
        return await conn.stream(_send_hits(conn, req.get("id"), hits, limit))

    async def _term(self, req: dict[str, Any], conn: Conn) -> Any:
        proc_id = _int(req, "proc", minimum=1)
        # A crash loop waiting for its next attempt ends here too: the person
        # asked its latest run to stop.
        for run in self.sup.workspaces:
            state = run.state_of(proc_id)
            if state is not None and state.proc_id == proc_id:
                run.cancel_restart(state.name)
        return exit_to_json(await self.sup.term(proc_id))

    async def _kill(self, req: dict[str, Any], conn: Conn) -> Any:
        return exit_to_json(await self.sup.kill(_int(req, "proc", minimum=1)))

    async def _interrupt(self, req: dict[str, Any], conn: Conn) -> Any:
        return {"delivered": await self.sup.interrupt(_int(req, "proc", minimum=1))}

    async def _dismiss(self, req: dict[str, Any], conn: Conn) -> Any:
        self.sup.dismiss(_int(req, "proc", minimum=1))
        return {}

    async def _forget(self, req: dict[str, Any], conn: Conn) -> Any:
        self.sup.forget(_int(req, "proc", minimum=1))
        return {}

    async def _restart(self, req: dict[str, Any], conn: Conn) -> Any:
        p = await self.sup.restart(_int(req, "proc", minimum=1))
        return {"id": p.id, "os_pid": p.os_pid}

    async def _events(self, req: dict[str, Any], conn: Conn) -> Any:
        pattern = req.get("pattern", ">")
        if not isinstance(pattern, str):
            raise ProtocolError("bad-field", "events: 'pattern' must be a string")
        proc = _opt_int(req, "proc", minimum=1)
        ack: dict[str, Any] = {"subscribed": pattern}
        if proc is not None:
            self.sup.get(proc)  # ProcNotFound for an unknown id, not a silent stream
            ack["proc"] = proc
        req_id = req.get("id")

        async def body() -> None:
            # A client that does not keep up loses events (its queue is bounded
            # and counts them in 'missed'); what waits for it here is one message.
            async with self.sup.subscribe(pattern, proc=proc, maxsize=_EVENT_QUEUE) as sub:
                await conn.send(encode(ok_message(req_id, ack)))
                async for ev in sub:
                    await conn.send(event_message(req_id, ev), patient=True)

        await conn.stream(body())
        raise _Replied  # the supervisor closed: the stream simply ends

    # -- the agent verbs -----------------------------------------------------------

    async def _wait_for(self, req: dict[str, Any], conn: Conn) -> Any:
        """The first line after ``since`` that matches; waits for it (until the
        proc's output ends, or ``timeout``). The client leaving ends the wait."""
        proc_id = _int(req, "proc", minimum=1)
        pattern = _str(req, "pattern")
        regex = _bool(req, "regex", default=True)
        stream = _stream(req)
        since = _int(req, "since", 0, minimum=0)
        timeout = _opt_seconds(req, "timeout")

        async def body() -> dict[str, Any]:
            try:
                line = await self.sup.wait_for(
                    proc_id, pattern, regex=regex, stream=stream, since=since, timeout=timeout
                )
            except TimeoutError:
                if timeout is None:
                    raise
                raise Timeout(
                    f"proc {proc_id}: no line matched {pattern!r} within {timeout:g} s", timeout
                ) from None
            cursor = line.seq - 1 if line.partial else line.seq
            return {"line": line_to_json(line), "cursor": cursor}

        return await conn.stream(body())

    async def _wait_ready(self, req: dict[str, Any], conn: Conn) -> Any:
        """Wait until the proc's readiness check (``run``'s ``ready``) passes."""
        proc_id = _int(req, "proc", minimum=1)
        timeout = _opt_seconds(req, "timeout")

        async def body() -> dict[str, Any]:
            try:
                p = await self.sup.wait_ready(proc_id, timeout)
            except TimeoutError:
                if timeout is None:
                    raise
                raise Timeout(
                    f"proc {proc_id} was not ready within {timeout:g} s", timeout
                ) from None
            return {"ready": True, "proc": proc_to_json(p, self._runtime(p))}

        return await conn.stream(body())

    async def _excerpt(self, req: dict[str, Any], conn: Conn) -> Any:
        proc_id = _int(req, "proc", minimum=1)
        head = _int(req, "head", 20, minimum=0)
        tail = _int(req, "tail", 40, minimum=0)
        max_bytes = _int(req, "max_bytes", 8000, minimum=MIN_EXCERPT_BYTES)
        since = _int(req, "since", 0, minimum=0)
        if max_bytes > MAX_EXCERPT_BYTES:
            raise ProtocolError(
                "bad-field", f"excerpt: 'max_bytes' must be at most {MAX_EXCERPT_BYTES}"
            )
        if head + tail > MAX_EXCERPT_LINES:
            raise ProtocolError(
                "bad-field",
                f"excerpt: 'head' and 'tail' together must be at most {MAX_EXCERPT_LINES}",
            )
        ex = await self.sup.excerpt(proc_id, head=head, tail=tail, max_bytes=max_bytes, since=since)
        return excerpt_to_json(ex)

    async def _write(self, req: dict[str, Any], conn: Conn) -> Any:
        """Write ``data`` (UTF-8) to the proc's stdin, then close it with ``close``.
        A write waits while the pipe is full; the client leaving ends it."""
        proc_id = _int(req, "proc", minimum=1)
        data = _str(req, "data", "")
        close = _bool(req, "close")
        p = self.sup.get(proc_id)
        if not p.live:
            raise StdinClosed(proc_id, "its stdin is not held here (it is not in the live view)")
        if not p.options.stdin:
            raise StdinClosed(proc_id, 'it has no stdin (run it with "stdin": true)')

        async def body() -> dict[str, Any]:
            result: dict[str, Any] = {"written": await self.sup.write(proc_id, data) if data else 0}
            if close:
                result["closed"] = await self.sup.close_stdin(proc_id)
            return result

        return await conn.stream(body())

    # -- workspaces ---------------------------------------------------------------

    async def _up(self, req: dict[str, Any], conn: Conn) -> Any:
        """Load a workspace file (checked whole first) and start it here."""
        path = _str(req, "path")
        if not path:
            raise ProtocolError("bad-field", "up: 'path' must not be empty")
        run = await load_workspace(path).start(self.sup)
        return _run_to_json(run)

    async def _down(self, req: dict[str, Any], conn: Conn) -> Any:
        """Stop a workspace (every one without ``workspace``), or only some of its
        commands and their dependents, dependents first; reply once they stopped."""
        name = _opt_str(req, "workspace")
        commands = req.get("commands")
        if commands is not None and (
            not isinstance(commands, list) or not all(isinstance(c, str) for c in commands)
        ):
            raise ProtocolError("bad-field", "down: 'commands' must be a list of strings")
        runs = self.sup.workspaces
        if name is not None:
            runs = [run for run in runs if run.name == name]
            if not runs:
                raise WorkspaceNotFound(
                    "workspace", name, [run.name for run in self.sup.workspaces]
                )
        elif commands is not None:
            raise ProtocolError("bad-field", "down: 'commands' needs 'workspace'")
        stopped: list[list[str]] = []
        for run in reversed(runs):  # the last one up goes first
            # A stop half done is worse than one the client does not wait for.
            order = await asyncio.shield(
                asyncio.ensure_future(run.stop(commands if commands is not None else None))
            )
            stopped += [[run.name, command] for command in order]
        return {"workspaces": [run.name for run in runs], "stopped": stopped}

    async def _workspaces(self, req: dict[str, Any], conn: Conn) -> Any:
        return [_run_to_json(run) for run in self.sup.workspaces]

    async def _sessions(self, req: dict[str, Any], conn: Conn) -> Any:
        declared: dict[str, list[str]] = {s: list(a) for s, a in self.declared.items()}
        for run in self.sup.workspaces:
            for session, agents in run.workspace.sessions.items():
                known = declared.setdefault(session, [])
                known += [a for a in agents if a not in known]
        return [
            {
                "session": session,
                "agents": [
                    {"agent": agent, "running": counts.running, "total": counts.total}
                    for agent, counts in agents.items()
                ],
            }
            for session, agents in count_scopes(self.sup.procs(), declared).items()
        ]


def _run_to_json(run: WorkspaceRun) -> dict[str, Any]:
    """A running workspace: its name, file and commands' states."""
    return {
        "workspace": run.name,
        "path": run.workspace.path,
        "commands": [st.to_json() for st in run.states()],
    }


#: The reasons a proc can end with, for ``history``'s filter.
_REASONS = frozenset(r.value for r in ExitReason)


@dataclass(slots=True)
class _PartialNews:
    """A following ``out`` with ``partial``: whether a partial event came since
    the last look, and the partial line last sent of each stream."""

    pending: bool = False
    sent: dict[Stream, tuple[int, str]] = field(default_factory=dict)

    def fresh(self, lines: list[Line]) -> list[Line]:
        """The lines not sent yet (a new seq or a new text), noted as sent."""
        out = []
        for line in lines:
            if self.sent.get(line.stream) != (line.seq, line.text):
                self.sent[line.stream] = (line.seq, line.text)
                out.append(line)
        return out


@dataclass(slots=True)
class _Step:
    """What one ``_LineReader.read`` gave: the lines kept, the lines missing before
    some of them (by seq), the lines missing in all, and whether the proc has
    nothing more to read now (or the read stopped at its ``room`` or ``upto``)."""

    lines: list[Line] = field(default_factory=list)
    cuts: dict[int, int] = field(default_factory=dict)
    dropped: int = 0
    done: bool = False


class _LineReader:
    """Reads one proc's lines for ``out``, and says where lines are missing.

    The supervisor is asked for both streams so that a jump in seq is always a
    loss (cut from the middle of the logs by the disk cap, or lost when writing
    the log failed), never a line of the other stream; ``stream`` is
    applied here. Each run of missing lines is counted in the step's
    ``dropped`` and marked on the next line kept (``cuts``), which may come in
    a later step.
    """

    def __init__(self, sup: Supervisor, proc_id: int, since: int, stream: Stream | None) -> None:
        self.sup = sup
        self.proc_id = proc_id
        self.stream = stream
        self.cursor = since  # every seq up to here is read (or missing)
        self.eof = False
        self._missing = 0  # lines missing since the last line kept
        self._per_read = _FIRST_READ

    def read(self, *, room: int | None = None, upto: int | None = None) -> _Step:
        """The next lines: at most ``room`` of them kept, none past seq ``upto``."""
        want = self._per_read if room is None else min(self._per_read, room)
        batch = self.sup.read(self.proc_id, self.cursor, limit=want)
        self._per_read = _lines_per_read(batch.lines, self._per_read)
        step = _Step()
        whole = True  # every line of the batch was taken
        for line in batch.lines:
            keep = self.stream is None or line.stream is self.stream
            full = room is not None and keep and len(step.lines) >= room
            if full or (upto is not None and line.seq > upto):
                whole = False
                break
            step.dropped += self._skip_to(line.seq - 1)
            self.cursor = line.seq
            if keep:
                if self._missing:
                    step.cuts[line.seq] = self._missing
                    self._missing = 0
                step.lines.append(line)
        if whole:  # lines missing after the last one returned
            step.dropped += self._skip_to(batch.cursor if upto is None else min(batch.cursor, upto))
        self.eof = whole and batch.eof
        step.done = not whole or batch.eof or not batch.lines
        return step

    def lose(self, upto: int | None) -> int:
        """The proc is gone: the lines up to ``upto`` are missing; how many."""
        return self._skip_to(upto) if upto is not None else 0

    def _skip_to(self, seq: int) -> int:
        gap = max(0, seq - self.cursor)
        self._missing += gap
        self.cursor = max(self.cursor, seq)
        return gap


def _exit_now(sup: Supervisor, proc_id: int, p: Proc) -> ExitInfo | None:
    """How the proc ended, as known now (a proc of another server may have ended
    since ``p`` was read from the history)."""
    try:
        return sup.get(proc_id).exit or p.exit
    except ProcNotFound:  # forgotten meanwhile
        return p.exit


async def _send_hits(
    conn: Conn, req_id: Any, hits: AsyncIterator[SearchHit], limit: int | None
) -> dict[str, Any]:
    """Stream the hits of a search as they are found; its final result.

    The search stops when the client leaves (``Conn.stream`` cancels this),
    and its iterator is closed either way, so that no scan goes on for nobody.
    """
    found = 0
    try:
        async for hit in hits:
            await conn.send(hit_message(req_id, hit))
            found += 1
    finally:
        aclose = getattr(hits, "aclose", None)
        if aclose is not None:
            await aclose()
    return {"hits": found, "limited": limit is not None and found >= limit}


async def _send_lines(
    conn: Conn, lines: list[Line], cuts: Mapping[int, int], *, first: bool
) -> None:
    for piece in line_pieces(lines, first=first, cuts=cuts):
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


def _opt_int(req: dict[str, Any], key: str, *, minimum: int | None = None) -> int | None:
    return None if req.get(key) is None else _int(req, key, minimum=minimum)


def _opt_number(req: dict[str, Any], key: str) -> float | None:
    value = req.get(key)
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        with contextlib.suppress(OverflowError):  # an int of 400 digits
            return float(value)
    raise ProtocolError("bad-field", f"{req['op']}: '{key}' must be a number")


def _int(
    req: dict[str, Any], key: str, default: int | None = None, *, minimum: int | None = None
) -> int:
    value = req.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ProtocolError("bad-field", f"{req['op']}: '{key}' must be an integer")
    if minimum is not None and value < minimum:
        raise ProtocolError("bad-field", f"{req['op']}: '{key}' must be at least {minimum}")
    return value


def _bool(req: dict[str, Any], key: str, default: bool = False) -> bool:
    value = req.get(key, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ProtocolError("bad-field", f"{req['op']}: '{key}' must be true or false")
    return value


def _stream(req: dict[str, Any]) -> Stream | None:
    """The optional ``stream`` field."""
    stream = _opt_str(req, "stream")
    if stream is not None and stream not in ("stdout", "stderr"):
        raise ProtocolError("bad-field", f"{req['op']}: 'stream' is 'stdout' or 'stderr'")
    return Stream(stream) if stream is not None else None


def _opt_seconds(req: dict[str, Any], key: str) -> float | None:
    """An optional positive, finite number of seconds."""
    try:
        return check_timeout(req.get(key), key)
    except (ValueError, OverflowError):
        raise ProtocolError(
            "bad-field", f"{req['op']}: '{key}' must be a positive number of seconds"
        ) from None


#: The fields of each kind of readiness check; ``interval`` and ``timeout`` go with any.
_READY_KINDS: dict[str, frozenset[str]] = {
    "line": frozenset({"line", "regex", "stream"}),
    "port": frozenset({"port", "host"}),
    "command": frozenset({"command"}),
    "shell": frozenset({"shell"}),
}
_READY_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "line": ((str,), "a string"),
    "regex": ((bool,), "true or false"),
    "stream": ((str,), "'stdout' or 'stderr'"),
    "port": ((int,), "an integer"),
    "host": ((str,), "a string"),
    "command": ((list,), "a list of strings"),
    "shell": ((str,), "a string"),
    "interval": ((int, float), "a number of seconds"),
    "timeout": ((int, float), "a number of seconds"),
}


def _ready_check(req: dict[str, Any]) -> Ready | None:
    """``run``'s ``ready`` field as a Ready (None if absent); bad-field otherwise."""
    spec = req.get("ready")
    if spec is None:
        return None
    try:
        if not isinstance(spec, dict):
            raise ValueError(
                'an object with one of "line", "port", "command" or "shell" is expected'
            )
        kinds = [kind for kind in _READY_KINDS if kind in spec]
        if len(kinds) != 1:
            raise ValueError('give exactly one of "line", "port", "command" or "shell"')
        extra = set(spec) - _READY_KINDS[kinds[0]] - {"interval", "timeout"}
        if extra:
            raise ValueError(f"a {kinds[0]} check takes no {sorted(extra)[0]!r}")
        for key, value in spec.items():
            types, what = _READY_TYPES[key]
            if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
                raise ValueError(f"{key!r} must be {what}")
        if spec.get("stream") not in (None, "stdout", "stderr"):
            raise ValueError("'stream' is 'stdout' or 'stderr'")
        if spec.get("host") == "":
            raise ValueError("'host' is empty")
        return Ready.of(spec)
    except (ValueError, TypeError, OverflowError) as exc:  # InvalidArgv, InvalidPattern too
        raise ProtocolError("bad-field", f"run: 'ready': {exc}") from None
