"""The process table shows what a workspace does with a command's proc: a crash
loop's countdown in the Status cell ("restarting in 2 s"); the command's name in
its row, which each restart takes over, the earlier runs folded behind it."""

from __future__ import annotations

import pytest
from pytestqt.modeltest import ModelTester

from procwindow.core import Backoff, Command, Supervisor, Workspace
from procwindow.qt import ProcModel, ProcRole
from procwindow.qt.models.roles import TOOLTIP
from tests.core.helpers import until

from .conftest import QRun

pytestmark = pytest.mark.qt_log_level_fail("WARNING")


def test_a_restarting_command_shows_its_countdown(sup: Supervisor, qrun: QRun) -> None:
    async def scenario() -> None:
        model = ProcModel(sup, "stack", "api")
        crash = Command(
            "stack",
            "api",
            ("sh", "-c", "exit 3"),
            name="api",
            restart="on-failure",
            backoff=Backoff(initial=2.0, factor=2.0, cap=10.0),
            max_restarts=1,
        )
        run = await Workspace([crash], name="stack").start(sup)

        def text(role: ProcRole) -> str:
            return str(model.data(model.index(0, 0), role)) if model.rowCount() else ""

        await until(lambda: text(ProcRole.PHASE_TEXT).startswith("restarting in"), what="countdown")
        first = model.procIdAt(0)
        assert text(ProcRole.STATUS_TEXT) == "failed (3)"  # how that run ended stays readable
        seen = {text(ProcRole.PHASE_TEXT)}
        # The countdown ticks in the cell (the model refreshes it every second).
        await until(lambda: seen.add(text(ProcRole.PHASE_TEXT)) or len(seen) >= 2, what="a tick")
        # Then the restart: the new run takes the command's row; the old one, shown
        # under it, no longer counts down.
        await until(lambda: model.procIdAt(0) != first, timeout=10, what="the new run listed first")
        assert model.rowCount() == 1
        model.toggleRuns(model.procIdAt(0))
        row = model.rowOf(first)
        assert row == 1
        assert model.data(model.index(row, 0), ProcRole.PHASE_TEXT) == ""
        await run.stop()

    qrun(scenario())


def crash_loop(name: str = "api", session: str = "stack", agent: str = "api") -> Command:
    """A command that fails at once, restarted three times, 0.1 s apart."""
    return Command(
        session,
        agent,
        ("sh", "-c", "exit 3"),
        name=name,
        restart="on-failure",
        backoff=Backoff(initial=0.1, factor=1.0, cap=60.0),  # no run is "long enough"
        max_restarts=3,
    )


def cells(model: ProcModel, row: int) -> dict[str, object]:
    def get(role: ProcRole) -> object:
        return model.data(model.index(row, 0), role)

    tool = model.data(model.index(row, model.columnNames.index("tool")))
    return {
        "tool": tool,
        "name": get(ProcRole.COMMAND_NAME),
        "restarts": get(ProcRole.RESTART_COUNT),
        "shown": get(ProcRole.RUNS_SHOWN),
        "earlier": get(ProcRole.EARLIER_RUN),
        "run": get(ProcRole.RUN_TEXT),
        "tip": model.data(model.index(row, model.columnNames.index("tool")), TOOLTIP),
    }


def test_a_crash_loop_folds_into_one_named_row(
    sup: Supervisor, qrun: QRun, qtmodeltester: ModelTester
) -> None:
    async def scenario() -> None:
        model = ProcModel(sup, "stack", "")  # the session's table (an Agent column)
        qtmodeltester.check(model)
        other = await sup.spawn(["sleep", "60"], session="stack", agent="api")
        run = await Workspace([crash_loop()], name="stack").start(sup)
        ended = await run.wait_ended("api")
        runs = ended.runs
        assert len(runs) == 4
        await until(lambda: model.procIdAt(0) == runs[-1], what="the newest run in the row")
        # One row for the command, one for the proc of nobody's workspace.
        assert model.rowCount() == 2
        assert [model.procIdAt(r) for r in range(2)] == [runs[-1], other.id]
        head = cells(model, 0)
        assert head["tool"] == "api"
        assert head["name"] == "api"
        assert head["restarts"] == 3
        assert not head["shown"]
        assert not head["earlier"]
        assert head["run"] == "failed"
        assert head["tip"] == "sh -c 'exit 3'"  # the whole command line
        assert cells(model, 1)["tool"] == "shell" and cells(model, 1)["restarts"] == 0
        assert model.foldedCount == 3  # processes the rows stand for, not shown
        for proc_id in runs[:-1]:
            assert model.rowOf(proc_id) == -1
            assert model.rowShowing(proc_id) == 0  # folded behind the command's row

        # Expanded: the earlier runs under it, newest first, the other row below.
        model.toggleRuns(runs[-1])
        assert model.count == 5
        assert model.foldedCount == 0
        shown = [model.procIdAt(r) for r in range(5)]
        assert shown == [runs[-1], runs[2], runs[1], runs[0], other.id]
        assert cells(model, 0)["shown"]
        assert [cells(model, r)["run"] for r in (1, 2, 3)] == ["run 3", "run 2", "run 1"]
        assert all(cells(model, r)["earlier"] for r in (1, 2, 3))
        assert all(cells(model, r)["name"] == "api" for r in (1, 2, 3))

        # Sorted by ID, ascending: the earlier runs stay under their command's row.
        model.sortBy("id", False)
        ids = [model.procIdAt(r) for r in range(5)]
        assert ids.index(runs[-1]) + 3 == ids.index(runs[0])
        model.sortBy("", False)
        assert [model.procIdAt(r) for r in range(5)] == shown

        # Collapsed again: one row.
        model.toggleRuns(runs[-1])
        assert [model.procIdAt(r) for r in range(model.rowCount())] == [runs[-1], other.id]

        # Dismissing the command's row shows its previous run in it.
        sup.dismiss(runs[-1])
        await until(lambda: model.procIdAt(0) == runs[2], what="the previous run in the row")
        assert cells(model, 0)["restarts"] == 2
        assert model.rowCount() == 2
        await run.stop()

    qrun(scenario())


def test_a_table_opened_later_folds_the_runs_too(sup: Supervisor, qrun: QRun) -> None:
    async def scenario() -> None:
        run = await Workspace([crash_loop()], name="stack").start(sup)
        runs = (await run.wait_ended("api")).runs
        model = ProcModel(sup, "stack", "api")
        assert [model.procIdAt(r) for r in range(model.rowCount())] == [runs[-1]]
        assert cells(model, 0)["restarts"] == 3
        # Its workspace stopped: the runs still fold (each proc says whose run it is).
        await run.stop()
        model.toggleRuns(runs[-1])
        assert model.rowCount() == 4
        fresh = ProcModel(sup, "stack", "api")
        assert [fresh.procIdAt(r) for r in range(fresh.rowCount())] == [runs[-1]]
        assert cells(fresh, 0)["name"] == "api"
        assert cells(fresh, 0)["restarts"] == 3

    qrun(scenario())


def test_a_restart_on_request_takes_the_commands_row(sup: Supervisor, qrun: QRun) -> None:
    async def scenario() -> None:
        model = ProcModel(sup, "stack", "")
        before = await sup.spawn(["sleep", "60"], session="stack", agent="other")
        serve = Command("stack", "web", ("sleep", "60"), name="web")
        run = await Workspace([serve], name="stack").start(sup)
        first = run.state("web").proc_id
        await until(lambda: model.rowCount() == 2, what="both rows")
        assert model.procIdAt(0) == first
        after = await sup.spawn(["sleep", "60"], session="stack", agent="other")
        await until(lambda: model.rowCount() == 3, what="the newer proc on top")
        folded: list[tuple[int, int]] = []
        model.runFolded.connect(lambda old, new: folded.append((old, new)))
        new = (await sup.restart(first)).id  # within the workspace: the same command
        await until(lambda: model.procIdAt(1) == new, what="the new run in the command's row")
        assert [model.procIdAt(r) for r in range(3)] == [after.id, new, before.id]
        assert cells(model, 1)["restarts"] == 1
        assert folded == [(first, new)]
        assert model.rowShowing(first) == 1
        await run.stop()

    qrun(scenario())


def test_dismissing_a_commands_row_dismisses_the_runs_folded_into_it(
    sup: Supervisor, qrun: QRun
) -> None:
    """Delete on a command's row takes the row away, earlier runs and all; an
    earlier run shown on its own goes alone."""
    from procwindow.qt import ProcController

    async def scenario() -> None:
        model = ProcModel(sup, "stack", "api")
        controller = ProcController(sup)
        run = await Workspace([crash_loop()], name="stack").start(sup)
        runs = (await run.wait_ended("api")).runs
        await until(lambda: model.procIdAt(0) == runs[-1], what="the command's row")
        await run.stop()
        controller.dismiss(runs[0])  # the oldest, shown under the row: alone
        await until(lambda: runs[0] not in {p.id for p in sup.procs()}, what="it dismissed")
        assert {p.id for p in sup.procs()} == set(runs[1:])
        assert model.rowCount() == 1
        await until(lambda: model.foldedCount == 2, what="two runs folded behind the row")
        controller.dismiss(runs[-1])  # the row: every run in it
        await until(lambda: model.rowCount() == 0, what="the row gone")
        assert not sup.procs()
        await controller.wait_idle()

    qrun(scenario())
