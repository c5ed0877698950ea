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

A file is checked whole before any process starts: every key must be known and
of the right type, session names and agent names (within their session) must
be unique scope names without control characters, ``argv`` strings may hold
anything but NUL, ``env`` names may not hold ``=`` or NUL, every ``cwd`` must be
an existing directory and every program must be found, and a
``graceful_timeout`` is between 0 and ``MAX_GRACEFUL_TIMEOUT`` seconds.

Limits, so that any file is accepted or refused in bounded time and memory: a
regular file of at most 1 MiB (``MAX_FILE_SIZE``) of UTF-8 text, at most
10,000 commands (``MAX_COMMANDS``), and dotted keys of at most 16 parts
(``MAX_KEY_PARTS``). Nesting deeper than the TOML parser can follow is refused.

Any problem raises one WorkspaceError, a one-line message ``FILE:LINE: KEY:
message`` (``FILE: KEY: message`` when the line cannot be known).
"""

from __future__ import annotations

import datetime
import os
import re
import stat
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core import (
    DEFAULT_TOOL,
    MAX_GRACEFUL_TIMEOUT,
    CommandError,
    CommandNotFound,
    NotExecutable,
    Proc,
    ProcwindowError,
    Supervisor,
    check_graceful_timeout,
    command_argv,
)
from ..core._spawn import resolve as resolve_command
from ..core._text import escape_controls
from ..core.rules import check_scope_name, check_tool
from ._sockdir import check_name
from ._toml_lines import Key, key_line, key_text, long_dotted_key

__all__ = [
    "MAX_COMMANDS",
    "MAX_FILE_SIZE",
    "MAX_KEY_PARTS",
    "Command",
    "Workspace",
    "WorkspaceError",
    "load_workspace",
    "parse_workspace",
]

#: The largest workspace file accepted, in bytes.
MAX_FILE_SIZE = 1 << 20
#: The most commands one workspace may start.
MAX_COMMANDS = 10_000
#: The most parts a dotted key (``a.b.c``) may have. tomllib's cost grows with
#: the square of a key's length, so a file of long dotted keys could take hours.
MAX_KEY_PARTS = 16


class WorkspaceError(ProcwindowError):
    """A workspace file is malformed: ``path``, ``line`` and ``key`` say where.

    The message is always one line: characters that would break it (newlines,
    other control characters) are shown escaped.
    """

    def __init__(self, path: str, line: int | None, key: str, message: str) -> None:
        where = escape_controls(f"{path}:{line}" if line else path)
        # Keys and values come from the file, which may hold a name of a megabyte.
        key_s = _clip(escape_controls(key), 200)
        message_s = _clip(escape_controls(message), 400)
        super().__init__(f"{where}: {key_s}: {message_s}" if key else f"{where}: {message_s}")
        self.path = path
        self.line = line
        self.key = key


@dataclass(frozen=True, slots=True)
class Command:
    """One command a workspace starts."""

    session: str
    agent: str
    argv: tuple[str, ...]
    tool: str = DEFAULT_TOOL
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
        """Start every command, in order; return their procs.

        Everything a spawn checks was checked when the file was parsed.
        """
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

_FILE_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def load_workspace(path: str | os.PathLike[str]) -> Workspace:
    """Read and check a workspace file."""
    path_s = os.fspath(path)
    return parse_workspace(_read(path_s), path_s)


def _read(path: str) -> str:
    """The file's text: a regular file, at most MAX_FILE_SIZE bytes of UTF-8."""
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise WorkspaceError(path, None, "", f"cannot open: {exc.strerror or exc}") from None
    except ValueError as exc:  # a NUL in the path, or a path that cannot be encoded
        raise WorkspaceError(path, None, "", f"cannot open: {exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = next((name for test, name in _FILE_KINDS if test(st.st_mode)), "a special file")
            raise WorkspaceError(path, None, "", f"not a regular file ({kind})")
        if st.st_size > MAX_FILE_SIZE:
            raise WorkspaceError(path, None, "", _too_large(st.st_size))
        chunks: list[bytes] = []
        size = 0
        # The file may grow while it is read: never take more than the limit.
        while size <= MAX_FILE_SIZE:
            chunk = os.read(fd, MAX_FILE_SIZE + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise WorkspaceError(path, None, "", f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if size > MAX_FILE_SIZE:
        raise WorkspaceError(path, None, "", _too_large())
    data = b"".join(chunks)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise WorkspaceError(
            path, line, "", f"not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from None


def _too_large(size: int | None = None) -> str:
    actual = f"{size:,} bytes" if size is not None else "more"
    return f"too large ({actual}): a workspace file may be at most 1 MiB"


def parse_workspace(text: str, path: str = "<workspace>") -> Workspace:
    """Check a workspace's text; ``path`` names it in errors and anchors relative cwds.

    Raises WorkspaceError, and nothing else, whatever ``text`` holds.
    """
    if not isinstance(text, str):
        raise WorkspaceError(path, None, "", f"expected text, got {type(text).__name__}")
    # Characters before bytes: a string this long is too large in any encoding.
    if len(text) > MAX_FILE_SIZE:
        raise WorkspaceError(path, None, "", _too_large())
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        line = text.count("\n", 0, exc.start) + 1
        raise WorkspaceError(
            path, line, "", f"not UTF-8 text (a lone surrogate {text[exc.start]!r})"
        ) from None
    if size > MAX_FILE_SIZE:
        raise WorkspaceError(path, None, "", _too_large(size))
    long_key = long_dotted_key(text, MAX_KEY_PARTS)
    if long_key is not None:
        raise WorkspaceError(
            path, long_key, "", f"a dotted key has more than {MAX_KEY_PARTS} parts"
        )
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"line (\d+)", str(exc))
        raise WorkspaceError(
            path, int(match.group(1)) if match else None, "", f"invalid TOML: {exc}"
        ) from None
    except RecursionError:
        raise WorkspaceError(path, None, "", "invalid TOML: nested too deeply") from None
    except ValueError as exc:
        # int() refuses decimal literals of more than sys.get_int_max_str_digits() digits.
        reason = "an integer has too many digits" if "digits" in str(exc) else str(exc)
        raise WorkspaceError(path, None, "", f"invalid TOML: {reason}") from None
    return _Checker(text, path).workspace(data)


class _Checker:
    """Checks parsed data against the format; errors are placed with the file's text."""

    def __init__(self, text: str, path: str) -> None:
        self.text = text
        self.path = path
        self._base: str | None = None
        self._commands = 0

    def fail(self, key: Key, message: str) -> WorkspaceError:
        # Finding a line costs a pass over the text: only an error pays for it.
        return WorkspaceError(self.path, key_line(self.text, key), key_text(key), message)

    def table(self, value: object, where: Key, allowed: set[str]) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, f"must be a table, got {_kind(value)}")
        for key in value:
            if key not in allowed:
                raise self.fail(
                    (*where, key), f"unknown key (expected one of: {', '.join(sorted(allowed))})"
                )
        return value

    def array(self, table: dict[str, Any], key: str, where: Key, header: str) -> list[Any]:
        value = table.get(key, [])
        if not isinstance(value, list):
            raise self.fail(
                (*where, key), f"must be an array of tables: write [[{header}]], got {_kind(value)}"
            )
        return value

    def base(self) -> str:
        if self._base is None:
            try:
                if self.path.startswith("<"):
                    self._base = os.getcwd()
                else:
                    self._base = os.path.dirname(os.path.abspath(self.path))
            except OSError as exc:
                raise WorkspaceError(
                    self.path, None, "", f"cannot find the current directory: {exc.strerror}"
                ) from None
        return self._base

    def workspace(self, data: dict[str, Any]) -> Workspace:
        self.table(data, (), _TOP_KEYS)
        name = data.get("name")
        if name is not None:
            if not isinstance(name, str):
                raise self.fail(("name",), f"must be a string, got {_kind(name)}")
            try:
                check_name(name)
            except ProcwindowError as exc:
                raise self.fail(("name",), str(exc)) from None
        ws = Workspace(path=self.path, name=name, graceful_timeout=self.grace(data, ()))
        agents_of: dict[str, set[str]] = {}
        for si, session in enumerate(self.array(data, "session", (), "session")):
            where_s: Key = ("session", si)
            self.table(session, where_s, _SESSION_KEYS)
            sname = self.scope_name(session, "session", where_s)
            if sname in ws.sessions:
                raise self.fail((*where_s, "name"), f"session {_show(sname)} is declared twice")
            ws.sessions[sname] = []
            agents_of[sname] = set()
            for ai, agent in enumerate(self.array(session, "agent", where_s, "session.agent")):
                where_a = (*where_s, "agent", ai)
                self.table(agent, where_a, _AGENT_KEYS)
                aname = self.scope_name(agent, "agent", where_a)
                if aname in agents_of[sname]:
                    raise self.fail(
                        (*where_a, "name"),
                        f"agent {_show(aname)} is declared twice in {_show(sname)}",
                    )
                agents_of[sname].add(aname)
                ws.sessions[sname].append(aname)
                commands = self.array(agent, "command", where_a, "session.agent.command")
                for ci, cmd in enumerate(commands):
                    ws.commands.append(self.command(cmd, sname, aname, (*where_a, "command", ci)))
        return ws

    def scope_name(self, table: dict[str, Any], kind: str, where: Key) -> str:
        if "name" not in table:
            raise self.fail(where, f"every {kind} needs a name")
        name = table["name"]
        if not isinstance(name, str):
            raise self.fail((*where, "name"), f"must be a string, got {_kind(name)}")
        try:
            return check_scope_name(kind, name)
        except ProcwindowError as exc:
            raise self.fail((*where, "name"), str(exc)) from None

    def grace(self, table: dict[str, Any], where: Key) -> float | None:
        value = table.get("graceful_timeout")
        if value is None:
            return None
        key = (*where, "graceful_timeout")
        if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
            # The check's message would quote the number, and repr() refuses huge ints.
            raise self.fail(
                key, f"must be between 0 and {MAX_GRACEFUL_TIMEOUT:g} seconds, got {_show(value)}"
            )
        try:
            return check_graceful_timeout(value, "graceful_timeout")
        except ValueError as exc:
            reason = str(exc).removeprefix("graceful_timeout ")
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                reason = reason.replace(repr(value), _kind(value))
            raise self.fail(key, reason) from None

    def command(self, cmd: object, session: str, agent: str, where: Key) -> Command:
        self._commands += 1
        if self._commands > MAX_COMMANDS:
            raise self.fail(
                where, f"too many commands: a workspace may start at most {MAX_COMMANDS:,}"
            )
        table = self.table(cmd, where, _COMMAND_KEYS)
        args = self.argv(table, where)
        tool = self.tool(table, where)
        cwd = self.cwd(table, where)
        env = self.env(table, where)
        grace = self.grace(table, where)
        self.resolve(args[0], cwd, env, (*where, "shell" if "shell" in table else "argv"))
        return Command(
            session=session,
            agent=agent,
            argv=args,
            tool=tool,
            cwd=cwd,
            env=env,
            graceful_timeout=grace,
        )

    def argv(self, table: dict[str, Any], where: Key) -> tuple[str, ...]:
        argv, shell = table.get("argv"), table.get("shell")
        if (argv is None) != (shell is None):
            # The file's types first, named as TOML names them (with both or
            # neither given, the rule's message says that instead); then the rule.
            if shell is not None and not isinstance(shell, str):
                raise self.fail((*where, "shell"), f"must be a string, got {_kind(shell)}")
            if argv is not None:
                self.strings(argv, (*where, "argv"))
        try:
            return command_argv(argv, shell)
        except CommandError as exc:
            key = where if not exc.field else (*where, exc.field)
            if exc.index is not None:
                key = (*key, exc.index)
            raise self.fail(key, exc.reason) from None

    def strings(self, value: object, key: Key) -> None:
        """Refuse anything but an array of strings (whatever the strings hold)."""
        if not isinstance(value, list):
            raise self.fail(key, f"must be an array of strings, got {_kind(value)}")
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise self.fail((*key, i), f"must be a string, got {_kind(item)}")

    def tool(self, table: dict[str, Any], where: Key) -> str:
        tool = table.get("tool", DEFAULT_TOOL)
        key = (*where, "tool")
        if not isinstance(tool, str):
            raise self.fail(key, f"must be a string, got {_kind(tool)}")
        try:
            return check_tool(tool)
        except ProcwindowError as exc:
            raise self.fail(key, str(exc).removeprefix("tool ")) from None

    def cwd(self, table: dict[str, Any], where: Key) -> str:
        # Like a compose file: commands run in the workspace file's directory by default.
        value = table.get("cwd", ".")
        key = (*where, "cwd")
        if not isinstance(value, str):
            raise self.fail(key, f"must be a string, got {_kind(value)}")
        if "\0" in value:
            raise self.fail(key, "contains a NUL character")
        cwd = os.path.normpath(os.path.join(self.base(), os.path.expanduser(value)))
        if not os.path.isdir(cwd):
            what = "not a directory" if os.path.exists(cwd) else "no such directory"
            raise self.fail(key, f"{what}: {_show(cwd)}")
        if not os.access(cwd, os.X_OK):
            raise self.fail(key, f"cannot enter directory (permission denied): {_show(cwd)}")
        return cwd

    def env(self, table: dict[str, Any], where: Key) -> dict[str, str] | None:
        value = table.get("env")
        if value is None:
            return None
        key = (*where, "env")
        if not isinstance(value, dict):
            raise self.fail(key, f"must be a table of strings, got {_kind(value)}")
        for name, item in value.items():
            if not name or "=" in name or "\0" in name:
                raise self.fail(
                    (*key, name),
                    f"invalid environment variable name {_show(name)}:"
                    " it must be non-empty, without '=' or NUL",
                )
            if not isinstance(item, str):
                raise self.fail((*key, name), f"must be a string, got {_kind(item)}")
            if "\0" in item:
                raise self.fail((*key, name), "contains a NUL character")
        return dict(value)

    def resolve(self, program: str, cwd: str, env: dict[str, str] | None, key: Key) -> None:
        """Find the program as spawn will, so that a typo fails before anything starts."""
        try:
            resolve_command(program, {**os.environ, **(env or {})}, cwd)
        except (CommandNotFound, NotExecutable) as exc:
            raise self.fail(key, _clip(str(exc), 200)) from None


#: TOML's names for its types, the narrower first (a bool is an int, a date-time a date).
_KINDS: tuple[tuple[type, str], ...] = (
    (bool, "a boolean"),
    (int, "an integer"),
    (float, "a float"),
    (str, "a string"),
    (list, "an array"),
    (dict, "a table"),
    (datetime.datetime, "a date-time"),
    (datetime.date, "a date"),
    (datetime.time, "a time"),
)


def _kind(value: object) -> str:
    """A TOML value's type, as the format's documentation names it."""
    return next((name for type_, name in _KINDS if isinstance(value, type_)), type(value).__name__)


def _show(value: object, limit: int = 80) -> str:
    """A short one-line rendering of a value for a message."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return "a huge integer"
    if not isinstance(value, (str, int, float)):
        return _kind(value)
    return _clip(repr(value), limit)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
