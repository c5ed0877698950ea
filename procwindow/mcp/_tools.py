"""The MCP tools of ``procwindow mcp``: :class:`Tools` does each tool's work, a few
control-socket calls through a :class:`Backend`; :func:`build_app` makes the server
and registers them.

A tool's arguments come from the spec of the operation it carries out
(:mod:`._args`): their names, types, bounds and descriptions, and the checks that
refuse a bad one. Results are dicts the SDK returns as structured content; their
text is bounded by the helpers of ``_text`` (about :data:`TEXT_CAP` bytes each).
"""

from __future__ import annotations

import contextlib
import inspect
import os
import shlex
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..control import WRITE_CHUNK
from ..control.aclient import AsyncClient
from ..core import ProcwindowError
from ._args import arg, check_arguments, tool_fields
from ._backend import Backend, Scope, tool_client
from ._text import HIT_CAP, TEXT_CAP, byte_size, clip, clip_field, format_lines, proc_row

if TYPE_CHECKING:
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.types import ToolAnnotations

__all__ = ["FALLBACK_AGENT", "INSTRUCTIONS", "LIST_CAP", "TOOL_NAME", "Tools", "build_app"]

#: The most procs ``list`` shows (newest first).
LIST_CAP = 100
#: The ``tool`` recorded for the procs the agent starts.
TOOL_NAME = "mcp"
#: The agent name when neither --agent, $PROCWINDOW_AGENT nor the client names one.
FALLBACK_AGENT = "agent"

#: What the server tells the client about itself and its tools.
INSTRUCTIONS = """\
procwindow runs commands in the background for you and keeps their output.
Typical use: `run` a command (you get its id), then `wait_for` a line that shows
it is ready or done (or `wait_ready` when you gave `run` a readiness check), read
its output with `excerpt` (head and tail of a long output) or `read` (every line
after a cursor, page by page), and stop it with `term` (or `kill`). `list` shows
your processes, `search` finds lines in their output. Ids stay valid after a
process exits; its output is kept. Output is paged by cursors: a line's `seq`
counts up from 1; pass the `cursor` a result gives you as `since` to continue
after it. Results are capped at about 16 KB of text and say what they left out.
"""

Args = dict[str, Any]


class ToolFailed(ProcwindowError):
    """A tool cannot do what it was asked (an empty command): its one-line error."""

    code = "tool-failed"


class Tools:
    """What each tool does, given its arguments (checked, absent ones at their
    defaults) and the call's context (for the client's name)."""

    def __init__(self, backend: Backend, scope: Scope) -> None:
        self.backend = backend
        self.scope = scope

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

    async def run(self, args: Args, ctx: Context) -> dict[str, Any]:
        """Start a command in the background and return at once with its id.

        The process keeps running after this call; its stdout and stderr are
        captured and kept (also after it exits). Use the id with wait_for,
        wait_ready, read, excerpt, write, term and kill. Use it for anything that
        runs long or that you want to watch: servers, builds, test suites,
        watchers. Returns {"id", "os_pid", ...}.
        """
        fields = _command(args["command"], args["shell"])
        fields["cwd"] = _cwd(args["cwd"])
        # Optional fields are sent only when asked for.
        for name in ("env", "timeout", "ready"):
            if args[name]:
                fields[name] = args[name]
        for name in ("merge_stderr", "stdin", "reuse"):
            if args[name]:
                fields[name] = True
        agent = self.agent_of(ctx)
        async with tool_client(self.backend) as c:
            result = await c.call(
                "run", session=self.scope.session, agent=agent, tool=TOOL_NAME, **fields
            )
        out = dict(result) if isinstance(result, dict) else {"result": result}
        out.setdefault("session", self.scope.session)
        out.setdefault("agent", agent)
        return out

    async def read(self, args: Args, ctx: Context) -> dict[str, Any]:
        """Read a process's output lines after a cursor, oldest first, as text.

        Lines from stderr start with "[stderr] ". A last line starting with
        "[partial] " has no newline yet: a prompt waiting for input (answer it
        with `write`) or a progress bar; it is shown again once complete. The
        result's `cursor` is the seq of the last complete line returned: call
        again with since=cursor for the next page. `more` is true when lines
        after the cursor were already there but left out (by `limit` or the
        ~16 KB cap). `eof` is true when the output
        has ended and everything was read; `state` and `exit` tell whether and
        how the process ended. For a long output, `excerpt` (head and tail) is
        usually the better first look.
        """
        proc_id, since, limit = args["id"], args["since"], args["limit"]
        async with tool_client(self.backend) as c:
            out = await c.call(
                "out", proc=proc_id, since=since, limit=limit, stream=args["stream"], partial=True
            )
            info = await _proc_info(c, proc_id)
        lines = out.get("lines") or []
        text, shown, last = format_lines(lines)
        left = len(lines) - shown
        result: dict[str, Any] = {"id": proc_id, "text": text, "lines": shown}
        result["cursor"] = out.get("cursor", since) if left == 0 else last
        result["more"] = left > 0 or (not out.get("eof", False) and len(lines) >= limit)
        result["eof"] = bool(out.get("eof")) and left == 0
        if left:
            result["note"] = (
                f"{left} more line(s) were left out to keep this result small;"
                f" read again with since={result['cursor']}"
            )
        for key in ("dropped", "cut_bytes"):
            if out.get(key):
                result[key] = out[key]
        if info is not None:
            result["state"] = info.get("state")
            result["exit"] = info.get("exit")
        return result

    async def excerpt(self, args: Args, ctx: Context) -> dict[str, Any]:
        """The first and last lines of a process's output (after `since`), with
        what was left out in between counted: the quick way to see how a build
        or a test run went.

        Returns {"text", "cursor", "lines", "omitted_lines", "omitted_bytes",
        "eof", "exit"}; `cursor` is the seq of the last line, to pass as `since`
        to `read` or `wait_for` what comes next.
        """
        fields = {k: args[k] for k in ("head", "tail", "max_bytes", "since")}
        async with tool_client(self.backend) as c:
            result = dict(await c.call("excerpt", proc=args["id"], **fields))
        clip_field(result, "text")
        return result

    async def wait_for(self, args: Args, ctx: Context) -> dict[str, Any]:
        """Wait until a process writes a line matching `pattern` (lines already
        written after `since` count too), e.g. "listening on" for a server, or
        "passed|failed" for a test run.

        Returns {"line": {"seq", "stream", "time", "text"}, "cursor"}; pass the
        cursor as `since` to wait for the next match. Fails with NoMatch if the
        process ended without such a line (the message says how it exited), and
        with Timeout after `timeout` seconds (the process keeps running).
        """
        fields = {k: args[k] for k in ("pattern", "regex", "stream", "since", "timeout")}
        async with tool_client(self.backend) as c:
            result = dict(await c.call("wait_for", proc=args["id"], **fields))
        line = result.get("line")
        if isinstance(line, dict):
            line = dict(line)
            clip_field(line, "text")
            result["line"] = line
        return result

    async def wait_ready(self, args: Args, ctx: Context) -> dict[str, Any]:
        """Wait until the readiness check given to `run` (its `ready` argument)
        passes. Returns {"ready": true, "proc": {...}}; fails with NotReady if
        the process exits first or the check gives up, and with Timeout after
        `timeout` seconds (the process keeps running)."""
        async with tool_client(self.backend) as c:
            result = dict(await c.call("ready", proc=args["id"], timeout=args["timeout"]))
        if isinstance(result.get("proc"), dict):
            result["proc"] = proc_row(result["proc"], with_scope=False)
        return result

    async def write(self, args: Args, ctx: Context) -> dict[str, Any]:
        """Send text to the stdin of a process started with `stdin: true` (a
        prompt waiting for an answer, a REPL, a filter). Returns {"written":
        bytes, "closed": bool when `close` was asked}."""
        data: str = args["data"]
        # Pieces each well inside a request; the last one closes when asked.
        pieces = [data[i : i + WRITE_CHUNK] for i in range(0, len(data), WRITE_CHUNK)] or [""]
        written = 0
        result: Any = {}
        async with tool_client(self.backend) as c:
            for n, piece in enumerate(pieces, 1):
                close = args["close"] and n == len(pieces)
                result = await c.call("write", proc=args["id"], data=piece, close=close)
                written += int(result["written"])
        return {**result, "written": written}

    async def term(self, args: Args, ctx: Context) -> dict[str, Any]:
        """Stop a process gracefully: SIGTERM to it and its children, then SIGKILL
        if it has not exited after its grace period. Waits for the exit and
        returns {"id", "exit": {"code", "signal", "reason", "runtime"}}."""
        async with tool_client(self.backend) as c:
            result = await c.call("term", proc=args["id"])
        return {"id": args["id"], "exit": result}

    async def kill(self, args: Args, ctx: Context) -> dict[str, Any]:
        """Kill a process and its children now (SIGKILL). Waits for the exit and
        returns {"id", "exit": {"code", "signal", "reason", "runtime"}}."""
        async with tool_client(self.backend) as c:
            result = await c.call("kill", proc=args["id"])
        return {"id": args["id"], "exit": result}

    async def list(self, args: Args, ctx: Context) -> dict[str, Any]:
        """List your processes, newest first: {"procs": [{"id", "os_pid", "state", "code",
        "reason", "runtime", "cmd"}], ...}. `state` is starting, running, stopping
        or exited; `code` and `reason` (exited, failed, terminated, killed,
        escalated, timeout, lost) are there once it exited."""
        every = args["all_sessions"]
        agent = self.agent_of(ctx)
        fields = {} if every else {"session": self.scope.session, "agent": agent}
        async with tool_client(self.backend) as c:
            procs = await c.call("procs", **fields)
        rows = [proc_row(p, every) for p in procs[:LIST_CAP]]
        result: dict[str, Any] = {"procs": rows, "count": len(procs)}
        if len(procs) > len(rows):
            result["note"] = f"the {len(procs) - len(rows)} oldest were left out"
        if not every:
            result["session"], result["agent"] = self.scope.session, agent
        return result

    async def search(self, args: Args, ctx: Context) -> dict[str, Any]:
        """Find output lines matching `pattern` in your processes (running and
        finished), newest processes first: {"hits": [{"id", "seq", "stream",
        "text"}], "limited"}. `limited` is true when more lines would match;
        give `id` and `since` to `read` to see a hit in context."""
        every = args["all_sessions"]
        fields = {"pattern": args["pattern"], "regex": args["regex"], "limit": args["limit"]}
        if args["id"] is not None:
            fields["proc"] = args["id"]
        if not every:
            fields["session"], fields["agent"] = self.scope.session, self.agent_of(ctx)
        hits: list[dict[str, Any]] = []
        used, limited = 0, False
        async with (
            tool_client(self.backend) as c,
            contextlib.aclosing(c.stream("search", **fields)) as messages,
        ):
            async for message in messages:
                if "result" in message:
                    final = message["result"]
                    limited = bool(isinstance(final, dict) and final.get("limited"))
                    break
                hit = message.get("hit")
                if not isinstance(hit, dict):
                    continue
                row = _hit_row(hit, every)
                used += byte_size(row["text"]) + 40
                if used > TEXT_CAP:
                    limited = True
                    break
                hits.append(row)
        return {"hits": hits, "limited": limited}


def _hit_row(hit: dict[str, Any], with_scope: bool) -> dict[str, Any]:
    text, lost = clip(str(hit.get("text", "")), HIT_CAP)
    row: dict[str, Any] = {
        "id": hit.get("proc"),
        "seq": hit.get("seq"),
        "stream": hit.get("stream"),
        "text": text + (f" [… {lost} more bytes]" if lost else ""),
    }
    if with_scope:
        row["session"], row["agent"] = hit.get("session"), hit.get("agent")
    return row


def _command(command: str | list[str], shell: bool | None) -> dict[str, Any]:
    """``run``'s command as the protocol takes it: a shell line or an argv. A list
    run by a shell is quoted word by word (``shlex.join``), so each item stays one
    word of the line."""
    if isinstance(command, str):
        if shell is False:
            try:
                argv = shlex.split(command)
            except ValueError as exc:
                raise ToolFailed(f"cannot split the command into words: {exc}") from None
            if not argv:
                raise ToolFailed("the command is empty")
            return {"argv": argv}
        if not command.strip():
            raise ToolFailed("the command is empty")
        return {"shell": command}
    if not command or not all(isinstance(word, str) for word in command):
        raise ToolFailed("the command is empty" if not command else "a command is strings")
    return {"shell": shlex.join(command)} if shell else {"argv": list(command)}


def _cwd(cwd: str | None) -> str:
    """Where a command runs: ``cwd`` relative to this process's directory (the
    agent's project, usually), by default that directory itself."""
    base = os.getcwd()
    return os.path.join(base, os.path.expanduser(cwd)) if cwd else base


async def _proc_info(client: AsyncClient, proc_id: int) -> dict[str, Any] | None:
    """The live proc ``proc_id`` as ``procs`` gives it, or None (not live here)."""
    for p in await client.call("procs"):
        if isinstance(p, dict) and p.get("id") == proc_id:
            return p
    return None


# -- the server ------------------------------------------------------------------------


def build_app(backend: Backend, scope: Scope) -> MCPServer[Any]:
    """The MCP server and its tools (needs the SDK)."""
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

    app = Server(
        "procwindow",
        title="procwindow",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",
    )
    tools = Tools(backend, scope)
    for name, hints in _hints().items():
        method = getattr(tools, name)
        app.add_tool(_tool_function(name, method, Context, ToolError), name=name, annotations=hints)
    return app


def _hints() -> dict[str, ToolAnnotations]:
    """Each tool, and what it tells the client of itself."""
    from mcp.types import ToolAnnotations

    reads = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    stops = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True)
    return {
        "run": ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True),
        "read": reads,
        "excerpt": reads,
        "wait_for": reads,
        "wait_ready": reads,
        "write": ToolAnnotations(read_only_hint=False, destructive_hint=False),
        "term": stops,
        "kill": stops,
        "list": reads,
        "search": reads,
    }


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
        except ToolFailed as exc:
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
    call.__signature__ = inspect.Signature(params, return_annotation=dict[str, Any])  # type: ignore[attr-defined]
    call.__annotations__ = {p.name: p.annotation for p in params} | {"return": dict[str, Any]}
    call.__name__ = call.__qualname__ = name
    call.__doc__ = method.__doc__
    return call
