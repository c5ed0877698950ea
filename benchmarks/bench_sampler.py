"""The process table's CPU/memory sampler and its sparklines, run by hand. Nothing is
asserted; each mode prints medians, and ratios against a baseline measured in the same run.

    QT_QPA_PLATFORM=offscreen python benchmarks/bench_sampler.py sample [--procs 1000] [--window 40] [--ticks 15]
    QT_QPA_PLATFORM=offscreen python benchmarks/bench_sampler.py draw [--rows 100] [--ticks 30]
    QT_QPA_PLATFORM=offscreen python benchmarks/bench_sampler.py all

``sample``: a real Supervisor runs ``--procs`` ``sleep 3600`` children in one scope;
a ProcModel shows them. Its 1 s tick handler (``_on_timer``: the runtime tick, then
one sample per running row in view through ``Supervisor.stats``, then the
``dataChanged`` it announces) is timed by hand, once with every row in view
(``setVisibleRows(0, procs - 1)``) and once with ``--window`` rows in view, as the
loop time of one tick. The baseline, for the same pids, is a plain loop of
``psutil.Process(pid).cpu_times()`` and ``.memory_info()``. Rounds interleave the
four and sleep 0.15 s between calls, as a 1 s timer would (the supervisor reuses a
/proc snapshot for 0.1 s). No view listens: the delegates' cost is ``draw``'s.

``draw``: ``--rows`` rows on screen, each with two 120x10 sparklines of 60 samples
(CPU, memory), all of which take a new sample per tick (one ``dataChanged`` over the
rows). Per tick it times the model's signal with the delegates' binding updates, and
that followed by a frame (``grabWindow``: polish, sync, render), for: a text of the
last value only (the baseline); the ``Sparkline`` item (a ``QQuickPaintedItem``
painting in Python) reading its polylines from the model when an int role changes,
as the ProcTable does, with and without the fill it shows; the same item given the
values as a ``list<real>`` role; a QML ``Shape`` with a ``PathPolyline`` (points
made in Python, a ``list<point>`` role); and a QML ``Canvas`` drawing in JavaScript.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("QT_NO_GUI_THREADPOOL", "1")

import psutil
import qasync
from PySide6.QtCore import QAbstractListModel, QByteArray, QModelIndex, QPointF, Qt, QUrl
from PySide6.QtQuick import QQuickView
from PySide6.QtWidgets import QApplication

import procwindow.qt  # registers the Sparkline type  # noqa: F401
from procwindow._paths import qml_dir
from procwindow.core import Supervisor
from procwindow.qt import ProcModel
from procwindow.qt._ticker import Ticker
from procwindow.qt.sampler import HISTORY_LENGTH, Drawing, Trace

SESSION, AGENT = "bench", "a"
#: Seconds between two timed calls: longer than the supervisor's /proc snapshot reuse.
PAUSE = 0.15


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


# == sample ============================================================================


def _psutil_loop(pids: list[int]) -> None:
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            proc.cpu_times()
            proc.memory_info()
        except psutil.Error:
            pass


async def _sample(procs: int, window: int, ticks: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        sup = Supervisor(log_dir=Path(tmp, "logs"), state_dir=Path(tmp, "state"), history=False)
        try:
            t0 = time.perf_counter()
            for _ in range(procs):
                await sup.spawn(["sleep", "3600"], session=SESSION, agent=AGENT)
            spawned = time.perf_counter() - t0
            model = ProcModel(sup, SESSION, AGENT, ticker=Ticker(None))  # ticks by hand
            await asyncio.sleep(0.5)
            assert model.rowCount() == procs, model.rowCount()
            all_pids = [sup.get(model.procIdAt(r)).os_pid for r in range(procs)]
            cases: dict[str, Callable[[], None]] = {}

            def tick(first: int, last: int) -> Callable[[], None]:
                def run() -> None:
                    model.setVisibleRows(first, last)
                    model._on_timer()

                return run

            cases[f"ProcModel tick, all {procs:,} rows in view"] = tick(0, procs - 1)
            cases[f"psutil loop, {procs:,} pids (baseline)"] = lambda: _psutil_loop(all_pids)
            cases[f"ProcModel tick, {window} rows in view"] = tick(0, window - 1)
            cases[f"psutil loop, {window} pids (baseline)"] = lambda: _psutil_loop(
                all_pids[:window]
            )
            # Part of every tick: the supervisor finds each tree in one /proc scan
            # (reused for 0.1 s), whatever the number of rows sampled.
            run = sup._run
            assert run is not None
            cases["of which: the supervisor's /proc scan"] = lambda: run.signals.snap(0.0)
            times: dict[str, list[float]] = {name: [] for name in cases}
            calls: dict[str, int] = {}
            for action in cases.values():  # warm-up: handles cached, first CPU % read
                action()
                await asyncio.sleep(PAUSE)
            names = list(cases)
            for round_ in range(ticks):
                for name in names[round_ % len(names) :] + names[: round_ % len(names)]:
                    before = model._sampler.calls
                    t0 = time.perf_counter()
                    cases[name]()
                    times[name].append(time.perf_counter() - t0)
                    calls[name] = model._sampler.calls - before
                    await asyncio.sleep(PAUSE)
            model.close()
        finally:
            await sup.close()
    medians = {name: statistics.median(values) for name, values in times.items()}
    print(
        f"[bench_sampler.py sample --procs {procs} --window {window} --ticks {ticks}] "
        f"{procs:,} running `sleep 3600` ({spawned:.1f}s to spawn), {os.cpu_count()} CPUs; "
        f"loop time of one 1 s tick, median of {ticks} interleaved rounds"
    )
    print(f"  {'case':<40} {'per tick':>10} {'samples':>8} {'vs baseline':>12}")
    for name, base in ((names[0], names[1]), (names[2], names[3])):
        for shown, ratio in ((name, medians[name] / medians[base]), (base, 1.0)):
            count = calls.get(shown, 0) if shown.startswith("ProcModel") else "-"
            print(f"  {shown:<40} {_ms(medians[shown]):>7} ms {count!s:>8} {ratio:>11.2f}x")
    scan = medians[names[4]]
    print(f"  {names[4]:<40} {_ms(scan):>7} ms {'-':>8} {'-':>12}")
    print(
        f"  {window} rows in view vs all {procs:,}: "
        f"{medians[names[2]] / medians[names[0]]:.3f}x the loop time; without the scan "
        f"{(medians[names[2]] - scan) / (medians[names[0]] - scan):.3f}x"
    )


# == draw ==============================================================================


class SeriesModel(QAbstractListModel):
    """``rows`` rows of two rings of 60 values (0…1), and each ring as points for a
    120x10 polyline."""

    ROLES: ClassVar[dict[int, QByteArray]] = {
        Qt.ItemDataRole.UserRole + 1: QByteArray(b"cpu"),
        Qt.ItemDataRole.UserRole + 2: QByteArray(b"memory"),
        Qt.ItemDataRole.UserRole + 3: QByteArray(b"cpuPoints"),
        Qt.ItemDataRole.UserRole + 4: QByteArray(b"memoryPoints"),
        Qt.ItemDataRole.UserRole + 5: QByteArray(b"last"),
        Qt.ItemDataRole.UserRole + 6: QByteArray(b"samples"),
    }

    def __init__(self, rows: int) -> None:
        super().__init__()
        self._rng = random.Random(7)
        self._rows = [
            [[self._rng.random() for _ in range(HISTORY_LENGTH)] for _ in range(2)]
            for _ in range(rows)
        ]
        # The same rings as the model keeps them for a Sparkline with a source.
        self._traces = [[Trace(), Trace()] for _ in range(rows)]
        for series, traces in zip(self._rows, self._traces, strict=True):
            for ring, trace in zip(series, traces, strict=True):
                for value in ring:
                    trace.add(value, gap=False)
        self._samples = HISTORY_LENGTH

    def rowCount(self, parent: QModelIndex | None = None) -> int:
        return len(self._rows)

    def roleNames(self) -> dict[int, QByteArray]:
        return self.ROLES

    def data(self, index: QModelIndex, role: int = 0) -> object:
        cpu, memory = self._rows[index.row()]
        match role - Qt.ItemDataRole.UserRole:
            case 1:
                return cpu
            case 2:
                return memory
            case 3:
                return _points(cpu)
            case 4:
                return _points(memory)
            case 5:
                return f"{cpu[-1] * 100:.0f}%"
            case 6:
                return self._samples
        return ""

    def sparkline(self, row: int, series: str) -> Drawing | None:
        """What ProcModel.sparkline answers: the trace of a row's series."""
        trace = self._traces[row][0 if series == "cpu" else 1]
        return trace.runs, float(trace.last), 1.0

    def push(self) -> None:
        """One sample more in every ring; one dataChanged over every row."""
        for series, traces in zip(self._rows, self._traces, strict=True):
            for ring, trace in zip(series, traces, strict=True):
                del ring[0]
                ring.append(self._rng.random())
                trace.add(ring[-1], gap=False)
        self._samples += 1
        self.dataChanged.emit(self.index(0), self.index(len(self._rows) - 1), [])


def _points(values: list[float]) -> list[QPointF]:
    """The ring as points in a 1x1 box (``Path.scale`` sizes it), newest at x = 1."""
    step = 1 / (HISTORY_LENGTH - 1)
    return [QPointF(i * step, 1 - v) for i, v in enumerate(values)]


_ROW = """
    Item {
        id: row
        %s
        width: 320
        height: 14
        %s
    }
"""
_DELEGATES = {
    "text of the last value (baseline)": _ROW
    % (
        "required property string last",
        'Text { width: 120; height: 10; text: row.last; font.pixelSize: 9; color: "white" }',
    ),
    "Sparkline reading the model (as ProcTable)": _ROW
    % (
        "required property int index; required property int samples",
        """Row {
            spacing: 8
            Sparkline {
                width: 120; height: 10; fillOpacity: 0
                source: seriesModel; procId: row.index; series: "cpu"; revision: row.samples
            }
            Sparkline {
                width: 120; height: 10; fillOpacity: 0
                source: seriesModel; procId: row.index; series: "memory"; revision: row.samples
            }
        }""",
    ),
    "  the same, with a fill below the line": _ROW
    % (
        "required property int index; required property int samples",
        """Row {
            spacing: 8
            Sparkline {
                width: 120; height: 10
                source: seriesModel; procId: row.index; series: "cpu"; revision: row.samples
            }
            Sparkline {
                width: 120; height: 10
                source: seriesModel; procId: row.index; series: "memory"; revision: row.samples
            }
        }""",
    ),
    "Sparkline given a list (values: list<real>)": _ROW
    % (
        "required property list<var> cpu; required property list<var> memory",
        """Row {
            spacing: 8
            Sparkline { width: 120; height: 10; values: row.cpu; fillOpacity: 0 }
            Sparkline { width: 120; height: 10; values: row.memory; fillOpacity: 0 }
        }""",
    ),
    "Shape + PathPolyline (points 0..1, Path.scale)": _ROW
    % (
        "required property list<point> cpuPoints; required property list<point> memoryPoints",
        """Row {
            spacing: 8
            Shape {
                width: 120; height: 10
                ShapePath {
                    strokeColor: "#3574f0"; strokeWidth: 1; fillColor: "transparent"
                    scale: Qt.size(120, 10)
                    PathPolyline { path: row.cpuPoints }
                }
            }
            Shape {
                width: 120; height: 10
                ShapePath {
                    strokeColor: "#6aab73"; strokeWidth: 1; fillColor: "transparent"
                    scale: Qt.size(120, 10)
                    PathPolyline { path: row.memoryPoints }
                }
            }
        }""",
    ),
    "Canvas (JavaScript onPaint)": _ROW
    % (
        "required property list<var> cpu; required property list<var> memory",
        """Row {
            spacing: 8
            component Line: Canvas {
                property list<var> values
                width: 120; height: 10
                onValuesChanged: requestPaint()
                onPaint: {
                    const ctx = getContext("2d")
                    ctx.reset()
                    ctx.strokeStyle = "#3574f0"
                    ctx.beginPath()
                    const step = (width - 1) / (values.length - 1)
                    for (let i = 0; i < values.length; ++i)
                        ctx.lineTo(0.5 + i * step, 0.5 + (height - 1) * (1 - values[i]))
                    ctx.stroke()
                }
            }
            Line { values: row.cpu }
            Line { values: row.memory }
        }""",
    ),
}

_SCENE = """
import QtQuick
import QtQuick.Shapes
import Procwindow

Rectangle {
    width: 320
    height: rows * 14
    color: "#1e1f22"
    Column {
        Repeater {
            model: seriesModel
            %s
        }
    }
}
"""


async def _draw_case(qml: Path, rows: int, ticks: int) -> tuple[float, float]:
    series = SeriesModel(rows)
    view = QQuickView()
    view.engine().addImportPath(str(qml_dir()))
    view.rootContext().setContextProperty("seriesModel", series)
    view.rootContext().setContextProperty("rows", rows)
    try:
        view.setSource(QUrl.fromLocalFile(str(qml)))
        if view.status() != QQuickView.Status.Ready:
            raise SystemExit("\n".join(e.toString() for e in view.errors()))
        view.show()
        for _ in range(3):  # warm up: first paints, glyph caches
            series.push()
            view.grabWindow()
            await asyncio.sleep(0.01)
        alone: list[float] = []
        framed: list[float] = []
        for with_frame, times in ((False, alone), (True, framed)):
            for _ in range(ticks):
                t0 = time.perf_counter()
                series.push()
                if with_frame:
                    view.grabWindow()
                times.append(time.perf_counter() - t0)
                await asyncio.sleep(0.01)
    finally:
        view.close()
        view.deleteLater()
        await asyncio.sleep(0.05)
    return statistics.median(alone), statistics.median(framed)


async def _draw(rows: int, ticks: int) -> None:
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in _DELEGATES}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(3):  # interleaved rounds, medians of the rounds
            for name, delegate in _DELEGATES.items():
                qml = Path(tmp, f"Scene{round_}{len(results[name])}.qml")
                qml.write_text(_SCENE % delegate)
                results[name].append(await _draw_case(qml, rows, ticks))
    medians = {
        name: (statistics.median(a for a, _ in r), statistics.median(f for _, f in r))
        for name, r in results.items()
    }
    base_alone, base_frame = next(iter(medians.values()))
    print(
        f"[bench_sampler.py draw --rows {rows} --ticks {ticks}] {rows} rows on screen, two "
        f"120x10 sparklines of {HISTORY_LENGTH} samples each, all updated per tick; offscreen "
        f"(software) rendering; median of {ticks} ticks, median of 3 rounds"
    )
    print(f"  {'delegate':<46} {'update':>9} {'ratio':>7} {'+frame':>9} {'ratio':>7}")
    for name, (alone, frame) in medians.items():
        print(
            f"  {name:<46} {_ms(alone):>6} ms {alone / base_alone:>6.2f}x "
            f"{_ms(frame):>6} ms {frame / base_frame:>6.2f}x"
        )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("what", choices=["sample", "draw", "all"])
    ap.add_argument("--procs", type=int, default=1000, help="sample: running children")
    ap.add_argument("--window", type=int, default=40, help="sample: rows in view")
    ap.add_argument("--ticks", type=int, help="ticks measured (sample 15, draw 30)")
    ap.add_argument("--rows", type=int, default=100, help="draw: rows on screen")
    args = ap.parse_args()
    app = QApplication(sys.argv[:1])
    app.setQuitOnLastWindowClosed(False)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    try:
        if args.what in ("sample", "all"):
            loop.run_until_complete(_sample(args.procs, args.window, args.ticks or 15))
        if args.what in ("draw", "all"):
            loop.run_until_complete(_draw(args.rows, args.ticks or 30))
    finally:
        loop.close()


if __name__ == "__main__":
    main()
