"""Workspaces as data: named commands with dependencies, health checks and
restart policies, checked whole before anything starts.

Running one is :mod:`._orchestra`'s job (``Workspace.start``); reading one
from a TOML file, with errors placed on their line, is
``procwindow.control.workspace``'s.
"""

from __future__ import annotations

import difflib
import enum
import math
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from ._errors import ProcwindowError
from ._ready import Ready
from .rules import DEFAULT_TOOL, check_scope_name, shown

if TYPE_CHECKING:
    from ._orchestra import WorkspaceRun
    from ._supervisor import Supervisor

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
    "Workspace",
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

    def __init__(self, name: str) -> None:
        super().__init__(f"workspace {name!r} is up already (stop it first: ctl down {name})")
        self.name = name


class WorkspaceNotFound(ProcwindowError, LookupError):
    """No workspace (or no command of a workspace) of this name runs here."""

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
    at most ``max_restarts`` times in a row.

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
    name: str | None = None
    depends_on: Mapping[str, Condition | str] | Sequence[str] = field(default_factory=dict)
    ready: Ready | str | int | Mapping[str, object] | None = None
    liveness: Liveness | None = None
    restart: RestartPolicy | str = RestartPolicy.NO
    backoff: Backoff = DEFAULT_BACKOFF
    max_restarts: int = DEFAULT_MAX_RESTARTS

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


@dataclass(frozen=True, slots=True)
class Workspace:
    """Sessions, agents and the commands they start, checked as a whole.

    Every command gets a ``name`` unique in the workspace: when it names none,
    its agent's (``AGENT-N`` when the agent runs several commands, prefixed
    with ``SESSION/`` where that would be taken twice). Dependencies must name
    commands of the workspace, form no cycle, and ask for ``ready`` only of a
    command that has a readiness check: InvalidWorkspace otherwise.

    ``sessions`` lists the scopes it declares (also those without commands),
    in order; the scopes of its commands are added. ``graceful_timeout`` is
    the grace of commands that name none. ``attach`` names other supervisors
    (a server name, a socket path, ``ssh://[user@]host[:port][/NAME]``) that a
    window opening the workspace shows beside its own; nothing else reads it.
    ``start(supervisor)`` runs it.

    >>> ws = Workspace(
    ...     [
    ...         Command("dev", "db", ("sleep", "60"), ready=5432),
    ...         Command("dev", "api", ("sleep", "60"), depends_on={"db": "ready"}),
    ...     ]
    ... )
    >>> [c.name for c in ws.commands]
    ['db', 'api']
    """

    commands: list[Command] = field(default_factory=list)
    name: str | None = None
    path: str | None = None
    graceful_timeout: float | None = None
    sessions: dict[str, list[str]] = field(default_factory=dict)
    attach: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        commands = _named(list(self.commands))
        _check_graph(commands)
        object.__setattr__(self, "commands", commands)
        sessions = {s: list(agents) for s, agents in self.sessions.items()}
        for c in commands:
            agents = sessions.setdefault(c.session, [])
            if c.agent not in agents:
                agents.append(c.agent)
        object.__setattr__(self, "sessions", sessions)

    @property
    def title(self) -> str:
        """What a running copy is called: ``name``, else the file's name
        without ``.toml``, else ``workspace``."""
        if self.name:
            return self.name
        if self.path and not self.path.startswith("<"):
            stem = os.path.splitext(os.path.basename(self.path))[0]
            if stem:
                return stem
        return "workspace"

    def command(self, name: str) -> Command:
        """The command named ``name``; WorkspaceNotFound if there is none."""
        for c in self.commands:
            if c.name == name:
                return c
        raise WorkspaceNotFound("command", name, [c.name or "" for c in self.commands][:10])

    async def start(self, supervisor: Supervisor) -> WorkspaceRun:
        """Run this workspace on ``supervisor``: the commands without
        dependencies start at once, the others as their dependencies allow.
        Returns once each command has started, or waits, or was skipped; the
        run goes on in the background (``WorkspaceRun``) until its ``stop()``
        or the supervisor's ``close()``, which stop dependents first.

        Raises WorkspaceConflict if a workspace of the same ``title`` runs on
        ``supervisor``, SupervisorClosed if it is closing.
        """
        from ._orchestra import WorkspaceRun  # runs on what this module defines

        run = WorkspaceRun(self, supervisor)
        await run.start()
        return run


def _named(commands: list[Command]) -> list[Command]:
    """The commands, each with a name (see ``Workspace``)."""
    per_agent = Counter((c.session, c.agent) for c in commands if c.name is None)
    seen: Counter[tuple[str, str]] = Counter()
    bases: list[str | None] = []
    for c in commands:
        if c.name is not None:
            bases.append(None)
            continue
        scope = (c.session, c.agent)
        seen[scope] += 1
        bases.append(c.agent if per_agent[scope] == 1 else f"{c.agent}-{seen[scope]}")
    explicit = Counter(c.name for c in commands if c.name is not None)
    defaults = Counter(b for b in bases if b is not None)
    out = []
    for c, base in zip(commands, bases, strict=True):
        if base is not None:
            taken = defaults[base] > 1 or base in explicit
            c = replace(c, name=f"{c.session}/{base}" if taken else base)
        out.append(c)
    names: dict[str, int] = {}
    for i, c in enumerate(out):
        assert c.name is not None
        if c.name in names:
            given = "is given" if commands[i].name is not None else "would be given (by default)"
            raise InvalidWorkspace(
                f"two commands are named {c.name!r}: this one {given} the name of command"
                f" {names[c.name] + 1}; give each a distinct name",
                index=i,
                field="name",
            )
        names[c.name] = i
    return out


def _check_graph(commands: list[Command]) -> None:
    """Dependencies name known commands, ask ``ready`` of checked ones, and form no cycle."""
    index = {c.name: i for i, c in enumerate(commands)}
    edges: list[list[int]] = []
    for i, c in enumerate(commands):
        targets = []
        for dep in c.dependencies:

            def fail(message: str, dep: Dependency = dep, i: int = i) -> InvalidWorkspace:
                return InvalidWorkspace(message, index=i, field="depends_on", dependency=dep.name)

            if dep.name == c.name:
                raise fail(f"{c.name!r} depends on itself")
            j = index.get(dep.name)
            if j is None:
                close = difflib.get_close_matches(dep.name, [n for n in index if n], n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise fail(
                    f"{c.name!r} depends on {dep.name!r}, which is no command of this"
                    f" workspace{hint}"
                )
            if dep.condition is Condition.READY and commands[j].readiness is None:
                raise fail(
                    f"{c.name!r} waits for {dep.name!r} to be ready, but {dep.name!r} has no"
                    " ready check: give it one (ready = ...), or wait for it to be 'started'"
                )
            targets.append(j)
        edges.append(targets)
    cycle = _find_cycle(edges)
    if cycle is not None:
        names = tuple(commands[i].name or "" for i in cycle)
        raise InvalidWorkspace(
            f"a dependency cycle: {' -> '.join(names)}",
            index=cycle[0],
            field="depends_on",
            dependency=names[1],
            cycle=names,
        )


def _find_cycle(edges: list[list[int]]) -> list[int] | None:
    """A cycle of the graph (its nodes, the first repeated last), or None.

    Depth-first without recursion: a chain of thousands of commands must not
    reach the interpreter's recursion limit.
    """
    state = [0] * len(edges)  # 0 unseen, 1 on the path, 2 done
    for root in range(len(edges)):
        if state[root]:
            continue
        state[root] = 1
        path = [root]
        stack = [iter(edges[root])]
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state[nxt] == 1:
                return [*path[path.index(nxt) :], nxt]
            elif state[nxt] == 0:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(edges[nxt]))
    return None
