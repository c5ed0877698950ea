"""The MCP tools of ``procwindow mcp``: :func:`build_app` makes the server and
defines them, each a few control-socket calls through a :class:`Backend`.

Results are dicts the SDK returns as structured content; their text is bounded
by the helpers of ``_text`` (about :data:`TEXT_CAP` bytes per result).
"""

# No ``from __future__ import annotations`` here: annotations in this module are
# evaluated when a function is defined. The tools are defined inside build_app,
# after the SDK is imported, and the SDK reads their signatures (eval_str) to
# build the tools' JSON schemas.

import contextlib
import os
from typing import TYPE_CHECKING, Annotated, Any, Literal

from ..control.aclient import AsyncClient
from ._backend import Backend, Scope, tool_client
from ._text import HIT_CAP, TEXT_CAP, byte_size, clip, clip_field, format_lines, proc_row

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

__all__ = ["FALLBACK_AGENT", "INSTRUCTIONS", "LIST_CAP", "TOOL_NAME", "build_app"]

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


def build_app(backend: Backend, scope: Scope) -> "MCPServer[Any]":
    """The MCP server and its tools (needs the SDK)."""
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations
    from pydantic import Field

    from .. import __version__

    app: MCPServer[Any] = MCPServer(
        "procwindow",
        title="procwindow",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",
    )

    def agent_of(ctx: Context) -> str:
        if scope.agent is None:
            name = None
            with contextlib.suppress(Exception):
                params = ctx.session.client_params
                if params is not None:
                    name = params.client_info.name
            scope.agent = name if isinstance(name, str) and name else FALLBACK_AGENT
        return scope.agent

    Id = Annotated[int, Field(ge=1, description="the process id that `run` returned")]
    Since = Annotated[
        int,
        Field(ge=0, description="only lines after this seq (a `cursor` from an earlier result)"),
    ]
    reads = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @app.tool(
        name="run",
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=False, open_world_hint=True
        ),
    )
    async def run_tool(
        ctx: Context,
        command: Annotated[
            str | list[str],
            Field(
                description="a shell command line (run by /bin/sh -c, so pipes, &&, $VARS"
                " and globs work), or a list: the program and its arguments, run"
                " directly without a shell"
            ),
        ],
        cwd: Annotated[
            str | None,
            Field(description="working directory (default: the MCP server's; relative to it)"),
        ] = None,
        env: Annotated[
            dict[str, str] | None,
            Field(description="environment variables to add or override"),
        ] = None,
        timeout: Annotated[
            float | None,
            Field(
                gt=0,
                description="seconds it may run; then it is terminated (exit reason"
                " 'timeout'). Default: no limit",
            ),
        ] = None,
        shell: Annotated[
            bool | None,
            Field(
                description="override how `command` runs: false splits a string into"
                " words (shell quoting rules) and runs them without a shell; true runs a"
                " list's items joined by spaces as one shell line"
            ),
        ] = None,
        merge_stderr: Annotated[
            bool | None,
            Field(
                description="true: stderr goes into stdout's pipe, so their lines keep"
                " their exact order (they are then all reported as stdout)"
            ),
        ] = None,
        stdin: Annotated[
            bool | None,
            Field(
                description="true: keep a pipe to its stdin open, to send input with"
                " `write` (default: stdin is empty)"
            ),
        ] = None,
        ready: Annotated[
            str | int | dict[str, Any] | None,
            Field(
                description="how it shows it is ready, for `wait_ready`: a string is a"
                ' regex a line of its output must match ("listening on"); an integer, a'
                " TCP port on 127.0.0.1 that must accept a connection (8080); an object"
                ' holds exactly one of "line" (with "regex": false for plain text,'
                ' "stream"), "port" (with "host"), "command" (a list) or "shell" (a'
                ' line): a command that must exit 0, and may hold "interval" and'
                ' "timeout" seconds'
            ),
        ] = None,
        reuse: Annotated[
            bool | None,
            Field(
                description="true: if the same command already runs in the same directory,"
                " session and agent, return that process instead of starting a second one"
                " (for dev servers)"
            ),
        ] = None,
    ) -> dict[str, Any]:
        """Start a command in the background and return at once with its id.

        The process keeps running after this call; its stdout and stderr are
        captured and kept (also after it exits). Use the id with wait_for,
        wait_ready, read, excerpt, write, term and kill. Use it for anything that
        runs long or that you want to watch: servers, builds, test suites,
        watchers. Returns {"id", "os_pid", ...}.
        """
        fields: dict[str, Any] = {}
        if isinstance(command, str):
            if shell is False:
                import shlex

                try:
                    fields["argv"] = shlex.split(command)
                except ValueError as exc:
                    raise ToolError(f"cannot split the command into words: {exc}") from None
            else:
                fields["shell"] = command
        elif shell:
            fields["shell"] = " ".join(command)
        else:
            fields["argv"] = list(command)
        if not fields.get("argv", True) or fields.get("shell") == "":
            raise ToolError("the command is empty")
        fields["cwd"] = _cwd(cwd)
        if env:
            fields["env"] = env
        # Optional fields are sent only when asked for.
        if timeout is not None:
            fields["timeout"] = timeout
        for name, flag in (("merge_stderr", merge_stderr), ("stdin", stdin), ("reuse", reuse)):
            if flag:
                fields[name] = True
        if ready is not None:
            # The protocol takes an object; a string and a number are shorthands here.
            if isinstance(ready, str):
                fields["ready"] = {"line": ready}
            elif isinstance(ready, int):
                fields["ready"] = {"port": ready}
            else:
                fields["ready"] = ready
        agent = agent_of(ctx)
        async with tool_client(backend) as c:
            result = await c.call(
                "run", session=scope.session, agent=agent, tool=TOOL_NAME, **fields
            )
        out = dict(result) if isinstance(result, dict) else {"result": result}
        out.setdefault("session", scope.session)
        out.setdefault("agent", agent)
        return out

    @app.tool(name="read", annotations=reads)
    async def read_tool(
        id: Id,
        since: Since = 0,
        limit: Annotated[int, Field(ge=1, le=5000, description="at most this many lines")] = 200,
    ) -> dict[str, Any]:
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
        async with tool_client(backend) as c:
            out = await c.call("out", proc=id, since=since, limit=limit, partial=True)
            info = await _proc_info(c, id)
        lines = out.get("lines") or []
        text, shown, last = format_lines(lines)
        left = len(lines) - shown
        result: dict[str, Any] = {"id": id, "text": text, "lines": shown}
        result["cursor"] = out.get("cursor", since) if left == 0 else last
        result["more"] = left > 0 or (not out.get("eof", False) and len(lines) >= limit)
        result["eof"] = bool(out.get("eof")) and left == 0
        if left:
            result["note"] = (
                f"{left} more line(s) were left out to keep this result small;"
                f" read again with since={result['cursor']}"
            )
        if out.get("dropped"):
            result["dropped"] = out["dropped"]
        if out.get("cut_bytes"):
            result["cut_bytes"] = out["cut_bytes"]
        if info is not None:
            result["state"] = info.get("state")
            result["exit"] = info.get("exit")
        return result

    @app.tool(name="excerpt", annotations=reads)
    async def excerpt_tool(
        id: Id,
        head: Annotated[int, Field(ge=0, le=1000, description="lines from the start")] = 20,
        tail: Annotated[int, Field(ge=0, le=1000, description="lines from the end")] = 40,
        max_bytes: Annotated[
            int, Field(ge=256, le=TEXT_CAP, description="at most this much text")
        ] = 8000,
        since: Since = 0,
    ) -> dict[str, Any]:
        """The first and last lines of a process's output (after `since`), with
        what was left out in between counted: the quick way to see how a build
        or a test run went.

        Returns {"text", "cursor", "lines", "omitted_lines", "omitted_bytes",
        "eof", "exit"}; `cursor` is the seq of the last line, to pass as `since`
        to `read` or `wait_for` what comes next.
        """
        async with tool_client(backend) as c:
            result = await c.call(
                "excerpt", proc=id, head=head, tail=tail, max_bytes=max_bytes, since=since
            )
        result = dict(result)
        clip_field(result, "text")
        return result

    @app.tool(name="wait_for", annotations=reads)
    async def wait_for_tool(
        id: Id,
        pattern: Annotated[
            str,
            Field(
                min_length=1,
                description="what the line must contain: a Python regex (re.search), or"
                " plain text with regex=false",
            ),
        ],
        regex: Annotated[bool, Field(description="false: `pattern` is plain text")] = True,
        since: Since = 0,
        timeout: Annotated[
            float,
            Field(
                gt=0,
                le=3600,
                description="seconds to wait; keep it under your client's tool-call timeout",
            ),
        ] = 30,
        stream: Annotated[
            Literal["stdout", "stderr"] | None,
            Field(description="only lines of this stream (default: both)"),
        ] = None,
    ) -> dict[str, Any]:
        """Wait until a process writes a line matching `pattern` (lines already
        written after `since` count too), e.g. "listening on" for a server, or
        "passed|failed" for a test run.

        Returns {"line": {"seq", "stream", "time", "text"}, "cursor"}; pass the
        cursor as `since` to wait for the next match. Fails with NoMatch if the
        process ended without such a line (the message says how it exited), and
        with Timeout after `timeout` seconds (the process keeps running).
        """
        async with tool_client(backend) as c:
            result = await c.call(
                "wait_for",
                proc=id,
                pattern=pattern,
                regex=regex,
                stream=stream,
                since=since,
                timeout=timeout,
            )
        result = dict(result)
        line = result.get("line")
        if isinstance(line, dict):
            line = dict(line)
            clip_field(line, "text")
            result["line"] = line
        return result

    @app.tool(name="wait_ready", annotations=reads)
    async def wait_ready_tool(
        id: Id,
        timeout: Annotated[
            float,
            Field(
                gt=0,
                le=3600,
                description="seconds to wait; keep it under your client's tool-call timeout",
            ),
        ] = 30,
    ) -> dict[str, Any]:
        """Wait until the readiness check given to `run` (its `ready` argument)
        passes. Returns {"ready": true, "proc": {...}}; fails with NotReady if
        the process exits first or the check gives up, and with Timeout after
        `timeout` seconds (the process keeps running)."""
        async with tool_client(backend) as c:
            result = await c.call("ready", proc=id, timeout=timeout)
        result = dict(result)
        if isinstance(result.get("proc"), dict):
            result["proc"] = proc_row(result["proc"], with_scope=False)
        return result

    @app.tool(
        name="write",
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False),
    )
    async def write_tool(
        id: Id,
        data: Annotated[
            str,
            Field(description="text to send to its stdin, as is (add \\n to end a line)"),
        ],
        close: Annotated[
            bool, Field(description="close its stdin afterwards (it then reads end-of-file)")
        ] = False,
    ) -> dict[str, Any]:
        """Send text to the stdin of a process started with `stdin: true` (a
        prompt waiting for an answer, a REPL, a filter). Returns {"written":
        bytes, "closed": bool when `close` was asked}."""
        async with tool_client(backend) as c:
            result = await c.call("write", proc=id, data=data, close=close)
        return dict(result) if isinstance(result, dict) else {"written": result}

    @app.tool(
        name="term",
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=True, idempotent_hint=True
        ),
    )
    async def term_tool(id: Id) -> dict[str, Any]:
        """Stop a process gracefully: SIGTERM to it and its children, then SIGKILL
        if it has not exited after its grace period. Waits for the exit and
        returns {"id", "exit": {"code", "signal", "reason", "runtime"}}."""
        async with tool_client(backend) as c:
            result = await c.call("term", proc=id)
        return {"id": id, "exit": result}

    @app.tool(
        name="kill",
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=True, idempotent_hint=True
        ),
    )
    async def kill_tool(id: Id) -> dict[str, Any]:
        """Kill a process and its children now (SIGKILL). Waits for the exit and
        returns {"id", "exit": {"code", "signal", "reason", "runtime"}}."""
        async with tool_client(backend) as c:
            result = await c.call("kill", proc=id)
        return {"id": id, "exit": result}

    @app.tool(name="list", annotations=reads)
    async def list_tool(
        ctx: Context,
        all_sessions: Annotated[
            bool,
            Field(description="list every process of the server, not only yours"),
        ] = False,
    ) -> dict[str, Any]:
        """List your processes, newest first: {"procs": [{"id", "state", "code",
        "reason", "runtime", "cmd"}], ...}. `state` is starting, running, stopping
        or exited; `code` and `reason` (exited, failed, terminated, killed,
        escalated, timeout, lost) are there once it exited."""
        agent = agent_of(ctx)
        fields = {} if all_sessions else {"session": scope.session, "agent": agent}
        async with tool_client(backend) as c:
            procs = await c.call("procs", **fields)
        rows = [proc_row(p, all_sessions) for p in procs[:LIST_CAP]]
        result: dict[str, Any] = {"procs": rows, "count": len(procs)}
        if len(procs) > len(rows):
            result["note"] = f"the {len(procs) - len(rows)} oldest were left out"
        if not all_sessions:
            result["session"], result["agent"] = scope.session, agent
        return result

    @app.tool(name="search", annotations=reads)
    async def search_tool(
        ctx: Context,
        pattern: Annotated[
            str,
            Field(min_length=1, description="text to find (case-insensitive), or a regex"),
        ],
        regex: Annotated[
            bool, Field(description="true: `pattern` is a Python regex (re.search)")
        ] = False,
        limit: Annotated[int, Field(ge=1, le=500, description="at most this many lines")] = 50,
        id: Annotated[
            int | None, Field(ge=1, description="search this process's output only")
        ] = None,
        all_sessions: Annotated[
            bool,
            Field(description="search every process's output, not only yours"),
        ] = False,
    ) -> dict[str, Any]:
        """Find output lines matching `pattern` in your processes (running and
        finished), newest processes first: {"hits": [{"id", "seq", "stream",
        "text"}], "limited"}. `limited` is true when more lines would match;
        give `id` and `since` to `read` to see a hit in context."""
        fields: dict[str, Any] = {"pattern": pattern, "regex": regex, "limit": limit}
        if id is not None:
            fields["proc"] = id
        if not all_sessions:
            fields["session"], fields["agent"] = scope.session, agent_of(ctx)
        hits: list[dict[str, Any]] = []
        used = 0
        limited = False
        async with (
            tool_client(backend) as c,
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
                text, lost = clip(str(hit.get("text", "")), HIT_CAP)
                row: dict[str, Any] = {
                    "id": hit.get("proc"),
                    "seq": hit.get("seq"),
                    "stream": hit.get("stream"),
                    "text": text + (f" [… {lost} more bytes]" if lost else ""),
                }
                if all_sessions:
                    row["session"], row["agent"] = hit.get("session"), hit.get("agent")
                used += byte_size(row["text"]) + 40
                if used > TEXT_CAP:
                    limited = True
                    break
                hits.append(row)
        return {"hits": hits, "limited": limited}

    return app


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
