"""The lines of the procs read through a RemoteSupervisor: at most MIRRORED_PROCS
of them held, each in a ``_Mirror`` (a buffer that takes ``out`` replies and
answers ``read`` by cursor), fetched by cursor by ``_Reader``, which holds the
events that announce lines or an exit until those lines are here.

``_Reader`` is a part of RemoteSupervisor over :mod:`._remote_calls`; the events
that make it fetch come from :mod:`._remote_sync`.
"""

from __future__ import annotations

import asyncio
import bisect
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, NamedTuple

from ..core import EventHub, EventKind, Line, ProcNotFound, ReadBatch, Stream, SupervisorClosed
from ._links import Disconnected
from ._remote_calls import _Calls
from ._remote_procs import RemoteProc, _Procs

__all__ = ["EXIT_HOLD", "FETCH_LINES", "MIRRORED_PROCS", "MIRROR_LINES"]

#: Lines held per mirrored proc (the OutputModel keeps 100,000).
MIRROR_LINES = 200_000
#: Procs whose lines are mirrored at once; reading another drops the least recently read.
MIRRORED_PROCS = 16
#: Lines asked for per ``out`` request (about 0.5 MB of JSON for 100-byte lines).
FETCH_LINES = 5000
#: Seconds an exit of a mirrored proc waits for its last lines before it is published.
EXIT_HOLD = 0.25
#: After an exit, seconds between looks for the end of the output (a descendant
#: may hold the pipes), then it is left to the next event.
_EOF_POLLS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0)
_STREAMS = {"stdout": Stream.STDOUT, "stderr": Stream.STDERR}


class _Subject(NamedTuple):
    """What an event is about, for publishing it (a proc, or a workspace command)."""

    id: int
    session: str
    agent: str


class _Deferred(NamedTuple):
    """An event held back until the lines it follows are here."""

    subject: _Subject | RemoteProc
    kind: EventKind
    at: float | None
    fields: dict[str, Any]


# -- lines ---------------------------------------------------------------------------


_new_tuple = tuple.__new__


def _line(d: Mapping[str, Any]) -> Line:
    # A reply may hold thousands of lines: no NamedTuple __new__ keyword handling.
    return _new_tuple(
        Line,
        (
            d["seq"],
            _STREAMS[d["stream"]],
            d["time"],
            d["text"],
            d.get("split", False),
            d.get("partial", False),
        ),
    )


def _seq(line: Line) -> int:
    return line.seq


class _Mirror:
    """The lines of one proc held here: every seq in ``(start, end]`` is in
    ``lines`` or missing for good (cut). ``target`` is the newest seq known to
    exist; ``deferred`` the events that wait for the lines they announce."""

    __slots__ = (
        "backfill",
        "deferred",
        "end",
        "eof",
        "fetched",
        "gone",
        "hold",
        "id",
        "lines",
        "more",
        "news",
        "partials",
        "start",
        "target",
        "task",
    )

    def __init__(self, proc_id: int, since: int) -> None:
        self.id = proc_id
        self.lines: list[Line] = []
        self.start = self.end = self.target = since
        self.eof = False
        self.fetched = False
        self.gone = False
        self.news = False  # a partial line changed: ask again
        self.more = False  # the last reply was full: there is more
        self.partials: list[Line] = []
        self.backfill: int | None = None
        self.deferred: list[_Deferred] = []
        self.hold: asyncio.TimerHandle | None = None
        self.task: asyncio.Task[None] | None = None

    def read(
        self, since: int, limit: int | None, stream: Stream | None, partial: bool
    ) -> ReadBatch:
        if since < self.start or since >= self.end:  # before what is held (being fetched)
            shown = self._partials(since, stream) if partial and since == self.end else []
            return ReadBatch(shown, 0, since, self.eof and since >= self.end)
        lines = self.lines
        first = bisect.bisect_right(lines, since, key=_seq)
        if stream is None:
            stop = len(lines) if limit is None else min(len(lines), first + limit)
            out = lines[first:stop]
            limited = stop < len(lines)
        else:
            out = []
            limited = False
            for line in lines[first:]:
                if line.stream is stream:
                    if limit is not None and len(out) >= limit:
                        limited = True
                        break
                    out.append(line)
        cursor = out[-1].seq if limited else self.end
        held = bisect.bisect_right(lines, cursor, key=_seq) - first
        dropped = max(0, cursor - since - held)
        if partial and not limited:
            out = out + self._partials(cursor, stream)
        return ReadBatch(out, dropped, cursor, self.eof and cursor >= self.end)

    def _partials(self, cursor: int, stream: Stream | None) -> list[Line]:
        return [
            p for p in self.partials if p.seq > cursor and (stream is None or p.stream is stream)
        ]

    def take(self, reply: Mapping[str, Any]) -> list[Line]:
        """Hold the lines of an ``out`` reply that reads on from ``end``; the new ones."""
        end = self.end
        lines = [_line(d) for d in reply.get("lines", ())]
        new = [line for line in lines if line.seq > end and not line.partial]
        partials = [line for line in lines if line.partial] if lines and lines[-1].partial else []
        self.lines += new
        self.end = max(self.end, int(reply.get("cursor", self.end)))
        self.target = max(self.target, self.end)
        self.eof = bool(reply.get("eof"))
        self.partials = partials
        self.fetched = True
        excess = len(self.lines) - MIRROR_LINES
        if excess > MIRROR_LINES // 8:
            self.start = self.lines[excess - 1].seq
            del self.lines[:excess]
        return new


class _Reader:
    """The mirrored procs' lines, and the events that wait for them."""

    def __init__(self, calls: _Calls, procs: _Procs, hub: EventHub) -> None:
        self._calls = calls
        self._procs = procs
        self._hub = hub
        self.mirrors: OrderedDict[int, _Mirror] = OrderedDict()

    def read(
        self, proc_id: int, since: int, limit: int | None, want: Stream | None, partial: bool
    ) -> ReadBatch:
        """The lines held after ``since``; those not held yet are fetched."""
        m = self.mirrors.get(proc_id)
        if m is None:
            m = self.mirrors[proc_id] = _Mirror(proc_id, since)
            while len(self.mirrors) > MIRRORED_PROCS:
                _, old = self.mirrors.popitem(last=False)
                if old.task is not None:
                    old.task.cancel()
                self.flush(old)
        else:
            self.mirrors.move_to_end(proc_id)
        if m.gone:
            raise ProcNotFound(proc_id)
        if since < m.start:
            if m.start - since > MIRROR_LINES // 2:  # too far back: start over from there
                self.flush(m)
                m.lines, m.partials = [], []
                m.start = m.end = since
                m.fetched = m.eof = False
                m.backfill = None
            elif m.backfill is None or since < m.backfill:
                m.backfill = since
        if not m.fetched or m.backfill is not None:
            self._pull(m)
        return m.read(since, limit, want, partial)

    def renew(self) -> None:
        """After a gap: ask for every mirrored proc's lines again, from its cursor."""
        for m in self.mirrors.values():
            m.news = True
            self._pull(m)

    def close(self) -> None:
        for m in self.mirrors.values():
            if m.hold is not None:
                m.hold.cancel()

    # -- events held for their lines ------------------------------------------------------

    def publish_exit(self, p: RemoteProc, at: float | None, fields: dict[str, Any]) -> None:
        """Publish ``p``'s exit, after its last lines (and the end of its output) if
        it is mirrored, as in process; EXIT_HOLD at most."""
        m = self.mirrors.get(p.id)
        if m is None or (m.fetched and m.eof and m.end >= p.last_seq):
            self._hub.publish(p, EventKind.EXIT, at=at, **fields)
            return
        m.target = max(m.target, p.last_seq)
        m.deferred.append(_Deferred(p, EventKind.EXIT, at, fields))
        if m.hold is None:
            m.hold = asyncio.get_running_loop().call_later(EXIT_HOLD, self.flush, m)
        self._pull(m)

    def on_output(
        self, subject: _Subject, kind: EventKind, at: float, fields: dict[str, Any]
    ) -> None:
        """An output (or partial) event: published once its lines are held if the
        proc is mirrored."""
        p = self._procs.find(subject.id)
        last = fields.get("last_seq")
        if p is not None and isinstance(last, int):
            p._last = max(p._last, last)
        m = self.mirrors.get(subject.id)
        if m is None or (kind is EventKind.OUTPUT and isinstance(last, int) and m.end >= last):
            self._hub.publish(p or subject, kind, at=at, **fields)
            return
        if isinstance(last, int):
            m.target = max(m.target, last)
        if kind is EventKind.PARTIAL:
            m.news = True
        m.deferred.append(_Deferred(p or subject, kind, at, fields))
        self._pull(m)

    def flush(self, m: _Mirror) -> None:
        """Publish the events that waited for ``m``'s lines."""
        if m.hold is not None:
            m.hold.cancel()
            m.hold = None
        deferred, m.deferred = m.deferred, []
        for item in deferred:
            self._hub.publish(item.subject, item.kind, at=item.at, **item.fields)

    # -- fetching -------------------------------------------------------------------------

    def _pull(self, m: _Mirror) -> None:
        """Fetch what ``m`` lacks, in a task of its own (unless one runs)."""
        calls = self._calls
        if (m.task is None or m.task.done()) and calls.connected and not calls.closed:
            m.task = calls.spawn_task(self._pull_lines(m), f"procwindow remote lines {m.id}")

    async def _pull_lines(self, m: _Mirror) -> None:
        #: The next batch of a flood, asked for while the last one is taken in
        #: (the server reads and encodes it meanwhile): its ``since``, its request.
        ahead: list[tuple[int, asyncio.Task[Any]]] = []
        try:
            await self._pull_batches(m, ahead)
        finally:
            for _, task in ahead:
                task.cancel()

    def _out(self, m: _Mirror, since: int) -> Any:
        return self._calls.call(
            "out", proc_id=m.id, proc=m.id, since=since, limit=FETCH_LINES, partial=True
        )

    async def _pull_batches(self, m: _Mirror, ahead: list[tuple[int, asyncio.Task[Any]]]) -> None:
        calls = self._calls
        polls = retries = 0
        while calls.connected and not calls.closed and self.mirrors.get(m.id) is m:
            try:
                if m.backfill is not None:
                    await self._backfill(m)
                    continue
                p = self._procs.find(m.id)
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
                since, asked = ahead.pop() if ahead else (-1, None)
                if asked is not None and since != m.end:
                    asked.cancel()
                    asked = None
                reply = await (asked if asked is not None else self._out(m, m.end))
            except ProcNotFound:
                m.gone = True
                break
            except (Disconnected, SupervisorClosed):
                # One connection went (its ssh was killed, say): while the link
                # holds, try again; else the lines are fetched once it is back.
                retries += 1
                if not calls.connected or retries > 5:
                    return
                await asyncio.sleep(0.05 * retries)
                continue
            if self.mirrors.get(m.id) is not m:
                return
            # A full reply: more is there already; go on without waiting for an event.
            m.more = len(reply.get("lines", ())) >= FETCH_LINES
            if m.more:
                cursor = int(reply.get("cursor", m.end))
                ahead.append((cursor, calls.spawn_task(self._out(m, cursor), "procwindow ahead")))
            new = m.take(reply)
            if p is not None:
                p._last = max(p._last, m.end)
            if new and not any(d.kind is EventKind.OUTPUT for d in m.deferred):
                self._announce(m, new)
            if m.end >= m.target and not (m.news or m.more) and (m.eof or not ended):
                self.flush(m)
            await asyncio.sleep(0)  # the window draws between batches
        self.flush(m)

    async def _backfill(self, m: _Mirror) -> None:
        """Fetch the lines before ``m.start`` from ``m.backfill`` on."""
        since = m.backfill
        assert since is not None
        start = m.start
        got: list[Line] = []
        cursor = since
        while cursor < start:
            reply = await self._calls.call(
                "out", proc_id=m.id, proc=m.id, since=cursor, limit=FETCH_LINES
            )
            lines = [_line(d) for d in reply.get("lines", ())]
            got += [line for line in lines if line.seq <= start]
            after = int(reply.get("cursor", cursor))
            if after <= cursor or not lines:
                break
            cursor = after
        if self.mirrors.get(m.id) is not m or m.start != start:
            return
        m.backfill = None if m.backfill == since else m.backfill
        m.lines[0:0] = got
        m.start = since
        if got:
            self._announce(m, got)

    def _announce(self, m: _Mirror, new: list[Line]) -> None:
        """Tell the readers of ``m`` that lines arrived."""
        p = self._procs.find(m.id)
        if p is None:
            return
        self._hub.publish(
            p,
            EventKind.OUTPUT,
            at=None,
            stream=new[-1].stream,
            first_seq=new[0].seq,
            last_seq=new[-1].seq,
        )
