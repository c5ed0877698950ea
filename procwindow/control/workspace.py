"""Workspaces: a TOML file naming sessions, agents and the commands they start,
in order, kept healthy.

.. code-block:: toml

    name = "demo"                 # optional: the control socket's name
    graceful_timeout = 5.0        # optional: the supervisor's default
    attach = ["ssh://build/ci"]   # optional: servers the window shows beside its own

    [[session]]
    name = "web"

    [[session.agent]]
    name = "frontend"

    [[session.agent.command]]
    name = "web"                  # optional: unique in the workspace (default: the agent's)
    tool = "npm"                  # optional (default: the command's name, as the table shows it)
    argv = ["npm", "run", "dev"]  # or: shell = "npm run dev | tee dev.log"
    cwd = "web"                   # optional, relative to the workspace file's
                                  # directory, which is also the default
    env_file = ".env"             # optional: NAME=value lines (a list too; also at the top)
    env = { PORT = "3000" }       # optional, over env_file
    graceful_timeout = 2.0        # optional
    pty = true                    # optional: on a terminal, rows × cols (24 × 80 unless given)
    depends_on = { api = "ready" }            # or ["api"]: each must have started
    ready = { port = 3000, timeout = 60 }     # or "a line pattern", or a port number
    liveness = { port = 3000, period = 10, timeout = 5, failures = 3 }
    restart = "on-failure"        # "no" (default), "on-failure" or "always"
    backoff = { initial = 1, factor = 2, cap = 60 }
    max_restarts = 10
    exit_on_end = true            # optional: serve stops the workspace when it ends, with its
                                  # status (exit_on_failure: only when it fails)

A file is checked whole before any process starts: every key must be known and
of the right type, session names and agent names (within their session) must
be unique scope names without control characters, ``argv`` strings may hold
anything but NUL, ``env`` names may not hold ``=`` or NUL, every ``cwd`` must be
an existing directory and every program must be found (those of ``command``
checks too), and a ``graceful_timeout`` is between 0 and
``MAX_GRACEFUL_TIMEOUT`` seconds. Command names are unique; dependencies name
commands of the file, form no cycle, and wait for ``ready`` only of a command
that has a ``ready`` check.

Limits, so that any file is accepted or refused in bounded time and memory: a
regular file of at most 1 MiB (``MAX_FILE_SIZE``) of UTF-8 text, at most
10,000 commands (``MAX_COMMANDS``), and dotted keys of at most 16 parts
(``MAX_KEY_PARTS``). Nesting deeper than the TOML parser can follow is refused.

Any problem raises one WorkspaceError, a one-line message ``FILE:LINE: KEY:
message`` (``FILE: KEY: message`` when the line cannot be known). The result is
a :class:`procwindow.core.Workspace`, which ``start(supervisor)`` runs.

A file named ``*.yaml`` or ``*.yml`` is a process-compose file: :mod:`._compose`
maps it onto the data above, which is checked as a TOML file's is, with its
errors placed on the YAML's keys and lines (it needs PyYAML: the ``compose``
extra).
"""

from __future__ import annotations

import os
import re
import stat
import tomllib
from typing import Any

from ..core import (
    MAX_GRACEFUL_TIMEOUT,
    Command,
    CommandError,
    InvalidWorkspace,
    ProcwindowError,
    Workspace,
    check_graceful_timeout,
    command_argv,
    policy_of,
)
from ..core.rules import check_scope_name, check_tool
from ..core.spec import VERBS
from ._compose import Places, compose_data, locate
from ._dotenv import DotenvError, parse_dotenv
from ._links import LinkError, NoServer, parse_target
from ._sockdir import check_name
from ._toml_lines import Key, key_text, long_dotted_key
from ._workspace_checks import (
    _READY_TIMINGS,
    KeyChecker,
    WorkspaceError,
    _kind,
    _show,
)

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


#: A file named so is a process-compose file.
_YAML_SUFFIXES = (".yaml", ".yml")
_TOP_KEYS = {"name", "graceful_timeout", "session", "attach", "env_file"}
#: Top-level keys of other tools' files, said as such (their keys mean other things here).
_FOREIGN_KEYS = {"processes": "process-compose", "services": "Docker Compose"}
_SESSION_KEYS = {"name", "agent"}
_AGENT_KEYS = {"name", "command"}
#: The keys of a workspace's command that are not fields of ``run``.
WORKSPACE_ONLY = frozenset(
    {
        "name",
        "depends_on",
        "liveness",
        "restart",
        "backoff",
        "max_restarts",
        "env_file",
        "exit_on_end",
        "exit_on_failure",
        "disabled",
    }
)
#: Every key of a command: ``run``'s fields that a workspace takes, and its own.
_COMMAND_KEYS = {f.name for f in VERBS["run"].fields if f.workspace} | WORKSPACE_ONLY
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
    if str(path).endswith(_YAML_SUFFIXES):
        return _ComposeChecker(text, path).compose()
    long_key = long_dotted_key(text, MAX_KEY_PARTS)
    if long_key is not None:
        raise WorkspaceError(
            path, long_key, "", f"a dotted key has more than {MAX_KEY_PARTS} parts"
        )
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        match = re.search(r"line (\d+)", str(exc))
        why = f"invalid TOML: {exc}"
        raise WorkspaceError(path, int(match.group(1)) if match else None, "", why) from None
    except RecursionError:
        raise WorkspaceError(path, None, "", "invalid TOML: nested too deeply") from None
    except ValueError as exc:
        # int() refuses decimal literals of more than sys.get_int_max_str_digits() digits.
        reason = "an integer has too many digits" if "digits" in str(exc) else str(exc)
        raise WorkspaceError(path, None, "", f"invalid TOML: {reason}") from None
    return _Checker(text, path).workspace(data)


class _Checker(KeyChecker):
    """Checks parsed data against the format; errors are placed with the file's text.

    The file's structure (sessions, agents, commands, attach) is checked here;
    the keys of one command's orchestration, in :class:`KeyChecker`.
    """

    def __init__(self, text: str, path: str) -> None:
        super().__init__(text, path)
        self._file_env: dict[str, str] = {}  # the workspace's env_file, under every command

    def workspace(self, data: dict[str, Any]) -> Workspace:
        for key, tool in _FOREIGN_KEYS.items():
            if key in data and "session" not in data:
                raise self.fail(
                    (key,),
                    f"this reads like a {tool} file; a procwindow workspace lists its commands"
                    " under [[session]], [[session.agent]] and [[session.agent.command]]"
                    " (README: Workspaces)",
                )
        self.table(data, (), _TOP_KEYS)
        name = data.get("name")
        if name is not None:
            if not isinstance(name, str):
                raise self.fail(("name",), f"must be a string, got {_kind(name)}")
            try:
                check_name(name)
            except ProcwindowError as exc:
                raise self.fail(("name",), str(exc)) from None
        grace = self.grace(data, ())
        attach = self.attach(data)
        self._file_env = self.env_files(data, ())
        sessions: dict[str, list[str]] = {}
        commands: list[Command] = []
        agents_of: dict[str, set[str]] = {}
        for si, session in enumerate(self.array(data, "session", (), "session")):
            where_s: Key = ("session", si)
            self.table(session, where_s, _SESSION_KEYS)
            sname = self.scope_name(session, "session", where_s)
            if sname in sessions:
                raise self.fail((*where_s, "name"), f"session {_show(sname)} is declared twice")
            sessions[sname] = []
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
                sessions[sname].append(aname)
                listed = self.array(agent, "command", where_a, "session.agent.command")
                for ci, cmd in enumerate(listed):
                    commands.append(self.command(cmd, sname, aname, (*where_a, "command", ci)))
        try:
            return Workspace(
                commands,
                name=name,
                path=self.path,
                graceful_timeout=grace,
                sessions=sessions,
                attach=attach,
            )
        except InvalidWorkspace as exc:  # names and the dependency graph, as a whole
            raise self.fail(self.graph_key(exc), str(exc)) from None

    def attach(self, data: dict[str, Any]) -> tuple[str, ...]:
        """The supervisors a window opening the workspace attaches to: names,
        socket paths or ``ssh://`` URLs, each checked as ``procwindow attach``
        reads it (whether it answers is found out when the window opens)."""
        value = data.get("attach", [])
        if not isinstance(value, list):
            raise self.fail(("attach",), f"must be an array of strings, got {_kind(value)}")
        seen: set[str] = set()
        for i, target in enumerate(value):
            if not isinstance(target, str):
                raise self.fail(("attach", i), f"must be a string, got {_kind(target)}")
            try:
                where = str(parse_target(target))
            except NoServer:  # this machine's socket directory: the window will say
                where = target
            except LinkError as exc:
                raise self.fail(("attach", i), str(exc)) from None
            if where in seen:
                raise self.fail(("attach", i), f"{_show(target)} is listed twice")
            seen.add(where)
        return tuple(value)

    def graph_key(self, exc: InvalidWorkspace) -> Key:
        """Where in the file a workspace-wide fault lies."""
        if exc.index is None or exc.index >= len(self._placed):
            return ()
        where, named, deps = self._placed[exc.index]
        if exc.field == "name":
            return (*where, "name") if named else where
        if exc.field == "depends_on" and exc.dependency is not None:
            if isinstance(deps, dict):
                return (*where, "depends_on", exc.dependency)
            if exc.dependency in deps:
                return (*where, "depends_on", deps.index(exc.dependency))
            return (*where, "depends_on")
        return where

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
        name = self.command_name(table, where)
        args = self.argv(table, where)
        # The table's TOOL column names the command (not "shell" for every row).
        tool = self.tool(table, where, default=name or agent)
        cwd = self.cwd(table, where)
        env = self.env(table, where)
        grace = self.grace(table, where)
        terminal = self.terminal(table, where)
        self.resolve(args[0], cwd, env, (*where, "shell" if "shell" in table else "argv"))
        stop_signal, stop_command = self.stopping(table, where, cwd, env)
        deps = self.depends_on(table, where)
        ready = None
        if "ready" in table:
            ready = self.check(table["ready"], (*where, "ready"), cwd, env, _READY_TIMINGS)
        liveness = self.liveness(table, where, cwd, env)
        restart = table.get("restart", "no")
        if not isinstance(restart, str):
            raise self.fail(
                (*where, "restart"),
                f"must be 'no', 'on-failure' or 'always' (a string), got {_kind(restart)}",
            )
        try:
            policy = policy_of(restart)
        except InvalidWorkspace as exc:
            raise self.fail((*where, "restart"), str(exc).removeprefix("restart ")) from None
        backoff = self.backoff(table, where)
        max_restarts = self.max_restarts(table, where)
        exit_on_end = self.flag(table, "exit_on_end", where)
        exit_on_failure = self.flag(table, "exit_on_failure", where)
        disabled = self.flag(table, "disabled", where)
        self._placed.append((where, name is not None, deps))
        try:
            return Command(
                session=session,
                agent=agent,
                argv=args,
                tool=tool,
                cwd=cwd,
                env=env,
                graceful_timeout=grace,
                stop_signal=stop_signal,
                stop_command=stop_command,
                pty=terminal,
                name=name,
                depends_on=deps,
                ready=ready,
                liveness=liveness,
                restart=policy,
                backoff=backoff,
                max_restarts=max_restarts,
                exit_on_end=exit_on_end,
                exit_on_failure=exit_on_failure,
                disabled=disabled,
            )
        except InvalidWorkspace as exc:  # each key was checked: a rule missed above
            key = (*where, exc.field) if exc.field else where
            raise self.fail(key, str(exc)) from None

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

    def tool(self, table: dict[str, Any], where: Key, default: str) -> str:
        tool = table.get("tool", default)
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
        """The command's environment: the workspace's ``env_file``s, its own,
        then its ``env`` (a later one wins); None for none."""
        merged = {**self._file_env, **self.env_files(table, where)}
        own = self.env_table(table, where)
        if own is not None:
            merged.update(own)
        return merged or None

    def env_files(self, table: dict[str, Any], where: Key) -> dict[str, str]:
        """The variables of ``env_file`` (a path, or a list of them, relative to
        the workspace file's directory), in order."""
        value = table.get("env_file")
        if value is None:
            return {}
        key = (*where, "env_file")
        paths = [value] if isinstance(value, str) else value
        if not isinstance(paths, list) or not all(isinstance(p, str) and p for p in paths):
            raise self.fail(key, f"must be a path or a list of paths, got {_kind(value)}")
        out: dict[str, str] = {}
        for path in paths:
            full = os.path.join(self.base(), os.path.expanduser(path))
            try:
                with open(full, encoding="utf-8") as f:
                    text = f.read(MAX_FILE_SIZE + 1)
                if len(text) > MAX_FILE_SIZE:
                    raise self.fail(key, f"{full}: larger than {MAX_FILE_SIZE:,} bytes")
                out.update(parse_dotenv(text))
            except DotenvError as exc:
                raise self.fail(key, f"{full}: {exc}") from None
            except (OSError, UnicodeDecodeError) as exc:
                why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
                raise self.fail(key, f"cannot read {full}: {why}") from None
        return out

    def env_table(self, table: dict[str, Any], where: Key) -> dict[str, str] | None:
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


class _ComposeChecker(_Checker):
    """Checks the data a process-compose file maps to, as a TOML file's; its
    errors name the YAML key each value came from, and its line."""

    def __init__(self, text: str, path: str) -> None:
        super().__init__(text, path)
        self.places: Places = {}

    def compose(self) -> Workspace:
        return self.workspace(compose_data(self.text, self.path, self.places, self.dotenv))

    def dotenv(self) -> dict[str, str]:
        """The variables of the ``.env`` beside the file (process-compose reads
        the one where it runs, which is where its file is, as a rule)."""
        if not os.path.isfile(os.path.join(self.base(), ".env")):
            return {}
        return self.env_files({"env_file": ".env"}, ())

    def fail(self, key: Key, message: str) -> WorkspaceError:
        yaml_key, line = locate(self.places, key)
        return WorkspaceError(self.path, line, key_text(yaml_key), message)
