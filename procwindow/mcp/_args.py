"""The arguments of the MCP tools, from the operations' spec.

A tool that carries out an operation (``read`` is ``out``, ``wait_ready`` is
``ready``: :data:`procwindow.core.spec.VERBS`' ``mcp``) takes its fields as the
spec words and bounds them for MCP (:meth:`Field.for_mcp`): :func:`arg` makes the
annotation the SDK builds the tool's input schema from, and :func:`check_arguments`
refuses what the spec refuses, as it refuses it everywhere (an unknown argument,
``true`` for a number, a bound), with the spec's one-line message, before the SDK's
own validation sees the call.

A few arguments are the tools' own (``TOOL_ONLY``): how ``run`` takes its command,
and whether ``list`` and ``search`` look beyond the agent's own processes.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from ..core import InvalidField
from ..core.rules import shown
from ..core.spec import MCP_MAX_WAIT, VERBS, Field, Kind

__all__ = ["TOOLS", "TOOL_ONLY", "arg", "check_arguments", "tool_fields"]

#: Each tool that carries out an operation, and that operation's name.
TOOLS: dict[str, str] = {verb.mcp: verb.name for verb in VERBS.values() if verb.mcp}

#: The arguments that are a tool's own, not fields of an operation.
TOOL_ONLY: dict[str, dict[str, Field]] = {
    "run": {
        # Checked by the tool: a string (a shell line) or a list (argv).
        "command": Field(
            "command",
            Kind.TEXT,
            "a shell command line (run by /bin/sh -c, so pipes, &&, $VARS and globs work),"
            " or a list: the program and its arguments, run directly without a shell",
            required=True,
        ),
        "shell": Field(
            "shell",
            Kind.FLAG,
            "override how `command` runs: false splits a string into words (shell quoting"
            " rules) and runs them without a shell; true runs a list, quoted, as one line",
            undecided=True,
        ),
        "wait": Field(
            "wait",
            Kind.SECONDS,
            "seconds to wait for it to exit: if it does, the result has its exit and the"
            " head and tail of its output (else it keeps running). Default: return at once",
            maximum=MCP_MAX_WAIT,
        ),
    },
    "list": {
        "all_sessions": Field(
            "all_sessions",
            Kind.FLAG,
            "list every process of the server, not only your session's (needs --read-all)",
        )
    },
    "history": {
        "all_sessions": Field(
            "all_sessions",
            Kind.FLAG,
            "every session's runs, not only yours (needs --read-all)",
        )
    },
    "search": {
        "all_sessions": Field(
            "all_sessions",
            Kind.FLAG,
            "search every process's output, not only your session's (needs --read-all)",
        ),
        "context": Field(
            "context",
            Kind.COUNT,
            "lines to show before and after each hit (as grep -C)",
            default=0,
            minimum=0,
            maximum=20,
        ),
    },
}

#: The tools that carry out no operation of their own (``list`` asks ``procs``).
_OWN_TOOLS = ("list",)


@functools.cache
def tool_fields(tool: str) -> dict[str, Field]:
    """Every argument of ``tool``, by its name there, as the tool takes it (one
    dict per tool, shared: not to be changed)."""
    fields: dict[str, Field] = {}
    verb = TOOLS.get(tool)
    if verb is not None:
        for f in VERBS[verb].fields:
            if f.mcp is not None:
                mcp = f.for_mcp()
                fields[mcp.name] = mcp
    fields.update(TOOL_ONLY.get(tool, {}))
    return fields


def check_arguments(tool: str, arguments: Mapping[str, Any]) -> None:
    """Refuse ``arguments`` of ``tool`` as the spec refuses them: InvalidField."""
    if tool not in TOOLS and tool not in _OWN_TOOLS:
        return
    fields = tool_fields(tool)
    unknown = sorted(set(arguments) - set(fields))
    if unknown:
        raise InvalidField(
            TOOLS.get(tool, tool),
            unknown[0],
            f"unknown field {unknown[0]!r}: {tool} takes " + (", ".join(fields) or "no field"),
        )
    verb = TOOLS.get(tool, tool)
    for name, f in fields.items():
        if f.required and arguments.get(name) is None:
            raise InvalidField(verb, name, f"{name} is required")
    for name, value in arguments.items():
        f = fields[name]
        if value is None:
            continue
        if tool == "run" and name == "command":
            _check_command(value)
            continue
        f.check(value)


def _check_command(value: Any) -> None:
    """``run``'s ``command``: a shell line, or a list of strings (argv)."""
    if isinstance(value, str) and value.strip():
        return
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return
    raise InvalidField(
        "run",
        "command",
        "command must be a shell command line or a non-empty list of strings, got " + shown(value),
    )


_PY_TYPES: dict[Kind, Any] = {
    Kind.TEXT: str,
    Kind.NONEMPTY: str,
    Kind.ID: int,
    Kind.COUNT: int,
    Kind.SECONDS: float,
    Kind.FLAG: bool,
    Kind.ENV: dict[str, str],
    Kind.READY: str | int | dict[str, Any],
    Kind.SIGNAL: str | int,
}


def arg(tool: str, name: str) -> Any:
    """The annotation of argument ``name`` of ``tool``: its type and, for the SDK's
    input schema, its description and bounds, from the spec (needs pydantic)."""
    from pydantic import Field as Schema

    f = tool_fields(tool)[name]
    if f.choices:
        kind: Any = Literal[f.choices]
    elif tool == "run" and name == "command":
        kind = str | list[str]
    else:
        kind = _PY_TYPES[f.kind]
    bounds: dict[str, Any] = {}
    low, high = f.bounds()
    if f.kind in (Kind.ID, Kind.COUNT):
        if low is not None:
            bounds["ge"] = low
        if high is not None and f.kind is Kind.COUNT:
            bounds["le"] = high
    if f.kind is Kind.SECONDS:
        bounds["gt"] = 0
    if f.kind is Kind.NONEMPTY:
        bounds["min_length"] = 1
    if not f.required and f.default is None:
        kind = kind | None
    return Annotated[kind, Schema(description=f.help, **bounds)]
