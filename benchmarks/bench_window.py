"""A real ProcWindow under load, run by hand. Nothing is asserted; each mode
prints medians, and ratios against a baseline measured in the same run.

    QT_QPA_PLATFORM=offscreen python benchmarks/bench_window.py lag  [--seconds 10] [--runs 3] [--procs N] [--log-root DIR]
    QT_QPA_PLATFORM=offscreen python benchmarks/bench_window.py pane [--sizes 10000,100000,1000000] [--seconds 5] [--profile FILE]
    QT_QPA_PLATFORM=offscreen python benchmarks/bench_window.py all

``lag``: a child writes ~100-byte lines as fast as it can while a ProcWindow
(``open_proc_window`` on a real Supervisor, qasync on a QApplication) streams it.
A probe re-arms ``loop.call_later(0.005)`` and records how late each call comes
(actual - scheduled). After a 0.5 s warm-up it measures for ``--seconds``, then
kills the child through the supervisor. The baseline is the same child for the
same time under plain asyncio with no window; each run pairs the two. Goals:
window p99 lag <= 16 ms, window capture >= 0.5x headless. ``--procs N`` adds N running
children to the flood's scope in both runs: rows of the window's table, their CPU and
memory sampled each second with sparklines (the window's goal is for 100).

``pane``: for each history size N the pane is filled with N lines (``maxLines`` =
N, so every later append also trims as many lines as it adds; the supervisor's
ring holds N lines too), then the same child appends ~1,000 lines every 1/60 s.
It prints medians per append: the model's step (its frame timer: read from the
supervisor, trim, make rows, strip ANSI within budget; this includes the
ListView's synchronous handling of the row signals), of which "read" (the
supervisor's lines into the model's buffer) and "rows" (trimming, the new rows,
and the views' handling of the row signals: inserted rows, or rows that
shifted), "follow" (the scroll to the tail: the view-model's deferred
``positionAtEnd`` and the End key's), and the frame that shows the append (from
the window's UpdateRequest through polish to ``frameSwapped``), with ratios
against the smallest N. "cpu" is the main thread's CPU time over the measured
seconds per append: all of the above and whatever else the thread did (the
supervisor capturing the child, other timers), and it is not inflated when
other processes take the CPU away, as wall-clock times are on a busy machine.

Following the tail: the pane scrolls to the end when the ListView's ``count``
changes; once the model holds ``maxLines`` lines its rows shift instead (the
count stays), and a view at its end stays there. Both modes first leave the pane
on its own (the warm-up) and print its "tail gap" just before the warm-up's last
append: the rows between the model's last row and the last row shown (0 when
it follows). Then, while measuring, they call the pane's ``jumpToLive()`` (the
End key) after each append, so the numbers are those of a pane at the tail.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import os
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("QT_NO_GUI_THREADPOOL", "1")

import qasync
from PySide6.QtCore import QEvent, QMetaObject, QObject, QTimer
from PySide6.QtQuick import QQuickItem, QQuickWindow
from PySide6.QtWidgets import QApplication

from procwindow.app import open_proc_window
from procwindow.core import Proc, Supervisor
from procwindow.core._supervisor import DEFAULT_RING_BYTES, DEFAULT_RING_LINES
from procwindow.qt import OutputModel
from procwindow.qt.window import window_model

#: Set by --app-heap: gc.freeze() once the window is open, as the app does.
FREEZE_HEAP = False
#: Set by --profile: the measured seconds of each pane case are profiled into it.
PROFILE: cProfile.Profile | None = None

SESSION = "bench"
PROBE_INTERVAL = 0.005
WARMUP = 0.5

# Writes ~100-byte lines as fast as the pipe takes them, until killed.
FLOOD = r"""
import os
line = b"%08d flood " + b"lorem ipsum dolor sit amet consectetur adipiscing elit " * 2
block = b"".join((line % i)[:99] + b"\n" for i in range(2560))  # 250 KiB
while True:
    os.write(1, block)
"""

# argv: N, lines per tick, ticks per second. Writes N ~100-byte lines at once,
# waits for SIGUSR1, then writes `per` lines every tick until killed.
PANE = r"""
import os, signal, sys, time
n, per, rate = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
fmt = b"%08d pane " + b"lorem ipsum dolor sit amet consectetur adipiscing elit " * 2
seq = 0
def lines(count):
    global seq
    out = b"".join((fmt % (seq + i))[:99] + b"\n" for i in range(count))
    seq += count
    return out
while seq < n:
    os.write(1, lines(min(10000, n - seq)))
signal.sigwait({signal.SIGUSR1})
tick = 1.0 / rate
due = time.monotonic()
while True:
    os.write(1, lines(per))
    due += tick
    time.sleep(max(0.0, due - time.monotonic()))
"""


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f}"


def _pct(values: list[float], q: float) -> float:
    """The q-quantile (0..1), nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


class LagProbe:
    """Re-arms ``loop.call_later(interval)``; records how late each call comes."""

    def __init__(self, loop: asyncio.AbstractEventLoop, interval: float = PROBE_INTERVAL) -> None:
        self.loop = loop
        self.interval = interval
        self.lateness: list[float] = []
        self._due = 0.0
        self._handle: asyncio.TimerHandle | None = None

    def start(self) -> None:
        self.lateness.clear()
        self._arm()

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _arm(self) -> None:
        self._due = time.perf_counter() + self.interval
        self._handle = self.loop.call_later(self.interval, self._fire)

    def _fire(self) -> None:
        self.lateness.append(time.perf_counter() - self._due)
        if self._handle is not None:
            self._arm()


# == instrumenting a ProcWindow ========================================================


@dataclass
class Step:
    """One append of the output model."""

    seconds: float  # the model's frame step, all of it
    reading: float  # of which: the supervisor's lines into the buffer
    updating: float  # and the rows: trim, scan, the row signals (views included)
    rows: int  # rows appended: inserted at the end, or shifted up (a full pane)
    gap: int  # rows the shown tail was behind the last row, just before the step
    end: float = 0.0  # following after it: the deferred positionAtEnd, and jumpToLive()


class PaneProbe(QObject):
    """Times the output pane of an open ProcWindow.

    - Frames (the basic render loop runs them on this thread): from the window's
      UpdateRequest through polish (``afterAnimating``) to ``frameSwapped``; a
      frame started otherwise (an expose) counts from its polish. The first frame
      after an append that inserted rows is marked.
    - The model's append step, in turns of the loop: its frame timer's and any
      further read's (the reads of the supervisor, timed apart as "read" by
      wrapping the method), then the update of the rows (with the views'
      handling of the row signals), by wrapping that method.
    - Following: the view-model's deferred ``positionAtEnd`` (it runs after the
      step, before the frame), counted with the step that asked for it.
    - With ``press_end``, the pane's ``jumpToLive()`` right after each append
      (on the next loop iteration, as ``Qt.callLater`` would).
    - The main thread's CPU time while ``recording``.
    """

    def __init__(self, window: QQuickWindow) -> None:
        super().__init__()
        self.window = window
        model = window.property("outputModel")
        view = window.findChild(QQuickItem, "outputView")
        pane = window.findChild(QQuickItem, "outputPane")
        if not isinstance(model, OutputModel) or view is None or pane is None:
            raise SystemExit("the ProcWindow has no output pane")
        self.model, self.view, self.pane = model, view, pane
        self.frames: list[tuple[float, float, bool]] = []  # (polish, sync+render, after append)
        self.steps: list[Step] = []
        self._recording = False
        self.cpu = 0.0  # main thread CPU seconds while recording
        self._cpu_from = 0.0
        self.press_end = False
        self._start: float | None = None
        self._polished: float | None = None
        self._marked = False
        self._appended = 0
        self._reading = self._read_step = 0.0
        self._gap = 0
        window.installEventFilter(self)
        window.afterAnimating.connect(self._on_polished)
        window.frameSwapped.connect(self._on_swapped)
        model.rowsInserted.connect(self._rows_inserted)
        model.shifted.connect(self._rows_shifted)
        frames = model._frames
        frames.timer.timeout.disconnect(frames.frame)
        frames.timer.timeout.connect(self._step)
        # The frame loop calls these wrappers; so do the model's own steps.
        frames.read = self._timed(frames.read)
        self._update_rows = model._update_rows
        model._update_rows = self._rows_step  # type: ignore[method-assign]
        self._read_more = frames.read_later._slot
        frames.read_later._slot = self._more
        self._stick_later = window_model(window)._pane._stick_later
        self._stick = self._stick_later._slot
        self._stick_later._slot = self._follow

    @property
    def recording(self) -> bool:
        return self._recording

    @recording.setter
    def recording(self, on: bool) -> None:
        if on and not self._recording:
            self._cpu_from = time.thread_time()
        elif self._recording and not on:
            self.cpu += time.thread_time() - self._cpu_from
        self._recording = on

    def _timed(self, method: Callable[..., int]) -> Callable[..., int]:
        def timed(*args: object, **kwargs: object) -> int:
            t0 = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                self._reading += time.perf_counter() - t0

        return timed

    def reset(self) -> None:
        self.frames.clear()
        self.steps.clear()
        self.cpu = 0.0
        self._cpu_from = time.thread_time()

    def tail_gap(self) -> int:
        """Rows between the model's last row and the last row the view shows."""
        top = float(self.view.property("contentY"))
        bottom = top + float(self.view.property("height"))
        shown = [
            int(item.objectName()[5:])
            for item in self.view.property("contentItem").childItems()
            if item.objectName().startswith("line-")
            and item.isVisible()
            and item.y() < bottom
            and item.y() + item.height() > top
        ]
        rows = self.model.rowCount()
        return rows - 1 - max(shown) if shown else rows

    # -- frames

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.UpdateRequest:
            self._start = time.perf_counter()
        return False

    def _on_polished(self) -> None:
        self._polished = time.perf_counter()
        if self._start is None:
            self._start = self._polished

    def _on_swapped(self) -> None:
        now = time.perf_counter()
        if self.recording and self._start is not None and self._polished is not None:
            self.frames.append((self._polished - self._start, now - self._polished, self._marked))
        self._start = self._polished = None
        self._marked = False

    # -- appends

    def _rows_inserted(self, parent: object, first: int, last: int) -> None:
        self._appended += last - first + 1

    def _rows_shifted(self, rows: int) -> None:
        self._appended += rows

    def _step(self) -> None:
        self._gap = self.tail_gap()
        t0 = time.perf_counter()
        self.model._frames.frame()
        self._read_step += time.perf_counter() - t0

    def _more(self) -> None:
        t0 = time.perf_counter()
        self._read_more()
        self._read_step += time.perf_counter() - t0

    def _rows_step(self, scan: bool) -> None:
        self._appended = 0
        t0 = time.perf_counter()
        self._update_rows(scan=scan)
        updating = time.perf_counter() - t0
        if not self._appended:
            return
        self._marked = True
        if self.recording:
            step = Step(
                self._read_step + updating, self._reading, updating, self._appended, self._gap
            )
            self.steps.append(step)
        self._read_step = self._reading = 0.0
        if self.press_end:
            QTimer.singleShot(0, self._end)

    def _follow(self) -> None:
        t0 = time.perf_counter()
        self._stick()
        if self.recording and self.steps:
            self.steps[-1].end += time.perf_counter() - t0

    def _end(self) -> None:
        t0 = time.perf_counter()
        QMetaObject.invokeMethod(self.pane, "jumpToLive")
        if self.recording and self.steps:
            self.steps[-1].end += time.perf_counter() - t0

    def close(self) -> None:
        self.recording = self.press_end = False
        self._stick_later._slot = self._stick
        self.model._frames.read_later._slot = self._read_more
        self.model._update_rows = self._update_rows  # type: ignore[method-assign]
        self.window.removeEventFilter(self)
        self.window.afterAnimating.disconnect(self._on_polished)
        self.window.frameSwapped.disconnect(self._on_swapped)


def _gaps(alone: list[Step], steps: list[Step]) -> str:
    """The tail gap before the last append of the warm-up / median while End is pressed."""
    last = f"{alone[-1].gap:,}" if alone else "-"
    return f"{last} / {statistics.median(s.gap for s in steps):,.0f}" if steps else f"{last} / -"


async def _until(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out after {timeout:.0f}s waiting for {what}")
        await asyncio.sleep(0.01)


async def _close_window(window: QQuickWindow) -> None:
    window.close()  # the window releases its models and deletes itself
    await asyncio.sleep(0.1)


async def _stop(sup: Supervisor, p: Proc) -> None:
    await sup.kill(p.id)
    await _until(lambda: not p.output_open, 30, "the child's pipes to close")
    sup.dismiss(p.id)


# == lag ================================================================================


@dataclass
class LagResult:
    p50: float
    p99: float
    max: float
    probes: int
    mb_s: float
    note: str = ""


async def _flood(
    sup: Supervisor,
    seconds: float,
    probe: LagProbe,
    measuring: Callable[[], None],
    started: Callable[[Proc], None] = lambda _p: None,
) -> LagResult:
    """Spawn the flood, warm up, measure for ``seconds``, kill it."""
    p = await sup.spawn([sys.executable, "-c", FLOOD], session=SESSION, agent="flood")
    started(p)
    await asyncio.sleep(WARMUP)
    measuring()
    b0, t0 = p.output_bytes, time.perf_counter()
    probe.start()
    await asyncio.sleep(seconds)
    b1, t1 = p.output_bytes, time.perf_counter()
    probe.stop()
    await _stop(sup, p)
    late = probe.lateness
    return LagResult(
        statistics.median(late), _pct(late, 0.99), max(late), len(late), (b1 - b0) / (t1 - t0) / 1e6
    )


async def _idle_procs(sup: Supervisor, count: int) -> None:
    """``count`` running children in the flood's scope: rows of the window's
    table, each with its CPU and memory sampled (the visible ones)."""
    for _ in range(count):
        await sup.spawn(["sleep", "3600"], session=SESSION, agent="flood")


async def _lag_headless(seconds: float, log_dir: str, procs: int) -> LagResult:
    probe = LagProbe(asyncio.get_running_loop())
    async with Supervisor(log_dir=log_dir) as sup:
        await _idle_procs(sup, procs)
        return await _flood(sup, seconds, probe, lambda: None)


async def _lag_window(seconds: float, log_dir: str, procs: int) -> LagResult:
    probe = LagProbe(asyncio.get_running_loop())
    async with Supervisor(log_dir=log_dir) as sup:
        await _idle_procs(sup, procs)
        window = open_proc_window(sup, SESSION, "flood")
        if FREEZE_HEAP:
            gc.freeze()  # as the procwindow app does once its QML is loaded
        pane = PaneProbe(window)
        await asyncio.sleep(0.3)  # first frames
        pane.recording = True
        alone: list[Step] = []

        def measuring() -> None:
            alone.extend(pane.steps)
            pane.reset()
            pane.press_end = True

        # The window streams the flood, also when other rows came first (--procs).
        result = await _flood(
            sup, seconds, probe, measuring, lambda p: window_model(window).stream(p.id)
        )
        pane.close()
        await _close_window(window)
    steps = [s.seconds for s in pane.steps]
    frames = [a + b for a, b, _ in pane.frames]
    result.note = (
        f"{len(steps) / seconds:.0f} appends/s of {statistics.median(s.rows for s in pane.steps):,.0f} rows, "
        f"step median {_ms(statistics.median(steps))} ms (p99 {_ms(_pct(steps, 0.99))}, max {_ms(max(steps))}), "
        f"follow {_ms(statistics.median(s.end for s in pane.steps))} ms; "
        f"{len(frames) / seconds:.0f} frames/s, median {_ms(statistics.median(frames))} ms "
        f"(max {_ms(max(frames))}); tail gap (rows) on its own / End pressed: {_gaps(alone, pane.steps)}"
    )
    return result


def bench_lag(
    seconds: float, runs: int, log_root: str | None, loop: qasync.QEventLoop, procs: int = 0
) -> None:
    headless: list[LagResult] = []
    windowed: list[LagResult] = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(dir=log_root) as logs:
            headless.append(asyncio.run(_lag_headless(seconds, logs, procs)))
        asyncio.set_event_loop(loop)
        with tempfile.TemporaryDirectory(dir=log_root) as logs:
            windowed.append(loop.run_until_complete(_lag_window(seconds, logs, procs)))
    cmd = (
        f"bench_window.py lag --seconds {seconds:g} --runs {runs}"
        + (f" --procs {procs}" if procs else "")
        + (f" --log-root {log_root}" if log_root else "")
    )
    print(
        f"[{cmd}] flood of ~100-byte lines, {seconds:g}s measured per run, "
        f"call_later({PROBE_INTERVAL * 1000:g} ms) probe, medians of {runs} runs"
    )
    for name, results in (("headless asyncio", headless), ("ProcWindow qasync", windowed)):
        print(
            f"  {name:<18} lag p50 {_ms(statistics.median(r.p50 for r in results)):>5} ms  "
            f"p99 {_ms(statistics.median(r.p99 for r in results)):>5} ms  "
            f"max {_ms(statistics.median(r.max for r in results)):>5} ms  "
            f"capture {statistics.median(r.mb_s for r in results):>4.0f} MB/s  "
            f"(runs: {'; '.join(f'p99 {_ms(r.p99)} ms, {r.mb_s:.0f} MB/s' for r in results)})"
        )
    for r in windowed:
        print(f"    window run, {r.probes} probes: {r.note}")
    ratios = [w.mb_s / h.mb_s for h, w in zip(headless, windowed, strict=True)]
    p99 = statistics.median(r.p99 for r in windowed)
    print(
        f"  window p99 lag {_ms(p99)} ms (goal <= 16 ms); capture window/headless median "
        f"{statistics.median(ratios):.2f}x (pairs: {', '.join(f'{r:.2f}' for r in ratios)}; goal >= 0.5x)"
    )


# == pane ===============================================================================


@dataclass
class PaneResult:
    n: int
    fill: float
    seconds: float
    alone: list[Step]
    steps: list[Step]
    frames: list[tuple[float, float, bool]]
    cpu: float  # main thread CPU seconds while measuring

    def cpu_per_append(self) -> float:
        return self.cpu / max(1, len(self.steps))

    def step(self) -> float:
        return statistics.median(s.seconds for s in self.steps)

    def end(self) -> float:
        return statistics.median(s.end for s in self.steps)

    def frame(self) -> float:
        return statistics.median(a + b for a, b, marked in self.frames if marked)

    def total(self) -> float:
        """Median of step + follow, plus the median frame after an append."""
        return statistics.median(s.seconds + s.end for s in self.steps) + self.frame()


async def _pane_case(n: int, per: int, seconds: float, log_dir: str) -> PaneResult:
    ring_lines = max(n, DEFAULT_RING_LINES)
    ring_bytes = max(DEFAULT_RING_BYTES, ring_lines * 128)
    async with Supervisor(log_dir=log_dir, ring_lines=ring_lines, ring_bytes=ring_bytes) as sup:
        agent = f"pane{n}"
        window = open_proc_window(sup, SESSION, agent)
        pane = PaneProbe(window)
        model = pane.model
        model.maxLines = n  # before the window streams anything
        await asyncio.sleep(0.3)
        t0 = time.perf_counter()
        p = await sup.spawn(
            [sys.executable, "-c", PANE, str(n), str(per), "60"], session=SESSION, agent=agent
        )
        await _until(
            lambda: model.procId == p.id and model.lineCount >= n and model.rowCount() >= n,
            120,
            f"the pane to hold {n:,} lines",
        )
        fill = time.perf_counter() - t0
        await asyncio.sleep(0.5)  # the view settles on the tail
        await sup.signal(p.id, signal.SIGUSR1)
        pane.recording = True
        await asyncio.sleep(1.0)  # appends under way, the pane on its own
        alone = list(pane.steps)
        pane.reset()
        pane.press_end = True
        if PROFILE is not None:
            PROFILE.enable()
        await asyncio.sleep(seconds)
        if PROFILE is not None:
            PROFILE.disable()
        pane.close()
        held = model.lineCount
        await _stop(sup, p)
        await _close_window(window)
    if held != n:
        raise SystemExit(f"the pane held {held:,} lines, not {n:,}")
    return PaneResult(n, fill, seconds, alone, pane.steps, pane.frames, pane.cpu)


def bench_pane(sizes: list[int], per: int, seconds: float, loop: qasync.QEventLoop) -> None:
    results: list[PaneResult] = []
    asyncio.set_event_loop(loop)
    for n in sizes:
        with tempfile.TemporaryDirectory() as logs:
            results.append(loop.run_until_complete(_pane_case(n, per, seconds, logs)))
    base = results[0]
    cmd = (
        f"bench_window.py pane --sizes {','.join(str(n) for n in sizes)} "
        f"--per-tick {per} --seconds {seconds:g}"
    )
    print(
        f"[{cmd}] ProcWindow output pane (QML ListView, offscreen), a child appending "
        f"{per:,} lines every 1/60 s, maxLines = history; medians per append over {seconds:g}s, "
        f"End pressed after each append"
    )
    print(
        f"  {'history':>9} {'fill':>5} {'appends':>8} {'rows':>5} {'step':>7} {'p90':>5} "
        f"{'read':>6} {'rows':>6} {'ratio':>6} {'follow':>6} {'frame':>6} {'p90':>5} {'ratio':>6} "
        f"{'total':>7} {'ratio':>6} {'cpu':>7} {'frames/s':>8}  tail gap alone / End"
    )
    for r in results:
        steps = [s.seconds for s in r.steps]
        shown = [a + b for a, b, marked in r.frames if marked]
        print(
            f"  {r.n:>9,} {r.fill:>4.1f}s {len(steps) / r.seconds:>6.1f}/s "
            f"{statistics.median(s.rows for s in r.steps):>5,.0f} "
            f"{_ms(r.step()):>4} ms {_ms(_pct(steps, 0.9)):>5} "
            f"{_ms(statistics.median(s.reading for s in r.steps)):>3} ms "
            f"{_ms(statistics.median(s.updating for s in r.steps)):>3} ms {r.step() / base.step():>5.2f}x "
            f"{_ms(r.end()):>3} ms {_ms(r.frame()):>3} ms {_ms(_pct(shown, 0.9)):>5} "
            f"{r.frame() / base.frame():>5.2f}x {_ms(r.total()):>4} ms {r.total() / base.total():>5.2f}x "
            f"{_ms(r.cpu_per_append()):>4} ms {len(r.frames) / r.seconds:>8.0f}  {_gaps(r.alone, r.steps):>13}"
        )
    worst = max(results, key=PaneResult.total)
    busiest = max(results, key=PaneResult.cpu_per_append)
    print(
        f"  per append (step + follow + frame): {_ms(base.total())} ms at {base.n:,} lines, "
        f"worst {_ms(worst.total())} ms at {worst.n:,} ({worst.total() / base.total():.2f}x); "
        f"main thread CPU per append {_ms(base.cpu_per_append())} ms at {base.n:,}, "
        f"worst {_ms(busiest.cpu_per_append())} ms at {busiest.n:,}; "
        f"DESIGN.md baseline: ListView 4.1 ms per 1,000-line frame, flat from 10k to 1M"
    )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("what", choices=["lag", "pane", "all"])
    ap.add_argument("--seconds", type=float, help="measured time per run (lag 10, pane 5)")
    ap.add_argument("--runs", type=int, default=3, help="lag: window/headless pairs")
    ap.add_argument("--sizes", default="10000,100000,1000000", help="pane: history sizes")
    ap.add_argument("--per-tick", type=int, default=1000, help="pane: lines per 1/60 s")
    ap.add_argument("--log-root", help="lag: where the flood's logs go (default: the temp dir)")
    ap.add_argument(
        "--procs",
        type=int,
        default=0,
        help="lag: this many running children beside the flood, in the window's table "
        "(their CPU and memory sampled, with sparklines); the same in the headless run",
    )
    ap.add_argument(
        "--app-heap",
        action="store_true",
        help="lag: freeze the startup heap as the procwindow app does (an embedding host may not)",
    )
    ap.add_argument(
        "--profile",
        metavar="FILE",
        help="pane: profile the measured seconds (cProfile) into FILE; the times are then "
        "inflated by the profiler",
    )
    args = ap.parse_args()
    global FREEZE_HEAP, PROFILE
    FREEZE_HEAP = args.app_heap
    if args.profile:
        PROFILE = cProfile.Profile()
    app = QApplication(sys.argv[:1])
    app.setQuitOnLastWindowClosed(False)  # each case opens and closes its own window
    loop = qasync.QEventLoop(app)
    try:
        if args.what in ("lag", "all"):
            bench_lag(args.seconds or 10.0, args.runs, args.log_root, loop, args.procs)
        if args.what in ("pane", "all"):
            sizes = [int(s) for s in args.sizes.split(",")]
            bench_pane(sizes, args.per_tick, args.seconds or 5.0, loop)
        if PROFILE is not None:
            PROFILE.dump_stats(args.profile)
    finally:
        asyncio.set_event_loop(loop)
        loop.close()
        asyncio.set_event_loop(None)


if __name__ == "__main__":
    main()
