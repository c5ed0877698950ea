"""The MCP tools an agent session needs beyond run/read/stop, and the rules of
what a session may do: the SDK's in-memory client drives ``build_app`` against a
real ``procwindow serve``; the options are tried on a real ``procwindow mcp``."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import select
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from ..tiers import scaled
from .conftest import Server
from .test_mcp import alive, call, call_error, mcp_session, wait_gone

pytest.importorskip("mcp")

from mcp import Client
from mcp.types import CallToolResult

from procwindow.mcp import Backend, Policy, Scope, build_app

#: A test run: two of five tests fail, among 200 lines of noise.
SUITE = (
    "import sys\n"
    "for i in range(200): print(f'noise {i}')\n"
    "for name in 'abcde':\n"
    "    ok = name not in 'bd'\n"
    "    print(f'test_{name} ' + ('PASSED' if ok else 'FAILED'))\n"
    "    if not ok: print(f'  assert {name!r} == 1')\n"
    "print('2 failed, 3 passed')\n"
    "sys.exit(1)\n"
)
#: Listens on a free port, says which, and serves until stopped.
LISTENER = (
    "import socket, time\n"
    "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
    "print('listening on', s.getsockname()[1], flush=True)\n"
    "time.sleep(60)\n"
)
#: Waits for Ctrl-C and says goodbye.
POLITE = (
    "import time\n"
    "try:\n"
    "    print('waiting', flush=True); time.sleep(60)\n"
    "except KeyboardInterrupt:\n"
    "    print('bye'); raise SystemExit(3)\n"
)


async def tool(client: Client, name: str, **arguments: Any) -> dict[str, Any]:
    result: CallToolResult = await client.call_tool(name, arguments)
    assert not result.is_error, f"{name}: {_text(result)}"
    assert isinstance(result.structured_content, dict), (name, result)
    return result.structured_content


async def refusal(client: Client, name: str, **arguments: Any) -> str:
    result: CallToolResult = await client.call_tool(name, arguments)
    assert result.is_error, f"{name} succeeded: {result.structured_content}"
    text = _text(result)
    assert "\n" not in text and "Traceback" not in text, text
    return text.removeprefix(f"Error executing tool {name}: ")  # the SDK's words


def initialize(client: str) -> dict[str, Any]:
    """The JSON-RPC request that opens an MCP session (id 1), for raw clients."""
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": client, "version": "1"},
        },
    }


def _text(result: CallToolResult) -> str:
    return "".join(getattr(part, "text", "") for part in result.content)


@contextlib.asynccontextmanager
async def session(server: Server, **rules: Any) -> AsyncIterator[Client]:
    """An MCP client of ``build_app`` in this process, of session "agent-s"."""
    backend = Backend(server.path)
    app = build_app(backend, Scope("agent-s", "a"), Policy("agent-s", **rules))
    try:
        async with Client(app) as client:
            yield client
    finally:
        await backend.close()  # its idle connections


def _human_proc(server: Server, *argv: str) -> dict[str, Any]:
    reply = server.request({"op": "run", "session": "human", "agent": "me", "argv": list(argv)})
    assert reply["ok"], reply
    result: dict[str, Any] = reply["result"]
    return result


@pytest.mark.promise("For agents: procwindow mcp")
def test_an_agent_session_waits_finds_failures_restarts_and_finds_old_runs(
    server: Server,
) -> None:
    async def scenario() -> None:
        async with session(server) as c:
            # a short command: run and wait in one call
            done = await tool(c, "run", command=[sys.executable, "-c", SUITE], wait=30)
            assert done["exit"]["code"] == 1 and done["exit"]["reason"] == "failed"
            assert done["excerpt"].endswith("2 failed, 3 passed\n")
            assert done["omitted_lines"] > 0 and "noise 0" in done["excerpt"]
            suite = done["id"]
            # its failures, with what surrounds them
            found = await tool(c, "search", id=suite, pattern="FAILED", context=1)
            texts = [h["text"] for h in found["hits"]]
            assert texts == ["test_b FAILED", "test_d FAILED", "2 failed, 3 passed"]
            hit_d = found["hits"][1]
            assert hit_d["context"].splitlines() == [
                f" {hit_d['seq'] - 1}: test_c PASSED",
                f">{hit_d['seq']}: test_d FAILED",
                f" {hit_d['seq'] + 1}:   assert 'd' == 1",
            ]
            # a server: its port, a restart in place, the old run stopped
            server_run = await tool(c, "run", command=[sys.executable, "-c", LISTENER])
            hit = await tool(c, "wait_for", id=server_run["id"], pattern="listening on")
            port = int(hit["line"]["text"].split()[-1])
            ports = await tool(c, "ports", id=server_run["id"])
            assert ports["ports"] == [
                {"port": port, "host": "127.0.0.1", "os_pid": server_run["os_pid"]}
            ]
            again = await tool(c, "restart", id=server_run["id"])
            assert again["previous"] == server_run["id"] and again["id"] != server_run["id"]
            assert not alive(server_run["os_pid"])
            old = await tool(c, "read", id=server_run["id"])
            assert old["state"] == "exited" and old["exit"]["reason"] == "terminated"
            # waiting for an exit that does not come in time leaves it running
            assert "Timeout" in await refusal(c, "wait", id=again["id"], timeout=0.2)
            await tool(c, "kill", id=again["id"])
            # Ctrl-C, then the exit with the output's head and tail
            polite = await tool(c, "run", command=[sys.executable, "-c", POLITE])
            await tool(c, "wait_for", id=polite["id"], pattern="waiting")
            sent = await tool(c, "interrupt", id=polite["id"])
            assert sent == {"id": polite["id"], "delivered": True}
            ended = await tool(c, "wait", id=polite["id"])
            assert ended["exit"]["code"] == 3 and ended["excerpt"] == "waiting\nbye\n"
            # dismissed: gone from list, found by history, still readable
            await tool(c, "dismiss", id=suite)
            listed = await tool(c, "list")
            assert suite not in [p["id"] for p in listed["procs"]]
            runs = await tool(c, "history", command="import sys")
            assert [p["id"] for p in runs["procs"]] == [suite]
            assert runs["procs"][0]["reason"] == "failed"
            failed = await tool(c, "history", reason="failed")
            assert [p["id"] for p in failed["procs"]] == [suite]
            past = await tool(c, "read", id=suite, since=199, limit=2)
            assert past["text"] == "noise 199\ntest_a PASSED"
            assert past["state"] == "exited" and past["exit"]["code"] == 1

    asyncio.run(scenario())


@pytest.mark.promise("For agents: procwindow mcp: What the agent may do")
def test_a_session_acts_and_reads_only_its_own_unless_allowed(server: Server) -> None:
    human = _human_proc(server, "sh", "-c", "echo mine; sleep 60")

    async def scenario() -> None:
        async with session(server) as c:
            for name in ("term", "kill", "interrupt", "write", "restart", "dismiss", "signal"):
                args = {"signal": "TERM"} if name == "signal" else {}
                text = await refusal(c, name, id=human["id"], **args)
                assert text == (
                    f"{name}: refused: process {human['id']} belongs to session 'human';"
                    " this MCP session acts only on its own session 'agent-s'"
                    " (--allow-all lifts this)"
                )
            for name in ("read", "excerpt", "ports", "tree", "wait"):
                text = await refusal(c, name, id=human["id"])
                assert text.endswith("(--read-all lifts this)") and "reads only" in text
            text = await refusal(c, "list", all_sessions=True)
            assert "not every session (--read-all lifts this)" in text
            assert "(--read-all lifts this)" in await refusal(c, "history", session="human")
            assert "(--read-all lifts this)" in await refusal(
                c, "search", pattern="mine", all_sessions=True
            )
            assert (await tool(c, "search", pattern="mine"))["hits"] == []  # its own: none
        async with session(server, read_all=True) as c:
            assert (await tool(c, "read", id=human["id"]))["text"] == "mine"
            found = await tool(c, "search", pattern="mine", all_sessions=True)
            assert [h["id"] for h in found["hits"]] == [human["id"]]
            assert "(--allow-all lifts this)" in await refusal(c, "term", id=human["id"])
        assert alive(human["os_pid"])
        async with session(server, read_only=True) as c:
            text = await refusal(c, "run", command="true")
            assert text == "run: refused: this MCP server is read-only (--read-only)"
            text = await refusal(c, "signal", id=human["id"], signal="KILL")
            assert text == "signal: refused: this MCP server is read-only (--read-only)"
        async with session(server, allow_all=True) as c:
            stopped = await tool(c, "term", id=human["id"])
            assert stopped["exit"]["reason"] == "terminated"

    asyncio.run(scenario())


def test_only_allowed_commands_run_and_without_a_shell(server: Server, tmp_path: Path) -> None:
    marker = tmp_path / "made"

    async def scenario() -> None:
        async with session(server, commands=("echo *",)) as c:
            done = await tool(c, "run", command=f"echo hi; touch {marker}", wait=10)
            assert done["excerpt"] == f"hi; touch {marker}\n"  # one echo, no shell
            text = await refusal(c, "run", command=["touch", str(marker)])
            assert text == (
                f"run: refused: 'touch {marker}' is not an allowed command"
                " (--allow-command 'echo *')"
            )
            text = await refusal(c, "run", command="echo hi", shell=True)
            assert "without a shell" in text
            text = await refusal(c, "run", command="echo hi", env={"LD_PRELOAD": "x.so"})
            assert "env LD_PRELOAD" in text
            text = await refusal(c, "run", command="echo hi", ready={"shell": "touch x"})
            assert "readiness command" in text

    asyncio.run(scenario())
    assert not marker.exists()


def test_the_tools_describe_themselves_plainly(server: Server) -> None:
    async def scenario() -> None:
        async with session(server) as c:
            listed = (await c.list_tools()).tools
            for t in listed:
                assert t.description, t.name
                lines = t.description.splitlines()
                assert not any(line.startswith(" ") for line in lines), (t.name, lines)
            search = next(t for t in listed if t.name == "search").input_schema
            assert search["properties"]["context"]["maximum"] == 20
            # each result is described: what a model may rely on is required
            for t in listed:
                assert t.output_schema and t.output_schema["properties"], t.name
            read = next(t for t in listed if t.name == "read").output_schema
            assert read is not None
            assert {"text", "cursor", "more", "eof", "state", "exit"} <= set(read["required"])
            hits = next(t for t in listed if t.name == "search").output_schema
            assert hits is not None and "context" in hits["$defs"]["Hit"]["properties"]

    asyncio.run(scenario())


def test_ports_of_a_tree_and_of_a_finished_proc(server: Server) -> None:
    """The ports of a grandchild count; a proc that exited listens on nothing."""
    script = f'{sys.executable} -c "{LISTENER}" & wait'

    async def scenario() -> None:
        async with session(server) as c:
            started = await tool(c, "run", command=script)
            hit = await tool(c, "wait_for", id=started["id"], pattern="listening on")
            port = int(hit["line"]["text"].split()[-1])
            deadline = time.monotonic() + 10
            while True:
                found = (await tool(c, "ports", id=started["id"]))["ports"]
                if found:
                    break
                assert time.monotonic() < deadline
                await asyncio.sleep(0.1)
            assert [p["port"] for p in found] == [port]
            assert found[0]["os_pid"] != started["os_pid"]  # the grandchild holds it
            with socket.create_connection(("127.0.0.1", port), timeout=5):
                pass
            await tool(c, "kill", id=started["id"])
            assert (await tool(c, "ports", id=started["id"]))["ports"] == []

    asyncio.run(scenario())


def test_tree_lists_a_stuck_child_and_signal_stops_it_alone(server: Server) -> None:
    """An agent finds the process of a job that hangs and stops that one only."""

    async def scenario() -> None:
        async with session(server) as c:
            started = await tool(c, "run", command="sleep 600 & sleep 601 & echo $!; wait")
            hit = await tool(c, "wait_for", id=started["id"], pattern="^[0-9]+$")
            stuck = int(hit["line"]["text"])
            deadline = time.monotonic() + 10
            while True:
                tree = (await tool(c, "tree", id=started["id"]))["tree"]
                # The three, each with its own command (a child just forked shows
                # its parent's until it execs).
                if sorted(t["command"] for t in tree[1:]) == ["sleep 600", "sleep 601"]:
                    break
                assert time.monotonic() < deadline, tree
                await asyncio.sleep(0.1)
            assert tree[0]["os_pid"] == started["os_pid"] and tree[0]["depth"] == 0
            member = next(t for t in tree if t["os_pid"] == stuck)
            assert (member["command"], member["ppid"], member["depth"]) == (
                "sleep 601",
                started["os_pid"],
                1,
            )
            sent = await tool(c, "signal", id=started["id"], signal="TERM", os_pid=stuck)
            assert sent == {"id": started["id"], "signal": 15, "sent": True}
            while alive(stuck):
                assert time.monotonic() < deadline
                await asyncio.sleep(0.05)
            listed = await tool(c, "list")
            assert listed["procs"][0]["state"] == "running"
            other = await tool(c, "signal", id=started["id"], signal=9, os_pid=os.getpid())
            assert other["sent"] is False
            await tool(c, "kill", id=started["id"])
            assert (await tool(c, "tree", id=started["id"]))["tree"] == []

    asyncio.run(scenario())


@pytest.mark.promise("For agents: procwindow mcp: What the agent may do")
def test_a_human_proc_is_safe_from_an_mcp_session_unless_allow_all(server: Server) -> None:
    """`ctl run --session human`, then a real `procwindow mcp` of another session:
    its term is refused in one line; with --allow-all it stops the proc."""
    done = server.ctl("run", "--session", "human", "--agent", "me", "--", "sleep", "60")
    proc = int(done.stdout)
    os_pid = server.request({"op": "get", "proc": proc})["result"]["os_pid"]
    env = dict(server.env)
    for name in ("PROCWINDOW_SESSION", "PROCWINDOW_AGENT"):
        env.pop(name, None)
    errlog = Path(server.path).parent / "mcp.err"

    async def scenario() -> None:
        async with mcp_session(env, errlog, "--socket", server.path) as session:
            text = await call_error(session, "term", id=proc)
            assert "refused" in text and "--allow-all" in text
        assert alive(os_pid)
        async with mcp_session(env, errlog, "--socket", server.path, "--allow-all") as session:
            stopped = await call(session, "term", id=proc)
            assert stopped["exit"]["reason"] == "terminated"

    asyncio.run(scenario())
    wait_gone(os_pid)


def test_requests_from_a_file_are_served_by_the_sdks_transport(
    server: Server, tmp_path: Path
) -> None:
    """Stdin and stdout that the loop cannot watch (regular files): the SDK's own
    stdio transport serves, and the session ends at the end of the file (pipes are
    read on the loop: every other test)."""
    requests = tmp_path / "requests.jsonl"
    replies = tmp_path / "replies.jsonl"
    messages = [
        initialize("file"),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    requests.write_text("".join(json.dumps(m) + "\n" for m in messages))
    env = dict(server.env)
    with open(requests) as stdin, open(replies, "w") as stdout:
        done = subprocess.run(
            [sys.executable, "-m", "procwindow", "mcp", "--socket", server.path],
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.PIPE,
            env=env,
            text=True,
            timeout=60,
        )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    # The end of the file ends the session, maybe before the last request's answer.
    answers = {m["id"]: m for m in map(json.loads, replies.read_text().splitlines())}
    assert answers[1]["result"]["serverInfo"]["name"] == "procwindow"


def test_every_request_gets_an_answer_even_a_malformed_one(server: Server) -> None:
    """The SDK drops a request whose params are not an object, and a line that is
    not JSON, without a word: the client would wait forever. Each gets its
    JSON-RPC error, and the session goes on."""
    env = dict(server.env)
    proc = subprocess.Popen(
        [sys.executable, "-m", "procwindow", "mcp", "--socket", server.path],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None

    def send(message: object) -> None:
        assert proc.stdin is not None
        line = message if isinstance(message, bytes) else json.dumps(message).encode()
        proc.stdin.write(line + b"\n")
        proc.stdin.flush()

    def answer() -> dict[str, Any]:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], scaled(15))
        assert ready, "no answer"
        line = proc.stdout.readline()
        assert line, "no answer"
        reply: dict[str, Any] = json.loads(line)
        return reply

    try:
        send(initialize("raw"))
        assert answer()["id"] == 1
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": "not-an-object"})
        assert answer() == {
            "jsonrpc": "2.0",
            "id": 7,
            "error": {"code": -32602, "message": "params must be an object"},
        }
        send(b"this is not JSON")
        refused = answer()
        assert (refused["id"], refused["error"]["code"]) == (None, -32700)
        send({"jsonrpc": "2.0", "id": 8, "method": "tools/list"})
        listed = answer()
        assert listed["id"] == 8 and "ports" in {t["name"] for t in listed["result"]["tools"]}
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
        proc.stdout.close()
