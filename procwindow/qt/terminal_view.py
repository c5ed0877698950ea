"""TerminalView: the output pane's terminal view, a screen drawn with QPainter.

:class:`TerminalView` is a ``QQuickPaintedItem`` (``import Procwindow``). QML
gives it a :class:`~procwindow.qt.terminal.TerminalModel` (``terminal``), the
pane's monospace font and its colours; the item

- draws the model's screen (``_terminal_paint``), and only when the model says
  it changed (``screenChanged``) or the look or the keyboard focus changed;
- sends the keys typed in it to the child as an xterm would (``_keys``):
  while it has the keyboard, every key a terminal program reads is its own,
  window shortcuts included (Esc, Ctrl+C, the arrows), except Ctrl+Shift+C
  and Ctrl+Shift+V, which copy the screen and paste;
- tells the model how many rows and columns fit it (``setViewSize``) whenever
  its size or font changes; the model resizes the terminal.

A click gives it the keyboard. ``paints`` counts the paints, and ``trace``
(a list, or None) collects ``(time.perf_counter(), screen)`` at each one, for
tests and benchmarks.
"""

from __future__ import annotations

import time
from typing import Any

from PySide6.QtCore import Property, QEvent, QObject, QRect, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFocusEvent, QKeyEvent, QMouseEvent, QPainter
from PySide6.QtQml import QmlElement
from PySide6.QtQuick import QQuickItem, QQuickPaintedItem

from procwindow.core import ScreenText

from ._keys import ViewAction, key_text, view_action
from ._support import qt_property
from ._terminal_paint import ScreenPainter
from .terminal import TerminalModel

__all__ = ["TerminalView"]

QML_IMPORT_NAME = "Procwindow"
QML_IMPORT_MAJOR_VERSION = 1


def _color_property(name: str, notify: Signal) -> QColor:
    """A colour of the item's painter (``foreground``, ``background``, ``cursor``)."""

    def fset(self: TerminalView, color: QColor) -> None:
        color = QColor(color)
        if color != getattr(self._painter, name):
            setattr(self._painter, name, color)
            self.setFillColor(self._painter.background)
            self.lookChanged.emit()
            self.update()

    return qt_property(QColor, lambda self: getattr(self._painter, name), fset, notify=notify)


def _look_property(type_: type, attr: str, notify: Signal) -> Any:
    """A property of the item's look kept in ``self.<attr>`` (the cells follow it)."""

    def fset(self: TerminalView, value: object) -> None:
        self._set_look(attr, value)

    return Property(type_, lambda self: getattr(self, attr), fset, notify=notify)


@QmlElement
class TerminalView(QQuickPaintedItem):
    """Draws a terminal's screen and types into it (see the module)."""

    terminalChanged = Signal()
    lookChanged = Signal()
    fitChanged = Signal()

    def __init__(self, parent: QQuickItem | None = None) -> None:
        super().__init__(parent)
        self._terminal: TerminalModel | None = None
        self._painter = ScreenPainter()
        self._family = "monospace"
        self._pixel_size = 12
        self._padding = 4
        self._fit = (0, 0)
        self.paints = 0
        self.trace: list[tuple[float, ScreenText | None]] | None = None
        self.setOpaquePainting(True)
        self.setFillColor(self._painter.background)
        self.setAcceptedMouseButtons(Qt.MouseButton.LeftButton)
        self.setFlag(QQuickItem.Flag.ItemIsFocusScope, False)
        self.setActiveFocusOnTab(True)

    # -- the model -----------------------------------------------------------------

    def _get_terminal(self) -> TerminalModel | None:
        return self._terminal

    def _set_terminal(self, terminal: TerminalModel | None) -> None:
        if terminal is self._terminal:
            return
        if self._terminal is not None:
            self._terminal.screenChanged.disconnect(self.update)
        self._terminal = terminal
        if terminal is not None:
            terminal.screenChanged.connect(self.update)
            if self._fit != (0, 0):
                terminal.setViewSize(*self._fit)
        self.terminalChanged.emit()
        self.update()

    terminal = Property(QObject, _get_terminal, _set_terminal, notify=terminalChanged)
    """The :class:`~procwindow.qt.terminal.TerminalModel` drawn and typed into."""

    # -- the look ------------------------------------------------------------------

    def _set_look(self, attr: str, value: object) -> None:
        if getattr(self, attr) == value:
            return
        setattr(self, attr, value)
        self._painter.set_font(self._family, self._pixel_size)
        self.setFillColor(self._painter.background)
        self.lookChanged.emit()
        self._refit()
        self.update()

    fontFamily = _look_property(str, "_family", lookChanged)
    fontPixelSize = _look_property(int, "_pixel_size", lookChanged)
    padding = _look_property(int, "_padding", lookChanged)
    """Pixels between the item's edges and the cells."""

    foreground = _color_property("foreground", lookChanged)
    """The default text colour."""
    background = _color_property("background", lookChanged)
    """The default background (what the item is filled with)."""
    cursorColor = _color_property("cursor", lookChanged)

    cellWidth = qt_property(float, lambda self: self._painter.cell_width, notify=lookChanged)
    cellHeight = qt_property(int, lambda self: self._painter.cell_height, notify=lookChanged)
    fitRows = qt_property(int, lambda self: self._fit[0], notify=fitChanged)
    """The rows that fit the item (the terminal's size once it follows)."""
    fitCols = qt_property(int, lambda self: self._fit[1], notify=fitChanged)

    # -- size ----------------------------------------------------------------------

    def geometryChange(self, new: QRectF | QRect, old: QRectF | QRect) -> None:
        super().geometryChange(new, old)
        if new.size() != old.size():
            self._refit()

    def _refit(self) -> None:
        pad = 2 * self._padding
        if self.width() <= pad or self.height() <= pad:
            return
        fit = self._painter.fits(self.width() - pad, self.height() - pad)
        fit = (max(1, fit[0]), max(1, fit[1]))
        if fit != self._fit:
            self._fit = fit
            self.fitChanged.emit()
            if self._terminal is not None:
                self._terminal.setViewSize(*fit)

    # -- keys and the pointer ------------------------------------------------------

    def _typed(self, event: QKeyEvent) -> tuple[ViewAction | None, str]:
        key, mods = event.key(), event.modifiers()
        action = view_action(key, mods)
        if action is not None:
            return action, ""
        app_cursor = self._terminal is not None and self._terminal.app_cursor()
        return None, key_text(key, mods, event.text(), app_cursor)

    def event(self, event: QEvent) -> bool:
        # Before a window shortcut takes a key, its focus item is asked: the keys a
        # terminal program reads are claimed here (Esc, Ctrl+C, the arrows…).
        if event.type() == QEvent.Type.ShortcutOverride and self._claims(event):  # type: ignore[arg-type]
            event.accept()
            return True
        return super().event(event)

    def _claims(self, event: QKeyEvent) -> bool:
        terminal = self._terminal
        if terminal is None or not terminal.active:
            return False
        action, text = self._typed(event)
        return action is not None or (bool(text) and terminal.open)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        terminal = self._terminal
        if terminal is None or not terminal.active:
            event.ignore()
            return
        action, text = self._typed(event)
        if action is ViewAction.COPY:
            terminal.copy()
        elif action is ViewAction.PASTE:
            terminal.paste()
        elif text and terminal.open:
            terminal.send(text)
        else:
            event.ignore()
            return
        event.accept()

    def mousePressEvent(self, event: QMouseEvent) -> None:
        self.forceActiveFocus(Qt.FocusReason.MouseFocusReason)
        event.accept()

    def focusInEvent(self, event: QFocusEvent) -> None:
        super().focusInEvent(event)
        self.update()  # the cursor: a block while typing here

    def focusOutEvent(self, event: QFocusEvent) -> None:
        super().focusOutEvent(event)
        self.update()

    # -- painting ------------------------------------------------------------------

    def paint(self, painter: QPainter) -> None:
        terminal = self._terminal
        screen = terminal.screen() if terminal is not None else None
        self.paints += 1
        if screen is not None:
            painter.translate(self._padding, self._padding)
            self._painter.paint(painter, screen, self.hasActiveFocus())
        if self.trace is not None:
            self.trace.append((time.perf_counter(), screen))
