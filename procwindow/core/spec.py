"""One definition of every operation: its fields, their types, bounds, defaults and help.

The library (:class:`~procwindow.core.Supervisor`), the control protocol, ``procwindow
ctl``, the MCP tools, workspace files and docs/protocol.md all take the same values
from users. Each :class:`Verb` here says, once, what an operation takes; each surface
derives what it shows from it (ctl's options and their help, the MCP tools' input
schemas, the protocol's field tables) and refuses a bad value through
:meth:`Verb.check`, so the same input is refused the same way, with the same
one-line :class:`~procwindow.core.InvalidField`, wherever it comes from. A drift test
(tests/test_spec.py) holds every surface to this module.

A verb is named as the protocol names it (``out``; the library's ``read``), a field
as the request field and the library's keyword (``proc`` is the library's first
positional ``proc_id``). ``cli`` is the spelling of ``procwindow ctl``; ``mcp`` the
MCP tool's argument, which may be worded for a model and bounded tighter (a tool's
result is capped), never looser.

>>> VERBS["excerpt"].check({"proc": 3, "max_bytes": 512})["head"]
20
>>> VERBS["excerpt"].check({"proc": 3, "max_bytes": 0})
Traceback (most recent call last):
...
procwindow.core._errors.InvalidField: max_bytes must be an integer of at least 256, got 0
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ._errors import InvalidField
from ._fields import MAX_ID, READY_CHOICES, READY_KINDS, Field, Kind, Mcp, Verb
from ._run_spec import COLS, ROWS, RUN
from ._types import ExitReason, Stream

__all__ = [
    "MAX_EXCERPT_BYTES",
    "MAX_EXCERPT_LINES",
    "MAX_ID",
    "MCP_MAX_WAIT",
    "MCP_TEXT_CAP",
    "MIN_EXCERPT_BYTES",
    "OPS",
    "READY_CHOICES",
    "READY_KINDS",
    "VERBS",
    "Field",
    "Kind",
    "Mcp",
    "Verb",
    "check",
]

#: What an MCP tool's result holds at most (bytes of text, roughly): its bounds keep to it.
MCP_TEXT_CAP = 16 * 1024
#: The longest an MCP tool waits (seconds): a client times its calls out sooner.
MCP_MAX_WAIT = 3600
#: Bounds of an excerpt: its text (bytes), and its head and tail lines together.
MIN_EXCERPT_BYTES = 256
MAX_EXCERPT_BYTES = 1024 * 1024
MAX_EXCERPT_LINES = 10_000


def check(verb: str, **given: Any) -> dict[str, Any]:
    """``VERBS[verb].check(given)``, for the library's methods."""
    return VERBS[verb].check(given)


def _commands_of_a_workspace(values: dict[str, Any]) -> None:
    if values["commands"] is not None and values["workspace"] is None:
        raise InvalidField("down", "commands", "commands needs workspace")


def _excerpt_lines(values: dict[str, Any]) -> None:
    if values["head"] + values["tail"] > MAX_EXCERPT_LINES:
        raise InvalidField(
            "excerpt", "head", f"head and tail together must be at most {MAX_EXCERPT_LINES}"
        )


# The fields several verbs share.
PROC = Field(
    "proc",
    Kind.ID,
    "the process's id",
    required=True,
    cli="ID",
    mcp=Mcp(name="id", help="the process id that `run` returned"),
)
SESSION = Field("session", Kind.TEXT, "only this session's processes", mcp=None)
AGENT = Field("agent", Kind.TEXT, "only this agent's processes", mcp=None)
SEQ = Field(
    "since",
    Kind.COUNT,
    "only lines after this seq",
    default=0,
    minimum=0,
    note="seq",
    mcp=Mcp(help="only lines after this seq (a `cursor` from an earlier result)"),
)
STREAM = Field(
    "stream",
    Kind.CHOICE,
    "only lines of this stream",
    choices=(Stream.STDOUT.value, Stream.STDERR.value),
    note="`stdout`/`stderr`",
    mcp=Mcp(help="only lines of this stream (default: both)"),
)
TIMEOUT = Field("timeout", Kind.SECONDS, "give up after SECONDS", note="seconds")
#: The wait of an MCP tool: bounded, and 30 s unless the model asks for more.
MCP_WAIT = replace(
    TIMEOUT,
    mcp=Mcp(
        help="seconds to wait; keep it under your client's tool-call timeout",
        default=30,
        maximum=MCP_MAX_WAIT,
    ),
)
STARTED_SINCE = Field(
    "since",
    Kind.TIME,
    "only processes started since then",
    note="a start time, Unix seconds",
    mcp=None,
)
PROC_ID = (PROC,)
SCOPE = (SESSION, AGENT)

_VERB_LIST: tuple[Verb, ...] = (
    Verb("hello", "the server's name, protocol versions and pid"),
    RUN,
    Verb("top", "a table of processes", SCOPE, library="top", ctl="top"),
    Verb("idx", "the index as TSV", SCOPE, library="idx", ctl="idx"),
    Verb("procs", "the processes of the live view, newest first", SCOPE, library="procs"),
    Verb(
        "get",
        "one process, live or from the history",
        PROC_ID,
        library="get",
        ctl="show",
    ),
    Verb(
        "history",
        "every recorded process, newest first",
        (
            replace(SESSION, mcp=Mcp(help="only this session's processes (default: yours)")),
            replace(AGENT, mcp=Mcp(help="only this agent's processes (default: yours)")),
            Field("tool", Kind.TEXT, "only processes of this tool", mcp=None),
            Field(
                "reason",
                Kind.CHOICE,
                "how it ended",
                choices=tuple(r.value for r in ExitReason),
                note="an exit reason",
                mcp=Mcp(),
            ),
            Field(
                "command",
                Kind.TEXT,
                "only processes whose command line holds this text (any case)",
                note="text",
                mcp=Mcp(),
            ),
            STARTED_SINCE,
            Field(
                "limit",
                Kind.COUNT,
                "the newest N only",
                minimum=1,
                mcp=Mcp(default=20, maximum=200),
            ),
        ),
        library="history",
        ctl="history",
        mcp="history",
    ),
    Verb(
        "out",
        "a process's output lines after a cursor",
        (
            PROC,
            SEQ,
            STREAM,
            Field(
                "limit",
                Kind.COUNT,
                "at most this many lines",
                minimum=1,
                mcp=Mcp(default=200, maximum=5000),
            ),
            Field(
                "follow",
                Kind.FLAG,
                "keep printing until its output ends",
                mcp=None,
                library=False,
            ),
            Field(
                "partial",
                Kind.FLAG,
                "also an unterminated last line (a prompt, a progress bar)",
                mcp=None,
            ),
            Field(
                "with_proc",
                Kind.FLAG,
                "the reply ends with the process, as get gives it (one request, not two)",
                cli=None,
                mcp=None,
                library=False,
            ),
            Field(
                "runs",
                Kind.FLAG,
                "lines that follow one another in one stream, read at one time, come as"
                " one run [first seq, stream, time, [texts]] (less to send and decode)",
                cli=None,
                mcp=None,
                library=False,
            ),
        ),
        library="read",
        ctl="out",
        mcp="read",
    ),
    Verb(
        "search",
        "output lines that match a pattern, newest processes first",
        (
            Field(
                "pattern",
                Kind.TEXT,
                "what to look for",
                required=True,
                cli="PATTERN",
                note="a non-empty string",
                mcp=Mcp(help="text to find (case-insensitive), or a regex"),
            ),
            Field(
                "regex",
                Kind.FLAG,
                "PATTERN is a regex (RE2 syntax)",
                mcp=Mcp(
                    help="true: `pattern` is a regex (RE2 syntax: no lookaround or backreferences)"
                ),
            ),
            Field("case_sensitive", Kind.FLAG, "match case", mcp=None),
            SESSION,
            AGENT,
            replace(
                PROC,
                required=False,
                cli="",
                help="search this process only",
                mcp=Mcp(name="id", help="search this process's output only"),
            ),
            STARTED_SINCE,
            Field(
                "limit",
                Kind.COUNT,
                "stop after N matching lines",
                minimum=1,
                note="hits",
                mcp=Mcp(help="at most this many lines", default=50, maximum=500),
            ),
        ),
        library="search",
        ctl="search",
        mcp="search",
    ),
    Verb(
        "wait_for",
        "wait for a line that matches a pattern",
        (
            PROC,
            Field(
                "pattern",
                Kind.TEXT,
                "a regex (RE2 syntax), searched for in each line",
                required=True,
                cli="PATTERN",
                note="a non-empty string",
                mcp=Mcp(
                    help="what the line must contain: a regex (RE2 syntax, searched for in the"
                    " line), or plain text with regex=false"
                ),
            ),
            Field(
                "regex",
                Kind.FLAG,
                "false: the pattern is plain text",
                default=True,
                cli=None,
                mcp=Mcp(help="false: `pattern` is plain text"),
            ),
            STREAM,
            SEQ,
            MCP_WAIT,
        ),
        library="wait_for",
        ctl="wait-for",
        mcp="wait_for",
    ),
    Verb(
        "wait",
        "wait until a process exits",
        (PROC, MCP_WAIT),
        library="wait",
        ctl="wait",
        mcp="wait",
    ),
    Verb(
        "ready",
        "wait until a process's readiness check passes",
        (PROC, MCP_WAIT),
        library="wait_ready",
        ctl="ready",
        mcp="wait_ready",
    ),
    Verb(
        "excerpt",
        "the first and last lines of a process's output",
        (
            PROC,
            Field(
                "head",
                Kind.COUNT,
                "lines from the start",
                default=20,
                minimum=0,
                mcp=Mcp(maximum=1000),
            ),
            Field(
                "tail",
                Kind.COUNT,
                "lines from the end",
                default=40,
                minimum=0,
                mcp=Mcp(maximum=1000),
            ),
            Field(
                "max_bytes",
                Kind.COUNT,
                "at most this many bytes of text",
                default=8000,
                minimum=MIN_EXCERPT_BYTES,
                maximum=MAX_EXCERPT_BYTES,
                mcp=Mcp(help="at most this much text", maximum=MCP_TEXT_CAP),
            ),
            SEQ,
        ),
        library="excerpt",
        ctl="excerpt",
        mcp="excerpt",
        rules=(_excerpt_lines,),
    ),
    Verb(
        "write",
        "write to a process's stdin",
        (
            PROC,
            Field(
                "data",
                Kind.TEXT,
                "text to send to its stdin",
                default="",
                cli="DATA",
                mcp=Mcp(help="text to send to its stdin, as is (add \\n to end a line)"),
            ),
            Field(
                "close",
                Kind.FLAG,
                "then close its stdin (it reads end-of-file)",
                mcp=Mcp(help="close its stdin afterwards (it then reads end-of-file)"),
                library=False,
            ),
        ),
        library="write",
        ctl="write",
        mcp="write",
    ),
    Verb(
        "term",
        "its stop signal (SIGTERM unless it has its own) or stop command, then SIGKILL after"
        " the graceful timeout; waits for the exit",
        PROC_ID,
        library="term",
        ctl="term",
        mcp="term",
    ),
    Verb(
        "kill", "SIGKILL now; waits for the exit", PROC_ID, library="kill", ctl="kill", mcp="kill"
    ),
    Verb(
        "interrupt",
        "SIGINT, as Ctrl-C",
        PROC_ID,
        library="interrupt",
        ctl="interrupt",
        mcp="interrupt",
    ),
    Verb(
        "signal",
        "send a signal to a process's group, or to one process of its tree",
        (
            PROC,
            Field(
                "signal",
                Kind.SIGNAL,
                "the signal: a name (TERM, INT, HUP, USR1, KILL…) or a number",
                required=True,
                cli="SIGNAL",
            ),
            Field(
                "os_pid",
                Kind.COUNT,
                "only this process of its tree (its kernel pid, as tree lists it)",
                minimum=1,
                cli="--pid",
                note="a kernel pid of its tree (without it: the process group)",
            ),
        ),
        library="signal",
        ctl="signal",
        mcp="signal",
    ),
    Verb(
        "dismiss",
        "hide an exited process from the live view; its history and logs are kept"
        " ('forget' deletes them)",
        PROC_ID,
        library="dismiss",
        ctl="dismiss",
        mcp="dismiss",
    ),
    Verb(
        "forget",
        "delete an exited process for good: its history record and its logs",
        PROC_ID,
        library="forget",
        ctl="forget",
    ),
    Verb(
        "restart",
        "run a process's command again as a new process",
        PROC_ID,
        library="restart",
        ctl="restart",
        mcp="restart",
    ),
    Verb(
        "resize",
        "set the size of a process's terminal (spawned with pty)",
        (
            PROC,
            replace(ROWS, required=True, cli="ROWS", mcp=Mcp(help="rows")),
            replace(COLS, required=True, cli="COLS", mcp=Mcp(help="columns")),
        ),
        library="resize",
        ctl="resize",
        mcp="resize",
    ),
    Verb(
        "screen",
        "the screen of a process's terminal (spawned with pty), as text",
        (
            PROC,
            Field(
                "styled",
                Kind.FLAG,
                "each row's runs of colours and attributes too",
                cli=None,
                mcp=None,
            ),
        ),
        library="screen",
        ctl="screen",
        mcp="screen",
    ),
    Verb(
        "ports",
        "the TCP ports a process and its descendants listen on",
        PROC_ID,
        library="ports",
        ctl="ports",
        mcp="ports",
    ),
    Verb(
        "tree",
        "the processes of a process's tree: pid, parent, state, command, CPU and memory",
        PROC_ID,
        library="tree",
        ctl="tree",
        mcp="tree",
    ),
    Verb(
        "events",
        "events whose topic matches a pattern",
        (
            Field("pattern", Kind.TEXT, "a topic pattern", default=">", cli="PATTERN", mcp=None),
            replace(PROC, required=False, cli="", help="this process's events only", mcp=None),
        ),
        library="subscribe",
        ctl="events",
    ),
    Verb("sessions", "sessions and agents with running/total counts", ctl="sessions"),
    Verb(
        "up",
        "load a workspace file and start it",
        (
            Field(
                "path",
                Kind.NONEMPTY,
                "the workspace file",
                required=True,
                cli="FILE",
                mcp=None,
                note="a workspace file, best absolute: a relative one is relative to the"
                " server's directory",
            ),
            Field(
                "commands",
                Kind.STRINGS,
                "only these commands, and those they depend on",
                cli="COMMAND",
                mcp=None,
                note="a list of command names of the file; default: all",
            ),
            Field(
                "no_deps",
                Kind.FLAG,
                "with commands: not what they depend on (their dependencies on others dropped)",
                mcp=None,
            ),
        ),
        ctl="up",
    ),
    Verb(
        "down",
        "stop running workspaces, dependents first",
        (
            Field(
                "workspace",
                Kind.TEXT,
                "the workspace (default: every one)",
                cli="NAME",
                mcp=None,
                note="a name; default: every running one",
            ),
            Field(
                "commands",
                Kind.STRINGS,
                "only these commands and their dependents",
                cli="COMMAND",
                mcp=None,
                note="a list of command names of that workspace; default: all",
            ),
        ),
        ctl="down",
        rules=(_commands_of_a_workspace,),
    ),
    Verb("workspaces", "the running workspaces and their commands", ctl="workspaces"),
    Verb(
        "stats",
        "the resource use of live processes",
        (Field("procs", Kind.IDS, "the processes", required=True, cli=None, mcp=None),),
    ),
)

#: Every operation, by the protocol's name (``wire`` false: the library's alone).
VERBS: dict[str, Verb] = {verb.name: verb for verb in _VERB_LIST}
#: The operations a request may ask for.
OPS: frozenset[str] = frozenset(verb.name for verb in _VERB_LIST if verb.wire)
