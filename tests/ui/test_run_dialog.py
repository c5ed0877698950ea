"""The Run… dialog, used as a person uses it: Ctrl+N, typing, OK, the error beside a field.

A failed Run… keeps the dialog open with the fields as typed and the error under
the field at fault; fixing that field clears it, and OK starts the command and
closes the dialog. The ProcWindow has Run… too, on its own scope.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QColor, QImage
from PySide6.QtQuick import QQuickItem, QQuickWindow

from procwindow.core import Supervisor
from procwindow.qt import ProcController
from procwindow.qt.window import open_proc_window, proc_windows, window_model

from .conftest import MakeWorkspace, Run
from .helpers import click, find_item, item, key, save_screenshot, settle, type_text, until

ERRORS = ("runCommandError", "runSessionError", "runAgentError", "runCwdError", "runGeneralError")


def shown_errors(window: QQuickWindow) -> dict[str, str]:
    """The error lines the dialog shows now, by objectName."""
    shown = (find_item(window, name) for name in ERRORS)
    return {it.objectName(): it.property("text") for it in shown if it is not None}


def dialog_open(window: QQuickWindow) -> bool:
    return find_item(window, "runCommandField") is not None


async def open_on(window: QQuickWindow) -> QQuickItem:
    """Ctrl+N in ``window``; the command field, focused."""
    await key(window, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    field = await item(window, "runCommandField")
    await until(field.hasActiveFocus, what="the command field focused")
    return field


async def retype(window: QQuickWindow, field: QQuickItem, text: str) -> None:
    """Click ``field``, select all it holds and type ``text`` over it."""
    await settle(0.1)  # an error shown or cleared moves the fields at the next polish
    await click(window, field)
    assert field.hasActiveFocus(), field.objectName()
    await key(window, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    if text:
        await type_text(window, text)
    else:
        await key(window, Qt.Key.Key_Backspace)


async def main_on_scope(make_workspace: MakeWorkspace, session: str, agent: str) -> QQuickWindow:
    workspace = make_workspace()
    workspace.session_model.addSession(session, [agent])
    main = workspace.load()
    await click(main, await item(main, f"agentNode-{session}-{agent}"))
    return main


def mean_colour(image: QImage, it: QQuickItem) -> tuple[float, float, float]:
    """The mean colour of ``it``'s area in a grab of its window."""
    ratio = image.devicePixelRatio()
    top_left = it.mapToScene(QPointF(0, 0))
    x0, y0 = int(top_left.x() * ratio), int(top_left.y() * ratio)
    w, h = int(it.width() * ratio), int(it.height() * ratio)
    colours = [QColor(image.pixel(x, y)) for x in range(x0, x0 + w) for y in range(y0, y0 + h)]
    n = len(colours)
    return (
        sum(c.red() for c in colours) / n,
        sum(c.green() for c in colours) / n,
        sum(c.blue() for c in colours) / n,
    )


def test_a_bad_directory_keeps_the_dialog_open_with_the_error_beside_it(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run, tmp_path: Path
) -> None:
    async def scenario() -> None:
        main = await main_on_scope(make_workspace, "proj", "agent1")
        await open_on(main)
        await type_text(main, "sh -c 'echo here; pwd'")
        cwd_field = await item(main, "runCwdField")
        await click(main, cwd_field)
        await type_text(main, "no/such/dir")
        await key(main, Qt.Key.Key_Return)

        missing = os.path.join(os.getcwd(), "no", "such", "dir")
        await until(lambda: "runCwdError" in shown_errors(main), what="the directory's error")
        assert shown_errors(main) == {"runCwdError": f"no such directory: {missing}"}
        await settle(0.2)
        assert dialog_open(main)
        assert sup.procs() == []
        # The fields stay as typed.
        assert (await item(main, "runCommandField")).property("text") == "sh -c 'echo here; pwd'"
        assert cwd_field.property("text") == "no/such/dir"
        # Not a directory is the directory's error too.
        afile = tmp_path / "afile"
        afile.write_text("")
        await retype(main, cwd_field, str(afile))
        assert shown_errors(main) == {}  # editing the field cleared its error
        await click(main, await item(main, "runOkButton"))
        await until(lambda: "runCwdError" in shown_errors(main), what="not a directory")
        assert shown_errors(main)["runCwdError"] == f"not a directory: {afile}"

        # The empty field says where an empty or relative path leads: the window's
        # current directory; "~" is the home directory.
        await retype(main, cwd_field, "")
        placeholder = cwd_field.property("placeholderText")
        assert placeholder.startswith(os.getcwd().replace(os.path.expanduser("~"), "~", 1))
        assert placeholder.endswith("(relative paths start here)")

        # Fixed, OK starts it there and the dialog closes.
        await retype(main, cwd_field, str(tmp_path))
        await click(main, await item(main, "runOkButton"))
        await until(lambda: len(sup.procs("proj", "agent1")) == 1, what="the command started")
        await until(lambda: not dialog_open(main), what="the dialog closed")
        proc = sup.procs("proj", "agent1")[0]
        assert proc.cwd == str(tmp_path)
        await sup.wait(proc.id)
        assert [line.text for line in sup.read(proc.id).lines] == ["here", str(tmp_path)]

    run(scenario())


def test_a_missing_command_shows_its_error_beside_command(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run
) -> None:
    async def scenario() -> None:
        main = await main_on_scope(make_workspace, "proj", "agent1")
        field = await open_on(main)
        await type_text(main, "no-such-command-procwindow --flag")
        await key(main, Qt.Key.Key_Return)
        await until(lambda: shown_errors(main) != {}, what="the command's error")
        assert shown_errors(main) == {
            "runCommandError": "command not found: 'no-such-command-procwindow'"
        }
        await settle(0.2)
        assert dialog_open(main)
        assert sup.procs() == []
        assert field.property("text") == "no-such-command-procwindow --flag"

        # A line that cannot be split, and an empty one, are the command's errors too.
        await retype(main, field, "echo 'unclosed")
        await key(main, Qt.Key.Key_Return)
        await until(lambda: shown_errors(main) != {}, what="the line's error")
        assert shown_errors(main) == {
            "runCommandError": "cannot read the line: no closing quotation"
        }
        await retype(main, field, "")
        await key(main, Qt.Key.Key_Return)
        await until(lambda: shown_errors(main) != {}, what="the empty line's error")
        assert shown_errors(main) == {"runCommandError": "type a command"}
        # So is a name a scope cannot have (a "." is fine), beside its field.
        await retype(main, await item(main, "runAgentField"), "gpt-4.1 mini")
        await retype(main, field, "true")
        await key(main, Qt.Key.Key_Return)
        await until(lambda: shown_errors(main) != {}, what="the agent's error")
        assert shown_errors(main) == {"runAgentError": "may not contain spaces"}
        await retype(main, await item(main, "runAgentField"), "gpt-4.1")

        # Fixed, OK starts it and closes the dialog.
        await retype(main, field, "sh -c 'echo fixed'")
        assert shown_errors(main) == {}
        await click(main, await item(main, "runOkButton"))
        await until(lambda: len(sup.procs("proj", "gpt-4.1")) == 1, what="the command started")
        await until(lambda: not dialog_open(main), what="the dialog closed")
        proc = sup.procs("proj", "gpt-4.1")[0]
        assert proc.argv == ("sh", "-c", "echo fixed")
        # The main window says so, as for any start.
        status = await item(main, "statusText")
        await until(lambda: status.property("text") == f"Started process {proc.id}", what="status")

        # Opened again, the dialog starts clean on the selected scope.
        await open_on(main)
        assert shown_errors(main) == {}
        assert (await item(main, "runAgentField")).property("text") == "agent1"

    run(scenario())


def gate_spawns(controller: ProcController) -> asyncio.Event:
    """Hold every spawn of ``controller`` until the event is set."""
    spawn = controller.spawn
    release = asyncio.Event()

    async def held(argv: Sequence[str], **kwargs: object) -> int:
        await release.wait()
        return await spawn(argv, **kwargs)  # type: ignore[arg-type]

    controller.spawn = held  # type: ignore[method-assign]
    return release


def test_the_disabled_ok_button_looks_disabled(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run
) -> None:
    async def scenario() -> None:
        main = await main_on_scope(make_workspace, "proj", "agent1")
        await open_on(main)
        await type_text(main, "true")
        ok = await item(main, "runOkButton")
        await settle(0.3)
        assert ok.isEnabled()
        enabled_look = mean_colour(main.grabWindow(), ok)
        ok.setProperty("enabled", False)
        await settle(0.3)
        disabled_look = mean_colour(main.grabWindow(), ok)
        # Plainly different: enabled, OK is the accent blue; disabled, a grey.
        change = sum(abs(x - y) for x, y in zip(enabled_look, disabled_look, strict=True))
        assert change > 150, (enabled_look, disabled_look)
        r, g, b = enabled_look
        assert b > r + 60 and b > g + 30, enabled_look
        r, g, b = disabled_look
        assert max(r, g, b) - min(r, g, b) < 20, disabled_look

    run(scenario())


def test_ok_is_disabled_while_the_command_starts(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run
) -> None:
    async def scenario() -> None:
        workspace = make_workspace()
        workspace.session_model.addSession("proj", ["agent1"])
        main = workspace.load()
        await click(main, await item(main, "agentNode-proj-agent1"))
        release = gate_spawns(workspace.controller)
        await open_on(main)
        await type_text(main, "true")
        ok = await item(main, "runOkButton")
        await click(main, ok)
        await until(lambda: not ok.isEnabled(), what="OK disabled while starting")
        assert not (await item(main, "runCancelButton")).isEnabled()
        await key(main, Qt.Key.Key_Return)  # a second OK starts nothing more
        await key(main, Qt.Key.Key_Escape)  # the dialog waits for the answer
        await settle(0.3)
        assert dialog_open(main)
        release.set()
        await until(lambda: not dialog_open(main), what="the dialog closed")
        assert len(sup.procs("proj", "agent1")) == 1
        assert ok.isEnabled()

    run(scenario())


def test_ctrl_n_in_a_proc_window_runs_in_its_scope(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run
) -> None:
    async def scenario() -> None:
        first = await sup.spawn(["sleep", "30"], session="proj", agent="agent1")
        workspace = make_workspace()
        workspace.load()
        window = workspace.openProcWindow("proj", "agent1")
        assert isinstance(window, QQuickWindow)
        model = window_model(window)
        await until(lambda: model.streamingProcId == first.id, what="the window streaming")
        button = await item(window, "runButton")
        assert button.property("toolTipText").endswith("Ctrl+N")

        await open_on(window)
        assert (await item(window, "runSessionField")).property("text") == "proj"
        assert (await item(window, "runAgentField")).property("text") == "agent1"
        await type_text(window, "sh -c 'echo in-the-window'")
        await key(window, Qt.Key.Key_Return)
        await until(lambda: len(sup.procs("proj", "agent1")) == 2, what="the command started")
        await until(lambda: not dialog_open(window), what="the dialog closed")
        new = max(sup.procs("proj", "agent1"), key=lambda p: p.id)
        assert new.argv == ("sh", "-c", "echo in-the-window")
        # The new proc is selected and streams in the window.
        await until(lambda: model.streamingProcId == new.id, what="the new proc streaming")
        assert model.currentProcId == new.id
        assert first.running  # Return in the dialog did nothing else

        # A session's window opens the dialog on the session and the default agent.
        session_window = workspace.openProcWindow("proj", "")
        assert isinstance(session_window, QQuickWindow)
        await click(session_window, await item(session_window, "runButton"))
        await item(session_window, "runCommandField")
        assert (await item(session_window, "runSessionField")).property("text") == "proj"
        assert (await item(session_window, "runAgentField")).property("text") == "main"
        await key(session_window, Qt.Key.Key_Escape)
        await until(lambda: not dialog_open(session_window), what="Esc closed the dialog")
        assert len(proc_windows()) == 2

    run(scenario())


def test_run_on_a_terminal_opens_on_its_screen(sup: Supervisor, run: Run) -> None:
    async def scenario() -> None:
        await sup.spawn(["sleep", "30"], session="tty", agent="a")
        window = open_proc_window(sup, "tty", "a")
        await open_on(window)
        await type_text(window, "sh -c 'test -t 0 && echo on-a-terminal; sleep 30'")
        stdin_box = await item(window, "runStdinBox")
        await click(window, await item(window, "runPtyBox"))
        assert window_model(window).runForm.pty
        assert not stdin_box.isEnabled()  # a terminal takes its input
        await click(window, await item(window, "runOkButton"))
        await until(lambda: not dialog_open(window), what="the dialog closed")
        new = max(sup.procs("tty", "a"), key=lambda p: p.id)
        assert new.options.pty is not None
        # It streams, on its screen.
        await item(window, "terminalView")
        terminal = window_model(window).pane.terminal
        await until(lambda: "on-a-terminal" in sup.read(new.id).text, what="its output")
        await until(
            lambda: terminal.screen() is not None and "on-a-terminal" in terminal.screen().text,
            what="its screen",
        )

    run(scenario())


def test_screenshots_of_the_dialog_with_errors(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run
) -> None:
    async def scenario() -> None:
        workspace = make_workspace()
        workspace.session_model.addSession("proj", ["agent1"])
        main = workspace.load()
        await click(main, await item(main, "agentNode-proj-agent1"))
        for width, height in ((700, 450), (1400, 900)):
            size = f"{width}x{height}"
            main.resize(width, height)
            field = await open_on(main)
            # Three fields at fault at once: each error under its own field.
            await retype(main, field, "echo 'no end --watch src/")
            await retype(main, await item(main, "runSessionField"), "my session")
            await retype(main, await item(main, "runAgentField"), "a*b>c")
            await key(main, Qt.Key.Key_Return)
            await until(lambda: len(shown_errors(main)) == 3, what="three errors")
            await settle(0.4)
            _path, image = save_screenshot(main, f"run-dialog-errors-{size}")
            assert (image.width(), image.height()) == (width, height)
            assert_inside(main, ERRORS[:3])

            # The directory's error, after the others are fixed.
            await retype(main, field, "no-such-command-procwindow --watch src/")
            await retype(main, await item(main, "runSessionField"), "proj")
            await retype(main, await item(main, "runAgentField"), "agent1")
            cwd_field = await item(main, "runCwdField")
            await retype(main, cwd_field, "~/no/such/directory/for/procwindow")
            await key(main, Qt.Key.Key_Return)
            await until(lambda: "runCwdError" in shown_errors(main), what="the directory's error")
            await settle(0.4)
            save_screenshot(main, f"run-dialog-error-{size}")
            assert_inside(main, ["runCwdError"])
            await key(main, Qt.Key.Key_Escape)
            await until(lambda: not dialog_open(main), what="closed")

        # A ProcWindow's dialog, OK disabled while the command starts.
        window = workspace.openProcWindow("proj", "agent1")
        assert isinstance(window, QQuickWindow)
        window.resize(700, 450)
        release = gate_spawns(window_model(window).controller)
        await open_on(window)
        await type_text(window, "sleep 1")
        await key(window, Qt.Key.Key_Return)
        await until(lambda: not find_item(window, "runOkButton").isEnabled(), what="busy")
        await settle(0.4)
        save_screenshot(window, "run-dialog-busy-700x450")
        release.set()
        await until(lambda: not dialog_open(window), what="closed")

    run(scenario())


def assert_inside(window: QQuickWindow, names: Sequence[str]) -> None:
    """Each named error lies inside the window, under its field, clear of the buttons."""
    ok = find_item(window, "runOkButton")
    assert ok is not None
    for name in names:
        error = find_item(window, name)
        assert error is not None, name
        field = find_item(window, name.replace("Error", "Field"))
        assert field is not None, name
        top = error.mapToScene(QPointF(0, 0))
        bottom = error.mapToScene(QPointF(error.width(), error.height()))
        assert bottom.x() <= window.width() and bottom.y() <= window.height(), name
        assert top.y() >= field.mapToScene(QPointF(0, field.height())).y(), name
        assert bottom.y() <= ok.mapToScene(QPointF(0, 0)).y(), name
        # One line, not cut: the text fits the width it has.
        assert error.property("lineCount") == 1, (name, error.property("text"))
        assert error.property("implicitWidth") <= error.width() + 0.5, name
