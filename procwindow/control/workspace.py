"""Workspaces: a TOML file naming sessions, agents and the commands they start.

.. code-block:: toml

    name = "demo"                 # optional: the control socket's name
    graceful_timeout = 5.0        # optional: the supervisor's default

    [[session]]
    name = "web"

    [[session.agent]]
    name = "frontend"

    [[session.agent.command]]
    tool = "shell"                # optional, default "shell"
    argv = ["npm", "run", "dev"]  # or: shell = "npm run dev | tee dev.log"
    cwd = "web"                   # optional, relative to the workspace file's
                                  # directory, which is also the default
    env = { PORT = "3000" }       # optional
    graceful_timeout = 2.0        # optional

A file is checked whole before any process starts: an error names the file,
the line and the key at fault.
"""

from __future__ import annotations

import os
import re
import shutil
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import Proc, ProcwindowError, Supervisor
from ..core._topics import check_scope_name
from ._sockdir import check_name

__all__ = ["Command", "Workspace", "WorkspaceError", "load_workspace", "parse_workspace"]


class WorkspaceError(ProcwindowError):
    """A workspace file is malformed: ``path``, ``line`` and ``key`` say where."""

    def __init__(self, path: str, line: int | None, key: str, message: str) -> None:
        where = f"{path}:{line}" if line else path
        super().__init__(f"{where}: {key}: {message}" if key else f"{where}: {message}")
        self.path = path
        self.line = line
        self.key = key


@dataclass(frozen=True, slots=True)
class Command:
    """One command a workspace starts."""

    session: str
    agent: str
    argv: tuple[str, ...]
    tool: str = "shell"
    cwd: str | None = None
    env: Mapping[str, str] | None = None
    graceful_timeout: float | None = None


@dataclass(frozen=True, slots=True)
class Workspace:
    """A parsed workspace: its sessions (with their agents) and commands, in file order."""

    path: str
    name: str | None
    graceful_timeout: float | None
    sessions: dict[str, list[str]] = field(default_factory=dict)
    commands: list[Command] = field(default_factory=list)

    async def start(self, sup: Supervisor) -> list[Proc]:
        """Start every command, in order; return their procs."""
        return [
            await sup.spawn(
                c.argv,
                session=c.session,
                agent=c.agent,
                tool=c.tool,
                cwd=c.cwd,
                env=c.env,
                graceful_timeout=c.graceful_timeout,
            )
            for c in self.commands
        ]


_TOP_KEYS = {"name", "graceful_timeout", "session"}
_SESSION_KEYS = {"name", "agent"}
_AGENT_KEYS = {"name", "command"}
_COMMAND_KEYS = {"tool", "argv", "shell", "cwd", "env", "graceful_timeout"}


def load_workspace(path: str | os.PathLike[str]) -> Workspace:
    """Read and check a workspace file."""
    path_s = os.fspath(path)
    try:
        text = Path(path_s).read_text(encoding="utf-8")
    except OSError as exc:
        raise WorkspaceError(path_s, None, "", exc.strerror or str(exc)) from None
    except UnicodeDecodeError as exc:
        raise WorkspaceError(path_s, None, "", f"not UTF-8 text ({exc.reason})") from None
    return parse_workspace(text, path_s)


def parse_workspace(text: str, path: str = "<workspace>") -> Workspace:
    """Check a workspace's text; ``path`` names it in errors and anchors relative cwds."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"line (\d+)", str(exc))
        raise WorkspaceError(
            path, int(match.group(1)) if match else None, "", f"invalid TOML: {exc}"
        ) from None
    lines = _KeyLines(text)
    base = os.path.dirname(os.path.abspath(path)) if not path.startswith("<") else os.getcwd()

    def fail(key: tuple[str | int, ...], message: str) -> WorkspaceError:
        return WorkspaceError(path, lines.find(key), _key_text(key), message)

    def check_keys(table: dict[str, Any], allowed: set[str], where: tuple[str | int, ...]) -> None:
        for key in table:
            if key not in allowed:
                raise fail(
                    (*where, key), f"unknown key (expected one of: {', '.join(sorted(allowed))})"
                )

    check_keys(data, _TOP_KEYS, ())
    name = data.get("name")
    if name is not None:
        if not isinstance(name, str):
            raise fail(("name",), "must be a string")
        try:
            check_name(name)
        except ProcwindowError as exc:
            raise fail(("name",), str(exc)) from None
    grace = _grace(data, (), fail)
    sessions_raw = data.get("session", [])
    if not isinstance(sessions_raw, list):
        raise fail(("session",), "must be an array of tables: write [[session]]")
    ws = Workspace(path=path, name=name, graceful_timeout=grace)
    for si, session in enumerate(sessions_raw):
        where_s: tuple[str | int, ...] = ("session", si)
        check_keys(session, _SESSION_KEYS, where_s)
        sname = _scope_name(session, "session", where_s, fail)
        if sname in ws.sessions:
            raise fail((*where_s, "name"), f"session {sname!r} is declared twice")
        ws.sessions[sname] = []
        agents_raw = session.get("agent", [])
        if not isinstance(agents_raw, list):
            raise fail((*where_s, "agent"), "must be an array of tables: write [[session.agent]]")
        for ai, agent in enumerate(agents_raw):
            where_a = (*where_s, "agent", ai)
            check_keys(agent, _AGENT_KEYS, where_a)
            aname = _scope_name(agent, "agent", where_a, fail)
            if aname in ws.sessions[sname]:
                raise fail((*where_a, "name"), f"agent {aname!r} is declared twice in {sname!r}")
            ws.sessions[sname].append(aname)
            commands_raw = agent.get("command", [])
            if not isinstance(commands_raw, list):
                raise fail(
                    (*where_a, "command"),
                    "must be an array of tables: write [[session.agent.command]]",
                )
            for ci, cmd in enumerate(commands_raw):
                ws.commands.append(
                    _command(cmd, sname, aname, (*where_a, "command", ci), base, fail)
                )
    return ws


def _scope_name(table: dict[str, Any], kind: str, where: tuple[str | int, ...], fail: Any) -> str:
    if "name" not in table:
        raise fail(where, f"every {kind} needs a name")
    try:
        return check_scope_name(kind, table["name"])
    except ProcwindowError as exc:
        raise fail((*where, "name"), str(exc)) from None


def _grace(table: dict[str, Any], where: tuple[str | int, ...], fail: Any) -> float | None:
    value = table.get("graceful_timeout")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise fail((*where, "graceful_timeout"), "must be a number of seconds ≥ 0")
    return float(value)


def _command(
    cmd: dict[str, Any],
    session: str,
    agent: str,
    where: tuple[str | int, ...],
    base: str,
    fail: Any,
) -> Command:
    for key in cmd:
        if key not in _COMMAND_KEYS:
            raise fail(
                (*where, key), f"unknown key (expected one of: {', '.join(sorted(_COMMAND_KEYS))})"
            )
    argv = cmd.get("argv")
    shell = cmd.get("shell")
    if (argv is None) == (shell is None):
        raise fail(where, "give exactly one of argv (a list) or shell (a string)")
    if shell is not None:
        if not isinstance(shell, str) or not shell.strip():
            raise fail((*where, "shell"), "must be a non-empty string")
        args: tuple[str, ...] = ("/bin/sh", "-c", shell)
    else:
        if (
            not isinstance(argv, list)
            or not argv
            or not all(isinstance(a, str) for a in argv)
            or not argv[0]
        ):
            raise fail((*where, "argv"), "must be a non-empty list of strings")
        if any("\0" in a for a in argv):
            raise fail((*where, "argv"), "contains a NUL byte")
        args = tuple(argv)
    tool = cmd.get("tool", "shell")
    if not isinstance(tool, str) or not tool or any(c in tool for c in "\t\n\r\0"):
        raise fail((*where, "tool"), "must be a non-empty single-line string")
    # Like a compose file: commands run in the workspace file's directory by default.
    cwd = cmd.get("cwd", ".")
    if not isinstance(cwd, str):
        raise fail((*where, "cwd"), "must be a string")
    cwd = os.path.normpath(os.path.join(base, os.path.expanduser(cwd)))
    if not os.path.isdir(cwd):
        raise fail((*where, "cwd"), f"no such directory: {cwd}")
    env = cmd.get("env")
    if env is not None and (
        not isinstance(env, dict)
        or not all(
            isinstance(k, str) and k and "=" not in k and isinstance(v, str) for k, v in env.items()
        )
    ):
        raise fail((*where, "env"), "must be a table of string values")
    # Find the program now, so a typo fails before anything starts.
    program = args[0]
    search_path = (env or {}).get("PATH", os.environ.get("PATH", os.defpath))
    if "/" in program:
        full = program if os.path.isabs(program) else os.path.join(cwd, program)
        if not os.path.exists(full):
            raise fail((*where, "argv"), f"command not found: {program!r}")
    elif shutil.which(program, path=search_path) is None:
        raise fail((*where, "argv"), f"command not found: {program!r}")
    return Command(
        session=session,
        agent=agent,
        argv=args,
        tool=tool,
        cwd=cwd,
        env=dict(env) if env is not None else None,
        graceful_timeout=_grace(cmd, where, fail),
    )


def _key_text(key: Sequence[str | int]) -> str:
    out = ""
    for part in key:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


class _KeyLines:
    """Finds the line of a key path like ("session", 0, "agent", 1, "argv").

    tomllib gives no positions, so this follows table headers and ``key =``
    lines in the text; good for the flat, array-of-tables layout workspaces use.
    """

    _HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-\s\"]+?)\s*\]\]?\s*(#.*)?$")
    _KEY = re.compile(r"^\s*([A-Za-z0-9_\-]+|\"[^\"]*\")\s*=")

    def __init__(self, text: str) -> None:
        self.where: dict[tuple[str | int, ...], int] = {}
        counters: dict[tuple[str | int, ...], int] = {}
        current: tuple[str | int, ...] = ()
        for number, line in enumerate(text.splitlines(), start=1):
            header = self._HEADER.match(line)
            if header and line.lstrip().startswith("["):
                names = [n.strip().strip('"') for n in header.group(2).split(".")]
                is_array = header.group(1) == "[["
                path: list[str | int] = []
                for i, name in enumerate(names):
                    path.append(name)
                    last = i == len(names) - 1
                    if last and is_array:
                        key = tuple(path)
                        counters[key] = counters.get(key, -1) + 1
                        path.append(counters[key])
                    elif not last:
                        # an enclosing array of tables: its most recent element
                        idx = counters.get(tuple(path))
                        if idx is not None:
                            path.append(idx)
                current = tuple(path)
                self.where.setdefault(current, number)
                continue
            key_match = self._KEY.match(line)
            if key_match:
                self.where.setdefault((*current, key_match.group(1).strip('"')), number)

    def find(self, key: tuple[str | int, ...]) -> int | None:
        """The line of ``key``, else of the nearest enclosing table, else None."""
        for end in range(len(key), 0, -1):
            line = self.where.get(tuple(key[:end]))
            if line is not None:
                return line
        return None
