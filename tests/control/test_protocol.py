"""Bad input on the control socket: a clear error, and everyone carries on."""

from __future__ import annotations

import json
import socket
import time

import pytest

from procwindow.control._protocol import PROTOCOL_VERSION

from .conftest import read_message


def _still_serving(server):
    reply = server.request({"op": "idx", "id": "check"})
    assert reply["ok"] is True
    assert reply["id"] == "check"
    assert reply["result"]["text"].startswith("pid\tstatus")


@pytest.mark.parametrize(
    ("line", "code", "fact"),
    [
        (b"this is not json\n", "malformed", "not a JSON object"),
        (b"[1, 2, 3]\n", "malformed", "a request is a JSON object"),
        (b'{"id": 1}\n', "malformed", "missing 'op'"),
        (b'{"op": "frobnicate"}\n', "unknown-op", "unknown request 'frobnicate'"),
        (
            b'{"op": "idx", "colour": "red"}\n',
            "bad-field",
            "unknown field 'colour': idx takes session, agent",
        ),
        (
            b'{"op": "term", "proc": "five"}\n',
            "bad-field",
            "proc must be an integer of at least 1, got 'five'",
        ),
        (b'{"op": "idx", "v": 99}\n', "version", "protocol version 99"),
        (b'{"op": "idx", "v": 2}\n', "version", "protocol version 2 is not supported"),
        (b'{"op": "events", "pattern": "a..b"}\n', "invalid-pattern", "invalid pattern"),
        (b'{"op": "run", "session": "s", "agent": "a"}\n', "invalid-argv", "exactly one of argv"),
        (
            b'{"op": "run", "session": "s*x", "agent": "a", "argv": ["true"]}\n',
            "invalid-scope",
            "may not contain",
        ),
        (b'\xff\xfe{"op"\n', "malformed", "not a JSON object"),
    ],
)
def test_bad_requests_get_clear_errors_on_a_live_connection(server, line, code, fact):
    with server.connect() as sock:
        reply = server.request(line, sock)
        assert reply["ok"] is False
        assert fact in reply["error"]["message"]
        assert reply["error"]["code"] == code
        # the same connection still works
        ok = server.request({"op": "hello", "id": 2}, sock)
        assert ok["ok"] is True
        assert ok["result"]["protocol"] == PROTOCOL_VERSION
    _still_serving(server)


def test_unknown_id_is_proc_not_found(server):
    for op in ("term", "kill", "interrupt", "dismiss", "restart", "out"):
        reply = server.request({"op": op, "proc": 404})
        assert reply["ok"] is False
        assert reply["error"] == {
            "type": "ProcNotFound",
            "code": "proc-not-found",
            "message": "no such proc: 404",
            "proc_id": 404,
        }
    _still_serving(server)


def test_out_with_proc_ends_with_the_proc_as_get_gives_it(server):
    started = server.request(
        {"op": "run", "session": "s", "agent": "a", "argv": ["sh", "-c", "echo a; echo b"]}
    )
    proc = started["result"]["id"]
    assert server.request({"op": "wait", "proc": proc})["ok"] is True
    reply = server.request({"op": "out", "proc": proc, "with_proc": True})["result"]
    assert [line["text"] for line in reply["lines"]] == ["a", "b"]
    got = server.request({"op": "get", "proc": proc})["result"]
    assert reply["proc"]["id"] == proc and reply["proc"]["session"] == "s"
    assert reply["proc"]["state"] == got["state"] == "exited"
    assert reply["proc"]["exit"] == got["exit"]
    plain = server.request({"op": "out", "proc": proc})["result"]
    assert "proc" not in plain


#: A flood of short lines, one line of 100,000 x's (split into pieces), and a prompt.
_RUNS_CHILD = (
    "import sys, time\n"
    "sys.stdout.write(''.join(f'line {i}\\n' for i in range(3000))); sys.stdout.flush()\n"
    "sys.stderr.write('err\\n'); sys.stderr.flush(); time.sleep(0.2)\n"
    "sys.stdout.write('x' * 100000 + '\\n' + 'name? '); sys.stdout.flush()\n"
    "sys.stdin.readline()\n"
)


def test_out_with_runs_says_what_out_says_in_fewer_elements(server):
    """``runs``: a flood comes as a few ``[first, stream, time, [texts]]`` arrays; a split
    piece and a partial line stay objects; decoded, every line is the one ``out`` gives
    without it (seq, stream, time, text, flags), in the same order."""
    started = server.request(
        {
            "op": "run",
            "session": "s",
            "agent": "a",
            "argv": ["python3", "-c", _RUNS_CHILD],
            "stdin": True,
        }
    )
    proc = started["result"]["id"]
    waited = server.request(
        {"op": "wait_for", "proc": proc, "pattern": "^name\\? $", "timeout": 20}
    )
    assert waited["ok"] is True, waited
    plain = server.request({"op": "out", "proc": proc, "partial": True})["result"]
    runs = server.request({"op": "out", "proc": proc, "partial": True, "runs": True})["result"]
    arrays = [e for e in runs["lines"] if type(e) is list]
    objects = [e for e in runs["lines"] if type(e) is dict]
    assert len(plain["lines"]) > 3000
    assert 1 <= len(arrays) <= 10, len(arrays)  # the 3,000 short lines and "err"
    assert all(e.get("split") or e.get("partial") for e in objects)
    assert objects[-1] == plain["lines"][-1] == {**objects[-1], "text": "name? ", "partial": True}
    decoded = []
    for e in runs["lines"]:
        if type(e) is list:
            first, stream, when, texts = e
            decoded += [
                {"seq": first + i, "stream": stream, "time": when, "text": t}
                for i, t in enumerate(texts)
            ]
        else:
            decoded.append(e)
    assert decoded == plain["lines"]
    assert {k: runs[k] for k in ("dropped", "cursor", "eof")} == {
        k: plain[k] for k in ("dropped", "cursor", "eof")
    }
    assert server.request({"op": "write", "proc": proc, "data": "\n"})["ok"] is True
    assert server.request({"op": "wait", "proc": proc})["ok"] is True


def test_request_over_the_size_limit_is_refused(server):
    with server.connect() as sock:
        huge = b'{"op": "idx", "pad": "' + b"x" * (1024 * 1024 + 10) + b'"}\n'
        try:
            sock.sendall(huge)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server may close before reading it all
        reply = read_message(sock)
        assert reply["ok"] is False
        assert reply["error"]["code"] == "too-large"
    _still_serving(server)


def test_client_leaving_mid_stream(server):
    server.ctl(
        "run",
        "--session",
        "s",
        "--agent",
        "a",
        "--",
        "sh",
        "-c",
        "yes | head -c 50000000; sleep 60",
    )
    for request in ({"op": "events", "pattern": ">"}, {"op": "out", "proc": 1, "follow": True}):
        sock = server.connect()
        sock.sendall(json.dumps(request).encode() + b"\n")
        read_message(sock)
        sock.close()  # gone without a word, mid-stream
    _still_serving(server)
    assert server.ctl("kill", "1").returncode == 0


@pytest.mark.slow  # 3,000 spawns; test_control_faults has the fast form of this promise
def test_a_client_that_stops_reading_stalls_nobody(server):
    # One client subscribes to everything and to a flood of output, and never reads.
    stuck_events = server.connect()
    stuck_events.sendall(b'{"op": "events", "pattern": ">"}\n')
    stuck_out = server.connect()
    server.ctl(
        "run",
        "--session",
        "s",
        "--agent",
        "a",
        "--",
        "sh",
        "-c",
        "yes procwindow | head -c 30000000",
    )
    stuck_out.sendall(b'{"op": "out", "proc": 1, "follow": true}\n')
    # Meanwhile others are served, processes start, and capture runs to the end.
    # 3,000 pipelined runs make some 6,000 events: more than the stuck client's
    # queue (1,024) and socket buffers (a few hundred KiB) hold.
    with server.connect() as busy:
        busy.sendall(
            b"".join(
                json.dumps(
                    {"op": "run", "id": i, "session": "s", "agent": "b", "argv": ["true"]}
                ).encode()
                + b"\n"
                for i in range(3000)
            )
        )
        replies = [read_message(busy) for _ in range(3000)]
    assert [r["result"]["id"] for r in replies] == list(range(2, 3002))
    assert server.ctl("run", "--session", "s", "--agent", "b", "--", "true").stdout == "3002\n"
    deadline = time.monotonic() + 30
    while True:
        row = server.ctl("idx", "--agent", "a").stdout.splitlines()[1].split("\t")
        if row[1] == "exited":
            break
        assert time.monotonic() < deadline
        time.sleep(0.1)
    procs = json.loads(server.ctl("--json", "idx", "--agent", "a").stdout)
    assert procs[0]["exit"]["code"] == 0
    # the stuck subscriber was told, when it finally reads, that it missed events
    stuck_events.settimeout(5)
    missed = received = 0
    try:
        while not missed:
            missed = read_message(stuck_events).get("event", {}).get("missed", 0)
            received += 1
    except TimeoutError:
        pass
    stuck_events.close()
    stuck_out.close()
    assert missed > 0, f"read {received} events, none reported missed ones"
    _still_serving(server)


def test_many_clients_at_once(server):
    socks = [server.connect() for _ in range(50)]
    try:
        for i, sock in enumerate(socks):
            sock.sendall(json.dumps({"op": "hello", "id": i}).encode() + b"\n")
        for i, sock in enumerate(socks):
            assert read_message(sock)["id"] == i
    finally:
        for sock in socks:
            sock.close()
    _still_serving(server)


def test_truncated_request_at_disconnect(server):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(server.path)
        sock.sendall(b'{"op": "id')
        sock.shutdown(socket.SHUT_WR)
        reply = read_message(sock)
        assert reply["error"]["code"] == "malformed"
    _still_serving(server)
