"""The server's answers: one method a request verb (run, out, search, events, term, ...).

``Handlers`` dispatches a request to its verb and turns what goes wrong into an
error reply; the verbs that act on procs are here, the other families are its
base classes: :mod:`._handlers_streams` (out, search, events),
:mod:`._handlers_agent` (wait_for, ready, excerpt, write) and
:mod:`._handlers_workspaces` (up, down, workspaces, sessions); the request
fields are read by :mod:`._handlers_base`.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from .. import __version__
from ..core import (
    DEFAULT_TOOL,
    ExitReason,
    ProcNotFound,
    ProcwindowError,
    StdinClosed,
    Supervisor,
    check_graceful_timeout,
    command_argv,
)
from ..core._orchestra import CommandState, commands_table, idx_rows
from ..core.rules import check_tool
from ._conn import ClientGone, Conn
from ._handlers_agent import _AgentVerbs
from ._handlers_base import (
    _bool,
    _int,
    _opt_int,
    _opt_number,
    _opt_seconds,
    _opt_str,
    _ready_check,
    _Replied,
    _str,
)
from ._handlers_streams import _StreamVerbs
from ._handlers_workspaces import _WorkspaceVerbs
from ._protocol import (
    PROTOCOL_VERSION,
    HistoryUnavailable,
    ProtocolError,
    decode_request,
    encode,
    exit_to_json,
    proc_to_json,
)
from ._replies import error_message, ok_message, os_error_message

__all__ = ["Handlers"]

log = logging.getLogger("procwindow.control")

Handler = Callable[[dict[str, Any], Conn], Awaitable[Any]]


class Handlers(_StreamVerbs, _AgentVerbs, _WorkspaceVerbs):
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


#: The reasons a proc can end with, for ``history``'s filter.
_REASONS = frozenset(r.value for r in ExitReason)
