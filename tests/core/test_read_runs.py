"""read_runs: the lines read() gives, grouped into runs of one stream and one
read time; live (ring and disk) and past, from any cursor, one stream or both,
with limits, the cap's cut and the unfinished line (partial=True)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from procwindow import Line, LineRun, RunBatch, Stream, Supervisor
from procwindow.core import runs_of
from tests.fuzz.test_fuzz_core import capture, interleave, streams

from ..tiers import examples
from .helpers import py, until
from .test_read_bytes import FLOOD, MIXED, _finish


def same_as_read(
    sup: Supervisor,
    proc_id: int,
    since: int = 0,
    stream: Stream | None = None,
    limit: int | None = None,
    partial: bool = False,
) -> RunBatch:
    """read_runs gives read's lines, in runs that share a stream and a time."""
    want = sup.read(proc_id, since, stream=stream, limit=limit, partial=partial)
    got = sup.read_runs(proc_id, since, stream=stream, limit=limit, partial=partial)
    assert isinstance(got, RunBatch)
    assert got.lines() == want.lines, (since, stream, limit)
    assert (len(got), got.dropped, got.cursor, got.eof) == (
        len(want.lines),
        want.dropped,
        want.cursor,
        want.eof,
    )
    for run in got.runs:
        assert isinstance(run, LineRun) and run.texts
        assert len(run.texts) == 1 or not run.partial
    return got


def check_everywhere(sup: Supervisor, proc_id: int) -> list[int]:
    lines = sup.read(proc_id).lines
    seqs = [ln.seq for ln in lines]
    sinces = {0, 1, 2, 7, 100, 1234, len(seqs) // 2, *seqs[-3:]}
    gaps = [a.seq for a, b in itertools.pairwise(lines) if b.seq > a.seq + 1]
    sinces.update(g + d for g in gaps[:1] for d in (-1, 0, 1, 500))
    for since in sorted(sinces):
        for stream in (None, Stream.STDOUT, Stream.STDERR):
            for limit in (None, 1, 5, 777):
                same_as_read(sup, proc_id, since, stream, limit)
    return seqs


@pytest.mark.promise("History: Bulk reads")
def test_mixed_output_live_and_past(run):
    """Both streams, redraws, a line split in pieces, an unterminated last line:
    from the ring while the supervisor runs, from disk after a restart."""

    async def first():
        async with Supervisor() as sup:
            p = await sup.spawn(py(MIXED), session="s", agent="a")
            await _finish(sup, p.id)
            check_everywhere(sup, p.id)
            whole = same_as_read(sup, p.id)
            assert any(run.split for run in whole.runs)
            assert {run.stream for run in whole.runs} == set(Stream)
            return p.id

    async def second(proc_id):
        async with Supervisor() as sup:
            assert not sup.get(proc_id).live
            check_everywhere(sup, proc_id)

    run(second(run(first())))


def test_a_flood_comes_in_few_runs(run):
    """The ring gives a run per read of the child, not a line each."""

    async def main():
        async with Supervisor(ring_lines=300_000) as sup:
            p = await sup.spawn(
                py(
                    """
                    import os
                    for k in range(100):  # 1,000 lines a write
                        os.write(1, b"".join(b"line %d\\n" % i for i in range(k * 1000, k * 1000 + 1000)))
                    """
                ),
                session="s",
                agent="a",
            )
            await _finish(sup, p.id)
            whole = same_as_read(sup, p.id)
            assert len(whole) == 100_000
            assert len(whole.runs) * 50 < len(whole)
            assert [text for run in whole.runs for text in run.texts] == [
                f"line {i}" for i in range(100_000)
            ]

    run(main())


def test_a_capped_flood_counts_the_cut(run):
    cap = 256 * 1024

    async def first():
        async with Supervisor(log_cap=cap, ring_lines=1000) as sup:
            p = await sup.spawn(py(FLOOD), session="s", agent="a")
            await _finish(sup, p.id)
            assert sup.get(p.id).cut_lines > 150000
            whole = same_as_read(sup, p.id)
            assert whole.dropped > 0
            check_everywhere(sup, p.id)
            return p.id

    async def second(proc_id):
        async with Supervisor(log_cap=cap) as sup:
            whole = same_as_read(sup, proc_id)
            assert whole.dropped == sup.get(proc_id).cut_lines
            check_everywhere(sup, proc_id)

    run(second(run(first())))


def test_the_unfinished_line_is_a_run_of_its_own(run):
    async def main():
        async with Supervisor() as sup:
            p = await sup.spawn(
                py(
                    """
                    import sys
                    for i in range(50):
                        print("line", i)
                    print("err", file=sys.stderr, flush=True)
                    sys.stderr.write("Password: ")
                    sys.stderr.flush()
                    print("progress 10%", end="\\r", flush=True)
                    sys.stdin.readline()
                    """
                ),
                session="s",
                agent="a",
                stdin=True,
            )
            await until(lambda: len(sup.read(p.id, partial=True).lines) == 53)
            batch = same_as_read(sup, p.id, partial=True)
            last = batch.runs[-2:]
            assert all(run.partial and run.first == 52 for run in last)
            assert sorted(text for run in last for text in run.texts) == [
                "Password: ",
                "progress 10%",
            ]
            assert batch.cursor == 51
            same_as_read(sup, p.id, 40, partial=True)
            same_as_read(sup, p.id, 40, Stream.STDERR, partial=True)
            # No room for both unfinished lines: neither comes.
            assert not same_as_read(sup, p.id, 50, limit=1, partial=True).runs[-1].partial
            await sup.write(p.id, b"\n")
            await _finish(sup, p.id)
            same_as_read(sup, p.id, partial=True)

    run(main())


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    streams,
    streams,
    st.lists(st.integers(0, 10**6), max_size=20),
    st.randoms(),
    st.integers(0, 60),
    st.integers(1, 50),
)
def test_ring_runs_are_its_lines(out, err, points, rnd, since, limit):
    store = capture(interleave(out, err, points, rnd))
    for stream in (None, *Stream):
        for lim in (None, limit):
            lines, dropped, cursor = store.read(since, lim, stream)
            runs, dropped_, cursor_ = store.read_runs(since, lim, stream)
            assert RunBatch(runs, 0, 0, False).lines() == lines
            assert (dropped_, cursor_) == (dropped, cursor)


@given(st.lists(st.tuples(st.sampled_from(list(Stream)), st.integers(0, 3), st.booleans())))
def test_grouping_lines_into_runs_keeps_them(shape):
    """runs_of: any lines back as they were, in runs as long as they can be."""
    lines, seq = [], 0
    for i, (stream, step, split) in enumerate(shape):
        seq += step
        lines.append(Line(seq, stream, float(i // 3), f"t{i}", split))
    runs = runs_of(lines)
    assert RunBatch(runs, 0, 0, False).lines() == lines
    for a, b in itertools.pairwise(runs):
        joinable = b.first == a.last + 1 and (a.stream, a.time, a.split) == (
            b.stream,
            b.time,
            b.split,
        )
        assert not joinable


def test_lines_of_a_big_batch_leave_the_cycle_collector_as_it_was() -> None:
    """``lines_of`` pauses the collector for a big batch, and only for it: it is on
    again afterwards (also after a failure), and stays off if it was off."""
    import gc

    from procwindow.core import LineRun, Stream
    from procwindow.core._types import lines_of

    runs = [
        LineRun(1 + i, Stream.STDOUT, 1.0, [f"t{j}" for j in range(i, i + 1000)])
        for i in range(0, 5000, 1000)
    ]
    expected = [line for run in runs for line in run.lines()]
    assert gc.isenabled()
    assert lines_of(runs) == expected
    assert gc.isenabled()

    class Broken(LineRun):
        def lines(self):  # type: ignore[override]
            raise RuntimeError("broken")

    with pytest.raises(RuntimeError):
        lines_of([*runs, Broken(6000, Stream.STDOUT, 1.0, ["x"] * 3000)])
    assert gc.isenabled()
    gc.disable()
    try:
        assert lines_of(runs) == expected
        assert not gc.isenabled()
    finally:
        gc.enable()
