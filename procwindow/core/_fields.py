"""The parts of an operation's spec: what a field holds (:class:`Kind`), a field
(:class:`Field`) with its check and docs phrase, how an MCP tool words
it (:class:`Mcp`), and an operation (:class:`Verb`). The operations themselves are
in :mod:`procwindow.core.spec`.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ._errors import InvalidField, ProcwindowError
from ._ready import Ready
from .rules import (
    check_argv,
    check_env,
    check_graceful_timeout,
    check_scope_name,
    check_signal,
    check_tool,
    shown,
)

__all__ = ["MAX_ID", "READY_KINDS", "Field", "Kind", "Mcp", "Verb"]

#: The largest id a proc can have (SQLite's integers are 64-bit): larger is no proc.
MAX_ID = 2**63 - 1


class Kind(enum.StrEnum):
    """What a field holds: how it is checked, typed in JSON and read from a command line."""

    TEXT = "text"  # a string
    NONEMPTY = "nonempty"  # a non-empty string (a pattern, a path)
    NAME = "name"  # a session or agent name
    TOOL = "tool"  # who asked: a one-line printable string
    ID = "id"  # a proc's id, at least 1
    COUNT = "count"  # an integer within minimum..maximum
    SECONDS = "seconds"  # a positive, finite number of seconds
    GRACE = "grace"  # seconds between SIGTERM and SIGKILL: 0..MAX_GRACEFUL_TIMEOUT
    TIME = "time"  # a point in time: Unix seconds
    FLAG = "flag"  # true or false
    CHOICE = "choice"  # one of ``choices``
    ARGV = "argv"  # a command: the program and its arguments
    STRINGS = "strings"  # a list of strings
    IDS = "ids"  # a list of ids
    ENV = "env"  # an object of strings (null removes a variable)
    READY = "ready"  # a readiness check (an object; see Ready)
    SIGNAL = "signal"  # a signal: a name (TERM, SIGHUP) or a number


@dataclass(frozen=True, slots=True)
class Mcp:
    """How an MCP tool words and bounds a field (None in a part: as the field's own)."""

    name: str | None = None
    help: str | None = None
    default: Any = None
    maximum: int | None = None


@dataclass(frozen=True, slots=True)
class Field:
    """One field of an operation.

    ``default`` is what an absent field (or ``null``) means; ``required`` fields have
    none. ``minimum``/``maximum`` bound a COUNT. ``cli`` is ctl's spelling: ``""``
    for ``--name-with-dashes``, a metavar in capitals (``ID``) for a positional
    argument, None for a field ctl does not offer. ``mcp`` is None for a field the
    MCP tools do not take. ``note`` is the short phrase of docs/protocol.md's tables.
    A FLAG is false unless given, or None with ``undecided``.
    """

    name: str
    kind: Kind
    help: str
    default: Any = None
    required: bool = False
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[str, ...] = ()
    cli: str | None = ""
    mcp: Mcp | None = field(default_factory=Mcp)
    note: str = ""
    #: A FLAG that may be neither: absent (None) means "as the other fields say".
    undecided: bool = False
    #: A key of a workspace file's commands too (``run``'s fields).
    workspace: bool = False
    #: A parameter of the library's method (false: the protocol's alone, such as
    #: ``out``'s ``follow``).
    library: bool = True

    def __post_init__(self) -> None:
        if self.kind is Kind.FLAG and self.default is None and not self.undecided:
            object.__setattr__(self, "default", False)

    @property
    def option(self) -> str | None:
        """ctl's option (``--max-bytes``), or None for a positional or absent one."""
        if self.cli is None or (self.cli and self.cli.isupper()):
            return None
        return self.cli or "--" + self.name.replace("_", "-")

    def for_mcp(self) -> Field:
        """The field as an MCP tool takes it: its name, help, default and bound
        there (tighter than the protocol's where a result is capped)."""
        if self.mcp is None:
            raise ValueError(f"{self.name} is not an argument of an MCP tool")
        m = self.mcp
        return replace(
            self,
            name=m.name or self.name,
            help=m.help or self.help,
            default=self.default if m.default is None else m.default,
            maximum=self.maximum if m.maximum is None else m.maximum,
        )

    def bounds(self) -> tuple[int | None, int | None]:
        """The bounds of a COUNT or ID (min, max)."""
        if self.kind is Kind.ID:
            return 1, MAX_ID
        return self.minimum, self.maximum

    def check(self, value: Any) -> Any:
        """``value`` checked (and made the type the library takes), or InvalidField."""
        try:
            return _CHECKS[self.kind](self, value)
        except ProcwindowError:
            # A shared rule's own error (InvalidScope, InvalidArgv, InvalidPattern)
            # is the same at every surface: it passes as it is.
            raise
        except (ValueError, TypeError, OverflowError) as exc:
            raise InvalidField("", self.name, _named(self.name, str(exc))) from None

    def refuse(self, rule: str, value: Any) -> InvalidField:
        return InvalidField("", self.name, f"{self.name} must be {rule}, got {shown(value)}")

    def describe(self) -> str:
        """The field for docs/protocol.md's table: ``since`` (seq, default 0)."""
        bits = [self.note or _KIND_NOTES.get(self.kind, "")]
        low, high = self.bounds()
        if self.kind is Kind.COUNT and high is not None:
            bits.append(f"{low} to {high}")
        elif self.kind is Kind.COUNT and low:
            bits.append(f"at least {low}")
        if self.default is not None and self.default is not False and self.default != "":
            bits.append(f"default {_default_text(self.default)}")
        bits = [bit for bit in bits if bit]
        return f"`{self.name}`" + (f" ({', '.join(bits)})" if bits else "")


#: What docs/protocol.md says a field of each kind is, unless the field says more.
_KIND_NOTES = {
    Kind.FLAG: "boolean",
    Kind.NONEMPTY: "a non-empty string",
    Kind.ARGV: "a list of strings",
    Kind.STRINGS: "a list of strings",
    Kind.IDS: "a list of ids",
    Kind.ENV: "an object",
    Kind.SECONDS: "seconds",
    Kind.SIGNAL: "a name (`TERM`, `SIGHUP`) or a number",
}


def _named(name: str, message: str) -> str:
    """A rule's message about ``name``, starting with the name once."""
    return message if message.startswith(name) else f"{name}: {message}"


def _default_text(value: Any) -> str:
    if value is True:
        return "true"
    return (
        f"`{value}`"
        if isinstance(value, str)
        else f"{value:g}"
        if isinstance(value, float)
        else str(value)
    )


# -- the checks of each kind -----------------------------------------------------------


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _count(f: Field, value: Any) -> int:
    low, high = f.bounds()
    if not _is_int(value):
        raise f.refuse("an integer" if low is None else f"an integer of at least {low}", value)
    if low is not None and value < low:
        raise f.refuse(f"an integer of at least {low}", value)
    if high is not None and value > high and f.kind is not Kind.ID:
        raise f.refuse(f"an integer of at most {high}", value)
    return int(value)


def _text(f: Field, value: Any) -> str:
    if not isinstance(value, str):
        raise f.refuse("a string", value)
    return value


def _nonempty(f: Field, value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise f.refuse("a non-empty string", value)
    return value


def _seconds(f: Field, value: Any) -> float:
    rule = "a positive number of seconds"
    if f.maximum is not None:
        rule += f" of at most {f.maximum}"
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise f.refuse(rule, value)
    try:
        seconds = float(value)
    except OverflowError:
        seconds = math.inf
    if not math.isfinite(seconds) or seconds <= 0:
        raise f.refuse(rule, value)
    if f.maximum is not None and seconds > f.maximum:
        raise f.refuse(rule, value)
    return seconds


def _time(f: Field, value: Any) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise f.refuse("a time in Unix seconds", value)
    try:
        when = float(value)
    except OverflowError:
        when = math.inf
    if not math.isfinite(when):
        raise f.refuse("a time in Unix seconds", value)
    return when


def _flag(f: Field, value: Any) -> bool:
    if not isinstance(value, bool):
        raise f.refuse("true or false", value)
    return value


def _choice(f: Field, value: Any) -> str:
    if not isinstance(value, str) or value not in f.choices:
        raise f.refuse("one of " + ", ".join(f.choices), value)
    return value


def _strings(f: Field, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise f.refuse("a list of strings", value)
    return list(value)


def _ids(f: Field, value: Any) -> list[int]:
    if not isinstance(value, list) or not all(_is_int(v) and v >= 1 for v in value):
        raise f.refuse("a list of ids (integers of at least 1)", value)
    return list(value)


#: A readiness check's fields, by kind of check; ``interval`` and ``timeout`` go with any.
READY_KINDS: dict[str, frozenset[str]] = {
    "line": frozenset({"line", "regex", "stream"}),
    "port": frozenset({"port", "host"}),
    "command": frozenset({"command"}),
    "shell": frozenset({"shell"}),
    "http": frozenset({"http", "status"}),
}
#: ``"line", "port", "command", "shell" or "http"``: the kinds, as messages name them.
READY_CHOICES = (
    ", ".join(f'"{k}"' for k in list(READY_KINDS)[:-1]) + f' or "{list(READY_KINDS)[-1]}"'
)
_READY_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "line": ((str,), "a string"),
    "regex": ((bool,), "true or false"),
    "stream": ((str,), "'stdout' or 'stderr'"),
    "port": ((int,), "an integer"),
    "host": ((str,), "a string"),
    "command": ((list,), "a list of strings"),
    "shell": ((str,), "a string"),
    "http": ((str,), "an http:// or https:// URL"),
    "status": ((int,), "an HTTP status (an integer, 100-599)"),
    "interval": ((int, float), "a number of seconds"),
    "timeout": ((int, float), "a number of seconds"),
}


def _signal(f: Field, value: Any) -> int:
    """A signal's number; with a ``minimum`` of 1, not 0 (which sends nothing)."""
    return check_signal(value, f.name, f.minimum or 0)


def _ready(f: Field, value: Any) -> Ready:
    """A readiness check: an object of the protocol, or as the library takes it too:
    a Ready, a line pattern (a string) or a port (an integer, not a boolean). Any
    fault of it is the field's (its rules' own errors, a bad regex, included)."""
    if isinstance(value, Ready):
        return value
    try:
        return _ready_of(f, value)
    except InvalidField:
        raise
    except (ValueError, TypeError, OverflowError) as exc:  # InvalidArgv, InvalidPattern too
        raise InvalidField("", f.name, _named(f.name, str(exc))) from None


def _ready_of(f: Field, value: Any) -> Ready:
    if isinstance(value, str) or _is_int(value):
        return Ready.of(value)
    if not isinstance(value, Mapping):
        raise f.refuse(
            f"a line pattern, a port or an object with one of {READY_CHOICES}",
            value,
        )
    kinds = [kind for kind in READY_KINDS if kind in value]
    if len(kinds) != 1:
        raise ValueError(f"give exactly one of {READY_CHOICES}")
    extra = set(value) - READY_KINDS[kinds[0]] - {"interval", "timeout"}
    if extra:
        raise ValueError(f"a {kinds[0]} check takes no {sorted(extra)[0]!r}")
    for key, item in value.items():
        types, what = _READY_TYPES[key]
        if not isinstance(item, types) or (isinstance(item, bool) and bool not in types):
            raise ValueError(f"{key!r} must be {what}")
    if value.get("stream") not in (None, "stdout", "stderr"):
        raise ValueError("'stream' is 'stdout' or 'stderr'")
    if value.get("host") == "":
        raise ValueError("'host' is empty")
    return Ready.of(value)


_CHECKS: dict[Kind, Callable[[Field, Any], Any]] = {
    Kind.TEXT: _text,
    Kind.NONEMPTY: _nonempty,
    Kind.NAME: lambda f, v: check_scope_name(f.name, v),
    Kind.TOOL: lambda f, v: check_tool(v),
    Kind.ID: _count,
    Kind.COUNT: _count,
    Kind.SECONDS: _seconds,
    Kind.GRACE: lambda f, v: check_graceful_timeout(v, f.name),
    Kind.TIME: _time,
    Kind.FLAG: _flag,
    Kind.CHOICE: _choice,
    Kind.ARGV: lambda f, v: check_argv(v, f.name),
    Kind.STRINGS: _strings,
    Kind.IDS: _ids,
    Kind.ENV: lambda f, v: check_env(v),
    Kind.READY: _ready,
    Kind.SIGNAL: _signal,
}

# -- verbs -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Verb:
    """One operation: the protocol's ``name``, what it does, and its fields.

    ``library`` is the Supervisor method, ``ctl`` the ``procwindow ctl`` verb and
    ``mcp`` the MCP tool that carry it out (None where there is none); ``wire``
    is false for an operation of the library alone (no request). ``rules``
    check what no single field can (``head`` and ``tail`` together); each raises
    InvalidField.
    """

    name: str
    help: str
    fields: tuple[Field, ...] = ()
    library: str | None = None
    ctl: str | None = None
    mcp: str | None = None
    wire: bool = True
    rules: tuple[Callable[[dict[str, Any]], None], ...] = ()

    def __iter__(self) -> Iterator[Field]:
        return iter(self.fields)

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"{self.name} has no field {name!r}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.fields)

    def check(
        self, given: Mapping[str, Any], *, ignore: frozenset[str] = frozenset()
    ) -> dict[str, Any]:
        """Every field of the operation, checked, with defaults for those absent (or
        null); InvalidField for an unknown field (besides ``ignore``), a missing
        required one, or a bad value."""
        unknown = sorted(set(given) - set(self.names) - ignore)
        if unknown:
            raise InvalidField(
                self.name,
                unknown[0],
                f"unknown field {unknown[0]!r}: {self.name} takes "
                + (", ".join(self.names) or "no field"),
            )
        out: dict[str, Any] = {}
        for f in self.fields:
            value = given.get(f.name)
            if value is None:
                if f.required:
                    raise InvalidField(self.name, f.name, f"{f.name} is required")
                out[f.name] = f.default
                continue
            try:
                out[f.name] = f.check(value)
            except InvalidField as exc:
                raise InvalidField(self.name, f.name, str(exc)) from None
        for rule in self.rules:
            rule(out)
        return out

    def describe(self) -> str:
        """The fields for docs/protocol.md's table of operations."""
        required = [f.describe() for f in self.fields if f.required]
        optional = [f.describe() for f in self.fields if not f.required]
        parts = [", ".join(required)] if required else []
        if optional:
            parts.append("optional " + ", ".join(optional))
        return "; ".join(parts) or "—"
