"""idx(), top(), stats(): what the window and ctl print."""

from __future__ import annotations

import asyncio
import os

from procwindow import Supervisor
from procwindow.core._reports import STATS_MIN_INTERVAL

from .helpers import py, until

REFERENCE_IDX = (
    "pid\tstatus\texit_code\ttool\tcmd\tstart_unix\truntime_sec\n"
    "5\trunning\t-1\tshell\tmake test\t1723456789\t45.2\n"
    "3\texited\t0\tweb_fetch\tfetch docs\t1723456700\t12.5\n"
)


class FakeClock:
    def __init__(self) -> None:
        self.wall = 0.0
        self.mono = 0.0

    def time(self) -> float:
        return self.wall

    def monotonic(self) -> float:
        return self.mono


def test_idx_matches_the_reference_byte_for_byte(run, tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in (("make", "sleep 60"), ("fetch", "exit 0")):
        script = bin_dir / name
        script.write_text(f"#!/bin/sh\n{body}\n")
        script.chmod(0o755)
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}"}
    clock = FakeClock()

    async def main():
        async with Supervisor(log_dir=tmp_path / "logs", clock=clock) as sup:
            for _ in range(2):
                p = await sup.spawn(["true"], session="s", agent="a")
                await sup.wait(p.id)
                sup.dismiss(p.id)
            clock.wall, clock.mono = 1723456700.0, 1000.0
            fetch = await sup.spawn(
                ["fetch", "docs"], session="s", agent="a", tool="web_fetch", env=env
            )
            clock.mono = 1012.5
            await sup.wait(fetch.id)
            other = await sup.spawn(["true"], session="s", agent="a")
            await sup.wait(other.id)
            sup.dismiss(other.id)
            clock.wall, clock.mono = 1723456789.0, 2000.0
            make = await sup.spawn(["make", "test"], session="s", agent="a", env=env)
            clock.mono = 2045.2
            assert make.id == 5
            assert sup.idx() == REFERENCE_IDX
            assert sup.idx(session="s", agent="a") == REFERENCE_IDX
            assert sup.idx(session="other") == REFERENCE_IDX.splitlines(keepends=True)[0]
            top = sup.top()
            assert top.splitlines()[0].split() == [
                "ID",
                "PID",
                "SCOPE",
                "TOOL",
                "STATUS",
                "EXIT",
                "RUNTIME",
                "COMMAND",
            ]
            assert "45s" in top.splitlines()[1]
            assert "make test" in top.splitlines()[1]
            assert "0 exited" in top.splitlines()[2]

    run(main())


def test_idx_escapes_tabs_and_newlines_and_shows_signal_codes(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(["sh", "-c", "kill -9 $$", "a\tb\nc"], session="s", agent="a")
            await sup.wait(p.id)
            rows = sup.idx().splitlines()
            assert len(rows) == 2
            cols = rows[1].split("\t")
            assert len(cols) == 7
            assert cols[1:3] == ["exited", "137"]
            assert "a\\tb\\nc" in cols[4]

    run(main())


def test_stats_cover_the_whole_tree(run, tmp_path):
    # The leader sleeps; of its two children one sleeps and one spins.
    tree = """
        import subprocess, sys, time
        kids = [subprocess.Popen([sys.executable, "-c", "b = bytearray(30_000_000); import time; time.sleep(60)"]),
                subprocess.Popen([sys.executable, "-c", "b = bytearray(30_000_000)\\nwhile True: pass"])]
        print("up", flush=True)
        time.sleep(60)
    """

    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(py(tree), session="s", agent="a")
            await until(lambda: sup.read(p.id).lines)
            await until(lambda: sup.stats(p.id).rss > 60_000_000, what="children's memory counted")
            st = sup.stats(p.id)
            assert st.descendants == 2
            assert st.threads >= 3
            # Only the spinning child burns CPU: its share is counted.
            await until(lambda: sup.stats(p.id).cpu_percent > 10, what="a child's CPU counted")

    run(main())


def test_callers_close_together_share_one_sample(run, tmp_path):
    """A table and an output pane sample the same proc at their own pace: within
    STATS_MIN_INTERVAL they read the same sample, never CPU % measured over a few
    milliseconds (which read 0 %, then 337 % for one shell on two cores)."""
    spin = "while True: pass"

    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            p = await sup.spawn(py(spin), session="s", agent="a")
            sup.stats(p.id)  # the first sample: CPU % counts from here
            await asyncio.sleep(STATS_MIN_INTERVAL * 1.2)
            seen = []
            apart = 0
            for _ in range(30):  # two callers, 20 ms apart, for 0.6 s
                first, second = sup.stats(p.id), sup.stats(p.id)
                # The same sample, unless it expired between the two calls (a
                # sample lives STATS_MIN_INTERVAL: at most twice in 0.6 s).
                apart += first != second
                seen += [first.cpu_percent, second.cpu_percent]
                await asyncio.sleep(0.02)
            assert apart <= 2, apart
            # One spinning thread: never more than one core's worth.
            assert max(seen) <= 105, seen
            assert len(set(seen)) <= 3, seen  # a new sample at most every half second

    run(main())
