"""The main window's search over several supervisors: this process's Supervisor
and a RemoteSupervisor attached to a real `procwindow serve`, searched at once,
each hit naming its host; a host that is down, or whose search fails, is said,
and the others' hits stay."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import cast

import pytest
from PySide6.QtCore import Qt
from pytestqt.modeltest import ModelTester

from procwindow.control.remote import RemoteSupervisor
from procwindow.core import Proc, SearchHit, Supervisor, SupervisorAPI
from procwindow.qt import Host, HostTreeModel, MainWindowModel, ProcWindowModel, SearchModel
from procwindow.qt.models import SearchSource
from procwindow.qt.models.search import SearchRole
from tests.control.conftest import Server, stop_server
from tests.core.helpers import py, until

from .conftest import QRun

pytestmark = pytest.mark.qt_log_level_fail("WARNING")

TOOL_TIP = Qt.ItemDataRole.ToolTipRole

Opened = list[tuple[Host, str, str]]


@pytest.fixture
def window(
    sup: Supervisor, remote: RemoteSupervisor
) -> Iterator[tuple[MainWindowModel, Host, Host, Opened]]:
    local = Host(sup)
    other = Host(cast(Supervisor, remote), "test", "test (serve)")
    tree = HostTreeModel()
    tree.addHost(local)
    tree.addHost(other)
    opened: Opened = []

    def open_window(host: Host, session: str, agent: str) -> ProcWindowModel | None:
        opened.append((host, session, agent))
        return None

    model = MainWindowModel(tree, open_window)
    yield model, local, other, opened
    model.searchModel.cancel()
    for host in (local, other):
        host.close()


def column(model: SearchModel, role: int) -> list[object]:
    return [model.index(row).data(role) for row in range(model.rowCount())]


async def printed(sup: SupervisorAPI, text: str, session: str = "web", agent: str = "api") -> Proc:
    """A proc of ``sup`` that printed ``text`` and ended."""
    proc = await sup.spawn(py(f"print({text!r})"), session=session, agent=agent)
    await sup.wait(proc.id)
    return proc


def test_search_covers_every_host_and_each_hit_names_its_own(
    sup: Supervisor,
    remote: RemoteSupervisor,
    qrun: QRun,
    qtmodeltester: ModelTester,
    window: tuple[MainWindowModel, Host, Host, Opened],
) -> None:
    model, local, other, opened = window
    search = model.searchModel
    qtmodeltester.check(search)

    async def scenario() -> None:
        older = await printed(sup, "zebra here, older")
        mine = await printed(sup, "zebra here")
        theirs = await printed(remote, "zebra there", "build", "cc")
        search.search("zebra")
        assert search.running
        await until(lambda: not search.running, what="the search's end")
        # Grouped by host in the tree's order, each host's newest run first.
        assert column(search, SearchRole.HOST) == ["local", "local", "test"]
        assert column(search, SearchRole.PROC_ID) == [mine.id, older.id, theirs.id]
        assert column(search, SearchRole.HOST_LABEL) == ["This window"] * 2 + ["test (serve)"]
        assert column(search, SearchRole.FIRST_OF_PROC) == [True, True, True]
        assert search.index(2).data(SearchRole.RUN_TITLE) == theirs.cmd
        assert "on test (serve)" in str(search.index(2).data(TOOL_TIP))
        assert search.statusText == "3 matches in 3 runs" and not search.statusError
        assert search.hostAt(2) == "test" and search.hostAt(3) == ""
        qtmodeltester.check(search)

        # A hit opens its run on its own host, which becomes the active one;
        # the search is the window's, whatever host is active.
        model.openLine("test", theirs.id, 1)
        assert opened == [(other, "build", "cc")]
        assert model.activeHost is other and model.searchModel is search
        assert search.count == 3
        model.openLine("local", mine.id, 1)
        assert opened[-1] == (local, "web", "api") and model.activeHost is local

        # A bad pattern is refused the same by every host: said once.
        search.regex = True
        search.search("zebra(")
        assert not search.running and search.statusError and search.count == 0
        assert "zebra(" in search.statusText
        assert "test (serve)" not in search.statusText and "This window" not in search.statusText
        assert search.statusText.count("invalid pattern") == 1

        # MAX_HITS counts the hits of every host together.
        capped = SearchModel(
            sources=lambda: [
                SearchSource(sup, "local", "This window"),
                SearchSource(cast(SupervisorAPI, remote), "test", "test (serve)"),
            ],
            max_hits=2,
        )
        capped.search("zebra")
        await until(lambda: not capped.running, what="the capped search")
        assert capped.count == 2
        assert capped.statusText.startswith("the first 2 matches")

    qrun(scenario())


def test_one_host_searched_alone_names_none(
    sup: Supervisor, qrun: QRun, window: tuple[MainWindowModel, Host, Host, Opened]
) -> None:
    model, _local, _other, _opened = window
    assert model.searchPlaceholder == (
        "Search the output of every run on every host, also past ones…"
    )
    tree = model.hosts

    async def scenario() -> None:
        await printed(sup, "zebra alone")
        tree.removeHost("test")
        assert model.searchPlaceholder == "Search the output of every run, also past ones…"
        search = model.searchModel
        search.search("zebra")
        await until(lambda: not search.running, what="the search's end")
        assert column(search, SearchRole.HOST_LABEL) == [""]
        assert search.index(0).data(TOOL_TIP) == "Open this run at line 1"
        assert search.statusText == "1 match in 1 run"

    qrun(scenario())


def test_a_disconnected_host_is_said_and_skipped(
    sup: Supervisor,
    server: Server,
    qrun: QRun,
    window: tuple[MainWindowModel, Host, Host, Opened],
) -> None:
    model, _local, other, _opened = window
    search = model.searchModel

    async def scenario() -> None:
        await printed(sup, "zebra here")
        assert stop_server(server) == 0  # the server goes: the link drops
        await until(lambda: not other.connected, what="the link down")
        search.search("zebra")
        assert "test (serve): disconnected, not searched" in search.statusText
        await until(lambda: not search.running, what="the search's end")
        assert search.statusText == (
            "1 match in 1 run  ·  test (serve): disconnected, not searched"
        )
        assert column(search, SearchRole.HOST) == ["local"]
        assert not search.statusError

    qrun(scenario())


class _Broken:
    """A supervisor whose search breaks after one hit (a lost disk, a lost link)."""

    def __init__(self, sup: Supervisor) -> None:
        self._sup = sup

    def get(self, proc_id: int) -> Proc:
        return self._sup.get(proc_id)

    def search(self, pattern: str, **_: object) -> AsyncIterator[SearchHit]:
        return self._hits(pattern)

    async def _hits(self, pattern: str) -> AsyncIterator[SearchHit]:
        async for hit in self._sup.search(pattern):
            yield hit
            raise OSError("the disk went away")


def test_one_hosts_failure_leaves_the_others_hits(sup: Supervisor, qrun: QRun) -> None:
    async def scenario() -> None:
        await printed(sup, "zebra one")
        await printed(sup, "zebra two")
        broken = cast(SupervisorAPI, _Broken(sup))
        search = SearchModel(
            sources=lambda: [SearchSource(broken, "a", "a on x"), SearchSource(sup, "b", "b")]
        )
        search.search("zebra")
        await until(lambda: not search.running, what="the search's end")
        assert column(search, SearchRole.HOST) == ["a", "b", "b"]
        assert search.statusText == (
            "3 matches in 3 runs  ·  a on x: search failed: the disk went away"
        )
        assert not search.statusError
        # Alone, its failure is the search's: an error.
        alone = SearchModel(sources=lambda: [SearchSource(broken, "a", "a on x")])
        alone.search("zebra")
        await until(lambda: not alone.running, what="the second search")
        assert alone.statusError and alone.count == 1
        assert alone.statusText == "1 match in 1 run  ·  search failed: the disk went away"

    qrun(scenario())


def test_notifications_name_the_host_when_there_are_several(
    sup: Supervisor, remote: RemoteSupervisor
) -> None:
    local = Host(sup, notify=True)
    other = Host(cast(Supervisor, remote), "test", "test (serve)", notify=True)
    tree = HostTreeModel()
    tree.addHost(local)
    model = MainWindowModel(tree, lambda *_: None)
    assert local.notifier is not None and other.notifier is not None
    assert local.notifier.host_label == ""  # one host: nothing to tell apart
    tree.addHost(other)
    assert local.notifier.host_label == "This window"
    assert other.notifier.host_label == "test (serve)"
    # The status line names the host too.
    other.controller.actionFailed.emit(1, "term", "no such process")
    assert model.statusText == "test (serve): no such process"
    tree.removeHost("test")
    assert local.notifier.host_label == ""
    for host in (local, other):
        host.close()
