"""The screen of a PTY child: what its terminal would show now, from its output.

A terminal emulator (``pyte``) interprets the child's output as a terminal
would: cursor moves, erasing, colours, and the alternate screen full-screen
programs switch to (``top``, ``less``, ``vim``). Readers get its text
(``ScreenText``) and the window its styled rows (``Run``).

The emulator reads about 0.4 MB/s (pure Python), far slower than capture, so
output is not fed as it arrives: it is kept (``add``, a copy) and fed when
someone looks (``catch_up``), in slices under a time budget. What is kept is
bounded (BACKLOG): past it, what came before the newest full redraw (a clear
of the screen, a switch of screens) is dropped, since that redraw covers it;
with none, the last screenfuls of lines are kept. A program that redraws faster
than the emulator reads is shown at its newest frame, skipping the others.
"""

from __future__ import annotations

import copy
import time
from typing import Any, NamedTuple

import pyte
from pyte.screens import Char

__all__ = ["BACKLOG", "Run", "ScreenText", "TerminalScreen"]

#: The most output kept unread for the emulator (bytes).
BACKLOG = 64 * 1024
#: Bytes fed to the emulator in one go between looks at the clock.
_SLICE = 2048
#: Private modes of the alternate screen: xterm's 1049 (with the cursor
#: saved), 1047 and the older 47.
_ALTERNATE = frozenset({1049, 1047, 47})
#: Sequences after which the screen is drawn anew: a clear, a reset, a switch of screens.
_REDRAWS = (
    b"\x1b[2J",
    b"\x1bc",
    b"\x1b[?1049h",
    b"\x1b[?1049l",
    b"\x1b[?1047h",
    b"\x1b[?1047l",
    b"\x1b[?47h",
    b"\x1b[?47l",
)


class Run(NamedTuple):
    """Characters of one row drawn alike: colours as pyte names them
    (``default``, ``red``… or a hex ``rrggbb``), and their attributes."""

    text: str
    fg: str
    bg: str
    bold: bool
    italics: bool
    underscore: bool
    reverse: bool


class ScreenText(NamedTuple):
    """A terminal's screen as text: ``lines`` are its rows (trailing blanks
    cut, every row there), ``cursor`` its (row, column) from 0, ``alternate``
    true while a full-screen program has switched to the alternate screen.
    ``styled``, when asked for: each row as runs of characters drawn alike
    (colours and attributes, trailing blanks kept), to draw it."""

    rows: int
    cols: int
    lines: tuple[str, ...]
    cursor: tuple[int, int]
    cursor_visible: bool
    alternate: bool
    styled: tuple[tuple[Run, ...], ...] | None = None

    @property
    def text(self) -> str:
        """Its rows as lines of text, the blank rows at the bottom left out."""
        lines = list(self.lines)
        while lines and not lines[-1]:
            lines.pop()
        return "\n".join(lines)


class _Terminal(pyte.Screen):
    """pyte's screen, with the alternate screen (which pyte lacks): entering it
    keeps the main screen and clears; leaving it brings the main screen back."""

    def __init__(self, columns: int, lines: int) -> None:
        self.alternate = False
        self._main: tuple[dict[int, dict[int, Char]], Any] | None = None
        super().__init__(columns, lines)

    def set_mode(self, *modes: int, **kwargs: Any) -> None:
        if kwargs.get("private") and _ALTERNATE.intersection(modes):
            self._enter_alternate()
            modes = tuple(m for m in modes if m not in _ALTERNATE)
        super().set_mode(*modes, **kwargs)

    def reset_mode(self, *modes: int, **kwargs: Any) -> None:
        if kwargs.get("private") and _ALTERNATE.intersection(modes):
            self._leave_alternate()
            modes = tuple(m for m in modes if m not in _ALTERNATE)
        super().reset_mode(*modes, **kwargs)

    def _enter_alternate(self) -> None:
        if self.alternate:
            return
        self.alternate = True
        saved = {y: dict(line) for y, line in self.buffer.items()}
        self._main = (saved, copy.copy(self.cursor))
        self.erase_in_display(2)

    def _leave_alternate(self) -> None:
        if not self.alternate:
            return
        self.alternate = False
        self.erase_in_display(2)
        if self._main is not None:
            saved, cursor = self._main
            self._main = None
            for y, cells in saved.items():
                if y < self.lines:
                    self.buffer[y].update(cells)
            self.cursor = cursor
            self.ensure_hbounds()
            self.ensure_vbounds()
        self.dirty.update(range(self.lines))


class TerminalScreen:
    """The screen of one PTY child, ``rows`` × ``cols``."""

    def __init__(self, rows: int, cols: int) -> None:
        self._screen = _Terminal(cols, rows)
        self._stream = pyte.ByteStream(self._screen)
        self._pending = bytearray()
        #: Counts changes seen (output added, a resize): a reader that saw this
        #: number has seen the screen as it is.
        self.version = 0

    @property
    def pending(self) -> int:
        """Bytes of output not yet fed to the emulator."""
        return len(self._pending)

    @property
    def size(self) -> tuple[int, int]:
        return self._screen.lines, self._screen.columns

    def add(self, data: bytes | bytearray | memoryview) -> None:
        """The child wrote ``data`` (kept until someone looks)."""
        self._pending += data
        self.version += 1
        if len(self._pending) > BACKLOG:
            self._drop_covered()

    def resize(self, rows: int, cols: int) -> None:
        """The terminal now has this size (what was drawn is kept, clipped)."""
        self.catch_up(None)
        self._screen.resize(rows, cols)
        self.version += 1

    def catch_up(self, budget: float | None = 0.005) -> bool:
        """Feed what is pending to the emulator, for at most ``budget`` seconds
        (None: all of it); True once nothing is pending."""
        deadline = None if budget is None else time.monotonic() + budget
        pending = self._pending
        done = 0
        while done < len(pending):
            self._stream.feed(bytes(pending[done : done + _SLICE]))
            done += _SLICE
            if deadline is not None and time.monotonic() >= deadline:
                break
        del pending[:done]
        return not pending

    def text(self, styled: bool = False) -> ScreenText:
        """The screen as it is drawn now (call ``catch_up`` first to be current);
        with ``styled``, its rows as runs too."""
        s = self._screen
        return ScreenText(
            s.lines,
            s.columns,
            tuple(row.rstrip() for row in s.display),
            (s.cursor.y, s.cursor.x),
            not s.cursor.hidden,
            s.alternate,
            tuple(tuple(row) for row in self.styled()) if styled else None,
        )

    def styled(self) -> list[list[Run]]:
        """Each row as runs of characters drawn alike (for drawing it)."""
        s = self._screen
        rows: list[list[Run]] = []
        for y in range(s.lines):
            line = s.buffer[y]
            runs: list[Run] = []
            text: list[str] = []
            key: tuple[Any, ...] | None = None
            for x in range(s.columns):
                c = line[x]
                if not c.data:  # the second half of a wide character
                    continue
                attrs = (c.fg, c.bg, c.bold, c.italics, c.underscore, c.reverse)
                if attrs != key and text:
                    runs.append(Run("".join(text), *key))  # type: ignore[misc]
                    text = []
                key = attrs
                text.append(c.data)
            if text and key is not None:
                runs.append(Run("".join(text), *key))
            rows.append(runs)
        return rows

    def _drop_covered(self) -> None:
        """Past BACKLOG: drop what the newest full redraw covers (the screen
        mode switches in it are kept), and keep at most half of BACKLOG: the
        last screenfuls of lines when no redraw came (so this runs once per
        half a BACKLOG of output at most)."""
        pending = self._pending
        start = max(pending.rfind(marker) for marker in _REDRAWS)
        if start > 0:
            self._keep_modes(bytes(pending[:start]))
            del pending[:start]
        if len(pending) <= BACKLOG // 2:
            return
        rows, cols = self.size
        keep = min(BACKLOG // 2, max(4096, rows * cols * 4))
        cut = pending.find(b"\n", len(pending) - keep)
        cut = len(pending) - keep if cut < 0 else cut + 1
        self._keep_modes(bytes(pending[:cut]))
        del pending[:cut]
        # What it drew before is gone: start from a clear screen.
        pending[:0] = b"\x1b[2J\x1b[H"

    def _keep_modes(self, dropped: bytes) -> None:
        """Whether ``dropped`` left the alternate screen on or off: so it stays."""
        entered = max(dropped.rfind(m) for m in _REDRAWS[2:] if m.endswith(b"h"))
        left = max(dropped.rfind(m) for m in _REDRAWS[2:] if m.endswith(b"l"))
        if entered > left:
            self._screen.set_mode(1049, private=True)
        elif left > entered:
            self._screen.reset_mode(1049, private=True)
