"""One proc's lines held on the client side of a RemoteSupervisor: a buffer
that takes ``out`` replies in their run form and answers ``read`` by cursor.

Lines are held as runs (``LineRun``: a first seq, a stream, a time and the
texts), as the server's ring holds them and as ``out`` sends them with
``runs``: a flood of 200,000 lines is a few dozen objects for the garbage
collector to walk, not 200,000 tuples (which made a quarter of a remote read's
time), and ``read_runs`` answers without a Line per line.
"""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import Iterator
from itertools import islice
from typing import Any, NamedTuple

from ..core import EventKind, Line, LineRun, RunBatch, Stream
from ._remote_procs import RemoteProc

__all__ = ["FETCH_LINES", "MIRROR_LINES", "Deferred", "Mirror", "Subject"]

#: Lines held per mirrored proc (the OutputModel keeps 100,000).
MIRROR_LINES = 200_000
#: The most lines asked for per ``out`` request, and the first request's: a
#: flood of short lines comes in few requests (each a round trip, over ssh too),
#: and lines of unknown length are asked for a few at a time.
FETCH_LINES = 20_000
_FETCH_FIRST = 128
#: Text asked for per request (bytes, roughly): lines of 64 KiB come 32 at a time.
_FETCH_TEXT = 2 * 1024 * 1024


class Subject(NamedTuple):
    """What an event is about, for publishing it (a proc, or a workspace command)."""

    id: int
    session: str
    agent: str


class Deferred(NamedTuple):
    """An event held back until the lines it follows are here."""

    subject: Subject | RemoteProc
    kind: EventKind
    at: float | None
    fields: dict[str, Any]


def _first(run: LineRun) -> int:
    return run.first


def _part(run: LineRun, skip: int, take: int) -> LineRun:
    """``take`` lines of ``run`` after its first ``skip``."""
    if skip == 0 and take == len(run.texts):
        return run
    return run._replace(first=run.first + skip, texts=run.texts[skip : skip + take])


class Mirror:
    """The lines of one proc held here: every seq in ``(start, end]`` is in
    ``runs`` or missing for good (cut). ``target`` is the newest seq known to
    exist; ``deferred`` the events that wait for the lines they announce."""

    __slots__ = (
        "backfill",
        "count",
        "deferred",
        "end",
        "eof",
        "fetch",
        "fetched",
        "gone",
        "hold",
        "id",
        "more",
        "news",
        "partials",
        "runs",
        "start",
        "target",
        "task",
    )

    def __init__(self, proc_id: int, since: int) -> None:
        self.id = proc_id
        #: Complete lines, in seq order (a gap between two runs: lines missing).
        self.runs: list[LineRun] = []
        self.count = 0  # lines in runs
        self.start = self.end = self.target = since
        self.eof = False
        self.fetched = False
        self.fetch = _FETCH_FIRST  # lines to ask for next (see pace)
        self.gone = False
        self.news = False  # a partial line changed: ask again
        self.more = False  # the last reply was full: there is more
        self.partials: list[Line] = []
        self.backfill: int | None = None
        self.deferred: list[Deferred] = []
        self.hold: asyncio.TimerHandle | None = None
        self.task: asyncio.Task[None] | None = None

    def clear(self, since: int) -> None:
        """Hold nothing, from ``since`` on (a read went too far back)."""
        self.runs, self.count, self.partials = [], 0, []
        self.start = self.end = since
        self.fetched = self.eof = False
        self.backfill = None

    def pace(self, runs: list[LineRun]) -> None:
        """Size the next request after the lines of a reply: about _FETCH_TEXT."""
        count = sum(len(run.texts) for run in runs)
        if count:
            size = sum(sum(map(len, run.texts)) for run in runs) + 16 * count
            self.fetch = max(16, min(FETCH_LINES, _FETCH_TEXT * count // size))

    def read_runs(
        self, since: int, limit: int | None, stream: Stream | None, partial: bool
    ) -> RunBatch:
        """What ``read_runs`` gives for the lines held after ``since``."""
        if since < self.start or since >= self.end:  # before what is held (being fetched)
            shown = self._partials(since, stream) if partial and since == self.end else []
            return RunBatch(_single(shown), 0, since, self.eof and since >= self.end)
        out: list[LineRun] = []
        got = 0
        limited = False
        # Past the last line taken, up to the next line kept (as the supervisor's
        # read leaves it: past the other stream's lines and any lines missing).
        cursor = self.end
        for run, skip in self._after(since):
            n = len(run.texts) - skip
            if stream is not None and run.stream is not stream:
                continue
            if limit is not None and got >= limit:
                limited = True
                cursor = run.first + skip - 1
                break
            take = n if limit is None else min(n, limit - got)
            out.append(_part(run, skip, take))
            got += take
            if take < n:
                limited = True
                cursor = out[-1].last
                break
        held = got if stream is None else self._held(since, cursor)
        dropped = max(0, cursor - since - held)
        if partial and not limited:
            out += _single(self._partials(cursor, stream))
        return RunBatch(out, dropped, cursor, self.eof and cursor >= self.end)

    def _after(self, since: int) -> Iterator[tuple[LineRun, int]]:
        """The runs that hold lines after ``since``, each with how many of its
        first lines are not after it."""
        runs = self.runs
        i = max(0, bisect.bisect_right(runs, since, key=_first) - 1)
        for run in islice(runs, i, None):
            if run.last > since:
                yield run, max(0, since + 1 - run.first)

    def _held(self, since: int, cursor: int) -> int:
        """How many lines are held from ``since`` (excluded) to ``cursor``."""
        held = 0
        for run, skip in self._after(since):
            if run.first > cursor:
                break
            held += min(run.last, cursor) - run.first + 1 - skip
        return held

    def _partials(self, cursor: int, stream: Stream | None) -> list[Line]:
        return [
            p for p in self.partials if p.seq > cursor and (stream is None or p.stream is stream)
        ]

    def take(self, reply: dict[str, Any], runs: list[LineRun]) -> list[LineRun]:
        """Hold the lines (``runs``) of an ``out`` reply that reads on from ``end``;
        the new ones."""
        end = self.end
        new = []
        for run in runs:
            if run.partial or run.last <= end:
                continue
            skip = max(0, end + 1 - run.first)
            new.append(_part(run, skip, len(run.texts) - skip))
        partials = [] if not runs or not runs[-1].partial else _partial_lines(runs)
        self.runs += new
        self.count += sum(len(run.texts) for run in new)
        self.end = max(self.end, int(reply.get("cursor", self.end)))
        self.target = max(self.target, self.end)
        self.eof = bool(reply.get("eof"))
        self.partials = partials
        self.fetched = True
        self._trim()
        return new

    def prepend(self, runs: list[LineRun], since: int) -> None:
        """Hold ``runs``, the lines from ``since`` (excluded) to ``start``."""
        self.runs[0:0] = runs
        self.count += sum(len(run.texts) for run in runs)
        self.start = since

    def _trim(self, keep: int | None = None) -> None:
        """Let the oldest lines go once well over ``keep`` are held."""
        keep = MIRROR_LINES if keep is None else keep
        excess = self.count - keep
        if excess <= keep // 8:
            return
        dropped = 0
        while dropped < excess:
            run = self.runs[0]
            n = len(run.texts)
            if dropped + n <= excess:
                del self.runs[0]
                dropped += n
                self.start = run.last
            else:
                cut = excess - dropped
                self.runs[0] = _part(run, cut, n - cut)
                dropped += cut
                self.start = run.first + cut - 1
        self.count -= dropped


def _single(lines: list[Line]) -> list[LineRun]:
    """Each of ``lines`` as a run of its own."""
    return [
        LineRun(line.seq, line.stream, line.time, [line.text], line.split, line.partial)
        for line in lines
    ]


def _partial_lines(runs: list[LineRun]) -> list[Line]:
    out: list[Line] = []
    for run in runs:
        if run.partial:
            out += run.lines()
    return out
