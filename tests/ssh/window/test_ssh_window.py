"""The real window attached through a real sshd to a `procwindow serve`: run, stream,
filter, term, kill and dismiss, as a person does, on a RemoteSupervisor; then the
link is cut (every ssh killed) while a child floods, and the pane ends with the
server's lines, each once."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
import qasync
from PySide6.QtCore import Qt
from PySide6.QtQuick import QQuickWindow

from procwindow import app as window_app
from procwindow.control.remote import RemoteSupervisor
from procwindow.core import Supervisor
from procwindow.qt import OutputModel, OutputRole, ProcModel
from procwindow.qt.window import proc_windows
from tests.control.conftest import Server, start_server, stop_server
from tests.ui.conftest import Run
from tests.ui.helpers import click, find_item, item, key, py, settle, type_text, until

from ..conftest import Sshd
from ..test_ssh_attach import remote_command

pytestmark = [pytest.mark.slow, pytest.mark.qt_log_level_fail("WARNING")]

LOG = py(
    """
    import sys, time
    for i in range(40):
        if i % 4 == 3:
            print(f"error {i}: disk full", file=sys.stderr, flush=True)
        else:
            print(f"ok {i}: compiled", flush=True)
    time.sleep(60)
    """
)
FLOOD = py(
    """
    import sys, time
    for i in range(30000):
        print(f"flood {i:06d}")
        if i % 1000 == 0:
            sys.stdout.flush()
            time.sleep(0.03)
    """
)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    srv = start_server(tmp_path)
    try:
        yield srv
    finally:
        assert stop_server(srv) == 0


@pytest.fixture
def remote(loop: qasync.QEventLoop, sshd: Sshd, server: Server) -> Iterator[RemoteSupervisor]:
    sup = loop.run_until_complete(
        RemoteSupervisor.connect(
            sshd.url(), ssh_command=sshd.ssh_command, remote_procwindow=remote_command(server)
        )
    )
    try:
        yield sup
    finally:
        loop.run_until_complete(sup.close())


def the_window() -> QQuickWindow:
    found = proc_windows()
    assert len(found) == 1, found
    return found[0]


def status_of(window: QQuickWindow, proc_id: int) -> str:
    text = find_item(window, f"statusText-{proc_id}")
    return "" if text is None else str(text.property("text"))


async def open_from_menu(main: QQuickWindow, node_name: str) -> QQuickWindow:
    await click(main, await item(main, node_name), Qt.MouseButton.RightButton)
    menu_item = await item(main, "processesMenuItem")
    await settle(0.3)
    await click(main, menu_item)
    await until(lambda: len(proc_windows()) == 1, what="a ProcWindow")
    window = the_window()
    await until(lambda: window.isExposed(), what="the ProcWindow on screen")
    return window


def test_the_window_over_ssh(
    remote: RemoteSupervisor, windows: list[window_app.Workspace], run: Run
) -> None:
    async def scenario() -> None:
        workspace = window_app.Workspace(cast(Supervisor, remote))
        windows.append(workspace)
        main = workspace.load()
        # run: as the Run… dialog does, through the window's controller
        workspace.controller.run("web", "api", "sleep 60")
        await until(lambda: len(remote.procs("web")) == 1, timeout=30, what="the run")
        sleeper = remote.procs("web")[0].id
        log = (await remote.spawn(LOG, session="web", agent="api")).id
        window = await open_from_menu(main, "sessionNode-web")
        model = window.property("procModel")
        assert isinstance(model, ProcModel)
        await until(lambda: model.count == 2, what="two rows")
        assert status_of(window, sleeper) == "running"

        # stream: a click on a row shows its output
        await click(window, await item(window, f"statusText-{log}"))
        output = window.property("outputModel")
        assert isinstance(output, OutputModel)
        view = find_item(window, "outputView")
        assert view is not None
        await until(lambda: view.property("count") == 40, timeout=30, what="40 lines")
        # filter
        await key(window, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
        await type_text(window, "error")
        await until(lambda: view.property("count") == 10, what="10 error lines")
        await key(window, Qt.Key.Key_Escape)
        await until(lambda: view.property("count") == 40, what="the filter cleared")

        # term, kill, dismiss
        await click(window, await item(window, f"termButton-{log}"))
        await until(
            lambda: status_of(window, log) == "terminated (SIGTERM)", timeout=30, what="term"
        )
        await click(window, await item(window, f"killButton-{sleeper}"))
        await until(lambda: status_of(window, sleeper) == "killed (SIGKILL)", what="kill")
        await click(window, await item(window, f"dismissButton-{sleeper}"))
        await until(lambda: model.count == 1, what="the dismissed row gone")

        # the link is cut while a child floods: the pane ends with every line once
        flood = (await remote.spawn(FLOOD, session="web", agent="api")).id
        await until(lambda: model.count == 2, what="the flood's row")
        await click(window, await item(window, f"statusText-{flood}"))
        await until(lambda: output.procId == flood and output.rowCount() > 3000, timeout=30)
        for pid in remote.link.pids():
            os.kill(pid, signal.SIGKILL)
        await until(lambda: not remote.connected, what="the link down")
        assert remote.get(flood).disconnected
        await until(lambda: remote.connected, timeout=30, what="the link back")
        await until(lambda: remote.get(flood).exit is not None, timeout=60, what="the end")
        await until(lambda: output.rowCount() == 30000, timeout=60, what="every line")
        rows = [output.data(output.index(r), OutputRole.TEXT) for r in range(output.rowCount())]
        assert rows == [f"flood {i:06d}" for i in range(30000)]
        assert status_of(window, flood) == "exited (0)"

    run(scenario(), timeout=180)
