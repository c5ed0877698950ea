"""Keeping RemoteSupervisor's mirror current: ``_Life`` makes the events
connection (subscribed first, then the snapshot taken), follows it, and makes it
again with exponential backoff when it drops; ``_Events`` applies each event to
the procs (an output or exit of a mirrored proc held until its lines are here)
and, after a gap, a snapshot's difference as events.

Two parts of RemoteSupervisor over the others (:mod:`._remote_calls`,
:mod:`._remote_procs`, :mod:`._remote_lines`, :mod:`._remote_workspaces`,
:mod:`._remote_fetched`); ``_Life`` also closes them all.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import time
from collections.abc import AsyncGenerator, Mapping
from typing import Any

from ..core import (
    EventHub,
    EventKind,
    ExitInfo,
    ExitReason,
    Phase,
    PhaseEvent,
    ProcNotFound,
    ProcState,
    Stream,
)
from ._links import Disconnected, LinkError
from ._remote_calls import _Calls
from ._remote_fetched import _Fetched
from ._remote_lines import _Reader
from ._remote_mirror import Subject
from ._remote_procs import RemoteProc, _Procs
from ._remote_workspaces import _Workspaces
from .aclient import AsyncClient
from .client import ServerError

__all__ = ["BACKOFF_MAX", "BACKOFF_MIN"]

log = logging.getLogger("procwindow.remote")

#: Seconds before the first attempt to reconnect; doubled each failure up to BACKOFF_MAX.
BACKOFF_MIN = 0.1
BACKOFF_MAX = 5.0
#: A link that stayed up this long starts its next backoff from BACKOFF_MIN again.
_STABLE = 10.0
#: Seconds ``close`` waits for the requests on their way to the server (dismisses).
_CLOSE_WAIT = 5.0
#: Seconds ``spawn`` waits for its proc's start event before fetching it itself.
_START_WAIT = 5.0
#: Seconds ``term``/``kill`` wait for the exit event after the server's reply.
_EXIT_EVENT_WAIT = 1.0

_BASE_FIELDS = frozenset({"topic", "kind", "proc_id", "session", "agent", "time", "missed"})


def _event_fields(d: Mapping[str, Any]) -> dict[str, Any]:
    """An event message's own fields (by kind), typed as the core's events have them."""
    out: dict[str, Any] = {}
    for key, value in d.items():
        if key in _BASE_FIELDS or key == "proc" or value is None:
            continue
        if key == "reason":
            value = ExitReason(value)
        elif key == "stream":
            value = Stream(value)
        elif key == "phase":
            value = Phase(value)
        elif key == "waiting_for":
            value = tuple(tuple(pair) for pair in value)
        out[key] = value
    return out


#: The fields each kind of event may carry (a newer server's extra fields are left out).
_KIND_FIELDS: dict[EventKind, frozenset[str]] = {
    EventKind.START: frozenset({"os_pid", "tool", "cmd"}),
    EventKind.OUTPUT: frozenset({"stream", "first_seq", "last_seq"}),
    EventKind.PARTIAL: frozenset({"stream", "first_seq", "text"}),
    EventKind.EXIT: frozenset({"code", "signal", "reason", "runtime", "tool", "cmd", "last_seq"}),
    EventKind.STOPPING: frozenset(),
    EventKind.READY: frozenset(),
    EventKind.DISMISS: frozenset(),
}


_PHASE_FIELDS = frozenset(f.name for f in dataclasses.fields(PhaseEvent)) - _BASE_FIELDS


class _Events:
    """The server's events applied to the procs held (see the module's docstring)."""

    def __init__(
        self,
        calls: _Calls,
        procs: _Procs,
        reader: _Reader,
        workspaces: _Workspaces,
        fetched: _Fetched,
        hub: EventHub,
    ) -> None:
        self._calls = calls
        self._procs = procs
        self._reader = reader
        self._workspaces = workspaces
        self._fetched = fetched
        self._hub = hub
        self._records: dict[int, Mapping[str, Any]] = {}  # fetched, start event not yet seen
        #: The server's pid at the last snapshot: another one, and it restarted.
        self._server: int | None = None
        #: Procs of the server before it restarted: not in its live view, kept
        #: in ours with their end as its history has it, until dismissed here.
        self._outlived: set[int] = set()

    async def on_event(self, d: dict[str, Any]) -> None:
        if d.get("kind") == EventKind.MISSED.value:
            await self.resync()
            return
        try:
            kind = EventKind(str(d.get("kind")))
            pid = int(d["proc"])
            subject = Subject(pid, str(d["session"]), str(d["agent"]))
            at = float(d["time"])
            fields = _event_fields(d)
        except (KeyError, ValueError, TypeError):
            return  # a kind or a shape this client does not know
        allowed = _PHASE_FIELDS if kind is EventKind.PHASE else _KIND_FIELDS.get(kind)
        if allowed is not None:
            fields = {k: v for k, v in fields.items() if k in allowed}
        live = self._procs.live
        match kind:
            case EventKind.START:
                await self.on_start(subject, at, fields)
            case EventKind.STOPPING:
                p = live.get(pid)
                if p is not None and p._set_stopping():
                    self._hub.publish(p, kind, at=at)
            case EventKind.READY:
                p = live.get(pid)
                if p is not None and p._set_ready():
                    self._hub.publish(p, kind, at=at)
            case EventKind.EXIT:
                p = live.get(pid)
                if p is not None and p.exit is None:
                    self.on_exit(p, at, fields)
            case EventKind.DISMISS:
                self.on_dismiss(pid, at)
            case EventKind.OUTPUT | EventKind.PARTIAL:
                self._reader.on_output(subject, kind, at, fields)
            case EventKind.PHASE:
                await self._workspaces.on_phase(pid, fields)
                self._hub.publish(subject, kind, at=at, **fields)
            case _:
                self._hub.publish(subject, kind, at=at, **fields)
        if d.get("missed"):
            await self.resync()

    async def on_start(self, subject: Subject, at: float, fields: dict[str, Any]) -> None:
        pid = subject.id
        procs = self._procs
        if pid in procs.live:
            return
        record = self._records.pop(pid, None)
        if record is None:
            records = await self._calls.call("procs", session=subject.session, agent=subject.agent)
            for r in records:
                if r["id"] not in procs.live:
                    self._records[r["id"]] = r
            record = self._records.pop(pid, None)
        if record is None:  # gone already (dismissed): its dismiss event follows
            return
        p = procs.past.pop(pid, None)
        if p is None:
            p = RemoteProc(record, time.monotonic())
        else:
            p._take(record, time.monotonic())
        p._as_started()  # its stopping and exit are told by their own events
        p._disconnected = False
        procs.live[pid] = p
        self._hub.publish(p, EventKind.START, at=at, **fields)
        procs.resolve(procs.started, pid, p)

    def on_exit(self, p: RemoteProc, at: float | None, fields: dict[str, Any]) -> None:
        info = ExitInfo(
            int(fields.get("code", 0)),
            fields.get("signal"),
            fields.get("reason", ExitReason.EXITED),
            float(fields.get("runtime", 0.0)),
        )
        p._exited(info, at)
        last = fields.get("last_seq")
        if isinstance(last, int):
            p._last = max(p._last, last)
        fields = {"tool": p.tool, "cmd": p.cmd, "last_seq": p.last_seq} | fields
        self._procs.resolve(self._procs.exits, p.id, info)
        self._reader.publish_exit(p, at, fields)

    def on_dismiss(self, pid: int, at: float | None) -> None:
        self._outlived.discard(pid)
        p = self._procs.live.pop(pid, None)
        if p is None:
            return
        p._on = False
        self._procs.remember(p)
        self._fetched.forget(pid)
        self._hub.publish(p, EventKind.DISMISS, at=at)

    # -- waiting for an event --------------------------------------------------------------

    async def started(self, pid: int, session: str, agent: str) -> RemoteProc:
        """The proc once its start event was applied (fetched here if it is late)."""
        procs = self._procs
        p = procs.live.get(pid)
        if p is not None:
            return p
        try:
            known = await procs.wait(procs.started, pid, _START_WAIT)
        except TimeoutError:
            known = None
        if known is not None:
            return known
        self._calls.check_link()
        await self.on_start(Subject(pid, session, agent), time.time(), {})
        p = procs.find(pid)
        if p is None:
            raise ProcNotFound(pid)
        return p

    async def exited(self, proc_id: int, info: ExitInfo) -> ExitInfo:
        """``info`` once the proc's exit event was applied (or applied here if late)."""
        procs = self._procs
        p = procs.live.get(proc_id)
        if p is None or p.exit is not None:
            return p.exit if p is not None and p.exit is not None else info
        try:
            known = await procs.wait(procs.exits, proc_id, _EXIT_EVENT_WAIT)
        except TimeoutError:
            known = None
        if known is None and p.exit is None and not self._calls.closed:
            self.on_exit(p, time.time(), exit_fields(p, info))
        return known or info

    # -- snapshots --------------------------------------------------------------------------

    async def snapshot(self) -> None:
        """Take the server's procs and workspaces whole, and apply the difference."""
        records = await self._calls.call("procs")
        server = self._calls.link.server_pid
        if self._server is not None and server != self._server:
            records += await self._outlived_records(records)
        self._server = server
        self._apply_snapshot(records)
        await self._workspaces.refresh()

    async def _outlived_records(self, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The server restarted: the procs held here that its live view lacks,
        as its history has them (how they ended: ``lost`` if they were running),
        so that they stay with their end and output instead of vanishing."""
        listed = {int(r["id"]) for r in records}
        found = []
        for pid in [pid for pid in self._procs.live if pid not in listed]:
            try:
                record = await self._calls.call("get", proc_id=pid, proc=pid)
            except ProcNotFound:  # no history shared with the server before
                continue
            found.append(dict(record, live=True))  # in our live view until dismissed
            self._outlived.add(pid)
        return found

    async def resync(self) -> None:
        """Events were lost: take a snapshot and apply the difference."""
        await self.snapshot()
        self._reader.renew()

    def _apply_snapshot(self, records: list[dict[str, Any]]) -> None:
        """Make the live procs those of ``records``, publishing the differences as events."""
        now = time.monotonic()
        procs = self._procs
        self._records.clear()
        seen = set()
        for record in sorted(records, key=lambda r: int(r["id"])):
            pid = int(record["id"])
            seen.add(pid)
            p = procs.live.get(pid)
            if p is None:
                p = procs.past.pop(pid, None) or RemoteProc(record, now)
                p._take(record, now)
                p._disconnected = False
                procs.live[pid] = p
                self._hub.publish(
                    p, EventKind.START, at=None, os_pid=p.os_pid, tool=p.tool, cmd=p.cmd
                )
                if p.exit is not None:
                    self._hub.publish(p, EventKind.EXIT, at=p.ended_at, **exit_fields(p))
                procs.resolve(procs.started, pid, p)
                continue
            state, exit_, ready = p.state, p.exit, p.ready
            p._take(record, now)
            p._disconnected = False
            if not ready and p.ready:
                self._hub.publish(p, EventKind.READY, at=None)
            if exit_ is None and p.exit is not None:
                info = p.exit
                p._exit = None  # on_exit applies it, and holds it for the lines if need be
                self.on_exit(p, p.ended_at, exit_fields(p, info))
            elif state is ProcState.RUNNING and p.state is ProcState.STOPPING:
                self._hub.publish(p, EventKind.STOPPING, at=None)
            elif exit_ is not None and p.exit is None:  # cannot come back to life
                p._exited(exit_, p.ended_at)
        for pid in [pid for pid in procs.live if pid not in seen and pid not in self._outlived]:
            self.on_dismiss(pid, None)


def exit_fields(p: RemoteProc, info: ExitInfo | None = None) -> dict[str, Any]:
    """The fields of ``p``'s exit event."""
    info = info or p.exit
    assert info is not None
    fields: dict[str, Any] = {
        "code": info.code,
        "reason": info.reason,
        "runtime": info.runtime,
        "tool": p.tool,
        "cmd": p.cmd,
        "last_seq": p.last_seq,
    }
    if info.signal is not None:
        fields["signal"] = info.signal
    return fields


Messages = AsyncGenerator[dict[str, Any], None]


class _Life:
    """The events connection, followed until closed (see the module's docstring)."""

    def __init__(
        self,
        calls: _Calls,
        procs: _Procs,
        reader: _Reader,
        fetched: _Fetched,
        events: _Events,
        hub: EventHub,
        *,
        reconnect: bool,
    ) -> None:
        self._calls = calls
        self._procs = procs
        self._reader = reader
        self._fetched = fetched
        self._events = events
        self._hub = hub
        self._reconnect = reconnect
        self.task: asyncio.Task[None] | None = None

    async def open(self) -> None:
        if self.task is not None or self._calls.closed:
            raise RuntimeError("this RemoteSupervisor is already open or closed")
        stream = await self._establish()
        self.task = asyncio.get_running_loop().create_task(
            self._follow(stream), name=f"procwindow remote {self._calls.where}"
        )

    def open_later(self, error: str) -> None:
        """The server could not be reached (``error``): reach it in the
        background from now on, with the backoff of a dropped link."""
        if self.task is not None or self._calls.closed:
            raise RuntimeError("this RemoteSupervisor is already open or closed")
        self._calls.last_error = error
        self.task = asyncio.get_running_loop().create_task(
            self._follow(None), name=f"procwindow remote {self._calls.where}"
        )

    async def close(self) -> None:
        calls = self._calls
        if calls.closed:
            return
        if calls.sending:  # a dismiss done here is done there too
            await asyncio.wait(set(calls.sending), timeout=_CLOSE_WAIT)
        calls.closed = True
        was = calls.connected
        calls.connected = False
        tasks = [t for t in (self.task, *calls.tasks) if t is not None]
        for task in tasks:
            task.cancel()
        self._reader.close()
        calls.drop_clients()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        await calls.link.aclose()
        self._procs.end_waits()
        self._hub.close()
        if was:
            calls.notify("disconnected")

    async def _establish(self) -> Messages:
        """Subscribe, take the snapshot, apply it; the events stream."""
        calls = self._calls
        calls.linking = True
        # The first request's connection opens beside the events' (over ssh each
        # starts a bridge on the host: at once, not one after the other).
        calls.keep_spare()
        client: AsyncClient | None = None
        stream: Messages | None = None
        try:
            client = await calls.link.open()
            calls.clients.add(client)
            stream = client.stream("events", pattern=">")
            await anext(stream)  # subscribed: from here on no event is lost
            await self._fetched.probe()
            await self._events.snapshot()
        except BaseException as exc:
            if stream is not None:
                await stream.aclose()
            calls.drop_clients()
            calls.linking = False
            if isinstance(exc, ServerError):
                raise Disconnected(f"{calls.where}: {exc}") from None
            raise
        calls.linking = False
        calls.connected = True
        self._procs.mark(disconnected=False)
        self._reader.renew()
        calls.notify("connected")
        calls.link.warm_up()  # the next attach to this server (over ssh) waits for no session
        return stream

    async def _follow(self, stream: Messages | None) -> None:
        """Apply the events; on a drop, reconnect with backoff until closed."""
        calls = self._calls
        backoff = BACKOFF_MIN
        while True:
            if stream is not None:
                since = time.monotonic()
                error = "the connection to the server closed"
                try:
                    async for message in stream:
                        event = message.get("event")
                        if isinstance(event, dict):
                            await self._events.on_event(event)
                except (ServerError, LinkError, OSError) as exc:
                    error = str(exc)
                except Exception as exc:
                    log.exception("following %s failed", calls.where)
                    error = f"{type(exc).__name__}: {exc}"
                finally:
                    await stream.aclose()
                stream = None
                self._lost(error)
                if time.monotonic() - since > _STABLE:
                    backoff = BACKOFF_MIN
            if calls.closed or not self._reconnect:
                return
            await asyncio.sleep(backoff * random.uniform(0.8, 1.2))
            backoff = min(backoff * 2, BACKOFF_MAX)
            try:
                stream = await self._establish()
            except LinkError as exc:
                calls.last_error = str(exc)
                calls.notify("disconnected")

    def _lost(self, error: str) -> None:
        calls = self._calls
        calls.connected = False
        calls.last_error = error
        calls.drop_clients()
        self._procs.mark(disconnected=True)
        if not calls.closed:
            log.warning("lost the link to %s: %s", calls.where, error)
            calls.notify("disconnected")
