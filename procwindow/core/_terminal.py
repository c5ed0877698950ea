"""The terminals of PTY children: their size, and their screen as text."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from . import _pty
from ._errors import NoTerminal
from ._screen import ScreenText, TerminalScreen
from ._types import Line, Stream

if TYPE_CHECKING:
    from ._child import Child

__all__ = ["full_screen_row", "resize", "screen"]

#: Seconds of the screen model's work between passes of the loop.
PIECE_SECONDS = 0.004


def _screen_of(child: Child) -> TerminalScreen:
    if child.screen is None:
        raise NoTerminal(child.id, "it has no terminal (spawn it with pty=True)")
    return child.screen


async def screen(child: Child, styled: bool = False) -> ScreenText:
    """Its screen as it is now: the output so far fed to the screen model,
    in pieces with the loop running between them (``styled``: with its runs)."""
    model = _screen_of(child)
    upto = model.added  # what was written when asked: never chase a faster writer
    while True:
        if model.catch_up(PIECE_SECONDS, upto):
            return model.text(styled)
        await asyncio.sleep(0)  # a pass of the loop between pieces


def full_screen_row(child: Child, match: Callable[[str], bool]) -> Line | None:
    """The first row of a full-screen program's screen (on the alternate
    screen) that ``match`` takes, as a partial line after its last line; None
    if none does, or it is not on the alternate screen. Its screen must have
    caught up (``catch_up``)."""
    if child.screen is None:
        return None
    shot = child.screen.text()
    if not shot.alternate:
        return None
    for text in shot.lines:
        if match(text):
            now = time.time()
            return Line(child.store.last_seq + 1, Stream.STDOUT, now, text, False, True)
    return None


def resize(child: Child, rows: int, cols: int) -> None:
    """Give its terminal ``rows`` × ``cols`` (the child is sent SIGWINCH)."""
    model = _screen_of(child)
    fd = child.terminal_fd()
    if fd is None:
        raise NoTerminal(child.id, "its terminal is closed")
    _pty.set_size(fd, rows, cols)
    model.resize(rows, cols)
