"""Protocol 3's agent verbs against a real server and real processes: run's
timeout, shell, merge_stderr, stdin, ready and reuse; wait_for, ready, excerpt,
write; out with partial lines; events of one proc; and `procwindow ctl` for each."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from procwindow.control import ControlServer
from procwindow.control._sockdir import default_socket_path
from procwindow.control.client import Client, ServerError
from procwindow.core import Supervisor

from .conftest import Server, read_message


def py(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


def _until(cond, timeout: float = 15.0, what: str = "") -> Any:
    end = time.monotonic() + timeout
    while not (value := cond()):
        assert time.monotonic() < end, f"timed out waiting for {what or cond}"
        time.sleep(0.05)
    return value


def _proc(client: Client, proc_id: int) -> dict[str, Any]:
    return next(p for p in client.call("procs") if p["id"] == proc_id)


def _exited(client: Client, proc_id: int) -> dict[str, Any]:
    """The proc once it has exited (polled)."""
    return _until(lambda: (p := _proc(client, proc_id))["state"] == "exited" and p, what="the exit")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ctl_with_input(server: Server, data: bytes, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "procwindow", "ctl", "--socket", server.path, *args],
        input=data,
        capture_output=True,
        env=server.env,
        timeout=30,
    )


def _one_line_error(done: subprocess.CompletedProcess[str], code: int, fact: str) -> None:
    assert done.returncode == code, (done.returncode, done.stdout, done.stderr)
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("procwindow ctl: ")
    assert fact in done.stderr
    assert "Traceback" not in done.stderr


PROMPT = """
    import sys
    sys.stdout.write("Delete everything? [y/N] ")
    sys.stdout.flush()
    answer = sys.stdin.readline().strip()
    print("answer:", answer)
    print("rest:", sys.stdin.read().strip())
"""

MIXED = """
    import os
    for i in range(600):
        os.write(1 if i % 3 else 2, b"line %d\\n" % i)
"""


def _listener(port: int, delay: float) -> list[str]:
    return py(
        f"""
        import socket, time
        time.sleep({delay})
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", {port}))
        s.listen()
        print("bound", flush=True)
        while True:
            c, _ = s.accept()
            c.close()
        """
    )


# -- run: timeout, shell, merge_stderr, reuse, the proc's new fields ----------------------


def test_run_with_timeout_and_shell_and_the_procs_new_fields(server):
    with Client(server.path) as c:
        r = c.call("run", session="s", agent="a", shell="echo started; exec sleep 30", timeout=0.5)
        assert r["reused"] is False
        assert set(r) == {"id", "os_pid", "reused"}
        p = _proc(c, r["id"])
        assert p["argv"] == ["/bin/sh", "-c", "echo started; exec sleep 30"]
        assert (p["timeout"], p["ready"], p["stdin"], p["merge_stderr"]) == (
            0.5,
            True,
            False,
            False,
        )
        assert c.call("wait_for", proc=r["id"], pattern="started", timeout=10)["cursor"] == 1
        ended = _exited(c, r["id"])
        assert ended["exit"]["reason"] == "timeout"
        assert (ended["exit"]["code"], ended["exit"]["signal"]) == (143, 15)

    # the same through ctl
    done = server.ctl(
        "run", "--session", "s", "--agent", "a", "--timeout", "0.3", "--shell", "exec sleep 30"
    )
    proc_id = int(done.stdout)
    with Client(server.path) as c:
        assert _exited(c, proc_id)["exit"]["reason"] == "timeout"
    history = json.loads(server.ctl("--json", "history", "--reason", "timeout").stdout)
    assert {p["id"] for p in history} == {1, proc_id}


def test_merge_stderr_gives_the_exact_order(server):
    proc_id = int(
        server.ctl(
            "run", "--session", "s", "--agent", "a", "--merge-stderr", "--", *py(MIXED)
        ).stdout
    )
    with Client(server.path) as c:
        assert _exited(c, proc_id)["merge_stderr"] is True
        batch = _until(lambda: (b := c.call("out", proc=proc_id))["eof"] and b)
    assert [x["text"] for x in batch["lines"]] == [f"line {i}" for i in range(600)]
    assert {x["stream"] for x in batch["lines"]} == {"stdout"}
    out = server.ctl("out", str(proc_id))
    assert out.stdout == "".join(f"line {i}\n" for i in range(600))
    assert out.stderr == ""


def test_reuse_returns_the_running_copy(server):
    with Client(server.path) as c:
        first = c.call("run", session="s", agent="a", argv=["sleep", "30"], reuse=True)
        again = c.call("run", session="s", agent="a", argv=["sleep", "30"], reuse=True)
        assert (again["id"], again["os_pid"], again["reused"]) == (
            first["id"],
            first["os_pid"],
            True,
        )
        assert first["reused"] is False
        # without reuse, or another scope or command: a new proc
        other = [
            c.call("run", session="s", agent="a", argv=["sleep", "30"]),
            c.call("run", session="s", agent="b", argv=["sleep", "30"], reuse=True),
            c.call("run", session="s", agent="a", argv=["sleep", "31"], reuse=True),
        ]
        assert len({first["id"], *(o["id"] for o in other)}) == 4
        assert not any(o["reused"] for o in other)
    cmd = ("run", "--session", "s", "--agent", "c", "--reuse", "--", "sleep", "30")
    one = server.ctl(*cmd).stdout
    assert server.ctl(*cmd).stdout == one
    reply = json.loads(server.ctl("--json", *cmd).stdout)
    assert (reply["id"], reply["reused"]) == (int(one), True)
    # a copy that exited is not reused
    server.ctl("kill", one.strip())
    assert server.ctl(*cmd).stdout != one


def test_restart_keeps_the_options(server):
    with Client(server.path) as c:
        r = c.call(
            "run",
            session="s",
            agent="a",
            argv=["cat"],
            stdin=True,
            merge_stderr=True,
            timeout=60,
            ready={"line": "never"},
        )
        again = c.call("restart", proc=r["id"])
        assert again["id"] != r["id"]
        p = _proc(c, again["id"])
        assert (p["stdin"], p["merge_stderr"], p["timeout"], p["ready"]) == (True, True, 60, False)
        assert c.call("write", proc=again["id"], data="hello\n", close=True) == {
            "written": 6,
            "closed": True,
        }
        assert c.call("wait_for", proc=again["id"], pattern="hello", timeout=10)["cursor"] == 1


# -- stdin, prompts, partial lines ----------------------------------------------------------


def test_a_prompt_is_seen_then_answered_through_write(server):
    with Client(server.path) as c:
        r = c.call("run", session="s", agent="a", argv=py(PROMPT), stdin=True)
        proc_id = r["id"]
        assert _proc(c, proc_id)["stdin"] is True
        hit = c.call("wait_for", proc=proc_id, pattern=r"\[y/N\]", timeout=10)
        assert hit["line"]["partial"] is True
        assert hit["line"]["text"] == "Delete everything? [y/N] "
        assert (hit["line"]["seq"], hit["cursor"]) == (1, 0)
        # out shows it only when asked, last, and its cursor stays before it
        plain = c.call("out", proc=proc_id)
        assert (plain["lines"], plain["cursor"]) == ([], 0)
        shown = c.call("out", proc=proc_id, partial=True)
        assert [(x["text"], x.get("partial")) for x in shown["lines"]] == [
            ("Delete everything? [y/N] ", True)
        ]
        assert shown["cursor"] == 0
        assert c.call("out", proc=proc_id, partial=True, stream="stderr")["lines"] == []
        assert c.call("write", proc=proc_id, data="y\n") == {"written": 2}
        done = c.call("wait_for", proc=proc_id, pattern="answer: y$", since=hit["cursor"])
        assert "partial" not in done["line"]
        assert done["line"]["text"] == "Delete everything? [y/N] answer: y"
        assert done["cursor"] == 1
        assert c.call("write", proc=proc_id, data="más", close=True) == {
            "written": 4,
            "closed": True,
        }
        assert _exited(c, proc_id)["exit"]["code"] == 0
        assert c.call("wait_for", proc=proc_id, pattern="rest: más", timeout=10)["cursor"] == 2
        with pytest.raises(ServerError) as caught:
            c.call("write", proc=proc_id, data="late\n")
        assert caught.value.type == "StdinClosed"
        assert "stdin is closed" in caught.value.message


def test_ctl_wait_for_out_partial_and_write(server):
    proc_id = server.ctl(
        "run", "--session", "s", "--agent", "a", "--stdin", "--", *py(PROMPT)
    ).stdout.strip()
    hit = server.ctl("wait-for", proc_id, r"\[y/N\]", "--timeout", "10")
    assert hit.stdout == "Delete everything? [y/N] \n"
    assert server.ctl("out", proc_id).stdout == ""
    assert server.ctl("out", proc_id, "--partial").stdout == "Delete everything? [y/N] \n"
    line = json.loads(server.ctl("--json", "out", proc_id, "--partial").stdout)
    assert line["partial"] is True
    assert server.ctl("write", proc_id, "y").stdout == f"{proc_id}: 2 bytes written\n"
    # DATA omitted: ctl's own stdin, read to its end, written as it is
    piped = _ctl_with_input(server, b"from a pipe\n", "write", proc_id, "--close")
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == f"{proc_id}: 12 bytes written, stdin closed\n".encode()
    assert server.ctl("wait-for", proc_id, "rest: from a pipe", "-F").returncode == 0
    assert server.ctl("out", proc_id).stdout == (
        "Delete everything? [y/N] answer: y\nrest: from a pipe\n"
    )
    late = server.ctl("write", proc_id, "again", check=False)
    _one_line_error(late, 1, "StdinClosed")


def test_ctl_write_sends_large_input_in_pieces_and_checks_utf8(server):
    proc_id = server.ctl(
        "run", "--session", "s", "--agent", "a", "--stdin", "--", "sh", "-c", "wc -c; sleep 30"
    ).stdout.strip()
    data = b"".join(b"%07d\n" % i for i in range(200_000))  # 1.6 MB: more than one request
    done = _ctl_with_input(server, data, "--json", "write", proc_id, "--close")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"written": len(data), "closed": True}
    assert server.ctl("wait-for", proc_id, "^[0-9]+$", "--timeout", "10").stdout == (
        f"{len(data)}\n"
    )
    other = server.ctl(
        "run", "--session", "s", "--agent", "a", "--stdin", "--", "sleep", "30"
    ).stdout.strip()
    bad = _ctl_with_input(server, b"\xff\xfe not text", "write", other)
    assert bad.returncode == 2
    assert bad.stderr.decode().startswith("procwindow ctl: write: stdin is not UTF-8 text")
    assert bad.stderr.count(b"\n") == 1
    # -n: DATA without a newline; DATA that starts with '-' goes after '--'
    cat = server.ctl("run", "--session", "s", "--agent", "a", "--stdin", "--", "cat").stdout.strip()
    server.ctl("write", cat, "-n", "abc")
    server.ctl("write", cat, "--close", "--", "-def")
    assert server.ctl("wait-for", cat, "abc-def", "-F", "--timeout", "10").stdout == "abc-def\n"


def test_out_follow_sends_partial_lines(server):
    progress = """
        import sys, time
        for pct in (10, 50, 90):
            sys.stdout.write("\\rprogress %d%%" % pct)
            sys.stdout.flush()
            time.sleep(0.6)
        sys.stdout.write("\\rprogress 100%\\n")
    """
    with Client(server.path) as c:
        proc_id = c.call("run", session="s", agent="a", argv=py(progress))["id"]
        messages = list(c.stream("out", proc=proc_id, follow=True, partial=True))
    partials = [m["partial"] for m in messages if "partial" in m]
    assert [p["text"] for p in partials] == ["progress 10%", "progress 50%", "progress 90%"]
    assert all(p["partial"] is True and p["seq"] == 1 for p in partials)
    lines = [x for m in messages if "lines" in m for x in m["lines"]]
    assert [x["text"] for x in lines] == ["progress 100%"]
    assert messages[-1]["result"]["eof"] is True
    # without partial, none are sent
    with Client(server.path) as c:
        again = c.call("run", session="s", agent="a", argv=py(progress))["id"]
        assert not [m for m in c.stream("out", proc=again, follow=True) if "partial" in m]
    shown = server.ctl("run", "--session", "s", "--agent", "a", "--", *py(progress)).stdout
    follow = server.ctl("out", shown.strip(), "--follow", "--partial")
    assert follow.stdout.splitlines()[:3] == ["progress 10%", "progress 50%", "progress 90%"]


# -- wait_for -------------------------------------------------------------------------------


def test_wait_for_hit_no_match_timeout_and_ctl_exit_codes(server):
    with Client(server.path) as c:
        # two pipes: seq is exact within a stream; the sleep orders them across
        done = c.call(
            "run",
            session="s",
            agent="a",
            shell="echo err >&2; sleep 0.3; echo one; echo two; exit 4",
        )["id"]
        hit = c.call("wait_for", proc=done, pattern="t.o", timeout=10)
        assert (hit["line"]["text"], hit["line"]["stream"], hit["cursor"]) == ("two", "stdout", 3)
        err = c.call("wait_for", proc=done, pattern="e", stream="stderr")
        assert (err["line"]["text"], err["cursor"]) == ("err", 1)
        assert c.call("wait_for", proc=done, pattern="o", since=2)["line"]["text"] == "two"
        sleeper = c.call("run", session="s", agent="a", argv=["sleep", "30"])["id"]
    # NoMatch carries how it ended and where the scan stopped
    reply = server.request({"op": "wait_for", "id": 9, "proc": done, "pattern": "three"})
    assert reply["id"] == 9
    error = reply["error"]
    assert error["type"] == "NoMatch"
    assert "exited with code 4 (failed) without a line matching 'three'" in error["message"]
    assert error["exit"]["code"] == 4
    assert error["exit"]["reason"] == "failed"
    assert error["cursor"] == 3
    # Timeout: the proc is left alone
    reply = server.request(
        {"op": "wait_for", "proc": sleeper, "pattern": "x", "timeout": 0.3, "regex": False}
    )
    assert reply["error"] == {
        "type": "Timeout",
        "code": "timeout",
        "message": f"proc {sleeper}: no line matched 'x' within 0.3 s",
        "proc_id": sleeper,
        "seconds": 0.3,
    }
    with Client(server.path) as c:
        assert _proc(c, sleeper)["state"] == "running"

    assert server.ctl("wait-for", str(done), "^two$").stdout == "two\n"
    wanted = json.loads(server.ctl("--json", "wait-for", str(done), "one").stdout)
    assert wanted == {"line": wanted["line"], "cursor": 2}
    _one_line_error(server.ctl("wait-for", str(done), "three", check=False), 1, "NoMatch")
    # The real command, once for the agent verbs: its exit status 124 as timeout(1).
    late = server.ctl_process("wait-for", str(sleeper), "x", "--timeout", "0.2", check=False)
    _one_line_error(late, 124, "no line matched 'x' within 0.2 s")
    _one_line_error(server.ctl("wait-for", str(done), "(", check=False), 2, "InvalidPattern")
    _one_line_error(server.ctl("wait-for", "999", "x", check=False), 1, "no such proc: 999")
    _one_line_error(server.ctl("wait-for", str(done), check=False), 2, "needs a PATTERN")
    _one_line_error(
        server.ctl("wait-for", str(done), "x", "--timeout", "0", check=False),
        2,
        "timeout must be a positive number of seconds, got 0",
    )
    # -F: the pattern is text; a pattern that starts with '-' goes after '--'
    assert server.ctl("wait-for", str(done), "o.e", "-F", check=False).returncode == 1
    dashed = server.ctl("run", "--session", "s", "--agent", "a", "--", "echo", "-x-").stdout
    assert server.ctl("wait-for", dashed.strip(), "--", "-x-").stdout == "-x-\n"


def test_a_wait_ends_when_its_client_leaves(tmp_path):
    """A wait_for (or ready, or write) without a timeout on a proc that writes
    nothing: the client closing its connection ends it, and nothing is left."""

    async def main() -> None:
        async with (
            Supervisor(state_dir=tmp_path / "state", graceful_timeout=0.5) as sup,
            ControlServer(sup, default_socket_path("t")) as server,
        ):
            p = await sup.spawn(
                ["sleep", "30"], session="s", agent="a", stdin=True, ready={"port": _free_port()}
            )
            before = asyncio.all_tasks()
            requests = [
                {"op": "wait_for", "proc": p.id, "pattern": "never"},
                {"op": "ready", "proc": p.id},
                {"op": "write", "proc": p.id, "data": "x" * 900_000},  # more than a pipe holds
            ]
            for request in requests:
                async with _connection(server.path) as (reader, writer):
                    writer.write(json.dumps(request).encode() + b"\n")
                    await asyncio.sleep(0.3)
                    assert len(server._conns) == 1  # still waiting
                await _until_async(lambda: not server._conns)
                await _until_async(lambda: asyncio.all_tasks() <= before | {asyncio.current_task()})
            assert p.running
            # the proc is fine, and the server still answers
            async with _connection(server.path) as (reader, writer):
                writer.write(
                    b'{"op": "wait_for", "proc": %d, "pattern": "x", "timeout": 0.1}\n' % p.id
                )
                reply = json.loads(await asyncio.wait_for(reader.readline(), 10))
                assert reply["error"]["type"] == "Timeout"

    asyncio.run(main())


@contextlib.asynccontextmanager
async def _connection(
    path: str,
) -> AsyncIterator[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    reader, writer = await asyncio.open_unix_connection(path)
    try:
        yield reader, writer
    finally:
        writer.close()
        await writer.wait_closed()


async def _until_async(cond, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, f"timed out waiting for {cond}"
        await asyncio.sleep(0.02)


# -- ready ----------------------------------------------------------------------------------


def test_ready_with_a_real_listener(server):
    port = _free_port()
    with Client(server.path) as c:
        r = c.call("run", session="s", agent="a", argv=_listener(port, 0.5), ready={"port": port})
        assert _proc(c, r["id"])["ready"] is False
        reply = c.call("ready", proc=r["id"], timeout=15)
        assert reply["ready"] is True
        assert reply["proc"]["id"] == r["id"]
        assert reply["proc"]["ready"] is True
        assert _proc(c, r["id"])["ready"] is True
        # a proc without a check is ready at once
        plain = c.call("run", session="s", agent="a", argv=["sleep", "30"])["id"]
        assert c.call("ready", proc=plain)["ready"] is True
        # a line check
        line = c.call(
            "run",
            session="s",
            agent="a",
            shell="sleep 0.2; echo listening on 8080; exec sleep 30",
            ready={"line": "listening on", "regex": False, "stream": "stdout"},
        )["id"]
        assert c.call("ready", proc=line, timeout=10)["ready"] is True

    # through ctl: exit 0, 1 (exited first, or the check gave up), 124 (timeout)
    port2 = _free_port()
    slow = server.ctl(
        "run",
        "--session",
        "s",
        "--agent",
        "a",
        "--ready",
        f"port:{port2}",
        "--",
        *_listener(port2, 1.5),
    ).stdout.strip()
    _one_line_error(
        server.ctl("ready", slow, "--timeout", "0.2", check=False),
        124,
        f"proc {slow} was not ready within 0.2 s",
    )
    assert server.ctl("ready", slow, "--timeout", "15").stdout == f"{slow}: ready\n"
    exits = server.ctl(
        "run", "--session", "s", "--agent", "a", "--ready", "line:never", "--", "true"
    ).stdout.strip()
    _one_line_error(server.ctl("ready", exits, check=False), 1, "before its check passed")
    reply = server.request({"op": "ready", "proc": int(exits)})
    assert reply["error"]["type"] == "NotReady"
    assert reply["error"]["exit"]["reason"] == "exited"
    gives_up = server.ctl(
        "run",
        "--session",
        "s",
        "--agent",
        "a",
        "--ready",
        "cmd:false",
        "--ready-timeout",
        "0.5",
        "--",
        "sleep",
        "30",
    ).stdout.strip()
    _one_line_error(server.ctl("ready", gives_up, check=False), 1, "gave up after 0.5 s")
    reply = server.request({"op": "ready", "proc": int(gives_up)})
    assert reply["error"]["exit"] is None  # it still runs
    # An http:// URL: ready once a GET of it answers 2xx or 3xx.
    port3 = _free_port()
    web = server.ctl(
        "run",
        "--session",
        "s",
        "--agent",
        "a",
        "--ready",
        f"http://127.0.0.1:{port3}/",
        "--",
        sys.executable,
        "-m",
        "http.server",
        "--bind",
        "127.0.0.1",
        str(port3),
    ).stdout.strip()
    assert server.ctl("ready", web, "--timeout", "15").stdout == f"{web}: ready\n"


# -- excerpt ----------------------------------------------------------------------------------


def test_excerpt_and_its_bounds(server):
    with Client(server.path) as c:
        proc_id = c.call("run", session="s", agent="a", argv=["seq", "1", "1000"])["id"]
        _exited(c, proc_id)
        _until(lambda: c.call("out", proc=proc_id, since=1000)["eof"])
        ex = c.call("excerpt", proc=proc_id, head=3, tail=2)
        assert set(ex) == {
            "text",
            "cursor",
            "lines",
            "omitted_lines",
            "omitted_bytes",
            "dropped",
            "eof",
            "exit",
            "partial",
        }
        text = ex["text"].splitlines()
        assert text[:3] == ["1", "2", "3"]
        assert text[-2:] == ["999", "1000"]
        assert text[3].startswith("… 995 lines (")
        assert (ex["lines"], ex["omitted_lines"], ex["cursor"]) == (1000, 995, 1000)
        assert ex["omitted_bytes"] == sum(len(f"{i}\n") for i in range(4, 999))
        assert (ex["eof"], ex["partial"], ex["exit"]["code"]) == (True, None, 0)
        tail = c.call("excerpt", proc=proc_id, since=990)
        assert tail["text"] == "".join(f"{i}\n" for i in range(991, 1001))
        assert tail["lines"] == 10
        small = c.call("excerpt", proc=proc_id, head=1000, tail=0, max_bytes=256)
        assert len(small["text"].encode()) <= 256
        assert small["omitted_lines"] > 0
    for fields, fact in (
        ({"max_bytes": 100}, "max_bytes must be an integer of at least 256, got 100"),
        ({"max_bytes": 2 * 1024 * 1024}, "max_bytes must be an integer of at most 1048576"),
        ({"head": 6000, "tail": 6000}, "head and tail together must be at most 10000"),
        ({"head": -1}, "head must be an integer of at least 0, got -1"),
        ({"tail": "3"}, "tail must be an integer of at least 0, got '3'"),
    ):
        reply = server.request({"op": "excerpt", "proc": proc_id, **fields})
        assert reply["error"]["code"] == "bad-field", reply
        assert fact in reply["error"]["message"]
    out = server.ctl("excerpt", str(proc_id), "--head", "1", "--tail", "1").stdout
    omitted = sum(len(str(i)) + 1 for i in range(2, 1000))
    assert out == f"1\n… 998 lines ({omitted} bytes) omitted …\n1000\n"
    reply = json.loads(server.ctl("--json", "excerpt", str(proc_id), "--since", "998").stdout)
    assert (reply["text"], reply["lines"]) == ("999\n1000\n", 2)


# -- events -----------------------------------------------------------------------------------


def test_events_of_one_proc_with_partial_ready_and_the_exits_last_seq(server):
    program = """
        import sys
        sys.stdin.readline()
        print("hello", flush=True)
        sys.stdout.write("name? ")
        sys.stdout.flush()
        name = sys.stdin.readline().strip()
        print("hi", name)
        print("bye", file=sys.stderr)
    """
    with Client(server.path) as c:
        watched = c.call(
            "run", session="s", agent="a.b", argv=py(program), stdin=True, ready={"line": "^hello"}
        )["id"]
        noisy = c.call(
            "run", session="s", agent="a.b", shell="while :; do echo noise; sleep 0.05; done"
        )["id"]
    sock = server.connect()
    try:
        sock.sendall(json.dumps({"op": "events", "id": 5, "proc": watched}).encode() + b"\n")
        ack = read_message(sock)
        assert ack["result"] == {"subscribed": ">", "proc": watched}
        with Client(server.path) as c:
            c.call("write", proc=watched, data="go\n")
            events = []
            while True:
                ev = read_message(sock)["event"]
                events.append(ev)
                if ev["kind"] == "partial":
                    c.call("write", proc=watched, data="bob\n", close=True)
                if ev["kind"] == "exit":
                    break
    finally:
        sock.close()
    assert {ev["proc"] for ev in events} == {watched}
    assert all(ev["topic"].startswith("session.s.agent.a%2Eb.proc.") for ev in events)
    kinds = [ev["kind"] for ev in events]
    assert "ready" in kinds
    assert kinds.index("ready") < kinds.index("partial")
    partial = next(ev for ev in events if ev["kind"] == "partial")
    assert (partial["text"], partial["stream"], partial["first_seq"]) == ("name? ", "stdout", 2)
    exit_ = events[-1]
    assert exit_["last_seq"] == 3
    assert (exit_["code"], exit_["reason"], exit_["tool"]) == (0, "exited", "shell")
    assert exit_["cmd"].startswith(sys.executable)
    assert "signal" not in exit_
    outputs = [ev for ev in events if ev["kind"] == "output"]
    assert max(ev["last_seq"] for ev in outputs) == exit_["last_seq"]
    # ctl events --proc; an unknown proc is an error, not a silent stream
    unknown = server.ctl("events", "--proc", "999", check=False)
    _one_line_error(unknown, 1, "no such proc: 999")
    with Client(server.path) as c:
        c.call("kill", proc=noisy)


# -- malformed fields -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "fact"),
    [
        ({"ready": {"port": 0}}, "ready port must be 1-65535"),
        ({"ready": {"port": True}}, "'port' must be an integer"),
        (
            {"ready": {"pattern": "x"}},
            'exactly one of "line", "port", "command", "shell" or "http"',
        ),
        ({"ready": {"line": "x", "port": 80}}, "exactly one of"),
        ({"ready": {"line": "x", "host": "h"}}, "a line check takes no 'host'"),
        ({"ready": {"port": 80, "status": 200}}, "a port check takes no 'status'"),
        (
            {"ready": {"http": "http://127.0.0.1/", "status": True}},
            "'status' must be an HTTP status (an integer, 100-599)",
        ),
        (
            {"ready": {"http": "http://127.0.0.1/", "status": 99}},
            "ready status must be an HTTP status (100-599), got 99",
        ),
        ({"ready": {"line": "("}}, "invalid pattern '('"),
        ({"ready": {"line": "x", "stream": "both"}}, "'stream' is 'stdout' or 'stderr'"),
        ({"ready": {"command": []}}, "ready: argv must not be empty"),
        ({"ready": {"command": "true"}}, "'command' must be a list of strings"),
        ({"ready": {"shell": "true", "interval": -1}}, "interval"),
        ({"ready": {"port": 80, "timeout": 0}}, "timeout"),
        ({"ready": True}, "ready must be a line pattern, a port or an object with one of"),
        ({"ready": 1.5}, "ready must be a line pattern, a port or an object with one of"),
        ({"timeout": -1}, "timeout must be a positive number of seconds, got -1"),
        ({"timeout": "5"}, "timeout must be a positive number of seconds, got '5'"),
        ({"timeout": 10**400}, "timeout must be a positive number of seconds"),
        ({"merge_stderr": "yes"}, "merge_stderr must be true or false, got 'yes'"),
        ({"stdin": 1}, "stdin must be true or false, got 1"),
        ({"reuse": None, "colour": 1}, "unknown field 'colour': run takes session, agent,"),
    ],
)
def test_bad_run_fields_are_one_line_errors(server, fields, fact):
    with server.connect() as sock:
        request = {"op": "run", "id": 1, "session": "s", "agent": "a", "argv": ["true"], **fields}
        reply = server.request(request, sock)
        assert reply["ok"] is False, reply
        assert reply["error"]["code"] == "bad-field"
        assert fact in reply["error"]["message"]
        assert "\n" not in reply["error"]["message"]
        assert server.request({"op": "hello", "id": 2}, sock)["ok"] is True
    assert server.request({"op": "procs"})["result"] == []  # nothing was started


def test_bad_agent_verb_fields_and_stdin_errors(server):
    with Client(server.path) as c:
        sleeper = c.call("run", session="s", agent="a", argv=["sleep", "30"])["id"]
    for request, kind, fact in (
        ({"op": "write", "proc": sleeper, "data": "x"}, "StdinClosed", 'run it with "stdin"'),
        ({"op": "write", "proc": sleeper, "close": True}, "StdinClosed", "has no stdin"),
        ({"op": "write", "proc": sleeper, "data": 5}, "InvalidField", "data must be a string"),
        ({"op": "write", "proc": 999, "data": "x"}, "ProcNotFound", "no such proc: 999"),
        ({"op": "wait_for", "proc": sleeper}, "InvalidField", "pattern is required"),
        ({"op": "wait_for", "proc": sleeper, "pattern": ""}, "InvalidPattern", "non-empty"),
        (
            {"op": "wait_for", "proc": sleeper, "pattern": "x", "regex": "no"},
            "InvalidField",
            "regex must be true or false, got 'no'",
        ),
        (
            {"op": "wait_for", "proc": sleeper, "pattern": "x", "stream": "all"},
            "InvalidField",
            "stream must be one of stdout, stderr, got 'all'",
        ),
        (
            {"op": "wait_for", "proc": sleeper, "pattern": "x", "timeout": -2},
            "InvalidField",
            "timeout must be a positive number of seconds, got -2",
        ),
        (
            {"op": "wait_for", "proc": sleeper, "pattern": "x", "since": -1},
            "InvalidField",
            "since must be an integer of at least 0, got -1",
        ),
        ({"op": "ready", "proc": sleeper, "timeout": 0}, "InvalidField", "timeout must be"),
        ({"op": "ready", "proc": 0}, "InvalidField", "proc must be an integer of at least 1"),
        ({"op": "out", "proc": sleeper, "partial": 1}, "InvalidField", "partial must be true"),
        ({"op": "events", "proc": "1"}, "InvalidField", "proc must be an integer of at least 1"),
    ):
        with server.connect() as sock:
            reply = server.request(request, sock)
            assert reply["ok"] is False, (request, reply)
            assert reply["error"]["type"] == kind, (request, reply)
            assert fact in reply["error"]["message"], (request, reply)
            assert server.request({"op": "hello"}, sock)["ok"] is True  # still usable

    _one_line_error(server.ctl("write", str(sleeper), "x", check=False), 1, "has no stdin")
    base = ("run", "--session", "s", "--agent", "a")
    for args, fact in (
        (("--ready", "bogus"), "--ready: cannot read 'bogus'"),
        (("--ready", "port:99999"), "PORT 1-65535"),
        (("--ready", "http://"), "must be an http:// or https:// URL"),
        (("--ready", "line:("), "is not a regex"),
        (("--timeout", "-1"), "timeout must be a positive number of seconds, got -1"),
        (("--ready-timeout", "2"), "--ready-timeout needs --ready"),
    ):
        _one_line_error(server.ctl(*base, *args, "--", "true", check=False), 2, fact)
    _one_line_error(
        server.ctl("ready", str(sleeper), "--timeout", "-1", check=False),
        2,
        "timeout must be a positive number of seconds, got -1",
    )
    assert json.loads(server.ctl("--json", "idx").stdout)[0]["id"] == sleeper  # none started


def test_ctl_help_documents_the_exit_codes(server):
    helped = server.ctl("--help").stdout
    assert "124" in helped
    assert "exit status" in helped
    assert "wait-for" in helped and "excerpt" in helped
    assert "newline" in " ".join(server.ctl("write", "--help").stdout.split())


#: Stops on SIGINT only (SIGTERM ignored), with exit code 7.
STOPS_ON_INT = "trap '' TERM; trap 'exit 7' INT; echo ready; while :; do sleep 0.05; done"


def test_stop_signal_at_every_surface(server: Server) -> None:
    from procwindow.control.remote import RemoteSupervisor

    # ctl run --stop-signal: term sends it, and the proc says which it is.
    done = server.ctl(
        "run",
        "--session",
        "s",
        "--agent",
        "a",
        "--stop-signal",
        "int",
        "--graceful-timeout",
        "30",
        "--",
        "bash",
        "-c",
        STOPS_ON_INT,
    )
    proc_id = int(done.stdout.split()[0])
    with Client(server.path) as c:
        _until(lambda: "ready" in c.call("out", proc=proc_id)["lines"][0]["text"], what="ready")
        assert _proc(c, proc_id)["stop_signal"] == "SIGINT"
        other = c.call("run", session="s", agent="a", argv=["sleep", "30"])["id"]
        assert _proc(c, other)["stop_signal"] is None  # SIGTERM
        c.call("kill", proc=other)
    term = server.ctl("term", str(proc_id), check=False)
    with Client(server.path) as c:
        assert _exited(c, proc_id)["exit"]["code"] == 7, term.stdout + term.stderr

    async def remote() -> int | None:
        async with await RemoteSupervisor.connect(server.path) as sup:
            p = await sup.spawn(["sleep", "30"], session="s", agent="a", stop_signal="HUP")
            stop = p.options.stop_signal
            await sup.term(p.id)
            return stop

    assert asyncio.run(remote()) == 1
    # Refused the same way at each surface, in one line.
    fact = "stop_signal must be a signal name (TERM, INT, HUP, KILL, USR1…) or a number from 1"
    bad = server.ctl(
        "run", "--session", "s", "--agent", "a", "--stop-signal", "0", "--", "true", check=False
    )
    _one_line_error(bad, 2, fact)
    reply = server.request(
        {"op": "run", "session": "s", "agent": "a", "argv": ["true"], "stop_signal": "NOPE"}
    )
    assert reply["error"]["code"] == "bad-field" and "got 'NOPE'" in reply["error"]["message"]
    # stop_command: a proc carries it, and a bad one is refused by the rule of a command.
    with Client(server.path) as c:
        flag = f"/tmp/procwindow-stop-{proc_id}-{time.monotonic_ns()}"
        asked = c.call(
            "run",
            session="s",
            agent="a",
            argv=["sh", "-c", f"echo ready; until test -f {flag}; do sleep 0.05; done; exit 4"],
            stop_command=["touch", flag],
        )["id"]
        assert _proc(c, asked)["stop_command"] == ["touch", flag]
        _until(lambda: c.call("out", proc=asked)["lines"], what="ready")
        assert c.call("term", proc=asked)["code"] == 4
    os.unlink(flag)
    reply = server.request(
        {"op": "run", "session": "s", "agent": "a", "argv": ["true"], "stop_command": []}
    )
    assert reply["error"]["message"] == "stop_command must not be empty", reply
