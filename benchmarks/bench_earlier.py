"""What reading earlier lines back costs the output pane, on the GUI thread, run by hand.

    QT_QPA_PLATFORM=offscreen python benchmarks/bench_earlier.py [--lines 300000] [--rounds 7]

A proc prints ``--lines`` numbered lines into a Supervisor whose ring holds
10,000 of them (the rest are on disk only), and an OutputModel shows its tail.
Per chunk size (5,000, 10,000 and 20,000 lines, ``EARLIER_CHUNK`` is 10,000)
it measures, median over ``--rounds`` rounds, each from a different place in
the log:

- ``read``: ``Supervisor.read_runs`` of the chunk alone, from the log on disk
  (the baseline: what any reader of those lines pays);
- ``load``: ``OutputModel.loadEarlier()`` as the view calls it: the same read,
  then stripping, the filter scan, the rows announced at the top;
- ``load+filter``: the same with a substring filter set.

The pane must not stutter: a load should stay well under 50 ms. Ratios are
against ``read`` in the same run; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import qasync
from PySide6.QtWidgets import QApplication

from procwindow.core import Supervisor
from procwindow.qt import OutputModel
from procwindow.qt.models import _earlier

RING = 10_000
CHUNKS = (5_000, 10_000, 20_000)


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def measure(sup: Supervisor, proc_id: int, lines: int, chunk: int, rounds: int) -> list[float]:
    """Medians (ms) of read, load and load+filter for chunks of ``chunk`` lines."""
    _earlier.EARLIER_CHUNK = chunk
    read: list[float] = []
    load: list[float] = []
    filtered: list[float] = []
    depths = 3 * rounds
    for r in range(rounds):
        # Each measure reads back from a depth of the log of its own (none read before).
        since = (lines - RING - chunk) * (depths - 3 * r) // (depths + 1)
        started = time.perf_counter()
        sup.read_runs(proc_id, since=since, limit=chunk)
        read.append(time.perf_counter() - started)
        for k, (text, out) in enumerate((("", load), ("7", filtered)), 1):
            since = (lines - RING - chunk) * (depths - 3 * r - k) // (depths + 1)
            model = OutputModel(sup)
            model.maxLines = since + chunk  # its first line: since + chunk + 1
            model.filterText = text
            model.procId = proc_id
            model.maxLines = lines - since - chunk
            model.held = True
            started = time.perf_counter()
            got = model.loadEarlier()
            out.append(time.perf_counter() - started)
            assert got > 0, (chunk, since, got)
            model.close()
    return [_median_ms(read), _median_ms(load), _median_ms(filtered)]


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        async with Supervisor(log_dir=tmp, ring_lines=RING) as sup:
            p = await sup.spawn(
                ["sh", "-c", f"seq 1 {args.lines} | sed 's/^/line /'"], session="b", agent="a"
            )
            await sup.wait(p.id)
            while sup.get(p.id).last_seq < args.lines:
                await asyncio.sleep(0.05)
            print(f"{args.lines:,} lines, ring {RING:,}, {args.rounds} rounds (medians, ms)\n")
            print("| chunk | read | load | load+filter | load / read |")
            print("|---:|---:|---:|---:|---:|")
            for chunk in CHUNKS:
                read, load, filtered = measure(sup, p.id, args.lines, chunk, args.rounds)
                print(
                    f"| {chunk:,} | {read:.1f} | {load:.1f} | {filtered:.1f} | {load / read:.2f} |"
                )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=7)
    app = QApplication(sys.argv[:1])
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    with loop:
        loop.run_until_complete(main(parser.parse_args()))
