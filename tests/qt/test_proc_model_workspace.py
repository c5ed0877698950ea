"""The process table shows what a workspace does with a command's proc: a crash
loop's countdown in the Status cell ("restarting in 2 s"), each restart a new row."""

from __future__ import annotations

import pytest

from procwindow.core import Backoff, Command, Supervisor, Workspace
from procwindow.qt import ProcModel, ProcRole
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
        # Then the restart: a new run on top, the old row no longer counting down.
        await until(lambda: model.rowCount() == 2, timeout=10, what="the restart's row")
        await until(lambda: model.procIdAt(0) != first, what="the new run listed first")
        row = model.rowOf(first)
        assert model.data(model.index(row, 0), ProcRole.PHASE_TEXT) == ""
        await run.stop()

    qrun(scenario())
