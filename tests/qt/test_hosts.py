"""Several supervisors in one main window: the session tree over hosts, and the
main window's model acting on the supervisor each scope belongs to. The hosts
are this process's Supervisor and a RemoteSupervisor attached to a real
`procwindow serve`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import cast

import pytest
from PySide6.QtCore import QItemSelectionModel, QModelIndex
from pytestqt.modeltest import ModelTester
from pytestqt.qtbot import QtBot

from procwindow.control.remote import RemoteSupervisor
from procwindow.core import Supervisor
from procwindow.qt import Host, HostTreeModel, MainWindowModel, ProcWindowModel, SessionRole
from tests.control.conftest import Server, stop_server
from tests.core.helpers import until

from .conftest import QRun

pytestmark = pytest.mark.qt_log_level_fail("WARNING")

SLEEP = ["sleep", "60"]


def remote_host(remote: RemoteSupervisor, scopes: dict[str, list[str]] | None = None) -> Host:
    return Host(cast(Supervisor, remote), "test", "test (serve)", scopes=scopes)


def names(model: HostTreeModel, parent: QModelIndex | None = None) -> list[str]:
    index = parent if parent is not None else QModelIndex()
    return [
        str(model.index(r, 0, index).data(SessionRole.NAME)) for r in range(model.rowCount(index))
    ]


def test_one_host_is_a_plain_tree_and_several_are_nodes_of_their_own(
    sup: Supervisor,
    remote: RemoteSupervisor,
    qrun: QRun,
    qtmodeltester: ModelTester,
    qtbot: QtBot,
) -> None:
    local = Host(sup, scopes={"web": ["api"]})
    other = remote_host(remote, {"build": ["cc"]})
    tree = HostTreeModel()
    tree.addHost(local)
    qtmodeltester.check(tree)
    # One supervisor: its sessions at the top, as always.
    assert not tree.showsHosts
    assert names(tree) == ["web"]
    assert names(tree, tree.indexFor("web")) == ["api"]
    assert not tree.indexFor("", "", "local").isValid()

    with qtbot.waitSignal(tree.modelReset):
        tree.addHost(other)
    qtmodeltester.check(tree)
    # Two: each a top-level node, its sessions and agents below.
    assert tree.showsHosts
    assert names(tree) == ["This window", "test (serve)"]
    remote_node = tree.indexFor("", "", "test")
    assert remote_node.data(SessionRole.KIND) == "host"
    assert remote_node.data(SessionRole.CONNECTED) is True
    assert names(tree, remote_node) == ["build"]
    cc = tree.indexFor("build", "cc", "test")
    assert cc.parent() == tree.indexFor("build", "", "test")
    assert cc.parent().parent() == remote_node
    assert tree.scopeOf(cc) == (other, "build", "cc")
    assert tree.scopeOf(tree.indexFor("web", "api")) == (local, "web", "api")
    assert not tree.indexFor("web", "api", "test").isValid()  # not that host's

    async def scenario() -> None:
        # The remote's processes count on its own nodes; new sessions appear there.
        await remote.spawn(SLEEP, session="build", agent="cc")
        await remote.spawn(SLEEP, session="docs", agent="sphinx")
        await until(lambda: names(tree, remote_node) == ["build", "docs"], what="docs")
        await until(lambda: remote_node.data(SessionRole.RUNNING) == 2, what="two running")
        assert tree.indexFor("build", "cc", "test").data(SessionRole.TOTAL) == 1
        assert tree.indexFor("", "", "local").data(SessionRole.TOTAL) == 0
        await sup.spawn(SLEEP, session="web", agent="api")
        await until(lambda: tree.indexFor("web", "api").data(SessionRole.RUNNING) == 1)
        await remote.term_all()
        await sup.term_all()

    qrun(scenario())
    # Back to one: the plain tree again.
    with qtbot.waitSignal(tree.modelReset):
        assert tree.removeHost("test") is other
    assert names(tree) == ["web"]
    qtmodeltester.check(tree)
    for host in (local, other):
        host.close()


def test_a_host_whose_link_drops_reads_disconnected(
    sup: Supervisor, server: Server, qrun: QRun
) -> None:
    remote = qrun(RemoteSupervisor.connect(server.path))
    try:
        local, other = Host(sup), remote_host(remote, {"build": ["cc"]})
        tree = HostTreeModel()
        tree.addHost(local)
        tree.addHost(other)
        told: list[QModelIndex] = []
        tree.dataChanged.connect(
            lambda top, bottom, roles: (
                told.extend((top, bottom)) if SessionRole.CONNECTED in roles else None
            )
        )
        cc = tree.indexFor("build", "cc", "test")
        assert cc.data(SessionRole.CONNECTED) is True
        main = MainWindowModel(tree, lambda *_: None)
        main.treeSelection.setCurrentIndex(cc, QItemSelectionModel.SelectionFlag.ClearAndSelect)
        assert main.overviewSummary.startswith("on test (serve)  ·  0 processes")
        assert stop_server(server) == 0  # the server goes: the link drops
        qrun(until(lambda: not other.connected, what="the link down"))
        # Every node of that host reads it, and was told: they grey together.
        for index in (tree.indexFor("", "", "test"), tree.indexFor("build", "", "test"), cc):
            assert index.data(SessionRole.CONNECTED) is False
            assert index in told
        assert tree.indexFor("", "", "local").data(SessionRole.CONNECTED) is True
        assert "disconnected" in str(tree.indexFor("", "", "test").data(SessionRole.LABEL))
        assert main.overviewSummary.startswith("disconnected from test (serve), reconnecting")
        for host in (local, other):
            host.close()
    finally:
        qrun(remote.close())


@pytest.fixture
def two_hosts(
    sup: Supervisor, remote: RemoteSupervisor
) -> Iterator[tuple[MainWindowModel, Host, Host, list[tuple[Host, str, str]]]]:
    local = Host(sup, scopes={"web": ["api"]})
    other = remote_host(remote, {"web": ["api"]})  # the same names, elsewhere
    tree = HostTreeModel()
    tree.addHost(local)
    tree.addHost(other)
    opened: list[tuple[Host, str, str]] = []

    def open_window(host: Host, session: str, agent: str) -> ProcWindowModel | None:
        opened.append((host, session, agent))
        return None

    model = MainWindowModel(tree, open_window)
    yield model, local, other, opened
    for host in (local, other):
        host.close()


def test_every_action_acts_on_the_supervisor_of_its_scope(
    sup: Supervisor,
    remote: RemoteSupervisor,
    qrun: QRun,
    qtbot: QtBot,
    two_hosts: tuple[MainWindowModel, Host, Host, list[tuple[Host, str, str]]],
) -> None:
    model, local, other, opened = two_hosts
    tree = model.hosts
    select = QItemSelectionModel.SelectionFlag.ClearAndSelect

    async def scenario() -> None:
        mine = await sup.spawn(SLEEP, session="web", agent="api")
        theirs = await remote.spawn(SLEEP, session="web", agent="api")
        search = model.searchModel
        # A session of the remote made current: its host is the active one.
        with qtbot.waitSignal(model.activeHostChanged):
            model.treeSelection.setCurrentIndex(tree.indexFor("web", "api", "test"), select)
        assert model.activeHost is other
        assert model.controller is other.controller
        assert model.overviewModel is other.overview_model
        assert model.searchModel is search  # the search covers every host: the window's
        await until(lambda: model.overviewModel.count == 1, what="the remote's row")
        assert model.overviewModel.procIdAt(0) == theirs.id
        assert model.overviewSummary.startswith("on test (serve)  ·  1 process")

        # Processes… opens on that host; the menu's Terminate all stops only its processes.
        model.openProcesses("web", "api")
        assert opened == [(other, "web", "api")]
        model.setMenuScope("web", "api")
        model.terminateAll()
        await until(lambda: not remote.get(theirs.id).running, what="the remote's term")
        assert sup.get(mine.id).running

        # Run… starts the command there, and says where.
        form = model.runForm
        model.requestRun("web", "api")
        assert form.where == "test (serve)"
        assert form.cwdPlaceholder.startswith("the server's directory")
        form.submit("web", "api", "sleep 60", "")
        await form.wait_idle()
        assert [p.running for p in remote.procs("web")].count(True) == 1
        assert len(sup.procs("web")) == 1

        # The host's own node: no session, its name and link in the overview.
        model.treeSelection.setCurrentIndex(tree.indexFor("", "", "test"), select)
        assert model.activeHost is other and not model.hasScope
        assert model.overviewTitle == "test (serve)"
        assert model.overviewSummary.startswith(remote.where)
        model.setMenuScope("", "")
        assert model.menuDetachable
        with qtbot.waitSignal(model.detachRequested) as detach:
            model.detach()
        assert detach.args == ["test"]

        # Back on this window's own: the actions are this supervisor's again.
        model.treeSelection.setCurrentIndex(tree.indexFor("web", "", "local"), select)
        assert model.activeHost is local and model.controller is local.controller
        model.setMenuScope("web", "")
        assert not model.menuDetachable
        model.terminateAll()
        await until(lambda: not sup.get(mine.id).running, what="the local term")
        model.requestRun("web", "")
        assert form.where == "This window"  # several hosts: the dialog names each
        await remote.term_all()

    qrun(scenario())


def test_a_scope_chosen_elsewhere_moves_the_tree_to_its_host(
    qrun: QRun,
    qtbot: QtBot,
    two_hosts: tuple[MainWindowModel, Host, Host, list[tuple[Host, str, str]]],
) -> None:
    model, local, other, _ = two_hosts
    tree = model.hosts
    with qtbot.waitSignal(model.treeSelection.scopeShown, timeout=5000) as shown:
        other.active_scope.setScope("web", "api")  # a ProcWindow following it, a search hit
    assert model.activeHost is other
    assert shown.args[0] == tree.indexFor("web", "api", "test")
    with qtbot.waitSignal(model.treeSelection.scopeShown, timeout=5000) as shown:
        local.active_scope.setScope("web", "")
    assert model.activeHost is local
    assert model.treeSelection.currentIndex() == tree.indexFor("web", "", "local")
