"""The MCP tools that act: ``run`` a command, ``write`` to its stdin, ``resize``
its terminal, and
``interrupt``, ``term``, ``kill``, ``restart`` or ``dismiss`` a process.

Each checks the session's policy (:mod:`._policy`) first: by default a session
acts on its own session's processes only.
"""

from __future__ import annotations

import os
import shlex
from typing import TYPE_CHECKING, Any

from ..control import WRITE_CHUNK
from ..core import ProcwindowError
from ..core.rules import check_signal
from ._backend import tool_client
from ._reading import summary
from ._toolbox import TOOL_NAME, Args, Toolbox, ToolFailed

if TYPE_CHECKING:
    from mcp.server.mcpserver import Context

__all__ = ["Acting"]


class Acting(Toolbox):
    """What the acting tools do."""

    async def run(self, args: Args, ctx: Context) -> dict[str, Any]:
        """Start a command in the background and return its id at once, or, with
        `wait`, once it exited within that many seconds.

        The process keeps running after this call; its stdout and stderr are
        captured and kept (also after it exits). Use the id with wait, wait_for,
        wait_ready, read, excerpt, write, term and kill. Use it for anything that
        runs long or that you want to watch: servers, builds, test suites,
        watchers. Returns {"id", "os_pid", ...}; with `wait`, a command that
        exited in time also gives {"exit", "excerpt"} (head and tail of its
        output), and one still running {"running": true}.
        """
        shell = args["shell"]
        if self.policy.commands and shell is None:
            shell = False  # allowed commands run without a shell
        fields = _command(args["command"], shell)
        fields["cwd"] = _cwd(args["cwd"])
        # Optional fields are sent only when asked for.
        for name in ("env", "timeout", "ready", "rows", "cols"):
            if args[name]:
                fields[name] = args[name]
        for name in ("merge_stderr", "stdin", "pty", "reuse"):
            if args[name]:
                fields[name] = True
        self.policy.check_run(fields)
        agent = self.agent_of(ctx)
        async with tool_client(self.backend) as c:
            result = await c.call(
                "run", session=self.scope.session, agent=agent, tool=TOOL_NAME, **fields
            )
            out = dict(result) if isinstance(result, dict) else {"result": result}
            if args["wait"]:
                try:
                    await c.call("wait", proc=out["id"], timeout=args["wait"])
                except ProcwindowError as exc:
                    if getattr(exc, "code", None) != "timeout":
                        raise
                    out["running"] = True
                else:
                    out.update(await summary(c, out["id"]))
        out.setdefault("session", self.scope.session)
        out.setdefault("agent", agent)
        return out

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
            await self.proc(c, "write", args["id"])
            for n, piece in enumerate(pieces, 1):
                close = args["close"] and n == len(pieces)
                result = await c.call("write", proc=args["id"], data=piece, close=close)
                written += int(result["written"])
        return {**result, "written": written}

    async def resize(self, args: Args, ctx: Context) -> dict[str, Any]:
        """Give the terminal of a process started with `pty: true` a new size
        (rows × columns); the program is told (SIGWINCH) and redraws. Returns
        {"id", "rows", "cols"}."""
        async with tool_client(self.backend) as c:
            await self.proc(c, "resize", args["id"])
            result = await c.call("resize", proc=args["id"], rows=args["rows"], cols=args["cols"])
        return {"id": args["id"], **result}

    async def interrupt(self, args: Args, ctx: Context) -> dict[str, Any]:
        """Send SIGINT (as Ctrl-C) to a process, to stop a watcher or a REPL's
        command the way a person would. Returns {"id", "delivered"} at once
        (false: it had exited); `wait` for how it ends."""
        async with tool_client(self.backend) as c:
            await self.proc(c, "interrupt", args["id"])
            result = await c.call("interrupt", proc=args["id"])
        return {"id": args["id"], **result}

    async def signal(self, args: Args, ctx: Context) -> dict[str, Any]:
        """Send a signal (a name such as "TERM", "HUP", "USR1", or a number) to a
        process's group, or with `os_pid` to that one process of its tree (a
        kernel pid `tree` lists: a stuck child, not the whole job). Returns
        {"id", "signal", "sent"} at once (false: it had exited, or `os_pid` is
        not in its tree); `wait` for how it ends."""
        async with tool_client(self.backend) as c:
            await self.proc(c, "signal", args["id"])
            result = await c.call(
                "signal", proc=args["id"], signal=args["signal"], os_pid=args.get("os_pid")
            )
        return {"id": args["id"], "signal": check_signal(args["signal"]), **result}

    async def term(self, args: Args, ctx: Context) -> dict[str, Any]:
        """Stop a process gracefully: its stop signal (SIGTERM unless it was started
        with another) to it and its children, then SIGKILL if it has not exited after
        its grace period. Waits for the exit and returns {"id", "exit": {"code",
        "signal", "reason", "runtime"}}."""
        return await self._stop("term", args["id"])

    async def kill(self, args: Args, ctx: Context) -> dict[str, Any]:
        """Kill a process and its children now (SIGKILL). Waits until every one
        is gone and returns {"id", "exit": {"code", "signal", "reason",
        "runtime"}}."""
        return await self._stop("kill", args["id"])

    async def _stop(self, tool: str, proc_id: int) -> dict[str, Any]:
        async with tool_client(self.backend) as c:
            await self.proc(c, tool, proc_id)
            result = await c.call(tool, proc=proc_id)
        return {"id": proc_id, "exit": result}

    async def restart(self, args: Args, ctx: Context) -> dict[str, Any]:
        """Run a process's command again (same directory, environment and
        options) as a new process; a running one is stopped first, as `term`
        does. Returns {"id", "os_pid"} of the new process: use that id from now
        on (the old one keeps its output)."""
        async with tool_client(self.backend) as c:
            proc = await self.proc(c, "restart", args["id"])
            if proc["exit"] is None:  # its port, its files: free for the new run
                await c.call("term", proc=args["id"])
            result = await c.call("restart", proc=args["id"])
        return {"previous": args["id"], **result}

    async def dismiss(self, args: Args, ctx: Context) -> dict[str, Any]:
        """Hide a process that exited from `list` and from the person's window;
        its output stays readable by id, and `history` still finds it.
        Returns {"id", "dismissed": true}."""
        async with tool_client(self.backend) as c:
            await self.proc(c, "dismiss", args["id"])
            await c.call("dismiss", proc=args["id"])
        return {"id": args["id"], "dismissed": True}


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
