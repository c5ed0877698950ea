"""The verbs that stream: ``out`` (one reply written piece by piece, or
followed), ``search`` (hits as they are found) and ``events``; and
``_LineReader``, which reads a proc's lines for ``out`` and says where lines
are missing.

Apart from :mod:`._handlers` because these answers outlive one request and
reply: they pace themselves on the client, and hold a subscription or a scan
that must end when it leaves.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from ..core import (
    ExitInfo,
    Line,
    LineRun,
    PartialEvent,
    Proc,
    ProcNotFound,
    ReadBatch,
    SearchHit,
    Stream,
    Supervisor,
    runs_of,
    scope_pattern,
)
from ._conn import ClientGone, Conn
from ._handlers_base import Handler, _Replied, runtime
from ._protocol import PROTOCOL_VERSION, dumps, encode, exit_to_json, line_to_json, proc_to_json
from ._replies import (
    event_message,
    hit_message,
    line_pieces,
    lines_head,
    lines_size,
    lines_tail,
    ok_message,
    run_pieces,
    texts_size,
)

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


class _StreamVerbs:
    """``out``, ``search`` and ``events``."""

    def __init__(self, sup: Supervisor) -> None:
        self.sup = sup

    def verbs(self) -> dict[str, Handler]:
        return {"out": self._out, "search": self._search, "events": self._events}

    async def _out(self, req: dict[str, Any], conn: Conn) -> Any:
        proc_id, since, limit, partial = req["proc"], req["since"], req["limit"], req["partial"]
        want = None if req["stream"] is None else Stream(req["stream"])
        req_id = req["id"]
        as_runs = req["runs"]
        if req["follow"]:
            return await conn.stream(
                self._follow(conn, req_id, proc_id, since, want, partial, as_runs)
            )
        await self._out_reply(
            conn, req_id, proc_id, since, want, limit, partial, req["with_proc"], as_runs
        )
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
        with_proc: bool = False,
        as_runs: bool = False,
    ) -> None:
        """One reply line, written piece by piece as the client takes it.

        For a live proc it holds the lines up to the newest one when the request
        came; for a proc of the history (dismissed, of an earlier run or another
        server), every line it has. Lines missing (cut by the disk cap, or the
        proc forgotten meanwhile) are counted in ``dropped``. ``partial``: the
        unterminated lines shown now end the list (the cursor stays before them).
        ``with_proc``: the reply ends with the proc as ``get`` gives it then.
        ``as_runs``: lines go in the run form where they can (``runs_json``).
        """
        p = self.sup.get(proc_id)
        end = p.last_seq if p.live else None
        reader = _LineReader(self.sup, proc_id, since, stream, as_runs=as_runs)
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
                await _send_step(conn, step, first=sent == 0, as_runs=as_runs)
                sent += step.count
                dropped += step.dropped
                at_end = end is not None and reader.cursor >= end
                if limit is not None and sent >= limit and not step.done and not at_end:
                    # As one read() leaves it: past the other stream's lines that
                    # follow, up to the next line kept, wherever the reads were cut.
                    dropped += reader.skip_others(end)
                    break
                if step.done or at_end:
                    break
                await asyncio.sleep(0)  # capture and other clients go first
            if partial:
                shown = self._partials(proc_id, reader.cursor, stream)
                if shown and (limit is None or sent + len(shown) <= limit):
                    await _send_step(conn, _Step(shown), first=sent == 0, as_runs=as_runs)
            more = b""
            if with_proc:
                p = self.sup.get(proc_id)
                more = b'"proc":' + dumps(proc_to_json(p, runtime(self.sup, p)))
            tail = lines_tail(
                dropped, reader.cursor, reader.eof, p.cut_bytes, final=True, more=more
            )
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
        as_runs: bool = False,
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
            reader = _LineReader(self.sup, proc_id, since, stream, as_runs=as_runs)
            while True:
                wake.clear()
                step = reader.read()
                if step.count or step.dropped:
                    # The client's pace sets the server's: a batch waits for room;
                    # lines that leave the ring meanwhile are read back from disk.
                    await conn.send(lines_head(req_id, ok=False))
                    await _send_step(conn, step, first=True, as_runs=as_runs)
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
        limit = req["limit"]
        hits = self.sup.search(  # InvalidPattern now, before anything is streamed
            req["pattern"],
            regex=req["regex"],
            case_sensitive=req["case_sensitive"],
            session=req["session"],
            agent=req["agent"],
            proc=req["proc"],
            since=req["since"],
            limit=limit,
        )
        return await conn.stream(_send_hits(conn, req["id"], hits, limit))

    async def _events(self, req: dict[str, Any], conn: Conn) -> Any:
        pattern, proc = req["pattern"], req["proc"]
        ack: dict[str, Any] = {"subscribed": pattern}
        if proc is not None:
            self.sup.get(proc)  # ProcNotFound for an unknown id, not a silent stream
            ack["proc"] = proc
        req_id = req["id"]

        async def body() -> None:
            # A client that does not keep up loses events (its queue is bounded
            # and counts them in 'missed'); what waits for it here is one message.
            async with self.sup.subscribe(pattern, proc=proc, maxsize=_EVENT_QUEUE) as sub:
                await conn.send(encode(ok_message(req_id, ack)))
                async for ev in sub:
                    await conn.send(event_message(req_id, ev), patient=True)

        await conn.stream(body())
        raise _Replied  # the supervisor closed: the stream simply ends


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
    #: The lines as runs instead (then ``lines`` is empty): a flood read whole.
    runs: list[LineRun] = field(default_factory=list)

    @property
    def count(self) -> int:
        """How many lines it holds."""
        return len(self.lines) + sum(len(run.texts) for run in self.runs)


class _LineReader:
    """Reads one proc's lines for ``out``, and says where lines are missing.

    The supervisor is asked for both streams so that a jump in seq is always a
    loss (cut from the middle of the logs by the disk cap, or lost when writing
    the log failed), never a line of the other stream; ``stream`` is
    applied here. Each run of missing lines is counted in the step's
    ``dropped`` and marked on the next line kept (``cuts``), which may come in
    a later step.
    """

    def __init__(
        self,
        sup: Supervisor,
        proc_id: int,
        since: int,
        stream: Stream | None,
        *,
        as_runs: bool = False,
    ) -> None:
        self.sup = sup
        self.proc_id = proc_id
        self.stream = stream
        self.as_runs = as_runs  # lines are sent as runs: read them as runs
        self.cursor = since  # every seq up to here is read (or missing)
        self.eof = False
        self._missing = 0  # lines missing since the last line kept
        self._per_read = _FIRST_READ

    def read(self, *, room: int | None = None, upto: int | None = None) -> _Step:
        """The next lines: at most ``room`` of them kept, none past seq ``upto``."""
        want = self._per_read if room is None else min(self._per_read, room)
        if self.as_runs and self.stream is None:
            runs = self.sup.read_runs(self.proc_id, self.cursor, limit=want)
            n = len(runs)
            self._per_read = _lines_per_read(n, texts_size(runs.runs, n), self._per_read)
            if (
                runs.runs
                and (room is None or n <= room)
                and (upto is None or runs.runs[-1].last <= upto)
                and runs.runs[-1].last - runs.runs[0].first == n - 1
            ):
                return self._take_runs(runs.runs, runs.cursor, runs.eof, upto)
            batch = ReadBatch(runs.lines(), runs.dropped, runs.cursor, runs.eof)
        else:
            batch = self.sup.read(self.proc_id, self.cursor, limit=want)
            self._per_read = _lines_per_read(
                len(batch.lines), lines_size(batch.lines), self._per_read
            )
        step = _Step()
        whole = True  # every line of the batch was taken
        lines = batch.lines
        if (
            lines
            and self.stream is None
            and (room is None or len(lines) <= room)
            and (upto is None or lines[-1].seq <= upto)
            and lines[-1].seq - lines[0].seq == len(lines) - 1
        ):
            # All of them, one after another (the rule when reading a flood):
            # the loop below would find nothing missing but before the first.
            step.dropped += self._skip_to(lines[0].seq - 1)
            if self._missing:
                step.cuts[lines[0].seq] = self._missing
                self._missing = 0
            step.lines = list(lines)
            self.cursor = lines[-1].seq
            lines = []
        for line in lines:
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

    def _take_runs(self, runs: list[LineRun], cursor: int, eof: bool, upto: int | None) -> _Step:
        """A step of all of ``runs``, one line after another (as ``read``'s rule
        for a flood, without a Line per line)."""
        step = _Step(runs=runs)
        step.dropped += self._skip_to(runs[0].first - 1)
        if self._missing:
            step.cuts[runs[0].first] = self._missing
            self._missing = 0
        self.cursor = runs[-1].last
        step.dropped += self._skip_to(cursor if upto is None else min(cursor, upto))
        self.eof = eof
        step.done = eof
        return step

    def skip_others(self, upto: int | None) -> int:
        """Move the cursor past the lines of the other stream that come next (none
        without a stream filter), up to the next line kept; the lines missing on
        the way."""
        dropped = 0
        while self.stream is not None:
            batch = self.sup.read(self.proc_id, self.cursor, limit=self._per_read)
            for line in batch.lines:
                if line.stream is self.stream or (upto is not None and line.seq > upto):
                    return dropped
                dropped += self._skip_to(line.seq - 1)
                self.cursor = line.seq
            if batch.eof or not batch.lines:
                # Only the other stream's lines were left: as read() does, the
                # cursor goes past what is missing after them, and at the end
                # of a finished proc's output that is its end (eof).
                dropped += self._skip_to(batch.cursor if upto is None else min(batch.cursor, upto))
                self.eof = batch.eof and (upto is None or batch.cursor <= upto)
                return dropped
        return dropped

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


async def _send_step(conn: Conn, step: _Step, *, first: bool, as_runs: bool) -> None:
    """A step's lines, as elements of the reply's ``lines`` (``first``: they open
    it), in the run form with ``as_runs``."""
    if as_runs:
        runs = step.runs or runs_of(step.lines)
        pieces = run_pieces(runs, first=first, cuts=step.cuts)
    else:
        pieces = line_pieces(step.lines, first=first, cuts=step.cuts)
    for piece in pieces:
        await conn.send(piece)


def _lines_per_read(count: int, size: int, current: int) -> int:
    """How many lines to take next so that a step holds about _READ_TEXT of text,
    after a step of ``count`` lines that cost ``size`` (``lines_size``)."""
    if not count:
        return current
    return max(1, min(_MAX_READ, _READ_TEXT * count // size))
