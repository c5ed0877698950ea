"""Patterns users give: a search with a pathological pattern over history, and
another client's ``idx`` meanwhile. Run by hand; nothing here asserts a time.

    python benchmarks/bench_patterns.py [--quick] [--rounds N] [--dir DIR]

Two corpora of history on disk, each written by 4 procs (``cat`` of a file):

- log text: 100-byte lines of ordinary output, 1 in 1,000 a line of 26 ``a``
  and a ``!`` (what ``(a+)+$`` takes a backtracking engine seconds on);
- a/b text: 100-byte lines of random ``a`` and ``b``, each ending in 21 ``b``
  (``[ab]*a[ab]{20}$`` never matches, and RE2's automaton for it meets new
  states all the time: its slowest case).

A new supervisor on that state dir serves its control socket; it runs
``search`` of each pattern over the whole corpus, and of a quarter of it
(``proc=``: one of the four logs), while a client in another thread sends
``idx`` over the socket every 5 ms. Printed: MB/s of each search (the rate over
the whole against the rate over a quarter: 1.0 = linear in the bytes), the
substring search ``needle`` over the same bytes as a baseline (our time over
its time), and the p50/p99/max round trip of the other client's ``idx``.
Medians over the rounds (default 3).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from procwindow import Supervisor
from procwindow.control import ControlServer

MiB = 1024 * 1024
PROCS = 4
BOMB = r"(a+)+$"
SLOW = r"[ab]*a[ab]{20}$"


def log_text(path: Path, nbytes: int) -> Path:
    row = b"2026-12-04 12:00:00 INFO worker 17 handled request /api/items?page=3 in 12 ms, ok...\n"
    row = row[:99] + b"\n"
    bomb = b"a" * 26 + b"!" + b" " * 72 + b"\n"
    block = row * 999 + bomb
    with path.open("wb") as f:
        for _ in range(max(1, nbytes // len(block))):
            f.write(block)
    return path


def ab_text(path: Path, nbytes: int) -> Path:
    table = bytes(b"ab"[i & 1] for i in range(256))
    with path.open("wb") as f:
        for _ in range(max(1, nbytes // (100 * 10_000))):
            rows = os.urandom(78 * 10_000).translate(table)
            f.write(b"".join(rows[i : i + 78] + b"b" * 21 + b"\n" for i in range(0, len(rows), 78)))
    return path


async def build(state_dir: Path, src: Path) -> list[int]:
    async with Supervisor(history=True, state_dir=state_dir, log_cap=None) as sup:
        ids = []
        for k in range(PROCS):
            p = await sup.spawn(["cat", str(src)], session="bench", agent=f"a{k}")
            await sup.wait(p.id)
            ids.append(p.id)
        while any(sup.get(i).output_open for i in ids):
            await asyncio.sleep(0.05)
        return ids


def idx_client(path: str, stop: threading.Event, rtts: list[float]) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(path)
        f = sock.makefile("rb")
        n = 0
        while not stop.is_set():
            n += 1
            began = time.perf_counter()
            sock.sendall(json.dumps({"op": "idx", "id": n}).encode() + b"\n")
            reply = json.loads(f.readline())
            rtts.append(time.perf_counter() - began)
            assert reply["ok"] is True, reply
            time.sleep(0.005)


async def timed_search(
    state_dir: Path, sock_path: str, pattern: str, regex: bool, proc: int | None
) -> tuple[float, int, list[float]]:
    async with (
        Supervisor(history=True, state_dir=state_dir) as sup,
        ControlServer(sup, sock_path),
    ):
        stop = threading.Event()
        rtts: list[float] = []
        client = threading.Thread(target=idx_client, args=(sock_path, stop, rtts))
        client.start()
        try:
            await asyncio.sleep(0.05)
            began = time.perf_counter()
            hits = 0
            async for _ in sup.search(pattern, regex=regex, proc=proc):
                hits += 1
            elapsed = time.perf_counter() - began
        finally:
            stop.set()
            await asyncio.to_thread(client.join)
        return elapsed, hits, rtts


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def bench(root: Path, name: str, make: object, pattern: str, mb: int, rounds: int) -> None:
    state_dir = root / name.replace("/", "").replace(" ", "-")
    state_dir.mkdir()
    src = make(state_dir.with_suffix(".txt"), mb * MiB // PROCS)  # type: ignore[operator]
    ids = asyncio.run(build(state_dir, src))
    src.unlink()
    total = sum(p.stat().st_size for p in (state_dir / "logs").glob("*.stdout.log"))
    quarter = total / PROCS
    sock_path = str(state_dir.with_suffix(".sock"))
    whole_t, part_t, plain_t, rtts = [], [], [], []
    hits = -1
    for _ in range(rounds):
        elapsed, hits, seen = asyncio.run(timed_search(state_dir, sock_path, pattern, True, None))
        whole_t.append(elapsed)
        rtts += seen
        part_t.append(asyncio.run(timed_search(state_dir, sock_path, pattern, True, ids[0]))[0])
        plain_t.append(asyncio.run(timed_search(state_dir, sock_path, "needle", False, None))[0])
    whole, part, plain = (statistics.median(t) for t in (whole_t, part_t, plain_t))
    print(
        f"  search(r{pattern!r}) over {total / MiB:.0f} MiB of {name}: {whole:.2f} s,"
        f" {hits} hits, {total / 1e6 / whole:.0f} MB/s;"
        f" over a quarter {quarter / 1e6 / part:.0f} MB/s"
        f" (whole/quarter rate {(total / whole) / (quarter / part):.2f});"
        f" substring baseline {total / 1e6 / plain:.0f} MB/s (ours/baseline time {whole / plain:.1f}x)"
    )
    print(
        f"  another client's idx meanwhile: {len(rtts)} calls, p50 {pct(rtts, 0.5) * 1000:.1f} ms,"
        f" p99 {pct(rtts, 0.99) * 1000:.1f} ms, max {max(rtts) * 1000:.1f} ms",
        flush=True,
    )
    shutil.rmtree(state_dir)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="16 MiB of history instead of 100")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", help="where to write (default: the temp dir)")
    args = ap.parse_args()
    mb = 16 if args.quick else 100
    root = Path(tempfile.mkdtemp(prefix="procwindow-bench-patterns-", dir=args.dir))
    os.environ["XDG_STATE_HOME"] = str(root / "xdg")
    print(f"bench_patterns: {args.rounds} rounds, {os.cpu_count()} CPUs, files in {root}")
    try:
        bench(root, "log text", log_text, BOMB, mb, args.rounds)
        bench(root, "a/b text", ab_text, SLOW, mb, args.rounds)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
