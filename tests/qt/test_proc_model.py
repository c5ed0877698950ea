"""ProcModel over a real supervisor and real children."""

from __future__ import annotations

import asyncio
import gc
import signal
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import QModelIndex, Qt
from pytestqt.modeltest import ModelTester
from pytestqt.qtbot import QtBot

from procwindow.core import Supervisor
from procwindow.qt import ProcController, ProcModel, ProcRole
from procwindow.qt._ticker import Ticker
from procwindow.qt.models import VISIBLE_MARGIN
from tests.core.helpers import IGNORES_TERM, py, until

from .conftest import QRun

# The C++ model tester reports through qWarning: make any warning fail the test.
pytestmark = pytest.mark.qt_log_level_fail("WARNING")

SLEEP = ["sleep", "30"]
CHATTY = py(
    """
    import time
    for i in range(20):
        print("line", i, flush=True)
        time.sleep(0.01)
    """
)


def row_values(model: ProcModel, row: int) -> dict[str, object]:
    index = model.index(row, 0)
    return {
        name.data().decode(): model.data(index, role)
        for role, name in model.roleNames().items()
        if role >= Qt.ItemDataRole.UserRole
    }


def pump_tasks(loop: asyncio.AbstractEventLoop) -> list[asyncio.Task[object]]:
    return [
        t
        for t in asyncio.all_tasks(loop)
        if t.get_name().startswith("procwindow.qt events") and not t.done()
    ]


def test_spawn_output_exit_dismiss_through_the_model_tester(
    sup: Supervisor, qrun: QRun, qtmodeltester: ModelTester
) -> None:
    model = ProcModel(sup, "s1")
    qtmodeltester.check(model)
    assert model.rowCount() == 0
    assert model.columnNames == [
        "id",
        "pid",
        "agent",
        "tool",
        "status",
        "runtime",
        "cpu",
        "memory",
        "actions",
    ]

    async def scenario() -> None:
        first = await sup.spawn(CHATTY, session="s1", agent="a1", tool="web_fetch")
        second = await sup.spawn(SLEEP, session="s1", agent="a2")
        await until(lambda: model.rowCount() == 2, what="two rows")
        assert [model.procIdAt(r) for r in range(2)] == [second.id, first.id]  # newest first
        await sup.wait(first.id)
        await until(lambda: model.data(model.index(1, 4)) == "exited (0)", what="exit shown")
        await sup.kill(second.id)
        await until(lambda: model.data(model.index(0, 0), ProcRole.EXIT_REASON) == "killed")
        sup.dismiss(first.id)
        await until(lambda: model.rowCount() == 1, what="dismissed row removed")
        sup.dismiss(second.id)
        await until(lambda: model.rowCount() == 0, what="all dismissed")

    qrun(scenario())


def test_roles_of_a_running_and_an_exited_proc(sup: Supervisor, qrun: QRun) -> None:
    model = ProcModel(sup, "s1", "a1")

    async def scenario() -> None:
        p = await sup.spawn(SLEEP, session="s1", agent="a1", tool="web_fetch")
        await until(lambda: model.rowCount() == 1)
        values = row_values(model, 0)
        assert values["procId"] == p.id
        assert values["osPid"] == p.os_pid
        assert values["tool"] == "web_fetch"
        assert values["command"] == "sleep 30"
        assert values["status"] == "running"
        assert values["statusText"] == "running"
        assert values["exitCode"] == -1
        assert values["exitReason"] == ""
        assert values["startTime"] == pytest.approx(p.started_at)
        assert values["runtimeText"] == "0s"
        assert (values["canTerm"], values["canKill"], values["canDismiss"]) == (True, True, False)
        assert values["canRestart"] is True
        assert (values["session"], values["agent"]) == ("s1", "a1")
        assert str(values["statusColor"]).startswith("#")
        assert [model.data(model.index(0, c)) for c in range(model.columnCount())] == [
            str(p.id),
            str(p.os_pid),  # the kernel's, under its own name
            "web_fetch",
            "running",
            "0s",
            "–",
            "–",
            "",
        ]
        assert model.data(model.index(0, 0), Qt.ItemDataRole.ToolTipRole) == "sleep 30"

        await sup.term(p.id)
        await until(lambda: model.data(model.index(0, 0), ProcRole.STATUS) == "exited")
        values = row_values(model, 0)
        assert values["exitCode"] == 128 + signal.SIGTERM
        assert values["exitReason"] == "terminated"
        assert values["statusText"] == "terminated (SIGTERM)"
        assert (values["canTerm"], values["canKill"], values["canDismiss"]) == (False, False, True)

    qrun(scenario())


def test_unknown_roles_answer_empty_values_never_none(sup: Supervisor, qrun: QRun) -> None:
    model = ProcModel(sup, "s1")
    qrun(sup.spawn(SLEEP, session="s1", agent="a1"))
    qrun(until(lambda: model.rowCount() == 1))
    index = model.index(0, 0)
    for role in (Qt.ItemDataRole.DecorationRole, Qt.ItemDataRole.FontRole, 9999):
        assert model.data(index, role) == ""
    assert model.data(QModelIndex()) == ""
    assert model.headerData(0, Qt.Orientation.Horizontal) == "ID"
    assert model.headerData(1, Qt.Orientation.Horizontal) == "PID"
    assert model.headerData(99, Qt.Orientation.Horizontal) == ""
    assert model.headerData(0, Qt.Orientation.Horizontal, Qt.ItemDataRole.ToolTipRole) == ""


def test_session_scope_shows_every_agent_with_an_agent_column(sup: Supervisor, qrun: QRun) -> None:
    async def spawn_all() -> None:
        await sup.spawn(SLEEP, session="s1", agent="a1")
        await sup.spawn(SLEEP, session="s1", agent="a2")
        await sup.spawn(SLEEP, session="s2", agent="a1")

    qrun(spawn_all())
    session = ProcModel(sup, "s1")
    agent = ProcModel(sup, "s1", "a2")
    assert session.rowCount() == 2
    assert session.title == "Processes - s1"
    assert [session.data(session.index(r, 2)) for r in range(2)] == ["a2", "a1"]
    assert session.headerData(2, Qt.Orientation.Horizontal) == "Agent"
    assert session.data(session.index(0, 2), ProcRole.COLUMN_NAME) == "agent"
    assert agent.rowCount() == 1
    assert agent.title == "Processes - s1/a2"
    assert agent.columnCount() == 8
    assert "agent" not in agent.columnNames
    assert agent.data(agent.index(0, 0), ProcRole.AGENT) == "a2"


def test_new_procs_of_other_scopes_do_not_appear(sup: Supervisor, qrun: QRun) -> None:
    model = ProcModel(sup, "s1", "a1")

    async def scenario() -> None:
        await sup.spawn(SLEEP, session="s2", agent="a1")
        await sup.spawn(SLEEP, session="s1", agent="a2")
        mine = await sup.spawn(SLEEP, session="s1", agent="a1")
        await until(lambda: model.rowCount() == 1)
        await asyncio.sleep(0.1)
        assert model.rowCount() == 1
        assert model.procIdAt(0) == mine.id

    qrun(scenario())


def test_a_status_change_announces_that_row_only(
    sup: Supervisor, qrun: QRun, qtmodeltester: ModelTester
) -> None:
    model = ProcModel(sup, "s1")
    qtmodeltester.check(model)
    procs = [qrun(sup.spawn(SLEEP, session="s1", agent="a1")) for _ in range(3)]
    qrun(until(lambda: model.rowCount() == 3))
    victim = procs[1]
    row = model.rowOf(victim.id)
    assert row == 1
    changes: list[tuple[int, int, int, int, list[int]]] = []

    def record(top: QModelIndex, bottom: QModelIndex, roles: list[int]) -> None:
        if ProcRole.STATUS in roles:
            changes.append((top.row(), bottom.row(), top.column(), bottom.column(), list(roles)))

    model.dataChanged.connect(record)
    qrun(sup.kill(victim.id))
    qrun(until(lambda: model.data(model.index(row, 0), ProcRole.STATUS) == "exited"))
    assert changes
    last_column = model.columnCount() - 1
    for top, bottom, left, right, roles in changes:
        assert (top, bottom, left, right) == (row, row, 0, last_column)
        assert ProcRole.CAN_DISMISS in roles
        assert ProcRole.PROC_ID not in roles  # explicit roles, not "everything"


def test_runtime_tick_covers_running_rows_and_then_only_visible_ones(
    sup: Supervisor, qrun: QRun
) -> None:
    count = VISIBLE_MARGIN + 6
    model = ProcModel(sup, "s1", "a1")

    async def spawn_all() -> None:
        done = await sup.spawn(["true"], session="s1", agent="a1")
        await sup.wait(done.id)
        for _ in range(count):
            await sup.spawn(SLEEP, session="s1", agent="a1")
        await until(lambda: model.rowCount() == count + 1)

    qrun(spawn_all())
    runtime_column = model.columnNames.index("runtime")
    ranges: list[tuple[int, int, int, int]] = []

    def record(top: QModelIndex, bottom: QModelIndex, roles: list[int]) -> None:
        assert ProcRole.RUNTIME_TEXT in roles
        assert ProcRole.STATUS not in roles
        ranges.append((top.row(), bottom.row(), top.column(), bottom.column()))

    model.dataChanged.connect(record)
    model.tick()
    # Every running row (the exited one, the oldest, is last), on the Runtime column.
    assert ranges == [(0, count - 1, runtime_column, runtime_column)]

    ranges.clear()
    model.setVisibleRows(0, 0)
    model.tick()
    assert ranges == [(0, VISIBLE_MARGIN, runtime_column, runtime_column)]

    ranges.clear()
    model.setVisibleRows(count, count)  # only the exited row and its margin
    model.tick()
    assert ranges == [(count - VISIBLE_MARGIN, count - 1, runtime_column, runtime_column)]

    ranges.clear()
    model.setVisibleRows(-1, -1)
    model.tick()
    assert ranges == [(0, count - 1, runtime_column, runtime_column)]


def test_runtime_text_advances(sup: Supervisor, qrun: QRun) -> None:
    model = ProcModel(sup, "s1", "a1")
    qrun(sup.spawn(SLEEP, session="s1", agent="a1"))
    qrun(until(lambda: model.rowCount() == 1))
    qrun(until(lambda: model.data(model.index(0, 4)) == "1s", timeout=5), timeout=10)
    assert model.data(model.index(0, 0), ProcRole.RUNTIME) >= 1.0


def test_stopping_shows_before_the_exit(tmp_path: Path, qrun: QRun) -> None:
    sup = Supervisor(log_dir=tmp_path / "logs", graceful_timeout=1.0)
    model = ProcModel(sup, "s1", ticker=Ticker(None))  # no tick: only events show a state
    controller = ProcController(sup)

    async def scenario() -> None:
        p = await sup.spawn(IGNORES_TERM, session="s1", agent="a1")
        await until(lambda: sup.read(p.id).lines, what="handler installed")
        controller.term(p.id)
        await until(
            lambda: model.data(model.index(0, 0), ProcRole.STATUS) == "stopping",
            what="the row to show stopping",
        )
        assert model.data(model.index(0, 0), ProcRole.CAN_TERM) is False
        assert model.data(model.index(0, 0), ProcRole.CAN_KILL) is True
        await controller.wait_idle()
        await until(lambda: model.data(model.index(0, 0), ProcRole.STATUS) == "exited")
        assert model.data(model.index(0, 4)) == "killed (ignored SIGTERM)"
        # Stopped by a signal of its own, the cell names that one.
        q = await sup.spawn(["sleep", "30"], session="s1", agent="a1", stop_signal="CONT")
        controller.term(q.id)
        await controller.wait_idle()
        await until(lambda: model.data(model.index(0, 4)) == "killed (ignored SIGCONT)")
        await sup.close()

    qrun(scenario())


def test_existing_procs_are_loaded_and_events_do_not_duplicate_them(
    sup: Supervisor, qrun: QRun
) -> None:
    # Spawned on the loop, but the model is created before the loop runs again:
    # the start events are still queued when it takes its snapshot.
    async def spawn() -> None:
        await sup.spawn(SLEEP, session="s1", agent="a1")
        await sup.spawn(SLEEP, session="s1", agent="a1")

    qrun(spawn())
    model = ProcModel(sup, "s1")
    assert model.rowCount() == 2
    qrun(asyncio.sleep(0.05))
    assert model.rowCount() == 2


def test_row_lookups(sup: Supervisor, qrun: QRun) -> None:
    model = ProcModel(sup, "s1")
    a = qrun(sup.spawn(SLEEP, session="s1", agent="a1"))
    b = qrun(sup.spawn(SLEEP, session="s1", agent="a1"))
    qrun(until(lambda: model.rowCount() == 2))
    assert (model.rowOf(b.id), model.rowOf(a.id), model.rowOf(999)) == (0, 1, -1)
    assert (model.procIdAt(0), model.procIdAt(1), model.procIdAt(2), model.procIdAt(-1)) == (
        b.id,
        a.id,
        -1,
        -1,
    )


def test_rescoping_resets_once_and_replaces_the_subscription(
    sup: Supervisor, qrun: QRun, qloop: asyncio.AbstractEventLoop, qtbot: QtBot,
    qtmodeltester: ModelTester,
) -> None:  # fmt: skip
    qrun(sup.spawn(SLEEP, session="s1", agent="a1"))
    qrun(sup.spawn(SLEEP, session="s2", agent="a1"))
    qrun(sup.spawn(SLEEP, session="s2", agent="a2"))
    model = ProcModel(sup, "s1", "a1")
    qtmodeltester.check(model)
    qrun(asyncio.sleep(0))
    [old_task] = pump_tasks(qloop)
    with (
        qtbot.waitSignal(model.modelReset),
        qtbot.waitSignal(model.titleChanged),
        qtbot.waitSignal(model.columnNamesChanged),
        qtbot.waitSignal(model.countChanged),
    ):
        model.setScope("s2", "")
    assert (model.session, model.agent, model.rowCount()) == ("s2", "", 2)
    assert model.title == "Processes - s2"
    qrun(asyncio.sleep(0))
    assert old_task.done()
    [new_task] = pump_tasks(qloop)
    assert "session.s2.agent.*" in new_task.get_name()

    with qtbot.waitSignal(model.agentChanged):
        model.agent = "a2"
    assert model.rowCount() == 1
    with qtbot.assertNotEmitted(model.modelReset):
        model.setScope("s2", "a2")


def test_no_session_and_invalid_names_show_nothing(
    sup: Supervisor, qrun: QRun, qloop: asyncio.AbstractEventLoop
) -> None:
    qrun(sup.spawn(SLEEP, session="s1", agent="a1"))
    empty = ProcModel(sup)
    invalid = ProcModel(sup, "s*1")
    assert (empty.rowCount(), invalid.rowCount()) == (0, 0)
    assert empty.title == "Processes"
    qrun(asyncio.sleep(0))
    assert pump_tasks(qloop) == []


def test_deleting_the_model_ends_its_task(
    sup: Supervisor, qrun: QRun, qloop: asyncio.AbstractEventLoop
) -> None:
    owned = ProcModel(sup, "s1")
    deleted = ProcModel(sup, "s2")
    qrun(asyncio.sleep(0))
    assert len(pump_tasks(qloop)) == 2
    del owned
    gc.collect()
    deleted.deleteLater()
    qrun(asyncio.sleep(0.05))
    assert pump_tasks(qloop) == []
    # The supervisor no longer delivers to them.
    qrun(sup.spawn(SLEEP, session="s1", agent="a1"))
    qrun(asyncio.sleep(0.05))


def test_closing_the_supervisor_ends_the_task(
    sup: Supervisor, qrun: QRun, qloop: asyncio.AbstractEventLoop
) -> None:
    model = ProcModel(sup, "s1")
    qrun(sup.spawn(SLEEP, session="s1", agent="a1"))
    qrun(sup.close())
    qrun(asyncio.sleep(0))
    assert pump_tasks(qloop) == []
    assert model.rowCount() == 1


def test_qml_can_create_it_with_the_default_supervisor(sup: Supervisor, qrun: QRun) -> None:
    from PySide6.QtCore import QUrl
    from PySide6.QtQml import QQmlComponent, QQmlEngine

    from procwindow.qt import set_default_supervisor

    qrun(sup.spawn(SLEEP, session="s1", agent="a1"))
    set_default_supervisor(sup)
    try:
        engine = QQmlEngine()
        component = QQmlComponent(engine)
        component.setData(
            b"import QtQml\nimport Procwindow\n"
            b"QtObject {\n"
            b"  property ProcModel procs: ProcModel { session: 's1' }\n"
            b"  property ActiveScope scope: ActiveScope { session: 's1' }\n"
            b"  property int rows: procs.count\n"
            b"  property string title: procs.title\n"
            b"}\n",
            QUrl("inline.qml"),
        )
        root = component.create()
        assert root is not None, component.errorString()
        assert root.property("rows") == 1
        assert root.property("title") == "Processes - s1"
        root.deleteLater()
        qrun(asyncio.sleep(0.01))
        engine.deleteLater()
        qrun(asyncio.sleep(0.01))
    finally:
        set_default_supervisor(None)


def test_without_a_supervisor_it_says_what_to_do() -> None:
    with pytest.raises(RuntimeError, match="set_default_supervisor"):
        ProcModel()


def test_model_can_be_built_outside_a_coroutine(sup: Supervisor, qrun: QRun) -> None:
    model = ProcModel(sup, "s1")

    async def scenario() -> None:
        await sup.spawn([sys.executable, "-c", "pass"], session="s1", agent="a1")
        await until(lambda: model.rowCount() == 1)

    qrun(scenario())


def test_stopping_shows_at_once_not_at_the_next_tick(sup: Supervisor, qrun: QRun) -> None:
    model = ProcModel(sup, "s1", "a1", ticker=Ticker(None))  # no tick: only events show it

    async def scenario() -> None:
        p = await sup.spawn(
            IGNORES_TERM,
            session="s1",
            agent="a1",
        )
        await until(lambda: model.rowCount() == 1 and sup.read(p.id).lines)
        term = asyncio.ensure_future(sup.term(p.id))
        await until(lambda: model.data(model.index(0, 0), ProcRole.STATUS) == "stopping")
        await sup.kill(p.id)
        await term

    qrun(scenario())
    model.close()


def ids(model: ProcModel) -> list[int]:
    return [model.procIdAt(row) for row in range(model.rowCount())]


def test_a_restart_takes_its_predecessors_row(
    sup: Supervisor, qrun: QRun, qtmodeltester: ModelTester
) -> None:
    model = ProcModel(sup, "s1")
    qtmodeltester.check(model)
    a, b, c = (qrun(sup.spawn(SLEEP, session="s1", agent="a1")) for _ in range(3))
    qrun(until(lambda: model.rowCount() == 3))
    assert ids(model) == [c.id, b.id, a.id]

    # Told before its row comes (as the controller does): inserted in b's row.
    async def restart_b() -> int:
        new = await sup.restart(b.id)
        model.keepPlace(new.id, b.id)
        await until(lambda: model.rowCount() == 4, what="the restart's row")
        return new.id

    b2 = qrun(restart_b())
    assert ids(model) == [c.id, b2, b.id, a.id]
    # A newer proc still comes in at the top.
    d = qrun(sup.spawn(SLEEP, session="s1", agent="a1"))
    qrun(until(lambda: model.rowCount() == 5))
    assert ids(model) == [d.id, c.id, b2, b.id, a.id]

    # Told after its row came (at the top): it moves to a's row.
    a2 = qrun(sup.restart(a.id))
    qrun(until(lambda: model.rowCount() == 6))
    assert model.procIdAt(0) == a2.id
    model.keepPlace(a2.id, a.id)
    assert ids(model) == [d.id, c.id, b2, b.id, a2.id, a.id]
    assert [model.rowOf(i) for i in ids(model)] == list(range(6))
    model.keepPlace(a2.id, a.id)  # again: nothing moves
    assert ids(model) == [d.id, c.id, b2, b.id, a2.id, a.id]

    # A restart of the restart takes its row in turn; shown again, the order holds.
    b3 = qrun(sup.restart(b2))
    model.keepPlace(b3.id, b2)
    qrun(until(lambda: model.rowCount() == 7))
    order = [d.id, c.id, b3.id, b2, b.id, a2.id, a.id]
    assert ids(model) == order
    model.setScope("other", "")
    model.setScope("s1", "")
    assert ids(model) == order
    qrun(sup.kill(a.id))
    sup.dismiss(a.id)
    qrun(until(lambda: model.rowCount() == 6))
    assert ids(model) == order[:-1]
    model.close()
