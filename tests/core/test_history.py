"""History: every proc recorded on disk, replayed exactly after a restart,
shared by supervisors of one state directory, bounded on disk, searchable."""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import sqlite3
import stat
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from procwindow import ExitReason, InvalidPattern, ProcNotFound, ProcRunning, Stream, Supervisor
from procwindow.core import format_size

from .helpers import py, until

#: Both streams, interleaved; "\r" redraws, "\r\n" endings, invalid UTF-8, a
#: multibyte character split across writes, a line longer than LINE_MAX, and
#: an unterminated last line.
MIXED = """
    import os, sys, time
    out, err = sys.stdout.buffer, sys.stderr.buffer
    for i in range(300):
        out.write(b"out %d\\n" % i)
        if i % 7 == 0:
            out.flush()
            err.write(b"err %d\\r\\n" % i)
            err.flush()
        if i % 50 == 0:
            out.write(b"progress 10%\\rprogress 99%\\n")
            out.write(b"bad \\xff\\xfe byte, caf\\xc3")
            out.flush()
            time.sleep(0.002)
            out.write(b"\\xa9\\n")
    out.write(b"x" * 200000 + b"\\n")
    out.write(b"no newline at the end")
    out.flush()
"""


async def _finish(sup: Supervisor, proc_id: int) -> None:
    await sup.wait(proc_id)
    await until(lambda: not sup.get(proc_id).output_open)


@pytest.mark.promise("History")
def test_restart_replays_the_same_lines(run, tmp_path):
    async def first():
        async with Supervisor() as sup:
            p = await sup.spawn(py(MIXED), session="s", agent="a", tool="build")
            await _finish(sup, p.id)
            return p.id, sup.read(p.id)

    async def second(proc_id):
        async with Supervisor() as sup:
            p = sup.get(proc_id)
            assert not p.live
            assert p.exit is not None and p.exit.reason is ExitReason.EXITED
            assert (p.session, p.agent, p.tool) == ("s", "a", "build")
            whole = sup.read(proc_id)
            # The same lines read in small steps, and one stream at a time.
            steps, cursor = [], 0
            while True:
                batch = sup.read(proc_id, since=cursor, limit=7)
                steps += batch.lines
                cursor = batch.cursor
                if batch.eof:
                    break
            errs = sup.read(proc_id, stream=Stream.STDERR)
            return whole, steps, errs, [p.id for p in sup.history()]

    proc_id, live = run(first())
    whole, steps, errs, ids = run(second(proc_id))
    assert live.lines and live.eof
    assert whole.lines == live.lines  # seq, stream, time, text, split: all equal
    assert whole.eof and whole.dropped == 0
    assert steps == live.lines
    assert errs.lines == [ln for ln in live.lines if ln.stream is Stream.STDERR]
    assert any(ln.split for ln in live.lines)
    assert live.lines[-1].text == "no newline at the end"
    assert ids == [proc_id]


def test_replay_of_lines_that_left_the_ring(run):
    async def main():
        async with Supervisor(ring_lines=100) as sup:
            p = await sup.spawn(
                py("for i in range(5000): print('line', i)"), session="s", agent="a"
            )
            await _finish(sup, p.id)
            batch = sup.read(p.id)
            assert batch.dropped == 0
            assert [ln.text for ln in batch.lines] == [f"line {i}" for i in range(5000)]
            assert [ln.seq for ln in batch.lines] == list(range(1, 5001))
            middle = sup.read(p.id, since=2000, limit=10)
            assert [ln.seq for ln in middle.lines] == list(range(2001, 2011))

    run(main())


def test_history_off_keeps_nothing(run, tmp_path):
    async def main():
        async with Supervisor(history=False) as sup:
            p = await sup.spawn(["echo", "hi"], session="s", agent="a")
            await _finish(sup, p.id)
            assert p.id == 1
            assert not sup.history_enabled
            assert sup.history() == []
            log_dir = sup.log_dir
        assert not os.path.exists(log_dir)
        async with Supervisor(history=False) as sup:
            with pytest.raises(ProcNotFound):
                sup.get(p.id)
            q = await sup.spawn(["true"], session="s", agent="a")
            assert q.id == 1

    run(main())


@pytest.mark.promise("History: Ids are unique")
def test_two_supervisors_share_a_state_dir_with_unique_ids(tmp_path):
    """Two processes spawn at once into one state directory: no id twice."""
    script = textwrap.dedent(
        """
        import asyncio, sys
        from procwindow import Supervisor
        async def main():
            async with Supervisor(state_dir=sys.argv[1]) as sup:
                ids = []
                for _ in range(40):
                    p = await sup.spawn(["true"], session="s", agent=sys.argv[2])
                    ids.append(p.id)
                for i in ids:
                    await sup.wait(i)
                print(" ".join(map(str, ids)))
        asyncio.run(main())
        """
    )
    state = tmp_path / "state"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(state), name],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("one", "two")
    ]
    done = [p.communicate(timeout=120) for p in procs]
    outs = [out for out, _ in done]
    assert [err for _, err in done] == ["", ""]  # no write lost, nothing else said
    assert [p.returncode for p in procs] == [0, 0]
    ids = [int(x) for out in outs for x in out.split()]
    assert len(ids) == 80
    assert len(set(ids)) == 80
    assert sorted(ids) == list(range(1, 81))

    async def check():
        async with Supervisor(state_dir=state) as sup:
            rows = sup.history()
            assert [p.id for p in rows] == list(range(80, 0, -1))
            assert {p.agent for p in rows} == {"one", "two"}
            assert all(p.exit is not None and p.exit.code == 0 for p in rows)
            q = await sup.spawn(["true"], session="s", agent="a")
            assert q.id == 81
            await sup.wait(q.id)

    asyncio.run(check())


def test_an_exit_reaches_other_readers_of_the_database_unasked(run, tmp_path):
    """An exit is committed soon after it is seen, with nothing else happening in
    the supervisor: another process reading the database gets it."""
    state = tmp_path / "state"

    def recorded(proc_id: int) -> tuple[int | None, str | None]:
        db = sqlite3.connect(state / "history.db")
        try:
            row = db.execute("SELECT code, reason FROM procs WHERE id = ?", (proc_id,)).fetchone()
        finally:
            db.close()
        return (row[0], row[1]) if row else (None, None)

    async def main():
        async with Supervisor(state_dir=state) as sup:
            p = await sup.spawn(py("import sys; sys.exit(3)"), session="s", agent="a")
            assert recorded(p.id) == (None, None)  # its start is on record, its exit not yet
            await sup.wait(p.id)
            # The supervisor is idle from here on: no spawn, no query flushes for it.
            await until(lambda: recorded(p.id) == (3, "failed"), timeout=5, what="the exit")

    run(main())


@pytest.mark.promise("History: Ids are unique")
def test_ids_are_never_reused_after_forget(run):
    async def main():
        async with Supervisor() as sup:
            p = await sup.spawn(["true"], session="s", agent="a")
            await _finish(sup, p.id)
            sup.forget(p.id)
        async with Supervisor() as sup:
            q = await sup.spawn(["true"], session="s", agent="a")
            await sup.wait(q.id)
            assert q.id == p.id + 1

    run(main())


@pytest.mark.promise("History: Ids are unique")
def test_a_killed_supervisor_leaves_a_consistent_history(tmp_path):
    """SIGKILL mid-run: the next supervisor marks the dead run's procs lost,
    and their output up to the kill is readable."""
    state = tmp_path / "state"
    script = textwrap.dedent(
        """
        import asyncio, sys
        from procwindow import Supervisor
        async def main():
            sup = Supervisor(state_dir=sys.argv[1])
            await sup.__aenter__()
            done = await sup.spawn(["echo", "finished"], session="s", agent="a")
            await sup.wait(done.id)
            # One write per line (print() under -u writes "tick", " ", "20" and
            # "\\n" apart): the kill must not fall inside a line.
            p = await sup.spawn(
                [sys.executable, "-u", "-c",
                 "import sys, time\\nfor i in range(10**6):\\n"
                 " sys.stdout.write(f'tick {i}\\\\n')\\n time.sleep(0.01)"],
                session="s", agent="a")
            while sup.get(p.id).last_seq < 20:
                await asyncio.sleep(0.01)
            print(p.id, sup.get(p.id).os_pid, flush=True)
            await asyncio.sleep(3600)
        asyncio.run(main())
        """
    )
    host = subprocess.Popen(
        [sys.executable, "-c", script, str(state)], stdout=subprocess.PIPE, text=True
    )
    assert host.stdout is not None
    proc_id, pid = map(int, host.stdout.readline().split())
    host.send_signal(signal.SIGKILL)
    host.wait(timeout=30)
    host.stdout.close()

    async def check():
        # The watchdog stops the orphan; wait for it so the test leaves nothing.
        deadline = time.monotonic() + 20
        while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        async with Supervisor(state_dir=state) as sup:
            p = sup.get(proc_id)
            assert p.exit is not None
            assert p.exit.reason is ExitReason.LOST
            assert not p.running
            finished = sup.get(proc_id - 1)
            assert finished.exit is not None and finished.exit.reason is ExitReason.EXITED
            assert [ln.text for ln in sup.read(finished.id).lines] == ["finished"]
            texts = [ln.text for ln in sup.read(proc_id).lines]
            assert len(texts) >= 20
            assert texts == [f"tick {i}" for i in range(len(texts))]
            assert [q.id for q in sup.history(reason="lost")] == [proc_id]

    asyncio.run(check())


@pytest.mark.promise("History: Disk is bounded")
def test_cap_keeps_head_and_tail_and_counts_the_cut(run):
    cap = 256 * 1024
    flood = """
        import sys, time
        w = sys.stdout.write
        e = sys.stderr
        print("first line", flush=True)
        print("err first", file=e, flush=True)
        time.sleep(0.3)
        for i in range(200000):
            w("line %07d %s\\n" % (i, "x" * 60))
        sys.stdout.flush()
        # Time to drain the pipe: the cut follows the order of reads.
        time.sleep(0.5)
        print("err last", file=e, flush=True)
        print("last line", flush=True)
    """

    async def main():
        async with Supervisor(log_cap=cap) as sup:
            p = await sup.spawn(py(flood), session="s", agent="a")
            await _finish(sup, p.id)
            q = sup.get(p.id)
            return p.id, sup.log_dir, q.cut_lines, q.cut_bytes, q.output_bytes

    proc_id, log_dir, cut_lines, cut_bytes, total = run(main())
    on_disk = sum(f.stat().st_size for f in Path(log_dir).glob(f"{proc_id}.*"))
    assert on_disk <= cap
    assert total == 200000 * 74 + len("first line\nlast line\nerr first\nerr last\n")
    assert cut_lines > 150000
    # The cut falls between whole lines, and a marker line in the log says what went.
    lines = (Path(log_dir) / f"{proc_id}.stdout.log").read_bytes().split(b"\n")
    assert lines.pop() == b""
    markers = [i for i, line in enumerate(lines) if line.startswith(b"[procwindow: ")]
    assert len(markers) == 1
    marker = lines.pop(markers[0])
    assert marker.decode() == (
        f"[procwindow: {cut_lines:,} lines ({format_size(cut_bytes)}) of this output were"
        " cut here to keep its log within log_cap]"
    )
    assert lines[0] == b"first line" and lines[-1] == b"last line"
    numbered = [int(line[5:12]) for line in lines[1:-1]]
    assert all(
        line == b"line %07d %s" % (n, b"x" * 60)
        for n, line in zip(numbered, lines[1:-1], strict=True)
    )
    gaps = [b - a for a, b in itertools.pairwise(numbered) if b != a + 1]
    assert len(gaps) == 1 and gaps[0] - 1 == cut_lines  # the marker's place: the only gap
    assert cut_bytes == total - (_log_bytes(log_dir, proc_id) - len(marker) - 1)

    async def reopen():
        async with Supervisor(log_cap=cap) as sup:
            p = sup.get(proc_id)
            assert (p.cut_lines, p.cut_bytes) == (cut_lines, cut_bytes)
            batch = sup.read(proc_id)
            texts = [ln.text for ln in batch.lines]
            out = [ln.text for ln in batch.lines if ln.stream is Stream.STDOUT]
            # Two pipes have no order between them: each stream is checked alone.
            assert out[:2] == ["first line", "line 0000000 " + "x" * 60]
            assert out[-2:] == ["line 0199999 " + "x" * 60, "last line"]
            errs = [ln.text for ln in batch.lines if ln.stream is Stream.STDERR]
            assert errs == ["err first", "err last"]
            assert batch.dropped == cut_lines
            seqs = [ln.seq for ln in batch.lines]
            gaps = [b - a - 1 for a, b in itertools.pairwise(seqs) if b != a + 1]
            assert gaps == [cut_lines]
            assert seqs[-1] == 200004
            # Lines on both sides of the cut are whole and in order.
            numbers = [int(t.split()[1]) for t in texts if t.startswith("line ")]
            assert numbers == sorted(numbers)
            assert numbers[-1] == 199999

    run(reopen())


def _log_bytes(log_dir: str, proc_id: int) -> int:
    return sum(Path(log_dir, f"{proc_id}.{s}.log").stat().st_size for s in ("stdout", "stderr"))


@pytest.mark.promise("History: Disk is bounded")
def test_pruning_by_total_and_age(run):
    async def main():
        async with Supervisor(history_bytes=None, history_age=None) as sup:
            ids = []
            for i in range(5):
                p = await sup.spawn(py(f"print('x' * 100000, {i})"), session="s", agent="a")
                await _finish(sup, p.id)
                ids.append(p.id)
                sup.dismiss(p.id)
            return ids, sup.log_dir

    ids, log_dir = run(main())
    assert all(Path(log_dir, f"{i}.stdout.log").exists() for i in ids)

    async def total():
        # Room for about two of them: the three oldest go, at open.
        async with Supervisor(history_bytes=250_000, history_age=None) as sup:
            await until(lambda: len(sup.history()) == 2)
            assert [p.id for p in sup.history()] == ids[:1:-1][:2]

    run(total())
    assert not Path(log_dir, f"{ids[0]}.stdout.log").exists()
    assert Path(log_dir, f"{ids[-1]}.stdout.log").exists()

    async def age():
        async with Supervisor(history_bytes=None, history_age=0) as sup:
            await until(lambda: sup.history() == [])
            p = await sup.spawn(["sleep", "0.5"], session="s", agent="a")
            # A running proc is never pruned.
            assert [q.id for q in sup.history()] == [p.id]
            await sup.wait(p.id)

    run(age())
    assert not list(Path(log_dir).glob(f"{ids[-1]}.*"))


def test_dismiss_hides_and_forget_deletes(run):
    async def main():
        async with Supervisor() as sup:
            p = await sup.spawn(["echo", "kept"], session="s", agent="a")
            await _finish(sup, p.id)
            path = sup.log_path(p.id)
            sup.dismiss(p.id)
            assert sup.procs() == []
            assert os.path.exists(path)
            past = sup.get(p.id)
            assert not past.live
            assert [ln.text for ln in sup.read(p.id).lines] == ["kept"]
            assert sup.log_path(p.id) == path
            assert [q.id for q in sup.history()] == [p.id]
            sup.forget(p.id)
            assert not os.path.exists(path)
            assert not list(Path(sup.log_dir).glob(f"{p.id}.*"))
            with pytest.raises(ProcNotFound):
                sup.get(p.id)
            with pytest.raises(ProcNotFound):
                sup.read(p.id)
            assert sup.history() == []
            running = await sup.spawn(["sleep", "30"], session="s", agent="a")
            with pytest.raises(ProcRunning):
                sup.forget(running.id)
            await sup.kill(running.id)
            sup.forget(running.id)
            assert sup.procs() == []

    run(main())


@pytest.mark.promise("History: Search")
def test_search_across_restarts(run):
    async def first():
        async with Supervisor() as sup:
            a = await sup.spawn(
                py("print('alpha NEEDLE one'); print('beta')"), session="s", agent="a"
            )
            await _finish(sup, a.id)
            b = await sup.spawn(
                py("import sys; print('needle in stderr', file=sys.stderr); print('x')"),
                session="t",
                agent="b",
            )
            await _finish(sup, b.id)
            return a.id, b.id

    a, b = run(first())

    async def second():
        async with Supervisor() as sup:
            c = await sup.spawn(
                py("print('live needle'); import time; time.sleep(30)"), session="s", agent="a"
            )
            await until(lambda: sup.get(c.id).last_seq >= 1)
            hits = [(h.proc_id, h.line.text) async for h in sup.search("needle")]
            assert hits == [
                (c.id, "live needle"),
                (b, "needle in stderr"),
                (a, "alpha NEEDLE one"),
            ]
            exact = [h.line.text async for h in sup.search("NEEDLE", case_sensitive=True)]
            assert exact == ["alpha NEEDLE one"]
            scoped = [h.proc_id async for h in sup.search("needle", session="t")]
            assert scoped == [b]
            rx = [h.line.seq async for h in sup.search(r"^(alpha|beta)\b", regex=True)]
            assert rx == [1, 2]
            (hit,) = [h async for h in sup.search("stderr")]
            assert hit.line.stream is Stream.STDERR and (hit.session, hit.agent) == ("t", "b")
            assert [h.proc_id async for h in sup.search("needle", limit=1)] == [c.id]
            with pytest.raises(InvalidPattern):
                sup.search("(", regex=True)
            with pytest.raises(InvalidPattern):
                sup.search("")
            await sup.kill(c.id)

    run(second())


@pytest.mark.promise("History: Search")
def test_search_is_cancellable_and_keeps_the_loop_responsive(run):
    async def main():
        async with Supervisor(log_cap=None) as sup:
            p = await sup.spawn(
                py(
                    "import sys\nw = sys.stdout.write\nfor i in range(300000): w('match %d\\n' % i)"
                ),
                session="s",
                agent="a",
            )
            await _finish(sup, p.id)
            gaps = []
            ticking = True

            async def ticker():
                last = time.monotonic()
                while ticking:
                    await asyncio.sleep(0.001)
                    now = time.monotonic()
                    gaps.append(now - last)
                    last = now

            t = asyncio.ensure_future(ticker())
            found = 0
            async for _hit in sup.search("match"):
                found += 1
                if found == 100000:
                    break
            ticking = False
            await t
            assert found == 100000
            # Never a stall of a second (the slices are a few ms; the machine is noisy).
            assert max(gaps) < 1.0

    run(main())


@pytest.mark.promise("History: Where it lives")
def test_database_and_directory_modes(run, tmp_path):
    state = tmp_path / "state"

    async def main():
        async with Supervisor(state_dir=state) as sup:
            p = await sup.spawn(["echo", "x"], session="s", agent="a")
            await _finish(sup, p.id)

    run(main())
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    assert stat.S_IMODE((state / "logs").stat().st_mode) == 0o700
    for name in ("history.db", "ids"):
        assert stat.S_IMODE((state / name).stat().st_mode) == 0o600
    for f in (state / "logs").iterdir():
        assert stat.S_IMODE(f.stat().st_mode) == 0o600
    with sqlite3.connect(state / "history.db") as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.execute("SELECT count(*) FROM procs").fetchone()[0] == 1


@pytest.mark.promise("History: History never stops supervision")
def test_a_corrupt_database_is_set_aside_and_capture_goes_on(run, tmp_path, caplog):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "history.db").write_bytes(b"this is not a database" * 100)
    os.chmod(state / "history.db", 0o600)

    async def main():
        async with Supervisor(state_dir=state) as sup:
            assert sup.history_enabled
            p = await sup.spawn(["echo", "still captured"], session="s", agent="a")
            await _finish(sup, p.id)
            assert [ln.text for ln in sup.read(p.id).lines] == ["still captured"]
            assert [q.id for q in sup.history()] == [p.id]

    run(main())
    aside = list(state.glob("history.db.corrupt-*"))
    assert len(aside) == 1
    assert aside[0].read_bytes().startswith(b"this is not a database")
    assert any("damaged" in r.getMessage() for r in caplog.records)


@pytest.mark.promise("History: History never stops supervision")
def test_a_locked_database_never_stops_supervision(run, tmp_path):
    state = tmp_path / "state"

    async def main():
        async with Supervisor(state_dir=state) as sup:
            first = await sup.spawn(["true"], session="s", agent="a")
            await _finish(sup, first.id)
            locker = sqlite3.connect(state / "history.db", isolation_level=None)
            try:
                locker.execute("BEGIN EXCLUSIVE")
                p = await sup.spawn(["echo", "while locked"], session="s", agent="a")
                await _finish(sup, p.id)
                assert p.id == first.id + 1
                assert [ln.text for ln in sup.read(p.id).lines] == ["while locked"]
                assert sup.history_error is None
            finally:
                locker.execute("ROLLBACK")
                locker.close()
            # What waited for the lock is written once it is free.
            assert [q.id for q in sup.history()] == [p.id, first.id]
            assert sup.get(p.id).exit is not None

    run(main())


def test_writes_a_lock_held_back_reach_the_disk_once_it_is_free_while_idle(run, tmp_path):
    """Exits recorded while another process holds history.db are retried on a
    timer: after the lock is gone, an idle supervisor writes them within about a
    second, not at its next event (a crash meanwhile would lose them)."""
    state = tmp_path / "state"

    def on_disk() -> set[int]:
        reader = sqlite3.connect(state / "history.db", isolation_level=None)
        try:
            rows = reader.execute("SELECT id FROM procs WHERE ended_at IS NOT NULL")
            return {row[0] for row in rows}
        finally:
            reader.close()

    async def main():
        async with Supervisor(state_dir=state) as sup:
            locker = sqlite3.connect(state / "history.db", isolation_level=None)
            try:
                locker.execute("BEGIN EXCLUSIVE")
                ids = []
                for _ in range(4):
                    p = await sup.spawn(["true"], session="s", agent="a")
                    ids.append(p.id)
                for proc_id in ids:
                    await _finish(sup, proc_id)
                await asyncio.sleep(0.3)  # the writes tried, and held back
            finally:
                locker.execute("ROLLBACK")
                locker.close()
            # Idle from here on: no spawn, no exit, no query of this supervisor's.
            await until(lambda: set(ids) <= on_disk(), what="the held-back exits on disk")

    run(main())


def test_a_database_locked_for_a_moment_at_start_is_waited_for(run, tmp_path):
    """Another supervisor holding the lock as this one opens (making the
    schema, writing) costs a wait at start, not this supervisor's history."""
    state = tmp_path / "state"

    async def first():
        async with Supervisor(state_dir=state) as sup:
            p = await sup.spawn(["true"], session="s", agent="a")
            await _finish(sup, p.id)
            return p.id

    first_id = run(first())
    locked = threading.Event()

    def hold() -> None:
        locker = sqlite3.connect(state / "history.db", isolation_level=None)
        try:
            locker.execute("BEGIN EXCLUSIVE")
            locked.set()
            time.sleep(0.8)  # four times what a write waits
            locker.execute("ROLLBACK")
        finally:
            locker.close()

    holder = threading.Thread(target=hold)
    holder.start()
    assert locked.wait(10)

    async def second():
        async with Supervisor(state_dir=state) as sup:
            assert sup.history_enabled
            assert sup.history_error is None
            p = await sup.spawn(["true"], session="s", agent="b")
            await _finish(sup, p.id)
            assert [q.id for q in sup.history()] == [p.id, first_id]

    try:
        run(second())
    finally:
        holder.join()


@pytest.mark.promise("History: History never stops supervision")
def test_an_unusable_state_dir_turns_history_off(run, tmp_path):
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "history.db").mkdir()  # something in the way that is not a file

    async def main():
        async with Supervisor(state_dir=state) as sup:
            assert not sup.history_enabled
            assert sup.history_error
            p = await sup.spawn(["echo", "ok"], session="s", agent="a")
            await _finish(sup, p.id)
            assert [ln.text for ln in sup.read(p.id).lines] == ["ok"]

    run(main())


@pytest.mark.promise("History: Memory is bounded")
def test_rings_share_a_budget_finished_procs_first(run):
    async def main():
        budget = 4 * 1024 * 1024
        async with Supervisor(ring_budget=budget) as sup:
            done = await sup.spawn(
                py("print('y' * 1000 + '\\n') ; [print('z' * 99) for _ in range(30000)]"),
                session="s",
                agent="a",
            )
            await _finish(sup, done.id)
            assert sup.get(done.id).held_bytes > 2 * 1024 * 1024
            big = await sup.spawn(
                py("[print('w' * 99) for _ in range(30000)]; import time; time.sleep(30)"),
                session="s",
                agent="a",
            )
            await until(lambda: sup.get(big.id).last_seq >= 30000)
            # The finished proc gave its ring back; its lines come from disk.
            assert sup.get(done.id).held_bytes == 0
            assert sup.get(big.id).held_bytes > 2 * 1024 * 1024
            assert len(sup.read(done.id).lines) == 30002
            await sup.kill(big.id)

    run(main())
