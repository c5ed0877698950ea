"""A workspace command in the process table and the session tree (real QML, real
children, a real Workspace): its row says its name, not ``shell sh -c …``; its
restarts fold into that one row, the earlier runs one click away; its agent is in
the tree before its first proc starts."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from procwindow.core import Backoff, Command, Supervisor, Workspace
from procwindow.qt import SessionRole
from procwindow.qt.window import open_proc_window, window_model

from .conftest import MakeWorkspace, Run
from .helpers import click, find_item, item, key, py, settle, type_text, until, until_equal
from .test_proc_table import model_of

#: Says which run it is, then fails: restarted three times, 0.1 s apart.
CRASH = ("sh", "-c", "echo crashed in run $$; exit 3")


def crash_loop() -> Command:
    return Command(
        "stack",
        "api",
        CRASH,
        name="api",
        restart="on-failure",
        backoff=Backoff(initial=0.1, factor=1.0, cap=60.0),  # no run is "long enough"
        max_restarts=3,
    )


def text_of(window: object, name: str) -> str:
    found = find_item(window, name)  # type: ignore[arg-type]
    return "" if found is None else str(found.property("text"))


@pytest.mark.promise("Workspaces")
def test_a_crash_loop_is_one_named_row_with_its_earlier_runs_one_click_away(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run
) -> None:
    async def scenario() -> None:
        workspace = make_workspace()
        workspace.load()
        window = open_proc_window(sup, "stack", "api")
        model = model_of(window)
        started = await Workspace([crash_loop()], name="stack").start(sup)
        state = await started.wait_ended("api")
        runs = state.runs
        assert len(runs) == 4 and state.restarts == 3
        newest, earlier = runs[-1], runs[:-1]

        # One row: the command's name, the count of restarts, its phase.
        await until(lambda: model.procIdAt(0) == newest, what="the newest run in the row")
        assert model.rowCount() == 1
        await until_equal(lambda: text_of(window, f"toolName-{newest}"), "api", what="the name")
        assert text_of(window, f"runsText-{newest}") == "▸ ↻ 3"
        await until_equal(
            lambda: text_of(window, f"toolDetail-{newest}"), "failed", what="the phase"
        )
        cell = await item(window, f"toolCell-{newest}")
        assert cell.property("toolTipText") == "sh -c 'echo crashed in run $$; exit 3'"
        for proc_id in earlier:
            assert find_item(window, f"toolCell-{proc_id}") is None
        # The tree counts processes: every run, none of them running; so does the
        # main window's overview, which shows the one row.
        tree = workspace.session_model
        node = tree.indexFor("stack", "api")
        assert tree.data(node, SessionRole.COUNT_TEXT) == "0/4"
        workspace.active_scope.setScope("stack", "api")
        summary = workspace.view_model
        await until(lambda: workspace.overview_model.count == 1, what="the overview's one row")
        assert summary.overviewSummary.startswith("4 processes  ·  ")

        # A click on the count: the three earlier runs, under it, newest first.
        button = await item(window, f"runsButton-{newest}")
        assert "3 earlier runs" in str(button.property("toolTipText"))
        await click(window, button)
        await until(lambda: model.rowCount() == 4, what="the earlier runs shown")
        assert [model.procIdAt(r) for r in range(4)] == [newest, *reversed(earlier)]
        await settle(0.1)
        assert text_of(window, f"runsText-{newest}") == "▾ ↻ 3"
        head = await item(window, f"toolCell-{newest}")
        top = head.mapToScene(head.boundingRect().topLeft()).y()
        for number, proc_id in enumerate(earlier, start=1):
            under = await item(window, f"toolCell-{proc_id}")
            assert under.mapToScene(under.boundingRect().topLeft()).y() > top
            assert text_of(window, f"toolName-{proc_id}") == "api"
            assert text_of(window, f"toolDetail-{proc_id}") == f"run {number}"
        # The tree and the overview still count four processes.
        assert tree.data(node, SessionRole.COUNT_TEXT) == "0/4"
        assert summary.overviewSummary.startswith("4 processes  ·  ")

        # Selecting an earlier run shows its output, as any row does.
        first = earlier[0]
        await click(window, await item(window, f"runtimeCell-{first}"))
        output = window.property("outputModel")
        await until(lambda: output.procId == first, what="the first run's output")
        pid = sup.get(first).os_pid
        await until_equal(
            lambda: text_of(window, "outputHeader"),
            f"Output of ID {first} · PID {pid}",
            what="the pane's header",
        )
        await until(lambda: output.rowCount() == 1, what="its line")
        assert output.data(output.index(0, 0)) == f"crashed in run {pid}"

        # Hidden again: the command's row stands for the run, and streams.
        await click(window, await item(window, f"runsButton-{newest}"))
        await until(lambda: model.rowCount() == 1, what="the earlier runs hidden")
        await until(lambda: output.procId == newest, what="the command's row streaming")
        assert window_model(window).currentProcId == newest
        await started.stop()

    run(scenario())


#: Ready once it prints "up", after a moment; then serves until stopped.
DB = py("import time; time.sleep(1.5); print('up', flush=True); time.sleep(60)")


@pytest.mark.promise("Workspaces")
def test_the_agent_is_in_the_tree_before_its_first_command_starts(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run
) -> None:
    async def scenario() -> None:
        main = make_workspace().load()
        commands = [
            Command("stack", "db", tuple(DB), name="db", ready="up"),
            Command("stack", "web", ("sleep", "60"), name="web", depends_on={"db": "ready"}),
        ]
        started = await Workspace(commands, name="stack").start(sup)
        await item(main, "agentNode-stack-web")
        assert started.state("web").proc_id is None, "web started already: the test proves nothing"
        assert started.state("web").phase.value == "waiting"
        # Once db is ready, web starts, under the node that waited for it.
        await until(lambda: started.state("web").proc_id is not None, what="web started")
        await started.stop()

    run(scenario())


def test_right_and_left_show_and_hide_a_commands_earlier_runs(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run
) -> None:
    async def scenario() -> None:
        workspace = make_workspace()
        workspace.load()
        window = open_proc_window(sup, "stack", "api")
        model = model_of(window)
        vm = window_model(window)
        started = await Workspace([crash_loop()], name="stack").start(sup)
        runs = (await started.wait_ended("api")).runs
        newest = runs[-1]
        await until(lambda: model.procIdAt(0) == newest, what="the command's row")
        vm.currentProcId = newest
        await key(window, Qt.Key.Key_Right)
        await until(lambda: model.rowCount() == 4, what="the earlier runs shown")
        await key(window, Qt.Key.Key_Down)
        assert vm.currentProcId == runs[-2]  # an earlier run
        await key(window, Qt.Key.Key_Left)
        await until(lambda: model.rowCount() == 1, what="hidden again")
        assert vm.currentProcId == newest  # on the command's row
        await key(window, Qt.Key.Key_Left)  # hidden already: nothing
        assert model.rowCount() == 1
        # In the filter field the arrows move the caret: the rows stay as they are.
        await key(window, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
        await type_text(window, "ab")
        await key(window, Qt.Key.Key_Left)
        await key(window, Qt.Key.Key_Right)
        await key(window, Qt.Key.Key_Right)
        await settle(0.2)
        assert model.rowCount() == 1
        field = await item(window, "filterField")
        assert field.property("cursorPosition") == 2
        window.close()

    run(scenario())
