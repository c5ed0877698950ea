"""The lines of one remote proc held here (``_Mirror``), and the events that wait for them.

Apart from the supervisor because a ``_Mirror`` is a buffer with no network of
its own: it takes ``out`` replies and answers ``read`` by cursor;
RemoteSupervisor decides what to fetch and when (:mod:`._remote_sync`).
"""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import Mapping
from typing import Any, NamedTuple

from ..core import EventKind, Line, ReadBatch, Stream
from ._remote_procs import RemoteProc

__all__ = ["MIRROR_LINES"]

#: Lines held per mirrored proc (the OutputModel keeps 100,000).
MIRROR_LINES = 200_000
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
