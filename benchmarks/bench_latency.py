"""Print -> output event latency of a sparse child, and a flood's capture rate, run by hand.
Nothing is asserted; it prints medians, and ratios against a plain pipe read measured
in the same run.

    python benchmarks/bench_latency.py [--lines 20] [--gap 0.15] [--rounds 3] [--flood 500000]

A sparse child sleeps ``--gap`` seconds (more than OUTPUT_EVENT_INTERVAL), then
prints ``time.monotonic()`` on a line of its own, ``--lines`` times. CLOCK_MONOTONIC
is one clock for every process on Linux, so the delay of a line is the listener's
``time.monotonic()`` when it hears of the line minus the stamp. Four listeners,
interleaved round by round:

- ``pipe`` (the baseline): the child under ``asyncio.create_subprocess_exec``,
  its stdout read with ``readline``: what any supervisor pays at least;
- ``in-process``: a ``Supervisor.subscribe`` listener in this process;
- ``events``: a raw ``events`` subscription on a ``procwindow serve``'s socket
  (``procwindow ctl events``), the child started with ``run`` on another connection;
- ``attached``: a listener of a ``RemoteSupervisor`` on the same socket
  (``procwindow attach``) that has read the proc once, as the window's output
  pane does: its output events come once their lines are here (one ``out`` round
  trip after the server's event).

Flood: a child writes ``--flood`` lines of ~80 bytes as fast as it can, read by
``pipe`` (chunks until EOF, newlines counted) and by the in-process Supervisor
with a listener subscribed (so every read takes the announcing path); lines/s from
the spawn to the end of the output, this process's CPU seconds per million lines,
and output events per second (at most about 1 / OUTPUT_EVENT_INTERVAL).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from procwindow.control.aclient import AsyncClient
from procwindow.control.remote import RemoteSupervisor
from procwindow.core import EventKind, OutputEvent, Supervisor
from procwindow.core._capture import OUTPUT_EVENT_INTERVAL

ROOT = Path(__file__).resolve().parent.parent
SESSION, AGENT = "bench", "latency"
SPARSE = (
    "import sys, time\n"
    "count, gap = int(sys.argv[1]), float(sys.argv[2])\n"
    "for i in range(count):\n"
    "    time.sleep(gap)\n"
    "    print(repr(time.monotonic()), flush=True)\n"
)
FLOOD = (
    "import sys\n"
    "n = int(sys.argv[1])\n"
    "w = sys.stdout.write\n"
    "for i in range(0, n, 1000):\n"
    "    w(''.join(f'line {j:08d} ' + 'x' * 66 + '\\n' for j in range(i, min(n, i + 1000))))\n"
)
KINDS = ("pipe", "in-process", "events", "attached")

#: (proc id, first seq, last seq, when heard) of an output event.
Heard = tuple[int, int, int, float]


@contextlib.contextmanager
def serve(tmp: Path) -> Iterator[str]:
    """A ``procwindow serve`` on a socket of its own; its path."""
    env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp), XDG_STATE_HOME=str(tmp / "state"))
    env["PYTHONPATH"] = str(ROOT)
    path = tmp / "bench.sock"
    proc = subprocess.Popen(
        [sys.executable, "-m", "procwindow", "serve", "--socket", str(path)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while not path.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("procwindow serve did not start")
            time.sleep(0.05)
        yield str(path)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _delays(heard: list[Heard], proc_id: int, stamps: dict[int, float]) -> list[float]:
    """Milliseconds from each stamped line of ``proc_id`` to the event that announced it."""
    out = []
    for proc, first, last, at in heard:
        if proc == proc_id:
            out += [(at - stamps[seq]) * 1000 for seq in range(first, last + 1) if seq in stamps]
    return out


async def until(cond: Callable[[], object], timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise TimeoutError("benchmark step timed out")
        await asyncio.sleep(0.005)


# -- sparse: one listener each ------------------------------------------------------------


async def sparse_pipe(args: argparse.Namespace) -> list[float]:
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", SPARSE, str(args.lines), str(args.gap), stdout=subprocess.PIPE
    )
    assert child.stdout is not None
    out = []
    while line := await child.stdout.readline():
        out.append((time.monotonic() - float(line)) * 1000)
    await child.wait()
    return out


async def sparse_local(sup: Any, args: argparse.Namespace, *, mirror: bool = False) -> list[float]:
    """A Supervisor's or RemoteSupervisor's listener (``mirror``: reading the proc)."""
    heard: list[Heard] = []
    ended: list[int] = []
    sub = sup.subscribe(">")

    async def listen() -> None:
        async for ev in sub:
            if isinstance(ev, OutputEvent):
                heard.append((ev.proc_id, ev.first_seq, ev.last_seq, time.monotonic()))
            elif ev.kind is EventKind.EXIT:
                ended.append(ev.proc_id)

    task = asyncio.ensure_future(listen())
    try:
        argv = [sys.executable, "-c", SPARSE, str(args.lines), str(args.gap)]
        p = await sup.spawn(argv, session=SESSION, agent=AGENT)
        if mirror:
            sup.read(p.id)  # as the output pane does when it shows a proc
        await until(lambda: p.id in ended)
        await until(lambda: len(sup.read(p.id).lines) >= args.lines)
        stamps = {line.seq: float(line.text) for line in sup.read(p.id).lines}
        sup.dismiss(p.id)
        return _delays(heard, p.id, stamps)
    finally:
        sub.close()
        await task


async def sparse_events(path: str, args: argparse.Namespace) -> list[float]:
    heard: list[Heard] = []
    ended: set[int] = set()
    async with AsyncClient(path) as events, AsyncClient(path) as calls:
        stream = events.stream("events", pattern=">")
        await anext(stream)  # subscribed

        async def listen() -> None:
            async for message in stream:
                ev = message.get("event") or {}
                if ev.get("kind") == "output":
                    heard.append((ev["proc"], ev["first_seq"], ev["last_seq"], time.monotonic()))
                elif ev.get("kind") == "exit":
                    ended.add(ev["proc"])

        task = asyncio.ensure_future(listen())
        try:
            argv = [sys.executable, "-c", SPARSE, str(args.lines), str(args.gap)]
            p = await calls.call("run", session=SESSION, agent=AGENT, argv=argv)
            await until(lambda: p["id"] in ended)
            reply = await calls.call("out", proc=p["id"], since=0)
            await calls.call("dismiss", proc=p["id"])
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await stream.aclose()
    return _delays(heard, p["id"], {d["seq"]: float(d["text"]) for d in reply["lines"]})


# -- flood --------------------------------------------------------------------------------


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


async def flood_pipe(lines: int) -> tuple[float, float, float]:
    """(lines/s, CPU s per 1M lines, events/s: none here)."""
    cpu, start = _cpu(), time.perf_counter()
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", FLOOD, str(lines), stdout=subprocess.PIPE
    )
    assert child.stdout is not None
    got = 0
    while chunk := await child.stdout.read(1 << 20):
        got += chunk.count(b"\n")
    await child.wait()
    elapsed = time.perf_counter() - start
    return got / elapsed, (_cpu() - cpu) / got * 1e6, 0.0


async def flood_local(sup: Supervisor, lines: int) -> tuple[float, float, float]:
    events = 0
    sub = sup.subscribe(">")

    async def listen() -> None:
        nonlocal events
        async for ev in sub:
            events += isinstance(ev, OutputEvent)

    task = asyncio.ensure_future(listen())
    try:
        cpu, start = _cpu(), time.perf_counter()
        p = await sup.spawn([sys.executable, "-c", FLOOD, str(lines)], session=SESSION, agent=AGENT)
        await sup.wait(p.id)
        await until(lambda: not p.output_open)
        elapsed = time.perf_counter() - start
        got = p.last_seq
        used = _cpu() - cpu
        sup.dismiss(p.id)
        return got / elapsed, used / got * 1e6, events / elapsed
    finally:
        sub.close()
        await task


# -- the run ------------------------------------------------------------------------------


async def bench(args: argparse.Namespace, socket_path: str, logs: Path) -> None:
    sparse: dict[str, list[float]] = {k: [] for k in KINDS}
    flood: dict[str, list[tuple[float, float, float]]] = {"pipe": [], "in-process": []}
    async with (
        Supervisor(log_dir=logs) as sup,
        await RemoteSupervisor.connect(socket_path) as remote,
    ):
        measures: dict[str, Callable[[], Awaitable[list[float]]]] = {
            "pipe": lambda: sparse_pipe(args),
            "in-process": lambda: sparse_local(sup, args),
            "events": lambda: sparse_events(socket_path, args),
            "attached": lambda: sparse_local(remote, args, mirror=True),
        }
        for r in range(args.rounds):
            for kind in KINDS:
                sparse[kind] += await measures[kind]()
            flood["pipe"].append(await flood_pipe(args.flood))
            flood["in-process"].append(await flood_local(sup, args.flood))
            print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    report(args, sparse, flood)


def report(
    args: argparse.Namespace,
    sparse: dict[str, list[float]],
    flood: dict[str, list[tuple[float, float, float]]],
) -> None:
    interval = OUTPUT_EVENT_INTERVAL * 1000
    base = statistics.median(sparse["pipe"])
    print(
        f"\nsparse: {args.lines} lines {args.gap:g} s apart x {args.rounds} rounds per listener;"
        f" OUTPUT_EVENT_INTERVAL = {interval:g} ms\n"
    )
    print("| print -> heard | lines | median ms | p95 ms | median / interval | median / pipe |")
    print("|---|---|---|---|---|---|")
    for kind in KINDS:
        d = sparse[kind]
        med, p95 = statistics.median(d), statistics.quantiles(d, n=20)[18]
        ratio = "1.00 (baseline)" if kind == "pipe" else f"{med / base:.2f}x"
        print(f"| {kind} | {len(d)} | {med:.2f} | {p95:.2f} | {med / interval:.3f} | {ratio} |")
    rates = {k: [statistics.median(col) for col in zip(*v, strict=True)] for k, v in flood.items()}
    pipe_rate = rates["pipe"][0]
    print(f"\nflood: {args.flood:,} lines of ~80 bytes; medians of {args.rounds} rounds\n")
    print("| flood | lines/s | rate / pipe | CPU s per 1M lines (this process) | output events/s |")
    print("|---|---|---|---|---|")
    for kind, (rate, cpu, events) in rates.items():
        shown = "—" if kind == "pipe" else f"{events:.1f}"
        print(f"| {kind} | {rate:,.0f} | {rate / pipe_rate:.2f}x | {cpu:.2f} | {shown} |")
    print(f"\n(1 / OUTPUT_EVENT_INTERVAL = {1 / OUTPUT_EVENT_INTERVAL:g} events/s per stream)")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lines", type=int, default=20, help="lines per sparse child")
    parser.add_argument("--gap", type=float, default=0.15, help="seconds between them")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--flood", type=int, default=500_000, help="lines of the flood")
    args = parser.parse_args()
    if args.gap <= OUTPUT_EVENT_INTERVAL:
        parser.error(f"--gap must be above OUTPUT_EVENT_INTERVAL ({OUTPUT_EVENT_INTERVAL:g} s)")
    with tempfile.TemporaryDirectory(prefix="bench-latency-") as tmp_name:
        tmp = Path(tmp_name)
        os.environ["XDG_STATE_HOME"] = str(tmp / "own-state")
        with serve(tmp) as socket_path:
            asyncio.run(bench(args, socket_path, tmp / "logs"))


if __name__ == "__main__":
    main()
