"""The restart policy of a workspace command, as plain decisions: after a run
ended, whether the command starts again, after how long, and what its state
says. No processes, no clock and no event loop: ``decide`` is a function of
the command, the exit and the crash loop so far (tested alone, in
``tests/core/test_restart.py``); the run's driver (:mod:`._orchestra`) acts on
its answer.
"""

from __future__ import annotations

from typing import NamedTuple

from ._command import Command, RestartPolicy
from ._types import ExitInfo, ExitReason, Phase

__all__ = ["ASKED", "Decision", "decide", "ended"]

#: Exit reasons of a stop somebody asked for (term, kill, interrupt).
ASKED = frozenset({ExitReason.TERMINATED, ExitReason.KILLED, ExitReason.ESCALATED})


def ended(info: ExitInfo) -> str:
    """How a run ended, for people: ``exited with code 1 (failed)``.

    >>> ended(ExitInfo(143, 15, ExitReason.TERMINATED, 2.0))
    'exited with code 143 (terminated, signal 15)'
    """
    sig = f", signal {info.signal}" if info.signal is not None else ""
    return f"exited with code {info.code} ({info.reason.value}{sig})"


class Decision(NamedTuple):
    """What follows a run: the command's next ``phase`` (``restarting``,
    ``stopped``, ``completed`` or ``failed``) and its ``detail``; ``streak``,
    the length of the crash loop from now on; for a restart, ``delay``
    seconds before the next attempt."""

    phase: Phase
    detail: str | None
    streak: int
    delay: float = 0.0

    @property
    def restart(self) -> bool:
        """True if the command starts again (after ``delay``)."""
        return self.phase is Phase.RESTARTING


def decide(
    command: Command,
    info: ExitInfo | None,
    *,
    streak: int,
    unhealthy: bool = False,
    detail: str | None = None,
    asked: bool = False,
) -> Decision:
    """After a run of ``command`` ended (``info``; None: it could not start),
    whether to start again: a restart asked for (``asked``), the policy, the
    stop's cause and the crash loop's length (``streak`` restarts in a row so
    far) decide.

    ``unhealthy``: its liveness check failed (then ``detail`` says how); a run
    that could not start gives its reason as ``detail``.

    >>> from ._command import Backoff
    >>> c = Command("s", "a", ("x",), restart="on-failure", backoff=Backoff(1, 2, 60))
    >>> d = decide(c, ExitInfo(1, None, ExitReason.FAILED, 0.5), streak=2)
    >>> d.restart, d.streak, d.delay, d.detail
    (True, 3, 4.0, 'it exited with code 1 (failed)')
    """
    if asked:  # a new loop begins: no crash
        return Decision(Phase.RESTARTING, "restarted on request", streak=0)
    if info is not None:
        if info.reason in ASKED and not unhealthy:
            return Decision(Phase.STOPPED, f"stopped: it {ended(info)}", streak)
        if info.runtime >= command.backoff.cap:
            streak = 0  # it ran long enough: a new loop begins
        failure = unhealthy or info.code != 0
        why = detail if unhealthy and detail else f"it {ended(info)}"
    else:
        failure = True
        why = detail or "it could not start"
    policy = command.policy
    wanted = policy is RestartPolicy.ALWAYS or (policy is RestartPolicy.ON_FAILURE and failure)
    if wanted and streak < command.max_restarts:
        return Decision(Phase.RESTARTING, why, streak + 1, command.backoff.delay(streak))
    if wanted and command.max_restarts:
        times = "restart" if streak == 1 else "restarts"
        why = f"gave up after {streak} {times} in a row: {why}"
    if failure:
        return Decision(Phase.FAILED, why, streak)
    return Decision(Phase.COMPLETED, None, streak)
