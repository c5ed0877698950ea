"""The state of one command while its workspace runs (:class:`Slot`), and
what it means for the commands that depend on it (:func:`verdict`): plain
data and decisions, no processes. The run's driver (:mod:`._orchestra`) keeps
one Slot per command.
"""

from __future__ import annotations

import asyncio

from ._command import Command, Condition, Dependency
from ._command_state import CommandState
from ._proc import Proc, format_cmd
from ._restart import ended
from ._types import CommandRun, ExitInfo, Phase

__all__ = ["FINAL", "Slot", "verdict"]

#: Phases after which a command starts no more.
FINAL = frozenset({Phase.SKIPPED, Phase.STOPPED, Phase.COMPLETED, Phase.FAILED})


class Slot:
    """The mutable state of one command while its workspace runs (the run's own)."""

    __slots__ = (
        "check_gave_up",
        "detail",
        "ever_ready",
        "first_step",
        "last_exit",
        "name",
        "next_attempt_at",
        "phase",
        "proc",
        "restart_asked",
        "restarts",
        "runs",
        "spec",
        "streak",
        "task",
        "unhealthy",
        "waiting_for",
    )

    def __init__(self, spec: Command) -> None:
        assert spec.name is not None  # Workspace names every command
        self.spec = spec
        self.name = spec.name
        self.phase = Phase.WAITING if spec.depends_on else Phase.STARTING
        # Empty, so that the first look at the dependencies announces what it waits for.
        self.waiting_for: tuple[Dependency, ...] = ()
        self.proc: Proc | None = None
        self.runs: list[int] = []
        self.restarts = 0
        self.streak = 0  # restarts in the current crash loop
        self.next_attempt_at: float | None = None
        self.detail: str | None = None
        self.ever_ready = False
        self.check_gave_up = False
        self.unhealthy = False
        self.last_exit: ExitInfo | None = None
        self.restart_asked = False  # a person asked for a restart: the next exit is no stop
        self.task: asyncio.Task[None] | None = None
        self.first_step: asyncio.Future[None] | None = None

    def ran(self, proc: Proc, workspace: str) -> CommandRun:
        """A run of it started as ``proc``: which command of ``workspace`` it
        is, and the run it follows."""
        previous = self.proc.id if self.proc is not None else None
        self.proc = proc
        self.runs.append(proc.id)
        return CommandRun(workspace, self.name, previous)

    def stepped(self) -> None:
        """Its first step is done: it started, waits, or was settled."""
        if self.first_step is not None and not self.first_step.done():
            self.first_step.set_result(None)

    def snapshot(self, workspace: str) -> CommandState:
        """Its state as readers see it, in the run of ``workspace``."""
        slot, spec = self, self.spec
        return CommandState(
            workspace=workspace,
            name=slot.name,
            session=spec.session,
            agent=spec.agent,
            tool=spec.tool,
            cmd=format_cmd(spec.argv),
            phase=slot.phase,
            proc_id=slot.proc.id if slot.proc is not None else None,
            runs=tuple(slot.runs),
            depends_on=spec.dependencies,
            waiting_for=slot.waiting_for if slot.phase is Phase.WAITING else (),
            restarts=slot.restarts,
            next_attempt_at=slot.next_attempt_at if slot.phase is Phase.RESTARTING else None,
            detail=slot.detail,
        )


def verdict(cond: Condition, d: Slot) -> bool | str:
    """Whether ``cond`` holds of the command ``d`` (True), may hold later
    (False), or never will (why, for people)."""
    settled = d.phase in FINAL
    if cond is Condition.STARTED:
        if d.runs:
            return True
        return f"{d.name} never started ({_why(d)})" if settled else False
    if cond is Condition.READY:
        if d.ever_ready:
            return True
        if d.check_gave_up:
            return f"{d.name} never became ready: {d.detail}"
        return f"{d.name} never became ready: {_why(d)}" if settled else False
    if cond is Condition.COMPLETED:
        if d.phase in (Phase.COMPLETED, Phase.FAILED) and d.last_exit is not None:
            return True
        return f"{d.name} never ran to its end ({_why(d)})" if settled else False
    if d.phase is Phase.COMPLETED:
        return True
    return f"{d.name} did not complete successfully: {_why(d)}" if settled else False


def _why(d: Slot) -> str:
    """How a settled command ended, for a dependent's reason."""
    if d.phase is Phase.SKIPPED:
        return f"it was skipped ({d.detail})" if d.detail else "it was skipped"
    if d.phase is Phase.STOPPED:
        return "it was stopped"
    if d.detail:
        return d.detail
    if d.last_exit is not None:
        return f"it {ended(d.last_exit)}"
    return f"it is {d.phase.value}"
