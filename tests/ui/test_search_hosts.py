"""The main window's Search… over several supervisors (the real QML): this
window's own and a `procwindow serve` it is attached to. Hits come from both,
each run's heading naming its host; a hit opens on its own host; a host that
is down is said and skipped; with one host, no hit names one."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtQuick import QQuickItem, QQuickWindow

from procwindow._attach import Attachments
from procwindow.core import Supervisor, SupervisorAPI
from procwindow.qt.window import proc_windows, window_model
from tests.control.conftest import Server, stop_server
from tests.core.helpers import until

from .conftest import MakeWorkspace, Run
from .helpers import (
    click,
    find_item,
    item,
    key,
    py,
    save_screenshot,
    settle,
    type_text,
    until_equal,
)

pytestmark = pytest.mark.promise("Watching other processes and machines")


async def printed(sup: SupervisorAPI, text: str, session: str, agent: str) -> int:
    """The id of a proc of ``sup`` that printed ``text`` and ended."""
    proc = await sup.spawn(py(f"print({text!r})"), session=session, agent=agent)
    await sup.wait(proc.id)
    return proc.id


def texts(root: QQuickItem) -> list[str]:
    """The texts shown under ``root`` (visible items only)."""
    out: list[str] = []
    todo = [root]
    while todo:
        current = todo.pop()
        if not current.isVisible():
            continue
        text = current.property("text")
        if isinstance(text, str) and text:
            out.append(text)
        todo.extend(current.childItems())
    return out


async def search_for(main: QQuickWindow, pattern: str) -> QQuickItem:
    """Type ``pattern`` into the search field, Enter; the status line."""
    field = await item(main, "searchField")
    await click(main, field)
    await key(main, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    await type_text(main, pattern)
    await key(main, Qt.Key.Key_Return)
    return await item(main, "searchStatusText")


def test_search_covers_every_host_and_a_hit_opens_on_its_own(
    sup: Supervisor, server: Server, make_workspace: MakeWorkspace, run: Run
) -> None:
    from .test_screenshots import SIZES, assert_not_blank, resize

    async def scenario() -> None:
        workspace = make_workspace(scopes={"web": ["api"]})
        main = workspace.load()
        resize(main, *SIZES["1024x640"])
        attachments = Attachments(workspace, lambda m, e: None)
        try:
            attachments.start([server.path])
            await until(lambda: len(attachments.remotes) == 1, what="the attached server")
            ((key_, remote),) = attachments.remotes.items()
            await printed(sup, "zebra crossing in this window", "web", "api")
            await printed(remote, "an older zebra on the server", "ci-nightly", "lint")
            theirs = await printed(remote, "zebra crossing on the server", "ci-nightly", "test")
            await item(main, f"hostNode-{key_}")

            await click(main, await item(main, "searchButton"))
            field = await item(main, "searchField")
            assert "every host" in str(field.property("placeholderText"))
            status = await search_for(main, "zebra")
            await until_equal(
                lambda: status.property("text"), "3 matches in 3 runs", what="the search's end"
            )
            # This window's hits, then the server's (newest run first); each run's
            # heading names its host.
            hits = [await item(main, f"searchHit{i}") for i in range(3)]
            assert "zebra crossing in this window" in texts(hits[0])
            assert "zebra crossing on the server" in texts(hits[1])
            assert "an older zebra on the server" in texts(hits[2])
            labels = [await item(main, f"searchHitHost{i}") for i in range(3)]
            assert all(label.isVisible() for label in labels)
            assert [label.property("text") for label in labels] == ["This window", "test", "test"]
            # The label reads in full, inside the heading.
            for label in labels:
                assert label.property("text") in texts(label)
                inner = label.childItems()[0]
                assert inner.property("truncated") is False
            await settle(0.4)
            path, image = save_screenshot(main, "main-search-hosts-1024x640")
            assert_not_blank(path.name, image)

            # A click on the server's hit opens its run there, in a ProcWindow of that host.
            await click(main, hits[1])
            await until(lambda: len(proc_windows()) == 1, what="a ProcWindow")
            window = proc_windows()[0]
            assert window.title() == "Processes - ci-nightly/test on test"
            vm = window_model(window)
            await until(lambda: vm.currentProcId == theirs, what="the server's run shown")
            assert workspace.view_model.activeHost.key == key_

            # The server goes: the search says so and shows this window's hits.
            assert stop_server(server) == 0
            host = workspace.tree_model.host(key_)
            assert host is not None
            await until(lambda: not host.connected, what="the link down")
            main.requestActivate()
            await until(main.isActive, what="the main window active again")
            status = await search_for(main, "zebra")
            await until_equal(
                lambda: status.property("text"),
                "1 match in 1 run  ·  test: disconnected, not searched",
                what="the note",
            )
            assert "zebra crossing in this window" in texts(await item(main, "searchHit0"))
            assert find_item(main, "searchHit1") is None
            await settle(0.3)
            save_screenshot(main, "main-search-hosts-disconnected-1024x640")
        finally:
            await attachments.close()

    run(scenario())


def test_with_one_host_no_hit_names_one(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run
) -> None:
    async def scenario() -> None:
        main = make_workspace(scopes={"web": ["api"]}).load()
        await printed(sup, "zebra alone", "web", "api")
        await click(main, await item(main, "searchButton"))
        status = await search_for(main, "zebra")
        await until_equal(lambda: status.property("text"), "1 match in 1 run", what="the search")
        hit = await item(main, "searchHit0")
        assert find_item(main, "searchHitHost0") is None  # there, but not shown
        assert "This window" not in texts(hit)
        assert "zebra alone" in texts(hit)

    run(scenario())
