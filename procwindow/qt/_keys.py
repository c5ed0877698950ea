"""What a key typed in the terminal view sends to the child: xterm's bytes for it.

:func:`key_text` turns a key (Qt's key code, modifiers and the text the
keyboard layout made of it) into what an xterm would send down the terminal:
printable text as typed, Enter as ``\\r``, Backspace as DEL (``\\x7f``), the
cursor and editing keys and F1–F12 as their escape sequences (with xterm's
modifier parameter, ``\\x1b[1;5C`` for Ctrl+Right), Ctrl+letter as its control
character (Ctrl+C is ``\\x03``: it goes to the child) and Alt+key as ESC before
the key. The view's own keys (copy and paste) are :func:`view_action`'s.

A program that switched the terminal to application cursor keys (DECCKM,
``ESC [ ? 1 h``: curses programs in keypad mode) reads the cursor keys as
``ESC O A`` …; ncurses knows no other form then (``ESC [ A`` reads as three keys).

No Qt here beyond the key codes: the table is tested alone.
"""

from __future__ import annotations

from enum import StrEnum

from PySide6.QtCore import Qt

__all__ = ["ViewAction", "key_text", "view_action"]

_Key = Qt.Key
_Mod = Qt.KeyboardModifier

ESC = "\x1b"

#: Keys that send the same thing whatever the modifiers (Shift+Tab aside).
_PLAIN_KEYS = {
    _Key.Key_Return: "\r",
    _Key.Key_Enter: "\r",
    _Key.Key_Backspace: "\x7f",
    _Key.Key_Tab: "\t",
    _Key.Key_Backtab: ESC + "[Z",
    _Key.Key_Escape: ESC,
}

#: Cursor keys and F1–F4: ``ESC [ X`` (F1–F4: ``ESC O X``), and with modifiers
#: ``ESC [ 1 ; m X``.
_LETTER_KEYS = {
    _Key.Key_Up: ("[", "A"),
    _Key.Key_Down: ("[", "B"),
    _Key.Key_Right: ("[", "C"),
    _Key.Key_Left: ("[", "D"),
    _Key.Key_Home: ("[", "H"),
    _Key.Key_End: ("[", "F"),
    _Key.Key_F1: ("O", "P"),
    _Key.Key_F2: ("O", "Q"),
    _Key.Key_F3: ("O", "R"),
    _Key.Key_F4: ("O", "S"),
}

#: Editing keys and F5–F12: ``ESC [ n ~``, and with modifiers ``ESC [ n ; m ~``.
_TILDE_KEYS = {
    _Key.Key_Insert: 2,
    _Key.Key_Delete: 3,
    _Key.Key_PageUp: 5,
    _Key.Key_PageDown: 6,
    _Key.Key_F5: 15,
    _Key.Key_F6: 17,
    _Key.Key_F7: 18,
    _Key.Key_F8: 19,
    _Key.Key_F9: 20,
    _Key.Key_F10: 21,
    _Key.Key_F11: 23,
    _Key.Key_F12: 24,
}

#: Ctrl with a key that is not a letter: the control characters a terminal makes of them.
_CTRL_SYMBOLS = {
    _Key.Key_Space: "\x00",
    _Key.Key_At: "\x00",
    _Key.Key_2: "\x00",
    _Key.Key_BracketLeft: ESC,
    _Key.Key_3: ESC,
    _Key.Key_Backslash: "\x1c",
    _Key.Key_4: "\x1c",
    _Key.Key_BracketRight: "\x1d",
    _Key.Key_5: "\x1d",
    _Key.Key_AsciiCircum: "\x1e",
    _Key.Key_6: "\x1e",
    _Key.Key_Underscore: "\x1f",
    _Key.Key_Minus: "\x1f",
    _Key.Key_7: "\x1f",
    _Key.Key_Slash: "\x1f",
    _Key.Key_Question: "\x7f",
    _Key.Key_8: "\x7f",
}


class ViewAction(StrEnum):
    """A key the terminal view keeps for itself instead of sending it."""

    COPY = "copy"
    PASTE = "paste"


def _modifier_code(modifiers: _Mod) -> int:
    """xterm's modifier parameter: 1 + Shift 1 + Alt 2 + Ctrl 4 (1: none)."""
    code = 1
    if modifiers & _Mod.ShiftModifier:
        code += 1
    if modifiers & _Mod.AltModifier:
        code += 2
    if modifiers & _Mod.ControlModifier:
        code += 4
    return code


def view_action(key: int, modifiers: _Mod) -> ViewAction | None:
    """Ctrl+Shift+C copies, Ctrl+Shift+V (and Shift+Insert) pastes; None: no view action.

    >>> C, ctrl, shift = (
    ...     Qt.Key.Key_C,
    ...     Qt.KeyboardModifier.ControlModifier,
    ...     Qt.KeyboardModifier.ShiftModifier,
    ... )
    >>> view_action(C, ctrl | shift), view_action(C, ctrl)
    (<ViewAction.COPY: 'copy'>, None)
    """
    mods = modifiers & (_Mod.ControlModifier | _Mod.ShiftModifier | _Mod.AltModifier)
    if mods == _Mod.ControlModifier | _Mod.ShiftModifier:
        if key == _Key.Key_C:
            return ViewAction.COPY
        if key == _Key.Key_V:
            return ViewAction.PASTE
    if mods == _Mod.ShiftModifier and key == _Key.Key_Insert:
        return ViewAction.PASTE
    return None


def key_text(key: int, modifiers: _Mod, text: str = "", app_cursor: bool = False) -> str:
    """What an xterm sends for ``key`` with ``modifiers`` (``text``: what the
    layout typed; ``app_cursor``: in application cursor keys mode); "" for a
    key that sends nothing (a lone Shift, Ctrl+Shift+X).

    >>> key_text(Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    '\\x03'
    >>> (
    ...     key_text(Qt.Key.Key_Up, Qt.KeyboardModifier.NoModifier),
    ...     key_text(Qt.Key.Key_F5, Qt.KeyboardModifier.NoModifier),
    ... )
    ('\\x1b[A', '\\x1b[15~')
    >>> key_text(Qt.Key.Key_Right, Qt.KeyboardModifier.ControlModifier)
    '\\x1b[1;5C'
    >>> key_text(Qt.Key.Key_Up, Qt.KeyboardModifier.NoModifier, app_cursor=True)
    '\\x1bOA'
    >>> (
    ...     key_text(Qt.Key.Key_A, Qt.KeyboardModifier.ShiftModifier, "A"),
    ...     key_text(Qt.Key.Key_X, Qt.KeyboardModifier.AltModifier, "x"),
    ... )
    ('A', '\\x1bx')
    """
    modifiers &= _Mod.ShiftModifier | _Mod.ControlModifier | _Mod.AltModifier
    if key in _PLAIN_KEYS:
        sent = _PLAIN_KEYS[_Key(key)]
        if key == _Key.Key_Tab and modifiers & _Mod.ShiftModifier:
            return _PLAIN_KEYS[_Key.Key_Backtab]
        return ESC + sent if modifiers & _Mod.AltModifier and sent != ESC else sent
    code = _modifier_code(modifiers)
    if key in _LETTER_KEYS:
        intro, final = _LETTER_KEYS[_Key(key)]
        if code != 1:
            return f"{ESC}[1;{code}{final}"
        return f"{ESC}O{final}" if app_cursor else f"{ESC}{intro}{final}"
    if key in _TILDE_KEYS:
        number = _TILDE_KEYS[_Key(key)]
        return f"{ESC}[{number}~" if code == 1 else f"{ESC}[{number};{code}~"
    ctrl = modifiers & _Mod.ControlModifier
    sent = _control_character(key, modifiers) if ctrl else _typed(text)
    if sent and modifiers & _Mod.AltModifier:
        return ESC + sent
    return sent


def _control_character(key: int, modifiers: _Mod) -> str:
    """Ctrl+letter: its control character (Ctrl+Shift+letter sends nothing:
    those are the view's, or nobody's)."""
    if _Key.Key_A <= key <= _Key.Key_Z:
        if modifiers & _Mod.ShiftModifier:
            return ""
        return chr(key - _Key.Key_A + 1)
    return _CTRL_SYMBOLS.get(_Key(key), "") if key in _CTRL_SYMBOLS else ""


def _typed(text: str) -> str:
    """The text a key typed, without the control characters some platforms put
    there for keys this table already sent (or that send nothing)."""
    return "".join(c for c in text if c >= " " and c != "\x7f")
