"""Pseudo-terminals: a child's controlling terminal and its size.

A child spawned with ``pty`` gets the slave end of a new pseudo-terminal as its
stdin, stdout and stderr, in a session of its own with that terminal as its
controlling terminal (so it can open ``/dev/tty``, as ``sudo`` and ``ssh`` do
for a password). The supervisor keeps the master end: it reads the child's
output from it (stdout and stderr are then one stream, in the order written)
and writes its input to it. Changing the size (``set_size``) makes the kernel
send SIGWINCH to the terminal's foreground process group.
"""

from __future__ import annotations

import fcntl
import os
import struct
import termios
from collections.abc import Mapping
from typing import Any

__all__ = [
    "DEFAULT_COLS",
    "DEFAULT_ROWS",
    "EOF",
    "MAX_COLS",
    "MAX_ROWS",
    "TERM",
    "describe_terminal",
    "open_pty",
    "set_size",
    "size",
    "spawn_args",
    "take_terminal",
]

#: A new terminal's size, as a terminal emulator opens: rows and columns.
DEFAULT_ROWS = 24
DEFAULT_COLS = 80
#: The largest size a terminal may be given (the screen model holds rows × columns).
MAX_ROWS = 1000
MAX_COLS = 1000
#: What a PTY child is told its terminal is (``TERM``) unless its environment
#: names one: what the screen model (``_screen``) understands.
TERM = "xterm-256color"
#: Ctrl-D: at the start of a line, a terminal's reader reads end-of-file.
EOF = b"\x04"

_WINSIZE = struct.Struct("HHHH")


def open_pty(rows: int, cols: int) -> tuple[int, int]:
    """A new pseudo-terminal of ``rows`` × ``cols``: its master and slave fds
    (both close-on-exec; the child gets the slave through dup2)."""
    master, slave = os.openpty()
    try:
        set_size(master, rows, cols)
    except BaseException:
        os.close(master)
        os.close(slave)
        raise
    return master, slave


def set_size(fd: int, rows: int, cols: int) -> None:
    """Set the terminal's size (TIOCSWINSZ on either end); the kernel tells
    its foreground process group with SIGWINCH when the size changed."""
    fcntl.ioctl(fd, termios.TIOCSWINSZ, _WINSIZE.pack(rows, cols, 0, 0))


def size(fd: int) -> tuple[int, int]:
    """The terminal's size: rows, columns."""
    rows, cols, _x, _y = _WINSIZE.unpack(fcntl.ioctl(fd, termios.TIOCGWINSZ, bytes(_WINSIZE.size)))
    return rows, cols


def describe_terminal(env: dict[bytes, bytes], overrides: Mapping[str, object]) -> None:
    """Make a PTY child's environment ``env`` describe its own terminal, not the
    server's: ``TERM`` is the one the screen model emulates (with ncurses'
    boxes in UTF-8, which it reads), and ``LINES`` and ``COLUMNS`` go
    (programs that read them, curses among them, would take them over the
    terminal's real size). What the spawn's ``env`` names is kept."""
    if "TERM" not in overrides:
        env[b"TERM"] = TERM.encode()
    if "NCURSES_NO_UTF8_ACS" not in overrides:
        # Boxes and lines as UTF-8 characters, not the line-drawing charset
        # (``ESC ( 0``), which the screen model does not read in UTF-8.
        env[b"NCURSES_NO_UTF8_ACS"] = b"1"
    for name in ("LINES", "COLUMNS"):
        if name not in overrides:
            env.pop(name.encode(), None)


def spawn_args(size: tuple[int, int] | None) -> dict[str, Any]:
    """``spawn``'s ``pty``, ``rows`` and ``cols`` for a terminal of ``size``
    (rows, columns), or for pipes (None)."""
    if size is None:
        return {"pty": False, "rows": None, "cols": None}
    return {"pty": True, "rows": size[0], "cols": size[1]}


def take_terminal() -> None:
    """In the child, once it leads a session of its own (``setsid``) and has the
    slave as fd 0: make that terminal its controlling terminal."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
