"""TerminalModel: the terminal of the proc an output pane shows, for its terminal view.

A proc spawned with ``pty=True`` runs on a pseudo-terminal; its pane can show
that terminal's screen (a :class:`~procwindow.qt.terminal_view.TerminalView`
draws it) instead of its lines. The model follows the pane's proc
(``OutputModel.procId``) and, while the terminal view is on (``active``):

- fetches the screen when it may have changed (see ``_terminal_feed``) and
  announces it (``screenChanged``);
- writes what is typed to the child (``send``), in order, one write at a time,
  whatever was typed meanwhile going together in the next;
- gives the terminal the size the view fits (``setViewSize``), once the view
  has held still for ``RESIZE_MS``, and only when it differs.

An :class:`~procwindow.qt.output_pane.OutputPaneModel` makes one and exposes it
as ``terminal``; its ``message`` (``Screen copied``) goes to the window's banner.
"""

from __future__ import annotations

import asyncio
import logging

from PySide6.QtCore import QObject, QTimer, Signal, Slot
from PySide6.QtGui import QGuiApplication
from PySide6.QtQml import QmlElement, QmlUncreatable

from procwindow.core import (
    Event,
    EventKind,
    NoTerminal,
    Proc,
    ProcwindowError,
    ScreenText,
    SupervisorAPI,
)
from procwindow.core.rules import scope_pattern

from ._support import EventPump, Lifeline, current_loop, qt_property, stored_property
from ._terminal_feed import ECHO_MS, ScreenFeed
from .models import OutputModel

__all__ = ["MAX_SIZE", "RESIZE_MS", "TerminalModel", "paste_text"]

QML_IMPORT_NAME = "Procwindow"
QML_IMPORT_MAJOR_VERSION = 1

log = logging.getLogger("procwindow.qt")

#: Milliseconds the view's size must hold still before the terminal takes it.
RESIZE_MS = 100
#: The most rows or columns a terminal is given (the supervisor's limit).
MAX_SIZE = 1000


def paste_text(text: str) -> str:
    """Text pasted into a terminal: its line ends as Enter sends them (``\\r``).

    >>> paste_text("ls\\r\\npwd\\n")
    'ls\\rpwd\\r'
    """
    return text.replace("\r\n", "\r").replace("\n", "\r")


@QmlElement
@QmlUncreatable("an output pane's model makes its terminal")
class TerminalModel(QObject):  # type: ignore[operator]  # PySide's stub: not callable
    """The terminal of the proc the output pane shows (see the module).

    ``available``: that proc runs (or ran) on a terminal. ``shown``: the pane
    shows its terminal view, not its lines (the default for such a proc; a
    person's choice of lines is kept per proc). ``active``: both, so the
    screen is fetched, keys are sent and the size follows the view.
    ``open``: the terminal takes keys (its proc has not ended).
    """

    stateChanged = Signal()
    """``available``, ``shown``, ``active`` or ``open`` changed."""
    screenChanged = Signal()
    """A new screen to draw (``screen()``)."""
    statusChanged = Signal()
    """``rows``, ``cols`` or ``statusText`` changed."""
    message = Signal(str, bool, arguments=["message", "isError"])
    """Something to tell the person (``Screen copied``)."""

    def __init__(
        self, supervisor: SupervisorAPI, output_model: OutputModel, parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self._sup = supervisor
        self._output = output_model
        self._proc_id = -1
        self._available = False
        self._open = False
        self._lines_chosen: set[int] = set()  # procs whose lines the person chose
        self._screen: ScreenText | None = None
        self._status = ""
        self._wanted: tuple[int, int] | None = None  # the size the view fits
        self._size: tuple[int, int] | None = None  # the terminal's, as known
        self._resizing = False
        self._outbox: list[str] = []
        self._writer: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._lifeline = Lifeline(self)
        self._pump: EventPump | None = None
        self._feed = ScreenFeed(self, supervisor, self._on_screen, self._on_gone)
        self._resize_timer = QTimer(self)
        self._resize_timer.setSingleShot(True)
        self._resize_timer.setInterval(RESIZE_MS)
        self._resize_timer.timeout.connect(self._apply_size)
        output_model.procIdChanged.connect(self._retarget)
        self._retarget()

    # -- what QML reads ------------------------------------------------------------

    procId = qt_property(int, lambda self: self._proc_id, notify=stateChanged)
    """The proc whose terminal this is (the pane's), -1 for none."""
    available = stored_property(bool, "_available", stateChanged, writable=False)
    """The pane's proc runs (or ran) on a terminal: the pane offers its terminal view."""
    open = stored_property(bool, "_open", stateChanged, writable=False)
    """Keys typed reach the child (its terminal has not closed)."""

    def _get_shown(self) -> bool:
        return self._proc_id not in self._lines_chosen

    def _set_shown(self, shown: bool) -> None:
        if shown == self._get_shown():
            return
        if shown:
            self._lines_chosen.discard(self._proc_id)
        else:
            self._lines_chosen.add(self._proc_id)
        self._update_activity()
        self.stateChanged.emit()

    shown = qt_property(bool, _get_shown, _set_shown, notify=stateChanged)
    """The pane shows the terminal view rather than the lines (while ``available``)."""
    active = qt_property(bool, lambda self: self._is_active(), notify=stateChanged)
    """``available`` and ``shown``: the terminal view is on."""
    rows = qt_property(int, lambda self: self._screen_size()[0], notify=statusChanged)
    """The terminal's rows, as last drawn (0 before the first screen)."""
    cols = qt_property(int, lambda self: self._screen_size()[1], notify=statusChanged)
    statusText = stored_property(str, "_status", statusChanged, writable=False)
    """The footer's words for the terminal: ``terminal 80 × 24 · full screen · ended``."""

    def screen(self) -> ScreenText | None:
        """The screen as last fetched (with its runs), or None before the first."""
        return self._screen

    def app_cursor(self) -> bool:
        """Whether the program reads the cursor keys in application mode (DECCKM).

        The screen says so where it knows (an ``app_cursor`` of ScreenText);
        until then a full-screen program is taken to (curses in keypad mode
        switches it on with the alternate screen), one on the main screen not
        (a shell's or a REPL's line editor).
        """
        screen = self._screen
        return screen is not None and bool(getattr(screen, "app_cursor", screen.alternate))

    @property
    def feed(self) -> ScreenFeed:
        """What fetches the screen (for tests and benchmarks)."""
        return self._feed

    def _screen_size(self) -> tuple[int, int]:
        screen = self._screen
        return (screen.rows, screen.cols) if screen is not None else (0, 0)

    def _is_active(self) -> bool:
        return self._available and self._get_shown()

    # -- following the pane's proc ---------------------------------------------------

    def _retarget(self) -> None:
        """The pane shows another proc (or none)."""
        self._stop()
        proc = self._output.proc()
        self._proc_id = self._output.procId if proc is not None else -1
        pty = proc.options.pty if proc is not None else None
        self._available = pty is not None
        self._open = proc is not None and pty is not None and proc.running
        self._size = pty
        self._screen = None
        self._update_status()
        self.screenChanged.emit()
        self._update_activity(proc)
        self.stateChanged.emit()

    def _update_activity(self, proc: Proc | None = None) -> None:
        """Fetch, listen and resize while active; otherwise do none of it."""
        if not self._is_active():
            self._stop()
            return
        if self._pump is None:
            proc = proc if proc is not None else self._output.proc()
            if proc is None:
                return
            pattern = scope_pattern(proc.session, proc.agent)
            pump = EventPump(self._sup, pattern, self._on_events, proc=self._proc_id)
            self._pump = self._lifeline.hold(pump)
        if self._feed.proc_id != self._proc_id:
            self._feed.follow(self._proc_id)
            proc = proc if proc is not None else self._output.proc()
            self._set_open(proc is not None and proc.running)
        self._feed.poke()
        if self._wanted is not None:
            self._resize_timer.start(0)  # the view's size is known: at once

    def _stop(self) -> None:
        self._feed.stop()
        self._feed.follow(-1)
        self._lifeline.release(self._pump)
        self._pump = None
        self._resize_timer.stop()
        self._outbox.clear()

    def close(self) -> None:
        """Stop following the proc (the window is going away)."""
        self._stop()
        self._lifeline.close()
        for task in [*self._tasks, self._writer]:
            if task is not None and not task.done() and not task.get_loop().is_closed():
                task.cancel()

    def _on_events(self, events: list[Event]) -> None:
        for event in events:
            if event.proc_id == self._proc_id:
                if event.kind == EventKind.EXIT:
                    self._set_open(False)
                self._feed.poke()
            elif event.missed:
                self._feed.poke()

    def _on_screen(self, screen: ScreenText) -> bool:
        """A screen fetched: keep and announce it if it changed (True)."""
        if screen == self._screen:
            return False
        self._screen = screen
        if not self._resizing:
            self._size = (screen.rows, screen.cols)
        self._update_status()
        self.screenChanged.emit()
        return True

    def _on_gone(self, error: ProcwindowError) -> None:
        """The proc has no terminal (any more): what was drawn stays."""
        log.debug("procwindow.qt: terminal of %d gone: %s", self._proc_id, error)
        self._set_open(False)
        if self._screen is None:  # never had one here (a past run): the lines it is
            self._available = False
            self._stop()
            self.stateChanged.emit()

    def _set_open(self, open_: bool) -> None:
        if open_ != self._open:
            self._open = open_
            if not open_:
                self._outbox.clear()
            self._update_status()
            self.stateChanged.emit()

    def _update_status(self) -> None:
        screen = self._screen
        parts = []
        if screen is not None:
            parts.append(f"terminal {screen.cols} × {screen.rows}")
            if screen.alternate:
                parts.append("full screen")
        if self._available and not self._open:
            parts.append("ended")
        text = " · ".join(parts)
        if text != self._status:  # the size is in it: rows and cols change with it
            self._status = text
            self.statusChanged.emit()

    # -- keys ----------------------------------------------------------------------

    @Slot(str)
    def send(self, text: str) -> None:
        """Type ``text`` into the terminal (keys as :mod:`._keys` makes them)."""
        if not text or not self._open or not self._is_active():
            return
        self._outbox.append(text)
        if self._writer is None:
            self._writer = current_loop().create_task(
                self._write(self._proc_id), name=f"procwindow.qt type into {self._proc_id}"
            )

    async def _write(self, proc_id: int) -> None:
        try:
            while self._outbox and proc_id == self._proc_id:
                data = "".join(self._outbox)
                self._outbox.clear()
                await self._sup.write(proc_id, data)
                self._feed.poke(delay_ms=ECHO_MS, echo=True)
        except ProcwindowError as exc:  # it ended, or closed its terminal
            log.debug("procwindow.qt: typing into %d: %s", proc_id, exc)
            if proc_id == self._proc_id:
                self._set_open(False)
        finally:
            if self._writer is asyncio.current_task():
                self._writer = None

    @Slot()
    def paste(self) -> None:
        """Type the clipboard's text into the terminal (Ctrl+Shift+V)."""
        if isinstance(QGuiApplication.instance(), QGuiApplication):
            self.send(paste_text(QGuiApplication.clipboard().text()))

    @Slot()
    def copy(self) -> None:
        """Copy the screen's text (Ctrl+Shift+C), and say so."""
        if self._screen is None:
            return
        if isinstance(QGuiApplication.instance(), QGuiApplication):
            QGuiApplication.clipboard().setText(self._screen.text)
        self.message.emit("Screen copied", False)

    # -- size ----------------------------------------------------------------------

    @Slot(int, int)
    def setViewSize(self, rows: int, cols: int) -> None:
        """The view fits ``rows`` × ``cols``: the terminal takes that size soon
        (``RESIZE_MS`` after the last change)."""
        size = (max(1, min(MAX_SIZE, rows)), max(1, min(MAX_SIZE, cols)))
        if size == self._wanted:
            return
        self._wanted = size
        if self._is_active():
            self._resize_timer.start(RESIZE_MS)

    def _apply_size(self) -> None:
        wanted = self._wanted
        if not self._is_active() or not self._open or wanted is None or self._resizing:
            return
        if wanted == self._size:
            return
        self._resizing = True
        task = current_loop().create_task(
            self._resize(self._proc_id, wanted), name=f"procwindow.qt resize {self._proc_id}"
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _resize(self, proc_id: int, size: tuple[int, int]) -> None:
        try:
            await self._sup.resize(proc_id, *size)
        except NoTerminal:  # it ended meanwhile
            if proc_id == self._proc_id:
                self._set_open(False)
        except ProcwindowError as exc:
            log.debug("procwindow.qt: resizing %d: %s", proc_id, exc)
        else:
            if proc_id == self._proc_id:
                self._size = size
                self._feed.poke()
        finally:
            self._resizing = False
        if proc_id == self._proc_id and self._wanted != size:
            self._apply_size()  # the view changed again meanwhile
