"""What the terminal view sends for a key: xterm's bytes, without a window."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from procwindow.qt._keys import ViewAction, key_text, view_action
from procwindow.qt._terminal_paint import columns_of, palette_colors
from procwindow.qt.terminal import paste_text

K = Qt.Key
NONE = Qt.KeyboardModifier.NoModifier
CTRL = Qt.KeyboardModifier.ControlModifier
SHIFT = Qt.KeyboardModifier.ShiftModifier
ALT = Qt.KeyboardModifier.AltModifier
KEYPAD = Qt.KeyboardModifier.KeypadModifier


@pytest.mark.parametrize(
    ("key", "mods", "text", "sent"),
    [
        (K.Key_A, NONE, "a", "a"),
        (K.Key_A, SHIFT, "A", "A"),
        (K.Key_ParenLeft, SHIFT, "(", "("),
        (K.Key_unknown, NONE, "é", "é"),
        (K.Key_Return, NONE, "\r", "\r"),
        (K.Key_Enter, KEYPAD, "\r", "\r"),
        (K.Key_Backspace, NONE, "\b", "\x7f"),
        (K.Key_Tab, NONE, "\t", "\t"),
        (K.Key_Tab, SHIFT, "", "\x1b[Z"),
        (K.Key_Backtab, SHIFT, "", "\x1b[Z"),
        (K.Key_Escape, NONE, "\x1b", "\x1b"),
        (K.Key_Up, NONE, "", "\x1b[A"),
        (K.Key_Down, NONE, "", "\x1b[B"),
        (K.Key_Right, NONE, "", "\x1b[C"),
        (K.Key_Left, NONE, "", "\x1b[D"),
        (K.Key_Up, KEYPAD, "", "\x1b[A"),
        (K.Key_Right, CTRL, "", "\x1b[1;5C"),
        (K.Key_Left, SHIFT | ALT, "", "\x1b[1;4D"),
        (K.Key_Home, NONE, "", "\x1b[H"),
        (K.Key_End, NONE, "", "\x1b[F"),
        (K.Key_Insert, NONE, "", "\x1b[2~"),
        (K.Key_Delete, NONE, "\x7f", "\x1b[3~"),
        (K.Key_PageUp, NONE, "", "\x1b[5~"),
        (K.Key_PageDown, NONE, "", "\x1b[6~"),
        (K.Key_PageDown, SHIFT, "", "\x1b[6;2~"),
        (K.Key_F1, NONE, "", "\x1bOP"),
        (K.Key_F4, NONE, "", "\x1bOS"),
        (K.Key_F1, CTRL, "", "\x1b[1;5P"),
        (K.Key_F5, NONE, "", "\x1b[15~"),
        (K.Key_F6, NONE, "", "\x1b[17~"),
        (K.Key_F10, NONE, "", "\x1b[21~"),
        (K.Key_F11, NONE, "", "\x1b[23~"),
        (K.Key_F12, NONE, "", "\x1b[24~"),
        (K.Key_F12, SHIFT, "", "\x1b[24;2~"),
        (K.Key_C, CTRL, "\x03", "\x03"),
        (K.Key_C, CTRL, "", "\x03"),  # some platforms give no text: the key decides
        (K.Key_D, CTRL, "\x04", "\x04"),
        (K.Key_Z, CTRL, "\x1a", "\x1a"),
        (K.Key_Space, CTRL, "", "\x00"),
        (K.Key_BracketLeft, CTRL, "", "\x1b"),
        (K.Key_Backslash, CTRL, "", "\x1c"),
        (K.Key_BracketRight, CTRL, "", "\x1d"),
        (K.Key_Underscore, CTRL | SHIFT, "", "\x1f"),
        (K.Key_X, ALT, "x", "\x1bx"),
        (K.Key_B, CTRL | ALT, "", "\x1b\x02"),
        (K.Key_Return, ALT, "\r", "\x1b\r"),
        (K.Key_Shift, SHIFT, "", ""),
        (K.Key_Control, CTRL, "", ""),
        (K.Key_X, CTRL | SHIFT, "", ""),  # the view's keys, or nobody's
    ],
)
def test_keys_send_what_an_xterm_sends(
    key: Qt.Key, mods: Qt.KeyboardModifier, text: str, sent: str
) -> None:
    assert key_text(key, mods, text) == sent


def test_application_cursor_keys_send_ss3_unless_modified() -> None:
    assert key_text(K.Key_Up, NONE, "", app_cursor=True) == "\x1bOA"
    assert key_text(K.Key_Left, NONE, "", app_cursor=True) == "\x1bOD"
    assert key_text(K.Key_Home, NONE, "", app_cursor=True) == "\x1bOH"
    assert key_text(K.Key_End, NONE, "", app_cursor=True) == "\x1bOF"
    assert key_text(K.Key_Up, CTRL, "", app_cursor=True) == "\x1b[1;5A"
    assert key_text(K.Key_PageUp, NONE, "", app_cursor=True) == "\x1b[5~"
    assert key_text(K.Key_F1, NONE, "", app_cursor=True) == "\x1bOP"


def test_the_view_keeps_copy_and_paste_and_lets_ctrl_c_through() -> None:
    assert view_action(K.Key_C, CTRL | SHIFT) is ViewAction.COPY
    assert view_action(K.Key_V, CTRL | SHIFT) is ViewAction.PASTE
    assert view_action(K.Key_Insert, SHIFT) is ViewAction.PASTE
    assert view_action(K.Key_C, CTRL) is None  # Ctrl+C is the child's: "\x03"
    assert view_action(K.Key_V, CTRL) is None
    assert view_action(K.Key_C, CTRL | SHIFT | ALT) is None


def test_pasted_line_ends_are_enter() -> None:
    assert paste_text("a\nb\r\nc") == "a\rb\rc"


def test_colours_and_cells() -> None:
    names = palette_colors()
    # The eight names, their bright forms, pyte's misspelt one and xterm's numbered sixteen.
    assert len({names[n] for n in ("red", "brightred", "cd0000", "ff0000")}) == 2
    assert names["bfightmagenta"] == names["brightmagenta"]
    assert names["brown"] == names["cdcd00"]
    assert columns_of("abc") == 3
    assert columns_of("日本語") == 6
    assert columns_of("") == 0
