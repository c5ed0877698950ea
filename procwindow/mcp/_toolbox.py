"""What every MCP tool works with: the control socket (:class:`Backend`), the
session's scope and policy, and the proc a call names, looked up and checked.

:class:`Toolbox` is shared by the tools that read (:mod:`._reading`) and those that
act (:mod:`._acting`).
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from ..control.aclient import AsyncClient
from ..core import ProcwindowError
from ._backend import Backend, Scope
from ._policy import Policy

if TYPE_CHECKING:
    from mcp.server.mcpserver import Context

__all__ = ["FALLBACK_AGENT", "TOOL_NAME", "Args", "ToolFailed", "Toolbox"]

#: The ``tool`` recorded for the procs the agent starts.
TOOL_NAME = "mcp"
#: The agent name when neither --agent, $PROCWINDOW_AGENT nor the client names one.
FALLBACK_AGENT = "agent"

Args = dict[str, Any]


class ToolFailed(ProcwindowError):
    """A tool cannot do what it was asked (an empty command): its one-line error."""

    code = "tool-failed"


class Toolbox:
    """The backend, scope and policy of one MCP session."""

    def __init__(self, backend: Backend, scope: Scope, policy: Policy) -> None:
        self.backend = backend
        self.scope = scope
        self.policy = policy

    def agent_of(self, ctx: Context) -> str:
        """The agent of the procs started: --agent, or the MCP client's own name."""
        if self.scope.agent is None:
            name = None
            with contextlib.suppress(Exception):
                params = ctx.session.client_params
                if params is not None:
                    name = params.client_info.name
            self.scope.agent = name if isinstance(name, str) and name else FALLBACK_AGENT
        return self.scope.agent

    async def proc(self, client: AsyncClient, tool: str, proc_id: int) -> dict[str, Any]:
        """Proc ``proc_id`` as ``get`` gives it (live or from the history), once the
        policy allows ``tool`` on it: ProcNotFound, or Refused."""
        self.policy.check_tool(tool)
        proc: dict[str, Any] = await client.call("get", proc=proc_id)
        self.policy.check_proc(tool, proc)
        return proc
