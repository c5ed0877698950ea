"""The workspace verbs: ``up``, ``down`` and ``workspaces``; and ``sessions``,
whose list includes the sessions and agents that workspaces declare.

Apart from :mod:`._handlers` as a family: they act on workspace runs, not on
one proc.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from ..core import Supervisor, WorkspaceNotFound, WorkspaceRun, count_scopes
from ._conn import Conn
from ._handlers_base import Handler
from .workspace import load_workspace


class _WorkspaceVerbs:
    """``up``, ``down``, ``workspaces`` and ``sessions`` (whose list includes the
    sessions and agents ``declared`` before any process or workspace has them)."""

    def __init__(self, sup: Supervisor, declared: Mapping[str, Sequence[str]]) -> None:
        self.sup = sup
        self.declared = declared

    def verbs(self) -> dict[str, Handler]:
        return {
            "up": self._up,
            "down": self._down,
            "workspaces": self._workspaces,
            "sessions": self._sessions,
        }

    async def _up(self, req: dict[str, Any], conn: Conn) -> Any:
        """Load a workspace file (checked whole first) and start it here: all
        of it, or only ``commands`` (with what they depend on unless ``no_deps``)."""
        ws = load_workspace(req["path"]).select(req["commands"] or (), deps=not req["no_deps"])
        run = await ws.start(self.sup)
        return _run_to_json(run)

    async def _down(self, req: dict[str, Any], conn: Conn) -> Any:
        """Stop a workspace (every one without ``workspace``), or only some of its
        commands and their dependents, dependents first; reply once they stopped."""
        name, commands = req["workspace"], req["commands"]
        runs = self.sup.workspaces
        if name is not None:
            runs = [run for run in runs if run.name == name]
            if not runs:
                raise WorkspaceNotFound(
                    "workspace", name, [run.name for run in self.sup.workspaces]
                )
        stopped: list[list[str]] = []
        for run in reversed(runs):  # the last one up goes first
            # A stop half done is worse than one the client does not wait for.
            order = await asyncio.shield(
                asyncio.ensure_future(run.stop(commands if commands is not None else None))
            )
            stopped += [[run.name, command] for command in order]
        return {"workspaces": [run.name for run in runs], "stopped": stopped}

    async def _workspaces(self, req: dict[str, Any], conn: Conn) -> Any:
        return [_run_to_json(run) for run in self.sup.workspaces]

    async def _sessions(self, req: dict[str, Any], conn: Conn) -> Any:
        declared: dict[str, list[str]] = {s: list(a) for s, a in self.declared.items()}
        for run in self.sup.workspaces:
            for session, agents in run.workspace.sessions.items():
                known = declared.setdefault(session, [])
                known += [a for a in agents if a not in known]
        return [
            {
                "session": session,
                "agents": [
                    {"agent": agent, "running": counts.running, "total": counts.total}
                    for agent, counts in agents.items()
                ],
            }
            for session, agents in count_scopes(self.sup.procs(), declared).items()
        ]


def _run_to_json(run: WorkspaceRun) -> dict[str, Any]:
    """A running workspace: its name, file and commands' states."""
    return {
        "workspace": run.name,
        "path": run.workspace.path,
        "commands": [st.to_json() for st in run.states()],
    }
