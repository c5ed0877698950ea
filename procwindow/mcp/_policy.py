"""What an MCP session may do: whose processes it reads and acts on, whether it
acts at all, and which commands it may run.

By default a session acts (``write``, ``interrupt``, ``signal``, ``term``, ``kill``,
``restart``, ``dismiss``) on the processes of its own session only, and reads
only those too: a person's dev server (``ctl run --session human``) is not the
agent's to stop or to read. ``procwindow mcp``'s options widen or narrow it:
``--read-all`` reads every process, ``--allow-all`` also acts on every one,
``--read-only`` acts on none (``run`` included), and ``--allow-command GLOB``
(repeated) runs only the commands whose line matches one of the globs, without a
shell. A refusal is one line that names the rule and the option that lifts it.
"""

from __future__ import annotations

import fnmatch
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core import ProcwindowError

__all__ = ["ACTING_TOOLS", "Policy", "Refused"]

#: The tools that change a process (or start one), in the order a client lists them.
ACTING_TOOLS = (
    "run",
    "write",
    "resize",
    "interrupt",
    "signal",
    "term",
    "kill",
    "restart",
    "dismiss",
)
#: Variables that would run other code than the allowed command.
_LOADER_VARIABLES = ("PATH", "LD_", "PYTHON", "NODE_OPTIONS", "PERL5", "RUBYOPT")


class Refused(ProcwindowError):
    """The session's policy refuses the call: one line naming the rule."""

    code = "refused"


@dataclass(frozen=True, slots=True)
class Policy:
    """The rules of one MCP session (``session``: its own session's name)."""

    session: str
    read_only: bool = False
    read_all: bool = False
    allow_all: bool = False
    commands: tuple[str, ...] = ()

    @property
    def reads_all(self) -> bool:
        return self.read_all or self.allow_all

    def check_tool(self, tool: str) -> None:
        """Refuse an acting tool under --read-only."""
        if self.read_only and tool in ACTING_TOOLS:
            raise Refused(f"{tool}: refused: this MCP server is read-only (--read-only)")

    def check_proc(self, tool: str, proc: Mapping[str, Any]) -> None:
        """Refuse ``tool`` on ``proc`` (as ``get`` gives it) of another session."""
        self.check_tool(tool)
        session = proc.get("session")
        if session == self.session:
            return
        acting = tool in ACTING_TOOLS
        if self.allow_all or (not acting and self.read_all):
            return
        verb, lift = ("acts only on", "--allow-all") if acting else ("reads only", "--read-all")
        raise Refused(
            f"{tool}: refused: process {proc.get('id')} belongs to session {session!r};"
            f" this MCP session {verb} its own session {self.session!r} ({lift} lifts this)"
        )

    def check_scope(self, tool: str, session: str | None) -> None:
        """Refuse reading another session's processes (``None``: every session)."""
        if session == self.session or self.reads_all:
            return
        whose = "every session" if session is None else f"session {session!r}"
        raise Refused(
            f"{tool}: refused: this MCP session reads only its own session"
            f" {self.session!r}, not {whose} (--read-all lifts this)"
        )

    def check_run(self, fields: Mapping[str, Any]) -> None:
        """Refuse a command (``run``'s fields) outside the allowed commands."""
        self.check_tool("run")
        if not self.commands:
            return
        argv = fields.get("argv")
        if argv is None:
            raise Refused(
                "run: refused: only allowed commands run, without a shell (--allow-command)"
            )
        line = shlex.join(argv)
        if not any(fnmatch.fnmatchcase(line, pattern) for pattern in self.commands):
            allowed = ", ".join(repr(p) for p in self.commands)
            raise Refused(
                f"run: refused: {line!r} is not an allowed command (--allow-command {allowed})"
            )
        ready = fields.get("ready")
        if isinstance(ready, dict) and ("command" in ready or "shell" in ready):
            raise Refused(
                "run: refused: a readiness command is not an allowed command (--allow-command)"
            )
        for name in fields.get("env") or {}:
            if name.startswith(_LOADER_VARIABLES):
                raise Refused(
                    f"run: refused: env {name} may change what runs; not with --allow-command"
                )
