"""The MCP tools that read: output (``read``, ``excerpt``, ``search``, a
terminal's ``screen``), waits
(``wait_for``, ``wait_ready``, ``wait``) and processes (``list``, ``history``,
``ports``).

Each checks the session's policy (:mod:`._policy`) on the process it names, or on
the session it lists, before it reads; its result is bounded by :mod:`._text`.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from ..control import lines_count
from ..control.aclient import AsyncClient
from ._backend import tool_client
from ._text import (
    HIT_CAP,
    TEXT_CAP,
    byte_size,
    clip,
    clip_field,
    clip_tree,
    format_lines,
    proc_row,
)
from ._toolbox import Args, Toolbox

if TYPE_CHECKING:
    from mcp.server.mcpserver import Context

__all__ = ["LIST_CAP", "Reading", "summary"]

#: The most procs ``list`` and ``history`` show (newest first).
LIST_CAP = 100
#: The excerpt ``wait`` and ``run`` with ``wait`` give of an output that ended.
_SUMMARY = {"head": 10, "tail": 30, "max_bytes": 6000}


async def summary(client: AsyncClient, proc_id: int) -> dict[str, Any]:
    """How a proc ended and the head and tail of its output: ``{"id", "state",
    "exit", "excerpt", "cursor", "omitted_lines"}``."""
    ex = await client.call("excerpt", proc=proc_id, **_SUMMARY)
    p = await client.call("get", proc=proc_id)
    return {
        "id": proc_id,
        "state": p["state"],
        "exit": p["exit"],
        "excerpt": ex["text"],
        "cursor": ex["cursor"],
        "omitted_lines": ex["omitted_lines"],
    }


def _screen_text(lines: list[str]) -> str:
    """A screen's rows as text, the blank rows at its bottom left out."""
    while lines and not lines[-1]:
        lines = lines[:-1]
    return "\n".join(lines)


async def _full_screen(client: AsyncClient, info: dict[str, Any], result: dict[str, Any]) -> None:
    """A full-screen program's output is escape codes: give its screen instead
    (``screen``, with ``text`` its rows), and say so. Left alone for a process
    without a terminal, or one not on its alternate screen."""
    if not info.get("pty") or not info.get("live") or info.get("exit") is not None:
        return
    shot = await client.call("screen", proc=info["id"])
    if not shot["alternate"]:
        return
    result["text"] = result["screen"] = _screen_text(shot["lines"])
    result["note"] = (
        "a full-screen program: `text` is its screen now (rows as it draws them), not"
        " its output lines; `write` sends keys, `screen` looks again"
    )


class Reading(Toolbox):
    """What the reading tools do."""

    async def read(self, args: Args, ctx: Context) -> dict[str, Any]:
        """Read a process's output lines after a cursor, oldest first, as text.

        Lines from stderr start with "[stderr] ". A last line starting with
        "[partial] " has no newline yet: a prompt waiting for input (answer it
        with `write`) or a progress bar; it is shown again once complete. The
        result's `cursor` is the seq of the last complete line returned: call
        again with since=cursor for the next page. `more` is true when lines
        after the cursor were already there but left out (by `limit` or the
        ~16 KB cap). `eof` is true when the output has ended and everything was
        read; `state` and `exit` tell whether and how the process ended (also for
        a process of an earlier session of the server). For a long output,
        `excerpt` (head and tail) is usually the better first look.
        """
        proc_id, since, limit = args["id"], args["since"], args["limit"]
        self.policy.check_tool("read")
        async with tool_client(self.backend) as c:
            # One request: the lines and the proc (its state, and whose it is).
            out = await c.call(
                "out",
                proc=proc_id,
                since=since,
                limit=limit,
                stream=args["stream"],
                partial=True,
                runs=True,
                with_proc=True,
            )
            info = out["proc"]
            self.policy.check_proc("read", info)  # before anything of it is shown
        lines = out.get("lines") or []
        count = lines_count(lines)
        text, shown, last = format_lines(lines)
        left = count - shown
        result: dict[str, Any] = {"id": proc_id, "text": text, "lines": shown}
        result["cursor"] = out.get("cursor", since) if left == 0 else last
        result["more"] = left > 0 or (not out.get("eof", False) and count >= limit)
        result["eof"] = bool(out.get("eof")) and left == 0
        if left:
            result["note"] = (
                f"{left} more line(s) were left out to keep this result small;"
                f" read again with since={result['cursor']}"
            )
        for key in ("dropped", "cut_bytes"):
            if out.get(key):
                result[key] = out[key]
        result["state"], result["exit"] = info["state"], info["exit"]
        await _full_screen(c, info, result)
        return result

    async def excerpt(self, args: Args, ctx: Context) -> dict[str, Any]:
        """The first and last lines of a process's output (after `since`), with
        what was left out in between counted: the quick way to see how a build
        or a test run went. To find the failures in a long output, `search` it
        with `id`, a pattern such as "FAILED|Error" and `context`.

        Returns {"text", "cursor", "lines", "omitted_lines", "omitted_bytes",
        "eof", "exit"}; `cursor` is the seq of the last line, to pass as `since`
        to `read` or `wait_for` what comes next.
        """
        fields = {k: args[k] for k in ("head", "tail", "max_bytes", "since")}
        async with tool_client(self.backend) as c:
            info = await self.proc(c, "excerpt", args["id"])
            result = dict(await c.call("excerpt", proc=args["id"], **fields))
            await _full_screen(c, info, result)
        clip_field(result, "text")
        return result

    async def screen(self, args: Args, ctx: Context) -> dict[str, Any]:
        """The screen of a process started with `pty: true`, as its terminal
        shows it now: for a full-screen program (top, less, a curses menu) or a
        prompt, what a person would see. Returns {"id", "text", "rows", "cols",
        "cursor": [row, column], "alternate"}; `alternate` is true while a
        full-screen program has the screen."""
        async with tool_client(self.backend) as c:
            await self.proc(c, "screen", args["id"])
            shot = await c.call("screen", proc=args["id"])
        text = _screen_text(shot["lines"])
        result = {"id": args["id"], "text": text, "rows": shot["rows"], "cols": shot["cols"]}
        result |= {"cursor": shot["cursor"], "alternate": shot["alternate"]}
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
            await self.proc(c, "wait_for", args["id"])
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
            await self.proc(c, "wait_ready", args["id"])
            result = dict(await c.call("ready", proc=args["id"], timeout=args["timeout"]))
        if isinstance(result.get("proc"), dict):
            result["proc"] = proc_row(result["proc"], with_scope=False)
        return result

    async def wait(self, args: Args, ctx: Context) -> dict[str, Any]:
        """Wait until a process exits, then give how it ended and the head and
        tail of its output: {"id", "state", "exit": {"code", "signal", "reason",
        "runtime"}, "excerpt", "cursor", "omitted_lines"}. Fails with Timeout
        after `timeout` seconds (the process keeps running; wait again, or stop
        it with `term`)."""
        async with tool_client(self.backend) as c:
            await self.proc(c, "wait", args["id"])
            await c.call("wait", proc=args["id"], timeout=args["timeout"])
            return await summary(c, args["id"])

    async def list(self, args: Args, ctx: Context) -> dict[str, Any]:
        """List your processes of the live view, newest first: {"procs": [{"id",
        "os_pid", "state", "code", "reason", "runtime", "cmd"}], ...}. `state`
        is starting, running, stopping or exited; `code` and `reason` (exited,
        failed, terminated, killed, escalated, timeout, lost) are there once it
        exited. `history` also finds dismissed ones and those of earlier
        sessions."""
        every = args["all_sessions"]
        agent = self.agent_of(ctx)
        self.policy.check_scope("list", None if every else self.scope.session)
        fields = {} if every else {"session": self.scope.session, "agent": agent}
        async with tool_client(self.backend) as c:
            procs = await c.call("procs", **fields)
        result = _rows(procs, every)
        if not every:
            result["session"], result["agent"] = self.scope.session, agent
        return result

    async def history(self, args: Args, ctx: Context) -> dict[str, Any]:
        """Find past and present runs, newest first, also those dismissed or of an
        earlier session of the server: filter by `command` (text of the command
        line), `reason` (how it ended: exited, failed, killed, timeout...) and
        `agent`. Rows as `list` gives them, with `started_at` (Unix seconds);
        read any of them with `read` or `excerpt`."""
        every = args["all_sessions"]
        session = None if every else args["session"] or self.scope.session
        self.policy.check_scope("history", session)
        fields = {k: args[k] for k in ("agent", "reason", "command", "limit")}
        async with tool_client(self.backend) as c:
            procs = await c.call("history", session=session, **fields)
        result = _rows(procs, every or session != self.scope.session)
        for row, p in zip(result["procs"], procs, strict=False):
            row["started_at"] = p.get("started_at")
        return result

    async def ports(self, args: Args, ctx: Context) -> dict[str, Any]:
        """The TCP ports a process and its descendants listen on now:
        {"ports": [{"port", "host", "os_pid"}]}; `host` 0.0.0.0 or :: means
        every address. Empty once it exited."""
        async with tool_client(self.backend) as c:
            await self.proc(c, "ports", args["id"])
            result = await c.call("ports", proc=args["id"])
        return {"id": args["id"], "ports": result["ports"]}

    async def tree(self, args: Args, ctx: Context) -> dict[str, Any]:
        """The processes of a process's tree now: its own and every descendant
        (also those that left it with setsid or a double fork), parents first:
        {"tree": [{"os_pid", "ppid", "depth", "state", "command", "cpu_percent",
        "rss", "threads", "started"}]}. `os_pid` is the kernel's pid, for
        `signal`'s `os_pid`. Empty once it and its tree exited."""
        async with tool_client(self.backend) as c:
            await self.proc(c, "tree", args["id"])
            result = await c.call("tree", proc=args["id"])
        return {"id": args["id"]} | clip_tree(result["tree"])

    async def search(self, args: Args, ctx: Context) -> dict[str, Any]:
        """Find output lines matching `pattern` in your processes (running and
        finished), newest processes first, or in one process (`id`):
        {"hits": [{"id", "seq", "stream", "text"}], "limited"}. With `context`
        N, each hit also has "context": the N lines before and after it, each as
        "SEQ: TEXT" with the hit's marked ">" (as grep -C). `limited` is true
        when more lines would match. Searching one output for "FAILED|Error"
        (regex true) with context is the quick way to the failures of a test
        run."""
        every, proc_id = args["all_sessions"], args["id"]
        fields = {"pattern": args["pattern"], "regex": args["regex"], "limit": args["limit"]}
        async with tool_client(self.backend) as c:
            if proc_id is not None:
                await self.proc(c, "search", proc_id)
                fields["proc"] = proc_id
            else:
                self.policy.check_scope("search", None if every else self.scope.session)
                if not every:
                    fields["session"] = self.scope.session
                    fields["agent"] = self.agent_of(ctx)
            hits, limited = await _hits(c, fields, every)
        if args["context"] and hits:
            # A connection of its own: a search left before its end closes its one.
            async with tool_client(self.backend) as c:
                limited = await _add_context(c, hits, args["context"]) or limited
        return {"hits": hits, "limited": limited}


def _rows(procs: list[dict[str, Any]], with_scope: bool) -> dict[str, Any]:
    rows = [proc_row(p, with_scope) for p in procs[:LIST_CAP]]
    result: dict[str, Any] = {"procs": rows, "count": len(procs)}
    if len(procs) > len(rows):
        result["note"] = f"the {len(procs) - len(rows)} oldest were left out"
    return result


async def _hits(
    client: AsyncClient, fields: dict[str, Any], with_scope: bool
) -> tuple[list[dict[str, Any]], bool]:
    """The hits of a search, within the text cap, and whether more would match."""
    hits: list[dict[str, Any]] = []
    used, limited = 0, False
    async with contextlib.aclosing(client.stream("search", **fields)) as messages:
        async for message in messages:
            if "result" in message:
                final = message["result"]
                limited = bool(isinstance(final, dict) and final.get("limited"))
                break
            hit = message.get("hit")
            if not isinstance(hit, dict):
                continue
            row = _hit_row(hit, with_scope)
            used += byte_size(row["text"]) + 40
            if used > TEXT_CAP:
                limited = True
                break
            hits.append(row)
    return hits, limited


async def _add_context(client: AsyncClient, hits: list[dict[str, Any]], n: int) -> bool:
    """Give each hit the ``n`` lines around it, while the text cap allows; True
    when the hits past the cap were left out."""
    used = sum(byte_size(h["text"]) + 40 for h in hits)
    for i, hit in enumerate(hits):
        start = max(0, hit["seq"] - n - 1)
        out = await client.call("out", proc=hit["id"], since=start, limit=2 * n + 1)
        rows = []
        for line in out.get("lines") or []:
            text, lost = clip(str(line.get("text", "")), HIT_CAP)
            mark = ">" if line.get("seq") == hit["seq"] else " "
            rows.append(f"{mark}{line.get('seq')}: {text}" + (f" [… {lost} bytes]" if lost else ""))
        context = "\n".join(rows)
        used += byte_size(context)
        if used > TEXT_CAP:
            del hits[i:]  # a hit without its context would mislead: stop at the cap
            return True
        hit["context"] = context
    return False


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
