"""The server's answers: one method a request verb (run, out, search, events, term, ...).

``Handlers`` dispatches a request to its verb and turns what goes wrong into an
error reply; it holds one part per verb family, each giving a table of its
verbs: the verbs that act on procs (``_ProcVerbs``, here),
:mod:`._handlers_streams` (out, search, events), :mod:`._handlers_agent`
(wait_for, ready, excerpt, write) and :mod:`._handlers_workspaces` (up, down,
workspaces, sessions); what they share is in :mod:`._handlers_base`.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Mapping, Sequence
from typing import Any

from .. import __version__
from ..core import (
    CommandState,
    InvalidField,
    ProcNotFound,
    ProcwindowError,
    StdinClosed,
    Supervisor,
    commands_table,
    idx_rows,
)
from ..core.spec import VERBS
from ._conn import ClientGone, Conn
from ._handlers_agent import _AgentVerbs
from ._handlers_base import Handler, _Replied, runtime
from ._handlers_streams import _StreamVerbs
from ._handlers_workspaces import _WorkspaceVerbs
from ._protocol import (
    ENVELOPE,
    OLDEST_PROTOCOL,
    PROTOCOL_VERSION,
    HistoryUnavailable,
    decode_request,
    encode,
    exit_to_json,
    proc_to_json,
)
from ._replies import error_message, ok_message, os_error_message

__all__ = ["Handlers"]

log = logging.getLogger("procwindow.control")


class Handlers:
    """Answers the requests of every connection to one supervisor.

    ``declared`` names sessions and agents that exist before any process does
    (from a workspace), for ``sessions``.
    """

    def __init__(self, supervisor: Supervisor, declared: Mapping[str, Sequence[str]]) -> None:
        self._verbs: dict[str, Handler] = {
            **_ProcVerbs(supervisor).verbs(),
            **_StreamVerbs(supervisor).verbs(),
            **_AgentVerbs(supervisor).verbs(),
            **_WorkspaceVerbs(supervisor, declared).verbs(),
        }

    async def answer(self, line: bytes, conn: Conn) -> None:
        """Carry out one request line and send its reply (errors included).

        The handler of a verb gets the request's fields checked by the verb's spec
        (:data:`procwindow.core.spec.VERBS`), absent ones at their defaults, plus
        the request's ``id`` and ``op``.
        """
        req_id: Any = None
        op = "request"
        version = PROTOCOL_VERSION
        try:
            req = decode_request(line)
            req_id = req.get("id")
            op = req["op"]
            version = req.get("v", PROTOCOL_VERSION)
            args = VERBS[op].check(req, ignore=ENVELOPE) | {"id": req_id, "op": op}
            result = await self._verbs[op](args, conn)
        except _Replied:
            return
        except StdinClosed as exc:  # a BrokenPipeError, but the child's, not the client's
            message = error_message(req_id, exc, version=version)
        except (ClientGone, ConnectionError):
            raise
        except ProcwindowError as exc:
            message = error_message(req_id, exc, version=version)
        except (TypeError, ValueError) as exc:
            message = error_message(req_id, InvalidField(op, "", f"{op}: {exc}"), version=version)
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


class _ProcVerbs:
    """The verbs that act on procs, and ``hello``."""

    def __init__(self, sup: Supervisor) -> None:
        self.sup = sup

    def verbs(self) -> dict[str, Handler]:
        return {
            "hello": self._hello,
            "run": self._run,
            "top": self._top,
            "idx": self._idx,
            "procs": self._procs,
            "get": self._get,
            "ports": self._ports,
            "tree": self._tree,
            "history": self._history,
            "stats": self._stats,
            "term": self._term,
            "kill": self._kill,
            "interrupt": self._interrupt,
            "signal": self._signal,
            "dismiss": self._dismiss,
            "forget": self._forget,
            "restart": self._restart,
        }

    async def _stats(self, req: dict[str, Any], conn: Conn) -> Any:
        """Resource use of each live proc of ``procs`` (ids not live are left out)."""
        out = []
        for proc_id in dict.fromkeys(req["procs"]):
            try:
                st = self.sup.stats(proc_id)
            except ProcNotFound:
                continue
            out.append({"proc": proc_id} | dataclasses.asdict(st))
        return {"stats": out}

    async def _hello(self, req: dict[str, Any], conn: Conn) -> Any:
        return {
            "protocol": PROTOCOL_VERSION,
            "protocols": list(range(OLDEST_PROTOCOL, PROTOCOL_VERSION + 1)),
            "server": f"procwindow {__version__}",
            "pid": os.getpid(),
        }

    async def _run(self, req: dict[str, Any], conn: Conn) -> Any:
        reuse = req["reuse"]
        # spawn does not yield before it picks a running copy to reuse, so the ids
        # known now tell a reused proc from a new one.
        known = {p.id for p in self.sup.procs()} if reuse else set()
        p = await self.sup.spawn(
            req["argv"],
            session=req["session"],
            agent=req["agent"],
            tool=req["tool"],
            cwd=req["cwd"],
            env=req["env"],
            graceful_timeout=req["graceful_timeout"],
            stop_signal=req["stop_signal"],
            stop_command=req["stop_command"],
            timeout=req["timeout"],
            merge_stderr=req["merge_stderr"],
            stdin=req["stdin"],
            pty=req["pty"],
            rows=req["rows"],
            cols=req["cols"],
            ready=req["ready"],
            reuse=reuse,
        )
        return {"id": p.id, "os_pid": p.os_pid, "reused": p.id in known}

    async def _top(self, req: dict[str, Any], conn: Conn) -> Any:
        session, agent = req["session"], req["agent"]
        text = self.sup.top(session, agent)
        states = self._states(session, agent)
        if states:  # what the workspaces' commands do, waiting ones included
            text += "\n" + commands_table(states)
        return {"text": text, "commands": [st.to_json() for st in states]}

    async def _idx(self, req: dict[str, Any], conn: Conn) -> Any:
        session, agent = req["session"], req["agent"]
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
        procs = self.sup.procs(req["session"], req["agent"])
        return [proc_to_json(p, runtime(self.sup, p)) for p in procs]

    async def _get(self, req: dict[str, Any], conn: Conn) -> Any:
        p = self.sup.get(req["proc"])
        return proc_to_json(p, runtime(self.sup, p))

    async def _ports(self, req: dict[str, Any], conn: Conn) -> Any:
        ports = await self.sup.ports(req["proc"])
        return {"ports": [dataclasses.asdict(p) for p in ports]}

    async def _tree(self, req: dict[str, Any], conn: Conn) -> Any:
        return {"tree": [dataclasses.asdict(p) for p in await self.sup.tree(req["proc"])]}

    async def _history(self, req: dict[str, Any], conn: Conn) -> Any:
        if not self.sup.history_enabled:
            raise HistoryUnavailable(self.sup.history_error)
        procs = self.sup.history(
            session=req["session"],
            agent=req["agent"],
            tool=req["tool"],
            reason=req["reason"],
            since=req["since"],
            limit=req["limit"],
            command=req["command"],
        )
        return [proc_to_json(p, runtime(self.sup, p)) for p in procs]

    async def _term(self, req: dict[str, Any], conn: Conn) -> Any:
        proc_id = req["proc"]
        # A crash loop waiting for its next attempt ends here too: the person
        # asked its latest run to stop.
        for run in self.sup.workspaces:
            state = run.state_of(proc_id)
            if state is not None and state.proc_id == proc_id:
                run.cancel_restart(state.name)
        return exit_to_json(await self.sup.term(proc_id))

    async def _kill(self, req: dict[str, Any], conn: Conn) -> Any:
        return exit_to_json(await self.sup.kill(req["proc"]))

    async def _interrupt(self, req: dict[str, Any], conn: Conn) -> Any:
        return {"delivered": await self.sup.interrupt(req["proc"])}

    async def _signal(self, req: dict[str, Any], conn: Conn) -> Any:
        sent = await self.sup.signal(req["proc"], req["signal"], os_pid=req["os_pid"])
        return {"sent": sent}

    async def _dismiss(self, req: dict[str, Any], conn: Conn) -> Any:
        self.sup.dismiss(req["proc"])
        return {}

    async def _forget(self, req: dict[str, Any], conn: Conn) -> Any:
        self.sup.forget(req["proc"])
        return {}

    async def _restart(self, req: dict[str, Any], conn: Conn) -> Any:
        p = await self.sup.restart(req["proc"])
        return {"id": p.id, "os_pid": p.os_pid}
