"""The MCP server of ``procwindow mcp`` and its tools: :func:`build_app` makes the
server and registers each tool, whose work is done by :class:`~._reading.Reading`
(the tools that read) or :class:`~._acting.Acting` (those that act).

A tool's arguments come from the spec of the operation it carries out
(:mod:`._args`): their names, types, bounds and descriptions, and the checks that
refuse a bad one. Results are dicts the SDK returns as structured content; their
text is bounded by the helpers of ``_text`` (about :data:`TEXT_CAP` bytes each).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..core import ProcwindowError
from ._acting import Acting
from ._args import arg, check_arguments, tool_fields
from ._backend import Backend, Scope
from ._policy import ACTING_TOOLS, Policy
from ._reading import LIST_CAP, Reading
from ._stdio import pipe_streams
from ._text import TEXT_CAP
from ._toolbox import FALLBACK_AGENT, TOOL_NAME, Args

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

__all__ = [
    "FALLBACK_AGENT",
    "INSTRUCTIONS",
    "LIST_CAP",
    "TEXT_CAP",
    "TOOL_NAME",
    "build_app",
]

#: What the server tells the client about itself and its tools.
INSTRUCTIONS = """\
procwindow runs commands in the background for you and keeps their output.
Typical use: `run` a command (you get its id; give `wait` seconds for a short
command to get its exit and output in the same call), then `wait_for` a line that
shows it is ready or done (or `wait_ready` when you gave `run` a readiness check,
or `wait` for its exit), read its output with `excerpt` (head and tail) or `read`
(every line after a cursor, page by page), find failures with `search` (an `id`, a
pattern and `context`), and stop it with `term` (or `kill`, `interrupt`, `signal`);
`restart` runs it again. `list` shows your processes, `history` finds earlier runs by
command or exit reason, `ports` tells what a server listens on, `tree` which
processes it is made of (`signal` with `os_pid` reaches one of them). Ids stay valid after a
process exits; its output is kept. Output is paged by cursors: a line's `seq`
counts up from 1; pass the `cursor` a result gives you as `since` to continue
after it. Results are capped at about 16 KB of text and say what they left out.
You act on your own session's processes; a refusal names the rule.
"""

# -- the server ------------------------------------------------------------------------


def build_app(backend: Backend, scope: Scope, policy: Policy | None = None) -> MCPServer[Any]:
    """The MCP server and its tools (needs the SDK); ``policy``: what the session
    may do (default: act on and read its own session's processes)."""
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    from .. import __version__

    class Server(MCPServer[Any]):
        async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
            # The spec refuses a bad argument here, in one line, as every surface does.
            try:
                check_arguments(name, arguments)
            except ProcwindowError as exc:
                raise ToolError(str(exc)) from None
            return await super().call_tool(name, arguments, context)

        async def run_stdio_async(self) -> None:
            """Serve on stdin and stdout, read and written on the loop (``_stdio``)."""
            from mcp.server.stdio import stdio_server

            async with pipe_streams() as streams:
                if streams is None:  # not pipes: the SDK's own transport
                    await super().run_stdio_async()
                    return
                server = self._lowlevel_server
                async with stdio_server(*streams) as (read, write):  # type: ignore[arg-type]
                    await server.run(read, write, server.create_initialization_options())

    app = Server(
        "procwindow",
        title="procwindow",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",
    )
    policy = policy or Policy(scope.session)
    reading, acting = Reading(backend, scope, policy), Acting(backend, scope, policy)
    for name, hints in _hints().items():
        method = getattr(reading if name in _READ else acting, name)
        app.add_tool(_tool_function(name, method, Context, ToolError), name=name, annotations=hints)
    return app


#: The reading tools, in the order a client lists them.
_READ = (
    "read",
    "excerpt",
    "screen",
    "search",
    "wait_for",
    "wait_ready",
    "wait",
    "list",
    "history",
    "ports",
    "tree",
)


def _hints() -> dict[str, ToolAnnotations]:
    """Each tool, and what it tells the client of itself."""
    from mcp.types import ToolAnnotations

    reads = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    stops = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True)
    acts = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
    hints = {
        "run": ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True),
        "write": acts,
        "resize": acts,
        "interrupt": acts,
        "signal": ToolAnnotations(read_only_hint=False, destructive_hint=True),
        "term": stops,
        "kill": stops,
        "restart": ToolAnnotations(read_only_hint=False, destructive_hint=True),
        "dismiss": ToolAnnotations(
            read_only_hint=False, destructive_hint=False, idempotent_hint=True
        ),
    }
    return {name: hints[name] for name in ACTING_TOOLS} | {name: reads for name in _READ}


def _tool_function(
    name: str,
    method: Callable[[Args, Any], Awaitable[dict[str, Any]]],
    context: type,
    tool_error: type[Exception],
) -> Callable[..., Awaitable[dict[str, Any]]]:
    """The function the SDK registers for tool ``name``: its signature is the tool's
    arguments as the spec gives them (the SDK makes the input schema from it), plus
    the call's context; it hands them to ``method`` as one dict."""

    async def call(ctx: Any, **args: Any) -> dict[str, Any]:
        try:
            return await method(args, ctx)
        except ProcwindowError as exc:  # ToolFailed, Refused: one line for the agent
            raise tool_error(str(exc)) from None

    keyword = inspect.Parameter.KEYWORD_ONLY
    params = [
        inspect.Parameter(
            f.name,
            keyword,
            default=inspect.Parameter.empty if f.required else f.default,
            annotation=arg(name, f.name),
        )
        for f in tool_fields(name).values()
    ]
    params.append(inspect.Parameter("ctx", keyword, annotation=context))
    from ._results import RESULTS  # pydantic's, as the SDK

    result = RESULTS[name]  # the output schema the client is shown
    call.__signature__ = inspect.Signature(params, return_annotation=result)  # type: ignore[attr-defined]
    call.__annotations__ = {p.name: p.annotation for p in params} | {"return": result}
    call.__name__ = call.__qualname__ = name
    call.__doc__ = inspect.cleandoc(method.__doc__ or "")
    return call
