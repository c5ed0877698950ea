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
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core import (
    MAX_GRACEFUL_TIMEOUT,
    CommandNotFound,
    NotExecutable,
    Proc,
    ProcwindowError,
    Supervisor,
    check_graceful_timeout,
)
from ..core._spawn import resolve as resolve_command
from ..core._text import escape_controls
from ..core.rules import check_scope_name
from ._sockdir import check_name

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

_Key = tuple[str | int, ...]

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
    _check_key_lengths(text, path)
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

    def fail(self, key: _Key, message: str) -> WorkspaceError:
        # Finding a line costs a pass over the text: only an error pays for it.
        line = _KeyLines(self.text, key).line
        return WorkspaceError(self.path, line, _key_text(key), message)

    def table(self, value: object, where: _Key, allowed: set[str]) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, f"must be a table, got {_kind(value)}")
        for key in value:
            if key not in allowed:
                raise self.fail(
                    (*where, key), f"unknown key (expected one of: {', '.join(sorted(allowed))})"
                )
        return value

    def array(self, table: dict[str, Any], key: str, where: _Key, header: str) -> list[Any]:
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
            where_s: _Key = ("session", si)
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

    def scope_name(self, table: dict[str, Any], kind: str, where: _Key) -> str:
        if "name" not in table:
            raise self.fail(where, f"every {kind} needs a name")
        name = table["name"]
        if not isinstance(name, str):
            raise self.fail((*where, "name"), f"must be a string, got {_kind(name)}")
        try:
            check_scope_name(kind, name)
        except ProcwindowError as exc:
            raise self.fail((*where, "name"), str(exc)) from None
        # A name is shown in the window and in one-line reports: no control characters.
        bad = sorted({c for c in name if not c.isprintable()})
        if bad:
            raise self.fail(
                (*where, "name"),
                f"{kind} {_show(name)} contains {''.join(bad)!r}; names may not contain"
                " control characters",
            )
        return name

    def grace(self, table: dict[str, Any], where: _Key) -> float | None:
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

    def command(self, cmd: object, session: str, agent: str, where: _Key) -> Command:
        self._commands += 1
        if self._commands > MAX_COMMANDS:
            raise self.fail(
                where, f"too many commands: a workspace may start at most {MAX_COMMANDS:,}"
            )
        table = self.table(cmd, where, _COMMAND_KEYS)
        args = self.argv(table, where)
        tool = table.get("tool", "shell")
        if not isinstance(tool, str):
            raise self.fail((*where, "tool"), f"must be a string, got {_kind(tool)}")
        if not tool or not tool.isprintable():
            raise self.fail(
                (*where, "tool"),
                f"must be a non-empty single-line string without control characters,"
                f" got {_show(tool)}",
            )
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

    def argv(self, table: dict[str, Any], where: _Key) -> tuple[str, ...]:
        if ("argv" in table) == ("shell" in table):
            raise self.fail(where, "give exactly one of argv (an array) or shell (a string)")
        if "shell" in table:
            shell = table["shell"]
            key = (*where, "shell")
            if not isinstance(shell, str):
                raise self.fail(key, f"must be a string, got {_kind(shell)}")
            if not shell.strip():
                raise self.fail(key, "must not be empty")
            if "\0" in shell:
                raise self.fail(key, "contains a NUL character")
            return ("/bin/sh", "-c", shell)
        argv = table["argv"]
        key = (*where, "argv")
        if not isinstance(argv, list):
            raise self.fail(key, f"must be an array of strings, got {_kind(argv)}")
        if not argv:
            raise self.fail(key, "must not be empty")
        for i, arg in enumerate(argv):
            if not isinstance(arg, str):
                raise self.fail((*key, i), f"must be a string, got {_kind(arg)}")
            # Any other character is the child's business; NUL cannot reach it.
            if "\0" in arg:
                raise self.fail((*key, i), "contains a NUL character")
        if not argv[0]:
            raise self.fail((*key, 0), "the program must not be empty")
        return tuple(argv)

    def cwd(self, table: dict[str, Any], where: _Key) -> str:
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

    def env(self, table: dict[str, Any], where: _Key) -> dict[str, str] | None:
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

    def resolve(self, program: str, cwd: str, env: dict[str, str] | None, key: _Key) -> None:
        """Find the program as spawn will, so that a typo fails before anything starts."""
        try:
            resolve_command(program, {**os.environ, **(env or {})}, cwd)
        except (CommandNotFound, NotExecutable) as exc:
            raise self.fail(key, _clip(str(exc), 200)) from None


def _kind(value: object) -> str:
    """A TOML value's type, as the format's documentation names it."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, datetime.datetime):
        return "a date-time"
    if isinstance(value, datetime.date):
        return "a date"
    if isinstance(value, datetime.time):
        return "a time"
    return type(value).__name__


def _show(value: object, limit: int = 80) -> str:
    """A short one-line rendering of a value for a message."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return "a huge integer"
    if not isinstance(value, (str, int, float)):
        return _kind(value)
    return _clip(repr(value), limit)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _key_text(key: Sequence[str | int]) -> str:
    out = ""
    for part in key:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        if not _BARE_KEY.fullmatch(part):
            part = '"' + part.replace("\\", "\\\\").replace('"', '\\"') + '"'
        out += f".{part}" if out else part
    return out


# A key part: a bare word (starting a word: matches never start inside one, which
# keeps the scan linear), or a one-line quoted string.
_KEY_PART = r"""(?:(?<![A-Za-z0-9_-])[A-Za-z0-9_-]++|"(?:[^"\\\n]|\\.)*+"|'[^'\n]*+')"""
_KEY_PART_RE = re.compile(_KEY_PART)
# Dotted runs outside strings and comments. Every quantifier is possessive and an
# unterminated string runs to the end of its line (or of the text), so that no
# input makes the scan backtrack.
_DOTTED = re.compile(
    rf"""
      (?P<key>{_KEY_PART}(?:[ \t]*+\.[ \t]*+{_KEY_PART})++)
    | \"\"\"(?:[^"\\]|\\[\s\S]|"(?!""))*+(?:\"\"\"|\Z)
    | '''(?:[^']|'(?!''))*+(?:'''|\Z)
    | "(?:[^"\\\n]|\\.)*+"?
    | '[^'\n]*+'?
    | \#[^\n]*+
    """,
    re.VERBOSE,
)


def _check_key_lengths(text: str, path: str) -> None:
    """Refuse dotted keys of more than MAX_KEY_PARTS parts before tomllib sees them."""
    for match in _DOTTED.finditer(text):
        run = match.group("key")
        # Dots inside quoted parts make the count an upper bound; count exactly if it matters.
        if run is None or run.count(".") < MAX_KEY_PARTS:
            continue
        if len(_KEY_PART_RE.findall(run)) > MAX_KEY_PARTS:
            line = text.count("\n", 0, match.start()) + 1
            raise WorkspaceError(
                path, line, "", f"a dotted key has more than {MAX_KEY_PARTS} parts"
            )


_TOKEN = re.compile(
    r"""
      (?P<nl>\n)
    | [ \t\r]++
    | \#[^\n]*+
    | (?P<ml>\"\"\"(?:[^"\\]|\\[\s\S]|"(?!""))*+(?:\"\"\"|\Z)|'''(?:[^']|'(?!''))*+(?:'''|\Z))
    | (?P<str>"(?:[^"\\\n]|\\.)*+"?|'[^'\n]*+'?)
    | (?P<bare>[A-Za-z0-9_-]++)
    | (?P<punct>.)
    """,
    re.VERBOSE,
)

#: Past this depth, a value's elements are skipped rather than indexed.
_MAX_INDEX_DEPTH = 64

_Token = tuple[str, str, int]  # kind (a group of _TOKEN), text, line
_EOF: _Token = ("eof", "", 0)


class _Found(Exception):
    pass


class _KeyLines:
    """Finds the line of a key path like ("session", 0, "agent", 1, "argv").

    tomllib gives no positions, so this reads the text's tokens: table headers,
    ``key =`` lines, and the elements and keys of arrays and inline tables. It
    stops at ``target``; ``line`` is the line of ``target``, else of the nearest
    enclosing table or array, else None.
    """

    def __init__(self, text: str, target: _Key) -> None:
        self.target = target
        self.where: dict[_Key, int] = {}
        self._counters: dict[_Key, int] = {}
        self._tokens = self._lex(text)
        self._ahead: deque[_Token] = deque()
        self._taken = 0
        try:
            self._scan()
        except _Found:
            pass
        self.line = self._find()

    def _find(self) -> int | None:
        for end in range(len(self.target), 0, -1):
            line = self.where.get(self.target[:end])
            if line is not None:
                return line
        return None

    @staticmethod
    def _lex(text: str) -> Iterator[_Token]:
        line = 1
        for match in _TOKEN.finditer(text):
            kind = match.lastgroup
            if kind is None:  # blanks and comments
                continue
            token = match.group()
            yield kind, token, line
            if kind == "nl":
                line += 1
            elif kind == "ml":
                line += token.count("\n")

    def _peek(self, ahead: int = 0) -> _Token:
        while len(self._ahead) <= ahead:
            token = next(self._tokens, None)
            if token is None:
                return _EOF
            self._ahead.append(token)
        return self._ahead[ahead]

    def _take(self) -> _Token:
        token = self._peek()
        if self._ahead:
            self._ahead.popleft()
            self._taken += 1
        return token

    def _is(self, punct: str, ahead: int = 0) -> bool:
        kind, token, _line = self._peek(ahead)
        return kind == "punct" and token == punct

    def _wanted(self, path: _Key) -> bool:
        return path == self.target[: len(path)]

    def _record(self, path: _Key, line: int) -> None:
        if self._wanted(path):
            self.where.setdefault(path, line)
            if len(path) == len(self.target):
                raise _Found

    def _record_all(self, path: _Key, line: int) -> None:
        """Record ``path`` and the tables it implies."""
        for end in range(1, len(path) + 1):
            if not self._wanted(path[:end]):
                return
            self._record(path[:end], line)

    def _scan(self) -> None:
        current: _Key = ()
        while self._peek()[0] != "eof":
            kind, _token, line = self._peek()
            if self._is("["):
                is_array = self._is("[", 1)
                self._take()
                if is_array:
                    self._take()
                parts = self._key()
                if parts:
                    current = self._header(parts, is_array)
                    self._record_all(current, line)
            elif kind in ("str", "bare"):
                parts = self._key()
                if self._is("="):
                    self._take()
                    self._record_all((*current, *parts), line)
                    self._value((*current, *parts), 0)
            # The rest of the line: a comment, or something not understood.
            while self._peek()[0] not in ("nl", "eof"):
                self._take()
            self._take()

    def _key(self) -> list[str]:
        parts: list[str] = []
        while True:
            kind, token, _line = self._peek()
            if kind == "bare":
                parts.append(token)
            elif kind == "str":
                parts.append(_unquote(token))
            else:
                return parts
            self._take()
            if not self._is("."):
                return parts
            self._take()

    def _header(self, names: list[str], is_array: bool) -> _Key:
        path: list[str | int] = []
        for i, name in enumerate(names):
            path.append(name)
            last = i == len(names) - 1
            if last and is_array:
                key = tuple(path)
                self._counters[key] = self._counters.get(key, -1) + 1
                path.append(self._counters[key])
            elif not last:
                # an enclosing array of tables: its most recent element
                index = self._counters.get(tuple(path))
                if index is not None:
                    path.append(index)
        return tuple(path)

    def _value(self, path: _Key, depth: int) -> None:
        """Index the value at the current token, if it may hold the target, and pass it."""
        if self._is("[") or self._is("{"):
            if depth > _MAX_INDEX_DEPTH or not self._wanted(path):
                self._skip_nested()
            elif self._is("["):
                self._array(path, depth)
            else:
                self._table(path, depth)
            return
        while True:
            kind, token, _line = self._peek()
            if kind in ("nl", "eof") or (kind == "punct" and token in ",]}"):
                return
            self._take()

    def _array(self, path: _Key, depth: int) -> None:
        self._take()
        index = 0
        while True:
            kind, _token, line = self._peek()
            if kind == "eof":
                return
            if self._is("]"):
                self._take()
                return
            if kind == "nl":
                self._take()
            elif self._is(","):
                self._take()
                index += 1
            else:
                taken = self._taken
                self._record((*path, index), line)
                self._value((*path, index), depth + 1)
                if self._taken == taken:  # a stray token: never loop on it
                    self._take()

    def _table(self, path: _Key, depth: int) -> None:
        self._take()
        while True:
            kind, _token, line = self._peek()
            if kind == "eof":
                return
            if self._is("}"):
                self._take()
                return
            parts = self._key()
            if not parts:
                self._take()
                continue
            self._record_all((*path, *parts), line)
            if self._is("="):
                self._take()
                self._value((*path, *parts), depth + 1)

    def _skip_nested(self) -> None:
        depth = 0
        while True:
            kind, token, _line = self._take()
            if kind == "eof":
                return
            if kind == "punct" and token in "[{":
                depth += 1
            elif kind == "punct" and token in "]}":
                depth -= 1
                if depth == 0:
                    return


def _unquote(token: str) -> str:
    """A quoted key's text (a best effort: it only places errors)."""
    quote = token[0]
    body = token[1:-1] if len(token) >= 2 and token.endswith(quote) else token[1:]
    if quote == "'" or "\\" not in body:
        return body
    try:
        value = tomllib.loads(f"k = {token}")["k"]
    except (ValueError, RecursionError):
        return body
    return value if isinstance(value, str) else body
