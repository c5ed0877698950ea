"""The window's models over either kind of supervisor: the in-process Supervisor
and a RemoteSupervisor attached to a `procwindow serve` (SupervisorAPI). The
same behaviours, the same rows, and qtmodeltester finds nothing to report."""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest
from pytestqt.modeltest import ModelTester

from procwindow.control.remote import RemoteSupervisor
from procwindow.core import Supervisor, SupervisorAPI
from procwindow.qt import (
    OutputModel,
    OutputRole,
    ProcController,
    ProcModel,
    ProcRole,
    SessionModel,
    SessionRole,
)
from tests.control.conftest import start_server, stop_server
from tests.core.helpers import py, until

from .conftest import QRun

pytestmark = pytest.mark.qt_log_level_fail("WARNING")

SLEEP = ["sleep", "30"]


def texts(model: OutputModel) -> list[str]:
    return [model.data(model.index(r), OutputRole.TEXT) for r in range(model.rowCount())]


def test_proc_model_rows_follow_spawn_exit_and_dismiss(
    api: SupervisorAPI, qrun: QRun, qtmodeltester: ModelTester
) -> None:
    model = ProcModel(api, "s1")  # type: ignore[arg-type]
    qtmodeltester.check(model)

    async def scenario() -> None:
        first = await api.spawn(["sh", "-c", "echo hi; exit 3"], session="s1", agent="a1")
        second = await api.spawn(SLEEP, session="s1", agent="a2", tool="web_fetch")
        await api.spawn(SLEEP, session="other", agent="a1")
        await until(lambda: model.rowCount() == 2, what="two rows")
        assert [model.procIdAt(r) for r in range(2)] == [second.id, first.id]
        await until(lambda: model.data(model.index(1, 4)) == "failed (3)", what="exit shown")
        assert model.data(model.index(0, 0), ProcRole.TOOL) == "web_fetch"
        assert model.data(model.index(0, 0), ProcRole.STATUS) == "running"
        await api.kill(second.id)
        await until(lambda: model.data(model.index(0, 0), ProcRole.EXIT_REASON) == "killed")
        api.dismiss(first.id)
        await until(lambda: model.rowCount() == 1, what="dismissed row removed")
        await api.term_all()

    qrun(scenario())


def test_proc_model_runtime_and_stats(api: SupervisorAPI, qrun: QRun) -> None:
    model = ProcModel(api, "s1", "a1")  # type: ignore[arg-type]

    async def scenario() -> None:
        p = await api.spawn(SLEEP, session="s1", agent="a1")
        await until(lambda: model.rowCount() == 1)
        assert model.data(model.index(0, 0), ProcRole.START_TIME) == pytest.approx(p.started_at)
        assert 0 <= api.runtime(p.id) < 5
        await until(lambda: api.stats(p.id).rss > 0, what="stats")
        await api.term(p.id)
        await until(lambda: model.data(model.index(0, 0), ProcRole.EXIT_REASON) == "terminated")

    qrun(scenario())


def test_output_model_loads_then_streams(
    api: SupervisorAPI, qrun: QRun, qtmodeltester: ModelTester
) -> None:
    model = OutputModel(api)  # type: ignore[arg-type]
    qtmodeltester.check(model)

    async def scenario() -> None:
        p = await api.spawn(
            py(
                """
                import sys, time
                print("first", flush=True)
                for i in range(300):
                    print("out", i, flush=True)
                    if i % 100 == 0:
                        print("err", i, file=sys.stderr, flush=True)
                    time.sleep(0.002)
                """
            ),
            session="s1",
            agent="a1",
        )
        model.procId = p.id
        await until(lambda: model.rowCount() == 304, what="every line")
        await until(lambda: api.get(p.id).exit is not None)

    qrun(scenario())
    lines = texts(model)
    # Two pipes: each stream in order, across them the order they were read in.
    assert [t for t in lines if not t.startswith("err")] == ["first"] + [
        f"out {i}" for i in range(300)
    ]
    assert [t for t in lines if t.startswith("err")] == ["err 0", "err 100", "err 200"]
    seqs = [model.data(model.index(r), OutputRole.SEQ) for r in range(model.rowCount())]
    assert seqs == list(range(1, 305))
    row = lines.index("err 100")
    assert model.data(model.index(row), OutputRole.IS_STDERR) is True


def test_output_model_of_a_finished_proc_and_a_filter(
    api: SupervisorAPI, qrun: QRun, qtmodeltester: ModelTester
) -> None:
    async def finished() -> int:
        p = await api.spawn(
            ["sh", "-c", "for i in $(seq 1 2000); do echo line $i; done"], session="s1", agent="a1"
        )
        await until(lambda: api.get(p.id).exit is not None)
        return p.id

    proc_id = qrun(finished())
    model = OutputModel(api, proc_id)  # type: ignore[arg-type]
    qtmodeltester.check(model)
    qrun(until(lambda: model.rowCount() == 2000, what="all lines"))
    model.filterText = "line 19"
    qrun(until(lambda: model.rowCount() == 111, what="filtered"))
    assert texts(model)[:2] == ["line 19", "line 190"]


def test_session_model_counts(api: SupervisorAPI, qrun: QRun, qtmodeltester: ModelTester) -> None:
    model = SessionModel(api)  # type: ignore[arg-type]
    qtmodeltester.check(model)

    def counts(session: str, agent: str = "") -> tuple[object, object]:
        index = model.indexFor(session, agent)
        if not index.isValid():
            return (None, None)
        return model.data(index, SessionRole.RUNNING), model.data(index, SessionRole.TOTAL)

    async def scenario() -> None:
        a = await api.spawn(SLEEP, session="build", agent="cc")
        await api.spawn(SLEEP, session="build", agent="ld")
        await until(lambda: counts("build") == (2, 2), what="two running")
        await api.kill(a.id)
        await until(lambda: counts("build", "cc") == (0, 1), what="one exited")
        await api.term_all()

    qrun(scenario())


def test_controller_actions_and_failures(api: SupervisorAPI, qrun: QRun) -> None:
    controller = ProcController(api)  # type: ignore[arg-type]
    failures: list[tuple[int, str, str]] = []
    controller.actionFailed.connect(lambda *a: failures.append(a))

    async def scenario() -> None:
        controller.run("s1", "a1", "sleep 30")
        await until(lambda: len(api.procs("s1")) == 1, what="run")
        p = api.procs("s1")[0]
        controller.term(p.id)
        await until(lambda: api.get(p.id).exit is not None, what="terminated")
        controller.restart(p.id)
        await until(lambda: len(api.procs("s1")) == 2, what="restarted")
        controller.kill(4242)
        controller.dismiss(4242)
        await controller.wait_idle()
        await api.term_all()

    qrun(scenario())
    # dismiss is synchronous: it fails before the kill's task has run.
    assert sorted((pid, action) for pid, action, _ in failures) == [
        (4242, "dismiss"),
        (4242, "kill"),
    ]
    assert all("4242" in message for _, _, message in failures)


def test_proc_model_rows_say_disconnected_while_the_link_is_down(
    qrun: QRun, tmp_path: Path
) -> None:
    server = start_server(tmp_path)
    try:

        async def scenario() -> None:
            remote = await RemoteSupervisor.connect(server.path)
            try:
                model = ProcModel(cast(Supervisor, remote), "s", "a")
                p = await remote.spawn(SLEEP, session="s", agent="a")
                await until(lambda: model.rowCount() == 1, what="the row")
                index = model.index(0, 0)
                assert model.data(index, ProcRole.STATUS_TEXT) == "running"
                cpu = model.index(0, model.columnNames.index("cpu"))
                model.setVisibleRows(0, 0)
                await until(lambda: model.data(cpu) != "–", what="a CPU sample shown")
                assert model.data(index, ProcRole.CAN_TERM) is True
                changed: list[int] = []
                model.dataChanged.connect(lambda first, _last, _roles: changed.append(first.row()))
                for client in list(remote._calls.clients):
                    client.abort()  # the link drops
                await until(lambda: not remote.connected, what="disconnected")
                await until(lambda: changed, what="the rows told")
                assert model.data(index, ProcRole.STATUS_TEXT) == "disconnected"
                assert model.data(index, ProcRole.CAN_TERM) is False
                assert model.data(index, ProcRole.CAN_KILL) is False
                # No stale figures: CPU and Mem read "–" while out of reach.
                assert model.data(cpu) == "–"
                assert model.data(index, ProcRole.STATS_LIVE) is False
                # Back: the row reads its state again, and acts again.
                await until(lambda: remote.connected, timeout=15, what="reconnected")
                await until(
                    lambda: model.data(index, ProcRole.STATUS_TEXT) == "running",
                    what="running again",
                )
                assert model.data(index, ProcRole.CAN_TERM) is True
                await remote.kill(p.id)
                model.close()
            finally:
                await remote.close()

        qrun(scenario())
    finally:
        assert stop_server(server) == 0


def test_the_pane_says_where_the_lines_it_does_not_hold_are(
    api: SupervisorAPI, qrun: QRun, panes: list
) -> None:
    """Lines before the pane's oldest: in the log files here, or, attached, in the
    server's log (its `out` reads them), never "no log file keeps them"."""
    from .panes import Pane

    p = qrun(api.spawn(["seq", "1", "2500"], session="s", agent="a"))
    qrun(until(lambda: api.get(p.id).exit is not None, what="exited"))
    pane = Pane(api, "s", "a")
    panes.append(pane)
    w, out = pane.model, pane.output
    out.maxLines = 1000
    out.procId = p.id
    qrun(until(lambda: out.lineCount == 1000 and out.earlierLines == 1500, what="the tail"))
    if api.where:
        assert w.earlierText == (
            "1,500 earlier lines are not shown here — the server keeps them in its log:"
        )
        assert (w.logText, w.logPath) == (api.where, "")  # no file here to open
    else:
        log = api.log_path(p.id)
        assert w.earlierText == "1,500 earlier lines are not shown here — in the log:"
        assert (w.logText, w.logPath) == (log, log)
