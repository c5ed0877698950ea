"""The output pane as a terminal, used as a person uses it: a REPL driven by keys
typed into the terminal view, Ctrl+C and the arrows reaching the child as a
terminal sends them, the terminal's size following the pane's, and the toggle
back to the lines. Real windows, real children on real terminals."""

from __future__ import annotations

import sys

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtQuick import QQuickItem, QQuickWindow

from procwindow.core import Supervisor
from procwindow.qt import TerminalModel
from procwindow.qt.window import open_proc_window, window_model

from .conftest import Run
from .helpers import click, find_item, item, key, move_mouse_away, py, settle, type_text, until

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
        await until(lambda: screen_text(window) == ">>>", what="the prompt")
        await click(window, view)
        assert view.hasActiveFocus()
        await type_text(window, "print(6*7)")
        await key(window, Qt.Key.Key_Return)
        await until(lambda: "\n42\n>>>" in screen_text(window), what="the answer on the screen")
        assert (await sup.screen(p.id)).lines[:3] == (">>> print(6*7)", "42", ">>>")
        await until(lambda: painted(view, "42"), what="the answer drawn")
        # Enter typed in the terminal is the REPL's, not the window's "stream" key;
        # the lines model has it too, as lines.
        lines = window.property("outputModel")
        await until(lambda: lines.lineCount >= 2, what="the lines")
        footer = await item(window, "lineCountText")
        assert footer.property("text").startswith("terminal ")
        assert find_item(window, "inputBar") is None  # typed here, not in a stdin line

    run(scenario())


def test_ctrl_c_esc_and_the_arrows_reach_the_child_as_a_terminal_sends_them(
    sup: Supervisor, run: Run
) -> None:
    async def scenario() -> None:
        await sup.spawn(RAW_KEYS, session="keys", agent="a", pty=True)
        window = open_proc_window(sup, "keys", "a")
        view = await item(window, "terminalView")
        await until(lambda: "raw" in screen_text(window), what="raw mode")
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

        await click(window, toggle)  # to the lines
        view = await item(window, "outputView")
        assert find_item(window, "terminalView") is None
        assert not toggle.property("checked")
        await until(lambda: view.property("count") >= 1, what="the lines")
        assert (await item(window, "filterField")).isVisible()
        await click(window, toggle)  # and back
        await item(window, "terminalView")
        assert find_item(window, "outputView") is None

        await click(window, await item(window, f"streamButton-{piped.id}"))
        await item(window, "outputView")
        await settle(0.1)
        assert find_item(window, "terminalToggle") is None
        assert find_item(window, "terminalView") is None

    run(scenario())
