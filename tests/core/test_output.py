"""Output capture: logs byte-exact, lines decoded and split, the ring bounded."""

from __future__ import annotations

import asyncio
import hashlib
import os
import stat
import subprocess
from pathlib import Path

import psutil
import pytest

from procwindow import Stream, Supervisor
from procwindow.core import LINE_MAX

from .helpers import py, until

# Lifecycle, events and capture run on both event loops in the fast tier too.
pytestmark = pytest.mark.both_loops


def _texts(batch):
    return [ln.text for ln in batch.lines]


@pytest.mark.promise("Guarantees and limits: Output never blocks a child")
def test_200mb_without_newline_bounded_memory_and_exact_log(run, tmp_path):
    total = 200 * 1024 * 1024
    # bytes 11..255: no "\n" (10), no "\r" (13) — but plenty of invalid UTF-8
    writer = f"""
        import sys
        block = bytes(b for b in range(11, 256) if b != 13) * 4096
        left = {total}
        out = sys.stdout.buffer
        while left:
            n = min(left, len(block))
            out.write(block[:n])
            left -= n
        out.flush()
    """

    async def main():
        rss0 = psutil.Process().memory_info().rss
        async with Supervisor(
            log_dir=tmp_path / "logs", ring_bytes=8 * 1024 * 1024, log_cap=None
        ) as sup:
            p = await sup.spawn(py(writer), session="s", agent="a")
            await sup.wait(p.id)
            await until(lambda: not p.output_open)
            grown = psutil.Process().memory_info().rss - rss0
            assert p.held_bytes <= 8 * 1024 * 1024 + LINE_MAX
            # the ring's bound plus slack for the interpreter: evicted blocks are freed
            assert grown < (8 + 32) * 1024 * 1024, f"supervisor grew {grown >> 20} MiB"
            assert p.output_bytes == total
            block = bytes(b for b in range(11, 256) if b != 13) * 4096
            want = hashlib.sha256()
            left = total
            while left:
                n = min(left, len(block))
                want.update(block[:n])
                left -= n
            got = hashlib.sha256(Path(sup.log_path(p.id, "stdout")).read_bytes())
            assert got.hexdigest() == want.hexdigest()
            # The ring kept the last 8 MiB; the first pieces come back from disk.
            assert sup.read(p.id).dropped == 0  # (read before the assertions below)
            batch = sup.read(p.id, limit=50)
            assert batch.dropped == 0
            assert len(batch.lines) == 50
            assert batch.lines[0].seq == 1
            assert all(ln.split for ln in batch.lines)  # pieces of one long line
            assert all(len(ln.text.encode()) <= LINE_MAX * 3 for ln in batch.lines)

    run(main())


@pytest.mark.promise("Guarantees and limits: Output never blocks a child")
def test_utf8_split_across_writes_invalid_bytes_and_progress(run, tmp_path):
    writer = r"""
        import sys, time
        out = sys.stdout.buffer
        euro = "€".encode()
        out.write(b"price " + euro[:1]); out.flush(); time.sleep(0.05)
        out.write(euro[1:2]); out.flush(); time.sleep(0.05)
        out.write(euro[2:] + b" ok\n")
        out.write(b"bad \xff\xfe end\n")
        out.write(b"trunc \xe2\x82\n")
        for i in range(0, 101, 10):
            out.write(b"\rprogress %d%%" % i); out.flush(); time.sleep(0.005)
        out.write(b"\r\n")
        out.write(b"crlf line\r\n")
        out.write(b"no newline at the end")
    """

    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(py(writer), session="s", agent="a")
            await sup.wait(p.id)
            await until(lambda: not p.output_open)
            assert _texts(sup.read(p.id)) == [
                "price € ok",
                "bad \ufffd\ufffd end",
                "trunc \ufffd",
                "progress 100%",
                "crlf line",
                "no newline at the end",
            ]
            raw = Path(sup.log_path(p.id, Stream.STDOUT)).read_bytes()
            assert raw.startswith(
                b"price \xe2\x82\xac ok\nbad \xff\xfe end\ntrunc \xe2\x82\n\rprogress 0%"
            )
            assert raw.endswith(b"\rprogress 100%\r\ncrlf line\r\nno newline at the end")
            assert sup.read(p.id).eof

    run(main())


def test_cursor_returns_each_line_once_in_one_order_across_streams(run, tmp_path):
    writer = """
        import sys, time
        for i in range(300):
            stream = sys.stderr if i % 3 == 0 else sys.stdout
            print(f"line {i}", file=stream, flush=True)
            if i % 50 == 0:
                time.sleep(0.01)
    """

    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(py(writer), session="s", agent="a")
            seen = []
            cursor = 0
            while True:
                batch = sup.read(p.id, since=cursor, limit=37)
                seen += batch.lines
                cursor = batch.cursor
                if batch.eof:
                    break
                if not batch.lines:
                    await asyncio.sleep(0.01)
            # each line exactly once, seqs contiguous in one order across both streams
            assert [ln.seq for ln in seen] == list(range(1, 301))
            assert sorted(ln.text for ln in seen) == sorted(f"line {i}" for i in range(300))
            # within a stream, the order is the order written (across two pipes, the
            # merged order is the order the supervisor read them in)
            for stream, want in (
                (Stream.STDERR, range(0, 300, 3)),
                (Stream.STDOUT, [i for i in range(300) if i % 3]),
            ):
                assert [ln.text for ln in seen if ln.stream is stream] == [
                    f"line {i}" for i in want
                ]
            assert sup.read(p.id, since=cursor).lines == []
            only_err = sup.read(p.id, stream="stderr")
            assert [ln.text for ln in only_err.lines] == [f"line {i}" for i in range(0, 300, 3)]

    run(main())


@pytest.mark.promise("History: Memory is bounded")
def test_ring_bounded_by_lines_reads_the_rest_from_disk(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path, ring_lines=1000) as sup:
            p = await sup.spawn(py("for i in range(50000): print(i)"), session="s", agent="a")
            await sup.wait(p.id)
            await until(lambda: not p.output_open)
            child = sup._child(p.id)
            assert child.store.first_seq == 49001  # the ring holds the last 1,000
            batch = sup.read(p.id)
            assert batch.dropped == 0
            assert _texts(batch) == [str(i) for i in range(50000)]
            # the log keeps everything
            assert Path(sup.log_path(p.id, "stdout")).read_text().split() == [
                str(i) for i in range(50000)
            ]
            # a cursor anywhere resumes right after it, from disk or the ring
            later = sup.read(p.id, since=48999 + 500, limit=3)
            assert later.dropped == 0
            assert _texts(later) == ["49499", "49500", "49501"]
            early = sup.read(p.id, since=10, limit=2)
            assert (_texts(early), early.cursor) == (["10", "11"], 12)


def test_a_flood_is_kept_in_its_own_read_buffers_and_reads_exactly(run, tmp_path, monkeypatch):
    """In a flood every read fills the read buffer, and the ring keeps that buffer
    as it is instead of a copy; the next read goes into a spare one, which lines
    falling off the ring give back. Read from the ring as they come, and after,
    every line is exact: no buffer is written again while the ring shows it."""
    from procwindow.core._output import OutputStore

    real_feed = OutputStore.feed
    handed: list[bool] = []

    def feed(self, *args, **kw):
        handed.append(kw.get("handed", False))
        return real_feed(self, *args, **kw)

    monkeypatch.setattr(OutputStore, "feed", feed)
    filler = b" the quick brown fox jumps over the lazy dog" * 3

    def line(i: int) -> str:
        return (b"%09d" % i + filler)[:99].decode()

    count = 400_000  # 40 MB of 100-byte lines
    src = tmp_path / "lines.txt"
    src.write_bytes(b"".join(line(i).encode() + b"\n" for i in range(count)))

    async def main():
        async with Supervisor(log_dir=tmp_path / "logs", ring_bytes=4 << 20) as sup:
            p = await sup.spawn(["cat", str(src)], session="s", agent="a")
            store = sup._child(p.id).store
            cursor = checked = 0
            while p.output_open or cursor < store.last_seq:
                lines, _dropped, cursor = store.read(cursor, limit=20_000)
                for ln in lines:
                    assert ln.text == line(ln.seq - 1), ln.seq
                checked += len(lines)
                await asyncio.sleep(0.001)
            assert store.last_seq == count
            kept, dropped, _ = store.read(0)
            assert dropped > 0 and len(kept) > 10_000
            assert [ln.text for ln in kept] == [line(ln.seq - 1) for ln in kept]
            assert kept[-1].seq == count
            return checked

    checked = run(main())
    assert checked > 20_000
    assert sum(handed) >= 20  # most of the 40 MB came in full reads, kept as they were


def test_ring_without_logs_reports_dropped(run, tmp_path):
    async def main():
        logs = tmp_path / "logs"
        async with Supervisor(log_dir=logs, ring_lines=1000) as sup:
            first = await sup.spawn(["true"], session="s", agent="a")
            await sup.wait(first.id)
            await until(lambda: not first.output_open)
            for f in logs.iterdir():
                f.unlink()
            logs.rmdir()  # no log can be written now: the ring is all there is
            p = await sup.spawn(py("for i in range(5000): print(i)"), session="s", agent="a")
            await sup.wait(p.id)
            await until(lambda: not p.output_open)
            assert p.log_error
            batch = sup.read(p.id)
            assert batch.dropped == 4000
            assert _texts(batch) == [str(i) for i in range(4000, 5000)]

    run(main())


def test_long_line_split_and_marked(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            n = LINE_MAX * 2 + 100
            p = await sup.spawn(
                py(f"print('é' * {n // 2}); print('short')"), session="s", agent="a"
            )
            await sup.wait(p.id)
            await until(lambda: not p.output_open)
            lines = sup.read(p.id).lines
            assert [ln.split for ln in lines] == [True, True, False, False]
            assert "".join(ln.text for ln in lines[:3]) == "é" * (n // 2)
            assert "\ufffd" not in "".join(ln.text for ln in lines)  # never cut inside a character
            assert lines[3].text == "short"

    run(main())


def test_log_files_private_and_named_from_ids(run, tmp_path):
    async def main():
        logs = tmp_path / "logs"
        async with Supervisor(log_dir=logs) as sup:
            p = await sup.spawn(["sh", "-c", "echo out; echo err >&2"], session="s", agent="a")
            await sup.wait(p.id)
            await until(lambda: not p.output_open)
            assert stat.S_IMODE(logs.stat().st_mode) == 0o700
            for name, body in (("1.stdout.log", b"out\n"), ("1.stderr.log", b"err\n")):
                assert stat.S_IMODE((logs / name).stat().st_mode) == 0o600
                assert (logs / name).read_bytes() == body
            assert sup.log_path(p.id, "stderr") == str(logs / "1.stderr.log")
            assert stat.S_IMODE((logs / "1.journal").stat().st_mode) == 0o600
            sup.dismiss(p.id)  # dismiss keeps the logs
            assert sorted(os.listdir(logs)) == ["1.journal", "1.stderr.log", "1.stdout.log"]
            q = await sup.spawn(["true"], session="s", agent="a")
            await sup.wait(q.id)
            await until(lambda: not q.output_open)
            sup.forget(q.id)  # forget deletes them
            assert sorted(os.listdir(logs)) == ["1.journal", "1.stderr.log", "1.stdout.log"]

    run(main())


def test_default_log_dir_is_under_xdg_state_and_kept(run, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))

    async def main():
        async with Supervisor() as sup:
            p = await sup.spawn(["echo", "hi"], session="s", agent="a")
            await sup.wait(p.id)
            await until(lambda: not p.output_open)
            path = Path(sup.log_path(p.id))
            assert path.parent == tmp_path / "state" / "procwindow" / "logs"
            assert path.read_bytes() == b"hi\n"
        assert path.read_bytes() == b"hi\n"  # history keeps it
        async with Supervisor(history=False) as sup:
            p = await sup.spawn(["echo", "hi"], session="s", agent="a")
            await sup.wait(p.id)
            await until(lambda: not p.output_open)
            temp = Path(sup.log_path(p.id))
            assert temp.parent.parent == tmp_path / "state" / "procwindow" / "logs"
            assert temp.read_bytes() == b"hi\n"
        assert not temp.parent.exists()  # without history, removed on close

    run(main())


@pytest.mark.promise("Guarantees and limits: A broken log never stops capture")
def test_removed_log_dir_keeps_capture_and_reports(run, tmp_path):
    async def main():
        logs = tmp_path / "logs"
        async with Supervisor(log_dir=logs) as sup:
            first = await sup.spawn(["true"], session="s", agent="a")
            await sup.wait(first.id)
            await until(lambda: not first.output_open)
            for f in logs.iterdir():
                f.unlink()
            logs.rmdir()
            p = await sup.spawn(
                py("for i in range(5): print(i, flush=True)"), session="s", agent="a"
            )
            await sup.wait(p.id)
            await until(lambda: not p.output_open)
            assert _texts(sup.read(p.id)) == ["0", "1", "2", "3", "4"]
            assert p.log_error is not None
            assert "No such file or directory" in p.log_error

    run(main())


def _tmpfs(path: Path, size: str) -> bool:
    path.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
        capture_output=True,
    )
    return done.returncode == 0


@pytest.mark.promise("Guarantees and limits: A broken log never stops capture")
def test_full_disk_keeps_capture_and_reports(run, tmp_path):
    mnt = tmp_path / "tiny"
    if os.geteuid() != 0 or not _tmpfs(mnt, "64k"):
        pytest.skip("needs root and a mountable tmpfs to make a full disk")
    try:

        async def main():
            async with Supervisor(log_dir=mnt) as sup:
                p = await sup.spawn(
                    py("for i in range(20000): print('x' * 50, i)"), session="s", agent="a"
                )
                await sup.wait(p.id)
                await until(lambda: not p.output_open)
                batch = sup.read(p.id)
                assert len(batch.lines) == 20000
                assert batch.lines[-1].text.endswith(" 19999")
                assert p.log_error is not None
                assert "No space left on device" in p.log_error
                assert p.exit is not None
                assert p.exit.code == 0

        run(main())
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_child_stdin_is_devnull(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(
                py("import sys; print(repr(sys.stdin.read()))"), session="s", agent="a"
            )
            await sup.wait(p.id)
            await until(lambda: not p.output_open)
            assert _texts(sup.read(p.id)) == ["''"]

    run(main())


def test_log_file_removed_while_running_is_reported(run, tmp_path):
    async def main():
        logs = tmp_path / "logs"
        async with Supervisor(log_dir=logs) as sup:
            p = await sup.spawn(
                py(
                    "import time\nfor i in range(40):\n    print(i, flush=True)\n    time.sleep(0.05)"
                ),
                session="s",
                agent="a",
            )
            await until(lambda: sup.read(p.id).lines)
            Path(sup.log_path(p.id)).unlink()
            await sup.wait(p.id)
            await until(lambda: not p.output_open)
            assert [ln.text for ln in sup.read(p.id).lines] == [str(i) for i in range(40)]
            assert p.log_error is not None
            assert "removed" in p.log_error

    run(main())
