"""Events, topic patterns, slow subscribers."""

from __future__ import annotations

import asyncio

import pytest

from procwindow import EventKind, ExitReason, InvalidPattern, ProcState, Supervisor
from procwindow.core import Pattern

from .helpers import IGNORES_TERM, py, until

# Lifecycle, events and capture run on both event loops in the fast tier too.
pytestmark = pytest.mark.both_loops


@pytest.mark.parametrize(
    ("pattern", "topic", "hit"),
    [
        ("session.*.agent.*.proc.>", "session.s1.agent.a1.proc.exit", True),
        ("session.s1.>", "session.s1.agent.a1.proc.start", True),
        ("session.s1.>", "session.s2.agent.a1.proc.start", False),
        ("session.s1.agent.a1.proc.exit", "session.s1.agent.a1.proc.exit", True),
        ("session.s1.agent.a1.proc.exit", "session.s1.agent.a1.proc.start", False),
        ("session.*.agent.*.proc.start", "session.s1.agent.a1.proc.start", True),
        ("session.*", "session.s1.agent.a1.proc.start", False),
        (">", "session.s1.agent.a1.proc.start", True),
        ("session.s1.agent.a1.proc.exit.>", "session.s1.agent.a1.proc.exit", False),
    ],
)
def test_pattern_matching(pattern, topic, hit):
    assert Pattern(pattern).matches(topic) is hit


@pytest.mark.parametrize("bad", ["", "a..b", ".a", "a.", "a.>.b", "a.b*", "a.>x", "a b", 5])
def test_invalid_patterns(bad):
    with pytest.raises(InvalidPattern):
        Pattern(bad)


@pytest.mark.promise("Library quickstart")
def test_start_output_exit_dismiss_events(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            everything = sup.subscribe("session.*.agent.*.proc.>")
            only_exit_s1 = sup.subscribe("session.s1.agent.*.proc.exit")
            p = await sup.spawn(
                ["sh", "-c", "echo one; echo two >&2"], session="s1", agent="a1", tool="build"
            )
            q = await sup.spawn(["true"], session="s2", agent="a9")
            await sup.wait(p.id)
            await sup.wait(q.id)
            await until(lambda: not p.output_open and not q.output_open)
            await asyncio.sleep(0.1)  # output events are coalesced
            sup.dismiss(p.id)
            events = []
            while (ev := everything.get_nowait()) is not None:
                events.append(ev)
            mine = [ev for ev in events if ev.proc_id == p.id]
            assert mine[0].kind is EventKind.START
            assert mine[0].topic == "session.s1.agent.a1.proc.start"
            assert (mine[0].os_pid, mine[0].tool, mine[0].cmd) == (
                p.os_pid,
                "build",
                "sh -c 'echo one; echo two >&2'",
            )
            assert mine[-1].kind is EventKind.DISMISS
            exits = [ev for ev in mine if ev.kind is EventKind.EXIT]
            assert len(exits) == 1
            assert exits[0].code == 0
            assert exits[0].reason is ExitReason.EXITED
            outs = [ev for ev in mine if ev.kind is EventKind.OUTPUT]
            covered = {seq for ev in outs for seq in range(ev.first_seq, ev.last_seq + 1)}
            assert covered == {1, 2}
            assert {ev.stream.value for ev in outs} == {"stdout", "stderr"}
            assert any(ev.proc_id == q.id and ev.kind is EventKind.START for ev in events)
            assert [ev.proc_id for ev in only_exit_s1._queue] == [p.id]
            everything.close()
            only_exit_s1.close()
            assert not sup._events.listening

    run(main())


def test_async_iteration_ends_on_close(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            got = []

            async def consume():
                async for ev in sup.subscribe("session.s.agent.a.proc.exit"):
                    got.append(ev.proc_id)

            task = asyncio.ensure_future(consume())
            p = await sup.spawn(["true"], session="s", agent="a")
            await sup.wait(p.id)
            await until(lambda: got == [p.id])
        await asyncio.wait_for(task, 2)  # closing the supervisor ends the iteration

    run(main())


@pytest.mark.promise("Guarantees and limits: A slow subscriber hears of what it missed at once")
def test_slow_subscriber_does_not_block_and_is_told_what_it_missed(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            never_reads = sup.subscribe(">", maxsize=5)
            procs = [await sup.spawn(["true"], session="s", agent="a") for _ in range(20)]
            for p in procs:
                await sup.wait(p.id)
            flood = await sup.spawn(py("for i in range(200000): print(i)"), session="s", agent="a")
            await sup.wait(flood.id)
            await until(lambda: not flood.output_open)
            assert sup.read(flood.id).lines[-1].text == "199999"  # capture went on
            assert never_reads.missed > 30
            first = [never_reads.get_nowait() for _ in range(5)]
            assert all(ev is not None and ev.kind is not EventKind.MISSED for ev in first)
            # The loss is told at once, without waiting for another event.
            gap = never_reads.get_nowait()
            assert gap is not None
            assert (gap.kind, gap.topic, gap.missed) == (
                EventKind.MISSED,
                "missed",
                never_reads.missed,
            )
            assert never_reads.get_nowait() is None
            p = await sup.spawn(["true"], session="s", agent="a")
            await sup.wait(p.id)
            nxt = never_reads.get_nowait()
            assert nxt is not None
            assert (nxt.kind, nxt.missed) == (EventKind.START, 0)  # told once, not twice

    run(main())


@pytest.mark.promise("Guarantees and limits: A slow subscriber hears of what it missed at once")
def test_a_subscriber_blocked_on_an_empty_queue_hears_of_a_gap(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            sub = sup.subscribe("session.s.>", maxsize=2)
            procs = [await sup.spawn(["true"], session="s", agent="a") for _ in range(4)]
            for p in procs:
                await sup.wait(p.id)
            got = [await asyncio.wait_for(sub.__anext__(), 5) for _ in range(3)]
            # The first two events of four procs' start and exit (which come
            # first depends on how soon `true` exits), then the news of the rest.
            assert got[0].kind is EventKind.START
            assert got[1].kind in (EventKind.START, EventKind.EXIT)
            assert got[2].kind is EventKind.MISSED
            assert got[2].missed == sub.missed > 0

    run(main())


def test_stopping_is_announced_before_the_exit(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path, graceful_timeout=0.3) as sup:
            sub = sup.subscribe("session.s.agent.*.proc.>")
            stubborn = await sup.spawn(
                IGNORES_TERM,
                session="s",
                agent="a",
            )
            await until(lambda: sup.read(stubborn.id).lines)
            killed = await sup.spawn(["sleep", "60"], session="s", agent="b")
            term = asyncio.ensure_future(sup.term(stubborn.id))
            await until(lambda: stubborn.state is ProcState.STOPPING)
            await sup.kill(killed.id)
            await term
            kinds = {}
            while (ev := sub.get_nowait()) is not None:
                if ev.kind is not EventKind.OUTPUT:
                    kinds.setdefault(ev.proc_id, []).append(ev.kind)
            assert kinds[stubborn.id] == [EventKind.START, EventKind.STOPPING, EventKind.EXIT]
            assert kinds[killed.id] == [EventKind.START, EventKind.STOPPING, EventKind.EXIT]

    run(main())
