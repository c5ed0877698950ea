"""A ProcWindow on a workspace's scope says what its commands without a process
wait for, and a running command's Status tooltip what it depends on (real QML,
real children)."""

from __future__ import annotations

import pytest

from procwindow.core import Command, Supervisor, Workspace
from procwindow.qt import ProcRole
from procwindow.qt.window import open_proc_window, window_model

from .conftest import Run
from .helpers import find_item, item, py, until

# Ready once it prints "up" (after a moment), then serves until stopped.
DB = py("import time; time.sleep(0.8); print('up', flush=True); time.sleep(60)")


@pytest.mark.promise("Workspaces")
def test_the_bar_names_what_waits_and_the_tooltip_what_a_command_depends_on(
    sup: Supervisor, run: Run
) -> None:
    async def scenario() -> None:
        window = open_proc_window(sup, "stack", "")
        vm = window_model(window)
        commands = [
            Command("stack", "db", tuple(DB), name="db", ready="up"),
            Command("stack", "api", ("sleep", "60"), name="api", depends_on={"db": "ready"}),
        ]
        started = await Workspace(commands, name="stack").start(sup)
        text = await item(window, "workspaceText")
        await until(
            lambda: "api: waiting for db (ready)" in str(text.property("text")),
            what="the waiting command named",
        )
        # Once db is ready, api starts: nothing waits any more.
        await until(lambda: started.state("api").proc_id is not None, what="api started")
        api = started.state("api").proc_id
        assert api is not None
        await until(
            lambda: find_item(window, "workspaceBar") is None, what="the bar gone: nothing waits"
        )
        # What a running command depends on is in its Status tooltip.
        model = vm.procModel
        await until(lambda: model.rowOf(api) >= 0, what="api's row")
        tip = model.data(model.index(model.rowOf(api), 0), ProcRole.WORKSPACE_TIP)
        assert tip == "running\napi depends on db (ready)"
        await started.stop()

    run(scenario())
