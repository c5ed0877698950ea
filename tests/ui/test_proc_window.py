"""The ProcWindow, used as a person uses it: right-click, menu, buttons, keys.

Every action goes through real QML items: a click is a ``QTest`` mouse click on
the ``QQuickWindow`` at the item's position, a shortcut is a key press. The
children are real processes under a real supervisor.
"""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtQuick import QQuickItem, QQuickWindow

from procwindow.core import ExitReason, Supervisor
from procwindow.qt import ProcModel, ProcRole
from procwindow.qt.window import open_proc_window, proc_windows, window_model
from tests.core.helpers import alive

from .conftest import MakeWorkspace, Run
from .helpers import (
    click,
    find_item,
    item,
    key,
    py,
    settle,
    type_text,
    until,
    until_equal,
    wheel,
)

# A server that ignores SIGTERM: Term has to escalate to SIGKILL.
STUBBORN = py(
    """
    import signal, time
    signal.signal(signal.SIGTERM, lambda *a: print("SIGTERM ignored", flush=True))
    print("serving", flush=True)
    while True:
        time.sleep(0.1)
    """
)
SLEEPER = ["sleep", "60"]
# Prints 40 numbered lines, every fourth an error (on stderr), coloured, then waits.
LOG = py(
    r"""
    import sys, time
    for i in range(40):
        if i % 4 == 3:
            print(f"\x1b[31merror\x1b[0m {i}: disk full", file=sys.stderr, flush=True)
        else:
            print(f"\x1b[32mok\x1b[0m {i}: compiled", flush=True)
    time.sleep(60)
    """
)
# Prints a numbered line every 30 ms for a while: a growing tail.
STREAM = py(
    """
    import time
    for i in range(3000):
        print(f"tick {i}", flush=True)
        time.sleep(0.03)
    """
)


def the_window() -> QQuickWindow:
    windows = proc_windows()
    assert len(windows) == 1, windows
    return windows[0]


def model_of(window: QQuickWindow) -> ProcModel:
    model = window.property("procModel")
    assert isinstance(model, ProcModel)
    return model


def status_of(window: QQuickWindow, proc_id: int) -> str:
    text = find_item(window, f"statusText-{proc_id}")
    return "" if text is None else str(text.property("text"))


def has_output(sup: Supervisor, proc_id: int, needle: str) -> bool:
    return any(needle in line.text for line in sup.read(proc_id).lines)


async def open_from_menu(main: QQuickWindow, node_name: str) -> QQuickWindow:
    """Right-click a tree node, then choose Processes… in its menu."""
    await click(main, await item(main, node_name), Qt.MouseButton.RightButton)
    menu_item = await item(main, "processesMenuItem")
    await settle(0.3)  # the menu's open transition
    await click(main, menu_item)
    await until(lambda: len(proc_windows()) == 1, what="a ProcWindow")
    window = the_window()
    await until(lambda: window.isExposed(), what="the ProcWindow on screen")
    return window


@pytest.mark.promise("The window")
def test_right_click_processes_term_escalates_kill_dismiss(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run
) -> None:
    async def scenario() -> None:
        server = await sup.spawn(STUBBORN, session="web", agent="api")
        sleeper = await sup.spawn(SLEEPER, session="web", agent="worker")
        await sup.spawn(py("print('elsewhere')"), session="other", agent="a")
        main = make_workspace().load()

        window = await open_from_menu(main, "sessionNode-web")
        assert window.title() == "Processes - web"
        model = model_of(window)
        await until(lambda: model.count == 2, what="the two procs of 'web'")
        assert [model.procIdAt(0), model.procIdAt(1)] == [sleeper.id, server.id]
        assert status_of(window, server.id) == "running"

        # Select the server, then Term: it ignores SIGTERM, so it is killed.
        await until(lambda: has_output(sup, server.id, "serving"), what="the handler installed")
        await click(window, await item(window, f"statusText-{server.id}"))
        assert window_model(window).currentProcId == server.id
        term = await item(window, f"termButton-{server.id}")
        assert term.property("toolTipText").endswith("Ctrl+T")
        await click(window, term)
        await until_equal(
            lambda: status_of(window, server.id), "killed (ignored SIGTERM)", what="status"
        )
        row = model.rowOf(server.id)
        assert model.data(model.index(row, 0), ProcRole.EXIT_REASON) == ExitReason.ESCALATED
        assert has_output(sup, server.id, "SIGTERM ignored")
        assert not term.isEnabled()

        # Up selects the sleeper (the row above); Ctrl+K kills it.
        await key(window, Qt.Key.Key_Up)
        assert window_model(window).currentProcId == sleeper.id
        await key(window, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)
        await until_equal(lambda: status_of(window, sleeper.id), "killed (SIGKILL)", what="status")
        assert not alive(sleeper.os_pid)

        # Delete dismisses the selected row; the Dismiss button the other one.
        await key(window, Qt.Key.Key_Delete)
        await until(lambda: model.count == 1, what="the sleeper's row gone")
        await until(lambda: find_item(window, f"statusText-{sleeper.id}") is None, what="row gone")
        dismiss = await item(window, f"dismissButton-{server.id}")
        assert dismiss.property("toolTipText").endswith("Del")
        await click(window, dismiss)
        await until(lambda: model.count == 0, what="every row gone")
        assert await item(window, "procTableEmpty")

    run(scenario())


def test_kill_button_and_term_of_a_polite_process(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run
) -> None:
    async def scenario() -> None:
        polite = await sup.spawn(SLEEPER, session="s", agent="a")
        rude = await sup.spawn(SLEEPER, session="s", agent="a")
        main = make_workspace().load()
        window = await open_from_menu(main, "agentNode-s-a")
        assert window.title() == "Processes - s/a"
        await click(window, await item(window, f"killButton-{rude.id}"))
        await until_equal(lambda: status_of(window, rude.id), "killed (SIGKILL)", what="status")
        await click(window, await item(window, f"termButton-{polite.id}"))
        await until_equal(
            lambda: status_of(window, polite.id), "terminated (SIGTERM)", what="status"
        )
        # Restart starts the same command again, as a new proc in the restarted row.
        await click(window, await item(window, f"restartButton-{polite.id}"))
        model = model_of(window)
        await until(lambda: model.count == 3, what="the restarted proc")
        assert model.procIdAt(0) == rude.id
        assert model.procIdAt(1) > rude.id and model.procIdAt(2) == polite.id

    run(scenario())


def test_pinned_keeps_its_scope_unpinned_follows_the_selection(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run
) -> None:
    async def scenario() -> None:
        one = await sup.spawn(SLEEPER, session="one", agent="a")
        two = await sup.spawn(SLEEPER, session="two", agent="b")
        main = make_workspace().load()

        # Select "one" with a click, open its processes with Ctrl+O.
        await click(main, await item(main, "sessionNode-one"))
        await key(main, Qt.Key.Key_O, Qt.KeyboardModifier.ControlModifier)
        await until(lambda: len(proc_windows()) == 1, what="a ProcWindow")
        window = the_window()
        model = model_of(window)
        assert (model.session, model.agent) == ("one", "")
        assert window_model(window).pinned is False
        await item(window, f"statusText-{one.id}")

        # Unpinned, it follows the main window's selection.
        await click(main, await item(main, "agentNode-two-b"))
        await until(lambda: (model.session, model.agent) == ("two", "b"), what="following")
        assert window.title() == "Processes - two/b"
        await item(window, f"statusText-{two.id}")

        # Pinned (the pin button), it stays where it is.
        pin = await item(window, "pinButton")
        assert pin.property("toolTipText").endswith("Ctrl+P")
        await click(window, pin)
        assert window_model(window).pinned is True
        await click(main, await item(main, "sessionNode-one"))
        await settle(0.2)
        assert (model.session, model.agent) == ("two", "b")

        # Ctrl+P unpins; it catches up with the selection at once.
        await key(window, Qt.Key.Key_P, Qt.KeyboardModifier.ControlModifier)
        assert window_model(window).pinned is False
        await until(lambda: (model.session, model.agent) == ("one", ""), what="caught up")

    run(scenario())


def test_several_proc_windows_at_once(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run
) -> None:
    async def scenario() -> None:
        await sup.spawn(SLEEPER, session="one", agent="a")
        await sup.spawn(SLEEPER, session="two", agent="b")
        workspace = make_workspace()
        main = workspace.load()
        first = await open_from_menu(main, "sessionNode-one")
        await click(first, await item(first, "pinButton"))
        # A second scope opens a second window; the first one stays on its own.
        await click(main, await item(main, "sessionNode-two"), Qt.MouseButton.RightButton)
        await settle(0.3)
        await click(main, await item(main, "processesMenuItem"))
        await until(lambda: len(proc_windows()) == 2, what="two ProcWindows")
        titles = sorted(w.title() for w in proc_windows())
        assert titles == ["Processes - one", "Processes - two"]
        # Asking again for a scope that is open raises that window, no third one.
        assert workspace.openProcWindow("two", "") in proc_windows()
        assert len(proc_windows()) == 2
        # Closing one window releases it (and only it).
        await click(first, await item(first, "closeButton"))
        await until(lambda: len(proc_windows()) == 1, what="one closed")
        assert proc_windows()[0].title() == "Processes - two"

    run(scenario())


async def open_stream(
    sup: Supervisor, make_workspace: MakeWorkspace, argv: list[str]
) -> tuple[QQuickWindow, int]:
    proc = await sup.spawn(argv, session="out", agent="a")
    main = make_workspace().load()
    window = await open_from_menu(main, "agentNode-out-a")
    output = window.property("outputModel")
    await until(lambda: output.procId == proc.id, what="streaming the only proc")
    return window, proc.id


def view_of(window: QQuickWindow) -> QQuickItem:
    view = find_item(window, "outputView")
    assert view is not None
    return view


def test_filter_narrows_the_lines(sup: Supervisor, make_workspace: MakeWorkspace, run: Run) -> None:
    async def scenario() -> None:
        window, _ = await open_stream(sup, make_workspace, LOG)
        view = view_of(window)
        await until(lambda: view.property("count") == 40, what="40 lines")

        # Ctrl+F puts the caret in the filter; typing narrows the lines.
        field = await item(window, "filterField")
        assert field.property("toolTipText").startswith("Filter lines  ·  Ctrl+F")
        await key(window, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
        assert field.hasActiveFocus()
        await type_text(window, "error")
        await until(lambda: view.property("count") == 10, what="10 error lines")
        count = await item(window, "matchCountText")
        assert count.property("text") == "10 matches"

        # A regular expression, with the .* toggle.
        await key(window, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
        await type_text(window, r"^ok [0-9]:")
        await click(window, await item(window, "regexToggle"))
        await until(lambda: view.property("count") == 8, what="ok 0..9 without 3 and 7")

        # Esc clears the filter: every line is back.
        await key(window, Qt.Key.Key_Escape)
        await until(lambda: view.property("count") == 40, what="the filter cleared")
        assert field.property("text") == ""

    run(scenario())


def test_copy_puts_the_plain_text_on_the_clipboard(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run
) -> None:
    async def scenario() -> None:
        window, _ = await open_stream(sup, make_workspace, LOG)
        view = view_of(window)
        await until(lambda: view.property("count") == 40, what="40 lines")
        await wheel(window, view, 100)  # to the top
        await until(lambda: view.property("atYBeginning"), what="at the top")
        clipboard = QGuiApplication.clipboard()
        clipboard.clear()

        # Click the first line, shift-click the third: Ctrl+C copies the three.
        await click(window, await item(window, "line-0"), at=QPointF(30, 5))
        third = await item(window, "line-2")
        await click(window, third, modifiers=Qt.KeyboardModifier.ShiftModifier, at=QPointF(30, 5))
        await key(window, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
        expected = "ok 0: compiled\nok 1: compiled\nok 2: compiled"
        await until(lambda: clipboard.text() == expected, what="three lines copied")

        # With a filter, Ctrl+Shift+C copies every matching line, ANSI stripped.
        await click(window, await item(window, "filterField"))
        await type_text(window, "disk")
        await until(lambda: view.property("count") == 10, what="filtered")
        await key(
            window,
            Qt.Key.Key_C,
            Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier,
        )
        errors = "\n".join(f"error {i}: disk full" for i in range(3, 40, 4))
        await until(lambda: clipboard.text() == errors, what="all matches copied")
        # And the copy button does the same.
        clipboard.clear()
        await click(window, await item(window, "copyButton"))
        await until(lambda: clipboard.text() == errors, what="copied by the button")

    run(scenario())


def _new_lines(follow: object) -> int:
    """The ``N new lines`` of the footer's follow state (0: none said)."""
    words = str(follow.property("text")).split(" · ")  # type: ignore[attr-defined]
    said = [w for w in words if w.endswith(("new lines", "new line"))]
    return int(said[0].split()[0].replace(",", "")) if said else 0


def test_output_follows_the_tail_until_scrolled_up(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run
) -> None:
    async def scenario() -> None:
        window, _ = await open_stream(sup, make_workspace, STREAM)
        view = view_of(window)
        await until(lambda: view.property("count") > 60, what="a screenful and more")
        assert view.property("following") is True
        await until(lambda: view.property("atYEnd"), what="the view at the end")
        assert find_item(window, "jumpToLiveButton") is None

        # Scrolling up stops following: the view holds still, its rows too, while
        # lines arrive; the footer counts them.
        await wheel(window, view, 15)
        await until(lambda: view.property("following") is False, what="paused")
        live = await item(window, "jumpToLiveButton")
        assert live.property("toolTipText").endswith("End")
        await until(lambda: not view.property("moving"), what="the wheel's scroll settled")
        await settle(0.3)
        top = view.property("contentY")
        count = view.property("count")
        follow = await item(window, "followState")
        await until(lambda: _new_lines(follow) > 20, what="new lines counted")
        assert view.property("count") == count
        assert view.property("contentY") == top
        assert view.property("atYEnd") is False

        # Back at the bottom (the wheel, turned a notch at a time), it follows again.
        for _ in range(400):
            if view.property("following"):
                break
            await wheel(window, view, -4)
            await settle(0.02)
        assert view.property("following") is True
        count, top = view.property("count"), view.property("contentY")
        await until(lambda: view.property("count") > count + 20, what="more lines")
        await until(lambda: view.property("contentY") > top, what="the view moving down")
        await until(lambda: view.property("atYEnd"), what="the view at the end")

        # Scrolled up again, End (or the button) jumps to the live tail.
        await wheel(window, view, 15)
        await until(lambda: view.property("following") is False, what="paused again")
        await key(window, Qt.Key.Key_End)
        assert view.property("following") is True
        await until(lambda: view.property("atYEnd"), what="the view at the end")
        await wheel(window, view, 15)
        await click(window, await item(window, "jumpToLiveButton"))
        await until(lambda: view.property("following") is True, what="live again")

    run(scenario())


#: Numbered lines as fast as the pipe takes them (hundreds of thousands a second).
FLOOD = py(
    """
    import sys
    out = sys.stdout
    i = 0
    while True:
        out.write("".join(f"flood {n}\\n" for n in range(i, i + 5000)))
        i += 5000
    """
)


def _shown_rows(window: QQuickWindow, view: QQuickItem) -> list[str]:
    """The texts of the rows the view shows now."""
    output = window.property("outputModel")
    line = float(view.property("contentHeight")) / max(1, int(view.property("count")))
    first = int((float(view.property("contentY")) - float(view.property("originY"))) / line)
    rows = range(first, first + int(float(view.property("height")) / line))
    return [output.data(output.index(r, 0), Qt.ItemDataRole.DisplayRole) for r in rows]


def test_a_flood_can_be_scrolled_and_read_while_it_goes_on(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run
) -> None:
    async def scenario() -> None:
        window, proc_id = await open_stream(sup, make_workspace, FLOOD)
        view = view_of(window)
        await until(lambda: view.property("count") > 5000, what="a flood")
        assert view.property("following") is True
        # The wheel works in a flood: it pauses, and the same lines stay on screen
        # while more than 100,000 arrive.
        await wheel(window, view, 10)
        await until(lambda: view.property("following") is False, what="paused")
        await until(lambda: not view.property("moving"), what="the wheel's scroll settled")
        await settle(0.2)
        shown = _shown_rows(window, view)
        assert shown and all(text.startswith("flood ") for text in shown)
        at = sup.get(proc_id).last_seq
        await until(lambda: sup.get(proc_id).last_seq > at + 100_000, what="100k more lines")
        follow = await item(window, "followState")
        await until(lambda: _new_lines(follow) > 100_000, what="the new lines counted")
        assert _shown_rows(window, view) == shown
        # A click selects a line (the keys go to the lines), and PgUp moves back a
        # page over the same rows; still held.
        await click(window, view)
        await settle(0.1)
        assert _shown_rows(window, view) == shown
        await key(window, Qt.Key.Key_PageUp)
        await until(lambda: not view.property("moving"), what="the page settled")
        await settle(0.2)
        earlier = _shown_rows(window, view)
        assert earlier != shown
        assert int(earlier[0].split()[1]) < int(shown[0].split()[1])
        await settle(0.3)
        assert _shown_rows(window, view) == earlier
        # End: following again, on the newest lines.
        await key(window, Qt.Key.Key_End)
        await until(lambda: view.property("following") is True, what="following")
        newest = sup.get(proc_id).last_seq
        await until(
            lambda: int(_shown_rows(window, view)[-1].split()[1]) > newest - 100_000,
            what="the newest lines shown",
        )
        # The footer counts up to the newest line, frame by frame (it lagged).
        counts = await item(window, "lineCountText")
        output = window.property("outputModel")
        for _ in range(5):
            await settle(0.1)
            total = int(str(counts.property("text")).split(" of ")[1].split()[0].replace(",", ""))
            newest = output.data(
                output.index(output.rowCount() - 1, 0), Qt.ItemDataRole.DisplayRole
            )
            assert total == int(newest.split()[1]) + 1
        await sup.kill(proc_id)

    run(scenario())


def test_run_dialog_starts_a_command_in_the_selected_scope(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run
) -> None:
    async def scenario() -> None:
        workspace = make_workspace()
        workspace.session_model.addSession("proj", ["agent1"])
        main = workspace.load()
        await click(main, await item(main, "agentNode-proj-agent1"))
        await key(main, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
        field = await item(main, "runCommandField")
        await settle(0.3)
        assert field.hasActiveFocus()
        await type_text(main, "sh -c 'echo from-the-dialog'")
        await key(main, Qt.Key.Key_Return)
        await until(lambda: len(sup.procs("proj", "agent1")) == 1, what="the command started")
        proc = sup.procs("proj", "agent1")[0]
        assert proc.argv == ("sh", "-c", "echo from-the-dialog")
        await sup.wait(proc.id)
        assert [line.text for line in sup.read(proc.id).lines] == ["from-the-dialog"]

    run(scenario())


def test_the_keyboard_opens_the_menu_and_every_shortcut_is_in_a_tooltip(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run
) -> None:
    async def scenario() -> None:
        proc = await sup.spawn(SLEEPER, session="kb", agent="a")
        main = make_workspace().load()
        assert (await item(main, "runButton")).property("toolTipText").endswith("Ctrl+N")
        assert (await item(main, "processesButton")).property("toolTipText").endswith("Ctrl+O")

        # Select with a click, open the menu with Shift+F10, choose with the keys.
        await click(main, await item(main, "agentNode-kb-a"))
        await key(main, Qt.Key.Key_F10, Qt.KeyboardModifier.ShiftModifier)
        await item(main, "processesMenuItem")
        await settle(0.3)
        await key(main, Qt.Key.Key_Down)
        await key(main, Qt.Key.Key_Return)
        await until(lambda: len(proc_windows()) == 1, what="a ProcWindow from the keyboard")
        window = the_window()
        assert window.title() == "Processes - kb/a"

        tips = {
            f"streamButton-{proc.id}": "Enter",
            f"termButton-{proc.id}": "Ctrl+T",
            f"killButton-{proc.id}": "Ctrl+K",
            f"dismissButton-{proc.id}": "Del",
            "pinButton": "Ctrl+P",
            "copyButton": "Ctrl+Shift+C",
        }
        for name, shortcut in tips.items():
            tip = (await item(window, name)).property("toolTipText")
            assert tip.endswith(shortcut), (name, tip)
        assert "Ctrl+F" in (await item(window, "filterField")).property("toolTipText")

    run(scenario())


def test_output_keeps_following_once_the_pane_is_full(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run
) -> None:
    async def scenario() -> None:
        window, proc_id = await open_stream(sup, make_workspace, STREAM)
        output = window.property("outputModel")
        output.maxLines = 80  # full after a few seconds: appends now also remove
        view = view_of(window)
        await until(lambda: output.lineCount == 80, what="the pane full")
        for _ in range(3):
            newest = sup.get(proc_id).last_seq
            await until(lambda n=newest: sup.get(proc_id).last_seq > n + 10, what="more lines")
            await settle(0.2)
            # the row at the bottom edge of the view is the newest line
            bottom = view.indexAt(10.0, view.property("contentY") + view.property("height") - 6)
            assert bottom == view.property("count") - 1, (bottom, view.property("count"))
            assert view.property("following") is True

    run(scenario())


def test_after_delete_the_row_that_took_its_place_is_selected(sup: Supervisor, run: Run) -> None:
    """Three exited rows; Delete the middle one: the row below it (now in its place)
    is selected and streams, not the newest row at the top."""

    async def scenario() -> None:
        done = [await sup.spawn(["true"], session="del", agent="a") for _ in range(4)]
        for p in done:
            await sup.wait(p.id)
        window = open_proc_window(sup, "del", "a")
        model = model_of(window)
        await until(lambda: model.count == 4, what="four rows")
        newest_first = [model.procIdAt(r) for r in range(4)]
        assert newest_first == [p.id for p in reversed(done)]
        await click(window, await item(window, f"statusText-{newest_first[1]}"))
        await until_equal(
            lambda: window_model(window).currentProcId, newest_first[1], what="the second row"
        )
        await key(window, Qt.Key.Key_Delete)
        await until(lambda: model.count == 3, what="the row gone")
        await until_equal(
            lambda: window_model(window).currentProcId, newest_first[2], what="the next row"
        )
        await until_equal(
            lambda: window_model(window).streamingProcId, newest_first[2], what="it streams"
        )
        # The last row: the one above it takes the selection.
        await settle(0.3)  # the rows laid out again, one fewer
        await click(window, await item(window, f"statusText-{newest_first[3]}"))
        await until_equal(
            lambda: window_model(window).currentProcId, newest_first[3], what="the last row"
        )
        await key(window, Qt.Key.Key_Delete)
        await until(lambda: model.count == 2, what="the last row gone")
        await until_equal(
            lambda: window_model(window).currentProcId, newest_first[2], what="the row above"
        )

    run(scenario())
