"""The state of a workspace's commands, as readers see it: :class:`CommandState`
(a snapshot of one command, and its JSON for the control protocol), and the
tables ``ctl`` and the server print from a list of them.

Kept apart from :mod:`._orchestra`, which runs the commands: nothing here acts.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._command import Condition, Dependency
from ._text import escape_controls
from ._types import Phase

__all__ = ["CommandState", "commands_table", "idx_rows"]


@dataclass(frozen=True, slots=True)
class CommandState:
    """Where one command of a running workspace is (``WorkspaceRun.state``).

    ``phase``: see :class:`Phase`. ``proc_id``: its latest proc (None before it
    first starts); ``runs``: every proc it ran, oldest first, so a restart is
    linked to the run before it. ``depends_on``: its dependencies;
    ``waiting_for``: those not met yet (while ``waiting``). ``restarts``: how
    often it was restarted; ``next_attempt_at`` (Unix seconds): when the next
    restart is due (while ``restarting``). ``detail``: why, for people (the
    dependency that failed, the exit that led to a restart, a liveness failure).
    """

    workspace: str
    name: str
    session: str
    agent: str
    tool: str
    cmd: str
    phase: Phase
    proc_id: int | None
    runs: tuple[int, ...]
    depends_on: tuple[Dependency, ...]
    waiting_for: tuple[Dependency, ...]
    restarts: int
    next_attempt_at: float | None
    detail: str | None

    def describe(self, now: float | None = None) -> str:
        """A short status for a table: ``waiting for db (ready)``, ``restarting
        in 4 s``, ``skipped: db never became ready: it exited with code 1
        (failed)``… ``now``: the current time (Unix seconds), for the countdown.

        >>> CommandState(
        ...     "ws",
        ...     "api",
        ...     "s",
        ...     "a",
        ...     "shell",
        ...     "api",
        ...     Phase.WAITING,
        ...     None,
        ...     (),
        ...     (),
        ...     (Dependency("db", Condition.READY),),
        ...     0,
        ...     None,
        ...     None,
        ... ).describe()
        'waiting for db (ready)'
        """
        match self.phase:
            case Phase.WAITING:
                if not self.waiting_for:
                    return "waiting"
                return "waiting for " + ", ".join(str(d) for d in self.waiting_for)
            case Phase.RESTARTING:
                at = self.next_attempt_at
                left = 0.0 if at is None else at - (time.time() if now is None else now)
                return f"restarting in {max(0, math.ceil(left))} s"
            case Phase.SKIPPED | Phase.FAILED if self.detail:
                return f"{self.phase.value}: {self.detail}"
            case _:
                return self.phase.value

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CommandState:
        """A state from its JSON (``to_json``); KeyError or ValueError if it is not one."""

        def deps(pairs: Any) -> tuple[Dependency, ...]:
            return tuple(Dependency(str(n), Condition(c)) for n, c in pairs)

        return cls(
            workspace=str(data["workspace"]),
            name=str(data["name"]),
            session=str(data["session"]),
            agent=str(data["agent"]),
            tool=str(data["tool"]),
            cmd=str(data["cmd"]),
            phase=Phase(data["phase"]),
            proc_id=data["proc"],
            runs=tuple(data["runs"]),
            depends_on=deps(data["depends_on"]),
            waiting_for=deps(data["waiting_for"]),
            restarts=int(data["restarts"]),
            next_attempt_at=data["next_attempt_at"],
            detail=data["detail"],
        )

    def to_json(self) -> dict[str, object]:
        """The state as JSON (the control protocol's command state)."""
        return {
            "workspace": self.workspace,
            "name": self.name,
            "session": self.session,
            "agent": self.agent,
            "tool": self.tool,
            "cmd": self.cmd,
            "phase": self.phase.value,
            "proc": self.proc_id,
            "runs": list(self.runs),
            "depends_on": [[d.name, d.condition.value] for d in self.depends_on],
            "waiting_for": [[d.name, d.condition.value] for d in self.waiting_for],
            "restarts": self.restarts,
            "next_attempt_at": self.next_attempt_at,
            "detail": self.detail,
        }


def _in_scope(state: CommandState, session: str | None, agent: str | None) -> bool:
    return (session is None or state.session == session) and (agent is None or state.agent == agent)


def idx_rows(
    states: Iterable[CommandState], session: str | None = None, agent: str | None = None
) -> str:
    """Index rows (``idx``'s columns) for the commands of a scope that have no
    proc yet: pid ``-``, status ``waiting`` or ``skipped`` (or another phase of
    a command that never started), exit code ``-1``, start ``-``, runtime 0.0."""
    rows = []
    for st in states:
        if st.proc_id is None and _in_scope(st, session, agent):
            rows.append(
                f"-\t{st.phase.value}\t-1\t{escape_controls(st.tool)}\t{escape_controls(st.cmd)}"
                "\t-\t0.0\n"
            )
    return "".join(rows)


def commands_table(
    states: Sequence[CommandState],
    now: float | None = None,
    session: str | None = None,
    agent: str | None = None,
) -> str:
    """A table of workspace commands for people: workspace/name, scope, state,
    restarts, latest proc, dependencies. Empty when there is none."""
    now = time.time() if now is None else now
    head = ("COMMAND", "SCOPE", "STATE", "RESTARTS", "PROC", "DEPENDS ON")
    rows = [head]
    for st in states:
        if not _in_scope(st, session, agent):
            continue
        rows.append(
            (
                escape_controls(f"{st.workspace}/{st.name}"),
                escape_controls(f"{st.session}/{st.agent}"),
                escape_controls(st.describe(now)),
                str(st.restarts),
                str(st.proc_id) if st.proc_id is not None else "-",
                escape_controls(", ".join(str(d) for d in st.depends_on)) or "-",
            )
        )
    if len(rows) == 1:
        return ""
    widths = [max(len(r[i]) for r in rows) for i in range(len(head) - 1)]
    return "".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1] + "\n"
        for r in rows
    )
