"""The output pane's unfinished line and stdin line, used as a person uses them:
a prompt shows before its line ends, what is typed under the output goes to the
process, Ctrl+D ends its input; the window's keys stay the window's. Real
windows, real children spawned with ``stdin=True``."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtQuick import QQuickItem

from procwindow.core import Supervisor
from procwindow.qt.window import open_proc_window, window_model

from .conftest import Run
from .helpers import click, find_item, item, key, move_mouse_away, py, settle, type_text, until

GREETER = py(
    """
    import sys
    sys.stdout.write("Name? "); sys.stdout.flush()
    print("hello", sys.stdin.readline().strip())
    """
)


def texts(view: QQuickItem) -> list[str]:
    out = view.property("model")
    return [out.data(out.index(r)) for r in range(out.rowCount())]


@pytest.mark.promise("The window: The output pane")
def test_a_prompt_shows_unfinished_and_the_typed_line_answers_it(sup: Supervisor, run: Run) -> None:
    async def scenario() -> None:
        proc = await sup.spawn(GREETER, session="ask", agent="a", stdin=True)
        window = open_proc_window(sup, "ask", "a")
        view = await item(window, "outputView")
        await move_mouse_away(window)
        # The prompt, after the (no) rows, marked unfinished.
        partial = await item(window, "partialText")
        await until(lambda: partial.property("text") == "Name?&nbsp;", what="the prompt")
        assert view.property("count") == 0
        assert (await item(window, "partialLine")).height() == 18
        # The prompt is output: no "No output yet" beside it, and the count says so.
        await settle(0.1)
        empty = find_item(window, "outputEmpty")
        assert empty is None or not empty.isVisible()
        count = await item(window, "lineCountText")
        assert count.property("text") == "0 lines + 1 unfinished"
        assert find_item(window, "partialCaret") is not None
        field = await item(window, "inputField")
        assert (await item(window, "inputBar")).isVisible()

        await click(window, field)
        assert field.hasActiveFocus()
        await type_text(window, "Grace Hopper")
        await key(window, Qt.Key.Key_Return)
        await until(lambda: texts(view) == ["Name? hello Grace Hopper"], what="the answer")
        await until(lambda: count.property("text") == "1 line", what="the count of one line")
        assert field.property("text") == ""
        assert (await sup.wait(proc.id)).code == 0
        # The line is complete: no unfinished line; the proc ended: no stdin line.
        await until(lambda: find_item(window, "inputBar") is None, what="the stdin line gone")
        assert find_item(window, "partialLine") is None
        # The keys are the window's again (Ctrl+F to the filter).
        await key(window, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
        assert (await item(window, "filterField")).hasActiveFocus()

    run(scenario())


def test_ctrl_d_ends_the_input_of_cat(sup: Supervisor, run: Run) -> None:
    async def scenario() -> None:
        cat = await sup.spawn(["cat"], session="cat", agent="a", stdin=True)
        window = open_proc_window(sup, "cat", "a")
        view = await item(window, "outputView")
        field = await item(window, "inputField")
        await settle(0.2)
        close = await item(window, "closeStdinButton")
        assert close.property("toolTipText").endswith("Ctrl+D")

        # Not focused, the stdin line takes no keys: Enter streams, Delete dismisses…
        table = await item(window, "procTable")
        await click(window, view)
        await type_text(window, "abc")
        await key(window, Qt.Key.Key_Return)
        assert field.property("text") == ""
        await settle(0.3)
        assert texts(view) == []  # nothing went to cat

        await click(window, field)
        await type_text(window, "first")
        await key(window, Qt.Key.Key_Enter)
        await until(lambda: texts(view) == ["first"], what="cat's echo")
        await type_text(window, "unsent")
        await key(window, Qt.Key.Key_D, Qt.KeyboardModifier.ControlModifier)
        assert (await sup.wait(cat.id)).code == 0
        await until(lambda: find_item(window, "inputBar") is None, what="the stdin line gone")
        assert texts(view) == ["first"]
        assert not field.hasActiveFocus()
        # The keys go back to the lines: End and Ctrl+F still act.
        await key(window, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
        assert (await item(window, "filterField")).hasActiveFocus()
        assert table.isVisible()
        assert not window_model(window).bannerVisible

    run(scenario())


def test_procs_without_stdin_show_no_stdin_line(sup: Supervisor, run: Run) -> None:
    async def scenario() -> None:
        await sup.spawn(["sleep", "30"], session="mute", agent="a")
        window = open_proc_window(sup, "mute", "a")
        await item(window, "outputView")
        await until(lambda: window_model(window).streamingProcId > 0, what="streaming")
        await settle(0.2)
        assert find_item(window, "inputBar") is None
        assert find_item(window, "partialLine") is None

    run(scenario())


def test_the_run_dialog_starts_a_command_with_its_stdin_open(sup: Supervisor, run: Run) -> None:
    async def scenario() -> None:
        await sup.spawn(["true"], session="run", agent="a")
        window = open_proc_window(sup, "run", "a")
        view = await item(window, "outputView")
        await key(window, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
        command = await item(window, "runCommandField")
        await until(command.hasActiveFocus, what="the command field focused")
        await type_text(window, "cat")
        box = await item(window, "runStdinBox")
        assert not box.property("checked")
        await settle(0.1)
        await click(window, box)
        assert box.property("checked") and window_model(window).runForm.stdin
        await click(window, command)
        await key(window, Qt.Key.Key_Return)
        await until(lambda: find_item(window, "runCommandField") is None, what="the dialog closed")
        model = window_model(window)
        await until(lambda: sup.get(model.streamingProcId).argv == ("cat",), what="cat streams")
        cat = model.streamingProcId
        assert sup.get(cat).options.stdin
        field = await item(window, "inputField")
        await settle(0.1)
        await click(window, field)
        await type_text(window, "meow")
        await key(window, Qt.Key.Key_Return)
        await until(lambda: texts(view) == ["meow"], what="cat's echo")
        await click(window, await item(window, "closeStdinButton"))
        assert (await sup.wait(cat)).code == 0

    run(scenario())


def test_up_and_down_in_the_stdin_line_leave_the_table_alone(sup: Supervisor, run: Run) -> None:
    async def scenario() -> None:
        await sup.spawn(["sleep", "30"], session="keys", agent="a")
        cat = await sup.spawn(["cat"], session="keys", agent="a", stdin=True)
        window = open_proc_window(sup, "keys", "a")
        vm = window_model(window)
        await until(lambda: vm.streamingProcId == cat.id, what="cat streamed (the newest)")
        field = await item(window, "inputField")
        await click(window, field)
        assert field.hasActiveFocus()
        for k in (Qt.Key.Key_Down, Qt.Key.Key_Up, Qt.Key.Key_Down):
            await key(window, k)
        await settle(0.1)
        assert vm.currentProcId == cat.id and vm.streamingProcId == cat.id
        # Out of the field, Down moves the row again.
        (await item(window, "procTable")).forceActiveFocus()
        assert not field.hasActiveFocus()
        await key(window, Qt.Key.Key_Down)
        await until(lambda: vm.currentProcId != cat.id, what="the row below")

    run(scenario())
