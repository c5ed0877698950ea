"""The same bad input is refused the same way at every surface: the library's
exception, the protocol's error, ``procwindow ctl``'s one line (exit 2) and the MCP
tool's error carry one message, from the operation's spec."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest

from procwindow.core import InvalidField, Supervisor

from .conftest import Server

pytest.importorskip("mcp")

from mcp import Client

from procwindow.mcp import Backend, Scope, build_app

#: (library call, protocol request, ctl arguments, MCP tool and arguments, message)
CASES: list[tuple[Any, dict[str, Any], tuple[str, ...] | None, tuple[str, dict[str, Any]], str]] = [
    (
        lambda sup: sup.excerpt(1, max_bytes=0),
        {"op": "excerpt", "proc": 1, "max_bytes": 0},
        ("excerpt", "1", "--max-bytes", "0"),
        ("excerpt", {"id": 1, "max_bytes": 0}),
        "max_bytes must be an integer of at least 256, got 0",
    ),
    (
        lambda sup: sup.read(1, since=-1),
        {"op": "out", "proc": 1, "since": -1},
        ("out", "1", "--since", "-1"),
        ("read", {"id": 1, "since": -1}),
        "since must be an integer of at least 0, got -1",
    ),
    (
        lambda sup: sup.wait_for(1, "x", since=-2),
        {"op": "wait_for", "proc": 1, "pattern": "x", "since": -2},
        ("wait-for", "1", "x", "--since", "-2"),
        ("wait_for", {"id": 1, "pattern": "x", "since": -2}),
        "since must be an integer of at least 0, got -2",
    ),
    (
        lambda sup: sup.excerpt(1, head=6000, tail=6000),
        {"op": "excerpt", "proc": 1, "head": 6000, "tail": 6000},
        ("excerpt", "1", "--head", "6000", "--tail", "6000"),
        None,  # the tools bound head and tail to 1,000 each
        "head and tail together must be at most 10000",
    ),
    (
        lambda sup: sup.spawn(["true"], session="s", agent="a", ready=True),
        {"op": "run", "session": "s", "agent": "a", "argv": ["true"], "ready": True},
        None,  # ctl takes --ready as text
        ("run", {"command": "true", "ready": True}),
        'ready must be a line pattern, a port or an object with one of "line", "port",'
        ' "command", "shell" or "http", got True',
    ),
    (
        lambda sup: sup.spawn(["true"], session="s", agent="a", merge_stderr=1),
        {"op": "run", "session": "s", "agent": "a", "argv": ["true"], "merge_stderr": 1},
        None,  # a flag on the command line
        ("run", {"command": "true", "merge_stderr": 1}),
        "merge_stderr must be true or false, got 1",
    ),
    (
        lambda sup: sup.signal(1, "NOPE"),
        {"op": "signal", "proc": 1, "signal": "NOPE"},
        ("signal", "1", "NOPE"),
        ("signal", {"id": 1, "signal": "NOPE"}),
        "signal must be a signal name (TERM, INT, HUP, KILL, USR1…) or a number from 0 to 64,"
        " got 'NOPE'",
    ),
    (
        lambda sup: sup.signal(1, "TERM", os_pid=0),
        {"op": "signal", "proc": 1, "signal": "TERM", "os_pid": 0},
        ("signal", "1", "TERM", "--pid", "0"),
        ("signal", {"id": 1, "signal": "TERM", "os_pid": 0}),
        "os_pid must be an integer of at least 1, got 0",
    ),
    (
        lambda sup: sup.history(limit=0),
        {"op": "history", "limit": 0},
        ("history", "--limit", "0"),
        ("history", {"limit": 0}),
        "limit must be an integer of at least 1, got 0",
    ),
    (
        lambda sup: sup.history(command=5),
        {"op": "history", "command": 5},
        None,  # ctl's words are strings
        ("history", {"command": 5}),
        "command must be a string, got 5",
    ),
]


def _mcp_error(server: Server, tool: str, arguments: dict[str, Any]) -> str:
    async def call() -> str:
        backend = Backend(server.path)
        try:
            async with Client(build_app(backend, Scope("s", "a"))) as client:
                result = await client.call_tool(tool, arguments)
        finally:
            await backend.close()
        assert result.is_error, result
        return "".join(getattr(part, "text", "") for part in result.content)

    return asyncio.run(call())


def _library_error(tmp_path: Any, call: Any) -> InvalidField:
    async def run() -> InvalidField:
        async with Supervisor(log_dir=tmp_path / "logs") as sup:
            with pytest.raises(InvalidField) as info:
                await _awaited(call, sup)
            return info.value

    return asyncio.run(run())


async def _awaited(call: Any, sup: Supervisor) -> Any:
    """``call(sup)``, awaited when it is a coroutine (``history`` is not)."""
    result = call(sup)
    return await result if inspect.isawaitable(result) else result


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[4][:40])
def test_one_bad_value_one_refusal_everywhere(server: Server, tmp_path: Any, case: Any) -> None:
    library, request, ctl_args, mcp_call, message = case
    assert str(_library_error(tmp_path, library)) == message
    reply = server.request(request)
    assert reply["ok"] is False
    assert (reply["error"]["code"], reply["error"]["message"]) == ("bad-field", message)
    if ctl_args is not None:
        done = server.ctl(*ctl_args, check=False)
        assert (done.returncode, done.stderr) == (2, f"procwindow ctl: {message}\n")
    if mcp_call is not None:
        tool, arguments = mcp_call
        assert _mcp_error(server, tool, arguments) == message
    assert server.request({"op": "procs"})["result"] == []  # nothing was started


def test_an_unknown_field_is_refused_by_the_protocol_and_the_tools(server: Server) -> None:
    reply = server.request({"op": "run", "session": "s", "agent": "a", "merge_stdrr": True})
    assert reply["error"]["code"] == "bad-field"
    assert reply["error"]["message"].startswith("unknown field 'merge_stdrr': run takes session,")
    text = _mcp_error(server, "run", {"command": "true", "merge_stdrr": True})
    assert text.startswith("unknown field 'merge_stdrr': run takes ")
    assert "merge_stderr" in text


def test_a_bool_is_no_id_anywhere(server: Server, tmp_path: Any) -> None:
    error = _library_error(tmp_path, lambda sup: sup.wait(True))
    assert str(error) == "proc must be an integer of at least 1, got True"
    reply = server.request({"op": "term", "proc": True})
    assert reply["error"]["message"] == "proc must be an integer of at least 1, got True"
    # The tools call it ``id``, and say so.
    assert (
        _mcp_error(server, "term", {"id": True}) == "id must be an integer of at least 1, got True"
    )


def test_an_id_past_any_proc_is_not_found(server: Server) -> None:
    huge = 2**70
    for request in ({"op": "out", "proc": huge}, {"op": "term", "proc": huge}):
        reply = server.request(request)
        assert reply["error"]["code"] == "proc-not-found", reply
    done = server.ctl("out", str(huge), check=False)
    assert done.returncode == 1
    assert f"no such proc: {huge}" in done.stderr


def test_the_tools_refuse_a_missing_or_malformed_argument_in_one_line(server: Server) -> None:
    # Before the SDK's validation, which would answer in several lines with URLs.
    cases = [
        ("excerpt", {}, "id is required"),
        ("read", {"id": None}, "id is required"),
        ("run", {}, "command is required"),
        ("run", {"command": 5}, "command must be a shell command line or a non-empty list"),
        ("run", {"command": ["ls", 3]}, "command must be a shell command line or a non-empty"),
        ("run", {"command": "  "}, "command must be a shell command line or a non-empty list"),
    ]
    for tool, arguments, message in cases:
        text = _mcp_error(server, tool, arguments)
        assert "\n" not in text, (tool, arguments, text)
        assert text.startswith(message), (tool, arguments, text)
