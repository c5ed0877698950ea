"""Drawing a terminal's screen with QPainter: a grid of cells, runs of text on it.

:class:`ScreenPainter` draws a :class:`~procwindow.core.ScreenText`'s styled
rows (:class:`~procwindow.core.Run`): each run's background as one rectangle
(none for the default background, which the item fills), its text in one
``drawText`` at its first cell, in the pane's monospace font (bold and italic
from the same family), underlined with a one-pixel line. Cells are
``cell_width`` × ``cell_height``, measured from the font as it lays out a
run, so that a run's text ends where the next run starts. The cursor is a
block in ``cursor`` (the character in it drawn in the background's colour)
while the view has the keyboard, an outline otherwise.

Colours are pyte's names: the eight ANSI names (``brown`` is yellow), their
``bright`` forms, ``default``, or ``rrggbb``. The sixteen named ones, and the
same sixteen asked for by number (``38;5;1``), take the pane's palette
(:data:`~procwindow.qt.ansi.DARK_PALETTE`, as the lines view's colours).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPainter, QPen
from wcwidth import wcswidth

from procwindow.core import Run, ScreenText

from .ansi import DARK_PALETTE

__all__ = ["ScreenPainter", "columns_of", "palette_colors"]

#: pyte's names of the eight ANSI colours, by number.
_ANSI_NAMES = ("black", "red", "green", "brown", "blue", "magenta", "cyan", "white")
#: xterm's sixteen colours as pyte gives them for ``38;5;n``, n < 16.
_XTERM_16 = (
    "000000", "cd0000", "00cd00", "cdcd00", "0000ee", "cd00cd", "00cdcd", "e5e5e5",
    "7f7f7f", "ff0000", "00ff00", "ffff00", "5c5cff", "ff00ff", "00ffff", "ffffff",
)  # fmt: skip


def palette_colors(colors: Sequence[str] = DARK_PALETTE.colors) -> dict[str, str]:
    """pyte's colour names (and xterm's first sixteen numbered colours) → ``#rrggbb``.

    >>> names = palette_colors()
    >>> names["red"], names["brightred"], names["cd0000"]
    ('#cd3131', '#f14c4c', '#cd3131')
    """
    table: dict[str, str] = {}
    for i, name in enumerate(_ANSI_NAMES):
        table[name] = colors[i]
        table["bright" + name] = colors[i + 8]
    table["bfightmagenta"] = colors[13]  # pyte's spelling of background 105
    for i, hex_ in enumerate(_XTERM_16):
        table[hex_] = colors[i]
    return table


def columns_of(text: str) -> int:
    """The cells ``text`` covers on a terminal (a wide character takes two).

    >>> columns_of("ab"), columns_of("日本"), columns_of("e\\u0301")
    (2, 4, 1)
    """
    if text.isascii():
        return len(text)
    width = wcswidth(text)
    return width if width >= 0 else len(text)


class ScreenPainter:
    """Draws a screen: fonts, cell metrics and colours (see the module)."""

    def __init__(self) -> None:
        self.foreground = QColor(DARK_PALETTE.foreground)
        self.background = QColor(DARK_PALETTE.background)
        self.cursor = QColor(DARK_PALETTE.foreground)
        self._names = palette_colors()
        self._colors: dict[str, QColor] = {}
        self._fonts: dict[tuple[bool, bool], QFont] = {}
        self.cell_width = 8.0
        self.cell_height = 16
        self._ascent = 12.0
        self._underline = 13.0
        self.set_font("monospace", 12)

    def set_font(self, family: str, pixel_size: int) -> None:
        """Draw in ``family`` at ``pixel_size`` px (the cells follow)."""
        base = QFont(family)
        base.setPixelSize(max(1, pixel_size))
        base.setStyleHint(QFont.StyleHint.Monospace)
        base.setFixedPitch(True)
        base.setKerning(False)
        self._fonts = {}
        for bold in (False, True):
            for italic in (False, True):
                font = QFont(base)
                font.setBold(bold)
                font.setItalic(italic)
                self._fonts[bold, italic] = font
        metrics = QFontMetricsF(base)
        # As a run is laid out: a character's advance, rounded or not, times many.
        self.cell_width = metrics.horizontalAdvance("M" * 100) / 100
        self.cell_height = math.ceil(metrics.height())
        self._ascent = metrics.ascent()
        self._underline = self._ascent + max(1.0, metrics.underlinePos())

    def color(self, name: str, default: QColor) -> QColor:
        """The colour pyte calls ``name`` (``default`` for "default" or a name unknown)."""
        if name == "default":
            return default
        color = self._colors.get(name)
        if color is None:
            color = QColor(self._names.get(name) or "#" + name)
            self._colors[name] = color
        return color if color.isValid() else default

    def fits(self, width: float, height: float) -> tuple[int, int]:
        """The rows and columns whole cells of which fit ``width`` × ``height`` px."""
        return int(height // self.cell_height), int(width // self.cell_width)

    def paint(self, painter: QPainter, screen: ScreenText, focused: bool) -> None:
        """Draw ``screen`` from the painter's origin (the background is filled already)."""
        for y, runs in enumerate(screen.styled or ()):
            self._paint_row(painter, y, runs)
        if screen.cursor_visible:
            self._paint_cursor(painter, screen, focused)

    def _paint_row(self, painter: QPainter, y: int, runs: Sequence[Run]) -> None:
        cw, ch = self.cell_width, self.cell_height
        top = y * ch
        baseline = top + self._ascent
        column = 0
        font: QFont | None = None
        pen: QColor | None = None
        for run in runs:
            text = run.text
            n = columns_of(text)
            fg = self.color(run.fg, self.foreground)
            bg = self.color(run.bg, self.background)
            if run.reverse:
                fg, bg = bg, fg
            x = column * cw
            column += n
            if bg is not self.background:
                painter.fillRect(QRectF(x, top, n * cw, ch), bg)
            if not text.isspace():
                want = self._fonts[run.bold, run.italics]
                if want is not font:
                    painter.setFont(want)
                    font = want
                if fg is not pen:
                    painter.setPen(fg)
                    pen = fg
                painter.drawText(QPointF(x, baseline), text)
            if run.underscore:
                painter.fillRect(QRectF(x, top + self._underline, n * cw, 1), fg)

    def _paint_cursor(self, painter: QPainter, screen: ScreenText, focused: bool) -> None:
        row, col = screen.cursor
        if row >= screen.rows or col >= screen.cols:
            return
        cw, ch = self.cell_width, self.cell_height
        rect = QRectF(col * cw, row * ch, cw, ch)
        if not focused:
            painter.setPen(QPen(self.cursor, 1))
            painter.setBrush(QColor(0, 0, 0, 0))
            painter.drawRect(rect.adjusted(0.5, 0.5, -0.5, -0.5))
            return
        painter.fillRect(rect, self.cursor)
        line = screen.lines[row] if row < len(screen.lines) else ""
        char = line[col] if col < len(line) else " "
        if not char.isspace():
            painter.setFont(self._fonts[False, False])
            painter.setPen(self.background)
            painter.drawText(QPointF(rect.x(), rect.y() + self._ascent), char)
