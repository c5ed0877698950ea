"""The checks of a workspace file's values: one command's orchestration keys,
and the errors that name file, line and key.

:class:`KeyChecker` is the base of :mod:`.workspace`'s checker, which walks the
file's structure; what is here checks the values one key at a time.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Mapping
from typing import Any, ClassVar

from ..core import (
    MAX_RESTARTS,
    Backoff,
    CommandError,
    CommandNotFound,
    InvalidField,
    InvalidWorkspace,
    Liveness,
    NotExecutable,
    ProcwindowError,
    Ready,
    check_command_name,
    check_timeout,
    command_argv,
    condition_of,
    escape_controls,
    http_status,
    resolve_command,
)
from ..core.spec import READY_CHOICES, READY_KINDS, VERBS
from ._toml_lines import Key, key_line, key_text

__all__ = ["KeyChecker", "WorkspaceError"]


class WorkspaceError(ProcwindowError):
    """A workspace file is malformed: ``path``, ``line`` and ``key`` say where.

    The message is always one line: characters that would break it (newlines,
    other control characters) are shown escaped.
    """

    code = "workspace-file"
    details: ClassVar[Mapping[str, type]] = {"path": str, "line": int, "key": str}

    def __init__(self, path: str, line: int | None, key: str, message: str) -> None:
        where = escape_controls(f"{path}:{line}" if line else path)
        # Keys and values come from the file, which may hold a name of a megabyte.
        key_s = _clip(escape_controls(key), 200)
        message_s = _clip(escape_controls(message), 400)
        super().__init__(f"{where}: {key_s}: {message_s}" if key else f"{where}: {message_s}")
        self.path = path
        self.line = line
        self.key = key


#: The timings of each kind of check (its keys: ``spec.READY_KINDS``, the protocol's).
_READY_TIMINGS = {"interval", "timeout"}
_LIVENESS_TIMINGS = {"period", "timeout", "failures", "delay"}
_BACKOFF_KEYS = {"initial", "factor", "cap"}
_CONDITIONS = "'started', 'ready', 'completed' or 'completed_successfully'"


class KeyChecker:
    """The checks of one command's keys (its name, ``depends_on``, ``ready``,
    ``liveness``, ``backoff``, ``max_restarts``) and what every check needs:
    a failure placed at its line, tables, arrays, the file's directory.
    """

    def __init__(self, text: str, path: str) -> None:
        self.text = text
        self.path = path
        self._base: str | None = None
        self._commands = 0
        #: Per command: where it is, whether it has a name, its depends_on as written.
        self._placed: list[tuple[Key, bool, dict[str, str] | list[str]]] = []

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

    def command_name(self, table: dict[str, Any], where: Key) -> str | None:
        if "name" not in table:
            return None
        value = table["name"]
        key = (*where, "name")
        if not isinstance(value, str):
            raise self.fail(key, f"must be a string, got {_kind(value)}")
        try:
            return check_command_name(value)
        except InvalidWorkspace as exc:
            raise self.fail(key, str(exc)) from None

    def depends_on(self, table: dict[str, Any], where: Key) -> dict[str, str] | list[str]:
        value = table.get("depends_on")
        key = (*where, "depends_on")
        if value is None:
            return {}
        if isinstance(value, list):
            seen: set[str] = set()
            for i, item in enumerate(value):
                if not isinstance(item, str):
                    raise self.fail(
                        (*key, i), f"must be a command name (a string), got {_kind(item)}"
                    )
                if not item:
                    raise self.fail((*key, i), "a command name must not be empty")
                if item in seen:
                    raise self.fail((*key, i), f"names {_show(item)} twice")
                seen.add(item)
            return list(value)
        if isinstance(value, dict):
            for dep, cond in value.items():
                if not dep:
                    raise self.fail((*key, dep), "a command name must not be empty")
                if not isinstance(cond, str):
                    raise self.fail(
                        (*key, dep), f"must be a condition ({_CONDITIONS}), got {_kind(cond)}"
                    )
                try:
                    condition_of(cond)
                except InvalidWorkspace as exc:
                    raise self.fail((*key, dep), str(exc).removeprefix("the condition ")) from None
            return dict(value)
        raise self.fail(
            key,
            'must be a table of conditions ({ db = "ready" }) or an array of command names,'
            f" got {_kind(value)}",
        )

    def check(
        self, value: object, key: Key, cwd: str, env: dict[str, str] | None, timings: set[str]
    ) -> Ready:
        """A ``ready`` (or ``liveness``) check: a line pattern, a port, or a table
        with one of line, port, command, shell or http (and ``timings``)."""
        if isinstance(value, str):
            if not value:
                raise self.fail(key, "a line pattern must not be empty")
            return self.ready_of(key, {"line": value})
        if isinstance(value, int) and not isinstance(value, bool):
            self.port(value, key)
            return Ready(port=value)
        if not isinstance(value, dict):
            kinds_text = READY_CHOICES.replace('"', "")
            raise self.fail(
                key,
                "must be a line pattern (a string), a port (an integer) or a table with one of"
                f" {kinds_text}, got {_kind(value)}",
            )
        kinds = [kind for kind in READY_KINDS if kind in value]
        if len(kinds) != 1:
            kinds_text = READY_CHOICES.replace('"', "")
            raise self.fail(key, f"give exactly one of {kinds_text}")
        kind = kinds[0]
        allowed = READY_KINDS[kind] | timings
        for name in value:
            if name not in allowed:
                raise self.fail(
                    (*key, name),
                    f"a {kind} check takes no {_show(name)}"
                    f" (it takes: {', '.join(sorted(allowed))})",
                )
        fields: dict[str, object] = {}
        for name, item in value.items():
            if name in timings:
                continue
            fields[name] = self.check_field(name, item, (*key, name), cwd, env)
        if "interval" in value:
            fields["interval"] = self.seconds(value["interval"], (*key, "interval"))
        if "timeout" in value and timings is _READY_TIMINGS:  # a liveness timeout is its own
            fields["timeout"] = self.seconds(value["timeout"], (*key, "timeout"))
        if kind in ("command", "shell"):
            fields["cwd"] = cwd
        return self.ready_of(key, fields)

    def check_field(
        self, name: str, item: object, key: Key, cwd: str, env: dict[str, str] | None
    ) -> object:
        if name in ("line", "host", "shell", "http"):
            if not isinstance(item, str):
                raise self.fail(key, f"must be a string, got {_kind(item)}")
            if not item.strip():
                raise self.fail(key, "must not be empty")
            if "\0" in item:
                raise self.fail(key, "contains a NUL character")
            return item
        if name == "regex":
            if not isinstance(item, bool):
                raise self.fail(key, f"must be true or false, got {_kind(item)}")
            return item
        if name == "stream":
            if item not in ("stdout", "stderr"):
                raise self.fail(key, f"must be 'stdout' or 'stderr', got {_show(item)}")
            return item
        if name == "port":
            return self.port(item, key)
        if name == "status":
            try:
                return http_status(item)
            except ProcwindowError as exc:
                raise self.fail(key, str(exc)) from None
        # command: an argv whose program is found now, as the command's is
        self.strings(item, key)
        assert isinstance(item, list)
        try:
            argv = command_argv(item)
        except CommandError as exc:
            sub = key if exc.index is None else (*key, exc.index)
            raise self.fail(sub, exc.reason) from None
        self.resolve(argv[0], cwd, env, key)
        return argv

    def flag(self, table: dict[str, Any], key: str, where: Key) -> bool:
        value = table.get(key, False)
        if not isinstance(value, bool):
            raise self.fail((*where, key), f"must be true or false, got {_kind(value)}")
        return value

    def run_fields(
        self, table: dict[str, Any], where: Key, names: tuple[str, ...]
    ) -> dict[str, Any]:
        """The keys ``names`` of a command's table, checked as ``run``'s fields
        are (a bad one fails at its key, with ``run``'s message)."""
        given = {k: table[k] for k in names if k in table}
        try:
            return VERBS["run"].check({"argv": ["true"], "session": "s", "agent": "a", **given})
        except InvalidField as exc:
            raise self.fail((*where, exc.field), str(exc)) from None

    def terminal(self, table: dict[str, Any], where: Key) -> tuple[int, int] | None:
        """``pty`` (with ``rows`` and ``cols``): the size of the command's
        terminal, or None for pipes; checked by ``run``'s own fields and rule."""
        if not any(k in table for k in ("pty", "rows", "cols")):
            return None
        values = self.run_fields(table, where, ("pty", "rows", "cols"))
        return (values["rows"], values["cols"]) if values["pty"] else None

    def stopping(
        self, table: dict[str, Any], where: Key, cwd: str, env: dict[str, str] | None
    ) -> tuple[int | None, tuple[str, ...] | None]:
        """``stop_signal`` and ``stop_command``, checked by ``run``'s own fields
        (the command's program found now, as the command's is)."""
        try:
            values = self.run_fields(table, where, ("stop_signal", "stop_command"))
        except CommandError as exc:
            sub = (*where, "stop_command")
            raise self.fail(sub if exc.index is None else (*sub, exc.index), exc.reason) from None
        command = values["stop_command"]
        if command is not None:
            self.resolve(command[0], cwd, env, (*where, "stop_command"))
        return values["stop_signal"], command

    def port(self, value: object, key: Key) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, f"a port must be an integer, got {_kind(value)}")
        if not 0 < value < 65536:
            raise self.fail(key, f"a port must be 1-65535, got {_show(value)}")
        return value

    def seconds(self, value: object, key: Key) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(key, f"must be a number of seconds, got {_kind(value)}")
        try:
            seconds = check_timeout(value)
        except (ValueError, OverflowError):
            seconds = None
        if seconds is None or seconds > 86_400:
            raise self.fail(
                key, f"must be a positive number of seconds (at most a day), got {_show(value)}"
            )
        return seconds

    def ready_of(self, key: Key, fields: dict[str, object]) -> Ready:
        try:
            return Ready.of(fields)
        except ProcwindowError as exc:  # a regex that does not compile
            where = next((k for k in ("line", "http") if k in fields), None)
            raise self.fail((*key, where) if where else key, str(exc)) from None

    def liveness(
        self, table: dict[str, Any], where: Key, cwd: str, env: dict[str, str] | None
    ) -> Liveness | None:
        if "liveness" not in table:
            return None
        value = table["liveness"]
        key = (*where, "liveness")
        check = self.check(value, key, cwd, env, _LIVENESS_TIMINGS)
        timings = (
            {k: v for k, v in value.items() if k in _LIVENESS_TIMINGS}
            if isinstance(value, dict)
            else {}
        )
        for name, item in timings.items():
            if name == "failures":
                if isinstance(item, bool) or not isinstance(item, int):
                    raise self.fail((*key, name), f"must be an integer, got {_kind(item)}")
            elif isinstance(item, bool) or not isinstance(item, (int, float)):
                raise self.fail((*key, name), f"must be a number of seconds, got {_kind(item)}")
        try:
            return Liveness(check, **timings)
        except InvalidWorkspace as exc:
            return self.refuse(exc, key, "liveness", _LIVENESS_TIMINGS)

    def backoff(self, table: dict[str, Any], where: Key) -> Backoff:
        if "backoff" not in table:
            return Backoff()
        key = (*where, "backoff")
        value = self.table(table["backoff"], key, _BACKOFF_KEYS)
        for name, item in value.items():
            if isinstance(item, bool) or not isinstance(item, (int, float)):
                raise self.fail((*key, name), f"must be a number, got {_kind(item)}")
        try:
            return Backoff(**value)
        except InvalidWorkspace as exc:
            return self.refuse(exc, key, "backoff", _BACKOFF_KEYS)

    def refuse(self, exc: InvalidWorkspace, key: Key, what: str, names: set[str]) -> Any:
        """Raise ``exc`` placed on the key its message names (``backoff cap must…``)."""
        message = str(exc)
        for name in sorted(names):
            prefix = f"{what} {name} "
            if message.startswith(prefix):
                raise self.fail((*key, name), message.removeprefix(prefix)) from None
        raise self.fail(key, message) from None

    def max_restarts(self, table: dict[str, Any], where: Key) -> int:
        value = table.get("max_restarts", 10)
        key = (*where, "max_restarts")
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, f"must be an integer, got {_kind(value)}")
        if not 0 <= value <= MAX_RESTARTS:
            raise self.fail(key, f"must be between 0 and {MAX_RESTARTS:,}, got {_show(value)}")
        return value

    def strings(self, value: object, key: Key) -> None:
        """Refuse anything but an array of strings (whatever the strings hold)."""
        if not isinstance(value, list):
            raise self.fail(key, f"must be an array of strings, got {_kind(value)}")
        for i, item in enumerate(value):
            if not isinstance(item, str):
                raise self.fail((*key, i), f"must be a string, got {_kind(item)}")

    def resolve(self, program: str, cwd: str, env: dict[str, str] | None, key: Key) -> None:
        """Find the program as spawn will, so that a typo fails before anything starts."""
        try:
            resolve_command(program, os.get_exec_path({**os.environ, **(env or {})}), cwd)
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
