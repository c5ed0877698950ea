"""read_bytes: the lines read() gives, as one bytes, copied from the logs in
large slices; for live and past procs, from any cursor, one stream or both,
in pages bounded by lines or bytes, with the cap's cut counted the same."""

from __future__ import annotations

import itertools
import os
import random
import tempfile

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from procwindow import ByteBatch, ReadBatch, Stream, Supervisor
from procwindow.core._disklog import CUT, DATA, RECORD, DiskLog, LogFile, journal_records
from procwindow.core._disklog import PLAIN as PLAIN_READ
from procwindow.core._replay import ByteSink, DiskOutput, encode_lines
from tests.fuzz.test_fuzz_core import LIMIT, capture, interleave, streams

from ..tiers import examples
from .helpers import py, until

#: Both streams with flushes; "\r" redraws and "\r\n" endings, invalid UTF-8,
#: a multibyte character and a line split across writes, a line longer than
#: LINE_MAX (read() gives it in pieces), and an unterminated last line.
MIXED = """
    import sys, time
    out, err = sys.stdout.buffer, sys.stderr.buffer
    for i in range(3000):
        out.write(b"out %d\\n" % i)
        if i % 7 == 0:
            out.flush()
            err.write(b"err %d\\r\\n" % i)
            err.flush()
        if i % 500 == 0:
            out.write(b"progress 10%\\rprogress 99%\\n")
            out.write(b"bad \\xff\\xfe byte, caf\\xc3")
            out.flush()
            time.sleep(0.01)
            out.write(b"\\xa9 and the rest\\n")
            out.flush()
    out.write(b"x" * 200000 + b"\\n")
    out.write(b"after the long line\\n")
    out.write(b"no newline at the end")
    out.flush()
"""

#: Many plain lines on both pipes, flushed in bursts of varying size.
PLAIN = """
    import sys
    out, err = sys.stdout, sys.stderr
    for i in range(40000):
        out.write("line %06d of stdout %s\\n" % (i, "." * (i % 37)))
        if i % 13 == 0:
            err.write("line %06d of stderr\\n" % i)
        if i % 997 == 0:
            out.flush()
            err.flush()
"""

#: More than the cap: the middle is cut (as in test_history's cap test).
FLOOD = """
    import sys, time
    e = sys.stderr
    print("first line", flush=True)
    print("err first", file=e, flush=True)
    time.sleep(0.3)
    for i in range(200000):
        sys.stdout.write("line %07d %s\\n" % (i, "x" * 60))
    sys.stdout.flush()
    time.sleep(0.5)
    print("err last", file=e, flush=True)
    print("last line", flush=True)
"""


def as_bytes(batch: ReadBatch) -> bytes:
    return b"".join(line.text.encode("utf-8", "surrogateescape") + b"\n" for line in batch.lines)


def same_as_read(sup: Supervisor, proc_id: int, since: int = 0, stream: Stream | None = None):
    """read_bytes from ``since`` gives what read gives."""
    want = sup.read(proc_id, since, stream=stream)
    got = sup.read_bytes(proc_id, since, stream=stream)
    assert isinstance(got, ByteBatch)
    assert got.data == as_bytes(want) == want.text.encode()
    assert (got.count, got.dropped, got.cursor, got.eof) == (
        len(want.lines),
        want.dropped,
        want.cursor,
        want.eof,
    )
    return got


def pages(
    sup: Supervisor,
    proc_id: int,
    since: int = 0,
    stream: Stream | None = None,
    *,
    max_bytes: int | None = None,
    limit: int | None = None,
) -> int:
    """Paging with the cursor gives each page what read gives with the same
    limit, and all pages together what one read gives. Returns the pages."""
    whole = sup.read(proc_id, since, stream=stream)
    cursor, parts, dropped, count, calls = since, [], 0, 0, 0
    while True:
        page = sup.read_bytes(proc_id, cursor, limit=limit, max_bytes=max_bytes, stream=stream)
        calls += 1
        ref = sup.read(proc_id, cursor, limit=page.count, stream=stream)
        assert page.data == as_bytes(ref), (cursor, max_bytes, limit, stream)
        assert (page.cursor, page.dropped) == (ref.cursor, ref.dropped), (cursor, max_bytes)
        if max_bytes is not None and page.count > 1:
            assert len(page.data) <= max_bytes
        if limit is not None:
            assert page.count <= limit
        parts.append(page.data)
        dropped += page.dropped
        count += page.count
        if page.eof:
            break
        assert page.count or page.cursor > cursor
        cursor = page.cursor
    assert b"".join(parts) == as_bytes(whole)
    assert (count, dropped, cursor if not page.count else page.cursor) == (
        len(whole.lines),
        whole.dropped,
        whole.cursor,
    )
    return calls


async def _finish(sup: Supervisor, proc_id: int) -> None:
    await sup.wait(proc_id)
    await until(lambda: not sup.get(proc_id).output_open)


def _check_mixed(sup: Supervisor, proc_id: int) -> None:
    whole = same_as_read(sup, proc_id)
    assert whole.eof
    assert whole.data.endswith(b"after the long line\nno newline at the end\n")
    assert b"\xef\xbf\xbd\xef\xbf\xbd byte, caf\xc3\xa9 and the rest\n" in whole.data
    assert b"\nprogress 99%\n" in whole.data and b"\r" not in whole.data
    lines = sup.read(proc_id).lines
    assert any(ln.split for ln in lines)
    seqs = [ln.seq for ln in lines]
    for since in [1, 2, 7, 8, 100, 1234, len(seqs) // 2, seqs[-3], seqs[-2], seqs[-1]]:
        for stream in (None, Stream.STDOUT, Stream.STDERR):
            same_as_read(sup, proc_id, since, stream)
    for max_bytes in (1, 97, 4096, 70000):
        pages(sup, proc_id, max_bytes=max_bytes)
    pages(sup, proc_id, 5, Stream.STDERR, max_bytes=300)
    pages(sup, proc_id, 3, Stream.STDOUT, limit=777)
    pages(sup, proc_id, 0, None, limit=1000, max_bytes=5000)


@pytest.mark.promise("History: Bulk reads")
def test_mixed_output_live_and_past(run):
    async def first():
        async with Supervisor() as sup:
            p = await sup.spawn(py(MIXED), session="s", agent="a")
            await _finish(sup, p.id)
            _check_mixed(sup, p.id)
            return p.id

    async def second(proc_id):
        async with Supervisor() as sup:
            assert not sup.get(proc_id).live
            _check_mixed(sup, proc_id)

    run(second(run(first())))


@pytest.mark.promise("History: Bulk reads")
def test_plain_output_is_copied_from_the_logs(run, monkeypatch):
    """Plain lines never become Line objects: the bulk path alone answers."""

    async def first():
        async with Supervisor() as sup:
            p = await sup.spawn(py(PLAIN), session="s", agent="a")
            await _finish(sup, p.id)
            same_as_read(sup, p.id)
            return p.id

    async def second(proc_id):
        async with Supervisor() as sup:
            want = {s: sup.read(proc_id, stream=s) for s in (None, *Stream)}
            sinces = [0, 1, 2, 999, 12345, 20000, 43000, want[None].cursor - 1]

            def no_lines(*args, **kwargs):
                raise AssertionError("read_bytes made lines")

            with monkeypatch.context() as m:
                m.setattr(DiskOutput, "read", no_lines)
                got = {s: sup.read_bytes(proc_id, stream=s) for s in want}
                head = sup.read_bytes(proc_id, limit=2000)
                mids = [sup.read_bytes(proc_id, since, max_bytes=1 << 16) for since in sinces]
            for s, batch in got.items():
                assert batch.data == as_bytes(want[s])
                assert (batch.count, batch.cursor) == (len(want[s].lines), want[s].cursor)
            assert head.data == as_bytes(sup.read(proc_id, limit=2000))
            assert head.count == 2000
            for since, batch in zip(sinces, mids, strict=True):
                ref = sup.read(proc_id, since, limit=batch.count)
                assert batch.data == as_bytes(ref)
                assert batch.cursor == ref.cursor
                assert 1 << 14 <= len(batch.data) <= 1 << 16 or batch.eof
            calls = pages(sup, proc_id, max_bytes=1 << 20)
            assert calls <= 3
            pages(sup, proc_id, 7, Stream.STDOUT, max_bytes=100_000)
            pages(sup, proc_id, 0, Stream.STDERR, limit=1500)
            pages(sup, proc_id, want[None].cursor - 300, None, max_bytes=33)

    run(second(run(first())))


def test_reads_are_journaled_plain_only_when_ascii_without_cr_or_pieces(tmp_path):
    """The journal marks a read PLAIN only when it is ASCII without \r and cut
    no piece of a long line, also for a part of a read buffer, and a cut
    keeps the marks of what it keeps."""
    logs = {s: LogFile(str(tmp_path / f"1.{s.value}.log")) for s in Stream}
    disk = DiskLog(logs, str(tmp_path / "1.journal"), 4096)
    buf = bytearray(b"\xc3\xa9\r" * 100)  # stale bytes past a short read
    reads = [  # (bytes, cut a piece of an over-long line, PLAIN)
        (b"plain line\n" * 20, False, True),
        (b"a redraw\rdone\n", False, False),
        (b"caf\xc3\xa9\n", False, False),
        (b"invalid \xff\n", False, False),
        (b"a piece of a long line\n", True, False),
        (b"and plain again\n", False, True),
    ]
    for i in range(12):  # past the cap: the middle is cut
        for data, split, _ in reads:
            buf[: len(data)] = data
            disk.write(Stream.STDOUT, memoryview(buf)[: len(data)], float(i), 0, 0, split=split)
    disk.write(Stream.STDERR, memoryview(b"whole\n"), 99.0, 0, 0, split=False)
    disk.close()
    records = journal_records((tmp_path / "1.journal").read_bytes())
    first_cut = next(i for i, r in enumerate(records) if r.kind == CUT)
    head = records[:first_cut]
    tail = [r for r in records[first_cut:] if r.kind == DATA]
    assert all(r.kind == DATA for r in head)
    assert len(head) + len(tail) < 12 * len(reads) + 1
    want = [plain for *_, plain in reads] * 12
    # The head, then the newest reads the cut kept, then stderr's one read.
    assert [bool(r.flags & PLAIN_READ) for r in head] == want[: len(head)]
    kept = [bool(r.flags & PLAIN_READ) for r in tail[:-1]]
    assert kept == want[len(want) - len(kept) :]
    assert tail[-1].stream == 1
    assert tail[-1].flags & PLAIN_READ


def test_a_capped_flood_counts_the_cut(run):
    cap = 256 * 1024

    async def first():
        async with Supervisor(log_cap=cap) as sup:
            p = await sup.spawn(py(FLOOD), session="s", agent="a")
            await _finish(sup, p.id)
            q = sup.get(p.id)
            assert q.cut_lines > 150000
            # The ring still holds some of what disk cut: read gives those.
            whole = same_as_read(sup, p.id)
            assert 0 < whole.dropped < q.cut_lines
            pages(sup, p.id, max_bytes=400_000)
            return p.id, q.cut_lines

    async def second(proc_id, cut_lines):
        async with Supervisor(log_cap=cap) as sup:
            whole = same_as_read(sup, proc_id)
            assert whole.dropped == cut_lines
            out = sup.read_bytes(proc_id, stream=Stream.STDOUT).data
            assert out.startswith(b"first line\nline 0000000 ")  # each pipe in its order
            assert out.endswith(b"\nline 0199999 " + b"x" * 60 + b"\nlast line\n")
            assert sup.read_bytes(proc_id, stream="stderr").data == b"err first\nerr last\n"
            lines = sup.read(proc_id).lines
            gap = next(a.seq for a, b in itertools.pairwise(lines) if b.seq > a.seq + 1)
            for since in (0, 1, gap - 1, gap, gap + 1, gap + 500, lines[-1].seq - 2):
                for stream in (None, Stream.STDOUT, Stream.STDERR):
                    same_as_read(sup, proc_id, since, stream)
            for max_bytes in (1, 1000, 50000, 1 << 20):
                pages(sup, proc_id, max_bytes=max_bytes)
            pages(sup, proc_id, 0, Stream.STDERR, max_bytes=10)
            pages(sup, proc_id, gap - 3, Stream.STDOUT, limit=5)

    run(second(*run(first())))


def test_a_running_proc(run):
    """While the child runs: what is on disk and in the ring so far, then the rest."""

    async def main():
        async with Supervisor(ring_lines=500) as sup:
            p = await sup.spawn(
                py(
                    """
                    import sys
                    for i in range(3000):
                        print("before", i)
                    print("ready", flush=True)
                    sys.stdin.readline()
                    print("half a line", end="", flush=True)
                    sys.stdin.readline()
                    print(" and the rest")
                    for i in range(3000):
                        print("after", i)
                    """
                ),
                session="s",
                agent="a",
                stdin=True,
            )
            await sup.wait_for(p.id, "^ready$", regex=True, timeout=10)
            early = same_as_read(sup, p.id)
            assert not early.eof
            assert early.data.endswith(b"before 2999\nready\n")
            await sup.write(p.id, b"\n")
            await until(lambda: p.output_bytes > len(early.data) + 5)
            same_as_read(sup, p.id)  # the unfinished line is not given yet
            assert sup.read_bytes(p.id, early.cursor).count == 0
            await sup.write(p.id, b"\n")
            await _finish(sup, p.id)
            rest = same_as_read(sup, p.id, early.cursor)
            assert rest.data.startswith(b"half a line and the rest\nafter 0\n")
            assert rest.eof
            pages(sup, p.id, max_bytes=2000)

    run(main())


def test_history_off_reads_the_ring(run):
    async def main():
        async with Supervisor(history=False, ring_lines=100) as sup:
            p = await sup.spawn(
                py("for i in range(1000): print('line', i)"), session="s", agent="a"
            )
            await _finish(sup, p.id)
            whole = same_as_read(sup, p.id)
            assert whole.data.startswith(b"line 0\n") and whole.count == 1000
            pages(sup, p.id, max_bytes=100)

    run(main())


def test_max_bytes_must_be_positive(run):
    async def main():
        async with Supervisor() as sup:
            p = await sup.spawn(["echo", "hi"], session="s", agent="a")
            await _finish(sup, p.id)
            for bad in (0, -1, True, 1.5, "10"):
                with pytest.raises(ValueError, match="max_bytes"):
                    sup.read_bytes(p.id, max_bytes=bad)  # type: ignore[arg-type]
            assert sup.read_bytes(p.id, max_bytes=1).data == b"hi\n"
            assert bytes(sup.read_bytes(p.id)) == b"hi\n"

    run(main())


# -- any chunking --------------------------------------------------------------------------


def _disk_bytes(replay: DiskOutput, since: int, stream, limit=None, max_bytes=None):
    sink = ByteSink(since, limit, max_bytes)
    reached = replay.read_bytes(sink, stream)
    return sink.batch(reached)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
# A "\r" two reads before the plain reads that end its line.
@example(b"", b"aa\r\n\ra\n", [5, 6], random.Random(0), None, [], 1, 1)
@given(
    streams,
    streams,
    st.lists(st.integers(0, 10**6), max_size=20),
    st.randoms(),
    st.sampled_from([None, 300, 700, 1500]),
    st.lists(st.integers(0, 400), max_size=4),
    st.integers(1, 60),
    st.integers(1, 6),
)
def test_any_chunking_gives_the_bytes_of_the_lines(
    out, err, points, rnd, cap, starts, max_bytes, limit
):
    """From any seq, one stream or both, whole or in pages, read_bytes gives
    what the replay's lines are, also where a small cap cut the middle."""
    merged = interleave(out, err, points, rnd)
    with tempfile.TemporaryDirectory() as tmp:
        logs = {s: os.path.join(tmp, f"1.{s.value}.log") for s in Stream}
        journal = os.path.join(tmp, "1.journal")
        disk = DiskLog({s: LogFile(path) for s, path in logs.items()}, journal, cap)
        store = capture(merged, disk)
        disk.close()
        with DiskOutput(logs, journal, finished=True, line_max=LIMIT) as replay:
            if cap is None:
                assert replay.read(0) == store.read(0)
            for since in {0, *starts}:
                for stream in (None, *Stream):
                    lines, dropped, cursor = replay.read(since, None, stream)
                    whole = _disk_bytes(replay, since, stream)
                    assert whole.data == b"".join(b for _, b in encode_lines(lines))
                    assert (whole.count, whole.dropped, whole.cursor) == (
                        len(lines),
                        dropped,
                        cursor,
                    )
                    for bounds in ((None, max_bytes), (limit, None), (limit, max_bytes)):
                        pos, parts, gone = since, [], 0
                        for _ in range(10_000):
                            page = _disk_bytes(replay, pos, stream, *bounds)
                            ref, ref_dropped, ref_cursor = replay.read(pos, page.count, stream)
                            assert page.data == b"".join(b for _, b in encode_lines(ref))
                            assert (page.cursor, page.dropped) == (ref_cursor, ref_dropped)
                            parts.append(page.data)
                            gone += page.dropped
                            if page.eof:
                                break
                            assert page.count or page.cursor > pos
                            pos = page.cursor
                        assert b"".join(parts) == whole.data
                        assert gone == whole.dropped


def test_a_journal_without_plain_marks_reads_the_same(tmp_path):
    """A journal written before reads were marked PLAIN, where every read is
    checked, gives the same bytes as the same journal with its marks."""
    rnd = random.Random(7)

    def output(size: int) -> bytes:
        lines = []
        for _ in range(size):
            line = b"ab c"[: rnd.randrange(5)] * rnd.randrange(3)
            odd = rnd.random()
            if odd < 0.02:
                line += b"\r" + line
            elif odd < 0.04:
                line += "café".encode()
            elif odd < 0.05:
                line += b"x" * (LIMIT * 3)  # cut into pieces
            lines.append(line + b"\n")
        return b"".join(lines)

    merged = interleave(output(3000), output(800), [rnd.randrange(10**6) for _ in range(400)], rnd)
    logs = {s: str(tmp_path / f"1.{s.value}.log") for s in Stream}
    marked = tmp_path / "1.journal"
    disk = DiskLog({s: LogFile(path) for s, path in logs.items()}, str(marked), None)
    capture(merged, disk)
    disk.close()
    records = journal_records(marked.read_bytes())
    flags = [bool(r.flags & PLAIN_READ) for r in records if r.kind == DATA]
    assert any(flags) and not all(flags)
    unmarked = tmp_path / "2.journal"
    unmarked.write_bytes(
        b"".join(
            RECORD.pack(r.time, r.last_seq, r.end, r.extra, r.stream | r.kind << 8) for r in records
        )
    )
    got = {}
    for journal in (marked, unmarked):
        with DiskOutput(logs, str(journal), finished=True, line_max=LIMIT) as replay:
            got[journal] = [
                _disk_bytes(replay, since, stream, *bounds)
                for since in (0, 1, 77, 1500)
                for stream in (None, *Stream)
                for bounds in ((None, None), (None, 100), (50, 5000))
            ]
            if journal == marked:
                lines, _, _ = replay.read(0)
                assert got[journal][0].data == b"".join(b for _, b in encode_lines(lines))
    assert got[marked] == got[unmarked]
