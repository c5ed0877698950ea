"""History over the control socket: `history`, `search`, `forget`, `dismiss` that keeps,
`out` of past procs and the mark where the disk cap cut lines.

Most tests drive a real `procwindow serve` with `procwindow ctl`; the streaming and cut
details use a ControlServer in this process, on a real socket, with real children.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import itertools
import json
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from procwindow import Supervisor
from procwindow.control import ControlServer, default_socket_path
from procwindow.control._protocol import PROTOCOL_VERSION
from procwindow.control.ctl import parse_since
from procwindow.core import format_size

from ..core.helpers import alive, py
from .conftest import Server, isolated_env, start_server, stop_server

#: A proc that writes 20,000 stdout lines and 21 stderr ones: about 220 KB, so a
#: 64 KiB disk cap cuts its middle. Its last line, "err end", is written last, once
#: the supervisor has read all of stdout (its pipe is empty): the two pipes are read
#: in no set order, and written at once, "err end" could come before stdout's last
#: block and be cut with the middle. So it is in the tail the cap keeps.
BIG = py(
    """
    import fcntl, struct, sys, termios, time
    for i in range(20000):
        print(f"line {i}")
        if i % 1000 == 0:
            print(f"err {i}", file=sys.stderr)
    sys.stdout.flush()
    unread = lambda: struct.unpack("i", fcntl.ioctl(1, termios.FIONREAD, b"\\0" * 4))[0]
    while unread():
        time.sleep(0.001)
    print("err end", file=sys.stderr)
    """
)
BIG_LINES = 20021
#: As BIG, but its stderr lines all come first (in the head the cap keeps).
EARLY_ERR = py(
    """
    import sys
    for i in range(5):
        print(f"err {i}", file=sys.stderr)
    for i in range(20000):
        print(f"line {i}")
    """
)
SMALL_CAP = 65536


def _wait(cond: Callable[[], object], timeout: float = 15.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.05)


def _run(server: Server, *argv: str, session: str = "s", agent: str = "a", **opts: str) -> int:
    extra = [x for k, v in opts.items() for x in (f"--{k}", v)]
    done = server.ctl("run", "--session", session, "--agent", agent, *extra, "--", *argv)
    return int(done.stdout)


def _history(server: Server, **filters: Any) -> list[dict[str, Any]]:
    reply = server.request({"op": "history", **filters})
    assert reply["ok"] is True, reply
    return reply["result"]


def _ids(server: Server, *args: str) -> list[int]:
    """Ids that ``ctl --json history ARGS`` lists."""
    return [p["id"] for p in json.loads(server.ctl("--json", "history", *args).stdout)]


def _wait_done(server: Server, *ids: int) -> None:
    """Until each proc has exited and its output is complete."""

    def done() -> bool:
        for proc_id in ids:
            reply = server.request({"op": "out", "proc": proc_id, "since": 1 << 40})
            if not reply["result"]["eof"]:
                return False
        return True

    _wait(done)


def _json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(x) for x in text.splitlines()]


def _one_line_error(done: subprocess.CompletedProcess[str], code: int, *facts: str) -> None:
    assert done.returncode == code, (done.returncode, done.stderr)
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("procwindow ctl: ")
    assert "Traceback" not in done.stderr
    for fact in facts:
        assert fact in done.stderr


# -- history -----------------------------------------------------------------------------


def test_history_lists_procs_newest_first_and_filters(server):
    a = _run(server, "sh", "-c", "echo a", session="s1", agent="x")
    b = _run(server, "sh", "-c", "exit 3", session="s1", agent="y", tool="build")
    c = _run(server, "sleep", "60", session="s2", agent="x")
    _wait_done(server, a, b)
    assert server.ctl("kill", str(c)).returncode == 0

    procs = _history(server)
    assert [p["id"] for p in procs] == [c, b, a]
    assert [(p["state"], p["exit"]["code"], p["exit"]["reason"]) for p in procs] == [
        ("exited", 137, "killed"),
        ("exited", 3, "failed"),
        ("exited", 0, "exited"),
    ]
    assert [(p["session"], p["agent"], p["tool"]) for p in procs] == [
        ("s2", "x", "shell"),
        ("s1", "y", "build"),
        ("s1", "x", "shell"),
    ]
    assert all(p["live"] is True and p["cut_lines"] == 0 == p["cut_bytes"] for p in procs)
    assert procs[1]["cmd"] == "sh -c 'exit 3'"

    assert _ids(server, "--session", "s1") == [b, a]
    assert _ids(server, "--agent", "x") == [c, a]
    assert _ids(server, "--session", "s1", "--agent", "x") == [a]
    assert _ids(server, "--tool", "build") == [b]
    assert _ids(server, "--reason", "failed") == [b]
    assert _ids(server, "--reason", "lost") == []
    assert _ids(server, "--limit", "2") == [c, b]
    assert _ids(server, "--command", "EXIT 3") == [b]  # the line as shown, any case
    assert _ids(server, "--command", "sh -c") == [b, a]
    assert _ids(server, "--command", "sh -c", "--session", "s1", "--limit", "1") == [b]
    assert _ids(server, "--command", "nothing like it") == []
    assert _ids(server, "--since", "1h") == [c, b, a]
    assert _ids(server, "--since", "@" + str(time.time() + 3600)) == []
    hour_ago = datetime.datetime.now() - datetime.timedelta(hours=1)
    assert _ids(server, "--since", hour_ago.isoformat(timespec="minutes")) == [c, b, a]
    assert _ids(server, "--since", (hour_ago + datetime.timedelta(hours=2)).isoformat()) == []
    # --json after the verb does as before it
    assert [p["id"] for p in json.loads(server.ctl("history", "--json").stdout)] == [c, b, a]

    table = server.ctl_process("history").stdout.splitlines()  # the real command, once
    assert table[0].split() == [
        "ID",
        "SCOPE",
        "TOOL",
        "STATUS",
        "EXIT",
        "STARTED",
        "RUNTIME",
        "COMMAND",
    ]
    assert [row.split()[0] for row in table[1:]] == [str(c), str(b), str(a)]
    row_b = table[2]
    assert row_b.split()[:6] == [str(b), "s1/y", "build", "exited", "3", "failed"]
    assert time.strftime("%Y-%m-%d ") in row_b
    assert row_b.endswith("  sh -c 'exit 3'")

    _one_line_error(server.ctl("history", "--since", "5", check=False), 2, "--since")
    _one_line_error(server.ctl("history", "--since", "soon", check=False), 2, "30m")
    for request, fact in (
        (
            {"reason": "nope"},
            "reason must be one of exited, failed, terminated, killed, escalated, lost,",
        ),
        ({"since": "yesterday"}, "since must be a time in Unix seconds, got 'yesterday'"),
        ({"since": True}, "since must be a time in Unix seconds, got True"),
        ({"limit": 0}, "limit must be an integer of at least 1, got 0"),
        ({"session": 5}, "session must be a string, got 5"),
        ({"pattern": "x"}, "unknown field 'pattern': history takes session, agent,"),
    ):
        reply = server.request({"op": "history", **request})
        assert reply["ok"] is False
        assert reply["error"]["code"] == "bad-field"
        assert fact in reply["error"]["message"]


def test_since_accepts_durations_dates_and_epochs():
    now = 1_700_000_000.0
    assert parse_since("90s", now) == now - 90
    assert parse_since("30m", now) == now - 1800
    assert parse_since("1h30m", now) == now - 5400
    assert parse_since("2d", now) == now - 2 * 86400
    assert parse_since("1.5h", now) == now - 5400
    assert parse_since("1w", now) == now - 7 * 86400
    assert parse_since("@1234.5", now) == 1234.5
    assert parse_since("2024-05-01T12:00:00+00:00", now) == 1714564800.0
    assert parse_since("2024-05-01", now) == datetime.datetime(2024, 5, 1).timestamp()
    for bad in ("5", "", "m", "-3h", "@soon", "yesterday"):
        with pytest.raises(ValueError, match="--since: cannot read"):
            parse_since(bad, now)


def test_ids_continue_after_a_restart_and_the_earlier_run_reads_the_same(tmp_path):
    srv = start_server(tmp_path)
    try:
        first = _run(srv, "sh", "-c", "echo one; echo two >&2; echo three")
        _wait_done(srv, first)
        before = srv.ctl("out", str(first))
        before_json = srv.ctl("--json", "out", str(first)).stdout
    finally:
        assert stop_server(srv) == 0
    assert (before.stdout, before.stderr) == ("one\nthree\n", "two\n")

    srv = start_server(tmp_path)
    try:
        second = _run(srv, "sh", "-c", "echo again")
        assert second == first + 1  # not 1 again
        _wait_done(srv, second)
        assert [row.split("\t")[0] for row in srv.ctl("idx").stdout.splitlines()[1:]] == [
            str(second)
        ]
        after = srv.ctl("out", str(first))
        assert (after.stdout, after.stderr) == (before.stdout, before.stderr)
        assert srv.ctl("--json", "out", str(first)).stdout == before_json
        rest = srv.ctl("out", str(first), "--since", "1")
        assert len((rest.stdout + rest.stderr).splitlines()) == 2

        # following a proc of the earlier run prints it and ends
        follow = _json_lines(srv.ctl("--json", "out", str(first), "--follow").stdout)
        assert [x["text"] for x in follow[:-1]] == [x["text"] for x in _json_lines(before_json)]
        assert follow[-1]["end"]["eof"] is True
        assert follow[-1]["end"]["exit"]["code"] == 0

        procs = _history(srv)
        assert [(p["id"], p["live"]) for p in procs] == [(second, True), (first, False)]
        assert procs[1]["exit"]["reason"] == "exited"
        assert procs[1]["cmd"] == "sh -c 'echo one; echo two >&2; echo three'"
        assert srv.ctl("search", "three").stdout == f"{first}:{_seq(before_json, 'three')}: three\n"
        # the earlier run's proc can be restarted: a new id, the same command
        third = int(srv.ctl("restart", str(first)).stdout)
        assert third == second + 1
        _wait_done(srv, third)
        assert srv.ctl("out", str(third)).stdout == "one\nthree\n"
    finally:
        assert stop_server(srv) == 0


def _seq(out_json: str, text: str) -> int:
    return next(x["seq"] for x in _json_lines(out_json) if x["text"] == text)


def test_a_proc_of_a_server_that_died_is_lost_and_still_readable(tmp_path):
    srv = start_server(tmp_path)
    try:
        proc_id = _run(srv, "sh", "-c", "echo before-crash; exec sleep 60")
        _wait(lambda: srv.ctl("out", str(proc_id)).stdout == "before-crash\n")
        os_pid = _history(srv)[0]["os_pid"]
    finally:
        assert stop_server(srv, signal.SIGKILL) == -signal.SIGKILL
    _wait(lambda: not alive(os_pid), timeout=20)  # its watchdog stopped it

    srv = start_server(tmp_path)
    try:
        lost = json.loads(srv.ctl("--json", "history", "--reason", "lost").stdout)
        assert [(p["id"], p["live"], p["exit"]["code"]) for p in lost] == [(proc_id, False, 255)]
        assert srv.ctl("out", str(proc_id)).stdout == "before-crash\n"
        follow = _json_lines(srv.ctl("--json", "out", str(proc_id), "--follow").stdout)
        assert follow[-1]["end"]["exit"]["reason"] == "lost"
        assert _run(srv, "true") == proc_id + 1
    finally:
        assert stop_server(srv) == 0


# -- search -------------------------------------------------------------------------------


def test_search_prints_matching_lines_like_grep(server):
    p1 = _run(
        server,
        "sh",
        "-c",
        "echo 'first Needle'; echo plain; echo 'needle on stderr' >&2; echo -x marks",
        session="s1",
    )
    p2 = _run(server, "sh", "-c", "echo needle7; echo NEEDLE8", session="s2")
    _wait_done(server, p1, p2)
    outs = {p: _json_lines(server.ctl("--json", "out", str(p)).stdout) for p in (p1, p2)}

    def expected(keep: Callable[[str], bool], *procs: int) -> str:
        return "".join(
            f"{p}:{x['seq']}: {x['text']}\n" for p in procs for x in outs[p] if keep(x["text"])
        )

    # newest procs first, each one's lines in order; case-insensitive by default
    assert server.ctl_process("search", "needle").stdout == expected(
        lambda t: "needle" in t.lower(), p2, p1
    )
    assert server.ctl("search", "NEEDLE", "--case-sensitive").stdout == expected(
        lambda t: "NEEDLE" in t, p2
    )
    assert server.ctl("search", "--regex", r"needle\d").stdout == expected(
        lambda t: t.lower().startswith("needle") and t[-1].isdigit(), p2
    )
    assert server.ctl("search", "-E", "-s", r"^needle\d$").stdout == f"{p2}:1: needle7\n"
    assert server.ctl("search", "needle", "--session", "s1").stdout == expected(
        lambda t: "needle" in t.lower(), p1
    )
    assert server.ctl("search", "needle", "--proc", str(p1)).stdout == expected(
        lambda t: "needle" in t.lower(), p1
    )
    assert server.ctl("search", "needle", "--since", "1h").stdout.count("\n") == 4
    later = server.ctl("search", "needle", "--since", "@" + str(time.time() + 60), check=False)
    assert (later.returncode, later.stdout) == (1, "")
    assert server.ctl("search", "--", "-x").stdout == expected(lambda t: "-x" in t, p1)
    limited = server.ctl("search", "needle", "--limit", "1")
    assert limited.stdout == expected(lambda t: t == "needle7", p2)

    hits = _json_lines(server.ctl("--json", "search", "on stderr").stdout)
    line = next(x for x in outs[p1] if x["text"] == "needle on stderr")
    assert hits == [
        {"proc": p1, "session": "s1", "agent": "a", **line},
        {"end": {"hits": 1, "limited": False}},
    ]
    assert line["stream"] == "stderr"
    end = _json_lines(server.ctl("search", "needle", "--limit", "2", "--json").stdout)[-1]
    assert end == {"end": {"hits": 2, "limited": True}}

    # a dismissed proc is still searched
    server.ctl("dismiss", str(p1))
    assert server.ctl("search", "first").stdout == expected(lambda t: t == "first Needle", p1)

    nothing = server.ctl("search", "haystack", check=False)
    assert (nothing.returncode, nothing.stdout, nothing.stderr) == (1, "", "")
    _one_line_error(server.ctl("search", "--regex", "(", check=False), 2, "InvalidPattern", "'('")
    _one_line_error(server.ctl("search", "", check=False), 2, "InvalidPattern", "non-empty")
    _one_line_error(server.ctl("search", check=False), 2, "needs a PATTERN")
    reply = server.request({"op": "search", "pattern": "x", "proc": 0})
    assert reply["error"]["code"] == "bad-field"
    reply = server.request({"op": "search", "pattern": "x", "regex": "yes"})
    assert "regex must be true or false, got 'yes'" in reply["error"]["message"]
    reply = server.request({"op": "search"})
    assert reply["error"]["message"] == "pattern is required"


@contextlib.asynccontextmanager
async def _served(
    tmp_path: Path, **options: Any
) -> AsyncIterator[tuple[Supervisor, ControlServer]]:
    async with (
        Supervisor(state_dir=tmp_path / "state", graceful_timeout=0.5, **options) as sup,
        ControlServer(sup, default_socket_path("t")) as server,
    ):
        yield sup, server


async def _complete(sup: Supervisor, proc_id: int) -> None:
    """Until the proc has exited and its output is complete."""
    await sup.wait(proc_id)
    for _ in range(500):
        if sup.read(proc_id, 1 << 40).eof:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("its output never ended")


async def _messages(path: str, request: dict[str, Any]) -> list[dict[str, Any]]:
    """Every message of a request, up to and with its final reply."""
    reader, writer = await asyncio.open_unix_connection(path, limit=64 * 1024 * 1024)
    try:
        writer.write(json.dumps(request).encode() + b"\n")
        out = []
        while not out or "ok" not in out[-1]:
            out.append(json.loads(await asyncio.wait_for(reader.readline(), 20)))
        return out
    finally:
        writer.close()
        await writer.wait_closed()


def test_search_streams_hits_and_stops_when_the_client_leaves(tmp_path):
    async def main() -> None:
        async with _served(tmp_path) as (sup, server):
            p = await sup.spawn(
                ["sh", "-c", "for i in 1 2 3; do echo hit $i; done"], session="s", agent="a"
            )
            await _complete(sup, p.id)
            messages = await _messages(server.path, {"op": "search", "id": 1, "pattern": "HIT"})
            assert [m["hit"]["text"] for m in messages[:-1]] == ["hit 1", "hit 2", "hit 3"]
            assert all(
                "ok" not in m and m["id"] == 1 and m["v"] == PROTOCOL_VERSION for m in messages[:-1]
            )
            assert messages[-1]["result"] == {"hits": 3, "limited": False}

            # A search that finds a hit, then scans on (as through gigabytes) for the
            # next: the hit reaches the client at once, and the scan stops when it leaves.
            real = sup.search
            closed = asyncio.Event()

            def slow_search(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
                hits = real(*args, **kwargs)

                async def one_then_scan() -> AsyncIterator[Any]:
                    try:
                        async for hit in hits:
                            yield hit
                            await asyncio.Event().wait()
                    finally:
                        closed.set()
                        await hits.aclose()  # type: ignore[attr-defined]

                return one_then_scan()

            sup.search = slow_search  # type: ignore[method-assign]
            reader, writer = await asyncio.open_unix_connection(server.path)
            writer.write(b'{"op": "search", "id": 2, "pattern": "hit"}\n')
            first = json.loads(await asyncio.wait_for(reader.readline(), 20))
            assert first["hit"] == {
                "proc": p.id,
                "session": "s",
                "agent": "a",
                "seq": 1,
                "stream": "stdout",
                "time": first["hit"]["time"],
                "text": "hit 1",
            }
            await asyncio.sleep(0.2)
            assert not closed.is_set()
            writer.close()
            await writer.wait_closed()
            await asyncio.wait_for(closed.wait(), 10)
            sup.search = real  # type: ignore[method-assign]
            hello = await _messages(server.path, {"op": "hello"})
            assert hello[-1]["result"]["protocol"] == PROTOCOL_VERSION

    asyncio.run(main())


# -- dismiss and forget --------------------------------------------------------------------


def test_dismiss_keeps_the_history_and_forget_deletes_it(server, tmp_path):
    logs = tmp_path / "state" / "procwindow" / "logs"

    def files(proc_id: int) -> list[str]:
        return sorted(f.name for f in logs.iterdir() if f.name.startswith(f"{proc_id}."))

    p = _run(server, "sh", "-c", "echo kept; echo also >&2")
    _wait_done(server, p)
    assert files(p) == [f"{p}.journal", f"{p}.stderr.log", f"{p}.stdout.log"]

    assert server.ctl("dismiss", str(p)).stdout == f"{p}: dismissed\n"
    assert server.ctl("idx").stdout.count("\n") == 1  # the header only
    assert [(x["id"], x["live"]) for x in _history(server)] == [(p, False)]
    out = server.ctl("out", str(p))
    assert (out.stdout, out.stderr) == ("kept\n", "also\n")
    follow = _json_lines(server.ctl("--json", "out", str(p), "--follow").stdout)
    assert [x.get("text") for x in follow[:-1]] in (["kept", "also"], ["also", "kept"])
    assert follow[-1]["end"]["eof"] is True
    assert files(p) == [f"{p}.journal", f"{p}.stderr.log", f"{p}.stdout.log"]
    reply = server.request({"op": "dismiss", "proc": p, "keep_logs": True})
    assert reply["error"]["code"] == "bad-field"
    assert "unknown field 'keep_logs': dismiss takes proc" in reply["error"]["message"]

    assert server.ctl("forget", str(p)).stdout == f"{p}: forgotten\n"
    assert _history(server) == []
    assert files(p) == []
    _one_line_error(server.ctl("out", str(p), check=False), 1, f"ProcNotFound: no such proc: {p}")
    assert server.ctl("search", "kept", check=False).returncode == 1
    _one_line_error(server.ctl("forget", str(p), check=False), 1, "ProcNotFound")

    running = _run(server, "sleep", "60")
    _one_line_error(server.ctl("forget", str(running), check=False), 1, "ProcRunning")
    assert [x["id"] for x in _history(server)] == [running]
    server.ctl("kill", str(running))
    # a live, exited proc is dismissed and deleted at once
    assert json.loads(server.ctl("--json", "forget", str(running)).stdout) == {}
    assert server.ctl("idx").stdout.count("\n") == 1
    assert _history(server) == []
    assert files(running) == []


def test_ctl_help_says_what_dismiss_and_forget_do(tmp_path):
    env, _ = isolated_env(tmp_path)

    def help_of(verb: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "procwindow", "ctl", verb, "--help"],
            capture_output=True,
            text=True,
            env=env,
            timeout=30,
        )
        assert done.returncode == 0, done.stderr
        return " ".join(done.stdout.split())

    dismiss = help_of("dismiss")
    assert "its history and logs are kept" in dismiss
    assert "--keep-logs" not in dismiss
    assert "delete an exited process for good" in help_of("forget")


# -- lines the disk cap cut ----------------------------------------------------------------


def test_out_marks_the_lines_the_disk_cap_cut(tmp_path):
    """A proc recorded by a supervisor with a 64 KiB cap, read by a later `serve`."""

    async def record() -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        state = tmp_path / "state" / "procwindow"
        async with Supervisor(state_dir=state, log_cap=SMALL_CAP, graceful_timeout=0.5) as sup:
            big = await sup.spawn(BIG, session="s", agent="a")
            early = await sup.spawn(EARLY_ERR, session="s", agent="a")
            await _complete(sup, big.id)
            await _complete(sup, early.id)
            return (big.id, big.cut_lines, big.cut_bytes), (
                early.id,
                early.cut_lines,
                early.cut_bytes,
            )

    (proc_id, cut_lines, cut_bytes), early = asyncio.run(record())
    assert cut_lines > 10000 and cut_bytes > 100_000
    srv = start_server(tmp_path)
    try:
        past = _history(srv)[1]
        assert (past["id"], past["live"]) == (proc_id, False)
        assert (past["cut_lines"], past["cut_bytes"]) == (cut_lines, cut_bytes)

        lines = _json_lines(srv.ctl("--json", "out", str(proc_id)).stdout)
        assert lines[0] == {"dropped": cut_lines}
        lines = lines[1:]
        assert len(lines) + cut_lines == BIG_LINES
        (gap,) = [i for i, x in enumerate(lines) if "cut" in x]
        assert lines[gap]["cut"] == cut_lines
        assert lines[gap]["seq"] == lines[gap - 1]["seq"] + cut_lines + 1
        assert [x["seq"] for x in lines] == [
            *range(1, lines[gap - 1]["seq"] + 1),
            *range(lines[gap]["seq"], BIG_LINES + 1),
        ]

        marker = f"[… {cut_lines:,} lines ({format_size(cut_bytes)}) cut …]"
        out = srv.ctl("out", str(proc_id))
        assert out.stderr.splitlines().count(marker) == 1
        stdout = out.stdout.splitlines()
        assert stdout[0] == "line 0" and stdout[-1] == "line 19999"
        assert out.stderr.splitlines()[-1] == "err end"
        # in a merged view the mark stands where the lines are missing
        merged = subprocess.run(
            [sys.executable, "-m", "procwindow", "ctl", "--socket", srv.path, "out", str(proc_id)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=srv.env,
            timeout=30,
        ).stdout.splitlines()
        at = merged.index(marker)
        head = [x for x in merged[:at] if x.startswith("line ")]
        tail = [x for x in merged[at + 1 :] if x.startswith("line ")]
        assert head + tail == stdout
        assert int(tail[0].split()[1]) > int(head[-1].split()[1]) + 1

        follow = srv.ctl("out", str(proc_id), "--follow")
        assert follow.stdout == out.stdout
        assert follow.stderr.splitlines().count(marker) == 1
        # with --stream, the mark lands on the next line of that stream
        errs = _json_lines(srv.ctl("--json", "out", str(proc_id), "--stream", "stderr").stdout)
        assert errs[0] == {"dropped": cut_lines}
        marked = [x for x in errs[1:] if "cut" in x]
        assert [x["cut"] for x in marked] == [cut_lines]
        first_err = next(x for x in lines[gap:] if x["stream"] == "stderr")
        assert marked[0] == {**first_err, "cut": cut_lines}
        assert all(x["stream"] == "stderr" for x in errs[1:])
        assert errs[-1]["text"] == "err end"
        only_err = srv.ctl("out", str(proc_id), "--stream", "stderr")
        assert only_err.stdout == ""
        assert only_err.stderr.splitlines().count(marker) == 1
        # no line of that stream after the gap: it is marked at the end
        early_id, early_cut, early_bytes = early
        errs = _json_lines(srv.ctl("--json", "out", str(early_id), "--stream", "stderr").stdout)
        assert errs[0] == {"dropped": early_cut}
        assert [x["text"] for x in errs[1:]] == [f"err {i}" for i in range(5)]
        assert not any("cut" in x for x in errs[1:])
        only_err = srv.ctl("out", str(early_id), "--stream", "stderr")
        assert only_err.stderr.splitlines() == [
            *(f"err {i}" for i in range(5)),
            f"[… {early_cut:,} lines ({format_size(early_bytes)}) cut …]",
        ]
        # the mark survives reading in pages: each page starts where the last ended
        assert _paged_cuts(srv, proc_id, 1000) == [(lines[gap]["seq"], cut_lines)]
    finally:
        assert stop_server(srv) == 0


def _paged_cuts(server: Server, proc_id: int, page: int) -> list[tuple[int, int]]:
    """The (seq, cut) marks met reading a proc ``page`` lines at a time."""
    marks: list[tuple[int, int]] = []
    cursor, dropped = 0, 0
    with server.connect() as sock:
        f = sock.makefile("rb")
        while True:
            sock.sendall(
                json.dumps({"op": "out", "proc": proc_id, "since": cursor, "limit": page}).encode()
                + b"\n"
            )
            reply = json.loads(f.readline())["result"]
            marks += [(x["seq"], x["cut"]) for x in reply["lines"] if "cut" in x]
            dropped += reply["dropped"]
            if reply["eof"]:
                break
            cursor = reply["cursor"]
        f.close()
    assert dropped == sum(cut for _, cut in marks)
    return marks


def test_out_of_a_live_proc_marks_the_cut_in_replies_and_batches(tmp_path):
    """Lines gone from the ring and cut from disk, read from a live proc. The ring
    (200 lines) is smaller than the tail the cap keeps on disk (at least cap / 8:
    some 700 lines), so every line cut is gone from memory too."""

    async def main() -> None:
        async with _served(tmp_path, log_cap=SMALL_CAP, ring_lines=200) as (sup, server):
            p = await sup.spawn(BIG, session="s", agent="a")
            await _complete(sup, p.id)
            assert p.cut_lines > 10000

            (reply,) = await _messages(server.path, {"op": "out", "proc": p.id})
            result = reply["result"]
            marks = [x["cut"] for x in result["lines"] if "cut" in x]
            assert marks == [p.cut_lines] == [result["dropped"]]
            assert result["cut_bytes"] == p.cut_bytes
            assert result["eof"] is True
            assert len(result["lines"]) + p.cut_lines == BIG_LINES

            batches = await _messages(server.path, {"op": "out", "proc": p.id, "follow": True})
            marks = [x["cut"] for m in batches[:-1] for x in m["lines"] if "cut" in x]
            assert marks == [p.cut_lines]
            assert sum(m["dropped"] for m in batches[:-1]) == p.cut_lines
            assert batches[-1]["result"]["eof"] is True
            assert batches[-1]["result"]["exit"]["code"] == 0

            # A page that stops just before the gap counts it (dropped: the lines
            # after since, up to its cursor, that are gone); a page from its cursor
            # does not count them again. One read from right before the gap opens
            # with the mark.
            seqs = [x["seq"] for x in result["lines"]]
            before_gap = next(s for s, t in itertools.pairwise(seqs) if t != s + 1)
            (page,) = await _messages(
                server.path, {"op": "out", "proc": p.id, "since": before_gap - 2, "limit": 2}
            )
            assert [x["seq"] for x in page["result"]["lines"]] == [before_gap - 1, before_gap]
            assert page["result"]["dropped"] == p.cut_lines
            assert page["result"]["cursor"] == before_gap + p.cut_lines
            (after,) = await _messages(
                server.path,
                {"op": "out", "proc": p.id, "since": page["result"]["cursor"], "limit": 1},
            )
            assert after["result"]["dropped"] == 0
            assert [x["seq"] for x in after["result"]["lines"]] == [before_gap + p.cut_lines + 1]
            (page,) = await _messages(
                server.path, {"op": "out", "proc": p.id, "since": before_gap, "limit": 1}
            )
            (line,) = page["result"]["lines"]
            assert (line["seq"], line["cut"]) == (before_gap + p.cut_lines + 1, p.cut_lines)
            assert page["result"]["dropped"] == p.cut_lines

    asyncio.run(main())


# -- without history -------------------------------------------------------------------------


def test_without_history_search_out_and_the_cut_mark_still_work(tmp_path):
    async def main() -> None:
        options = {"history": False, "ring_lines": 200, "log_cap": SMALL_CAP}
        async with _served(tmp_path, **options) as (sup, server):
            small = await sup.spawn(
                py("for i in range(2000): print(f'line {i}')"), session="s", agent="a"
            )
            big = await sup.spawn(BIG, session="s", agent="b")
            await _complete(sup, small.id)
            await _complete(sup, big.id)

            (reply,) = await _messages(server.path, {"op": "history", "id": 1})
            assert reply["ok"] is False
            assert reply["error"] == {
                "type": "HistoryUnavailable",
                "code": "history-unavailable",
                "message": "history is off: this server keeps none",
                "why": None,
            }
            # search covers the live procs
            request = {"op": "search", "pattern": "LINE 1999", "proc": small.id}
            hits = await _messages(server.path, request)
            assert [(m["hit"]["proc"], m["hit"]["seq"]) for m in hits[:-1]] == [(small.id, 2000)]
            # lines that left the ring come back from disk: no gap
            (out,) = await _messages(server.path, {"op": "out", "proc": small.id})
            assert [x["seq"] for x in out["result"]["lines"]] == list(range(1, 2001))
            assert out["result"]["dropped"] == 0
            assert not any("cut" in x for x in out["result"]["lines"])
            assert "cut_bytes" not in out["result"]
            # what the cap cut is marked, as with history
            (out,) = await _messages(server.path, {"op": "out", "proc": big.id})
            assert [x["cut"] for x in out["result"]["lines"] if "cut" in x] == [big.cut_lines]
            assert out["result"]["cut_bytes"] == big.cut_bytes
            ctl = [sys.executable, "-m", "procwindow", "ctl", "--socket", server.path]
            done = await asyncio.to_thread(
                subprocess.run,
                [*ctl, "out", str(big.id), "--stream", "stdout"],
                capture_output=True,
                text=True,
                timeout=30,
            )
            marker = f"[… {big.cut_lines:,} lines ({format_size(big.cut_bytes)}) cut …]"
            assert done.stderr == marker + "\n"
            stdout = done.stdout.splitlines()
            assert stdout[0] == "line 0" and stdout[-1] == "line 19999"
            assert len(stdout) < 20000 - 10000

    asyncio.run(main())


def test_history_error_names_why_history_stopped(tmp_path):
    async def main() -> None:
        async with _served(tmp_path) as (sup, server):
            # What the archive does when its database breaks: history stops, with why.
            archive = sup._archive
            assert archive.db is not None
            archive.db.close()
            archive.db, archive.error = None, "/x/history.db: disk I/O error"
            (reply,) = await _messages(server.path, {"op": "history"})
            assert reply["error"] == {
                "type": "HistoryUnavailable",
                "code": "history-unavailable",
                "message": "history is off: /x/history.db: disk I/O error",
                "why": "/x/history.db: disk I/O error",
            }

    asyncio.run(main())


# -- serve's own options ----------------------------------------------------------------------


def test_serve_with_a_small_log_cap_marks_the_cut_once_dismissed(tmp_path):
    """A live proc's ring still holds what the disk cap cut; once dismissed, its lines
    come from disk, and the cut shows."""
    srv = start_server(tmp_path, "--log-cap", "64K")
    try:
        proc_id = int(srv.ctl("run", "--session", "s", "--agent", "a", "--", *BIG).stdout)
        _wait_done(srv, proc_id)
        assert srv.ctl("out", str(proc_id)).stderr.count("[…") == 0  # all in memory
        srv.ctl("dismiss", str(proc_id))
        (past,) = _history(srv)
        assert past["live"] is False
        assert past["cut_lines"] > 10000 and past["cut_bytes"] > 100_000
        out = srv.ctl("out", str(proc_id))
        marker = f"[… {past['cut_lines']:,} lines ({format_size(past['cut_bytes'])}) cut …]"
        assert out.stderr.splitlines().count(marker) == 1
        assert out.stderr.splitlines()[-1] == "err end"
        stdout = out.stdout.splitlines()
        assert stdout[0] == "line 0" and stdout[-1] == "line 19999"
    finally:
        assert stop_server(srv) == 0


def test_serve_without_history(tmp_path):
    srv = start_server(tmp_path, "--no-history")
    try:
        proc_id = _run(srv, "sh", "-c", "echo hello")
        assert proc_id == 1
        _wait_done(srv, proc_id)
        _one_line_error(srv.ctl("history", check=False), 1, "HistoryUnavailable: history is off")
        assert srv.ctl("search", "hello").stdout == f"{proc_id}:1: hello\n"
        assert srv.ctl("out", str(proc_id)).stdout == "hello\n"
        srv.ctl("dismiss", str(proc_id))
        _one_line_error(srv.ctl("out", str(proc_id), check=False), 1, "ProcNotFound")
    finally:
        assert stop_server(srv) == 0
