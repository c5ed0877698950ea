"""Stress: 2,000 short-lived children churned with output and random term/kill,
then dismissed or forgotten."""

from __future__ import annotations

import asyncio
import os
import random
import threading

import psutil
import pytest

from procwindow import ProcState, Supervisor
from procwindow.core._starter import IDLE_LINGER

TOTAL = 2000
IN_FLIGHT = 64
SCRIPTS = [
    "echo out $0; echo err $0 >&2",
    "i=0; while [ $i -lt 50 ]; do echo line $i; i=$((i+1)); done",
    "trap '' TERM; echo stubborn; sleep 5",
    "sleep 5",
    "printf 'progress 1\\rprogress 2\\rdone\\n'; exit 3",
    "sleep 5 & echo bg; wait",
]


@pytest.mark.slow  # a stress test: 2,000 children
def test_churn_2000_children(run, tmp_path):
    me = psutil.Process()

    async def main():
        rng = random.Random(1234)
        async with Supervisor(log_dir=tmp_path, graceful_timeout=0.2, ring_lines=100) as sup:
            # warm up once-only allocations before taking the baseline
            warm = await sup.spawn(["true"], session="s", agent="warm")
            await sup.wait(warm.id)
            sup.dismiss(warm.id)
            await asyncio.sleep(IDLE_LINGER + 0.3)  # the spawn thread goes once idle
            rss0, fds0, threads0 = me.memory_info().rss, me.num_fds(), threading.active_count()
            slots = asyncio.Semaphore(IN_FLIGHT)
            outcomes: dict[str, int] = {}
            kept = {warm.id}  # dismissed: their history stays; the others are forgotten

            async def one(i: int) -> None:
                async with slots:
                    p = await sup.spawn(
                        ["sh", "-c", rng.choice(SCRIPTS), str(i)],
                        session=f"s{i % 5}",
                        agent=f"a{i % 3}",
                    )
                    action = rng.choice(["wait", "term", "kill", "term_soon"])
                    if action == "term":
                        await sup.term(p.id)
                    elif action == "kill":
                        await sup.kill(p.id)
                    elif action == "term_soon":
                        await asyncio.sleep(rng.random() * 0.05)
                        await sup.term(p.id)
                    else:
                        await asyncio.wait_for(sup.wait(p.id), 10)
                        await sup.term(p.id)  # stops what it left behind
                    assert p.state is ProcState.EXITED
                    sup.read(p.id)
                    if i % 2:
                        sup.forget(p.id)
                    else:
                        sup.dismiss(p.id)
                        kept.add(p.id)
                    outcomes[p.exit.reason.value] = outcomes.get(p.exit.reason.value, 0) + 1

            await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(TOTAL))), 240)
            assert sum(outcomes.values()) == TOTAL
            assert set(outcomes) >= {"exited", "failed", "terminated", "killed", "escalated"}
            assert sup.procs() == []
            await asyncio.sleep(1.5)  # the sweep reaps the last orphans
            assert me.num_fds() <= fds0
            assert threading.active_count() == threads0
            grown = me.memory_info().rss - rss0
            assert grown < 32 * 1024 * 1024, f"RSS grew {grown >> 20} MiB"
            assert [c for c in me.children(recursive=True) if c.pid != sup._watchdog.pid] == []
            # Dismissed procs keep their logs and journal; forgotten ones keep nothing.
            # A proc that wrote nothing has no files; one that wrote has its journal
            # and a log per stream that wrote, holding every byte it recorded.
            on_disk = {int(name.split(".")[0]) for name in os.listdir(tmp_path)}
            assert on_disk == {i for i in kept if sup.get(i).output_bytes}
            for i in on_disk:
                assert (tmp_path / f"{i}.journal").is_file()
                logs = [tmp_path / f"{i}.{s}.log" for s in ("stdout", "stderr")]
                logged = sum(log.stat().st_size for log in logs if log.exists())
                assert logged == sup.get(i).output_bytes
            assert {p.id for p in sup.history()} == kept
            print(
                f"\nstress: {outcomes}, RSS +{grown / 2**20:.1f} MiB, fds {me.num_fds() - fds0:+d}"
            )

    run(main())
