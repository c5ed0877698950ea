"""Keeping RemoteSupervisor's mirror current: the events connection (followed, and
opened again with backoff when it drops), each event applied to the procs, a
snapshot's difference applied after a gap, and the lines of mirrored procs
fetched by cursor, with the events that announce them held until they are here.

The layer above :mod:`._remote_calls` and below :mod:`.remote`.
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
    EventKind,
    ExitInfo,
    ExitReason,
    Line,
    Phase,
    PhaseEvent,
    ProcNotFound,
    ProcState,
    SupervisorClosed,
)
from ._links import Disconnected, LinkError
from ._protocol import HistoryUnavailable
from ._remote_calls import _Calls
from ._remote_lines import _STREAMS, _Deferred, _line, _Mirror, _Subject
from ._remote_procs import RemoteProc
from ._remote_workspaces import runs_from_json
from .aclient import AsyncClient
from .client import ServerError

__all__ = ["BACKOFF_MAX", "BACKOFF_MIN", "EXIT_HOLD", "FETCH_LINES"]

log = logging.getLogger("procwindow.remote")

#: Seconds before the first attempt to reconnect; doubled each failure up to BACKOFF_MAX.
BACKOFF_MIN = 0.1
BACKOFF_MAX = 5.0
#: A link that stayed up this long starts its next backoff from BACKOFF_MIN again.
_STABLE = 10.0
#: Lines asked for per ``out`` request (about 0.5 MB of JSON for 100-byte lines).
FETCH_LINES = 5000
#: Seconds an exit of a mirrored proc waits for its last lines before it is published.
EXIT_HOLD = 0.25
#: After an exit, seconds between looks for the end of the output (a descendant
#: may hold the pipes), then it is left to the next event.
_EOF_POLLS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0)
#: Past procs (dismissed, or from the history) remembered for ``get``.
_PAST_PROCS = 10_000


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
            value = _STREAMS[value]
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


class _MirrorSync(_Calls):
    """The events followed and applied, and the lines fetched (see the module's docstring)."""

    # -- the events connection ---------------------------------------------------------

    async def _establish(self) -> AsyncGenerator[dict[str, Any], None]:
        """Subscribe, take the snapshot, apply it; the events stream."""
        self._linking = True
        client: AsyncClient | None = None
        stream: AsyncGenerator[dict[str, Any], None] | None = None
        try:
            client = await self._link.open()
            self._clients.add(client)
            stream = client.stream("events", pattern=">")
            await anext(stream)  # subscribed: from here on no event is lost
            records = await self._call("procs")
            try:
                await self._call("history", limit=1)
                self._history_on = True
            except HistoryUnavailable:
                self._history_on = False
            self._apply_snapshot(records)
            await self._refresh_workspaces()
        except BaseException as exc:
            if stream is not None:
                await stream.aclose()
            self._drop_clients()
            self._linking = False
            if isinstance(exc, ServerError):
                raise Disconnected(f"{self.where}: {exc}") from None
            raise
        self._linking = False
        self._connected = True
        for p in self._all_procs():
            p._disconnected = False
        for m in self._mirrors.values():
            m.news = True
            self._pull(m)
        self._notify("connected")
        return stream

    async def _follow(self, stream: AsyncGenerator[dict[str, Any], None] | None) -> None:
        """Apply the events; on a drop, reconnect with backoff until closed."""
        backoff = BACKOFF_MIN
        while True:
            if stream is not None:
                since = time.monotonic()
                error = "the connection to the server closed"
                try:
                    async for message in stream:
                        event = message.get("event")
                        if isinstance(event, dict):
                            await self._on_event(event)
                except (ServerError, LinkError, OSError) as exc:
                    error = str(exc)
                except Exception as exc:
                    log.exception("following %s failed", self.where)
                    error = f"{type(exc).__name__}: {exc}"
                finally:
                    await stream.aclose()
                stream = None
                self._lost(error)
                if time.monotonic() - since > _STABLE:
                    backoff = BACKOFF_MIN
            if self._closed or not self._reconnect:
                return
            await asyncio.sleep(backoff * random.uniform(0.8, 1.2))
            backoff = min(backoff * 2, BACKOFF_MAX)
            try:
                stream = await self._establish()
            except LinkError as exc:
                self._last_error = str(exc)
                self._notify("disconnected")

    def _lost(self, error: str) -> None:
        self._connected = False
        self._last_error = error
        self._drop_clients()
        for p in self._all_procs():
            p._disconnected = True
        if not self._closed:
            log.warning("lost the link to %s: %s", self.where, error)
            self._notify("disconnected")

    # -- events ---------------------------------------------------------------------------

    def _publish(
        self, subject: _Subject | RemoteProc, kind: EventKind, at: float | None, **f: Any
    ) -> None:
        self._hub.publish(subject, kind, at=at, **f)

    async def _on_event(self, d: dict[str, Any]) -> None:
        if d.get("kind") == EventKind.MISSED.value:
            await self._resync()
            return
        try:
            kind = EventKind(str(d.get("kind")))
            pid = int(d["proc"])
            subject = _Subject(pid, str(d["session"]), str(d["agent"]))
            at = float(d["time"])
            fields = _event_fields(d)
        except (KeyError, ValueError, TypeError):
            return  # a kind or a shape this client does not know
        allowed = _PHASE_FIELDS if kind is EventKind.PHASE else _KIND_FIELDS.get(kind)
        if allowed is not None:
            fields = {k: v for k, v in fields.items() if k in allowed}
        match kind:
            case EventKind.START:
                await self._on_start(subject, at, fields)
            case EventKind.STOPPING:
                p = self._live.get(pid)
                if p is not None and p._set_stopping():
                    self._publish(p, kind, at)
            case EventKind.READY:
                p = self._live.get(pid)
                if p is not None and p._set_ready():
                    self._publish(p, kind, at)
            case EventKind.EXIT:
                p = self._live.get(pid)
                if p is not None and p.exit is None:
                    self._on_exit(p, at, fields)
            case EventKind.DISMISS:
                self._on_dismiss(pid, at)
            case EventKind.OUTPUT | EventKind.PARTIAL:
                self._on_output(subject, kind, at, fields)
            case EventKind.PHASE:
                await self._on_phase(pid, fields)
                self._publish(subject, kind, at, **fields)
            case _:
                self._publish(subject, kind, at, **fields)
        if d.get("missed"):
            await self._resync()

    async def _on_start(self, subject: _Subject, at: float, fields: dict[str, Any]) -> None:
        pid = subject.id
        if pid in self._live:
            return
        record = self._records.pop(pid, None)
        if record is None:
            records = await self._call("procs", session=subject.session, agent=subject.agent)
            for r in records:
                if r["id"] not in self._live:
                    self._records[r["id"]] = r
            record = self._records.pop(pid, None)
        if record is None:  # gone already (dismissed): its dismiss event follows
            return
        p = self._past.pop(pid, None)
        if p is None:
            p = RemoteProc(record, time.monotonic())
        else:
            p._take(record, time.monotonic())
        p._as_started()  # its stopping and exit are told by their own events
        p._disconnected = False
        self._live[pid] = p
        self._publish(p, EventKind.START, at, **fields)
        self._resolve(self._known, pid, p)

    def _on_exit(self, p: RemoteProc, at: float | None, fields: dict[str, Any]) -> None:
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
        self._resolve(self._exits, p.id, info)
        m = self._mirrors.get(p.id)
        if m is None or (m.fetched and m.eof and m.end >= p.last_seq):
            self._publish(p, EventKind.EXIT, at, **fields)
            return
        # Its last lines first (and the end of its output), as in process.
        m.target = max(m.target, p.last_seq)
        m.deferred.append(self._event(p, EventKind.EXIT, at, fields))
        if m.hold is None:
            m.hold = asyncio.get_running_loop().call_later(EXIT_HOLD, self._flush, m)
        self._pull(m)

    def _on_dismiss(self, pid: int, at: float | None) -> None:
        p = self._live.pop(pid, None)
        if p is None:
            return
        p._on = False
        self._remember(p)
        self._stats.pop(pid, None)
        self._publish(p, EventKind.DISMISS, at)

    def _on_output(
        self, subject: _Subject, kind: EventKind, at: float, fields: dict[str, Any]
    ) -> None:
        p = self._live.get(subject.id) or self._past.get(subject.id)
        last = fields.get("last_seq")
        if p is not None and isinstance(last, int):
            p._last = max(p._last, last)
        m = self._mirrors.get(subject.id)
        if m is None or (kind is EventKind.OUTPUT and isinstance(last, int) and m.end >= last):
            self._publish(p or subject, kind, at, **fields)
            return
        if isinstance(last, int):
            m.target = max(m.target, last)
        if kind is EventKind.PARTIAL:
            m.news = True
        m.deferred.append(self._event(p or subject, kind, at, fields))
        self._pull(m)

    @staticmethod
    def _event(
        subject: _Subject | RemoteProc, kind: EventKind, at: float | None, fields: dict[str, Any]
    ) -> _Deferred:
        """An event to publish once the lines it follows are here."""
        return _Deferred(subject, kind, at, fields)

    def _flush(self, m: _Mirror) -> None:
        """Publish the events that waited for ``m``'s lines."""
        if m.hold is not None:
            m.hold.cancel()
            m.hold = None
        deferred, m.deferred = m.deferred, []
        for item in deferred:
            self._publish(item.subject, item.kind, item.at, **item.fields)

    def _resolve(self, waiters: dict[int, list[asyncio.Future[Any]]], pid: int, value: Any) -> None:
        for fut in waiters.pop(pid, ()):
            if not fut.done():
                fut.set_result(value)

    def _remember(self, p: RemoteProc) -> None:
        self._past[p.id] = p
        self._past.move_to_end(p.id)
        while len(self._past) > _PAST_PROCS:
            self._past.popitem(last=False)

    # -- workspaces ---------------------------------------------------------------------

    async def _refresh_workspaces(self) -> None:
        """Take the server's running workspaces whole (an older server has none)."""
        try:
            self._workspace_runs = runs_from_json(await self._call("workspaces"))
        except ServerError as exc:
            if exc.code != "unknown-op":
                raise
            self._workspace_runs = []
        except ValueError as exc:
            log.warning("%s: cannot read its workspaces: %s", self.where, exc)
            self._workspace_runs = []

    async def _on_phase(self, pid: int, fields: dict[str, Any]) -> None:
        """A command's phase changed: its mirrored state follows, before the event
        is published (a workspace not seen yet is fetched first)."""
        name = fields.get("workspace")
        run = next((r for r in self._workspace_runs if r.name == name), None)
        if run is None or not run.apply(pid, fields):
            await self._refresh_workspaces()
            return
        if run.settled:  # perhaps stopped whole: the server's list says
            self._spawn_task(self._refresh_quietly(), "procwindow remote workspaces")

    async def _refresh_quietly(self) -> None:
        try:
            await self._refresh_workspaces()
        except (ServerError, Disconnected, SupervisorClosed):
            pass  # the next link's snapshot takes them again

    async def _resync(self) -> None:
        """Events were lost: take a snapshot and apply the difference."""
        self._apply_snapshot(await self._call("procs"))
        await self._refresh_workspaces()
        for m in self._mirrors.values():
            m.news = True
            self._pull(m)

    def _apply_snapshot(self, records: list[dict[str, Any]]) -> None:
        """Make the live procs those of ``records``, publishing the differences as events."""
        now = time.monotonic()
        self._records.clear()
        seen = set()
        for record in sorted(records, key=lambda r: int(r["id"])):
            pid = int(record["id"])
            seen.add(pid)
            p = self._live.get(pid)
            if p is None:
                p = self._past.pop(pid, None) or RemoteProc(record, now)
                p._take(record, now)
                p._disconnected = False
                self._live[pid] = p
                self._publish(p, EventKind.START, None, os_pid=p.os_pid, tool=p.tool, cmd=p.cmd)
                if p.exit is not None:
                    self._publish(p, EventKind.EXIT, p.ended_at, **self._exit_fields(p))
                self._resolve(self._known, pid, p)
                continue
            state, exit_, ready = p.state, p.exit, p.ready
            p._take(record, now)
            p._disconnected = False
            if not ready and p.ready:
                self._publish(p, EventKind.READY, None)
            if exit_ is None and p.exit is not None:
                info = p.exit
                p._exit = None  # _on_exit applies it, and holds it for the lines if need be
                self._on_exit(p, p.ended_at, self._exit_fields(p, info))
            elif state is ProcState.RUNNING and p.state is ProcState.STOPPING:
                self._publish(p, EventKind.STOPPING, None)
            elif exit_ is not None and p.exit is None:  # cannot come back to life
                p._exited(exit_, p.ended_at)
        for pid in [pid for pid in self._live if pid not in seen]:
            self._on_dismiss(pid, None)

    @staticmethod
    def _exit_fields(p: RemoteProc, info: ExitInfo | None = None) -> dict[str, Any]:
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

    # -- lines ------------------------------------------------------------------------------

    def _pull(self, m: _Mirror) -> None:
        """Fetch what ``m`` lacks, in a task of its own (unless one runs)."""
        if (m.task is None or m.task.done()) and self._connected and not self._closed:
            m.task = self._spawn_task(self._pull_lines(m), f"procwindow remote lines {m.id}")

    async def _pull_lines(self, m: _Mirror) -> None:
        polls = retries = 0
        while self._connected and not self._closed and self._mirrors.get(m.id) is m:
            try:
                if m.backfill is not None:
                    await self._backfill(m)
                    continue
                p = self._live.get(m.id) or self._past.get(m.id)
                ended = p is None or p.exit is not None or not p.live
                behind = not m.fetched or m.end < m.target or m.news or m.more
                if not behind and not (ended and not m.eof):
                    break
                if not behind:  # only the end of its output is awaited
                    if polls >= len(_EOF_POLLS):
                        break
                    await asyncio.sleep(_EOF_POLLS[polls])
                    polls += 1
                m.news = False
                reply = await self._call(
                    "out", proc_id=m.id, proc=m.id, since=m.end, limit=FETCH_LINES, partial=True
                )
            except ProcNotFound:
                m.gone = True
                break
            except (Disconnected, SupervisorClosed):
                # One connection went (its ssh was killed, say): while the link
                # holds, try again; else the lines are fetched once it is back.
                retries += 1
                if not self._connected or retries > 5:
                    return
                await asyncio.sleep(0.05 * retries)
                continue
            if self._mirrors.get(m.id) is not m:
                return
            new = m.take(reply)
            # A full reply: more is there already; go on without waiting for an event.
            m.more = len(reply.get("lines", ())) >= FETCH_LINES
            if p is not None:
                p._last = max(p._last, m.end)
            if new and not any(d.kind is EventKind.OUTPUT for d in m.deferred):
                self._announce(m, new)
            if m.end >= m.target and not (m.news or m.more) and (m.eof or not ended):
                self._flush(m)
            await asyncio.sleep(0)  # the window draws between batches
        self._flush(m)

    async def _backfill(self, m: _Mirror) -> None:
        """Fetch the lines before ``m.start`` from ``m.backfill`` on."""
        since = m.backfill
        assert since is not None
        start = m.start
        got: list[Line] = []
        cursor = since
        while cursor < start:
            reply = await self._call(
                "out", proc_id=m.id, proc=m.id, since=cursor, limit=FETCH_LINES
            )
            lines = [_line(d) for d in reply.get("lines", ())]
            got += [line for line in lines if line.seq <= start]
            after = int(reply.get("cursor", cursor))
            if after <= cursor or not lines:
                break
            cursor = after
        if self._mirrors.get(m.id) is not m or m.start != start:
            return
        m.backfill = None if m.backfill == since else m.backfill
        m.lines[0:0] = got
        m.start = since
        if got:
            self._announce(m, got)

    def _announce(self, m: _Mirror, new: list[Line]) -> None:
        """Tell the readers of ``m`` that lines arrived."""
        p = self._live.get(m.id) or self._past.get(m.id)
        if p is None:
            return
        self._publish(
            p,
            EventKind.OUTPUT,
            None,
            stream=new[-1].stream,
            first_seq=new[0].seq,
            last_seq=new[-1].seq,
        )
