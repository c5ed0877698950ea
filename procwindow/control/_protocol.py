"""The control protocol: JSON lines, versioned. Documented in docs/protocol.md."""

from __future__ import annotations

import dataclasses
import enum
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from ..core import (
    CommandRun,
    Event,
    Excerpt,
    ExitInfo,
    ExitReason,
    Line,
    LineRun,
    Proc,
    ProcwindowError,
    Run,
    ScreenText,
    SearchHit,
    Stream,
    TreeProcess,
    error_class,
)
from ..core.rules import signal_name
from ..core.spec import OPS

__all__ = [
    "ENVELOPE",
    "MAX_DEPTH",
    "MAX_REQUEST",
    "OLDEST_PROTOCOL",
    "PROTOCOL_VERSION",
    "WRITE_CHUNK",
    "HistoryUnavailable",
    "ProtocolError",
    "decode_request",
    "dumps",
    "encode",
    "error_from_json",
    "error_to_json",
    "event_to_json",
    "excerpt_to_json",
    "exit_from_json",
    "exit_to_json",
    "hit_to_json",
    "line_from_json",
    "line_to_json",
    "lines_count",
    "lines_json",
    "proc_to_json",
    "runs_from_json",
    "runs_json",
    "screen_from_json",
    "screen_to_json",
    "tree_from_json",
]

#: 2: history, search and forget; dismiss keeps the history (no keep_logs); lines
#: carry ``cut``; procs carry live, cut_lines, cut_bytes.
#: 3: the agent verbs wait_for, ready, excerpt and write; run takes timeout,
#: merge_stderr, stdin, ready and reuse (its reply has ``reused``); out takes
#: ``partial`` (lines may carry ``partial``); events takes ``proc``, and events
#: of kinds partial and ready exist (exit carries ``last_seq``); procs carry
#: ready, timeout, stdin, merge_stderr; NoMatch and NotReady errors carry ``exit``.
#: 4: workspaces: up, down and workspaces; idx and top show (and list in
#: ``commands``) the commands of running workspaces, also those that wait; events
#: of kind phase.
#: 5: every error has a ``code`` and its details (``proc_id``, ``field``…); a field
#: that is wrong is an ``InvalidField``; ``hello`` says which versions the server
#: speaks (``protocols``); ``run``'s ``ready`` may be a line pattern or a port.
#: 6: terminals: ``run`` takes ``pty``, ``rows`` and ``cols``; procs carry ``pty``
#: (its terminal's size when it started, or null); the verbs resize and screen;
#: ``out`` takes ``runs``; the verbs tree and signal.
PROTOCOL_VERSION = 6
#: The oldest version this server still answers (as that version would).
OLDEST_PROTOCOL = 4
#: The longest request line the server reads (bytes, newline excluded).
MAX_REQUEST = 1024 * 1024
#: The most characters of stdin a client sends in one ``write`` request: a longer
#: write is sent in pieces of this size, well under MAX_REQUEST however JSON
#: escapes them (six bytes for a control character at worst).
WRITE_CHUNK = 128 * 1024
#: How deeply a request's arrays and objects may nest.
MAX_DEPTH = 32
#: The fields of every request besides the operation's own.
ENVELOPE = frozenset({"v", "op", "id"})

#: How version 4 named the errors that version 5 renamed.
_V4_TYPES = {"InvalidField": "ProtocolError"}


class ProtocolError(ProcwindowError):
    """A request the server cannot take: malformed, unknown, too big, too slow, of a
    protocol version it does not speak, or from another user.

    ``code`` is a stable word for programs: ``malformed``, ``unknown-op``,
    ``too-large``, ``too-slow``, ``busy``, ``version``, ``forbidden``
    (docs/protocol.md says when each is sent). A field of a known request that is
    wrong is an :class:`~procwindow.core.InvalidField` (``bad-field``).
    """

    codes = ("malformed", "unknown-op", "too-large", "too-slow", "busy", "version", "forbidden")

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class HistoryUnavailable(ProcwindowError):
    """The server keeps no history (it was started without, or its database broke),
    so there is none to list. ``why`` is the supervisor's ``history_error``, if any."""

    code = "history-unavailable"
    details: ClassVar[Mapping[str, type]] = {"why": str}

    def __init__(self, why: str | None) -> None:
        super().__init__(
            f"history is off: {why}" if why else "history is off: this server keeps none"
        )
        self.why = why


def dumps(value: Any) -> bytes:
    """``value`` as compact UTF-8 JSON."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def encode(obj: Mapping[str, Any]) -> bytes:
    """One message: compact JSON and a newline."""
    return dumps(obj) + b"\n"


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def decode_request(line: bytes) -> dict[str, Any]:
    """Parse and check one request line; raise ProtocolError with the fault."""
    try:
        req = json.loads(line, parse_constant=_refuse_constant)
    except RecursionError:
        raise ProtocolError(
            "malformed", f"not a JSON object: nested more than {MAX_DEPTH} levels deep"
        ) from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, NaN, a 5000-digit int
        raise ProtocolError("malformed", f"not a JSON object: {exc}") from None
    if not isinstance(req, dict):
        raise ProtocolError("malformed", "a request is a JSON object")
    if not _shallow(req, MAX_DEPTH):
        raise ProtocolError(
            "malformed", f"not a JSON object: nested more than {MAX_DEPTH} levels deep"
        )
    version = req.get("v", PROTOCOL_VERSION)
    if type(version) is not int or not OLDEST_PROTOCOL <= version <= PROTOCOL_VERSION:
        raise ProtocolError("version", version_refused(version))
    op = req.get("op")
    if not isinstance(op, str):
        raise ProtocolError("malformed", "missing 'op' (a string)")
    if op not in OPS:
        raise ProtocolError(
            "unknown-op", f"unknown request {op!r}; known: {', '.join(sorted(OPS))}"
        )
    return req


def version_refused(version: object) -> str:
    """Why a request of protocol ``version`` is refused: the versions spoken here."""
    spoken = (
        f"{OLDEST_PROTOCOL} to {PROTOCOL_VERSION}"
        if OLDEST_PROTOCOL < PROTOCOL_VERSION
        else str(PROTOCOL_VERSION)
    )
    return f"protocol version {version!r} is not supported (this server speaks {spoken})"


def _shallow(value: object, limit: int) -> bool:
    """True if ``value`` nests at most ``limit`` levels (checked without recursion,
    so that echoing or inspecting it later cannot hit the recursion limit)."""
    stack: list[tuple[list[Any] | dict[str, Any], int]] = []
    if isinstance(value, (dict, list)):
        stack.append((value, 1))
    while stack:
        item, depth = stack.pop()
        for child in item.values() if isinstance(item, dict) else item:
            if isinstance(child, (dict, list)):
                if depth >= limit:
                    return False
                stack.append((child, depth + 1))
    return True


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


def exit_from_json(value: Any) -> ExitInfo | None:
    """Exit info from its JSON (None for null or a value that is not one)."""
    if not isinstance(value, dict):
        return None
    try:
        return ExitInfo(
            int(value["code"]),
            None if value.get("signal") is None else int(value["signal"]),
            ExitReason(value["reason"]),
            float(value.get("runtime", 0.0)),
        )
    except (KeyError, TypeError, ValueError):
        return None


def error_to_json(exc: Exception, version: int = PROTOCOL_VERSION) -> dict[str, Any]:
    """An error as the ``error`` of a reply: its ``type`` (the class's name),
    ``code``, ``message`` and, for a ProcwindowError, its details by name (exit
    info as JSON). For a request of an older ``version``, the type it named then."""
    name = type(exc).__name__
    error: dict[str, Any] = {
        "type": _V4_TYPES.get(name, name) if version < 5 else name,
        "message": str(exc),
    }
    if isinstance(exc, ProcwindowError):
        error["code"] = exc.code
        for key, value in exc.detail_values().items():
            error[key] = exit_to_json(value) if isinstance(value, ExitInfo) else value
    return error


def error_from_json(error: Mapping[str, Any]) -> ProcwindowError | None:
    """The error a server sent, rebuilt as its own class with its details (by its
    ``code``, never by its message); None for a code unknown here."""
    code = error.get("code")
    if not isinstance(code, str):
        return None
    cls = error_class(code)
    if cls is None:
        return None
    values = {
        key: exit_from_json(error.get(key)) if kind is ExitInfo else error.get(key)
        for key, kind in cls.details.items()
    }
    return cls.rebuild(str(error.get("message", "")), values, code=code)


def proc_to_json(p: Proc, runtime: float) -> dict[str, Any]:
    """A proc's public fields as JSON.

    ``live``: in this server's live view (``procs``, ``top``, ``idx``); false for a
    proc read from the history (dismissed, of an earlier run or another server).
    ``cut_lines``/``cut_bytes``: cut from the middle of its logs by the disk cap.
    ``ready``: its readiness check passed (true for a proc without one);
    ``timeout``, ``stdin``, ``merge_stderr``, ``pty``, ``stop_signal`` (a name such as
    ``SIGINT``, null for SIGTERM), ``stop_command``: what its ``run`` asked for (the
    history does not record them: a proc read from it shows the defaults).
    ``last_seq``: the seq of its newest complete line (its cursor now).
    ``command_run``: the workspace command it is a run of, and the run it restarted.
    """
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
        "live": p.live,
        "cut_lines": p.cut_lines,
        "cut_bytes": p.cut_bytes,
        "ready": p.ready,
        "timeout": p.timeout,
        "stdin": p.options.stdin,
        "merge_stderr": p.options.merge_stderr,
        "pty": list(p.options.pty) if p.options.pty is not None else None,
        "stop_signal": signal_name(stop) if (stop := p.options.stop_signal) else None,
        "stop_command": list(asks) if (asks := p.options.stop_command) is not None else None,
        "last_seq": p.last_seq,
        "command_run": command_run_to_json(p.command_run),
    }


def command_run_to_json(run: CommandRun | None) -> dict[str, Any] | None:
    """Which workspace command a proc is a run of (null for none)."""
    if run is None:
        return None
    return {"workspace": run.workspace, "command": run.command, "restart_of": run.restart_of}


def command_run_from_json(data: object) -> CommandRun | None:
    """:func:`command_run_to_json` read back; None for anything else (an older server)."""
    if not isinstance(data, dict):
        return None
    workspace, command = data.get("workspace"), data.get("command")
    previous = data.get("restart_of")
    if not isinstance(workspace, str) or not isinstance(command, str):
        return None
    if not isinstance(previous, int) or isinstance(previous, bool):
        previous = None
    return CommandRun(workspace, command, previous)


def screen_to_json(screen: ScreenText) -> dict[str, Any]:
    """A terminal's screen as JSON: its size, rows of text, cursor and mode;
    ``runs`` when styled: each row's runs as ``[text, fg, bg, bold, italics,
    underscore, reverse]``."""
    out = {
        "rows": screen.rows,
        "cols": screen.cols,
        "lines": list(screen.lines),
        "cursor": list(screen.cursor),
        "cursor_visible": screen.cursor_visible,
        "alternate": screen.alternate,
        "version": screen.version,
        "app_cursor": screen.app_cursor,
        "bracketed_paste": screen.bracketed_paste,
    }
    if screen.styled is not None:
        out["runs"] = [[list(run) for run in row] for row in screen.styled]
    return out


def tree_from_json(value: Mapping[str, Any]) -> TreeProcess:
    """A process of a proc's tree, from ``tree``'s reply."""
    return TreeProcess(**{f.name: value[f.name] for f in dataclasses.fields(TreeProcess)})


def screen_from_json(value: Mapping[str, Any]) -> ScreenText:
    row, col = value["cursor"]
    runs = value.get("runs")
    return ScreenText(
        int(value["rows"]),
        int(value["cols"]),
        tuple(str(line) for line in value["lines"]),
        (int(row), int(col)),
        bool(value["cursor_visible"]),
        bool(value["alternate"]),
        None if runs is None else tuple(tuple(Run(*run) for run in r) for r in runs),
        int(value.get("version", 0)),
        bool(value.get("app_cursor")),
        bool(value.get("bracketed_paste")),
    )


def line_to_json(line: Line, cut: int = 0) -> dict[str, Any]:
    """One output line as JSON; ``cut``: lines missing just before it (a gap)."""
    out: dict[str, Any] = {
        "seq": line.seq,
        "stream": line.stream.value,
        "time": line.time,
        "text": line.text,
    }
    if line.split:
        out["split"] = True
    if line.partial:
        out["partial"] = True
    if cut:
        out["cut"] = cut
    return out


#: A stream's name as JSON text.
_STREAM_TEXT = {stream: json.dumps(stream.value) for stream in Stream}
#: Escapes a string as ``dumps`` does (``ensure_ascii=False``), in C.
_quote = json.encoder.encode_basestring


def lines_json(lines: Sequence[Line], cuts: Mapping[int, int] | None = None) -> bytes:
    """``lines`` as the elements of a JSON array (no brackets), each as
    :func:`line_to_json` gives it, with ``cuts`` by seq. Written out directly:
    ``out`` sends hundreds of thousands of lines a second, and a dict per line
    for ``dumps`` was a third of what a reply cost."""
    return ",".join(_line_objects(lines, cuts or {})).encode()


def _line_objects(lines: Iterable[Line], cuts: Mapping[int, int]) -> list[str]:
    parts = []
    for seq, stream, when, text, split, partial in lines:
        more = ""
        if split:
            more = ',"split":true'
        if partial:
            more += ',"partial":true'
        cut = cuts.get(seq, 0)
        if cut:
            more += f',"cut":{cut:d}'
        parts.append(
            f'{{"seq":{seq:d},"stream":{_STREAM_TEXT[stream]},"time":{when!r},'
            f'"text":{_quote(text)}{more}}}'
        )
    return parts


#: A list of strings as ``dumps`` writes it, in one call into C.
_texts_json = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), check_circular=False
).encode


def runs_json(runs: Iterable[LineRun], cuts: Mapping[int, int] | None = None) -> bytes:
    """``runs`` as the elements of a JSON array (no brackets), in ``out``'s run
    form (with ``runs``): ``[first, stream, time, [texts]]`` for a run of plain
    lines. What a run cannot say (a split piece, a partial line, a ``cut`` mark
    on the first line after missing ones) goes as line objects."""
    cuts = cuts or {}
    parts: list[str] = []
    for run in runs:
        texts, first = run.texts, run.first
        if run.split or run.partial:
            parts += _line_objects(run.lines(), cuts)
            continue
        if first in cuts:
            parts += _line_objects(LineRun(first, run.stream, run.time, texts[:1]).lines(), cuts)
            texts, first = texts[1:], first + 1
        if texts:
            parts.append(
                f"[{first:d},{_STREAM_TEXT[run.stream]},{run.time!r},{_texts_json(texts)}]"
            )
    return ",".join(parts).encode()


_STREAMS = {"stdout": Stream.STDOUT, "stderr": Stream.STDERR}
_new_tuple = tuple.__new__


def line_from_json(d: Mapping[str, Any]) -> Line:
    """A line object of a reply (:func:`line_to_json`'s)."""
    # Thousands of lines a reply: no NamedTuple __new__ keyword handling.
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


def lines_count(elements: Iterable[Any]) -> int:
    """How many lines an ``out`` reply's ``lines`` hold (a run holds several)."""
    return sum(len(e[3]) if type(e) is list else 1 for e in elements)


def runs_from_json(elements: Iterable[Any]) -> list[LineRun]:
    """The lines of an ``out`` reply's ``lines`` as runs: each run
    (``[first, stream, time, [texts]]``, see :func:`runs_json`) as it came, each
    line object as a run of one."""
    out: list[LineRun] = []
    for e in elements:
        if type(e) is list:
            first, stream, when, texts = e
            out.append(LineRun(first, _STREAMS[stream], when, texts))
        else:
            line = line_from_json(e)
            out.append(LineRun(line.seq, line.stream, line.time, [line.text], *line[4:]))
    return out


def excerpt_to_json(ex: Excerpt) -> dict[str, Any]:
    """An excerpt as JSON (its text and counts, without the Line objects shown)."""
    return {
        "text": ex.text,
        "cursor": ex.cursor,
        "lines": ex.lines,
        "omitted_lines": ex.omitted_lines,
        "omitted_bytes": ex.omitted_bytes,
        "dropped": ex.dropped,
        "eof": ex.eof,
        "exit": exit_to_json(ex.exit),
        "partial": ex.partial,
    }


def hit_to_json(hit: SearchHit) -> dict[str, Any]:
    """One search hit as JSON: its proc and scope, and the line as ``out`` gives it."""
    return {"proc": hit.proc_id, "session": hit.session, "agent": hit.agent} | line_to_json(
        hit.line
    )


#: Event fields renamed on the wire.
_EVENT_NAMES = {"proc_id": "proc"}


def event_to_json(ev: Event) -> dict[str, Any]:
    """An event as JSON: every field of it, without those that do not apply to its kind.

    Fields are taken from the Event itself, so a kind or a field the supervisor
    adds reaches clients without a change here.
    """
    out: dict[str, Any] = {}
    for field in dataclasses.fields(ev):
        value = getattr(ev, field.name)
        if field.name == "missed":
            if value:
                out["missed"] = value
            continue
        if value is None:
            continue
        out[_EVENT_NAMES.get(field.name, field.name)] = (
            value.value if isinstance(value, enum.Enum) else value
        )
    return out
