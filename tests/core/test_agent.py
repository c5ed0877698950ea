"""The agent layer with real processes: timeouts, shell lines, merged stderr,
stdin and prompts, partial lines and progress, wait_for, readiness, excerpts,
event order, reuse, and names with dots."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import socket
import time
import warnings

import pytest

from procwindow import (
    Event,
    EventKind,
    ExitEvent,
    ExitReason,
    InvalidArgv,
    InvalidPattern,
    NoMatch,
    NotReady,
    OutputEvent,
    PartialEvent,
    Ready,
    StdinClosed,
    Stream,
    Supervisor,
    Timeout,
    scope_pattern,
)

from ..tiers import scaled
from .helpers import IGNORES_TERM_READY, alive, ignores_term, py, until

SLEEPER = ["sleep", "30"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# -- timeout -------------------------------------------------------------------


def test_timeout_terminates_with_reason_timeout(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(SLEEPER, session="s", agent="a", timeout=0.3)
            assert p.timeout == 0.3
            t0 = time.monotonic()
            info = await sup.wait(p.id, timeout=10)
            assert info.reason is ExitReason.TIMEOUT
            assert info.signal == signal.SIGTERM
            assert info.code == 128 + signal.SIGTERM
            assert 0.25 <= time.monotonic() - t0 < scaled(5)
            assert not alive(p.os_pid)

    run(main())


def test_timeout_escalates_and_keeps_reason_timeout(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path, graceful_timeout=0.2) as sup:
            p = await sup.spawn(ignores_term(), session="s", agent="a", timeout=1.0)
            await sup.wait_for(p.id, IGNORES_TERM_READY, timeout=10)
            info = await sup.wait(p.id, timeout=10)
            assert info.reason is ExitReason.TIMEOUT
            assert info.signal == signal.SIGKILL

    run(main())


def test_proc_that_ends_in_time_is_not_timed_out(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(["true"], session="s", agent="a", timeout=5)
            assert (await sup.wait(p.id)).reason is ExitReason.EXITED

    run(main())


def test_wait_timeout_leaves_the_proc_alone(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(SLEEPER, session="s", agent="a")
            with pytest.raises(TimeoutError):
                await sup.wait(p.id, timeout=0.2)
            assert p.running
            assert alive(p.os_pid)
            with pytest.raises(ValueError, match="timeout"):
                await sup.wait(p.id, timeout=-1)
            with pytest.raises(ValueError, match="timeout"):
                await sup.spawn(SLEEPER, session="s", agent="a", timeout=0)

    run(main())


def test_waits_given_up_leave_the_exit_to_the_others(run, tmp_path):
    # Every wait has a future of its own: one timed out or cancelled neither
    # touches the exit nor stays behind, and the exit reaches all the others.
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(["cat"], session="s", agent="a", stdin=True)
            for _ in range(200):
                with pytest.raises(TimeoutError):
                    await sup.wait(p.id, timeout=0.001)
            waits = [asyncio.ensure_future(sup.wait(p.id)) for _ in range(3)]
            await asyncio.sleep(0.01)
            waits[1].cancel()
            await asyncio.sleep(0.01)
            assert p.running
            # What is waiting now: the two waits still under way, nothing else.
            assert len(sup._children[p.id].exit_waiters) == 2
            await sup.close_stdin(p.id)
            first, third = await asyncio.wait_for(asyncio.gather(waits[0], waits[2]), 10)
            assert waits[1].cancelled()
            assert first == third == p.exit
            assert (first.code, first.reason) == (0, ExitReason.EXITED)
            assert await sup.wait(p.id) == first
            assert sup._children[p.id].exit_waiters == []

    run(main())


# -- shell and merged stderr ------------------------------------------------------


def test_shell_runs_through_sh(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(shell="echo abc | tr a-c x-z; exit 3", session="s", agent="a")
            assert p.argv == ("/bin/sh", "-c", "echo abc | tr a-c x-z; exit 3")
            info = await sup.wait(p.id)
            assert info.code == 3
            assert [x.text for x in sup.read(p.id)] == ["xyz"]
            with pytest.raises(InvalidArgv, match="exactly one"):
                await sup.spawn(["true"], shell="true", session="s", agent="a")
            with pytest.raises(InvalidArgv, match="exactly one"):
                await sup.spawn(session="s", agent="a")

    run(main())


MIXED_WRITES = """
    import os
    for i in range(3000):
        os.write(1 if i % 3 else 2, b"line %d\\n" % i)
"""


def test_merge_stderr_keeps_the_exact_order(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(py(MIXED_WRITES), session="s", agent="a", merge_stderr=True)
            assert p.options.merge_stderr
            await sup.wait(p.id)
            await until(lambda: not p.output_open)
            batch = sup.read(p.id)
            assert [x.text for x in batch] == [f"line {i}" for i in range(3000)]
            assert {x.stream for x in batch} == {Stream.STDOUT}
            assert batch.eof
            # stderr has no pipe of its own: it leaves no log file (and nothing to replay).
            assert not os.path.exists(sup.log_path(p.id, "stderr"))
            assert os.path.getsize(sup.log_path(p.id, "stdout")) == sum(
                len(f"line {i}\n") for i in range(3000)
            )

    run(main())


# -- stdin, prompts and progress ----------------------------------------------------

PROMPT = """
    import sys
    sys.stdout.write("Delete everything? [y/N] ")
    sys.stdout.flush()
    answer = sys.stdin.readline().strip()
    print("answer:", answer)
    print("rest:", sys.stdin.read().strip())
"""


def test_prompt_is_a_partial_line_then_answered_through_stdin(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(py(PROMPT), session="s", agent="a", stdin=True)
            hit = await sup.wait_for(p.id, r"\[y/N\]", timeout=10)
            assert hit.partial
            assert hit.text == "Delete everything? [y/N] "
            assert hit.seq == 1
            # Without partial=True the read shows no complete line yet.
            assert len(sup.read(p.id)) == 0
            shown = sup.read(p.id, partial=True)
            assert [(x.text, x.partial) for x in shown] == [("Delete everything? [y/N] ", True)]
            assert shown.cursor == 0
            assert await sup.write(p.id, "y\n") == 2
            done = await sup.wait_for(p.id, "^Delete.*answer: y$", since=hit.seq - 1, timeout=10)
            assert not done.partial
            assert done.seq == 1
            await sup.write(p.id, b"more input")
            assert await sup.close_stdin(p.id)
            assert not await sup.close_stdin(p.id)
            assert (await sup.wait(p.id, timeout=10)).code == 0
            texts = [x.text for x in sup.read(p.id, partial=True)]
            assert texts == ["Delete everything? [y/N] answer: y", "rest: more input"]
            with pytest.raises(StdinClosed, match="stdin is closed"):
                await sup.write(p.id, "late\n")

    run(main())


def test_stdin_is_devnull_by_default_and_write_refused(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(["cat"], session="s", agent="a")
            assert (await sup.wait(p.id, timeout=10)).code == 0  # EOF at once
            q = await sup.spawn(SLEEPER, session="s", agent="a")
            with pytest.raises(StdinClosed, match="no stdin"):
                await sup.write(q.id, "x")

    run(main())


def test_write_waits_while_the_pipe_is_full_and_cat_echoes_everything(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(["cat"], session="s", agent="a", stdin=True)
            data = b"".join(b"%08d\n" % i for i in range(100_000))  # ~900 kB, > a pipe
            assert await sup.write(p.id, data) == len(data)
            await sup.close_stdin(p.id)
            assert (await sup.wait(p.id, timeout=20)).code == 0
            await until(lambda: not p.output_open)
            assert sup.read(p.id).text.encode() == data

    run(main())


def test_a_write_larger_than_the_pipe_logs_no_error_of_the_loop(run, tmp_path):
    """A writer callback fires again before the write resumes: it must not set
    the same future twice (asyncio would log InvalidStateError each time)."""

    async def main():
        loop = asyncio.get_running_loop()
        errors: list[dict] = []
        loop.set_exception_handler(lambda _, context: errors.append(context))
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(
                py("import sys, time; time.sleep(0.3); print(len(sys.stdin.buffer.read()))"),
                session="s",
                agent="a",
                stdin=True,
            )
            for _ in range(3):
                assert await sup.write(p.id, b"y" * 300_000) == 300_000
            await sup.close_stdin(p.id)
            assert (await sup.wait(p.id, timeout=20)).code == 0
            await until(lambda: not p.output_open)
            assert [line.text for line in sup.read(p.id).lines] == ["900000"]
        assert errors == []

    run(main())


def test_write_to_a_child_that_closed_stdin_is_a_clear_error(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(
                py("import os, time; os.close(0); print('closed', flush=True); time.sleep(30)"),
                session="s",
                agent="a",
                stdin=True,
            )
            await sup.wait_for(p.id, "closed", timeout=10)
            with pytest.raises(StdinClosed, match="broken pipe"):
                await sup.write(p.id, "x" * 100)

    run(main())


PROGRESS = """
    import sys, time
    for pct in (10, 50, 90):
        sys.stdout.write("\\rprogress %d%%" % pct)
        sys.stdout.flush()
        time.sleep(0.5)
    sys.stdout.write("\\rprogress 100%\\n")
    sys.stdout.flush()
"""


def test_progress_shows_its_latest_states(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            sub = sup.subscribe()
            p = await sup.spawn(py(PROGRESS), session="s", agent="a")
            await sup.wait(p.id, timeout=20)
            await until(lambda: not p.output_open)
            seen = []
            while (ev := sub.get_nowait()) is not None:
                if isinstance(ev, PartialEvent) and ev.proc_id == p.id:
                    assert ev.first_seq == 1
                    seen.append(ev.text)
            sub.close()
            assert seen == ["progress 10%", "progress 50%", "progress 90%"]
            assert [x.text for x in sup.read(p.id, partial=True)] == ["progress 100%"]

    run(main())


FAST_PROGRESS = """
    import sys, time
    end = time.monotonic() + 1.0
    i = 0
    while time.monotonic() < end:
        i += 1
        sys.stdout.write("\\r%d" % i)
        sys.stdout.flush()
    sys.stdout.write("\\ndone\\n")
"""


def test_fast_progress_is_shown_at_a_bounded_rate(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            sub = sup.subscribe()
            p = await sup.spawn(py(FAST_PROGRESS), session="s", agent="a")
            await sup.wait(p.id, timeout=20)
            await until(lambda: not p.output_open)
            partials = []
            while (ev := sub.get_nowait()) is not None:
                if isinstance(ev, PartialEvent):
                    partials.append(int(ev.text))
            sub.close()
            # One second of redraws, shown every 0.2 s: a handful of states,
            # each newer than the last.
            assert 2 <= len(partials) <= 8
            assert partials == sorted(set(partials))
            # The last state shown may be the final one itself (the program was
            # descheduled between its last redraw and its newline), never later.
            final = int(sup.read(p.id)[0].text)
            assert partials[-1] <= final

    run(main())


# -- wait_for -------------------------------------------------------------------------

SERVER_LIKE = """
    import sys, time
    print("booting", flush=True)
    time.sleep(0.3)
    print("error: not fatal", file=sys.stderr, flush=True)
    print("listening on :8080", flush=True)
    time.sleep(30)
"""


def test_wait_for_hit_from_a_cursor_and_by_stream(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(py(SERVER_LIKE), session="s", agent="a")
            hit = await sup.wait_for(p.id, r"listening on :(\d+)", timeout=10)
            assert hit.text == "listening on :8080"
            assert hit.stream is Stream.STDOUT
            assert not hit.partial
            err = await sup.wait_for(p.id, "error", stream="stderr", timeout=10)
            assert err.stream is Stream.STDERR
            with pytest.raises(TimeoutError):  # nothing after the hit matches
                await sup.wait_for(p.id, "booting", since=hit.seq, timeout=0.3)
            assert p.running
            again = await sup.wait_for(p.id, "booting", regex=False, timeout=1)
            assert again.seq == 1
            with pytest.raises(InvalidPattern):
                await sup.wait_for(p.id, "(", timeout=1)

    run(main())


def test_wait_for_raises_no_match_with_the_exit(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(["sh", "-c", "echo one; echo two; exit 4"], session="s", agent="a")
            with pytest.raises(NoMatch) as caught:
                await sup.wait_for(p.id, "three", timeout=10)
            assert caught.value.exit.code == 4
            assert caught.value.exit.reason is ExitReason.FAILED
            assert caught.value.cursor == 2
            assert "exited with code 4 (failed)" in str(caught.value)
            # A finished proc answers at once, also for a hit.
            assert (await sup.wait_for(p.id, "two")).seq == 2

    run(main())


def test_wait_for_a_long_output_scans_in_chunks(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path, ring_lines=1000) as sup:
            p = await sup.spawn(["seq", "1", "100000"], session="s", agent="a")
            hit = await sup.wait_for(p.id, "^99999$", timeout=20)
            assert hit.seq == 99999
            with pytest.raises(NoMatch):
                await sup.wait_for(p.id, "^0$", timeout=20)

    run(main())


# -- readiness -----------------------------------------------------------------------


def listener(port: int, delay: float) -> list[str]:
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


@pytest.mark.promise("Workspaces: ready")
def test_ready_by_port(run, tmp_path):
    async def main():
        port = free_port()
        async with Supervisor(log_dir=tmp_path) as sup:
            sub = sup.subscribe()
            t0 = time.monotonic()
            p = await sup.spawn(listener(port, 0.5), session="s", agent="a", ready=port)
            assert not p.ready
            assert p.options.ready == Ready(port=port)
            assert (await sup.wait_ready(p.id, timeout=10)) is p
            assert p.ready
            assert time.monotonic() - t0 >= 0.5
            assert "bound" in sup.read(p.id).text
            kinds = [ev.kind for ev in iter(sub.get_nowait, None) if ev.proc_id == p.id]
            assert EventKind.READY in kinds
            sub.close()

    run(main())


#: A web server whose /health says 503 until the flag file exists, then 200; / is 404.
HEALTH_SERVER = """
    import http.server, os, sys
    flag = sys.argv[1]

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path == "/health":
                code = 200 if os.path.exists(flag) else 503
            else:
                code = 404
            self.send_response(code)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", int(sys.argv[2])), Handler)
    print("serving", flush=True)
    server.serve_forever()
"""


@pytest.mark.promise("Workspaces: ready")
def test_ready_by_http(run, tmp_path):
    async def main():
        port, flag = free_port(), tmp_path / "healthy"
        async with Supervisor(log_dir=tmp_path) as sup:
            server = [*py(HEALTH_SERVER), str(flag), str(port)]
            url = f"http://127.0.0.1:{port}/health"
            p = await sup.spawn(
                server, session="s", agent="a", ready=Ready(http=url, interval=0.05)
            )
            await sup.wait_for(p.id, "serving", timeout=10)
            # It answers, but 503: not ready until it says 200.
            with pytest.raises(Timeout):
                await sup.wait_ready(p.id, timeout=0.5)
            assert not p.ready
            flag.touch()
            await sup.wait_ready(p.id, timeout=10)
            assert p.ready
            assert p.options.ready is not None
            assert p.options.ready.describe() == f"http {url}"
            assert p.options.ready.to_json()["http"] == url
            # A 404 never passes; a closed port neither (and neither blocks).
            missing = Ready(http=f"http://127.0.0.1:{port}/nothing-here", interval=0.05)
            closed = Ready(http=f"http://127.0.0.1:{free_port()}/", interval=0.05)
            for check in (missing, closed):
                q = await sup.spawn(SLEEPER, session="s", agent="a", ready=check)
                with pytest.raises(Timeout):
                    await sup.wait_ready(q.id, timeout=0.3)
                await sup.kill(q.id)
            await sup.kill(p.id)

    run(main())


@pytest.mark.promise("Workspaces: ready")
def test_ready_by_http_with_the_status_it_must_answer(run, tmp_path):
    async def main():
        port, flag = free_port(), tmp_path / "healthy"
        async with Supervisor(log_dir=tmp_path) as sup:
            server = await sup.spawn(
                [*py(HEALTH_SERVER), str(flag), str(port)], session="s", agent="a"
            )
            await sup.wait_for(server.id, "serving", timeout=10)
            base = f"http://127.0.0.1:{port}"

            async def ready_within(check: Ready, seconds: float) -> bool:
                q = await sup.spawn(SLEEPER, session="s", agent="a", ready=check)
                try:
                    await sup.wait_ready(q.id, timeout=seconds)
                    return True
                except Timeout:
                    return False
                finally:
                    await sup.kill(q.id)

            # The status given is the one it must answer, exactly: a 503 or a
            # 404 passes when asked for, a 200 does not pass for a 204.
            assert await ready_within(Ready(http=f"{base}/health", status=503, interval=0.05), 10)
            assert await ready_within(Ready(http=f"{base}/gone", status=404, interval=0.05), 10)
            assert not await ready_within(
                Ready(http=f"{base}/health", status=200, interval=0.05), 0.5
            )
            flag.touch()
            assert await ready_within(Ready(http=f"{base}/health", status=200, interval=0.05), 10)
            assert not await ready_within(
                Ready(http=f"{base}/health", status=204, interval=0.05), 0.5
            )
            check = Ready(http=f"{base}/health", status=204)
            assert check.describe() == f"http {base}/health (status 204)"
            assert check.to_json()["status"] == 204
            await sup.kill(server.id)

    run(main())


@pytest.mark.parametrize("status", [99, 600, True, "200", 200.0])
def test_a_ready_http_status_that_is_no_status_is_refused(status):
    with pytest.raises(InvalidArgv, match=r"ready status must be an HTTP status \(100-599\)"):
        Ready(http="http://127.0.0.1/", status=status)
    with pytest.raises(InvalidArgv, match="ready status goes with an http check only"):
        Ready(port=80, status=200)


@pytest.mark.parametrize(
    "url", ["ftp://host/x", "127.0.0.1:8000", "http://", "http://a b/", "http://h:99999/", 7]
)
def test_a_ready_http_that_is_no_url_is_refused(url):
    with pytest.raises(InvalidArgv, match="ready http"):
        Ready(http=url)


@pytest.mark.promise("Workspaces: ready")
def test_ready_by_line_and_by_command(run, tmp_path):
    async def main():
        flag = tmp_path / "flag"
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(py(SERVER_LIKE), session="s", agent="a", ready="listening on")
            await sup.wait_ready(p.id, timeout=10)
            assert p.ready
            q = await sup.spawn(
                ["sh", "-c", f"sleep 0.4; touch {flag}; sleep 30"],
                session="s",
                agent="a",
                ready=Ready(command=["test", "-e", str(flag)], interval=0.05),
            )
            assert not q.ready
            await sup.wait_ready(q.id, timeout=10)
            assert flag.exists()
            # Without a check a proc is ready from the start.
            r = await sup.spawn(SLEEPER, session="s", agent="a")
            assert r.ready
            assert (await sup.wait_ready(r.id)) is r

    run(main())


def test_a_check_command_runs_in_the_procs_directory_and_environment(run, tmp_path):
    """A readiness check that needs the proc's PGPASSWORD and its directory passes:
    it runs with the proc's env overrides and cwd (it had the supervisor's)."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "marker-file").write_text("here")

    async def main():
        async with Supervisor(log_dir=tmp_path / "logs") as sup:
            p = await sup.spawn(
                SLEEPER,
                session="s",
                agent="a",
                cwd=str(work),
                env={"PGPASSWORD": "secret", "HOME": None},
                ready={
                    "shell": 'test "$PGPASSWORD" = secret && test -e marker-file'
                    ' && test -z "${HOME+set}"',
                    "interval": 0.05,
                    "timeout": 10,
                },
            )
            await sup.wait_ready(p.id, timeout=15)
            assert p.ready

    run(main())


@pytest.mark.promise("Workspaces: ready")
def test_not_ready_when_it_exits_first_or_the_check_gives_up(run, tmp_path):
    async def main():
        port = free_port()
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(["sh", "-c", "exit 2"], session="s", agent="a", ready=port)
            with pytest.raises(NotReady, match="code 2") as caught:
                await sup.wait_ready(p.id, timeout=10)
            assert caught.value.exit is not None
            q = await sup.spawn(
                SLEEPER, session="s", agent="a", ready=Ready(port=port, timeout=0.3)
            )
            with pytest.raises(NotReady, match=r"gave up after 0\.3 s"):
                await sup.wait_ready(q.id, timeout=10)
            assert q.running
            assert not q.ready
            r = await sup.spawn(SLEEPER, session="s", agent="a", ready=port)
            with pytest.raises(TimeoutError):
                await sup.wait_ready(r.id, timeout=0.2)
            assert r.running
            with pytest.raises(InvalidArgv, match="exactly one"):
                Ready(port=1, line="x")
            with pytest.raises(InvalidArgv, match="1-65535"):
                Ready(port=70000)

    run(main())


# -- excerpts ------------------------------------------------------------------------


def test_excerpt_shows_head_and_tail_and_counts_what_is_omitted(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(["seq", "1", "1000"], session="s", agent="a")
            await sup.wait(p.id)
            await until(lambda: not p.output_open)
            ex = await sup.excerpt(p.id, head=3, tail=2)
            omitted = sum(len(str(i)) + 1 for i in range(4, 999))
            assert ex.text == f"1\n2\n3\n… 995 lines ({omitted} bytes) omitted …\n999\n1000\n"
            assert (ex.lines, ex.omitted_lines, ex.omitted_bytes) == (1000, 995, omitted)
            assert ex.cursor == 1000
            assert ex.eof
            assert ex.exit is not None
            assert ex.exit.code == 0
            # From a cursor: only what came after it.
            ex2 = await sup.excerpt(p.id, head=2, tail=2, since=990)
            assert ex2.text.splitlines() == [
                "991",
                "992",
                "… 6 lines (24 bytes) omitted …",
                "999",
                "1000",
            ]
            assert ex2.omitted_bytes == 24
            # Everything fits: no marker.
            ex3 = await sup.excerpt(p.id, since=995)
            assert ex3.text == "996\n997\n998\n999\n1000\n"
            assert ex3.omitted_lines == 0
            # Nothing new.
            ex4 = await sup.excerpt(p.id, since=1000)
            assert (ex4.text, ex4.lines, ex4.cursor) == ("", 0, 1000)

    run(main())


def test_excerpt_stays_within_max_bytes(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(
                py(
                    "for i in range(5000): print(f'{i:05d} ' + 'x' * (i % 300))\nprint('y' * 100000)"
                ),
                session="s",
                agent="a",
            )
            await sup.wait(p.id)
            await until(lambda: not p.output_open)
            for max_bytes in (300, 2000, 8000):
                ex = await sup.excerpt(p.id, head=50, tail=50, max_bytes=max_bytes)
                assert len(ex.text.encode()) <= max_bytes
                assert ex.omitted_lines == ex.lines - len(ex.shown)
                assert "omitted" in ex.text
                # The last line is kept (clipped), and says how much was cut.
                assert ex.text.splitlines()[-1].startswith("yyy")
                assert "bytes]" in ex.text.splitlines()[-1]

    run(main())


def test_excerpt_keeps_the_last_line_after_pieces_of_an_over_long_one(run, tmp_path):
    """Few lines, within head + tail, but too big for max_bytes: the last ones
    (an exit summary) stay, and the first ones, and the middle is omitted."""

    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(
                py("print('x' * 300000); print('DONE exit summary')"), session="s", agent="a"
            )
            await sup.wait(p.id)
            await until(lambda: not p.output_open)
            for max_bytes in (300, 2000, 8000):
                ex = await sup.excerpt(p.id, max_bytes=max_bytes)
                lines = ex.text.splitlines()
                assert len(ex.text.encode()) <= max_bytes
                assert lines[-1] == "DONE exit summary", (max_bytes, lines[-3:])
                assert lines[0].startswith("xxx")
                assert "omitted" in ex.text
                assert ex.omitted_lines == ex.lines - len(ex.shown)
            head_only = await sup.excerpt(p.id, tail=0, max_bytes=2000)
            assert "DONE" not in head_only.text

    run(main())


def test_excerpt_of_a_running_proc_ends_with_its_prompt(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(py(PROMPT), session="s", agent="a", stdin=True)
            await sup.wait_for(p.id, "y/N", timeout=10)
            ex = await sup.excerpt(p.id)
            assert ex.text == "Delete everything? [y/N] \n"
            assert ex.partial == "Delete everything? [y/N] "
            assert ex.exit is None
            assert not ex.eof
            assert ex.cursor == 0

    run(main())


# -- events -------------------------------------------------------------------------------


def test_output_events_come_before_the_exit_which_carries_the_final_cursor(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            other = await sup.spawn(["seq", "1", "1000"], session="s", agent="a")
            p = await sup.spawn(["seq", "1", "300000"], session="s", agent="a")
            sub = sup.subscribe(proc=p.id, maxsize=100_000)
            exit_ev: ExitEvent | None = None
            covered = 0
            async for ev in sub:
                assert ev.proc_id == p.id
                if isinstance(ev, OutputEvent):
                    assert exit_ev is None, "output after exit"
                    assert ev.first_seq == covered + 1
                    covered = ev.last_seq
                elif isinstance(ev, ExitEvent):
                    exit_ev = ev
                    break
            sub.close()
            assert exit_ev is not None
            assert exit_ev.code == 0  # typed: no None check needed
            assert exit_ev.reason is ExitReason.EXITED
            assert exit_ev.last_seq == covered == 300000
            await sup.wait(other.id)

    run(main())


def test_names_with_dots_and_their_topics(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            sub = sup.subscribe(scope_pattern("2026-12-01.run", "gpt-4.1"))
            p = await sup.spawn(["true"], session="2026-12-01.run", agent="gpt-4.1")
            await sup.wait(p.id)
            ev: Event = await asyncio.wait_for(sub.__anext__(), 5)
            assert ev.topic == "session.2026-12-01%2Erun.agent.gpt-4%2E1.proc.start"
            assert (ev.session, ev.agent) == ("2026-12-01.run", "gpt-4.1")
            assert [x.id for x in sup.procs(agent="gpt-4.1")] == [p.id]
            sub.close()

    run(main())


# -- reuse and small things ----------------------------------------------------------------


def test_reuse_returns_the_running_copy(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            a = await sup.spawn(SLEEPER, session="s", agent="a", reuse=True)
            b = await sup.spawn(SLEEPER, session="s", agent="a", reuse=True)
            assert a is b
            c = await sup.spawn(SLEEPER, session="s", agent="other", reuse=True)
            d = await sup.spawn(SLEEPER, session="s", agent="a", cwd=tmp_path, reuse=True)
            e = await sup.spawn(SLEEPER, session="s", agent="a")  # no reuse: a second copy
            assert len({a.id, c.id, d.id, e.id}) == 4
            await sup.kill(a.id)
            f = await sup.spawn(SLEEPER, session="s", agent="a", reuse=True)
            assert f.id == e.id  # the other running copy

    run(main())


def test_read_batch_is_a_sequence_of_lines(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(["seq", "1", "3"], session="s", agent="a")
            await sup.wait(p.id)
            await until(lambda: not p.output_open)
            batch = sup.read(p.id)
            assert len(batch) == 3
            assert [line.text for line in batch] == ["1", "2", "3"]
            assert batch[-1].seq == 3
            assert batch.text == "1\n2\n3\n"

    run(main())


def test_unclosed_warning_says_what_was_left(tmp_path):
    async def main():
        sup = Supervisor(log_dir=tmp_path, watchdog=False, history=False)
        p = await sup.spawn(["true"], session="s", agent="a")
        await sup.wait(p.id)
        return sup

    loop = asyncio.new_event_loop()
    try:
        sup = loop.run_until_complete(main())
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            text = repr(sup)
            sup.__del__()
        assert "running=0" in text
        assert len(caught) == 1
        assert "children were left running" not in str(caught[0].message)
        assert "fds were left open" in str(caught[0].message)
        loop.run_until_complete(sup.close())
    finally:
        loop.close()
        gc.collect()


def test_a_partial_line_keeps_its_place_after_the_other_streams_lines(run, tmp_path):
    async def main():
        code = """
            import sys, time
            sys.stdout.write("Password: "); sys.stdout.flush()
            time.sleep(0.5)
            sys.stderr.write("warning\\n"); sys.stderr.flush()
            time.sleep(30)
        """
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(py(code), session="s", agent="a")
            prompt = await sup.wait_for(p.id, "Password", timeout=10)
            assert (prompt.seq, prompt.partial) == (1, True)
            await sup.wait_for(p.id, "warning", stream="stderr", timeout=10)
            batch = sup.read(p.id, 0, partial=True)
            assert [(x.seq, x.stream, x.text, x.partial) for x in batch] == [
                (1, Stream.STDERR, "warning", False),
                (2, Stream.STDOUT, "Password: ", True),
            ]
            assert batch.cursor == 1
            again = sup.read(p.id, batch.cursor, partial=True)
            assert [(x.seq, x.text) for x in again] == [(2, "Password: ")]

    run(main())
