"""The rules every layer shares: defaults, argument checks, scope patterns and counts.

The library, the control socket, workspace files, the CLI and the window all
take the same values from users. Each rule lives here once; the layers only
say *where* a bad value came from (a request field, a line of a file).
"""

from __future__ import annotations

import math
import signal
from collections.abc import Iterable, Mapping
from typing import NamedTuple, Protocol

from ._errors import InvalidArgv, InvalidScope

__all__ = [
    "DEFAULT_AGENT",
    "DEFAULT_GRACEFUL_TIMEOUT",
    "DEFAULT_SESSION",
    "DEFAULT_TOOL",
    "MAX_GRACEFUL_TIMEOUT",
    "SHELL",
    "CommandError",
    "ScopeCounts",
    "check_argv",
    "check_env",
    "check_graceful_timeout",
    "check_scope_name",
    "check_signal",
    "check_tool",
    "command_argv",
    "count_scopes",
    "scope_pattern",
    "shown",
    "signal_name",
    "topic_token",
]

#: The session a command runs in when nobody names one.
DEFAULT_SESSION = "default"
#: The agent a command runs as when nobody names one.
DEFAULT_AGENT = "main"
#: The tool a command is attributed to when nobody names one.
DEFAULT_TOOL = "shell"
#: Seconds between SIGTERM and SIGKILL unless a proc or supervisor says otherwise.
DEFAULT_GRACEFUL_TIMEOUT = 5.0
#: The longest grace between SIGTERM and SIGKILL a proc may be given (seconds).
#: Bounded, so that shutting a supervisor down is bounded too.
MAX_GRACEFUL_TIMEOUT = 60.0
#: The shell that runs a ``shell=`` command line (``SHELL -c line``).
SHELL = "/bin/sh"

# Characters a session or agent name may not hold: wildcards of patterns, and
# whitespace (names are one token of one-line reports). A "." is escaped in topics.
_NOT_IN_NAMES = frozenset("*> \t\r\n\0")


# -- values ------------------------------------------------------------------


def shown(value: object, limit: int = 80) -> str:
    """``repr(value)`` for a one-line error: clipped, and safe for any value (the
    repr of an int of thousands of digits raises ValueError)."""
    try:
        text = repr(value)
    except ValueError:
        text = f"<{type(value).__name__} too large to show>"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _kind(value: object) -> str:
    name = type(value).__name__
    return f"an {name}" if name[:1] in "aeiou" else f"a {name}"


def check_graceful_timeout(value: object, what: str = "graceful_timeout") -> float:
    """``value`` as seconds of grace: a finite number in [0, MAX_GRACEFUL_TIMEOUT].

    Raises ValueError with a one-line reason otherwise (``inf``, ``nan``, a
    negative number, a bool or a string).

    >>> check_graceful_timeout(2)
    2.0
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what} must be a number of seconds, got {shown(value)}")
    try:
        seconds = float(value)
    except OverflowError:  # an int too large for a float
        seconds = math.inf
    if not math.isfinite(seconds) or not 0 <= seconds <= MAX_GRACEFUL_TIMEOUT:
        raise ValueError(
            f"{what} must be between 0 and {MAX_GRACEFUL_TIMEOUT:g} seconds, got {shown(value)}"
        )
    return seconds


def check_scope_name(kind: str, name: object) -> str:
    """Return ``name`` if it can name a session or agent, else raise InvalidScope.

    A name is shown in one-line reports and is one token of event topics:
    non-empty, printable, without ``*``, ``>`` or whitespace. A ``.`` (``gpt-4.1``)
    is allowed: topics escape it (see :func:`topic_token`).
    """
    if not isinstance(name, str) or not name:
        raise InvalidScope(f"{kind} must be a non-empty string, got {shown(name)}")
    bad = set(_NOT_IN_NAMES.intersection(name))
    if not name.isprintable():
        bad.update(c for c in name if not c.isprintable())
    if bad:
        raise InvalidScope(
            f"{kind} {shown(name)} contains {''.join(sorted(bad))!r}; "
            "names may not contain '*', '>', whitespace or control characters"
        )
    return name


def check_tool(tool: object) -> str:
    """Return ``tool`` if it is a non-empty single-line printable string."""
    if not isinstance(tool, str) or not tool or not tool.isprintable():
        raise InvalidArgv(
            "tool must be a non-empty single-line string without control characters,"
            f" got {shown(tool)}"
        )
    return tool


def check_signal(value: object, what: str = "signal", lowest: int = 0) -> int:
    """``value`` as a signal number: a number from ``lowest`` to SIGRTMAX, or a name
    with or without ``SIG``, in any case (``"TERM"``, ``"SIGhup"``, ``"9"``). 0 sends
    nothing: it asks whether the process is there.

    >>> check_signal("term"), check_signal("SIGKILL"), check_signal(10)
    (15, 9, 10)
    """
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, int) and not isinstance(value, bool):
        if lowest <= value <= signal.SIGRTMAX:
            return value
    elif isinstance(value, str):
        name = value.strip().upper()
        name = name if name.startswith("SIG") else "SIG" + name
        if name in signal.Signals.__members__ and name not in ("SIG_DFL", "SIG_IGN"):
            return int(signal.Signals[name])
    raise ValueError(
        f"{what} must be a signal name (TERM, INT, HUP, KILL, USR1…) or a number from"
        f" {lowest} to {int(signal.SIGRTMAX)}, got {shown(value)}"
    )


def signal_name(value: object) -> str:
    """How a signal is named to people: ``SIGTERM`` for 15 or ``"term"``,
    ``signal 40`` for a number with no name; ``value`` as given if it is no signal.

    >>> signal_name(15), signal_name("hup"), signal_name(40)
    ('SIGTERM', 'SIGHUP', 'signal 40')
    """
    try:
        number = check_signal(value)
    except ValueError:
        return str(value)
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


# -- commands ----------------------------------------------------------------


class CommandError(InvalidArgv):
    """A command that cannot be run, and which part of it is wrong.

    ``field`` is ``"argv"``, ``"shell"`` or ``""`` (both or neither given);
    ``index`` the argv position, if one element is to blame. ``reason`` is the
    message without the field's name, for callers that name the place
    themselves (a line of a workspace file).
    """

    def __init__(self, field: str, reason: str, index: int | None = None) -> None:
        where = field if index is None else f"{field}[{index}]"
        super().__init__(f"{where} {reason}" if field else reason)
        self.field = field
        self.index = index
        self.reason = reason


def check_argv(argv: object, what: str = "argv") -> tuple[str, ...]:
    """``argv`` as a tuple of strings, or CommandError (an InvalidArgv) naming ``what``."""
    if isinstance(argv, (str, bytes)):
        raise CommandError(what, f"must be a sequence of strings, not {_kind(argv)}")
    if not isinstance(argv, Iterable) or isinstance(argv, Mapping):
        raise CommandError(what, f"must be a sequence of strings, got {shown(argv)}")
    args = tuple(argv)
    if not args:
        raise CommandError(what, "must not be empty")
    for i, arg in enumerate(args):
        if not isinstance(arg, str):
            raise CommandError(what, f"is {_kind(arg)}, not a str: {shown(arg)}", i)
        # Any other character is the child's business; NUL cannot reach it.
        if "\0" in arg:
            raise CommandError(what, f"contains a NUL byte: {shown(arg)}", i)
    if not args[0]:
        raise CommandError(what, "must not be empty: it names the program", 0)
    return args


def command_argv(argv: object = None, shell: object = None) -> tuple[str, ...]:
    """The argv to run for exactly one of ``argv`` (a sequence) or ``shell`` (a line).

    A shell line runs as ``/bin/sh -c line``.

    >>> command_argv(shell="make -j4 | tee log")
    ('/bin/sh', '-c', 'make -j4 | tee log')
    """
    if (argv is None) == (shell is None):
        raise CommandError("", "give exactly one of argv (a list of strings) or shell (a string)")
    if shell is None:
        return check_argv(argv)
    if not isinstance(shell, str):
        raise CommandError("shell", f"must be a string, not {_kind(shell)}")
    if not shell.strip():
        raise CommandError("shell", "must not be empty")
    if "\0" in shell:
        raise CommandError("shell", "contains a NUL byte")
    return (SHELL, "-c", shell)


def check_env(env: object) -> dict[str, str | None] | None:
    """``env`` as variables to add (a str) or remove (None), or InvalidArgv."""
    if env is None:
        return None
    if not isinstance(env, Mapping):
        raise InvalidArgv(f"env must be an object of strings, got {shown(env)}")
    out: dict[str, str | None] = {}
    for key, value in env.items():
        if not isinstance(key, str) or not key or "=" in key or "\0" in key:
            raise InvalidArgv(f"invalid environment variable name: {key!r}")
        if value is not None and not isinstance(value, str):
            raise InvalidArgv(f"environment variable {key} must be a str or None, got {value!r}")
        if value is not None and "\0" in value:
            raise InvalidArgv(f"environment variable {key} contains a NUL byte: {value!r}")
        out[key] = value
    return out


# -- scopes ------------------------------------------------------------------


def topic_token(name: str) -> str:
    """A session or agent name as one token of a topic: ``%`` becomes ``%25`` and
    ``.`` becomes ``%2E``, so a name never splits into two tokens.

    >>> topic_token("gpt-4.1")
    'gpt-4%2E1'
    """
    if "%" in name:
        name = name.replace("%", "%25")
    return name.replace(".", "%2E") if "." in name else name


def scope_pattern(session: str | None = None, agent: str | None = None) -> str:
    """The event pattern of every proc in a scope (None: any session or agent).
    Names are escaped as topics escape them (:func:`topic_token`).

    >>> scope_pattern("build")
    'session.build.agent.*.proc.>'
    >>> scope_pattern("s", "gpt-4.1")
    'session.s.agent.gpt-4%2E1.proc.>'
    """
    s = topic_token(session) if session else "*"
    a = topic_token(agent) if agent else "*"
    return f"session.{s}.agent.{a}.proc.>"


class ScopeCounts(NamedTuple):
    """How many procs of a scope are running, and how many it holds in all."""

    running: int = 0
    total: int = 0

    def __add__(self, other: object) -> ScopeCounts:
        if not isinstance(other, ScopeCounts):
            return NotImplemented
        return ScopeCounts(self.running + other.running, self.total + other.total)

    def label(self, name: str) -> str:
        """``"build  2/5"``: the name and running/total, or just the name while empty."""
        return f"{name}  {self.running}/{self.total}" if self.total else name


class _Scoped(Protocol):
    @property
    def session(self) -> str: ...
    @property
    def agent(self) -> str: ...
    @property
    def running(self) -> bool: ...


def count_scopes(
    procs: Iterable[_Scoped], declared: Mapping[str, Iterable[str]] | None = None
) -> dict[str, dict[str, ScopeCounts]]:
    """Running/total per session and agent, sorted by name.

    ``declared`` scopes (a workspace's) are listed even while they hold no proc.
    """
    tree: dict[str, dict[str, ScopeCounts]] = {}
    for session, agents in (declared or {}).items():
        row = tree.setdefault(session, {})
        for agent in agents:
            row.setdefault(agent, ScopeCounts())
    for p in procs:
        row = tree.setdefault(p.session, {})
        row[p.agent] = row.get(p.agent, ScopeCounts()) + ScopeCounts(int(p.running), 1)
    return {s: dict(sorted(agents.items())) for s, agents in sorted(tree.items())}
