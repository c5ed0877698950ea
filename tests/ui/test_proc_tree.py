"""The Tree panel of a ProcWindow: the processes the streaming command is made of,
each with its kernel pid, state, CPU and memory, and a signal to one of them.

Real QML, a real supervisor, real children (a grandchild and a setsid escapee).
"""

from __future__ import annotations

import psutil
import pytest
from PySide6.QtCore import Qt
from PySide6.QtQuick import QQuickWindow

from procwindow.core import Supervisor
from procwindow.qt.window import proc_windows, window_model

from ..core.helpers import state_of
from .conftest import MakeWorkspace, Run
from .helpers import click, find_item, item, key, prop, py, until, until_equal

# A shell with two children (one with a child of its own) and one that left with
# setsid; each prints its pid.
FAMILY = py(
    """
    import subprocess, sys, time
    kid = subprocess.Popen(["sh", "-c", "sleep 600 & echo grandchild $!; wait"])
    away = subprocess.Popen(["sleep", "601"], start_new_session=True)
    print("kid", kid.pid, flush=True)
    print("away", away.pid, flush=True)
    time.sleep(600)
    """
)


def the_window() -> QQuickWindow:
    windows = proc_windows()
    assert len(windows) == 1, windows
    return windows[0]


def _pids(sup: Supervisor, proc_id: int) -> dict[str, int]:
    return {line.text.split()[0]: int(line.text.split()[1]) for line in sup.read(proc_id).lines}


def _state_in(tree: object, os_pid: int) -> str | None:
    """The state the tree model shows for ``os_pid``."""
    from procwindow.qt.models.tree import TreeRole

    for r in range(tree.rowCount()):  # type: ignore[attr-defined]
        index = tree.index(r, 0)  # type: ignore[attr-defined]
        if tree.data(index, TreeRole.OS_PID) == os_pid:  # type: ignore[attr-defined]
            return str(tree.data(index, TreeRole.STATE_TEXT))  # type: ignore[attr-defined]
    return None


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.promise("The window: The process tree")
def test_the_tree_panel_lists_a_commands_processes_and_stops_one(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run
) -> None:
    async def scenario() -> None:
        family = await sup.spawn(FAMILY, session="web", agent="api")
        await until(lambda: len(_pids(sup, family.id)) == 3, what="the pids printed")
        pid = _pids(sup, family.id)
        workspace = make_workspace()
        workspace.load()
        workspace.openProcWindow("web", "api")
        window = the_window()
        await until(lambda: window.isExposed(), what="the ProcWindow on screen")
        vm = window_model(window)
        await until_equal(lambda: vm.streamingProcId, family.id, what="the command streamed")
        assert (
            find_item(window, "treePanel") is None or not find_item(window, "treePanel").isVisible()
        )

        # Tree (Ctrl+E) shows its processes, each under its parent.
        await key(window, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
        tree = vm.treeModel
        assert tree.active
        panel = await item(window, "treePanel")
        assert panel.isVisible()
        members = {family.os_pid, pid["kid"], pid["grandchild"], pid["away"]}
        await until(
            lambda: {tree.osPidAt(r) for r in range(tree.count)} >= members,
            what="the four processes listed",
        )
        assert tree.osPidAt(0) == family.os_pid  # the command's own process first
        for os_pid in members:
            await item(window, f"treeRow{os_pid}")
        grandchild_row = await item(window, f"treeRow{pid['grandchild']}")
        command = next(
            c
            for c in grandchild_row.findChildren(type(grandchild_row))
            if c.objectName() == "treeCommand"
        )
        # A child just forked shows its parent's command until it execs.
        await until(lambda: prop(command, "text") == "└ sleep 600", what="its own command")
        summary = await item(window, "treeSummary")
        assert str(prop(summary, "text")).startswith(f"{tree.count} processes  ·  ")

        # A right click offers the other signals: SIGSTOP stops that process, SIGCONT
        # lets it go on, and the row says so.
        for name, letter in (("STOP", "T"), ("CONT", "S")):
            kid_row = await item(window, f"treeRow{pid['kid']}")
            await click(window, kid_row, Qt.MouseButton.RightButton)
            menu_item = await item(window, f"treeMenuItem-{name}")
            assert prop(menu_item, "text") == f"Send SIG{name} to {pid['kid']}"
            await click(window, menu_item)
            await until(lambda letter=letter: state_of(pid["kid"]) == letter, what=name)
            expected = "stopped" if name == "STOP" else "sleeping"
            await until(
                lambda expected=expected: _state_in(tree, pid["kid"]) == expected,
                what=f"the row {expected}",
            )

        # Kill on the grandchild's row stops that process alone.
        await click(window, await item(window, f"treeKill{pid['grandchild']}"))
        await until(lambda: not _alive(pid["grandchild"]), what="the grandchild killed")
        await until(
            lambda: find_item(window, f"treeRow{pid['grandchild']}") is None,
            what="its row gone",
        )
        assert _alive(pid["away"]) and sup.get(family.id).running

        # Term on the escapee's row reaches it too, though it left the group.
        await click(window, await item(window, f"treeTerm{pid['away']}"))
        await until(lambda: not _alive(pid["away"]), what="the setsid escapee terminated")
        assert sup.get(family.id).running

        # Once the command has ended with its whole tree, the panel says so.
        await sup.kill(family.id)
        empty = await item(window, "treeEmptyText")
        await until(lambda: tree.count == 0 and empty.isVisible(), what="the empty tree")
        assert str(prop(empty, "text")).startswith("No process left")

        # Its close button hides it.
        await click(window, await item(window, "treeCloseButton"))
        assert not tree.active
        await until(lambda: not panel.isVisible(), what="the panel hidden")

    run(scenario())
