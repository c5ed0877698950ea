"""The lines of the procs read through a RemoteSupervisor: at most MIRRORED_PROCS
of them held, each in a ``Mirror`` (a buffer that takes ``out`` replies and
answers ``read`` by cursor), fetched by cursor by ``_Reader``, which holds the
events that announce lines or an exit until those lines are here.

``_Reader`` is a part of RemoteSupervisor over :mod:`._remote_calls`; the events
that make it fetch come from :mod:`._remote_sync`.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any

from ..core import EventHub, EventKind, LineRun, ProcNotFound, RunBatch, Stream, SupervisorClosed
from ._links import Disconnected
from ._protocol import lines_count, runs_from_json
from ._remote_calls import _Calls
from ._remote_mirror import FETCH_LINES, MIRROR_LINES, Deferred, Mirror, Subject
from ._remote_procs import RemoteProc, _Procs

__all__ = ["EXIT_HOLD", "FETCH_LINES", "MIRRORED_PROCS", "MIRROR_LINES"]

#: Procs whose lines are mirrored at once; reading another drops the least recently read.
MIRRORED_PROCS = 16
#: Seconds an exit of a mirrored proc waits for its last lines before it is published.
EXIT_HOLD = 0.25
#: Lines in a reply that say a flood is being read as it comes: the next batch
#: is asked for at once, not once an event announces it.
BUSY_LINES = 1024
#: After an exit, seconds between looks for the end of the output (a descendant
#: may hold the pipes), then it is left to the next event.
_EOF_POLLS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0)


class _Reader:
    """The mirrored procs' lines, and the events that wait for them."""

    def __init__(self, calls: _Calls, procs: _Procs, hub: EventHub) -> None:
        self._calls = calls
        self._procs = procs
        self._hub = hub
        self.mirrors: OrderedDict[int, Mirror] = OrderedDict()

    def read_runs(
        self, proc_id: int, since: int, limit: int | None, want: Stream | None, partial: bool
    ) -> RunBatch:
        """The lines held after ``since``, as runs; those not held yet are fetched."""
        m = self.mirrors.get(proc_id)
        if m is None:
            m = self.mirrors[proc_id] = Mirror(proc_id, since)
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
                m.clear(since)
            elif m.backfill is None or since < m.backfill:
                m.backfill = since
        if not m.fetched or m.backfill is not None:
            self._pull(m)
        return m.read_runs(since, limit, want, partial)

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
        m.deferred.append(Deferred(p, EventKind.EXIT, at, fields))
        if m.hold is None:
            m.hold = asyncio.get_running_loop().call_later(EXIT_HOLD, self.flush, m)
        self._pull(m)

    def on_output(
        self, subject: Subject, kind: EventKind, at: float, fields: dict[str, Any]
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
        m.deferred.append(Deferred(p or subject, kind, at, fields))
        self._pull(m)

    def flush(self, m: Mirror) -> None:
        """Publish the events that waited for ``m``'s lines."""
        if m.hold is not None:
            m.hold.cancel()
            m.hold = None
        deferred, m.deferred = m.deferred, []
        for item in deferred:
            self._hub.publish(item.subject, item.kind, at=item.at, **item.fields)

    # -- fetching -------------------------------------------------------------------------

    def _pull(self, m: Mirror) -> None:
        """Fetch what ``m`` lacks, in a task of its own (unless one runs)."""
        calls = self._calls
        if (m.task is None or m.task.done()) and calls.connected and not calls.closed:
            m.task = calls.spawn_task(self._pull_lines(m), f"procwindow remote lines {m.id}")

    async def _pull_lines(self, m: Mirror) -> None:
        #: The next batch of a flood, asked for while the last one is taken in
        #: (the server reads and encodes it meanwhile): its ``since``, its request.
        ahead: list[tuple[int, int, asyncio.Task[Any]]] = []
        try:
            await self._pull_batches(m, ahead)
        finally:
            for _, _, task in ahead:
                task.cancel()

    def _out(self, m: Mirror, since: int, limit: int) -> Any:
        return self._calls.call(
            "out", proc_id=m.id, proc=m.id, since=since, limit=limit, partial=True, runs=True
        )

    async def _pull_batches(
        self, m: Mirror, ahead: list[tuple[int, int, asyncio.Task[Any]]]
    ) -> None:
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
                since, limit, asked = ahead.pop() if ahead else (-1, m.fetch, None)
                if asked is not None and since != m.end:
                    asked.cancel()
                    asked, limit = None, m.fetch
                reply = await (asked if asked is not None else self._out(m, m.end, limit))
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
            got = lines_count(reply.get("lines", ()))
            # A full reply: more is there already. A busy one (a flood read as it
            # comes): more is likely there by now; either way, ask at once rather
            # than wait for the events that say so, which lag behind a flood.
            m.more = got >= limit or got >= BUSY_LINES
            runs = runs_from_json(reply.get("lines", ()))
            m.pace(runs)
            if got >= limit:
                cursor = int(reply.get("cursor", m.end))
                task = calls.spawn_task(self._out(m, cursor, m.fetch), "procwindow ahead")
                ahead.append((cursor, m.fetch, task))
            new = m.take(reply, runs)
            if p is not None:
                p._last = max(p._last, m.end)
            if new and not any(d.kind is EventKind.OUTPUT for d in m.deferred):
                self._announce(m, new)
            if m.end >= m.target and not (m.news or m.more) and (m.eof or not ended):
                self.flush(m)
            await asyncio.sleep(0)  # the window draws between batches
        self.flush(m)

    async def _backfill(self, m: Mirror) -> None:
        """Fetch the lines before ``m.start`` from ``m.backfill`` on."""
        since = m.backfill
        assert since is not None
        start = m.start
        got: list[LineRun] = []
        cursor = since
        while cursor < start:
            reply = await self._calls.call(
                "out", proc_id=m.id, proc=m.id, since=cursor, limit=m.fetch, runs=True
            )
            runs = runs_from_json(reply.get("lines", ()))
            m.pace(runs)
            got += [
                run if run.last <= start else run._replace(texts=run.texts[: start - run.first + 1])
                for run in runs
                if run.first <= start and not run.partial
            ]
            after = int(reply.get("cursor", cursor))
            if after <= cursor or not runs:
                break
            cursor = after
        if self.mirrors.get(m.id) is not m or m.start != start:
            return
        m.backfill = None if m.backfill == since else m.backfill
        m.prepend(got, since)
        if got:
            self._announce(m, got)

    def _announce(self, m: Mirror, new: list[LineRun]) -> None:
        """Tell the readers of ``m`` that lines arrived."""
        p = self._procs.find(m.id)
        if p is None:
            return
        self._hub.publish(
            p,
            EventKind.OUTPUT,
            at=None,
            stream=new[-1].stream,
            first_seq=new[0].first,
            last_seq=new[-1].last,
        )
