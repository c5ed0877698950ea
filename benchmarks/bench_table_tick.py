"""The ProcModel runtime tick at 10,000 rows in a real QML TableView, run by hand.

    QT_QPA_PLATFORM=offscreen python benchmarks/bench_table_tick.py [--rows 10000] [--ticks 30]

Each second a ProcModel announces the new runtimes. A view pays for a
``dataChanged`` in proportion to the range announced, so the model announces only
running rows, and only those the view shows once the TableView reports its
``topRow``/``bottomRow`` through ``setVisibleRows``. This measures, per tick, the
median over ``--ticks`` ticks of:

- ``model``: the model's work and the delegates' binding updates (synchronous),
- ``+frame``: the same followed by a frame (``grabWindow``: polish, sync, render),

for a baseline (one ``dataChanged`` over the whole Runtime column, which is what
a naive tick costs) and for ``ProcModel.tick()`` in three situations. Ratios are
against the baseline of the same run; nothing is asserted.

10,000 real processes are too many for a benchmark, so the model reads an
in-memory stand-in for the supervisor (the four methods ProcModel uses:
``procs``, ``get``, ``runtime``, ``subscribe``), with a clock advanced one second
per tick so that every runtime text changes.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import qasync
from PySide6.QtCore import QUrl
from PySide6.QtQuick import QQuickView
from PySide6.QtWidgets import QApplication

from procwindow.core import ExitInfo, ExitReason, Pattern, ProcState, Subscription
from procwindow.qt import ProcModel
from procwindow.qt._ticker import Ticker
from procwindow.qt.models.roles import RUNTIME_ROLES, ProcColumn

QML = b"""
import QtQuick

Item {
    id: root
    width: 900
    height: 600

    TableView {
        id: table
        anchors.fill: parent
        model: procModel
        clip: true
        columnWidthProvider: function (column) { return 150 }
        delegate: Text {
            required property string display
            text: display
            height: 14
            font.pixelSize: 11
        }
        function report() {
            if (useVisibleHint)
                procModel.setVisibleRows(topRow, bottomRow)
        }
        onTopRowChanged: report()
        onBottomRowChanged: report()
    }
}
"""


class Clock:
    """Monotonic seconds that advance only when told."""

    def __init__(self) -> None:
        self.now = 1000.0


class FakeProc:
    """The attributes of procwindow.core.Proc that ProcModel reads."""

    def __init__(self, proc_id: int, running: bool, clock: Clock) -> None:
        self.id = proc_id
        self.os_pid = 100_000 + proc_id
        self.pgid = self.os_pid
        self.argv = ("sleep", str(proc_id))
        self.cmd = f"sleep {proc_id}"
        self.session = "bench"
        self.agent = f"agent{proc_id % 7}"
        self.tool = "shell"
        self.started_at = time.time() - proc_id
        self.started_mono = clock.now - proc_id
        self.state = ProcState.RUNNING if running else ProcState.EXITED
        self.exit = None if running else ExitInfo(0, None, ExitReason.EXITED, 3.0)
        self.last_seq = 0


class FakeSupervisor:
    """Enough of Supervisor for ProcModel: a fixed list of procs, no events."""

    def __init__(self, rows: int, running: int, clock: Clock) -> None:
        self.clock = clock
        # Newest (highest id) first, as Supervisor.procs returns them; the newest run.
        ids = range(rows, 0, -1)
        self._procs = {i: FakeProc(i, rows - i < running, clock) for i in ids}
        self._subs: list[Subscription] = []

    def procs(self, session: str | None = None, agent: str | None = None) -> list[FakeProc]:
        return [p for p in self._procs.values() if agent is None or p.agent == agent]

    def get(self, proc_id: int) -> FakeProc:
        return self._procs[proc_id]

    def runtime(self, proc_id: int) -> float:
        return self.clock.now - self._procs[proc_id].started_mono

    def subscribe(self, pattern: str) -> Subscription:
        sub = Subscription(Pattern(pattern), 16, lambda s: None)
        self._subs.append(sub)
        return sub

    def close(self) -> None:
        for sub in self._subs:
            sub.close()


async def measure(
    view: QQuickView, clock: Clock, action: Callable[[], None], ticks: int
) -> tuple[float, float]:
    """Median seconds of (action alone, action and a frame) over ``ticks`` ticks each."""
    model_times: list[float] = []
    frame_times: list[float] = []
    for with_frame, times in ((False, model_times), (True, frame_times)):
        for _ in range(ticks):
            clock.now += 1.0
            t0 = time.perf_counter()
            action()
            if with_frame:
                view.grabWindow()
            times.append(time.perf_counter() - t0)
            await asyncio.sleep(0.005)  # let the loop run between ticks, as a timer would
    return statistics.median(model_times), statistics.median(frame_times)


async def scenario(
    qml_file: Path, rows: int, running: int, hint: bool, ticks: int, baseline: bool
) -> tuple[tuple[float, float], int]:
    clock = Clock()
    sup = FakeSupervisor(rows, running, clock)
    model = ProcModel(sup, "bench", ticker=Ticker(None))  # type: ignore[arg-type]  # ticks by hand
    view = QQuickView()
    view.rootContext().setContextProperty("procModel", model)
    view.rootContext().setContextProperty("useVisibleHint", hint)
    try:
        view.setSource(QUrl.fromLocalFile(str(qml_file)))
        if view.status() != QQuickView.Status.Ready:
            raise SystemExit("\n".join(e.toString() for e in view.errors()))
        view.resize(900, 600)
        view.show()
        view.grabWindow()
        await asyncio.sleep(0.05)
        table = view.rootObject().childItems()[0]
        visible = int(table.property("bottomRow")) - int(table.property("topRow")) + 1
        model.tick()  # warm up: first-time binding and font work
        view.grabWindow()

        if baseline:
            column = model.columnNames.index(ProcColumn.RUNTIME.value)

            def action() -> None:
                model.dataChanged.emit(
                    model.index(0, column),
                    model.index(model.rowCount() - 1, column),
                    RUNTIME_ROLES,
                )

        else:
            action = model.tick
        result = await measure(view, clock, action, ticks)
    finally:
        view.close()
        view.deleteLater()
        model.close()
        sup.close()
        await asyncio.sleep(0.05)
    return result, visible


async def main(rows: int, ticks: int, qml_file: Path) -> None:
    cases = [
        ("whole Runtime column dataChanged (baseline)", rows, True, True),
        ("ProcModel.tick(), all running, no visible-row hint", rows, False, False),
        ("ProcModel.tick(), all running, setVisibleRows from TableView", rows, True, False),
        ("ProcModel.tick(), 5 running, no hint", 5, False, False),
    ]
    results = []
    visible = 0
    for name, running, hint, baseline in cases:
        (model_s, frame_s), visible = await scenario(qml_file, rows, running, hint, ticks, baseline)
        results.append((name, model_s, frame_s))
    base_model, base_frame = results[0][1], results[0][2]
    print(
        f"ProcModel runtime tick: {rows:,} rows, QML TableView offscreen 900x600 "
        f"(~{visible} rows visible), median of {ticks} ticks"
    )
    print(f"{'strategy':<62} {'model':>9} {'ratio':>7} {'+frame':>9} {'ratio':>7}")
    for name, model_s, frame_s in results:
        print(
            f"{name:<62} {model_s * 1000:>7.2f}ms {model_s / base_model:>6.3f}x "
            f"{frame_s * 1000:>7.2f}ms {frame_s / base_frame:>6.3f}x"
        )


def run() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--ticks", type=int, default=30)
    args = parser.parse_args()
    app = QApplication(sys.argv[:1])
    app.setQuitOnLastWindowClosed(False)  # each scenario opens and closes its own view
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    with tempfile.TemporaryDirectory() as tmp:
        qml_file = Path(tmp, "Table.qml")
        qml_file.write_bytes(QML)
        try:
            loop.run_until_complete(main(args.rows, args.ticks, qml_file))
        finally:
            loop.close()


if __name__ == "__main__":
    run()
