"""The output pane as a terminal, used as a person uses it: a REPL driven by keys
typed into the terminal view, Ctrl+C and the arrows reaching the child as a
terminal sends them, the terminal's size following the pane's, and the toggle
back to the lines. Real windows, real children on real terminals."""

from __future__ import annotations

import sys

import pytest
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtQuick import QQuickItem, QQuickWindow

from procwindow.core import Supervisor
from procwindow.qt import TerminalModel
from procwindow.qt.window import open_proc_window, window_model

from ..tiers import first_fast
from .conftest import Run
from .helpers import (
    click,
    find_item,
    item,
    key,
    move_mouse_away,
    py,
    save_screenshot,
    settle,
    type_text,
    until,
)
from .test_screenshots import assert_not_blank

CTRL = Qt.KeyboardModifier.ControlModifier
SHIFT = Qt.KeyboardModifier.ShiftModifier

#: Reads its terminal raw (no line discipline: every byte as typed) and shows
#: each read as Python's repr, one per line, until it reads a "q".
RAW_KEYS = py(
    r"""
    import os, sys, tty
    tty.setraw(0)
    sys.stdout.write("raw\r\n"); sys.stdout.flush()
    while True:
        data = os.read(0, 64)
        sys.stdout.write(repr(data) + "\r\n"); sys.stdout.flush()
        if data == b"q":
            break
    """
)

#: Shows its terminal's size at the start and at each SIGWINCH.
SIZE_REPORT = py(
    """
    import os, signal, time
    def report(*_):
        size = os.get_terminal_size(0)
        print(f"size {size.lines}x{size.columns}", flush=True)
    signal.signal(signal.SIGWINCH, report)
    report()
    while True:
        time.sleep(1)
    """
)


def terminal_of(window: QQuickWindow) -> TerminalModel:
    terminal = window_model(window).pane.terminal
    assert isinstance(terminal, TerminalModel)
    return terminal


def screen_text(window: QQuickWindow) -> str:
    screen = terminal_of(window).screen()
    return screen.text if screen is not None else ""


async def sized(window: QQuickWindow, view: QQuickItem) -> None:
    """Wait until the terminal has the size the view fits. (Before it, rows may
    still go: the screen model drops rows from the top when its height shrinks.)"""

    def fitted() -> bool:
        terminal = terminal_of(window)
        fit = (view.property("fitRows"), view.property("fitCols"))
        return fit[0] > 0 and (terminal.rows, terminal.cols) == fit

    await until(fitted, what="the terminal at the view's size")


def painted(view: QQuickItem, text: str) -> bool:
    """Whether a paint of the terminal view drew a screen with ``text`` on it."""
    trace = view.trace  # type: ignore[attr-defined]
    return any(screen is not None and text in screen.text for _, screen in trace)


def test_a_repl_is_driven_by_keys_typed_into_the_terminal_view(sup: Supervisor, run: Run) -> None:
    async def scenario() -> None:
        p = await sup.spawn([sys.executable, "-i", "-q"], session="repl", agent="a", pty=True)
        window = open_proc_window(sup, "repl", "a")
        view = await item(window, "terminalView")
        view.trace = []  # type: ignore[attr-defined]
        assert find_item(window, "outputView") is None  # the lines are one click away
        await sized(window, view)
        await until(lambda: screen_text(window).endswith(">>>"), what="the prompt")
        await click(window, view)
        assert view.hasActiveFocus()
        await type_text(window, "print(6*7)")
        await key(window, Qt.Key.Key_Return)
        await until(lambda: "\n42\n>>>" in screen_text(window), what="the answer on the screen")
        lines = (await sup.screen(p.id)).lines
        assert lines[lines.index(">>> print(6*7)") :][:3] == (">>> print(6*7)", "42", ">>>")
        await until(lambda: painted(view, "42"), what="the answer drawn")
        # Enter typed in the terminal is the REPL's, not the window's "stream" key;
        # the lines model has it too, as lines.
        output = window.property("outputModel")
        await until(lambda: output.lineCount >= 2, what="the lines")
        footer = await item(window, "lineCountText")
        assert footer.property("text").startswith("terminal ")
        assert find_item(window, "inputBar") is None  # typed here, not in a stdin line

    run(scenario())


def test_ctrl_c_esc_and_the_arrows_reach_the_child_as_a_terminal_sends_them(
    sup: Supervisor, run: Run
) -> None:
    async def scenario() -> None:
        p = await sup.spawn(RAW_KEYS, session="keys", agent="a", pty=True)
        window = open_proc_window(sup, "keys", "a")
        view = await item(window, "terminalView")
        await sized(window, view)
        await until(lambda: "raw" in sup.read(p.id).text, what="raw mode")
        await click(window, view)
        sent = [
            (Qt.Key.Key_C, CTRL, r"b'\x03'"),
            (Qt.Key.Key_Escape, Qt.KeyboardModifier.NoModifier, r"b'\x1b'"),
            (Qt.Key.Key_Up, Qt.KeyboardModifier.NoModifier, r"b'\x1b[A'"),
            (Qt.Key.Key_Down, Qt.KeyboardModifier.NoModifier, r"b'\x1b[B'"),
            (Qt.Key.Key_Right, Qt.KeyboardModifier.NoModifier, r"b'\x1b[C'"),
            (Qt.Key.Key_Left, Qt.KeyboardModifier.NoModifier, r"b'\x1b[D'"),
            (Qt.Key.Key_Home, Qt.KeyboardModifier.NoModifier, r"b'\x1b[H'"),
            (Qt.Key.Key_End, Qt.KeyboardModifier.NoModifier, r"b'\x1b[F'"),
            (Qt.Key.Key_PageUp, Qt.KeyboardModifier.NoModifier, r"b'\x1b[5~'"),
            (Qt.Key.Key_Delete, Qt.KeyboardModifier.NoModifier, r"b'\x1b[3~'"),
            (Qt.Key.Key_F5, Qt.KeyboardModifier.NoModifier, r"b'\x1b[15~'"),
            (Qt.Key.Key_Backspace, Qt.KeyboardModifier.NoModifier, r"b'\x7f'"),
            (Qt.Key.Key_Return, Qt.KeyboardModifier.NoModifier, r"b'\r'"),
            (Qt.Key.Key_D, CTRL, r"b'\x04'"),
        ]
        for n, (code, mods, shown) in enumerate(sent):
            await key(window, code, mods)
            # One read per key, in order (each waited for: a read may take two keys).
            await until(
                lambda n=n, shown=shown: screen_text(window).splitlines()[n + 1 : n + 2] == [shown],
                what=f"{shown} on the screen",
            )
        # None of them was the window's: no copy (Ctrl+C), no stream (Enter), no
        # dismiss (Delete); the terminal kept the keyboard through Esc.
        model = window_model(window)
        assert not model.bannerVisible
        assert view.hasActiveFocus()

        # Ctrl+Shift+C copies the screen; Ctrl+Shift+V types the clipboard.
        await key(window, Qt.Key.Key_C, CTRL | SHIFT)
        clipboard = QGuiApplication.clipboard()
        assert clipboard.text() == screen_text(window)
        assert model.bannerText == "Screen copied"
        clipboard.setText("pasted")
        await key(window, Qt.Key.Key_V, CTRL | SHIFT)
        await until(lambda: "b'pasted'" in screen_text(window), what="the paste")
        await type_text(window, "q")
        await until(lambda: not terminal_of(window).open, what="the end")

    run(scenario())


#: A curses program in keypad mode (the terminal in application cursor keys):
#: shows the name of each key it reads, until "q".
KEYPAD = py(
    """
    import curses
    def main(win):
        win.addstr(0, 0, "keypad")
        win.refresh()
        row = 1
        while True:
            key = win.getch()
            win.addstr(row, 0, curses.keyname(key).decode())
            win.refresh()
            row += 1
            if key == ord("q"):
                return
    curses.wrapper(main)
    """
)


def test_a_curses_program_reads_the_cursor_keys_typed_in_the_view(
    sup: Supervisor, run: Run
) -> None:
    async def scenario() -> None:
        await sup.spawn(KEYPAD, session="curses", agent="a", pty=True)
        window = open_proc_window(sup, "curses", "a")
        view = await item(window, "terminalView")
        await sized(window, view)
        await until(lambda: "keypad" in screen_text(window), what="the program")
        await click(window, view)
        keys = [
            (Qt.Key.Key_Up, "KEY_UP"),
            (Qt.Key.Key_Down, "KEY_DOWN"),
            (Qt.Key.Key_Right, "KEY_RIGHT"),
            (Qt.Key.Key_Left, "KEY_LEFT"),
            (Qt.Key.Key_Home, "KEY_HOME"),
            (Qt.Key.Key_End, "KEY_END"),
            (Qt.Key.Key_F1, "KEY_F(1)"),
            (Qt.Key.Key_F5, "KEY_F(5)"),
        ]

        def read() -> list[str]:  # the terminal took the pane's size: a KEY_RESIZE too
            return [k for k in screen_text(window).splitlines()[1:] if k != "KEY_RESIZE"]

        for n, (code, name) in enumerate(keys):
            await key(window, code)
            await until(lambda n=n: read()[n : n + 1] == [keys[n][1]], what=f"{name} read")
        await type_text(window, "q")
        await until(lambda: not terminal_of(window).open, what="the end")

    run(scenario())


def test_the_terminal_s_size_follows_the_pane_s(sup: Supervisor, run: Run) -> None:
    async def scenario() -> None:
        p = await sup.spawn(SIZE_REPORT, session="size", agent="a", pty=True)
        window = open_proc_window(sup, "size", "a")
        view = await item(window, "terminalView")

        def fits() -> str:
            return f"size {view.property('fitRows')}x{view.property('fitCols')}"

        await until(lambda: fits() in screen_text(window), what="the pane's size")
        first = fits()
        window.resize(window.width() + 160, window.height() + 120)
        await until(lambda: fits() != first, what="a new fit")
        await until(lambda: fits() in screen_text(window), what="SIGWINCH with the new size")
        screen = await sup.screen(p.id)
        assert (screen.rows, screen.cols) == (view.property("fitRows"), view.property("fitCols"))
        # Cells of the pane's font: the columns fill its width.
        assert screen.cols * view.property("cellWidth") <= view.width()
        assert (screen.cols + 1) * view.property("cellWidth") > view.width() - 8

    run(scenario())


def test_the_toggle_switches_views_and_pipes_have_none(sup: Supervisor, run: Run) -> None:
    async def scenario() -> None:
        piped = await sup.spawn(py("print('piped')"), session="both", agent="a")
        tty = await sup.spawn(SIZE_REPORT, session="both", agent="a", pty=True)
        window = open_proc_window(sup, "both", "a")
        await click(window, await item(window, f"streamButton-{tty.id}"))
        toggle = await item(window, "terminalToggle")
        await item(window, "terminalView")
        assert toggle.property("checked")
        assert find_item(window, "filterField") is None  # a filter is for lines
        await move_mouse_away(window)

        where = toggle.mapToScene(QPointF(0, 0)).x()
        await click(window, toggle)  # to the lines
        view = await item(window, "outputView")
        assert find_item(window, "terminalView") is None
        assert not toggle.property("checked")
        await until(lambda: view.property("count") >= 1, what="the lines")
        assert (await item(window, "filterField")).isVisible()
        # The filter and the times toggle are back beside it: it moved left.
        await until(lambda: toggle.mapToScene(QPointF(0, 0)).x() < where, what="the header")
        await click(window, toggle)  # and back
        await item(window, "terminalView")
        assert find_item(window, "outputView") is None

        await click(window, await item(window, f"streamButton-{piped.id}"))
        await item(window, "outputView")
        await settle(0.1)
        assert find_item(window, "terminalToggle") is None
        assert find_item(window, "terminalView") is None

    run(scenario())


#: A full-screen program: a job monitor drawn with curses on the alternate screen
#: (colours, bold, underline, reverse, line drawing), redrawn at each resize.
MONITOR = py(
    """
    import curses

    JOBS = [
        ("compile", "done", 1.0, "00:42"),
        ("unit tests", "running", 0.64, "01:13"),
        ("lint", "failed", 0.3, "00:07"),
        ("docs", "waiting", 0.0, "--:--"),
        ("package", "waiting", 0.0, "--:--"),
        ("e2e tests", "running", 0.18, "00:31"),
    ]
    STATUS = {"done": 2, "running": 4, "failed": 3, "waiting": 6}
    LOG = [
        ("", "compile", "Compiling procwindow v0.9.0", 0),
        ("", "unit tests", "tests/core/test_pty.py::test_resize PASSED", 2),
        ("", "lint", "error: line too long (104 > 100) in terminal.py", 3),
        ("", "unit tests", "tests/ui/test_terminal_view.py::test_keys PASSED", 2),
        ("", "e2e tests", "warning: retrying flaky step 'open window' (1 of 3)", 4),
        ("", "compile", "Finished release target in 42.1s", 2),
    ]

    def draw(win):
        win.erase()
        rows, cols = win.getmaxyx()
        win.addnstr(0, 0, " buildmon  6 jobs  2 running ".ljust(cols), cols - 1, curses.color_pair(1) | curses.A_BOLD)
        if rows > 3:
            win.attron(curses.color_pair(5))
            win.box()
            win.attroff(curses.color_pair(5))
            win.addnstr(0, 0, " buildmon  6 jobs  2 running ".ljust(cols), cols - 1, curses.color_pair(1) | curses.A_BOLD)
        bar = max(6, cols - 48)
        if rows > 2:
            win.addnstr(1, 2, f"{'JOB':<14}{'STATUS':<10}{'PROGRESS':<{bar + 7}}TIME", cols - 4, curses.A_UNDERLINE | curses.A_BOLD)
        for i, (name, status, done, spent) in enumerate(JOBS):
            y = 2 + i
            if y >= rows - 2:
                break
            selected = i == 1
            attr = curses.A_REVERSE if selected else 0
            win.addnstr(y, 2, f"{name:<14}", cols - 4, attr | curses.A_BOLD)
            win.addnstr(y, 16, f"{status:<10}", max(0, cols - 18), curses.color_pair(STATUS[status]) | attr)
            filled = int(bar * done)
            if cols > 28 + bar:
                win.addstr(y, 26, " " * filled, curses.color_pair(7))
                win.addstr(y, 26 + filled, " " * (bar - filled), curses.color_pair(8))
                win.addstr(y, 27 + bar, f"{int(done * 100):>3}%  {spent}")
        top = 3 + len(JOBS)
        if rows - 3 > top:
            win.addnstr(top, 2, "LOG", cols - 4, curses.A_BOLD | curses.A_UNDERLINE)
        for n, y in enumerate(range(top + 1, rows - 3)):
            when, job, text, pair = LOG[n % len(LOG)]
            win.addnstr(y, 2, f"12:{n // 6:02}:{n * 7 % 60:02} ", cols - 4, curses.color_pair(6))
            win.addnstr(y, 12, f"{job:<11}", max(0, cols - 14), curses.A_BOLD)
            win.addnstr(y, 23, text, max(0, cols - 25), curses.color_pair(pair))
        if rows > 4:
            win.addnstr(rows - 2, 2, "q quit  r restart  / filter: ", cols - 4, curses.color_pair(6))
        win.refresh()

    def main(win):
        curses.use_default_colors()
        curses.init_pair(1, curses.COLOR_BLACK, curses.COLOR_CYAN)
        curses.init_pair(2, curses.COLOR_GREEN, -1)
        curses.init_pair(3, curses.COLOR_RED, -1)
        curses.init_pair(4, curses.COLOR_YELLOW, -1)
        curses.init_pair(5, curses.COLOR_BLUE, -1)
        curses.init_pair(6, curses.COLOR_MAGENTA, -1)
        curses.init_pair(7, curses.COLOR_BLACK, curses.COLOR_GREEN)
        curses.init_pair(8, curses.COLOR_BLACK, curses.COLOR_WHITE)
        draw(win)
        while True:
            key = win.getch()
            if key == curses.KEY_RESIZE:
                draw(win)
            elif key == ord("q"):
                return

    curses.wrapper(main)
    """
)

SCREENSHOT_SIZES = {"700x450": (700, 450), "1400x900": (1400, 900)}


@pytest.mark.parametrize("size", first_fast(SCREENSHOT_SIZES))
def test_screenshot_of_a_full_screen_program(sup: Supervisor, run: Run, size: str) -> None:
    width, height = SCREENSHOT_SIZES[size]

    async def scenario() -> None:
        # Box lines as UTF-8: the screen model ignores the DEC line-drawing set (ESC ( 0)
        # in UTF-8 mode, so ncurses' default box would show as "lqqqk".
        env = {"NCURSES_NO_UTF8_ACS": "1"}
        await sup.spawn(MONITOR, session="ci", agent="monitor", pty=True, env=env)
        window = open_proc_window(sup, "ci", "monitor")
        window.resize(max(width, window.minimumWidth()), max(height, window.minimumHeight()))
        view = await item(window, "terminalView")

        def fitted() -> bool:
            screen = terminal_of(window).screen()
            size = (view.property("fitRows"), view.property("fitCols"))
            return screen is not None and screen.alternate and (screen.rows, screen.cols) == size

        await until(fitted, what="the program at the pane's size")
        await until(lambda: "q quit" in screen_text(window), what="the program redrawn")
        await click(window, view)  # the keyboard: the cursor shows as a block
        await move_mouse_away(window)
        await settle(0.4)
        path, image = save_screenshot(window, f"procwindow-terminal-{size}")
        assert_not_blank(path.name, image, colours=20)
        footer = await item(window, "lineCountText")
        assert "full screen" in footer.property("text")

    run(scenario(), timeout=60)
