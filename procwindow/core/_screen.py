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
#: Clears the screen and homes the cursor.
_CLEAR = b"\x1b[2J\x1b[H"
#: pyte's keys of the private modes DECCKM (1) and bracketed paste (2004).
_APP_CURSOR = 1 << 5
_BRACKETED_PASTE = 2004 << 5
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


def _row(line: Any, columns: int) -> tuple[Run, ...]:
    """One row of pyte's buffer as runs of characters drawn alike."""
    runs: list[Run] = []
    text: list[str] = []
    key: tuple[Any, ...] | None = None
    for x in range(columns):
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
    return tuple(runs)


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
    #: Equal versions of one proc's screen are equal screens.
    version: int = 0
    #: The program asked for application cursor keys (DECCKM: arrows as
    #: ``ESC O A``) and for bracketed paste (pasted text between markers).
    app_cursor: bool = False
    bracketed_paste: bool = False

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
        #: Bytes ever added, and of those, fed to the emulator or dropped (covered).
        self._added = 0
        self._consumed = 0
        #: Each row's text and runs as last drawn, rebuilt for the rows pyte
        #: marks changed (``dirty``): a key's echo costs a row, not a screen.
        self._rows: list[tuple[str, tuple[Run, ...]]] = []
        self._rows_size = (0, 0)
        #: Counts what changed the screen (output fed, a resize): equal numbers,
        #: equal screens.
        self.version = 0

    @property
    def pending(self) -> int:
        """Bytes of output not yet fed to the emulator."""
        return len(self._pending)

    @property
    def added(self) -> int:
        """Bytes added so far (``catch_up(upto=added)`` feeds up to there)."""
        return self._added

    @property
    def size(self) -> tuple[int, int]:
        return self._screen.lines, self._screen.columns

    def add(self, data: bytes | bytearray | memoryview) -> None:
        """The child wrote ``data`` (kept until someone looks)."""
        self._pending += data
        self._added += len(data)
        if len(self._pending) > BACKLOG:
            self._drop_covered()

    def resize(self, rows: int, cols: int) -> None:
        """The terminal now has this size. Rows go from the bottom first while
        they are below the cursor (as xterm does), then from the top."""
        self.catch_up(None)
        s = self._screen
        below = max(0, s.lines - 1 - s.cursor.y)
        from_bottom = min(max(0, s.lines - rows), below)
        for y in range(s.lines - from_bottom, s.lines):
            s.buffer.pop(y, None)
        s.lines -= from_bottom
        s.resize(rows, cols)
        s.dirty.update(range(s.lines))
        self.version += 1

    def catch_up(self, budget: float | None = 0.005, upto: int | None = None) -> bool:
        """Feed what is pending to the emulator (up to byte ``upto`` of all
        added, None: all) for at most ``budget`` seconds (None: no limit); True
        once that much is fed. A program that writes faster than the emulator
        reads is caught up to where it was when the reader asked, not chased."""
        deadline = None if budget is None else time.monotonic() + budget
        pending = self._pending
        goal = len(pending) if upto is None else max(0, upto - self._consumed)
        done = 0
        while done < min(goal, len(pending)):
            piece = pending[done : min(done + _SLICE, goal)]
            self._stream.feed(bytes(piece))
            done += len(piece)
            if deadline is not None and time.monotonic() >= deadline:
                break
        if done:
            del pending[:done]
            self._consumed += done
            self.version += 1
        return done >= goal or not pending

    def text(self, styled: bool = False) -> ScreenText:
        """The screen as it is drawn now (call ``catch_up`` first to be current);
        with ``styled``, its rows as runs too."""
        s = self._screen
        rows = self._refresh()
        return ScreenText(
            s.lines,
            s.columns,
            tuple(text for text, _runs in rows),
            (s.cursor.y, s.cursor.x),
            not s.cursor.hidden,
            s.alternate,
            tuple(runs for _text, runs in rows) if styled else None,
            self.version,
            _APP_CURSOR in s.mode,
            _BRACKETED_PASTE in s.mode,
        )

    def _refresh(self) -> list[tuple[str, tuple[Run, ...]]]:
        """The rows, those pyte marked changed built again."""
        s = self._screen
        rows = self._rows
        if self._rows_size != (s.lines, s.columns):
            self._rows_size = (s.lines, s.columns)
            rows[:] = [("", ())] * s.lines
            s.dirty.update(range(s.lines))
        for y in s.dirty:
            if 0 <= y < s.lines:
                runs = _row(s.buffer[y], s.columns)
                rows[y] = ("".join(run.text for run in runs).rstrip(), runs)
        s.dirty.clear()
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
            self._consumed += start
        if len(pending) <= BACKLOG // 2:
            return
        rows, cols = self.size
        keep = min(BACKLOG // 2, max(4096, rows * cols * 4))
        cut = pending.find(b"\n", len(pending) - keep)
        cut = len(pending) - keep if cut < 0 else cut + 1
        self._keep_modes(bytes(pending[:cut]))
        del pending[:cut]
        # What it drew before is gone: start from a clear screen (bytes that
        # were never added: they count against those dropped).
        pending[:0] = _CLEAR
        self._consumed += cut - len(_CLEAR)

    def _keep_modes(self, dropped: bytes) -> None:
        """Whether ``dropped`` left the alternate screen on or off: so it stays."""
        entered = max(dropped.rfind(m) for m in _REDRAWS[2:] if m.endswith(b"h"))
        left = max(dropped.rfind(m) for m in _REDRAWS[2:] if m.endswith(b"l"))
        if entered > left:
            self._screen.set_mode(1049, private=True)
        elif left > entered:
            self._screen.reset_mode(1049, private=True)
