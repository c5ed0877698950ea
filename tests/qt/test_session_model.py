"""SessionModel: the session → agent tree with live counts."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt
from pytestqt.modeltest import ModelTester

from procwindow.core import Supervisor
from procwindow.qt import SessionModel, SessionRole
from tests.core.helpers import until

from .conftest import QRun

pytestmark = pytest.mark.qt_log_level_fail("WARNING")

SLEEP = ["sleep", "30"]


def node(model: SessionModel, session: str, agent: str = "") -> dict[str, object]:
    index = model.indexFor(session, agent)
    assert index.isValid(), (session, agent)
    return {
        name.data().decode(): model.data(index, role)
        for role, name in model.roleNames().items()
        if role >= Qt.ItemDataRole.UserRole
    }


def counts(model: SessionModel, session: str, agent: str = "") -> tuple[object, object]:
    values = node(model, session, agent)
    return values["running"], values["total"]


def test_declared_tree_then_live_counts(
    sup: Supervisor, qrun: QRun, qtmodeltester: ModelTester
) -> None:
    model = SessionModel(sup)
    qtmodeltester.check(model)
    model.addSession("build", ["compile", "test"])
    model.addSession("docs", [])
    model.addSession("build", ["test", "lint"])  # existing ones are kept, new ones added
    assert model.rowCount() == 2
    build = model.index(0, 0)
    assert model.rowCount(build) == 3
    assert [model.data(model.index(r, 0, build), SessionRole.NAME) for r in range(3)] == [
        "compile",
        "test",
        "lint",
    ]
    assert node(model, "build") == {
        "name": "build",
        "kind": "session",
        "session": "build",
        "agent": "",
        "running": 0,
        "total": 0,
        "label": "build",
        "host": "",  # a SessionModel alone: no host, its supervisor in process
        "connected": True,
        "countText": "",  # no process: nothing beside the name
    }
    assert node(model, "build", "test")["kind"] == "agent"

    async def scenario() -> None:
        a = await sup.spawn(SLEEP, session="build", agent="compile")
        b = await sup.spawn(SLEEP, session="build", agent="test")
        await sup.spawn(["true"], session="build", agent="test")
        await until(lambda: counts(model, "build")[1] == 3)
        await until(lambda: counts(model, "build") == (2, 3))
        assert counts(model, "build", "test") == (1, 2)
        assert model.data(model.indexFor("build", "")) == "build  2/3"
        assert node(model, "build", "test")["label"] == "test  1/2"
        assert node(model, "build")["countText"] == "2/3"

        await sup.kill(a.id)
        await until(lambda: counts(model, "build") == (1, 3))
        assert counts(model, "build", "compile") == (0, 1)
        sup.dismiss(a.id)
        await until(lambda: counts(model, "build") == (1, 2))
        assert node(model, "build", "compile")["label"] == "compile"  # kept, now empty

        # A new session and agent appear as new rows.
        await sup.spawn(SLEEP, session="deploy", agent="ops")
        await until(lambda: model.rowCount() == 3)
        assert counts(model, "deploy", "ops") == (1, 1)
        await sup.kill(b.id)
        await until(lambda: counts(model, "build") == (0, 2))

    qrun(scenario())


def test_counts_procs_that_existed_before_it(sup: Supervisor, qrun: QRun) -> None:
    async def spawn() -> None:
        p = await sup.spawn(["true"], session="s1", agent="a1")
        await sup.wait(p.id)
        await sup.spawn(SLEEP, session="s1", agent="a2")
        await sup.spawn(SLEEP, session="s2", agent="a1")

    qrun(spawn())
    model = SessionModel(sup)  # the start events are still queued: no double count
    assert [model.data(model.index(r, 0), SessionRole.NAME) for r in range(2)] == ["s1", "s2"]
    assert counts(model, "s1") == (1, 2)
    qrun(until(lambda: counts(model, "s2") == (1, 1)))
    assert counts(model, "s1") == (1, 2)
    assert counts(model, "s1", "a1") == (0, 1)


def test_index_for_and_parents(sup: Supervisor) -> None:
    model = SessionModel(sup)
    model.addSession("s1", ["a1", "a2"])
    model.addSession("s2", ["a1"])
    s2 = model.indexFor("s2", "")
    a2 = model.indexFor("s1", "a2")
    assert (s2.row(), a2.row()) == (1, 1)
    assert model.parent(a2) == model.indexFor("s1", "")
    assert model.parent(s2) == QModelIndex()
    assert model.parent(QPersistentModelIndex(a2)) == model.indexFor("s1", "")
    assert not model.indexFor("nope", "").isValid()
    assert not model.indexFor("s1", "nope").isValid()
    assert model.indexFor("s2") == s2
    assert model.data(model.indexFor("s2", "a1"), SessionRole.SESSION) == "s2"
    assert model.data(s2, 9999) == ""
    assert model.data(QModelIndex(), SessionRole.NAME) == ""
    assert not model.index(5, 0).isValid()
    assert not model.index(0, 1).isValid()
    assert model.rowCount(a2) == 0
    assert model.parent() is None  # the QObject parent is still reachable


def test_closing_the_supervisor_keeps_the_tree(sup: Supervisor, qrun: QRun) -> None:
    model = SessionModel(sup)
    qrun(sup.spawn(SLEEP, session="s1", agent="a1"))
    qrun(until(lambda: model.rowCount() == 1))
    qrun(sup.close())
    assert model.rowCount() == 1
