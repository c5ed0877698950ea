"""Workspaces as data: named commands with dependencies, health checks and
restart policies, checked whole before anything starts.

The commands themselves (their conditions, checks and policies) are
:mod:`._command`'s. Running a workspace is the runtime's job
(:mod:`._orchestra`, which ``Workspace.start`` reaches through
:func:`use_runtime`); reading one from a TOML file, with errors placed on their
line, is ``procwindow.control.workspace``'s.
"""

from __future__ import annotations

import difflib
import os
from collections import Counter
from collections.abc import Awaitable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, TypeVar

from ._command import (
    DEFAULT_BACKOFF,
    DEFAULT_MAX_RESTARTS,
    MAX_BACKOFF,
    MAX_BACKOFF_FACTOR,
    MAX_RESTARTS,
    MIN_BACKOFF,
    Backoff,
    Command,
    Condition,
    Dependency,
    InvalidWorkspace,
    Liveness,
    RestartPolicy,
    WorkspaceConflict,
    WorkspaceNotFound,
    check_command_name,
    condition_of,
    policy_of,
)

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
    "use_runtime",
]


R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)


class Host(Protocol[R_co]):
    """What ``Workspace.start`` sees of a supervisor: the runs on it, whose
    type is the type ``start`` returns (``WorkspaceRun`` for a ``Supervisor``)."""

    @property
    def workspaces(self) -> Sequence[R_co]: ...


class Runtime(Protocol):
    """Runs a workspace on a supervisor; returns the run once each command
    took its first step (``_orchestra.launch``)."""

    def __call__(self, workspace: Workspace, supervisor: Any, /) -> Awaitable[Any]: ...


#: The runtime. It sits above this data (it reads ``Workspace`` and
#: ``Command``), so it hands itself over: :mod:`._orchestra` calls
#: ``use_runtime`` when imported. The supervisor imports the runtime, so it is
#: here before any supervisor exists.
_runtime: Runtime | None = None


def use_runtime(runtime: Runtime) -> None:
    """Run workspaces with ``runtime`` (called once, by :mod:`._orchestra`)."""
    global _runtime
    _runtime = runtime


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

    def only(self, names: Iterable[str], *, deps: bool = True) -> Workspace:
        """This workspace with only the commands ``names`` and, with ``deps``,
        what they depend on (as ``docker compose up NAME…``); without, only
        those, their dependencies on the others dropped (``--no-deps``).
        WorkspaceNotFound for a name it lacks.

        >>> ws = Workspace(
        ...     [
        ...         Command("s", "db", ("true",)),
        ...         Command("s", "api", ("true",), depends_on=["db"]),
        ...         Command("s", "web", ("true",), depends_on=["api"]),
        ...     ]
        ... )
        >>> [c.name for c in ws.only(["api"]).commands]
        ['db', 'api']
        >>> [(c.name, c.dependencies) for c in ws.only(["api"], deps=False).commands]
        [('api', ())]
        """
        wanted = {str(self.command(name).name) for name in names}
        if deps:
            todo = list(wanted)
            while todo:
                for dep in self.command(todo.pop()).dependencies:
                    if dep.name not in wanted:
                        wanted.add(dep.name)
                        todo.append(dep.name)
        kept = []
        for c in self.commands:
            if c.name in wanted:
                if not deps:
                    c = replace(
                        c,
                        depends_on={
                            d.name: d.condition.value for d in c.dependencies if d.name in wanted
                        },
                    )
                kept.append(c)
        return replace(self, commands=kept)

    def select(self, names: Sequence[str] = (), *, deps: bool = True) -> Workspace:
        """What ``up FILE [NAME…]`` starts: with names, :meth:`only` those; with
        none, every command but the ``disabled`` ones that no other depends on.

        >>> seed = Command("s", "seed", ("true",), disabled=True)
        >>> ws = Workspace([Command("s", "db", ("true",)), seed])
        >>> [c.name for c in ws.select().commands], [c.name for c in ws.select(["seed"]).commands]
        (['db'], ['seed'])
        """
        if names:
            return self.only(names, deps=deps)
        if not any(c.disabled for c in self.commands):
            return self
        return self.only([str(c.name) for c in self.commands if not c.disabled])

    def command(self, name: str) -> Command:
        """The command named ``name``; WorkspaceNotFound if there is none."""
        for c in self.commands:
            if c.name == name:
                return c
        raise WorkspaceNotFound("command", name, [c.name or "" for c in self.commands][:10])

    async def start(self, supervisor: Host[R]) -> R:
        """Run this workspace on ``supervisor``: the commands without
        dependencies start at once, the others as their dependencies allow.
        Returns once each command has started, or waits, or was skipped; the
        run goes on in the background (``WorkspaceRun``) until its ``stop()``
        or the supervisor's ``close()``, which stop dependents first.

        Raises WorkspaceConflict if a workspace of the same ``title`` runs on
        ``supervisor``, SupervisorClosed if it is closing.
        """
        if _runtime is None:  # unreachable with a Supervisor, which imports it
            raise RuntimeError("no workspace runtime: import procwindow.core")
        run: R = await _runtime(self, supervisor)
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
