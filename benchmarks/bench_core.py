"""Supervisor benchmarks, run by hand. Each prints ratios against a baseline
measured in the same run (medians over several pairs); none asserts a time.

    python benchmarks/bench_core.py capture  [--mb 512] [--pairs 5]
    python benchmarks/bench_core.py spawn    [--n 1000] [--pairs 5]
    python benchmarks/bench_core.py idle     [--n 1000]
    python benchmarks/bench_core.py growth   [--gb 1]
    python benchmarks/bench_core.py all
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from procwindow import Supervisor


def _line_file(mb: int) -> Path:
    path = Path(tempfile.gettempdir()) / f"procwindow-bench-{mb}mb.txt"
    if not path.exists() or path.stat().st_size != mb * 1024 * 1024:
        line = (b"%08d " + b"lorem ipsum dolor sit amet consectetur adipiscing elit " * 2)[
            :99
        ] + b"\n"
        block = b"".join(line.replace(b"%08d", b"%08d" % i) for i in range(1024))  # ~100 KiB
        with open(path, "wb") as f:
            left = mb * 1024 * 1024
            while left:
                n = min(left, len(block))
                f.write(block[:n])
                left -= n
    return path


async def _capture_once(path: Path, log_dir: str) -> tuple[float, int]:
    async with Supervisor(log_dir=log_dir) as sup:
        t0 = time.perf_counter()
        p = await sup.spawn(["cat", str(path)], session="bench", agent="capture")
        await sup.wait(p.id)
        while p.output_open:
            await asyncio.sleep(0.001)
        elapsed = time.perf_counter() - t0
        lines = p.last_seq
        sup.dismiss(p.id)
    return elapsed, lines


def bench_capture(mb: int, pairs: int, log_root: str | None = None) -> None:
    path = _line_file(mb)
    ratios, base_t, sup_t = [], [], []
    for _ in range(pairs):
        t0 = time.perf_counter()
        subprocess.run(f"cat {path} | cat >/dev/null", shell=True, check=True)
        base = time.perf_counter() - t0
        with tempfile.TemporaryDirectory(dir=log_root) as logs:
            elapsed, lines = asyncio.run(_capture_once(path, logs))
        base_t.append(base)
        sup_t.append(elapsed)
        ratios.append(base / elapsed)
    print(
        f"capture {mb} MiB ({lines} lines): cat|cat median {statistics.median(base_t):.2f}s "
        f"({mb / statistics.median(base_t):.0f} MiB/s), supervisor median "
        f"{statistics.median(sup_t):.2f}s ({mb / statistics.median(sup_t):.0f} MiB/s); "
        f"ratio median {statistics.median(ratios):.2f}x (pairs: {', '.join(f'{r:.2f}' for r in ratios)}); goal >= 0.7x; "
        f"logs in {log_root or tempfile.gettempdir()}"
    )


async def _spawn_many(n: int, log_dir: str) -> float:
    async with Supervisor(log_dir=log_dir) as sup:
        t0 = time.perf_counter()
        for _ in range(n):
            p = await sup.spawn(["true"], session="bench", agent="spawn")
            await sup.wait(p.id)
            sup.dismiss(p.id)
        return time.perf_counter() - t0


def _posix_spawn_many(n: int) -> float:
    true = "/bin/true" if os.path.exists("/bin/true") else "/usr/bin/true"
    t0 = time.perf_counter()
    for _ in range(n):
        pid = os.posix_spawn(true, [true], os.environ)
        os.waitpid(pid, 0)
    return time.perf_counter() - t0


def bench_spawn(n: int, pairs: int) -> None:
    ratios, base_t, sup_t = [], [], []
    for _ in range(pairs):
        base = _posix_spawn_many(n)
        with tempfile.TemporaryDirectory() as logs:
            elapsed = asyncio.run(_spawn_many(n, logs))
        base_t.append(n / base)
        sup_t.append(n / elapsed)
        ratios.append(base / elapsed)
    print(
        f"spawn+wait+dismiss of `true` x{n}: posix_spawn median {statistics.median(base_t):.0f}/s, "
        f"supervisor median {statistics.median(sup_t):.0f}/s; ratio median "
        f"{statistics.median(ratios):.2f}x (pairs: {', '.join(f'{r:.2f}' for r in ratios)}); goal >= 0.6x"
    )


async def _idle(n: int, log_dir: str) -> None:
    me = psutil.Process()
    async with Supervisor(log_dir=log_dir) as sup:
        # warm up: the first spawn imports and allocates once-only things
        p = await sup.spawn(["true"], session="bench", agent="idle")
        await sup.wait(p.id)
        sup.dismiss(p.id)
        rss0, fds0, threads0 = me.memory_info().rss, me.num_fds(), threading.active_count()
        for i in range(n):
            await sup.spawn(["sleep", "600"], session="bench", agent=f"a{i % 10}")
        await asyncio.sleep(1.5)  # let a sweep and the loop settle
        rss1, fds1, threads1 = me.memory_info().rss, me.num_fds(), threading.active_count()
        print(
            f"{n} idle children: supervisor RSS +{(rss1 - rss0) / n / 1024:.1f} KiB/child (goal <= 16), "
            f"fds {(fds1 - fds0) / n:.2f}/child (goal <= 3), threads {(threads1 - threads0) / n:.2f}/child (goal 0)"
        )


def bench_idle(n: int) -> None:
    with tempfile.TemporaryDirectory() as logs:
        asyncio.run(_idle(n, logs))


async def _growth(gb: int, log_dir: str) -> None:
    me = psutil.Process()
    async with Supervisor(log_dir=log_dir) as sup:
        rss0 = me.memory_info().rss
        size = gb * 1024**3
        p = await sup.spawn(
            [
                "sh",
                "-c",
                f"yes 'procwindow output line of about sixty bytes ............' | head -c {size}",
            ],
            session="bench",
            agent="growth",
        )
        await sup.wait(p.id)
        while p.output_open:
            await asyncio.sleep(0.01)
        grown = me.memory_info().rss - rss0
        limit = sup.ring_bytes + 32 * 1024 * 1024
        print(
            f"RSS growth after {p.output_bytes / 1024**3:.2f} GiB from one child: {grown / 1024**2:.1f} MiB "
            f"(goal <= ring {sup.ring_bytes / 1024**2:.0f} MiB + 32 MiB = {limit / 1024**2:.0f} MiB); "
            f"ring holds {p.held_bytes / 1024**2:.1f} MiB"
        )
        sup.dismiss(p.id)


def bench_growth(gb: int) -> None:
    with tempfile.TemporaryDirectory() as logs:
        asyncio.run(_growth(gb, logs))


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("what", choices=["capture", "spawn", "idle", "growth", "all"])
    ap.add_argument("--mb", type=int, default=512)
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--gb", type=int, default=1)
    ap.add_argument("--log-root", help="where capture writes its logs (default: the temp dir)")
    args = ap.parse_args()
    if args.what in ("capture", "all"):
        bench_capture(args.mb, args.pairs, args.log_root)
    if args.what in ("spawn", "all"):
        bench_spawn(args.n, args.pairs)
    if args.what in ("idle", "all"):
        bench_idle(args.n)
    if args.what in ("growth", "all"):
        bench_growth(args.gb)


if __name__ == "__main__":
    main()
