"""The control protocol: JSON lines, versioned. Documented in docs/protocol.md."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..core import Event, ExitInfo, Line, Proc, ProcwindowError

__all__ = [
    "MAX_REQUEST",
    "OPS",
    "PROTOCOL_VERSION",
    "ProtocolError",
    "decode_request",
    "encode",
    "event_to_json",
    "exit_to_json",
    "line_to_json",
    "proc_to_json",
]

PROTOCOL_VERSION = 1
#: The longest request line the server reads (bytes, newline excluded).
MAX_REQUEST = 1024 * 1024

#: Every request the server knows, with the fields each takes (besides v, op, id).
OPS: dict[str, frozenset[str]] = {
    "hello": frozenset(),
    "run": frozenset(
        {"session", "agent", "tool", "argv", "shell", "cwd", "env", "graceful_timeout"}
    ),
    "top": frozenset({"session", "agent"}),
    "idx": frozenset({"session", "agent"}),
    "procs": frozenset({"session", "agent"}),
    "out": frozenset({"proc", "since", "stream", "follow", "limit"}),
    "term": frozenset({"proc"}),
    "kill": frozenset({"proc"}),
    "interrupt": frozenset({"proc"}),
    "dismiss": frozenset({"proc", "keep_logs"}),
    "restart": frozenset({"proc"}),
    "events": frozenset({"pattern"}),
    "sessions": frozenset(),
}


class ProtocolError(ProcwindowError):
    """A request the server cannot take: malformed, unknown, or too big.

    ``code`` is a stable word for programs: ``malformed``, ``unknown-op``,
    ``bad-field``, ``too-large``, ``version``, ``forbidden``.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def encode(obj: Mapping[str, Any]) -> bytes:
    """One message: compact JSON and a newline."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def decode_request(line: bytes) -> dict[str, Any]:
    """Parse and check one request line; raise ProtocolError with the fault."""
    try:
        req = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProtocolError("malformed", f"not a JSON object: {exc}") from None
    if not isinstance(req, dict):
        raise ProtocolError("malformed", "a request is a JSON object")
    version = req.get("v", PROTOCOL_VERSION)
    if version != PROTOCOL_VERSION:
        raise ProtocolError(
            "version", f"protocol version {version!r} is not supported (this server speaks 1)"
        )
    op = req.get("op")
    if not isinstance(op, str):
        raise ProtocolError("malformed", "missing 'op' (a string)")
    if op not in OPS:
        raise ProtocolError(
            "unknown-op", f"unknown request {op!r}; known: {', '.join(sorted(OPS))}"
        )
    extra = set(req) - OPS[op] - {"v", "op", "id"}
    if extra:
        raise ProtocolError("bad-field", f"{op}: unknown field(s) {', '.join(sorted(extra))}")
    return req


def exit_to_json(info: ExitInfo | None) -> dict[str, Any] | None:
    """ExitInfo as JSON (None while running)."""
    if info is None:
        return None
    return {
        "code": info.code,
        "signal": info.signal,
        "reason": info.reason.value,
        "runtime": round(info.runtime, 3),
    }


def proc_to_json(p: Proc, runtime: float) -> dict[str, Any]:
    """A proc's public fields as JSON."""
    return {
        "id": p.id,
        "os_pid": p.os_pid,
        "session": p.session,
        "agent": p.agent,
        "tool": p.tool,
        "argv": list(p.argv),
        "cmd": p.cmd,
        "cwd": p.cwd,
        "state": p.state.value,
        "started_at": p.started_at,
        "ended_at": p.ended_at,
        "runtime": round(runtime, 3),
        "exit": exit_to_json(p.exit),
        "log_error": p.log_error,
    }


def line_to_json(line: Line) -> dict[str, Any]:
    """One output line as JSON."""
    out: dict[str, Any] = {
        "seq": line.seq,
        "stream": line.stream.value,
        "time": line.time,
        "text": line.text,
    }
    if line.split:
        out["split"] = True
    return out


def event_to_json(ev: Event) -> dict[str, Any]:
    """An event as JSON, without the fields that do not apply to its kind."""
    out: dict[str, Any] = {
        "topic": ev.topic,
        "kind": ev.kind.value,
        "proc": ev.proc_id,
        "session": ev.session,
        "agent": ev.agent,
        "time": ev.time,
    }
    for name in ("os_pid", "tool", "cmd", "code", "signal", "runtime", "first_seq", "last_seq"):
        value = getattr(ev, name)
        if value is not None:
            out[name] = value
    if ev.reason is not None:
        out["reason"] = ev.reason.value
    if ev.stream is not None:
        out["stream"] = ev.stream.value
    if ev.missed:
        out["missed"] = ev.missed
    return out
