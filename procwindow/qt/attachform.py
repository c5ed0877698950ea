"""The Attach… dialog's form: a server to show beside the window's own processes.

The main window's Attach… (the ``+`` beside "Sessions", Ctrl+Shift+A) asks
for a server: a name or a socket path here, or
``ssh://[user@]host[:port][/NAME]``. The form hands it to the application's
``attacher`` (a coroutine function: it reaches the server, shows it as a host
of the session tree and returns its label, or raises a
:class:`~procwindow.core.ProcwindowError` whose one-line message says why not).
While it connects, ``busy`` is true; a failure leaves the dialog open with the
message under the field; success emits ``succeeded(label)`` and the dialog
closes. Without an attacher (a host application that embeds the window and
attaches nothing), ``available`` is false and the window offers no Attach….
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import shiboken6
from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtQml import QmlElement, QmlUncreatable

from procwindow.core import ProcwindowError

from ._support import current_loop, set_stored, stored_property

__all__ = ["AttachForm", "Attacher"]

QML_IMPORT_NAME = "Procwindow"
QML_IMPORT_MAJOR_VERSION = 1

log = logging.getLogger("procwindow.qt")

#: Reaches a server, shows it, and returns its label (ProcwindowError: why not).
Attacher = Callable[[str], Awaitable[str]]


@QmlElement
@QmlUncreatable("the main window's model makes its Attach dialog's form")
class AttachForm(QObject):  # type: ignore[operator]  # PySide's stub: not callable
    """The state and decisions of the Attach… dialog (see the module's docstring)."""

    errorChanged = Signal()
    busyChanged = Signal()
    availableChanged = Signal()
    openRequested = Signal()
    """The dialog should open."""
    succeeded = Signal(str, arguments=["label"])
    """The server is shown as ``label``: the dialog closes."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._attacher: Attacher | None = None
        self._error = ""
        self._busy = False
        self._available = False
        self._task: asyncio.Task[None] | None = None

    error = stored_property(str, "_error", errorChanged, writable=False)
    """Under the field: why the last attempt failed ("" while there is none)."""
    busy = stored_property(bool, "_busy", busyChanged, writable=False)
    """True while a server is being reached (OK is disabled)."""
    available = stored_property(bool, "_available", availableChanged, writable=False)
    """True when the application can attach (the window offers Attach…)."""

    def set_attacher(self, attacher: Attacher | None) -> None:
        """What reaches and shows a server (None: the window cannot attach)."""
        self._attacher = attacher
        set_stored(self, "_available", attacher is not None, AttachForm.availableChanged)

    @Slot()
    def open(self) -> None:
        """Open the dialog (nothing when the window cannot attach)."""
        if self._attacher is None:
            return
        if not self._busy:
            set_stored(self, "_error", "", AttachForm.errorChanged)
        self.openRequested.emit()

    @Slot()
    def edited(self) -> None:
        """The person edited the field: the last error goes."""
        set_stored(self, "_error", "", AttachForm.errorChanged)

    @Slot(str)
    def submit(self, target: str) -> None:
        """OK: reach ``target`` and show it."""
        target = target.strip()
        if self._busy or self._attacher is None:
            return
        if not target:
            set_stored(
                self,
                "_error",
                "name a server: NAME, a socket path, or ssh://[user@]host[:port][/NAME]",
                AttachForm.errorChanged,
            )
            return
        set_stored(self, "_busy", True, AttachForm.busyChanged)
        self._task = current_loop().create_task(
            self._attach(self._attacher, target), name=f"procwindow attach {target}"
        )

    async def wait_idle(self) -> None:
        """Wait until the attempt under way, if any, has ended."""
        if self._task is not None:
            await asyncio.wait({self._task})

    async def _attach(self, attacher: Attacher, target: str) -> None:
        label, error = "", ""
        try:
            label = await attacher(target)
        except ProcwindowError as exc:
            error = str(exc)
        except Exception as exc:
            log.exception("procwindow: attaching %s failed", target)
            error = f"cannot attach {target}: {exc}"
        if not shiboken6.isValid(self):  # the window went meanwhile
            return
        self._task = None
        set_stored(self, "_busy", False, AttachForm.busyChanged)
        set_stored(self, "_error", error, AttachForm.errorChanged)
        if not error:
            self.succeeded.emit(label)
