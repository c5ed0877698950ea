"""The server's messages: replies, errors, line batches, search hits and events,
as bytes or dicts.

A reply that carries output lines is written in pieces (its head, its lines a
few at a time, its tail) so that a large one is never held whole in memory.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..core import Event, Line, LineRun, SearchHit
from ._protocol import (
    PROTOCOL_VERSION,
    dumps,
    encode,
    error_to_json,
    event_to_json,
    hit_to_json,
    lines_json,
    runs_json,
)

__all__ = [
    "LINE_OVERHEAD",
    "error_message",
    "event_message",
    "hit_message",
    "line_pieces",
    "lines_head",
    "lines_size",
    "lines_tail",
    "ok_message",
    "os_error_message",
    "run_pieces",
    "texts_size",
]

#: What a line costs besides its text, in its JSON and in memory (bytes, roughly).
LINE_OVERHEAD = 64
#: Text encoded per write (bytes, roughly); escaping may make it up to 6 times bigger.
_PIECE_TEXT = 64 * 1024


def ok_message(req_id: Any, result: Any) -> dict[str, Any]:
    """A request's final reply."""
    return {"v": PROTOCOL_VERSION, "id": req_id, "ok": True, "result": result}


def error_message(
    req_id: Any, exc: Exception, type_: str | None = None, version: int = PROTOCOL_VERSION
) -> dict[str, Any]:
    """An error reply: the exception's type (or ``type_``), message, code and
    details (``error_to_json``), as protocol ``version`` says them."""
    error = error_to_json(exc, version)
    if type_ is not None:
        error["type"] = type_
    return {"v": PROTOCOL_VERSION, "id": req_id, "ok": False, "error": error}


def os_error_message(req_id: Any, op: str, exc: OSError) -> dict[str, Any]:
    """An error reply for a system limit that failed request ``op``, with its errno name."""
    error: dict[str, Any] = {"type": "OSError", "message": f"{op}: {exc.strerror or exc}"}
    if exc.errno is not None:
        error["errno"] = errno.errorcode.get(exc.errno, str(exc.errno))
    return {"v": PROTOCOL_VERSION, "id": req_id, "ok": False, "error": error}


def event_message(req_id: Any, ev: Event) -> bytes:
    """One event of an ``events`` stream."""
    return encode({"v": PROTOCOL_VERSION, "id": req_id, "event": event_to_json(ev)})


def hit_message(req_id: Any, hit: SearchHit) -> bytes:
    """One hit of a ``search`` stream."""
    return encode({"v": PROTOCOL_VERSION, "id": req_id, "hit": hit_to_json(hit)})


def lines_head(req_id: Any, *, ok: bool) -> bytes:
    """The start of a message whose ``lines`` follow: a final reply, or a batch."""
    start = b'{"v":%d,"id":%s,' % (PROTOCOL_VERSION, dumps(req_id))
    return start + (b'"ok":true,"result":{"lines":[' if ok else b'"lines":[')


def lines_tail(
    dropped: int, cursor: int, eof: bool, cut_bytes: int, *, final: bool = False, more: bytes = b""
) -> bytes:
    """The end of a message begun by lines_head (``final``: of a reply).

    ``cut_bytes``: what the disk cap has cut from the proc's logs so far, for a
    client that shows how big the gaps its ``cut`` lines mark are; left out
    while nothing was cut, as ``split`` and ``missed`` are while they do not apply.
    """
    body = b'],"dropped":%d,"cursor":%d,"eof":%s' % (
        dropped,
        cursor,
        b"true" if eof else b"false",
    )
    if cut_bytes:
        body += b',"cut_bytes":%d' % cut_bytes
    if more:  # further members, JSON encoded: b'"proc":{…}'
        body += b"," + more
    return body + (b"}}\n" if final else b"}\n")


def lines_size(lines: Sequence[Line]) -> int:
    """What ``lines`` cost, in their JSON and in memory (bytes, roughly)."""
    return sum(len(line.text) for line in lines) + LINE_OVERHEAD * len(lines)


def line_pieces(
    lines: Sequence[Line], *, first: bool, cuts: Mapping[int, int] | None = None
) -> Iterator[bytes]:
    """``lines`` as JSON array elements, in pieces of about _PIECE_TEXT each.

    ``first``: they open the array (no comma before the first of them).
    ``cuts``: by seq, how many lines are missing just before a line.
    """
    if not lines:
        return
    cuts = cuts or {}
    step = max(1, _PIECE_TEXT * len(lines) // lines_size(lines))
    for i in range(0, len(lines), step):
        piece = lines_json(lines[i : i + step], cuts)
        yield piece if first and i == 0 else b"," + piece


def texts_size(runs: Sequence[LineRun], count: int) -> int:
    """What the ``count`` lines of ``runs`` cost, as :func:`lines_size` counts."""
    return sum(sum(map(len, run.texts)) for run in runs) + LINE_OVERHEAD * count


def run_pieces(
    runs: Sequence[LineRun], *, first: bool, cuts: Mapping[int, int] | None = None
) -> Iterator[bytes]:
    """``runs`` as JSON array elements in the run form (``runs_json``), in pieces
    of about _PIECE_TEXT each: a long run is cut into several, short ones share one.

    ``first``: they open the array (no comma before the first of them).
    ``cuts``: by seq, how many lines are missing just before a line.
    """
    piece: list[LineRun] = []
    size = 0
    for run in runs:
        n = len(run.texts)
        cost = texts_size([run], n)
        per = n if cost <= _PIECE_TEXT else max(1, _PIECE_TEXT * n // cost)
        for i in range(0, n, per):
            part = (
                run if per >= n else run._replace(first=run.first + i, texts=run.texts[i : i + per])
            )
            piece.append(part)
            size += cost * len(part.texts) // n
            if size >= _PIECE_TEXT:
                data = runs_json(piece, cuts)
                yield data if first else b"," + data
                first, piece, size = False, [], 0
    if piece:
        data = runs_json(piece, cuts)
        yield data if first else b"," + data
