"""The fields a command is started with: ``run``'s spec (``Supervisor.spawn``, the
``run`` request, ``procwindow ctl run``, the MCP tool ``run`` and a workspace
file's commands all take these). Part of :mod:`procwindow.core.spec`."""

from __future__ import annotations

from typing import Any

from . import _pty
from ._errors import InvalidField
from ._fields import Field, Kind, Mcp, Verb
from .rules import DEFAULT_TOOL, MAX_GRACEFUL_TIMEOUT, command_argv

__all__ = ["COLS", "ROWS", "RUN"]


def _one_command(values: dict[str, Any]) -> None:
    """Exactly one of ``argv`` and ``shell``; ``argv`` becomes what runs."""
    values["argv"] = command_argv(values["argv"], values["shell"])
    values["shell"] = None


def _terminal(values: dict[str, Any]) -> None:
    """``rows`` and ``cols`` go with ``pty`` (and default to a terminal's
    24 × 80); a PTY is its input and its one output stream: ``stdin`` and
    ``merge_stderr`` are then true."""
    if not values["pty"]:
        for name in ("rows", "cols"):
            if values[name] is not None:
                raise InvalidField("run", name, f"{name} needs pty")
        return
    if values["rows"] is None:
        values["rows"] = _pty.DEFAULT_ROWS
    if values["cols"] is None:
        values["cols"] = _pty.DEFAULT_COLS
    values["stdin"] = values["merge_stderr"] = True


#: A terminal's rows and columns (``run`` with ``pty``, and ``resize``).
ROWS = Field(
    "rows",
    Kind.COUNT,
    f"rows of its terminal (default {_pty.DEFAULT_ROWS})",
    minimum=1,
    maximum=_pty.MAX_ROWS,
    note="rows",
    mcp=Mcp(help=f"rows of its terminal, with pty (default {_pty.DEFAULT_ROWS})"),
    workspace=True,
)
COLS = Field(
    "cols",
    Kind.COUNT,
    f"columns of its terminal (default {_pty.DEFAULT_COLS})",
    minimum=1,
    maximum=_pty.MAX_COLS,
    note="columns",
    mcp=Mcp(help=f"columns of its terminal, with pty (default {_pty.DEFAULT_COLS})"),
    workspace=True,
)


RUN = Verb(
    "run",
    "start a command",
    (
        Field("session", Kind.NAME, "its session", required=True, mcp=None),
        Field("agent", Kind.NAME, "its agent", required=True, mcp=None),
        Field(
            "tool",
            Kind.TOOL,
            "who asked for it",
            default=DEFAULT_TOOL,
            mcp=None,
            workspace=True,
        ),
        Field(
            "argv",
            Kind.ARGV,
            "the program and its arguments",
            cli=None,
            mcp=None,
            workspace=True,
        ),
        Field(
            "shell",
            Kind.TEXT,
            "run LINE with /bin/sh -c instead of a command",
            mcp=None,
            workspace=True,
            note="a line run by `/bin/sh -c`; give `argv` or `shell`",
        ),
        Field(
            "cwd",
            Kind.TEXT,
            "its working directory (default: the server's)",
            mcp=Mcp(help="working directory (default: the MCP server's; relative to it)"),
            workspace=True,
        ),
        Field(
            "env",
            Kind.ENV,
            "variables to add or override (null removes one)",
            mcp=Mcp(help="environment variables to add or override"),
            workspace=True,
        ),
        Field(
            "graceful_timeout",
            Kind.GRACE,
            "seconds between SIGTERM and SIGKILL",
            note=f"seconds, 0 to {MAX_GRACEFUL_TIMEOUT:g}",
            mcp=None,
            workspace=True,
        ),
        Field(
            "stop_signal",
            Kind.SIGNAL,
            "the signal that asks it to stop (default TERM); SIGKILL follows after the"
            " graceful timeout",
            minimum=1,
            note="a signal name or number, default `TERM`",
            mcp=None,
            workspace=True,
        ),
        Field(
            "stop_command",
            Kind.ARGV,
            "a command that asks it to stop, run instead of sending its stop signal"
            " (SIGKILL still follows after the graceful timeout)",
            note="a list of strings",
            cli=None,
            mcp=None,
            workspace=True,
        ),
        Field(
            "timeout",
            Kind.SECONDS,
            "terminate it after SECONDS (its exit reason is then 'timeout')",
            note="seconds",
            mcp=Mcp(
                help="seconds it may run; then it is terminated (exit reason 'timeout')."
                " Default: no limit"
            ),
        ),
        Field(
            "merge_stderr",
            Kind.FLAG,
            "one pipe for stdout and stderr: their lines keep the exact order (all stdout)",
            mcp=Mcp(
                help="true: stderr goes into stdout's pipe, so their lines keep their exact"
                " order (they are then all reported as stdout)"
            ),
        ),
        Field(
            "stdin",
            Kind.FLAG,
            "keep a pipe to its stdin, for 'ctl write'",
            mcp=Mcp(
                help="true: keep a pipe to its stdin open, to send input with `write`"
                " (default: stdin is empty)"
            ),
        ),
        Field(
            "pty",
            Kind.FLAG,
            "run it on a pseudo-terminal (its controlling terminal): colours, prompts and"
            " full-screen programs work; stdout and stderr are one stream, stdin is open",
            mcp=Mcp(
                help="true: run it on a pseudo-terminal, as in a terminal window (colours,"
                " progress bars, password prompts, REPLs, full-screen programs); stdout and"
                " stderr are then one stream and `write` sends keys to it"
            ),
            workspace=True,
        ),
        ROWS,
        COLS,
        Field(
            "ready",
            Kind.READY,
            "how it shows it is ready",
            note="an object, a line pattern or a port",
            workspace=True,
            mcp=Mcp(
                help="how it shows it is ready, for `wait_ready`: a string is a regex a"
                ' line of its output must match ("listening on"); an integer, a TCP port'
                " on 127.0.0.1 that must accept a connection (8080); an object holds"
                ' exactly one of "line" (with "regex": false for plain text, "stream"),'
                ' "port" (with "host"), "http" (a URL a GET of which must answer 2xx or'
                ' 3xx, or "status"), "command" (a list) or "shell" (a line): a command that'
                ' must exit 0, and may hold "interval" and "timeout" seconds'
            ),
        ),
        Field(
            "reuse",
            Kind.FLAG,
            "if the same command (argv, cwd, session and agent) runs already, give its id"
            " instead of starting another",
            mcp=Mcp(
                help="true: if the same command already runs in the same directory,"
                " session and agent, return that process instead of starting a second one"
                " (for dev servers)"
            ),
        ),
    ),
    library="spawn",
    ctl="run",
    mcp="run",
    rules=(_one_command, _terminal),
)
