"""Capture from a command on a terminal (``pty=True``) against the same command on
pipes, in the same run; and what the kernel's pseudo-terminal allows at all (a
bare read loop on a PTY master, no procwindow), the ceiling of the first.

    python benchmarks/bench_pty.py [--mb 32] [--pairs 5]

Each pair runs ``cat FILE`` (MB of 100-byte lines) three ways, in turn; the
medians and the ratios pair by pair are printed. None asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.bench_core import _line_file
from procwindow import Supervisor


async def _procwindow(path: Path, log_dir: str, pty: bool) -> tuple[float, int]:
    async with Supervisor(log_dir=log_dir, history=False) as sup:
        t0 = time.perf_counter()
        p = await sup.spawn(["cat", str(path)], session="bench", agent="pty", pty=pty)
        await sup.wait(p.id)
        while p.output_open:
            await asyncio.sleep(0.001)
        elapsed = time.perf_counter() - t0
        if pty:  # the screen model's catch-up, as a reader asking for the screen pays it
            t1 = time.perf_counter()
            await sup.screen(p.id)
            elapsed += time.perf_counter() - t1
        return elapsed, p.last_seq


def _bare_pty(path: Path) -> float:
    """A read loop on a PTY master: what the kernel's terminal passes at most."""
    master, slave = os.openpty()
    t0 = time.perf_counter()
    child = subprocess.Popen(["cat", str(path)], stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    while True:
        try:
            if not os.read(master, 1 << 20):
                break
        except OSError:  # EIO: the terminal's last holder closed it
            break
    child.wait()
    os.close(master)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=32)
    ap.add_argument("--pairs", type=int, default=5)
    args = ap.parse_args()
    path = _line_file(args.mb)
    pipes, ptys, bare = [], [], []
    with tempfile.TemporaryDirectory() as log_dir:
        for _ in range(args.pairs):
            t_pipe, n_pipe = asyncio.run(_procwindow(path, log_dir, pty=False))
            t_pty, n_pty = asyncio.run(_procwindow(path, log_dir, pty=True))
            t_bare = _bare_pty(path)
            assert n_pipe == n_pty, (n_pipe, n_pty)  # every line, both ways
            pipes.append(t_pipe)
            ptys.append(t_pty)
            bare.append(t_bare)
            print(
                f"pipes {args.mb / t_pipe:7.1f} MB/s   pty {args.mb / t_pty:6.1f} MB/s"
                f"   bare pty {args.mb / t_bare:6.1f} MB/s   pty/pipes time"
                f" {t_pty / t_pipe:5.1f}x   pty/bare {t_pty / t_bare:4.2f}x"
            )
    med = statistics.median
    print(
        f"median of {args.pairs}: pipes {args.mb / med(pipes):.1f} MB/s, pty"
        f" {args.mb / med(ptys):.1f} MB/s, bare pty read loop {args.mb / med(bare):.1f} MB/s;"
        f" pty takes {med(p / q for p, q in zip(ptys, pipes, strict=False)):.1f}x the time of pipes and"
        f" {med(p / b for p, b in zip(ptys, bare, strict=False)):.2f}x that of the bare loop"
    )


if __name__ == "__main__":
    main()
