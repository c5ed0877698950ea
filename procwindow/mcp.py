"""``procwindow mcp``: a Model Context Protocol server over stdio.

An agent (an MCP client) starts commands, reads and waits on their output, and
stops them, through the tools listed in :func:`build_app`. Every tool call goes
through the control socket, one connection per call: to a running window or
``procwindow serve`` when one answers there, else to a private headless server
this process starts on that same socket at the first call (so ``procwindow
ctl`` sees its processes too) and closes, terminating its children, when the
MCP session ends (stdin closed) or on SIGTERM, SIGINT or SIGHUP.

The MCP SDK (``pip install 'procwindow[mcp]'``) is imported only when the
command runs. Stdout is the MCP transport: nothing else is written there; logs
go to stderr.

Annotations in this module are evaluated when a function is defined (no
``from __future__ import annotations``): the tools are defined inside
:func:`build_app`, after the SDK is imported, and the SDK reads their
signatures to build the tools' JSON schemas.
"""

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from .control._sockdir import DEFAULT_SERVER_NAME, SocketDirError, check_name, default_socket_path
from .control.aclient import AsyncClient
from .control.client import CannotConnect, ServerError
from .core import ProcwindowError

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

    from .control.server import ControlServer
    from .core import Supervisor

__all__ = ["SDK_MISSING", "TEXT_CAP", "Backend", "Scope", "build_app", "configure", "run"]

log = logging.getLogger("procwindow.mcp")

#: What ``procwindow mcp`` prints (on stderr) when the SDK is not installed.
SDK_MISSING = "procwindow mcp needs the MCP SDK: pip install 'procwindow[mcp]'"
#: The most text (UTF-8 bytes) one tool result carries.
TEXT_CAP = 16 * 1024
#: The most bytes of one search hit's line shown.
HIT_CAP = 1000
#: The most characters of a command shown in ``list``.
CMD_CAP = 200
#: The most procs ``list`` shows (newest first).
LIST_CAP = 100
#: The ``tool`` recorded for the procs the agent starts.
TOOL_NAME = "mcp"
#: The session of the agent's procs unless --session or $PROCWINDOW_SESSION names one.
DEFAULT_MCP_SESSION = "mcp"
#: The agent name when neither --agent, $PROCWINDOW_AGENT nor the client names one.
FALLBACK_AGENT = "agent"

#: Signals that end the MCP server (and its private server's children).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
#: Seconds a cancelled MCP session has to finish before the process stops anyway
#: (the SDK reads stdin in a worker thread that only the end of stdin frees).
_CANCEL_WAIT = 0.5
#: Seconds to wait for the kill a second stop signal started.
_KILL_WAIT = 5.0

EXIT_USAGE = 2

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


# -- the command line ------------------------------------------------------------


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ``procwindow mcp``'s options to ``parser``."""
    parser.add_argument(
        "--name",
        default=DEFAULT_SERVER_NAME,
        help="the server to use, or to serve as when none answers (default: %(default)s)",
    )
    parser.add_argument(
        "--socket",
        metavar="PATH",
        help="use (or serve on) this socket path (default: $PROCWINDOW_SOCKET, else the"
        " socket of --name)",
    )
    parser.add_argument(
        "--session",
        help="the session of the commands the agent starts (default: $PROCWINDOW_SESSION,"
        f" else {DEFAULT_MCP_SESSION!r})",
    )
    parser.add_argument(
        "--agent",
        help="the agent name of the commands it starts (default: $PROCWINDOW_AGENT, else the"
        f" MCP client's name, else {FALLBACK_AGENT!r})",
    )


def run(args: argparse.Namespace) -> int:
    """``procwindow mcp``: serve MCP on stdin/stdout until stdin closes or a stop signal.

    Exit status: 0 once the session ended; 1 on a failure; 2 for a bad option or
    when the MCP SDK is not installed. Every failure is one line on stderr.
    """
    logging.basicConfig(
        level=logging.WARNING, format="procwindow mcp: %(message)s", stream=sys.stderr
    )
    try:
        import mcp.server.mcpserver  # noqa: F401  (the SDK, not this module)
    except ImportError:
        print(SDK_MISSING, file=sys.stderr)
        return EXIT_USAGE
    path = args.socket or os.environ.get("PROCWINDOW_SOCKET")
    if not path:
        try:
            check_name(args.name)
        except SocketDirError as exc:
            print(f"procwindow mcp: --name: {exc}", file=sys.stderr)
            return EXIT_USAGE
        try:
            path = default_socket_path(args.name)  # its directory made, as serve does
        except ProcwindowError as exc:  # an unsafe socket directory
            print(f"procwindow mcp: {exc}", file=sys.stderr)
            return 1
    scope = Scope(
        session=args.session or os.environ.get("PROCWINDOW_SESSION") or DEFAULT_MCP_SESSION,
        agent=args.agent or os.environ.get("PROCWINDOW_AGENT") or None,
    )
    try:
        return asyncio.run(_serve(Backend(path), scope))
    except KeyboardInterrupt:
        return 128 + signal.SIGINT
    except Exception as exc:
        print(f"procwindow mcp: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


async def _serve(backend: "Backend", scope: "Scope") -> int:
    """Serve one MCP session on stdio; close the private server, if any, after it."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    killers: list[asyncio.Task[None]] = []

    def on_stop_signal() -> None:
        if not stop.is_set():
            stop.set()
        elif not killers:
            killers.append(asyncio.ensure_future(backend.kill_all()))

    app = build_app(backend, scope)
    for sig in STOP_SIGNALS:
        loop.add_signal_handler(sig, on_stop_signal)
    session = asyncio.ensure_future(app.run_stdio_async())
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({session, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
        session.cancel()  # a no-op once it ended; its tool calls are cancelled
        try:
            await backend.close()
            await asyncio.wait({session}, timeout=_CANCEL_WAIT)
        finally:
            if killers:
                await asyncio.wait(killers, timeout=_KILL_WAIT)
            for sig in STOP_SIGNALS:
                loop.remove_signal_handler(sig)
    if not session.done():
        # Stopped by a signal while the SDK's worker thread still waits for a line
        # on stdin: nothing can free it but the client. Everything of ours is
        # closed; end the process here rather than wait for the client.
        sys.stderr.flush()
        os._exit(0)
    failure = None if session.cancelled() else session.exception()
    if failure is not None:
        raise failure
    return 0


# -- where the tools send their requests ----------------------------------------


@dataclass
class Scope:
    """The session and agent of the procs the agent starts; ``agent`` None: the MCP
    client's name, learnt at the first tool call."""

    session: str
    agent: str | None


class Backend:
    """The control socket the tools talk to, and the private server behind it when
    nothing else answers there.

    The first connection checks whether a server answers at ``path``; if none
    does, a private one is started in this process (a supervisor and a control
    server on ``path``). A later connection that finds nothing (the window was
    closed) starts one too. :meth:`close` stops it and its children.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._sup: Supervisor | None = None
        self._server: ControlServer | None = None
        self._starting: asyncio.Task[None] | None = None
        self._deciding = asyncio.Lock()
        self._checked = False
        self._closed = False

    @property
    def private(self) -> bool:
        """True while this process serves the socket itself."""
        return self._server is not None

    async def connect(self) -> AsyncClient:
        """A connection to the server; starts the private one if nothing answers."""
        if not self._checked:
            await self._ensure_server()
            self._checked = True
        try:
            return await AsyncClient.connect(self.path)
        except CannotConnect:
            if self.private or self._closed:
                raise
        await self._ensure_server()
        return await AsyncClient.connect(self.path)

    async def _ensure_server(self) -> None:
        """Return once a server answers at the path: another one, or ours."""
        async with self._deciding:  # concurrent first calls start one server, not two
            if self.private:
                return
            starting = self._starting
            if starting is None:
                if await _answers(self.path):
                    return
                starting = self._starting = asyncio.ensure_future(self._start_private())
                starting.add_done_callback(self._started)
        # Shielded: a cancelled tool call must not leave a half-started server.
        await asyncio.shield(starting)

    def _started(self, task: asyncio.Task[None]) -> None:
        # A failed start is retried by the next call (its error reached this one).
        if not task.cancelled():
            task.exception()  # retrieved: a call that was cancelled meanwhile never sees it
        self._starting = None

    async def _start_private(self) -> None:
        if self._closed:
            raise ServerError("Closed", "the MCP session is ending")
        from .control.server import ControlServer
        from .core import Supervisor

        sup = Supervisor(subreaper=True)
        await sup.__aenter__()
        server = ControlServer(sup, self.path)
        try:
            await server.start()
        except BaseException:
            await sup.close()
            if await _answers(self.path):  # another one won the race to the socket
                return
            raise
        self._sup, self._server = sup, server
        print(
            f"procwindow mcp: no server answered at {self.path}; serving one here"
            " until this MCP session ends",
            file=sys.stderr,
            flush=True,
        )

    async def kill_all(self) -> None:
        """Kill every process of the private server now (a second stop signal)."""
        if self._sup is not None:
            print("procwindow mcp: killing every process now", file=sys.stderr, flush=True)
            try:
                await self._sup.kill_all()
            except Exception as exc:  # closing the supervisor still stops everything
                log.warning("killing every process failed: %s", exc)

    async def close(self) -> None:
        """Stop the private server, if any: its socket, then every child."""
        self._closed = True
        if self._starting is not None:
            with contextlib.suppress(Exception):
                await self._starting
        server, self._server = self._server, None
        sup = self._sup
        try:
            if server is not None:
                await server.close()
        finally:
            if sup is not None:
                await sup.close()
                self._sup = None


async def _answers(path: str) -> bool:
    """True if a server answers at ``path``."""
    try:
        async with AsyncClient(path) as client:
            await client.call("hello")
    except CannotConnect:
        return False
    except ServerError:
        return True  # it answered, if only to refuse: its errors will reach the agent
    return True


@contextlib.asynccontextmanager
async def _client(backend: Backend) -> AsyncIterator[AsyncClient]:
    """A connection for one tool call; every failure becomes the tool's error,
    one line for the agent to read."""
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        client = await backend.connect()
        async with client:
            yield client
    except ServerError as exc:
        raise ToolError(_one_line(str(exc))) from None
    except (ProcwindowError, OSError) as exc:  # CannotConnect, SocketDirError…
        raise ToolError(_one_line(str(exc))) from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise ToolError(
            f"unexpected reply from the server at {backend.path}: {type(exc).__name__}: {exc}"
        ) from None


def _one_line(text: str) -> str:
    return " ".join(text.split()) if "\n" in text or "\r" in text else text


# -- bounded text -----------------------------------------------------------------


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def clip(text: str, limit: int) -> tuple[str, int]:
    """``text`` cut to at most ``limit`` UTF-8 bytes, and how many bytes were cut."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text, 0
    kept = data[: max(limit, 0)].decode("utf-8", "ignore")
    return kept, len(data) - _size(kept)


def format_lines(
    lines: list[dict[str, Any]], budget: int = TEXT_CAP
) -> tuple[str, int, int | None]:
    """Output lines as text within ``budget`` bytes: ``(text, lines shown, seq of
    the last one shown)``.

    Stderr lines start with ``[stderr] ``, unterminated ones (a prompt, a
    progress bar) with ``[partial] ``; lines missing before a line (cut by the
    disk cap) are marked on a line of their own. The first line is shown
    even when it alone is too long (cut, and said so), so that a reader always
    moves on.
    """
    parts: list[str] = []
    used = 0
    shown = 0
    last: int | None = None
    for line in lines:
        entry = str(line.get("text", ""))
        if line.get("stream") == "stderr":
            entry = "[stderr] " + entry
        if line.get("partial"):
            entry = "[partial] " + entry
        cut = line.get("cut")
        if cut:
            entry = f"[… {cut} lines missing …]\n{entry}"
        size = _size(entry) + 1
        if used + size > budget:
            if shown:
                break
            entry, lost = clip(entry, budget - 64)
            entry += f" [… {lost} more bytes of this line]"
            size = _size(entry) + 1
        parts.append(entry)
        used += size
        shown += 1
        seq = line.get("seq")
        # An unterminated line comes again, complete: the cursor stays before it.
        last = seq - 1 if line.get("partial") and isinstance(seq, int) else seq
    return "\n".join(parts), shown, last


def _clip_field(result: dict[str, Any], key: str, limit: int = TEXT_CAP) -> None:
    """Cut ``result[key]`` (a string) to ``limit`` bytes and say so in the result."""
    value = result.get(key)
    if isinstance(value, str):
        kept, lost = clip(value, limit)
        if lost:
            result[key] = kept
            result[f"{key}_cut_bytes"] = lost


def _row(p: dict[str, Any], with_scope: bool) -> dict[str, Any]:
    """A compact line of ``list`` for one proc."""
    cmd = str(p.get("cmd") or " ".join(map(str, p.get("argv") or ())))
    if len(cmd) > CMD_CAP:
        cmd = cmd[: CMD_CAP - 1] + "…"
    row: dict[str, Any] = {"id": p.get("id"), "state": p.get("state")}
    exit_ = p.get("exit")
    if isinstance(exit_, dict):
        row["code"] = exit_.get("code")
        row["reason"] = exit_.get("reason")
    row["runtime"] = p.get("runtime")
    if with_scope:
        row["session"] = p.get("session")
        row["agent"] = p.get("agent")
    row["cmd"] = cmd
    return row


# -- the tools ----------------------------------------------------------------------


def build_app(backend: Backend, scope: Scope) -> "MCPServer[Any]":
    """The MCP server and its tools (needs the SDK)."""
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations
    from pydantic import Field

    from . import __version__

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
        async with _client(backend) as c:
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
        async with _client(backend) as c:
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
        async with _client(backend) as c:
            result = await c.call(
                "excerpt", proc=id, head=head, tail=tail, max_bytes=max_bytes, since=since
            )
        result = dict(result)
        _clip_field(result, "text")
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
        async with _client(backend) as c:
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
            _clip_field(line, "text")
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
        async with _client(backend) as c:
            result = await c.call("ready", proc=id, timeout=timeout)
        result = dict(result)
        if isinstance(result.get("proc"), dict):
            result["proc"] = _row(result["proc"], with_scope=False)
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
        async with _client(backend) as c:
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
        async with _client(backend) as c:
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
        async with _client(backend) as c:
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
        async with _client(backend) as c:
            procs = await c.call("procs", **fields)
        rows = [_row(p, all_sessions) for p in procs[:LIST_CAP]]
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
            _client(backend) as c,
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
                used += _size(row["text"]) + 40
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
