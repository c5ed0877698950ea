"""The spawn path: what a spawn leaves on disk, where its child is started, what
environment it gets, and when its history row is committed."""

from __future__ import annotations

import asyncio
import fcntl
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from procwindow import ProcNotFound, Stream, Supervisor
from procwindow.core import _linux
from procwindow.core._starter import IDLE_LINGER

from .helpers import py, until


async def _finish(sup: Supervisor, proc_id: int) -> None:
    await sup.wait(proc_id)
    await until(lambda: not sup.get(proc_id).output_open)


def _files_of(log_dir: str | Path, proc_id: int) -> list[str]:
    return sorted(p.name for p in Path(log_dir).glob(f"{proc_id}.*"))


# -- a stream that writes nothing leaves no file ---------------------------------------------


def test_a_silent_proc_leaves_no_files_and_reads_as_empty_after_a_restart(run):
    async def first() -> tuple[int, str, str]:
        async with Supervisor() as sup:
            p = await sup.spawn(["true"], session="s", agent="a")
            await _finish(sup, p.id)
            assert _files_of(sup.log_dir, p.id) == []
            batch = sup.read(p.id)
            assert (batch.lines, batch.dropped, batch.cursor, batch.eof) == ([], 0, 0, True)
            assert sup.read_bytes(p.id).data == b""
            # The path is still named (where the file would be), but there is no file.
            path = sup.log_path(p.id, Stream.STDERR)
            assert path == os.path.join(sup.log_dir, f"{p.id}.stderr.log")
            assert not os.path.exists(path)
            return p.id, sup.log_dir, sup.log_path(p.id)

    async def second(proc_id: int, log_dir: str, path: str) -> None:
        async with Supervisor() as sup:
            past = sup.get(proc_id)
            assert not past.live
            assert past.exit is not None and past.exit.code == 0
            assert (past.last_seq, past.output_bytes) == (0, 0)
            batch = sup.read(proc_id)
            assert (batch.lines, batch.dropped, batch.eof) == ([], 0, True)
            byte_batch = sup.read_bytes(proc_id)
            assert (byte_batch.data, byte_batch.count, byte_batch.eof) == (b"", 0, True)
            assert sup.log_path(proc_id) == path
            assert [hit async for hit in sup.search("anything")] == []
            sup.forget(proc_id)
            with pytest.raises(ProcNotFound):
                sup.get(proc_id)
            assert _files_of(log_dir, proc_id) == []

    proc_id, log_dir, path = run(first())
    run(second(proc_id, log_dir, path))


ONE_STREAM = """
    import sys
    sys.stderr.write("only here\\n")
    sys.stderr.write("and an unfinished line")
"""


def test_a_proc_writing_one_stream_has_that_log_and_the_journal_only(run):
    async def first() -> tuple[int, list[tuple[int, Stream, str, bool]]]:
        async with Supervisor() as sup:
            p = await sup.spawn(py(ONE_STREAM), session="s", agent="a")
            await _finish(sup, p.id)
            assert _files_of(sup.log_dir, p.id) == [f"{p.id}.journal", f"{p.id}.stderr.log"]
            live = [(ln.seq, ln.stream, ln.text, ln.partial) for ln in sup.read(p.id).lines]
            assert live == [
                (1, Stream.STDERR, "only here", False),
                (2, Stream.STDERR, "and an unfinished line", False),
            ]
            return p.id, live

    async def second(proc_id: int, live: list[tuple[int, Stream, str, bool]]) -> None:
        async with Supervisor() as sup:
            replay = [(ln.seq, ln.stream, ln.text, ln.partial) for ln in sup.read(proc_id).lines]
            assert replay == live
            assert sup.read(proc_id, stream="stdout").lines == []
            hits = [hit.line.text async for hit in sup.search("unfinished")]
            assert hits == ["and an unfinished line"]

    run(second(*run(first())))


def test_a_stale_file_at_a_reused_id_is_removed_before_the_spawn(tmp_path):
    """history=False numbers its procs from 1 again: what an earlier run left
    at a path of ours is not this proc's output, also when it writes nothing."""
    logs = tmp_path / "logs"
    logs.mkdir(mode=0o700)
    for name in ("1.stdout.log", "1.stderr.log"):
        (logs / name).write_text("stale line\n")
    (logs / "1.journal").write_bytes(b"\0" * 40)

    async def main() -> None:
        async with Supervisor(history=False, log_dir=logs) as sup:
            p = await sup.spawn(["true"], session="s", agent="a")
            assert p.id == 1
            await _finish(sup, p.id)
            assert _files_of(logs, p.id) == []
            assert sup.read(p.id).lines == []
            assert sup.read_bytes(p.id).data == b""
            assert [hit async for hit in sup.search("stale")] == []

    asyncio.run(main())


# -- where the child is started ------------------------------------------------------------


def _spawn_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("procwindow-spawn")]


def test_a_spawn_alone_in_its_pass_starts_on_the_loop_and_a_burst_uses_the_thread(run):
    async def main() -> None:
        async with Supervisor() as sup:
            for _ in range(3):  # each spawn awaits its exit: one start per pass
                p = await sup.spawn(["true"], session="s", agent="a")
                await sup.wait(p.id)
            assert _spawn_threads() == []
            burst = await asyncio.gather(
                *(sup.spawn(["true"], session="s", agent=f"b{i}") for i in range(12))
            )
            # The first of the pass started on the loop, the rest in the thread.
            assert len(_spawn_threads()) == 1
            ids = [p.id for p in burst]
            assert len(set(ids)) == 12
            assert ids == sorted(ids)
            for p in burst:
                await _finish(sup, p.id)
            assert [sup.read(p.id).eof for p in burst] == [True] * 12
            await until(lambda: _spawn_threads() == [], timeout=IDLE_LINGER + 5)

    run(main())


def test_a_held_id_counter_sends_the_start_to_the_thread_and_the_loop_runs_on(tmp_path):
    """Another supervisor spawning holds the id counter: the start waits for it
    in the spawn thread, never on the loop."""
    state = tmp_path / "state"

    async def main() -> None:
        async with Supervisor(state_dir=state) as sup:
            first = await sup.spawn(["true"], session="s", agent="a")
            await sup.wait(first.id)
            other = os.open(state / "ids", os.O_RDWR | os.O_CLOEXEC)  # another holder
            try:
                fcntl.flock(other, fcntl.LOCK_EX)
                spawn = asyncio.ensure_future(sup.spawn(["true"], session="s", agent="a"))
                ticks = 0
                while ticks < 20:  # the loop is free while the start waits
                    await asyncio.sleep(0.005)
                    ticks += 1
                assert not spawn.done()
                assert len(_spawn_threads()) == 1
            finally:
                fcntl.flock(other, fcntl.LOCK_UN)
                os.close(other)
            p = await spawn
            assert p.id == first.id + 1
            await sup.wait(p.id)

    asyncio.run(main())


# -- the history row -------------------------------------------------------------------------


def test_a_start_is_on_record_when_spawn_returns_and_its_exit_soon(tmp_path):
    state = tmp_path / "state"

    def committed() -> list[tuple[int, float | None]]:
        with sqlite3.connect(state / "history.db") as db:
            return db.execute("SELECT id, ended_at FROM procs ORDER BY id").fetchall()

    async def main() -> None:
        async with Supervisor(state_dir=state) as sup:
            p = await sup.spawn(["sleep", "60"], session="s", agent="a")
            assert committed() == [(p.id, None)]  # another process sees it at once
            await sup.kill(p.id)
            # Its exit soon after (with whatever else that pass of the loop wrote)...
            await until(lambda: committed()[0][1] is not None, what="the exit committed")
            # ...and this supervisor at once: a query commits what is kept first.
            q = await sup.spawn(["true"], session="s", agent="a")
            await sup.wait(q.id)
            assert sup.history()[0].id == q.id
            assert sup.history()[0].exit is not None

    asyncio.run(main())
    assert len(committed()) == 2


def test_a_host_killed_right_after_a_spawn_still_has_it_on_record(tmp_path):
    """The id a spawn handed out is on record before the host can be killed:
    the next supervisor marks it lost instead of never having heard of it."""
    state = tmp_path / "state"
    script = textwrap.dedent(
        """
        import asyncio, sys
        from procwindow import Supervisor
        async def main():
            sup = Supervisor(state_dir=sys.argv[1])
            await sup.__aenter__()
            p = await sup.spawn(["sleep", "60"], session="s", agent="a")
            print(p.id, p.os_pid, flush=True)
            await asyncio.sleep(3600)
        asyncio.run(main())
        """
    )
    host = subprocess.Popen(
        [sys.executable, "-c", script, str(state)], stdout=subprocess.PIPE, text=True
    )
    assert host.stdout is not None
    proc_id, pid = map(int, host.stdout.readline().split())
    host.send_signal(signal.SIGKILL)  # at once: no time for a later commit
    host.wait(timeout=30)
    host.stdout.close()

    async def check() -> None:
        deadline = time.monotonic() + 20  # the watchdog stops the orphan
        while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        async with Supervisor(state_dir=state) as sup:
            assert [q.id for q in sup.history(reason="lost")] == [proc_id]

    asyncio.run(check())


def test_a_damaged_id_counter_is_cut_back_to_the_new_value(tmp_path):
    state = tmp_path / "state"

    async def spawn_one() -> int:
        async with Supervisor(state_dir=state) as sup:
            p = await sup.spawn(["true"], session="s", agent="a")
            await sup.wait(p.id)
            return p.id

    assert asyncio.run(spawn_one()) == 1
    (state / "ids").write_bytes(b"7\n\n\n\n\n")
    assert asyncio.run(spawn_one()) == 8
    assert (state / "ids").read_bytes() == b"8\n"


# -- reading /proc ---------------------------------------------------------------------------


def test_proc_files_longer_than_one_read_are_read_whole(run):
    """A child's start time (``stat``) and marker (``environ``) are read with
    os.read: an environment of several reads still shows the marker at its end."""

    async def main() -> None:
        async with Supervisor() as sup:
            big = {f"PAD{i}": "x" * 1000 for i in range(300)}  # ~300 KiB before the marker
            p = await sup.spawn(["sleep", "30"], session="s", agent="a", env=big)
            stat = _linux.stat_fields(p.os_pid)
            assert stat is not None and stat.pgrp == p.os_pid
            needle = _linux.marker_needle(sup._token)
            assert _linux.read_marker(p.os_pid, needle) == p.id
            await sup.kill(p.id)
            assert _linux.stat_fields(p.os_pid) is None  # reaped: gone

    run(main())


def test_a_change_to_the_environment_reaches_the_next_spawn(run, tmp_path, monkeypatch):
    # The inherited environment is copied once and again only when it changed:
    # every way of changing it must show in the next child.
    monkeypatch.delenv("PW_LATER", raising=False)

    async def echo(sup: Supervisor) -> str:
        p = await sup.spawn(["sh", "-c", 'echo "${PW_LATER-unset}"'], session="s", agent="a")
        await sup.wait(p.id)
        await until(lambda: not p.output_open)
        return sup.read(p.id).lines[0].text

    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            assert await echo(sup) == "unset"
            monkeypatch.setenv("PW_LATER", "one")
            assert await echo(sup) == "one"
            os.environ["PW_LATER"] = "two"  # same size, same keys
            assert await echo(sup) == "two"
            os.environb[b"PW_LATER"] = b"three"
            assert await echo(sup) == "three"
            del os.environ["PW_LATER"]
            assert await echo(sup) == "unset"
            monkeypatch.setenv("PW_LATER", "four")
            p = await sup.spawn(
                ["sh", "-c", 'echo "${PW_LATER-unset}"'],
                session="s",
                agent="a",
                env={"PW_LATER": None},
            )
            await sup.wait(p.id)
            await until(lambda: not p.output_open)
            assert sup.read(p.id).lines[0].text == "unset"
            assert await echo(sup) == "four"  # the override changed only that child

    run(main())
