"""The workspaces running on a server, as a RemoteSupervisor mirrors them.

``RemoteSupervisor.workspaces`` lists :class:`RemoteWorkspaceRun` objects: the
reading side of a :class:`~procwindow.core.WorkspaceRun` (``name``,
``states()``, ``state(name)``, ``state_of(proc_id)``), so that the window shows
a server's workspace commands as it shows its own: countdowns, what a command
waits for, why it was skipped. They are taken whole from the server's
``workspaces`` answer when the link is made, and each ``phase`` event updates
its command's state in place before it is published here (``_Workspaces``, a
part of RemoteSupervisor over :mod:`._remote_calls`).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from ..core import (
    CommandState,
    Condition,
    Dependency,
    Phase,
    SupervisorClosed,
    WorkspaceNotFound,
)
from ._links import Disconnected
from ._remote_calls import _Calls
from .client import ServerError

__all__ = ["RemoteWorkspaceRun", "runs_from_json"]

log = logging.getLogger("procwindow.remote")

#: Phases after which a command starts no more (as the server's orchestration has them).
FINAL = frozenset({Phase.SKIPPED, Phase.STOPPED, Phase.COMPLETED, Phase.FAILED})


class RemoteWorkspaceRun:
    """A workspace running on the server: its commands' states, kept current.

    Only reads: starting, stopping and restarting are the server's (``ctl up``,
    ``ctl down``, ``restart`` of one of its procs).
    """

    def __init__(self, name: str, path: str | None, states: Sequence[CommandState]) -> None:
        self.name = name
        self.path = path
        self._states = {s.name: s for s in states}

    def __repr__(self) -> str:
        return f"<RemoteWorkspaceRun {self.name!r} ({len(self._states)} commands)>"

    @property
    def running(self) -> bool:
        """True while the server runs it (a mirror of a stopped run is dropped)."""
        return True

    def state(self, name: str) -> CommandState:
        """The state of the command ``name``; WorkspaceNotFound if there is none."""
        state = self._states.get(name)
        if state is None:
            raise WorkspaceNotFound("command", name, list(self._states)[:10])
        return state

    def states(self) -> list[CommandState]:
        """Every command's state, in the workspace's order."""
        return list(self._states.values())

    def state_of(self, proc_id: int) -> CommandState | None:
        """The state of the command that ran proc ``proc_id`` (any of its runs), or None."""
        return next((s for s in self._states.values() if proc_id in s.runs), None)

    @property
    def settled(self) -> bool:
        """Every command is in a final phase (the run may have ended there)."""
        return all(s.phase in FINAL for s in self._states.values())

    def apply(self, proc_id: int, fields: Mapping[str, Any]) -> bool:
        """A ``phase`` event's ``fields`` (of the command's latest proc
        ``proc_id``, 0 before its first start) applied; False if the command is
        not one of this run's."""
        old = self._states.get(str(fields.get("command", "")))
        if old is None:
            return False
        runs = old.runs
        if proc_id and proc_id not in runs:
            runs = (*runs, proc_id)
        waiting = tuple(
            Dependency(str(name), Condition(str(cond)))
            for name, cond in fields.get("waiting_for", ())
        )
        self._states[old.name] = dataclasses.replace(
            old,
            phase=Phase(fields.get("phase", old.phase)),
            proc_id=proc_id or old.proc_id,
            runs=runs,
            waiting_for=waiting,
            restarts=int(fields.get("restarts", old.restarts)),
            next_attempt_at=fields.get("next_attempt_at"),
            detail=fields.get("detail"),
        )
        return True


def runs_from_json(reply: Any) -> list[RemoteWorkspaceRun]:
    """The server's ``workspaces`` answer as mirrors; ValueError if it is not one."""
    if not isinstance(reply, list):
        raise ValueError("workspaces: a list was expected")
    runs = []
    for item in reply:
        try:
            states = [CommandState.from_json(s) for s in item["commands"]]
            runs.append(RemoteWorkspaceRun(str(item["workspace"]), item.get("path"), states))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"workspaces: {exc}") from None
    return runs


class _Workspaces:
    """The server's running workspaces, mirrored."""

    def __init__(self, calls: _Calls) -> None:
        self._calls = calls
        self.runs: list[RemoteWorkspaceRun] = []

    async def refresh(self) -> None:
        """Take the server's running workspaces whole (an older server has none)."""
        try:
            self.runs = runs_from_json(await self._calls.call("workspaces"))
        except ServerError as exc:
            if exc.code != "unknown-op":
                raise
            self.runs = []
        except ValueError as exc:
            log.warning("%s: cannot read its workspaces: %s", self._calls.where, exc)
            self.runs = []

    async def on_phase(self, pid: int, fields: dict[str, Any]) -> None:
        """A command's phase changed: its mirrored state follows, before the event
        is published (a workspace not seen yet is fetched first)."""
        name = fields.get("workspace")
        run = next((r for r in self.runs if r.name == name), None)
        if run is None or not run.apply(pid, fields):
            await self.refresh()
            return
        if run.settled:  # perhaps stopped whole: the server's list says
            self._calls.spawn_task(self._refresh_quietly(), "procwindow remote workspaces")

    async def _refresh_quietly(self) -> None:
        try:
            await self.refresh()
        except (ServerError, Disconnected, SupervisorClosed):
            pass  # the next link's snapshot takes them again
