"""`procwindow mcp` end to end: the SDK's own stdio client drives a real
`procwindow mcp` subprocess, which runs real processes through the control socket;
and the asyncio client against a real `procwindow serve`."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from procwindow.control._protocol import OPS
from procwindow.control.aclient import AsyncClient
from procwindow.control.client import CannotConnect, Client, ServerError

from .conftest import ROOT, Server, isolated_env, start_server, stop_server

pytest.importorskip("mcp")

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import CallToolResult, Implementation

TOOLS = {
    "run",
    "read",
    "excerpt",
    "wait_for",
    "wait_ready",
    "wait",
    "write",
    "interrupt",
    "signal",
    "tree",
    "term",
    "kill",
    "restart",
    "dismiss",
    "list",
    "history",
    "search",
    "ports",
    "resize",
    "screen",
}
#: The verbs the agent tools use.
NEW_VERBS = {"excerpt", "wait_for", "ready", "write"}

SERVER_SCRIPT = "echo starting; sleep 0.3; echo listening on 8080; sleep 30"
STUBBORN = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN);"
    " print('ignoring SIGTERM', flush=True); time.sleep(60)"
)


def mcp_env(tmp_path: Path) -> tuple[dict[str, str], Path]:
    env, runtime = isolated_env(tmp_path)
    for name in ("PROCWINDOW_SESSION", "PROCWINDOW_AGENT", "PROCWINDOW_SOCKET"):
        env.pop(name, None)
    return env, runtime


@contextlib.asynccontextmanager
async def mcp_session(
    env: dict[str, str], errlog: Path, *args: str, client_name: str = "test-client"
) -> AsyncIterator[ClientSession]:
    """`python -m procwindow mcp ARGS...` as the SDK's client runs a stdio server."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "procwindow", "mcp", *args], env=env, cwd=str(ROOT)
    )
    with open(errlog, "w") as err:
        async with (
            stdio_client(params, errlog=err) as (read, write),
            ClientSession(
                read, write, client_info=Implementation(name=client_name, version="1.0")
            ) as session,
        ):
            await session.initialize()
            yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    """A tool's structured result; fails the test on a tool error."""
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, f"{tool}: {text_of(result)}"
    assert isinstance(result.structured_content, dict)
    assert json.loads(text_of(result)) == result.structured_content
    return result.structured_content


async def call_error(session: ClientSession, tool: str, **arguments: Any) -> str:
    """A tool's error message; fails the test if the call succeeded."""
    result = await session.call_tool(tool, arguments)
    assert result.is_error, f"{tool} succeeded: {result.structured_content}"
    message = text_of(result)
    assert "\n" not in message and "Traceback" not in message, message
    return message


def text_of(result: CallToolResult) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def read_until(
    session: ClientSession, proc: int, needle: str, timeout: float = 15
) -> dict[str, Any]:
    """Poll `read` until the output holds ``needle``."""
    deadline = time.monotonic() + timeout
    while True:
        result = await call(session, "read", id=proc)
        if needle in result["text"]:
            return result
        assert time.monotonic() < deadline, f"no {needle!r} in {result}"
        await asyncio.sleep(0.05)


def alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def wait_gone(pid: int, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while alive(pid):
        assert time.monotonic() < deadline, f"pid {pid} still runs"
        time.sleep(0.05)


def client_sockets(pid: int) -> int:
    """How many unnamed Unix sockets process ``pid`` holds: its client ends of
    connections (a server's accepted ends carry its path), plus a constant few."""
    named: dict[str, bool] = {}
    with open("/proc/net/unix") as f:
        next(f)
        for row in f:
            fields = row.split()
            named[fields[6]] = len(fields) > 7
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
            if link.startswith("socket:[") and named.get(link[8:-1]) is False:
                count += 1
    return count


def by_id(procs: list[dict[str, Any]], proc: int) -> dict[str, Any]:
    found = [p for p in procs if p["id"] == proc]
    assert found, f"proc {proc} not in {procs}"
    return found[0]


@pytest.mark.promise("For agents: procwindow mcp")
def test_private_server_end_to_end(tmp_path: Path) -> None:
    """Nothing listens on the socket: `procwindow mcp` serves it itself, so the
    blocking client sees the agent's procs there, in its session and agent; when
    the MCP client leaves, the server and every child are gone."""
    env, runtime = mcp_env(tmp_path)
    path = str(runtime / "s.sock")
    errlog = tmp_path / "mcp.err"
    seen: dict[str, Any] = {}

    async def scenario() -> None:
        async with mcp_session(
            env, errlog, "--socket", path, "--session", "s1", "--agent", "a1"
        ) as session:
            listed = (await session.list_tools()).tools
            assert {t.name for t in listed} == TOOLS
            for tool in listed:
                assert tool.description and len(tool.description) > 40, tool.name
                assert tool.input_schema.get("type") == "object", tool.name
                assert "ctx" not in tool.input_schema.get("properties", {}), tool.name
            run_schema = next(t for t in listed if t.name == "run").input_schema
            assert run_schema["required"] == ["command"]

            started = await call(session, "run", command=SERVER_SCRIPT)
            proc, os_pid = started["id"], started["os_pid"]
            assert (started["session"], started["agent"]) == ("s1", "a1")
            assert NEW_VERBS.issubset(OPS)
            hit = await call(session, "wait_for", id=proc, pattern="listening", timeout=15)
            assert hit["line"]["text"] == "listening on 8080"
            excerpt = await call(session, "excerpt", id=proc)
            assert "starting" in excerpt["text"] and "listening on 8080" in excerpt["text"]
            page = await call(session, "read", id=proc)
            assert page["text"] == "starting\nlistening on 8080"
            assert (page["lines"], page["cursor"], page["eof"]) == (2, 2, False)
            assert page["state"] == "running" and page["exit"] is None
            after = await call(session, "read", id=proc, since=page["cursor"])
            assert (after["text"], after["lines"]) == ("", 0)

            # the same proc through the socket, with the blocking client
            with Client(path) as client:
                p = by_id(client.call("procs", session="s1", agent="a1"), proc)
                assert (p["os_pid"], p["state"], p["tool"]) == (os_pid, "running", "mcp")
                assert p["cwd"] == str(ROOT)  # the MCP server's directory
                mcp_pid = client.call("hello")["pid"]  # the private server is the MCP process
                idx = client.call("idx", session="s1")["text"]
                assert any(row.split("\t")[0] == str(proc) for row in idx.splitlines()[1:])
            # stdin and stdout are read and written on its loop: no thread waits on them
            with open(f"/proc/{mcp_pid}/status") as status:
                assert "Threads:\t1\n" in status.read()
            # and through `procwindow ctl idx`, as a person would look
            shown = subprocess.run(
                [sys.executable, "-m", "procwindow", "ctl", "--socket", path, "idx"],
                env=env,
                capture_output=True,
                text=True,
                timeout=30,
            )
            assert shown.returncode == 0, shown.stderr
            row = next(r for r in shown.stdout.splitlines() if r.split("\t")[0] == str(proc))
            assert row.split("\t")[1] == "running"
            assert "listening on 8080" in row

            mine = await call(session, "list")
            assert [r["id"] for r in mine["procs"]] == [proc]
            assert mine["procs"][0]["state"] == "running"
            found = await call(session, "search", pattern="LISTENING")
            assert found["hits"] == [
                {"id": proc, "seq": 2, "stream": "stdout", "text": "listening on 8080"}
            ]

            stopped = await call(session, "kill", id=proc)
            assert stopped["exit"]["reason"] == "killed"
            assert not alive(os_pid)
            done = await call(session, "read", id=proc, since=2)
            assert done["eof"] is True and done["exit"]["reason"] == "killed"

            # a tool call the client cancels closes its connection to the socket at once
            before = client_sockets(mcp_pid)
            stubborn = await call(session, "run", command=[sys.executable, "-c", STUBBORN])
            await read_until(session, stubborn["id"], "ignoring SIGTERM")
            with anyio.move_on_after(0.5) as scope:
                await session.call_tool("term", {"id": stubborn["id"]})  # 5 s of grace
            assert scope.cancelled_caught
            deadline = time.monotonic() + 2
            while client_sockets(mcp_pid) > before:
                assert time.monotonic() < deadline, "the cancelled call's connection is open"
                await asyncio.sleep(0.02)
            await call(session, "kill", id=stubborn["id"])

            # errors are one line for the agent, never a traceback
            assert "ProcNotFound" in await call_error(session, "read", id=999999)
            assert "ProcNotFound" in await call_error(session, "term", id=999999)
            assert "InvalidPattern" in await call_error(session, "search", pattern="(", regex=True)
            assert await call_error(session, "run", command=[])

            # left running: the end of the MCP session must stop it
            orphan = await call(session, "run", command=["sleep", "60"])
            seen["orphan"] = orphan["os_pid"]
            assert alive(orphan["os_pid"])

    asyncio.run(scenario())
    wait_gone(seen["orphan"])
    assert not os.path.exists(path), "the private server left its socket"
    with pytest.raises(CannotConnect):
        Client(path)
    assert "serving one here" in errlog.read_text()


@pytest.mark.promise("For agents: procwindow mcp")
def test_uses_the_running_server(tmp_path: Path) -> None:
    """A server answers at --name's socket: the agent's procs run there (the MCP
    client's name is their agent). Once it is gone, the next call starts a private
    server, whose children end with the MCP session."""
    server: Server = start_server(tmp_path)
    errlog = tmp_path / "mcp.err"
    env = dict(server.env)
    for name in ("PROCWINDOW_SESSION", "PROCWINDOW_AGENT", "PROCWINDOW_SOCKET"):
        env.pop(name, None)
    seen: dict[str, Any] = {}

    async def scenario() -> None:
        async with mcp_session(env, errlog, "--name", "test", client_name="claude") as session:
            started = await call(session, "run", command=["sh", "-c", "echo hi; sleep 30"])
            await read_until(session, started["id"], "hi")
            with Client(server.path) as client:
                p = by_id(client.call("procs"), started["id"])
                assert (p["session"], p["agent"], p["state"]) == ("mcp", "claude", "running")
                assert p["os_pid"] == started["os_pid"]
            assert "serving one here" not in errlog.read_text()

            assert stop_server(server) == 0  # terminates the proc
            assert not alive(started["os_pid"])
            again = await call(session, "run", command=["sleep", "30"])
            assert "serving one here" in errlog.read_text()
            seen["pid"] = again["os_pid"]
            assert alive(again["os_pid"])
            row = (await call(session, "list"))["procs"][0]
            assert row["id"] == again["id"]
            assert row["os_pid"] == again["os_pid"]  # the kernel's, beside procwindow's id

    try:
        asyncio.run(scenario())
    finally:
        stop_server(server)
    wait_gone(seen["pid"])


def test_bounded_results(tmp_path: Path) -> None:
    """A flood is read page by page, each result within the text cap, every line
    once; a line longer than the cap is cut and the cursor still moves on; search
    and list stay small."""
    env, runtime = mcp_env(tmp_path)
    path = str(runtime / "s.sock")
    flood = "for i in range(3000): print(f'{i:05d} ' + 'x' * 94)"
    long_line = "print('y' * 200000); print('after')"

    async def scenario() -> None:
        async with mcp_session(env, tmp_path / "mcp.err", "--socket", path) as session:
            proc = (await call(session, "run", command=[sys.executable, "-c", flood]))["id"]
            numbers: list[int] = []
            since = 0
            deadline = time.monotonic() + 30
            while True:
                page = await call(session, "read", id=proc, since=since, limit=5000)
                assert len(page["text"].encode()) <= 16 * 1024
                if page["lines"]:
                    numbers += [int(line[:5]) for line in page["text"].split("\n")]
                since = page["cursor"]
                if page["eof"]:
                    break
                assert time.monotonic() < deadline, page
                if not page["more"]:
                    await asyncio.sleep(0.05)
            assert numbers == list(range(3000))

            found = await call(session, "search", pattern="x" * 50, limit=500)
            assert found["limited"] is True
            assert 0 < len(found["hits"]) < 500
            assert len(json.dumps(found)) < 24 * 1024

            proc = (await call(session, "run", command=[sys.executable, "-c", long_line]))["id"]
            await read_until(session, proc, "y" * 100)
            first = await call(session, "read", id=proc)
            assert first["lines"] == 1 and first["more"] is True
            assert first["text"].endswith("more bytes of this line]")
            assert len(first["text"].encode()) <= 16 * 1024
            texts = [first["text"]]
            since = first["cursor"]
            while "after" not in texts[-1]:
                page = await call(session, "read", id=proc, since=since)
                assert page["cursor"] > since, page
                texts.append(page["text"])
                since = page["cursor"]
            assert texts[-1].split("\n")[-1] == "after"

    asyncio.run(scenario())


def test_new_verbs(tmp_path: Path) -> None:
    """The tools and run's fields of protocol 3: wait_for (a match, NoMatch,
    Timeout), excerpt, write to stdin, ready and wait_ready, reuse, merge_stderr,
    timeout."""
    env, runtime = mcp_env(tmp_path)
    path = str(runtime / "s.sock")

    async def scenario() -> None:
        async with mcp_session(env, tmp_path / "mcp.err", "--socket", path) as session:
            lines = await call(
                session, "run", command="for i in $(seq 1 500); do echo line $i; done"
            )
            hit = await call(session, "wait_for", id=lines["id"], pattern="line 500$")
            assert hit["line"]["seq"] == 500
            excerpt = await call(session, "excerpt", id=lines["id"], head=2, tail=3)
            assert excerpt["text"].splitlines()[:2] == ["line 1", "line 2"]
            assert excerpt["text"].splitlines()[-1] == "line 500"
            assert excerpt["omitted_lines"] == 495
            message = await call_error(
                session, "wait_for", id=lines["id"], pattern="nothing like it"
            )
            assert "NoMatch" in message
            quiet = await call(session, "run", command=["sleep", "30"])
            message = await call_error(
                session, "wait_for", id=quiet["id"], pattern="x", timeout=0.3
            )
            assert "Timeout" in message
            await call(session, "kill", id=quiet["id"])

            prompt = "printf 'Continue? [y/N] '; read answer; echo got $answer"
            asking = await call(session, "run", command=prompt, stdin=True)
            await call(session, "wait_for", id=asking["id"], pattern="Continue?", regex=False)
            page = await call(session, "read", id=asking["id"])
            assert page["text"] == "[partial] Continue? [y/N] " and page["cursor"] == 0
            await call(session, "write", id=asking["id"], data="y\n")
            await call(session, "wait_for", id=asking["id"], pattern="got y")
            page = await call(session, "read", id=asking["id"])
            assert page["text"] == "Continue? [y/N] got y" and page["cursor"] == 1

            cat = await call(session, "run", command=["cat"], stdin=True)
            written = await call(session, "write", id=cat["id"], data="hello\n", close=True)
            assert written["written"] == 6
            await call(session, "wait_for", id=cat["id"], pattern="hello", regex=False)
            # Larger than a request may be: sent in pieces, closed after the last.
            count = await call(session, "run", command=["wc", "-c"], stdin=True)
            big = "y" * (2 * 1024 * 1024 + 7)
            written = await call(session, "write", id=count["id"], data=big, close=True)
            assert written["written"] == len(big) and written["closed"] is True
            await call(session, "wait_for", id=count["id"], pattern=f"^{len(big)}$")

            web = await call(session, "run", command=SERVER_SCRIPT, ready="listening on")
            ready = await call(session, "wait_ready", id=web["id"], timeout=15)
            assert ready["ready"] is True and ready["proc"]["id"] == web["id"]
            again = await call(session, "run", command=SERVER_SCRIPT, reuse=True)
            assert again["id"] == web["id"] and again["reused"] is True
            port = await call(session, "run", command=["sleep", "30"], ready={"port": 1})
            message = await call_error(session, "wait_ready", id=port["id"], timeout=0.3)
            assert "Timeout" in message
            await call(session, "kill", id=port["id"])
            await call(session, "kill", id=web["id"])

            merged = await call(
                session, "run", command="echo out; echo err >&2; echo end", merge_stderr=True
            )
            await call(session, "wait_for", id=merged["id"], pattern="end")
            page = await call(session, "read", id=merged["id"])
            assert page["text"] == "out\nerr\nend"

            slow = await call(session, "run", command=["sleep", "30"], timeout=0.3)
            deadline = time.monotonic() + 15
            while True:
                row = by_id((await call(session, "list"))["procs"], slow["id"])
                if row["state"] == "exited":
                    break
                assert time.monotonic() < deadline, row
                await asyncio.sleep(0.05)
            assert row["reason"] == "timeout"

    asyncio.run(scenario())


def test_stop_signal(tmp_path: Path) -> None:
    """SIGTERM while the client is still connected: the MCP server stops its private
    server and its children, and exits 0. Its stdout carries only JSON-RPC."""
    env, runtime = mcp_env(tmp_path)
    path = str(runtime / "s.sock")
    proc = subprocess.Popen(
        [sys.executable, "-m", "procwindow", "mcp", "--socket", path],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    replies: list[dict[str, Any]] = []

    def request(message: dict[str, Any], reply: bool = True) -> dict[str, Any]:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        proc.stdin.flush()
        if not reply:
            return {}
        replies.append(json.loads(proc.stdout.readline()))
        return replies[-1]

    try:
        request(
            {
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "0"},
                },
            }
        )
        request({"method": "notifications/initialized"}, reply=False)
        started = request(
            {
                "id": 2,
                "method": "tools/call",
                "params": {"name": "run", "arguments": {"command": ["sleep", "60"]}},
            }
        )["result"]["structuredContent"]
        assert started["agent"] == "raw" and alive(started["os_pid"])
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
        rest = proc.stdout.read()
        assert all(r["jsonrpc"] == "2.0" for r in replies)
        assert rest == b"" or all(json.loads(line) for line in rest.splitlines())
        wait_gone(started["os_pid"])
        assert not os.path.exists(path)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


def test_without_the_sdk(tmp_path: Path) -> None:
    """One line on stderr, exit 2, nothing on stdout (the transport)."""
    env, _runtime = mcp_env(tmp_path)
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; sys.modules['mcp'] = None\n"
            "from procwindow.cli import main\n"
            "sys.exit(main(['mcp']))",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == "procwindow mcp needs the MCP SDK: pip install 'procwindow[mcp]'\n"


def test_async_client(server: Server) -> None:
    """AsyncClient: results, streams, the server's errors, a missing server, a reply
    past its limit, and a cancelled request, each leaving no fd behind."""

    async def scenario() -> None:
        async with AsyncClient(server.path) as client:
            hello = await client.call("hello")
            assert hello["pid"] == server.proc.pid
            started = await client.call(
                "run", session="s", agent="a", argv=["sh", "-c", "echo one; echo two"]
            )
            with pytest.raises(ServerError) as refused:
                await client.call("out", proc=999999)
            assert refused.value.type == "ProcNotFound"
            # still usable after a refused request
            deadline = time.monotonic() + 15
            while True:
                out = await client.call("out", proc=started["id"])
                if out["eof"]:
                    break
                assert time.monotonic() < deadline
                await asyncio.sleep(0.05)
            assert [line["text"] for line in out["lines"]] == ["one", "two"]
            hits = [m async for m in client.stream("search", pattern="o", proc=started["id"])]
            assert [m["hit"]["text"] for m in hits[:-1]] == ["one", "two"]
            assert hits[-1] == {"result": {"hits": 2, "limited": False}}
        assert client.closed

        with pytest.raises(CannotConnect):
            await AsyncClient.connect(server.path + ".nothing")

        small = await AsyncClient.connect(server.path, limit=16)
        with pytest.raises(ServerError) as too_long:
            await small.call("hello")
        assert too_long.value.type == "ReplyTooLarge" and small.closed
        with pytest.raises(ServerError):
            await small.call("hello")

        follower = await AsyncClient.connect(server.path)
        quiet = await follower.call("run", session="s", agent="a", argv=["sleep", "30"])

        async def follow() -> None:
            async for _message in follower.stream("out", proc=quiet["id"], follow=True):
                pass

        task = asyncio.ensure_future(follow())
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert follower.closed
        async with AsyncClient(server.path) as client:
            await client.call("kill", proc=quiet["id"])

    asyncio.run(scenario())
