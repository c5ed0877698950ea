"""Output events: a line after a quiet spell is announced at once, a flood at a bounded rate.

Children print ``time.monotonic()`` (CLOCK_MONOTONIC, one clock for every process
on Linux) as they write a line; a listener compares it with its own clock when it
hears the event. What is asserted are relations to OUTPUT_EVENT_INTERVAL, not
machine speeds: the announcement itself is timed on the supervisor's own clock
against the line's capture (the same read takes both, so it is ~0 however loaded the
machine is, and OUTPUT_EVENT_INTERVAL when events wait for a timer); print to
listener, which holds the scheduler's waits too, only for the fastest line.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from dataclasses import dataclass

from procwindow import EventKind, OutputEvent, PartialEvent, Stream, Supervisor
from procwindow.core import Event, Subscription
from procwindow.core._capture import OUTPUT_EVENT_INTERVAL

from ..tiers import scaled
from .helpers import py, until

#: Prints its clock on a line of its own every ``gap`` seconds, ``count`` times.
SPARSE = """
    import sys, time
    count, gap = int(sys.argv[1]), float(sys.argv[2])
    for i in range(count):
        if i:
            time.sleep(gap)
        print(repr(time.monotonic()), flush=True)
"""

#: Writes a burst of lines to stdout, then to stderr, every millisecond for
#: ``seconds``: output keeps coming, far more often than OUTPUT_EVENT_INTERVAL.
FLOOD = """
    import sys, time
    end = time.monotonic() + float(sys.argv[1])
    chunk = "".join(f"flood {i:04d}\\n" for i in range(50))
    while time.monotonic() < end:
        sys.stdout.write(chunk)
        sys.stdout.flush()
        sys.stderr.write(chunk)
        sys.stderr.flush()
        time.sleep(0.001)
"""

#: Lines of both streams, interleaved, then a prompt left unterminated past
#: PARTIAL_DELAY (a partial line), then the exit.
ORDERED = """
    import sys, time
    for i in range(300):
        print(f"out {i}", flush=True)
        print(f"err {i}", file=sys.stderr, flush=True)
        if i % 50 == 0:
            time.sleep(0.06)
    sys.stdout.write("prompt> ")
    sys.stdout.flush()
    time.sleep(0.5)
"""


@dataclass(frozen=True, slots=True)
class _Heard:
    """An event and when the listener got it (its monotonic clock)."""

    event: Event
    at: float


async def _listen(sub: Subscription, heard: list[_Heard]) -> None:
    async for ev in sub:
        heard.append(_Heard(ev, time.monotonic()))


def _delays(sup: Supervisor, proc_id: int, heard: list[_Heard]) -> tuple[list[float], list[float]]:
    """Per line of ``proc_id``: (print to heard, capture to announced), in seconds."""
    to_listener, to_announce = [], []
    for h in heard:
        ev = h.event
        if not (isinstance(ev, OutputEvent) and ev.proc_id == proc_id):
            continue
        for line in sup.read(proc_id, ev.first_seq - 1, limit=ev.last_seq - ev.first_seq + 1):
            to_listener.append(h.at - float(line.text))
            to_announce.append(ev.time - line.time)
    return to_listener, to_announce


def test_a_line_after_a_quiet_spell_is_announced_at_once(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            heard: list[_Heard] = []
            sub = sup.subscribe()
            listener = asyncio.ensure_future(_listen(sub, heard))
            p = await sup.spawn([*py(SPARSE), "6", "0.3"], session="s", agent="a")
            await sup.wait(p.id, timeout=30)
            await until(lambda: not p.output_open)
            await until(lambda: any(h.event.kind is EventKind.EXIT for h in heard))
            sub.close()
            await listener
            to_listener, to_announce = _delays(sup, p.id, heard)
            assert len(to_listener) == 6
            # Announced by the read that took the line, not OUTPUT_EVENT_INTERVAL later.
            assert statistics.median(to_announce) < OUTPUT_EVENT_INTERVAL / 2
            # Print to listener also holds the scheduler's waits (child, supervisor,
            # listener task), which an overloaded machine stretches past the interval
            # now and then; but no line could be heard this soon behind a timer.
            assert min(to_listener) < scaled(OUTPUT_EVENT_INTERVAL / 2)

    run(main())


def test_a_flood_is_announced_at_a_bounded_rate_and_delays_no_idle_neighbour(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            heard: list[_Heard] = []
            sub = sup.subscribe()
            listener = asyncio.ensure_future(_listen(sub, heard))
            flood = await sup.spawn([*py(FLOOD), "1.0"], session="s", agent="a")
            idle = await sup.spawn([*py(SPARSE), "8", "0.1"], session="s", agent="a")
            for p in (flood, idle):
                await sup.wait(p.id, timeout=30)
                await until(lambda p=p: not p.output_open)
            await until(lambda: sum(h.event.kind is EventKind.EXIT for h in heard) == 2)
            sub.close()
            await listener
            lines = sup.get(flood.id).last_seq
            for stream in (Stream.STDOUT, Stream.STDERR):
                times = [
                    h.event.time
                    for h in heard
                    if isinstance(h.event, OutputEvent)
                    and h.event.proc_id == flood.id
                    and h.event.stream is stream
                ]
                # One event per window, and one more where a window began with one
                # (and at the exit): never one per read.
                assert len(times) <= (times[-1] - times[0]) / OUTPUT_EVENT_INTERVAL + 4
                assert len(times) * 20 < lines
            # The idle child's lines are announced by the reads that take them.
            # Events coalesced by a timer would wait a random part of the flood's
            # windows: at most a line or two under a tenth of one.
            _, to_announce = _delays(sup, idle.id, heard)
            assert len(to_announce) == 8
            assert sum(d < OUTPUT_EVENT_INTERVAL / 10 for d in to_announce) >= 6

    run(main())


def test_spans_come_in_seq_order_before_the_partial_line_and_the_exit(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            sub = sup.subscribe()
            p = await sup.spawn(py(ORDERED), session="s", agent="a")
            await sup.wait(p.id, timeout=30)
            await until(lambda: not p.output_open)
            mine = []
            while (ev := sub.get_nowait()) is not None:
                if ev.proc_id == p.id and ev.kind is not EventKind.START:
                    mine.append(ev)
            sub.close()
            assert mine[-1].kind is EventKind.EXIT
            last_seq = mine[-1].last_seq
            outs = [ev for ev in mine if isinstance(ev, OutputEvent)]
            assert all(isinstance(ev, (OutputEvent, PartialEvent)) for ev in mine[:-1])
            # Spans of one child in seq order; each event's lines are of its stream,
            # and together they are every line, once.
            assert [ev.first_seq for ev in outs] == sorted({ev.first_seq for ev in outs})
            lines = sup.read(p.id).lines
            by_seq = {line.seq: line.stream for line in lines}
            covered = [
                seq
                for ev in outs
                for seq in range(ev.first_seq, ev.last_seq + 1)
                if by_seq.get(seq) is ev.stream
            ]
            assert sorted(covered) == list(range(1, last_seq + 1))
            assert len(covered) == len(set(covered)) == len(lines) == 601
            # The prompt is shown after the lines before it, and completed (at
            # the exit) after it is shown.
            shown = [i for i, ev in enumerate(mine) if isinstance(ev, PartialEvent)]
            assert shown
            assert mine[shown[0]].first_seq == last_seq
            before = [ev for ev in mine[: shown[0]] if isinstance(ev, OutputEvent)]
            assert max(ev.last_seq for ev in before) == last_seq - 1
            assert outs[-1].last_seq == last_seq
            assert mine.index(outs[-1]) > shown[-1]

    run(main())
