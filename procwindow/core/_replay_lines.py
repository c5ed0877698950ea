"""Replaying a proc's output as lines from its journal and logs: the same
lines, seqs and times it had while it ran, in the same merged order, from any
seq on (see :mod:`._replay`)."""

from __future__ import annotations

import bisect
from collections.abc import Iterator

from ._disklog import CUT, DATA, EOF, STREAMS
from ._journal import UNKNOWN, Journal
from ._output import OutputStore, _decode_lines
from ._types import Line, LineRun, Stream, lines_of

__all__ = ["lines_at", "read", "read_runs", "record_lines"]


def read(
    journal: Journal,
    since: int,
    limit: int | None = None,
    stream: Stream | None = None,
    upto: int | None = None,
) -> tuple[list[Line], int, int]:
    """Lines with ``since < seq < upto``: (lines, dropped, cursor), as
    ``OutputStore.read`` gives them. The cursor moves past the lines
    counted in ``dropped``, so that a read from it does not count them again."""
    runs, dropped, cursor = read_runs(journal, since, limit, stream, upto)
    return lines_of(runs), dropped, cursor


def read_runs(
    journal: Journal,
    since: int,
    limit: int | None = None,
    stream: Stream | None = None,
    upto: int | None = None,
) -> tuple[list[LineRun], int, int]:
    """:func:`read`'s lines as runs, as ``OutputStore.read_runs`` gives them."""
    out: list[LineRun] = []
    got = dropped = 0
    cursor = since
    for runs, missing, gone_to in _chunks(journal, since, upto):
        if missing:
            dropped += missing
            cursor = max(cursor, gone_to)
        for run in runs:
            if stream is not None and run.stream is not stream:
                cursor = run.last
                continue
            if limit is not None and got >= limit:
                return out, dropped, cursor
            n = len(run.texts)
            if limit is not None and got + n > limit:  # the limit falls within it
                run = run._replace(texts=run.texts[: limit - got])
                out.append(run)
                return out, dropped, run.last
            out.append(run)
            got += n
            cursor = run.last
    return out, dropped, cursor


def _clip(runs: list[LineRun], since: int, upto: int) -> list[LineRun]:
    """The lines of ``runs`` with ``since < seq < upto``."""
    out = []
    for run in runs:
        lo = max(0, since + 1 - run.first)
        hi = min(len(run.texts), upto - run.first)
        if hi > lo:
            whole = lo == 0 and hi == len(run.texts)
            out.append(run if whole else run._replace(first=run.first + lo, texts=run.texts[lo:hi]))
    return out


def _chunks(
    journal: Journal, since: int, upto: int | None
) -> Iterator[tuple[list[LineRun], int, int]]:
    """Per journal record from the one holding ``since + 1``: the lines it
    completed that lie in (since, upto), how many of those are gone, and
    the seq of the last one gone."""
    seq = journal.seq
    n = len(seq)
    first = bisect.bisect_right(seq, since)
    if first >= n:
        return
    base = seq[first - 1] if first else 0
    store = OutputStore(1 << 62, 1 << 62, line_max=journal.line_max)
    ends: dict[int, int] = {}
    skip: dict[int, bool] = {}
    pending: dict[Stream, bytes] = {}
    for index in (0, 1):
        ends[index], skip[index], data = _state_before(journal, index, first)
        pending[STREAMS[index]] = data
    store.resume(base, pending)
    hi = upto if upto is not None else UNKNOWN
    for k in range(first, n):
        index = journal.stream[k]
        kind = journal.kind[k]
        s = STREAMS[index]
        before = store.last_seq
        if kind == CUT:
            skip[index] = bool(journal.mid[k])
            ends[index] = journal.end[k]
            store.skip_line(s)
        elif kind == DATA:
            data = journal.files[s].get(ends[index], journal.end[k])
            ends[index] = journal.end[k]
            if skip[index]:
                nl = data.find(b"\n")
                data = data[nl + 1 :] if nl >= 0 else b""
                skip[index] = nl < 0
            store.feed(s, data, len(data), journal.time[k])
        else:
            if not skip[index]:
                store.flush(s, journal.time[k])
            skip[index] = False
        runs = store.read_runs(before)[0] if store.last_seq > before else []
        store.shrink(0)
        missing = gone_to = 0
        want = seq[k]
        if want != UNKNOWN and want != store.last_seq:
            # Lines the journal counted but the bytes no longer hold (cut):
            # the first of this record's seqs.
            shift = want - store.last_seq
            runs = [run._replace(first=run.first + shift) for run in runs]
            gone_to = min(before + max(shift, 0), hi - 1)
            missing = max(0, gone_to - max(before, since))
            store.resume(want, {})
        if runs and runs[-1].last >= hi:
            yield _clip(runs, since, hi), missing, gone_to
            return
        if runs and runs[0].first <= since:
            runs = _clip(runs, since, hi)
        yield runs, missing, gone_to
        if store.last_seq >= hi - 1:
            return


def _state_before(journal: Journal, index: int, k: int) -> tuple[int, bool, bytes]:
    """Where stream ``index`` stands before record ``k``: its file offset,
    whether its unfinished line was cut, and the unfinished bytes."""
    mine = journal.by_stream[index]
    j = bisect.bisect_left(mine, k) - 1
    if j < 0:
        return 0, False, b""
    r = mine[j]
    end = journal.end[r]
    if journal.kind[r] == CUT:
        return end, bool(journal.mid[r]), b""
    if journal.kind[r] == EOF:
        return end, False, b""
    if journal.in_cut_line(index, r):
        return end, True, b""
    pend = journal.extra[r]
    return end, False, journal.files[STREAMS[index]].get(end - pend, end)


def lines_at(journal: Journal, k: int, ends: list[int]) -> list[Line] | None:
    """The lines of record ``k`` whose ``\n`` is at the file offsets
    ``ends`` (sorted), cut straight from the log; None when only a replay
    of the record gives them exactly (an over-long line, a cut)."""
    if journal.kind[k] != DATA or journal.seq[k] == UNKNOWN or k == 0:
        return None
    index = journal.stream[k]
    mine = journal.by_stream[index]
    j = bisect.bisect_left(mine, k)
    prev = mine[j - 1] if j else None
    if prev is not None and (journal.kind[prev] == CUT or journal.in_cut_line(index, prev)):
        return None
    start = journal.end[prev] if prev is not None else 0
    f = journal.files[STREAMS[index]]
    data = f.get(start, journal.end[k])
    if data.count(b"\n") != journal.seq[k] - journal.seq[k - 1]:
        return None  # pieces of an over-long line took seqs too
    out: list[Line] = []
    seq = journal.seq[k - 1]
    pos = 0
    for end in ends:
        rel = end - start
        seq += data.count(b"\n", pos, rel + 1)
        pos = rel + 1
        first = data.rfind(b"\n", 0, rel) + 1
        if first == 0:  # the line began in an earlier read
            pend = journal.extra[prev] if prev is not None else 0
            head = f.get(start - pend, start) if pend else b""
            raw = head + data[:rel]
        else:
            raw = data[first:rel]
        if len(raw) > journal.line_max:
            return None
        text = _decode_lines(raw)[0]
        out.append(Line(seq, STREAMS[index], journal.time[k], text, False))
    return out


def record_lines(journal: Journal, k: int) -> list[Line]:
    """The lines record ``k`` completed."""
    before = journal.seq[k - 1] if k else 0
    return read(journal, before, upto=journal.seq[k] + 1 if journal.seq[k] != UNKNOWN else None)[0]
