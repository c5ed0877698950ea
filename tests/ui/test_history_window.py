"""History in the window: the History view of a ProcWindow, and the main window's
search across every run (live and past) whose hits open a run at its line.

Real QML, a real supervisor sharing its state directory with an earlier one
(closed: its runs are history), real children.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtQuick import QQuickItem, QQuickWindow

from procwindow.core import Supervisor
from procwindow.qt import OutputModel
from procwindow.qt.window import proc_windows, window_model

from .conftest import GRACEFUL_TIMEOUT, MakeWorkspace, Run
from .helpers import click, find_item, item, key, py, settle, type_text, until, until_equal

# 3,000 numbered lines, one of them (line 2,000) with a rare word; then it exits 3.
NUMBERED = py(
    """
    import sys
    for i in range(1, 3001):
        print(f"line {i}" + (" zebra-crossing" if i == 2000 else ""))
    sys.exit(3)
    """
)


async def earlier_run(tmp_path: Path) -> int:
    """A run of another supervisor, finished and closed before the window opens:
    it is only in the history (and its logs) now. Returns its id."""
    async with Supervisor(log_dir=tmp_path / "earlier", graceful_timeout=GRACEFUL_TIMEOUT) as old:
        proc = await old.spawn(NUMBERED, session="web", agent="api", tool="old build")
        await old.wait(proc.id)
    return proc.id


def the_window() -> QQuickWindow:
    windows = proc_windows()
    assert len(windows) == 1, windows
    return windows[0]


def output_of(window: QQuickWindow) -> OutputModel:
    model = window.property("outputModel")
    assert isinstance(model, OutputModel)
    return model


def row_texts(model: OutputModel, rows: range) -> list[str]:
    role = next(r for r, n in model.roleNames().items() if bytes(n.data()) == b"text")
    return [str(model.data(model.index(r, 0), role)) for r in rows]


@pytest.mark.promise("The window: History in the window")
def test_history_view_lists_past_runs_greyed_and_streams_them_from_disk(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run, tmp_path: Path
) -> None:
    async def scenario() -> None:
        old_id = await earlier_run(tmp_path)
        live = await sup.spawn(["sleep", "60"], session="web", agent="api")
        gone = await sup.spawn(py("print('dismissed but kept')"), session="web", agent="api")
        await sup.wait(gone.id)
        sup.dismiss(gone.id)
        workspace = make_workspace()
        workspace.load()
        workspace.openProcWindow("web", "api")
        window = the_window()
        await until(lambda: window.isExposed(), what="the ProcWindow on screen")
        vm = window_model(window)
        assert find_item(window, "historyTable") is None  # the live table shows

        await key(window, Qt.Key.Key_H, Qt.KeyboardModifier.ControlModifier)
        assert vm.showHistory
        assert find_item(window, "procTable") is None
        history = vm.historyModel
        await until_equal(lambda: history.count, 3, what="three runs of web/api")
        # Newest first: the live proc, the dismissed one, the earlier supervisor's.
        assert [history.procIdAt(r) for r in range(3)] == [gone.id, live.id, old_id]
        old_row = await item(window, f"historyRow{old_id}")
        texts = [t for t in _texts(old_row)]
        assert "failed (3)" in texts, texts
        assert any("print(f" in t or "python" in t for t in texts), texts

        # A click streams the earlier run: its 3,000 lines read back from disk.
        await click(window, old_row)
        output = output_of(window)
        await until_equal(lambda: output.procId, old_id, what="the earlier run streamed")
        await until_equal(lambda: output.lineCount, 3000, what="its lines")
        assert row_texts(output, range(2)) == ["line 1", "line 2"]
        assert vm.currentProcId == old_id  # the selection stays on a past run

        # Up/Down move among the runs and show each at once; Ctrl+H goes back.
        await key(window, Qt.Key.Key_Up)
        above = history.procIdAt(history.rowOf(old_id) - 1)
        assert vm.currentProcId == above
        await until_equal(lambda: output.procId, above, what="the run above shown")
        await click(window, await item(window, "historyButton"))
        assert not vm.showHistory
        await item(window, "procTable")
        # Back on the live table, the selection and the stream are live procs again.
        await until(lambda: vm.streamingProcId == live.id, what="the live proc streamed")

        # A proc that ends meanwhile shows in the history at once (its exit event).
        await key(window, Qt.Key.Key_H, Qt.KeyboardModifier.ControlModifier)
        fresh = await sup.spawn(py("print('fresh')"), session="web", agent="api")
        await until(lambda: history.rowOf(fresh.id) == 0, what="the new run at the top")

    run(scenario())


def _texts(root: QQuickItem) -> list[str]:
    out, todo = [], [root]
    while todo:
        current = todo.pop()
        text = current.property("text")
        if isinstance(text, str) and text:
            out.append(text)
        todo.extend(current.childItems())
    return out


@pytest.mark.promise("The window: History in the window")
def test_search_every_run_and_open_a_past_hit_at_its_line(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run, tmp_path: Path
) -> None:
    async def scenario() -> None:
        old_id = await earlier_run(tmp_path)
        live = await sup.spawn(
            py("import time; print('zebra in a live run', flush=True); time.sleep(60)"),
            session="web",
            agent="worker",
        )
        await until(lambda: sup.read(live.id).lines, what="the live line")
        main = make_workspace().load()
        await until(lambda: main.isExposed(), what="the main window")
        assert find_item(main, "searchPanel") is None

        await click(main, await item(main, "searchButton"))
        await item(main, "searchPanel")
        await settle(0.1)
        await type_text(main, "ZEBRA")
        await key(main, Qt.Key.Key_Return)
        status = await item(main, "searchStatusText")
        await until_equal(
            lambda: status.property("text"), "2 matches in 2 runs", what="the search's end"
        )
        # Newest run first: the live one, then the earlier supervisor's.
        first, second = await item(main, "searchHit0"), await item(main, "searchHit1")
        assert "zebra in a live run" in _texts(first)
        assert "line 2000 zebra-crossing" in _texts(second)

        # A bad regex says why, in the status line, and finds nothing.
        await click(main, await item(main, "searchRegexChip"))
        field = await item(main, "searchField")
        await click(main, field)
        await key(main, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
        await type_text(main, "zebra(")
        await key(main, Qt.Key.Key_Return)
        await until(lambda: "zebra(" in str(status.property("text")), what="the regex error")
        assert find_item(main, "searchHit0") is None
        await key(main, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
        await type_text(main, "zebra-cross(ing)?")
        await key(main, Qt.Key.Key_Return)
        await until_equal(
            lambda: status.property("text"), "1 match in 1 run", what="the regex search"
        )

        # Clicking the hit opens web/api on the earlier run, at line 2,000, centred.
        await click(main, await item(main, "searchHit0"))
        await until(lambda: len(proc_windows()) == 1, what="a ProcWindow")
        window = the_window()
        await until(lambda: window.isExposed(), what="the ProcWindow on screen")
        vm = window_model(window)
        output = output_of(window)
        assert vm.showHistory
        assert output.procId == old_id and vm.currentProcId == old_id
        row = output.rowOfSeq(2000)
        assert row_texts(output, range(row, row + 1)) == ["line 2000 zebra-crossing"]
        assert (vm.selectionStart, vm.selectionEnd) == (row, row)
        assert not vm.following
        view = await item(window, "outputView")
        line_height = 18
        await settle(0.2)
        middle = view.property("contentY") + view.height() / 2 - view.property("originY")
        assert abs(middle - (row + 0.5) * line_height) < 3 * line_height, (middle, row)
        # Esc closes the search; the overview is back.
        main.requestActivate()
        await until(main.isActive, what="the main window active again")
        await click(main, field)
        await key(main, Qt.Key.Key_Escape)
        await item(main, "overviewTable")

    run(scenario())
