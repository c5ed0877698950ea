"""CPU and memory in the process table: real children, sampled by the model's one timer."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable

import pytest
from PySide6.QtCore import QModelIndex
from pytestqt.modeltest import ModelTester

from procwindow.core import ProcStats, Supervisor
from procwindow.qt import ProcModel, ProcRole
from procwindow.qt._ticker import Ticker
from procwindow.qt.models import proc as proc_module
from procwindow.qt.models.roles import STATS_ROLES
from procwindow.qt.sampler import (
    HISTORY_LENGTH,
    SAMPLE_BATCH,
    RowSampler,
    cpu_text,
    memory_text,
)
from procwindow.qt.sparkline import drawing_of
from tests.core.helpers import py, until

from .conftest import QRun

pytestmark = pytest.mark.qt_log_level_fail("WARNING")

SLEEP = ["sleep", "30"]
BUSY = py("while True: pass")
# Holds 60 MB, every page touched, then waits.
BIG = py(
    """
    import time
    block = bytearray(60 * 1024 * 1024)
    for i in range(0, len(block), 4096):
        block[i] = 1
    print("ready", flush=True)
    time.sleep(30)
    """
)


def value(model: ProcModel, proc_id: int, role: ProcRole) -> object:
    return model.data(model.index(model.rowOf(proc_id), 0), role)


def counting(sup: Supervisor, calls: list[int]) -> Callable[[int], ProcStats]:
    """``sup.stats`` that records the id of every call (set before the model is made)."""
    real = sup.stats

    def stats(proc_id: int) -> ProcStats:
        calls.append(proc_id)
        return real(proc_id)

    return stats


def test_a_busy_child_shows_its_cpu_and_a_big_one_its_memory(
    sup: Supervisor, qrun: QRun, qtmodeltester: ModelTester
) -> None:
    model = ProcModel(sup, "s", "a")
    qtmodeltester.check(model)

    async def scenario() -> None:
        busy = await sup.spawn(BUSY, session="s", agent="a")
        big = await sup.spawn(BIG, session="s", agent="a")
        await until(lambda: sup.read(big.id).lines, what="the 60 MB touched")
        # The model's own 1 s timer samples every running row (no view said which).
        await until(
            lambda: value(model, busy.id, ProcRole.CPU_PERCENT) > 10.0,  # type: ignore[operator]
            timeout=10,
            what="the busy loop's CPU",
        )
        await until(
            lambda: value(model, big.id, ProcRole.MEMORY) > 50 * 1024 * 1024,  # type: ignore[operator]
            timeout=10,
            what="the big one's memory",
        )
        text = value(model, busy.id, ProcRole.CPU_TEXT)
        assert isinstance(text, str) and text.endswith("%") and int(text[:-1]) > 10
        cpu_column = model.columnNames.index("cpu")
        memory_column = model.columnNames.index("memory")
        assert model.data(model.index(model.rowOf(busy.id), cpu_column)) == text
        mem = model.data(model.index(model.rowOf(big.id), memory_column))
        assert mem == value(model, big.id, ProcRole.MEMORY_TEXT)
        assert isinstance(mem, str) and mem.endswith("M") and float(mem[:-1]) >= 50
        assert value(model, busy.id, ProcRole.STATS_LIVE) is True
        history = value(model, busy.id, ProcRole.CPU_HISTORY)
        assert isinstance(history, list) and history and all(0 <= v <= 1 for v in history)
        samples = value(model, busy.id, ProcRole.SAMPLES)
        assert isinstance(samples, int) and samples == len(history)
        drawing = model.sparkline(busy.id, "memory")
        assert drawing is not None and drawing[0] and drawing[2] > 0
        assert model.sparkline(busy.id, "status") is None and model.sparkline(-5, "cpu") is None
        await sup.kill(busy.id)
        await sup.kill(big.id)

    qrun(scenario(), timeout=30)
    model.close()


def test_each_sample_adds_a_point_and_announces_the_stats_columns(
    sup: Supervisor, qrun: QRun
) -> None:
    # The test samples by hand (a ticker that ticks only by hand).
    model = ProcModel(sup, "s", "a", ticker=Ticker(None))
    procs = [qrun(sup.spawn(SLEEP, session="s", agent="a")) for _ in range(2)]
    qrun(until(lambda: model.rowCount() == 2))
    cpu, memory = model.columnNames.index("cpu"), model.columnNames.index("memory")
    changes: list[tuple[int, int, int, int, list[int]]] = []

    def record(top: QModelIndex, bottom: QModelIndex, roles: list[int]) -> None:
        changes.append((top.row(), bottom.row(), top.column(), bottom.column(), list(roles)))

    model.dataChanged.connect(record)
    for count in (1, 2, 3):
        changes.clear()
        model.sample()
        assert changes == [(0, 1, cpu, memory, STATS_ROLES)]
        for p in procs:
            assert len(value(model, p.id, ProcRole.CPU_HISTORY)) == count  # type: ignore[arg-type]
            assert len(value(model, p.id, ProcRole.MEMORY_HISTORY)) == count  # type: ignore[arg-type]
            assert value(model, p.id, ProcRole.MEMORY) > 0  # type: ignore[operator]
    model.close()


def test_a_proc_keeps_its_samples_when_the_table_shows_another_scope_with_it(
    sup: Supervisor, qrun: QRun
) -> None:
    model = ProcModel(sup, "s", "a", ticker=Ticker(None))
    mine = qrun(sup.spawn(SLEEP, session="s", agent="a"))
    other = qrun(sup.spawn(SLEEP, session="t", agent="b"))
    qrun(until(lambda: model.rowCount() == 1))
    for _ in range(3):
        model.sample()
    assert len(model.history(mine.id).cpu) == 3  # type: ignore[union-attr]
    # The whole session still shows it: its sparkline goes on from where it was.
    model.setScope("s", "")
    qrun(until(lambda: model.rowCount() == 1))
    assert len(model.history(mine.id).cpu) == 3  # type: ignore[union-attr]
    model.sample()
    assert len(model.history(mine.id).cpu) == 4  # type: ignore[union-attr]
    # Another session does not: its samples go.
    model.setScope("t", "")
    qrun(until(lambda: model.procIdAt(0) == other.id))
    assert model.history(mine.id) is None
    model.close()


def test_rows_off_screen_are_not_sampled(sup: Supervisor, qrun: QRun) -> None:
    calls: list[int] = []
    sup.stats = counting(sup, calls)  # type: ignore[method-assign]
    model = ProcModel(sup, "s", "a", ticker=Ticker(None))
    for _ in range(6):
        qrun(sup.spawn(SLEEP, session="s", agent="a"))
    qrun(until(lambda: model.rowCount() == 6))

    model.setVisibleRows(1, 2)
    model.sample()
    model.sample()
    shown = [model.procIdAt(1), model.procIdAt(2)]
    assert calls == shown * 2
    for row in (0, 3, 4, 5):
        proc_id = model.procIdAt(row)
        assert model.history(proc_id) is None
        assert value(model, proc_id, ProcRole.CPU_TEXT) == "–"
        assert value(model, proc_id, ProcRole.CPU_HISTORY) == []
        assert value(model, proc_id, ProcRole.STATS_LIVE) is False

    # Scrolled: the rows now shown are sampled, the others keep what they had.
    calls.clear()
    model.setVisibleRows(4, 5)
    model.sample()
    assert calls == [model.procIdAt(4), model.procIdAt(5)]
    assert len(model.history(shown[0]).cpu) == 2  # type: ignore[union-attr]
    model.close()


def test_the_timer_samples_a_few_rows_per_turn_of_the_loop(sup: Supervisor, qrun: QRun) -> None:
    calls: list[int] = []
    sup.stats = counting(sup, calls)  # type: ignore[method-assign]
    # The test runs the timer's handler by hand (a ticker that ticks only by hand).
    model = ProcModel(sup, "s", "a", ticker=Ticker(None))
    for _ in range(SAMPLE_BATCH * 2 + 1):
        qrun(sup.spawn(SLEEP, session="s", agent="a"))
    qrun(until(lambda: model.rowCount() == SAMPLE_BATCH * 2 + 1))
    rows = model.rowCount()
    memory = model.columnNames.index("memory")
    announced: list[tuple[int, int]] = []
    model.dataChanged.connect(
        lambda top, bottom, _roles: (
            announced.append((top.row(), bottom.row())) if bottom.column() == memory else None
        )
    )

    model._on_timer()
    # The handler samples one batch; the others come in the next turns.
    first = list(calls)
    assert first == [model.procIdAt(row) for row in range(SAMPLE_BATCH)]
    assert announced == [(0, SAMPLE_BATCH - 1)]
    qrun(until(lambda: len(calls) == rows, what="every row sampled"))
    qrun(asyncio.sleep(0.05))
    assert calls == [model.procIdAt(row) for row in range(rows)]  # each once, in order
    batches = range(0, rows, SAMPLE_BATCH)
    assert sorted(announced) == [(b, min(b + SAMPLE_BATCH, rows) - 1) for b in batches]
    # A round that starts before the last one is done ends that one.
    calls.clear()
    model._on_timer()
    model._on_timer()
    qrun(asyncio.sleep(0.1))
    assert calls[:SAMPLE_BATCH] == calls[SAMPLE_BATCH : 2 * SAMPLE_BATCH]
    assert sorted(calls[SAMPLE_BATCH:]) == sorted(model.procIdAt(row) for row in range(rows))
    model.close()


def test_an_exited_row_is_no_longer_sampled_and_keeps_its_history(
    sup: Supervisor, qrun: QRun
) -> None:
    calls: list[int] = []
    sup.stats = counting(sup, calls)  # type: ignore[method-assign]
    model = ProcModel(sup, "s", "a", ticker=Ticker(None))
    gone = qrun(sup.spawn(SLEEP, session="s", agent="a"))
    stays = qrun(sup.spawn(SLEEP, session="s", agent="a"))
    qrun(until(lambda: model.rowCount() == 2))
    model.sample()
    model.sample()
    assert value(model, gone.id, ProcRole.STATS_LIVE) is True
    qrun(sup.kill(gone.id))
    qrun(until(lambda: value(model, gone.id, ProcRole.STATUS) == "exited", what="the exit"))

    calls.clear()
    for _ in range(3):
        model.sample()
    assert calls == [stays.id] * 3
    assert len(value(model, gone.id, ProcRole.CPU_HISTORY)) == 2  # type: ignore[arg-type]
    assert value(model, gone.id, ProcRole.STATS_LIVE) is False
    assert value(model, gone.id, ProcRole.CPU_TEXT) == "–"
    assert value(model, gone.id, ProcRole.MEMORY_TEXT) == "–"
    assert value(model, gone.id, ProcRole.CPU_PERCENT) == -1.0
    assert len(value(model, stays.id, ProcRole.CPU_HISTORY)) == 5  # type: ignore[arg-type]

    # Dismissed, its history goes with its row.
    sup.dismiss(gone.id)
    qrun(until(lambda: model.rowCount() == 1))
    assert model.history(gone.id) is None
    model.close()


def test_nothing_is_sampled_once_nothing_runs(sup: Supervisor, qrun: QRun) -> None:
    calls: list[int] = []
    sup.stats = counting(sup, calls)  # type: ignore[method-assign]
    model = ProcModel(sup, "s", "a")
    p = qrun(sup.spawn(["true"], session="s", agent="a"))
    qrun(sup.wait(p.id))
    qrun(until(lambda: value(model, p.id, ProcRole.STATUS) == "exited"))
    assert not model._ticker.has(model._on_timer)  # it no longer ticks
    model.sample()
    assert calls == []
    model.close()


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_ring_holds_a_minute_and_marks_the_gaps() -> None:
    clock = Clock()
    load = {1: 50.0}

    def stats(proc_id: int) -> ProcStats:
        return ProcStats(load[proc_id], 4096 * int(load[proc_id]), 0, 0, 1, 0)

    sampler = RowSampler(stats, 1.0, clock)
    for i in range(HISTORY_LENGTH + 10):
        load[1] = float(i % 7) * 30  # up to 180 %: above one core
        clock.now += 1.0
        assert sampler.sample([1]) == [1]
    history = sampler.history(1)
    assert history is not None
    assert len(history.cpu) == len(history.rss) == HISTORY_LENGTH
    assert sampler.calls == HISTORY_LENGTH + 10
    points = history.cpu_points()
    assert max(points) == 1.0 and min(points) == 0.0  # scaled by the peak, 180 %
    assert history.rss_points()[-1] == pytest.approx(history.rss[-1] / max(history.rss))
    # Off screen for a while: the line breaks there.
    clock.now += 30.0
    sampler.sample([1])
    assert math.isnan(history.cpu[-2]) and not math.isnan(history.cpu[-1])
    assert math.isnan(history.cpu_points()[-2])
    # Values only (a row off screen, for a sort): the ring does not move.
    before = list(history.cpu)
    load[1] = 5.0
    sampler.sample([1], ring=False)
    assert history.cpu_now == 5.0 and list(history.cpu) == before
    assert len(history.cpu) == HISTORY_LENGTH
    sampler.forget([1])
    assert sampler.history(1) is None and len(sampler) == 0


def test_the_traces_a_sparkline_draws_follow_the_ring() -> None:
    clock = Clock()
    sampler = RowSampler(lambda _: ProcStats(10.0, 1000, 0, 0, 1, 0), 1.0, clock)
    for _ in range(HISTORY_LENGTH + 5):
        clock.now += 1.0
        sampler.sample([1])
    history = sampler.history(1)
    assert history is not None
    [run] = history.cpu_trace.runs
    assert run.size() == HISTORY_LENGTH
    assert (run.first().x(), run.last().x()) == (5, HISTORY_LENGTH + 4)
    assert history.cpu_trace.last == HISTORY_LENGTH + 4
    # A gap starts a new run and takes a place, as it does in the ring.
    clock.now += 10.0
    sampler.sample([1])
    first, second = history.rss_trace.runs
    assert second.size() == 1 and second.first().x() == HISTORY_LENGTH + 6
    assert first.size() == HISTORY_LENGTH - 2
    assert first.size() + second.size() + 1 == len(history.rss)
    assert history.count == HISTORY_LENGTH + 6
    drawing = drawing_of([0.5, math.nan, 0.25])
    assert [run.size() for run in drawing[0]] == [1, 1] and drawing[1:] == (2.0, 1.0)


def test_cell_texts() -> None:
    assert [cpu_text(v) for v in (0.0, 0.4, 12.5, 199.6, -1.0)] == [
        "0%",
        "0%",
        "13%",
        "200%",
        "–",
    ]
    assert [memory_text(v) for v in (500, 655_360, 12_900_000, 536_870_912, 3 << 30, -1)] == [
        "500B",
        "640K",
        "12.3M",
        "512M",
        "3.0G",
        "–",
    ]


def test_sorted_by_cpu_a_few_rows_off_screen_are_read_in_turn(
    sup: Supervisor, qrun: QRun, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(proc_module, "OFFSCREEN_SAMPLES", 2)
    calls: list[int] = []
    sup.stats = counting(sup, calls)  # type: ignore[method-assign]
    model = ProcModel(sup, "s", "a", ticker=Ticker(None))
    for _ in range(6):
        qrun(sup.spawn(SLEEP, session="s", agent="a"))
    qrun(until(lambda: model.rowCount() == 6))
    model.setVisibleRows(0, 1)
    model.sample()
    assert len(calls) == 2  # not sorted by CPU: the rows on screen only
    model.sortBy("cpu", True)
    model.orderHeld = True  # the rows on screen stay those while values change
    model.setVisibleRows(0, 1)
    shown = {model.procIdAt(0), model.procIdAt(1)}
    seen: set[int] = set()
    for _ in range(2):
        calls.clear()
        model.sample()
        assert set(calls[:2]) == shown and len(calls) == 4
        seen.update(calls[2:])
    assert len(seen) == 4 and not seen & shown  # every row off screen, in turn
    for proc_id in seen:
        history = model.history(proc_id)
        assert history is not None and history.cpu_now >= 0
        assert len(history.cpu) == 0  # values only: no point on its sparkline
    model.close()
