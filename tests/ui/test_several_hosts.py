"""One main window over several supervisors (the real QML): this window's own
and a `procwindow serve` it is attached to. Each is a node of the session tree;
Processes…, Terminate all and Detach act on the supervisor the node belongs to."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetricsF
from PySide6.QtQuick import QQuickWindow

from procwindow._attach import Attachments
from procwindow.app import proc_windows
from procwindow.core import Supervisor
from procwindow.qt import ProcModel
from tests.control.conftest import Server
from tests.core.helpers import until

from ..tiers import first_fast
from .conftest import MakeWorkspace, Run
from .helpers import click, find_item, item, key, save_screenshot, settle, type_text

SLEEP = ["sleep", "60"]


async def menu_action(main: QQuickWindow, node: str, action: str) -> None:
    """Right-click ``node`` in the session tree and choose ``action`` in its menu."""
    await click(main, await item(main, node), Qt.MouseButton.RightButton)
    entry = await item(main, action)
    await settle(0.3)
    await click(main, entry)


@pytest.mark.promise("Watching other processes and machines")
def test_each_supervisor_is_a_node_and_its_actions_are_its_own(
    sup: Supervisor, server: Server, make_workspace: MakeWorkspace, run: Run
) -> None:
    reports: list[tuple[str, bool]] = []

    async def scenario() -> None:
        workspace = make_workspace(scopes={"web": ["api"]})
        main = workspace.load()
        attachments = Attachments(workspace, lambda m, e: reports.append((m, e)))
        try:
            mine = await sup.spawn(SLEEP, session="web", agent="api")
            attachments.start([server.path, "ssh://"])  # the second is no URL at all
            await until(lambda: len(attachments.remotes) == 1, what="the attached server")
            (key,) = attachments.remotes
            remote = attachments.remotes[key]
            theirs = await remote.spawn(SLEEP, session="web", agent="api")
            await until(lambda: any(e for _, e in reports), what="the bad target's report")
            assert any(m.startswith("cannot attach ssh://: ") for m, e in reports if e)
            assert ("Attached to test", False) in reports  # the socket's name

            # Two hosts: each a node, its sessions below, named apart.
            await item(main, "hostNode-local")
            await item(main, f"hostNode-{key}")
            await item(main, "sessionNode-local/web")
            await item(main, f"agentNode-{key}/web-api")
            await until(
                lambda: find_item(main, f"hostState-{key}").property("text") == "1/1",
                what="the server's counts on its node",
            )

            # Processes… on the server's agent: a ProcWindow on that supervisor.
            await menu_action(main, f"agentNode-{key}/web-api", "processesMenuItem")
            await until(lambda: len(proc_windows()) == 1, what="a ProcWindow")
            window = proc_windows()[0]
            assert window.title() == "Processes - web/api on test"
            model = window.property("procModel")
            assert isinstance(model, ProcModel)
            await until(lambda: model.count == 1, what="the server's row")
            assert model.procIdAt(0) == theirs.id
            # The overview is that host's too.
            overview = workspace.view_model.overviewModel
            await until(lambda: overview.count == 1 and overview.procIdAt(0) == theirs.id)

            # Terminate all on the server's session stops its process, not ours.
            await menu_action(main, f"sessionNode-{key}/web", "terminateAllMenuItem")
            await until(lambda: not remote.get(theirs.id).running, what="the server's term")
            assert sup.get(mine.id).running

            # Detach: the node goes, its ProcWindow closes, the server runs on.
            await menu_action(main, f"hostNode-{key}", "detachMenuItem")
            await until(lambda: not attachments.remotes, what="detached")
            await until(lambda: not proc_windows(), what="its ProcWindow closed")
            await until(lambda: find_item(main, f"hostNode-{key}") is None, what="its node gone")
            await item(main, "sessionNode-web")  # one host again: the plain tree
            assert server.proc.poll() is None
        finally:
            await attachments.close()

    run(scenario())


@pytest.mark.parametrize("size", first_fast(["700x450", "1400x900"]))
def test_screenshots_of_several_hosts(
    sup: Supervisor, server: Server, make_workspace: MakeWorkspace, run: Run, size: str
) -> None:
    from .test_screenshots import SIZES, assert_not_blank, resize

    async def scenario() -> None:
        workspace = make_workspace(scopes={"webapp": ["builder", "server"], "docs": ["sphinx"]})
        main = workspace.load()
        resize(main, *SIZES[size])
        attachments = Attachments(workspace, lambda m, e: None)
        try:
            await sup.spawn(SLEEP, session="webapp", agent="builder")
            attachments.start([server.path])
            await until(lambda: len(attachments.remotes) == 1, what="the attached server")
            (key,) = attachments.remotes
            remote = attachments.remotes[key]
            for agent in ("compile", "test-suite-with-a-rather-long-name"):
                await remote.spawn(SLEEP, session="ci-nightly", agent=agent)
            await remote.spawn(["true"], session="ci-nightly", agent="lint")
            await until(lambda: find_item(main, f"agentNode-{key}/ci-nightly-lint") is not None)
            await click(main, await item(main, f"sessionNode-{key}/ci-nightly"))
            overview = workspace.view_model.overviewModel
            await until(lambda: overview.count == 3, what="the server's rows")
            await settle(0.6)
            path, image = save_screenshot(main, f"main-hosts-{size}")
            assert_not_blank(path.name, image)
            await remote.term_all()
        finally:
            await attachments.close()

    run(scenario())


def test_the_attach_dialog_reaches_a_server_or_says_why_not(
    sup: Supervisor, server: Server, make_workspace: MakeWorkspace, run: Run, tmp_path: Path
) -> None:
    async def scenario() -> None:
        workspace = make_workspace(scopes={"web": ["api"]})
        main = workspace.load()
        form = workspace.view_model.attach_form
        # Without the application's attacher, the window offers no Attach….
        assert not form.available
        hidden = find_item(main, "attachButton")
        assert hidden is None or not hidden.isVisible()
        attachments = Attachments(workspace, lambda m, e: None)
        try:
            button = await item(main, "attachButton")
            await until(lambda: button.isVisible(), what="the Attach button")
            await click(main, button)
            field = await item(main, "attachTargetField")  # the dialog is open
            # Its placeholder reads in full in the field.
            font = field.property("font")
            hint = QFontMetricsF(font).horizontalAdvance(field.property("placeholderText"))
            room = field.width() - field.property("leftPadding") - field.property("rightPadding")
            assert hint <= room, (hint, room)

            def dialog_open() -> bool:
                return find_item(main, "attachTargetField") is not None

            # Nothing typed, then a server that is not there: the reason under the field.
            await key(main, Qt.Key.Key_Return)
            error = await item(main, "attachError")
            await until(lambda: "name a server" in str(error.property("text")))
            gone = str(tmp_path / "nobody.sock")
            await type_text(main, gone)
            assert error.property("text") == ""  # editing clears it
            await key(main, Qt.Key.Key_Return)
            await form.wait_idle()
            assert gone in str(error.property("text"))
            await settle(0.3)
            save_screenshot(main, "attach-dialog-error")
            assert dialog_open() and not attachments.remotes

            # A server that answers: it shows, and the dialog closes.
            field.setProperty("text", server.path)
            await settle(0.3)  # the dialog grew with the error: let it settle where it is
            await click(main, await item(main, "attachOkButton"))
            await form.wait_idle()
            await until(lambda: not dialog_open(), what="the dialog closed")
            (key_,) = attachments.remotes
            await item(main, f"hostNode-{key_}")

            # Ctrl+Shift+A opens it again; the same server twice is refused.
            await key(
                main,
                Qt.Key.Key_A,
                Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier,
            )
            field = await item(main, "attachTargetField")
            field.setProperty("text", server.path)
            await key(main, Qt.Key.Key_Return)
            await form.wait_idle()
            assert "shown already" in str(error.property("text"))
            await key(main, Qt.Key.Key_Escape)
            await until(lambda: not dialog_open(), what="closed by Esc")
        finally:
            await attachments.close()
        assert not form.available

    run(scenario())


@pytest.mark.promise("Watching other processes and machines")
def test_a_server_not_there_yet_is_shown_and_reached_once_it_is(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run, tmp_path: Path
) -> None:
    """A server that does not answer when the window opens (not started yet) is
    a greyed node at once, and becomes the usual one when it answers."""
    from procwindow.qt import SessionRole
    from tests.control.conftest import start_server, stop_server

    reports: list[tuple[str, bool]] = []
    path = str(tmp_path / "runtime" / "procwindow" / "test.sock")  # start_server's

    async def scenario() -> None:
        workspace = make_workspace(scopes={"web": ["api"]})
        main = workspace.load()
        attachments = Attachments(workspace, lambda m, e: reports.append((m, e)))
        server = None
        try:
            attachments.start([path])
            await until(lambda: len(attachments.remotes) == 1, what="the node, at once")
            (key,) = attachments.remotes
            remote = attachments.remotes[key]
            assert not remote.connected
            assert any(m.startswith("cannot reach test yet, trying again: ") for m, e in reports)
            await item(main, f"hostNode-{key}")
            tree = workspace.tree_model
            node = tree.indexFor("", host=key)
            assert tree.data(node, SessionRole.LABEL) == "test (disconnected)"

            server = start_server(tmp_path)
            await until(lambda: remote.connected, timeout=30, what="reached once it answers")
            await until(lambda: tree.data(tree.indexFor("", host=key), SessionRole.LABEL) == "test")
            theirs = await remote.spawn(SLEEP, session="web", agent="api")
            await item(main, f"agentNode-{key}/web-api")
            await until(
                lambda: find_item(main, f"hostState-{key}").property("text") == "1/1",
                what="its counts on its node",
            )
            await remote.kill(theirs.id)
        finally:
            await attachments.close()
            if server is not None:
                assert stop_server(server) == 0

    run(scenario())
