"""HistoryModel and SearchModel over a real supervisor's history (a real SQLite
file shared with an earlier, closed supervisor) and real children."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pytestqt.modeltest import ModelTester

from procwindow.core import Supervisor
from procwindow.qt import HistoryModel, SearchModel
from procwindow.qt.models.history import HistoryRole, when_text
from procwindow.qt.models.search import SearchRole
from tests.core.helpers import py, until

from .conftest import QRun

pytestmark = pytest.mark.qt_log_level_fail("WARNING")


def ids(model: HistoryModel) -> list[int]:
    return [model.procIdAt(row) for row in range(model.rowCount())]


def test_history_lists_a_scope_newest_first_and_keeps_rows_in_place(
    sup: Supervisor, qrun: QRun, tmp_path: Path, qtmodeltester: ModelTester
) -> None:
    async def scenario() -> None:
        async with Supervisor(log_dir=tmp_path / "old") as old:
            past = await old.spawn(["sh", "-c", "exit 4"], session="s", agent="a")
            await old.wait(past.id)
            elsewhere = await old.spawn(["true"], session="other", agent="a")
            await old.wait(elsewhere.id)
        first = await sup.spawn(["sleep", "30"], session="s", agent="a")
        model = HistoryModel(sup, session="s", agent="a")
        qtmodeltester.check(model)
        assert model.rowCount() == 0  # inactive: nothing read
        model.active = True
        assert ids(model) == [first.id, past.id]
        index = model.index(1)
        assert model.data(index, HistoryRole.STATUS_TEXT) == "failed (4)"
        assert model.data(index, HistoryRole.LIVE) is False
        assert model.data(model.index(0), HistoryRole.LIVE) is True
        assert model.data(model.index(0), HistoryRole.RUNNING) is True

        # A new run comes in at the top with an insert: the rows below stay.
        inserted: list[tuple[int, int]] = []
        resets: list[int] = []
        model.rowsInserted.connect(lambda _p, a, b: inserted.append((a, b)))
        model.modelReset.connect(lambda: resets.append(1))
        second = await sup.spawn(["true"], session="s", agent="a")
        await until(lambda: model.rowOf(second.id) == 0, what="the new run listed")
        assert ids(model) == [second.id, first.id, past.id]
        assert inserted == [(0, 0)] and resets == []
        # Its exit changes its row in place.
        await until(
            lambda: model.data(model.index(0), HistoryRole.STATUS_TEXT) == "exited (0)",
            what="the exit shown",
        )
        # Forgetting a run removes its row.
        sup.forget(past.id)
        model.reload()
        assert ids(model) == [second.id, first.id]
        # Another scope: another list; all agents of a session with "".
        model.setScope("other", "")
        assert ids(model) == [elsewhere.id]
        model.active = False
        qtmodeltester.check(model)

    qrun(scenario())


def test_when_text_is_short_for_today() -> None:
    now = 1_764_600_000.0  # 2025-12-01, midday UTC
    assert len(when_text(now - 60, now)) == 8  # HH:MM:SS
    assert when_text(now - 40 * 86400, now)[:3].isalpha()  # "Oct 22 14:02"
    assert when_text(now - 400 * 86400, now)[:4].isdigit()  # "2024-10-27 14:02"


def test_search_streams_hits_newest_run_first_and_stops_when_asked(
    sup: Supervisor, qrun: QRun, tmp_path: Path, qtmodeltester: ModelTester
) -> None:
    async def scenario() -> None:
        async with Supervisor(log_dir=tmp_path / "old") as old:
            past = await old.spawn(
                py("for i in range(5000): print(f'{i} needle' if i % 10 == 0 else i)"),
                session="s",
                agent="a",
            )
            await old.wait(past.id)
        live = await sup.spawn(py("print('NEEDLE live')"), session="t", agent="b")
        await sup.wait(live.id)
        model = SearchModel(sup, max_hits=100)
        qtmodeltester.check(model)
        model.pattern = "needle"
        model.start()
        assert model.running
        await until(lambda: not model.running, what="the search's end")
        assert model.count == 100  # capped
        assert model.statusText == "the first 100 matches in 2 runs (refine the search for more)"
        assert model.procIdAt(0) == live.id and model.procIdAt(1) == past.id
        assert model.seqAt(1) == 1 and model.seqAt(2) == 11
        assert model.data(model.index(1), SearchRole.FIRST_OF_PROC) is True
        qtmodeltester.check(model)

        # Case: only the live line matches "NEEDLE" exactly.
        model.caseSensitive = True
        model.pattern = "NEEDLE"
        model.start()
        await until(lambda: not model.running, what="the second search")
        assert model.count == 1 and model.statusText == "1 match in 1 run"

        # A bad regex: an error, no search.
        model.regex = True
        model.pattern = "need(le"
        model.start()
        assert not model.running and model.statusError and model.count == 0

        # A long search stops on cancel and keeps what it found.
        model.regex = False
        model.caseSensitive = False
        model.pattern = "0"
        model.start()
        await asyncio.sleep(0)
        model.cancel()
        assert not model.running
        assert model.statusText.startswith("stopped")
        await asyncio.sleep(0.1)

    qrun(scenario())
