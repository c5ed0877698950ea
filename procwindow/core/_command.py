"""One command of a workspace, as data: what runs, the conditions it waits
for, its liveness check and restart policy (with backoff), each checked as it
is made; and the errors of workspaces. :class:`~._workspace.Workspace` checks
the commands as a whole.
"""

from __future__ import annotations

import enum
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple, TypeVar

from . import _pty
from ._errors import ProcwindowError
from ._ready import Ready
from .rules import DEFAULT_TOOL, check_scope_name, shown

__all__ = [
    "DEFAULT_BACKOFF",
    "DEFAULT_MAX_RESTARTS",
    "MAX_BACKOFF",
    "MAX_BACKOFF_FACTOR",
    "MAX_RESTARTS",
    "MIN_BACKOFF",
    "Backoff",
    "Command",
    "Condition",
    "Dependency",
    "InvalidWorkspace",
    "Liveness",
    "RestartPolicy",
    "WorkspaceConflict",
    "WorkspaceNotFound",
    "check_command_name",
    "condition_of",
    "policy_of",
]

#: Restarts in a row (a crash loop) before a command is given up.
DEFAULT_MAX_RESTARTS = 10
#: The most restarts in a row a command may be given.
MAX_RESTARTS = 10_000
#: The shortest and longest delay before a restart (seconds): a crash loop
#: never spins, and a restart is never a day away.
MIN_BACKOFF = 0.1
MAX_BACKOFF = 3600.0
#: The most a delay may grow from one restart to the next.
MAX_BACKOFF_FACTOR = 10.0
#: The most failed liveness probes in a row a command may be allowed.
MAX_LIVENESS_FAILURES = 1000
#: The longest liveness period, timeout or delay (seconds).
MAX_LIVENESS_SECONDS = 86_400.0


class InvalidWorkspace(ProcwindowError, ValueError):
    """A workspace that cannot run: two commands of one name, a dependency on a
    command that does not exist, a cycle, a value out of range.

    ``index`` is the position of the command at fault in ``Workspace.commands``
    (None: the workspace itself), ``field`` its field (``name``,
    ``depends_on``, ``backoff``…), ``dependency`` the dependency named, and
    ``cycle`` the names around a cycle (the first repeated last).
    """

    code = "invalid-workspace"
    details: ClassVar[Mapping[str, type]] = {
        "index": int,
        "field": str,
        "dependency": str,
        "cycle": list,
    }

    def __init__(
        self,
        message: str,
        *,
        index: int | None = None,
        field: str | None = None,
        dependency: str | None = None,
        cycle: tuple[str, ...] | None = None,
    ) -> None:
        super().__init__(message)
        self.index = index
        self.field = field
        self.dependency = dependency
        self.cycle = cycle


class WorkspaceConflict(ProcwindowError):
    """A workspace of this name runs on the supervisor already (stop it first)."""

    code = "workspace-conflict"
    details: ClassVar[Mapping[str, type]] = {"name": str}

    def __init__(self, name: str) -> None:
        super().__init__(f"workspace {name!r} is up already (stop it first: ctl down {name})")
        self.name = name


class WorkspaceNotFound(ProcwindowError, LookupError):
    """No workspace (or no command of a workspace) of this name runs here."""

    code = "workspace-not-found"
    details: ClassVar[Mapping[str, type]] = {"name": str}

    def __init__(self, what: str, name: str, known: Sequence[str] = ()) -> None:
        hint = f" (up: {', '.join(known)})" if known else f" (no {what} is up)"
        super().__init__(f"no {what} named {name!r}{hint}")
        self.name = name


class Condition(enum.StrEnum):
    """What a dependency must have done before its dependent starts.

    ``started``: it started. ``ready``: its readiness check passed (it must have
    one). ``completed``: it exited, whatever its code, and will not restart.
    ``completed_successfully``: it exited with code 0 and will not restart.
    """

    STARTED = "started"
    READY = "ready"
    COMPLETED = "completed"
    COMPLETED_SUCCESSFULLY = "completed_successfully"


#: What other process managers call our conditions: a hint for a user who
#: writes theirs.
_FOREIGN_CONDITIONS = {
    "process_started": Condition.STARTED,
    "service_started": Condition.STARTED,
    "process_healthy": Condition.READY,
    "service_healthy": Condition.READY,
    "healthy": Condition.READY,
    "process_completed": Condition.COMPLETED,
    "process_completed_successfully": Condition.COMPLETED_SUCCESSFULLY,
    "service_completed_successfully": Condition.COMPLETED_SUCCESSFULLY,
}


class RestartPolicy(enum.StrEnum):
    """When a command that exited starts again: ``no``; ``on-failure`` (a
    non-zero exit, death by a signal nobody here sent, or a failed liveness
    check); ``always``. A stop asked for by a person (``term``, ``kill``,
    ``ctl down``) never restarts it."""

    NO = "no"
    ON_FAILURE = "on-failure"
    ALWAYS = "always"


_FOREIGN_POLICIES = {
    "unless-stopped": RestartPolicy.ALWAYS,
    "never": RestartPolicy.NO,
    "on_failure": RestartPolicy.ON_FAILURE,
    "onfailure": RestartPolicy.ON_FAILURE,
}


E = TypeVar("E", bound=enum.StrEnum)


def _member(kind: type[E], value: object) -> E | None:
    """``value`` as a member of the string enum ``kind``, or None."""
    if isinstance(value, kind):
        return value
    if isinstance(value, str):
        try:
            return kind(value)
        except ValueError:
            return None
    return None


def condition_of(value: object) -> Condition:
    """``value`` as a Condition; InvalidWorkspace (with a hint) otherwise."""
    found = _member(Condition, value)
    if found is not None:
        return found
    known = ", ".join(repr(c.value) for c in Condition)
    hint = ""
    if isinstance(value, str) and value in _FOREIGN_CONDITIONS:
        hint = f" ({value!r} is {_FOREIGN_CONDITIONS[value].value!r} here)"
    raise InvalidWorkspace(f"the condition must be one of {known}, got {shown(value)}{hint}")


def policy_of(value: object) -> RestartPolicy:
    """``value`` as a RestartPolicy; InvalidWorkspace (with a hint) otherwise."""
    found = _member(RestartPolicy, value)
    if found is not None:
        return found
    known = ", ".join(repr(p.value) for p in RestartPolicy)
    hint = ""
    if isinstance(value, str) and value in _FOREIGN_POLICIES:
        hint = f" (write {_FOREIGN_POLICIES[value].value!r})"
    elif value is False:
        hint = " (write 'no': a quoted string)"
    raise InvalidWorkspace(f"restart must be one of {known}, got {shown(value)}{hint}")


class Dependency(NamedTuple):
    """A command this one waits for, and what it waits for it to do."""

    name: str
    condition: Condition

    def __str__(self) -> str:
        return f"{self.name} ({self.condition.value})"


def _seconds(value: object, what: str, low: float, high: float) -> float:
    """``value`` as seconds in [low, high]; InvalidWorkspace naming ``what`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidWorkspace(f"{what} must be a number of seconds, got {shown(value)}")
    try:
        seconds = float(value)
    except OverflowError:
        seconds = math.inf
    if not math.isfinite(seconds) or not low <= seconds <= high:
        raise InvalidWorkspace(f"{what} must be between {low:g} and {high:g}, got {shown(value)}")
    return seconds


def _count(value: object, what: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidWorkspace(f"{what} must be an integer, got {shown(value)}")
    if not low <= value <= high:
        raise InvalidWorkspace(f"{what} must be between {low:,} and {high:,}, got {shown(value)}")
    return value


@dataclass(frozen=True, slots=True)
class Backoff:
    """How long a command waits before each restart of a crash loop: ``initial``
    seconds, multiplied by ``factor`` each time, at most ``cap``. A run that
    lasted ``cap`` seconds or more ends the loop (the next delay is ``initial``
    again, and ``max_restarts`` counts from 0).

    >>> [Backoff(1, 2, 5).delay(n) for n in range(5)]
    [1.0, 2.0, 4.0, 5.0, 5.0]
    """

    initial: float = 1.0
    factor: float = 2.0
    cap: float = 60.0

    def __post_init__(self) -> None:
        initial = _seconds(self.initial, "backoff initial", MIN_BACKOFF, MAX_BACKOFF)
        if isinstance(self.factor, bool) or not isinstance(self.factor, (int, float)):
            raise InvalidWorkspace(f"backoff factor must be a number, got {shown(self.factor)}")
        factor = float(self.factor)
        if not 1.0 <= factor <= MAX_BACKOFF_FACTOR:
            raise InvalidWorkspace(
                f"backoff factor must be between 1 and {MAX_BACKOFF_FACTOR:g},"
                f" got {shown(self.factor)}"
            )
        cap = _seconds(self.cap, "backoff cap", initial, MAX_BACKOFF)
        object.__setattr__(self, "initial", initial)
        object.__setattr__(self, "factor", factor)
        object.__setattr__(self, "cap", cap)

    def delay(self, attempt: int) -> float:
        """Seconds before restart number ``attempt`` of a loop (0: the first)."""
        if self.factor == 1.0 or attempt <= 0:
            return min(self.cap, self.initial)
        # Compared in logarithms: factor ** attempt overflows long before it matters.
        if attempt * math.log(self.factor) >= math.log(self.cap / self.initial):
            return self.cap
        return min(self.cap, self.initial * self.factor**attempt)


#: The backoff of a command that names none.
DEFAULT_BACKOFF = Backoff()


@dataclass(frozen=True, slots=True)
class Liveness:
    """A check that a long-running command still works, probed every ``period``
    seconds once it is ready (``delay`` seconds after): ``failures`` failed
    probes in a row, and it is terminated and restarted by its policy.

    ``check`` is the kind of check ``Ready`` describes: a ``port`` must accept
    a connection and a ``command`` (or ``shell`` line) exit 0 within
    ``timeout`` seconds; a ``line`` is a heartbeat, a line of output that
    matches must appear within each ``period``.

    >>> Liveness(Ready(port=8080), period=5).describe()
    'port 127.0.0.1:8080'
    """

    check: Ready
    period: float = 10.0
    timeout: float = 5.0
    failures: int = 3
    delay: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.check, Ready):
            object.__setattr__(self, "check", Ready.of(self.check))
        period = _seconds(self.period, "liveness period", 0.01, MAX_LIVENESS_SECONDS)
        timeout = _seconds(self.timeout, "liveness timeout", 0.01, MAX_LIVENESS_SECONDS)
        delay = _seconds(self.delay, "liveness delay", 0.0, MAX_LIVENESS_SECONDS)
        failures = _count(self.failures, "liveness failures", 1, MAX_LIVENESS_FAILURES)
        object.__setattr__(self, "period", period)
        object.__setattr__(self, "timeout", timeout)
        object.__setattr__(self, "delay", delay)
        object.__setattr__(self, "failures", failures)

    def describe(self) -> str:
        """What is probed, for people: ``port 127.0.0.1:8080``, ``line /alive/``…"""
        return self.check.describe()


def check_command_name(name: object) -> str:
    """``name`` if it can name a workspace command (as a session or agent name
    can: non-empty, printable, no whitespace, ``*`` or ``>``); InvalidWorkspace
    otherwise."""
    try:
        return check_scope_name("command name", name)
    except ProcwindowError as exc:
        raise InvalidWorkspace(str(exc), field="name") from None


@dataclass(frozen=True, slots=True)
class Command:
    """One command of a workspace: what runs (``argv`` in scope ``session`` /
    ``agent``, as ``Supervisor.spawn`` takes it), its ``name`` within the
    workspace (given one by ``Workspace`` when None), and how it is orchestrated.

    ``depends_on``: ``{"db": "ready", "build": "completed_successfully"}``, or a
    list of names, each meaning ``started``. ``ready``: its readiness check (a
    ``Ready``, a line pattern or a port). ``liveness``: checked while it runs.
    ``restart``: ``"no"``, ``"on-failure"`` or ``"always"``, after ``backoff``,
    at most ``max_restarts`` times in a row. ``exit_on_end``/``exit_on_failure``:
    its end (its failure) ends a ``procwindow serve`` of the workspace.

    >>> Command(
    ...     "dev", "api", ("python", "api.py"), name="api", depends_on={"db": "ready"}, ready=8000
    ... ).dependencies
    (Dependency(name='db', condition=<Condition.READY: 'ready'>),)
    """

    session: str
    agent: str
    argv: tuple[str, ...]
    tool: str = DEFAULT_TOOL
    cwd: str | None = None
    env: Mapping[str, str] | None = None
    graceful_timeout: float | None = None
    #: The signal that asks its runs to stop (None: SIGTERM), or a command run
    #: to ask them instead.
    stop_signal: int | None = None
    stop_command: tuple[str, ...] | None = None
    #: Its terminal's size (rows, columns) to run on a pseudo-terminal; None: pipes.
    pty: tuple[int, int] | None = None
    name: str | None = None
    depends_on: Mapping[str, Condition | str] | Sequence[str] = field(default_factory=dict)
    ready: Ready | str | int | Mapping[str, object] | None = None
    liveness: Liveness | None = None
    restart: RestartPolicy | str = RestartPolicy.NO
    backoff: Backoff = DEFAULT_BACKOFF
    max_restarts: int = DEFAULT_MAX_RESTARTS
    #: When it ends for good (no restart follows), ``procwindow serve`` stops the
    #: workspace and exits with its status; ``exit_on_failure``: only if it failed.
    exit_on_end: bool = False
    exit_on_failure: bool = False
    #: Started only when named (``up FILE NAME``) or depended on (process-compose's
    #: ``disabled``).
    disabled: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "argv", tuple(self.argv))
        if self.name is not None:
            check_command_name(self.name)
        deps = self.depends_on
        if isinstance(deps, str):
            raise InvalidWorkspace(
                f"depends_on must be a table or a list of names, got {shown(deps)}",
                field="depends_on",
            )
        if isinstance(deps, Mapping):
            pairs = [(name, condition_of(cond)) for name, cond in deps.items()]
        else:
            pairs = [(name, Condition.STARTED) for name in deps]
        for name, _cond in pairs:
            if not isinstance(name, str) or not name:
                raise InvalidWorkspace(
                    f"a dependency is named by a command name, got {shown(name)}",
                    field="depends_on",
                )
        normal = dict(pairs)
        if len(normal) != len(pairs):
            twice = next(n for n, k in Counter(n for n, _c in pairs).items() if k > 1)
            raise InvalidWorkspace(
                f"depends on {twice!r} twice", field="depends_on", dependency=twice
            )
        object.__setattr__(self, "depends_on", normal)
        if self.ready is not None and not isinstance(self.ready, Ready):
            object.__setattr__(self, "ready", Ready.of(self.ready))
        object.__setattr__(self, "restart", policy_of(self.restart))
        if not isinstance(self.backoff, Backoff):
            raise InvalidWorkspace(
                f"backoff must be a Backoff, got {shown(self.backoff)}", field="backoff"
            )
        if self.liveness is not None and not isinstance(self.liveness, Liveness):
            raise InvalidWorkspace(
                f"liveness must be a Liveness, got {shown(self.liveness)}", field="liveness"
            )
        _count(self.max_restarts, "max_restarts", 0, MAX_RESTARTS)

    def spawn_args(self, default_grace: float | None) -> dict[str, Any]:
        """``spawn``'s keyword arguments for a run of it (its grace, else
        ``default_grace``, the workspace's)."""
        grace = self.graceful_timeout if self.graceful_timeout is not None else default_grace
        return {
            "session": self.session,
            "agent": self.agent,
            "tool": self.tool,
            "cwd": self.cwd,
            "env": self.env,
            "graceful_timeout": grace,
            "stop_signal": self.stop_signal,
            "stop_command": self.stop_command,
            "ready": self.readiness,
            **_pty.spawn_args(self.pty),
        }

    @property
    def dependencies(self) -> tuple[Dependency, ...]:
        """``depends_on`` as (name, condition) pairs, in the order given."""
        deps = self.depends_on
        assert isinstance(deps, Mapping)  # made one by __post_init__
        return tuple(Dependency(name, Condition(cond)) for name, cond in deps.items())

    @property
    def readiness(self) -> Ready | None:
        """``ready`` as a Ready (None: no readiness check)."""
        return self.ready if isinstance(self.ready, Ready) else None

    @property
    def policy(self) -> RestartPolicy:
        """``restart`` as a RestartPolicy."""
        return RestartPolicy(self.restart)
