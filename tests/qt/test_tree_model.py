"""ProcTreeModel over a real supervisor and a tree that changes: processes come and
go, the rows that stay keep their place, and the controller signals one of them."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPersistentModelIndex
from pytestqt.modeltest import ModelTester

from procwindow.core import Supervisor
from procwindow.qt import ProcController
from procwindow.qt.models import ProcTreeModel
from procwindow.qt.models.tree import TreeRole
from tests.core.helpers import alive, py, until

from .conftest import QRun

pytestmark = pytest.mark.qt_log_level_fail("WARNING")

# Starts a new sleeping child every 0.3 s, keeping the last two; prints each pid.
CHURN = py(
    """
    import subprocess, time
    kids = []
    for i in range(200):
        kids.append(subprocess.Popen(["sleep", str(600 + i)]))
        print("kid", kids[-1].pid, flush=True)
        if len(kids) > 2:
            kids.pop(0).kill()
        time.sleep(0.3)
    """
)


def pids(model: ProcTreeModel) -> list[int]:
    return [model.osPidAt(row) for row in range(model.rowCount())]


def test_the_tree_follows_its_processes_keeping_rows_in_place(
    sup: Supervisor, qrun: QRun, qtmodeltester: ModelTester
) -> None:
    async def scenario() -> None:
        p = await sup.spawn(CHURN, session="s", agent="a")
        model = ProcTreeModel(sup, poll_ms=100)
        qtmodeltester.check(model)
        model.procId = p.id
        assert model.rowCount() == 0  # inactive: nothing read
        model.active = True
        await until(lambda: len(pids(model)) == 3, what="the leader and two children")
        leader = model.index(0, 0)
        assert model.data(leader, TreeRole.OS_PID) == p.os_pid
        assert model.data(leader, TreeRole.LEADER) is True
        held = QPersistentModelIndex(leader)
        first_kids = set(pids(model)[1:])
        # Children come and go; the leader's row is never removed and re-added.
        await until(lambda: not first_kids & set(pids(model)), timeout=15, what="new children")
        assert held.isValid() and held.row() == 0
        assert model.data(model.index(1, 0), TreeRole.DEPTH) == 1
        # A child just forked shows its parent's command until it execs sleep.
        await until(
            lambda: str(model.data(model.index(1, 0), TreeRole.COMMAND)).startswith("sleep 6"),
            what="a child's own command",
        )
        assert model.summaryText.startswith(f"{model.count} processes  ·  ")

        # A signal to one child through the controller: it goes, the leader stays.
        controller = ProcController(sup)
        victim = model.osPidAt(1)
        controller.sendSignal(p.id, "KILL", victim)
        model.reloadSoon()
        await until(lambda: not alive(victim), what="the child killed")
        await until(lambda: victim not in pids(model), what="its row gone")
        assert sup.get(p.id).running
        failures: list[str] = []
        controller.actionFailed.connect(lambda _p, _a, message: failures.append(message))
        controller.sendSignal(p.id, "TERM", victim)  # gone: not sent, and said so
        await until(lambda: failures, what="the refusal")
        assert failures == [f"SIGTERM not sent: pid {victim} has already exited"]
        controller.sendSignal(p.id, "NOPE", 0)
        await until(lambda: len(failures) == 2, what="the bad signal refused")
        assert failures[1].startswith("signal must be a signal name")

        # Another proc: its rows only; inactive: nothing is read.
        other = await sup.spawn(["sleep", "60"], session="s", agent="a")
        model.procId = other.id
        assert model.rowCount() == 0
        await until(lambda: pids(model) == [other.os_pid], what="the other proc's tree")
        await sup.kill(p.id)
        await sup.kill(other.id)
        await until(lambda: model.rowCount() == 0, what="nothing left")
        assert model.emptyText.startswith("No process left")
        await controller.wait_idle()
        model.close()

    qrun(scenario(), timeout=40)
