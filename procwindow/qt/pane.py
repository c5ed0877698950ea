"""The output pane's two helpers: going from match to match, and the stdin line.

A :class:`~procwindow.qt.ProcWindowModel` makes one of each and exposes them as
``find`` and ``input``; the pane's QML binds to them. Neither draws anything:
the OutputModel marks the matches, the pane centres its view on a row.

:class:`OutputFind`
    Enter / Shift+Enter (and F3 / Shift+F3) in a filtered pane: the next or
    previous matching line becomes the current match (wrapping), and the view
    is asked to centre it.
:class:`InputLine`
    What a person types under the output of a proc spawned with ``stdin=True``
    goes to its stdin; Ctrl+D closes it.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtQml import QmlElement, QmlUncreatable

from ._support import set_stored, stored_property
from .controller import ProcController
from .models import OutputModel, ProcModel

__all__ = ["InputLine", "OutputFind"]

QML_IMPORT_NAME = "Procwindow"
QML_IMPORT_MAJOR_VERSION = 1


@QmlElement
@QmlUncreatable("a ProcWindowModel makes its pane's find")
class OutputFind(QObject):  # type: ignore[operator]  # PySide's stub: not callable
    """Moving between the matches of the output pane's filter.

    While a filter is set, the pane shows only the lines that match, so a match
    is a row: :meth:`next` makes the row after ``outputModel.currentMatch`` the
    current match, :meth:`previous` the row before it, each wrapping around.
    With no current match, ``next`` goes to the first (oldest) matching line
    and ``previous`` to the last (newest). Each move emits ``revealRow(row)``:
    the view centres that row (and the window stops following the tail). The
    current match is the OutputModel's (it keeps it on its line as old lines
    go); ``"3 of 120"`` is the window model's ``matchText``. Without a filter
    (or before the first match is found) they do nothing.
    """

    revealRow = Signal(int, arguments=["row"])
    """The view should centre row ``row``: it is the current match now."""

    def __init__(self, output_model: OutputModel, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._output = output_model

    def _move(self, step: int) -> None:
        out = self._output
        count = out.rowCount()
        if not out.marking or count == 0:
            return
        current = out.currentMatch
        first = 0 if step > 0 else count - 1  # from no current match: the first either way
        row = first if current < 0 else (current + step) % count
        out.currentMatch = row
        self.revealRow.emit(row)

    @Slot()
    def next(self) -> None:
        """Go to the next match (Enter, F3), from the last back to the first."""
        self._move(1)

    @Slot()
    def previous(self) -> None:
        """Go to the previous match (Shift+Enter, Shift+F3), from the first to the last."""
        self._move(-1)


@QmlElement
@QmlUncreatable("a ProcWindowModel makes its pane's input line")
class InputLine(QObject):  # type: ignore[operator]  # PySide's stub: not callable
    """The line under the output that writes to the streaming proc's stdin.

    ``available`` is true while the proc whose output shows runs, was spawned
    with ``stdin=True``, and its stdin was neither closed from here
    (:meth:`closeStdin`) nor found closed (a write that failed: the proc
    closed it, or ended). :meth:`send` writes a line, :meth:`closeStdin`
    closes stdin (the proc reads end of file) after the writes under way.
    Both go through the :class:`~procwindow.qt.ProcController` (``write``,
    ``closeStdin``), on the loop, so the window never waits for a full pipe;
    a failure comes as its ``actionFailed``, which the window shows.
    """

    availableChanged = Signal()

    def __init__(
        self,
        output_model: OutputModel,
        proc_model: ProcModel,
        controller: ProcController,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._output = output_model
        self._controller = controller
        self._available = False
        self._closed: set[int] = set()  # procs whose stdin we closed or found closed
        output_model.procIdChanged.connect(self._update)
        # A proc's state changes with its row (dataChanged), or its row goes.
        for signal in (
            proc_model.dataChanged,
            proc_model.rowsRemoved,
            proc_model.rowsInserted,
            proc_model.modelReset,
        ):
            signal.connect(self._update)
        controller.actionFailed.connect(self._on_failed)
        self._update()

    available = stored_property(bool, "_available", availableChanged, writable=False)
    """True while :meth:`send` can write to the streaming proc's stdin."""

    def _update(self) -> None:
        proc = self._output.proc()
        open_ = (
            proc is not None
            and proc.live
            and proc.running
            and proc.options.stdin
            and proc.id not in self._closed
        )
        set_stored(self, "_available", open_, InputLine.availableChanged)

    def _on_failed(self, proc_id: int, action: str, _message: str) -> None:
        # Every way a write fails means no more input gets through (StdinClosed:
        # closed, or a broken pipe; ProcNotFound): the line goes.
        if action in ("write", "closeStdin"):
            self._closed.add(proc_id)
            self._update()

    @Slot(str)
    def send(self, text: str) -> None:
        """Write ``text`` and a newline to the proc's stdin (as Enter in a terminal)."""
        if self._available:
            self._controller.write(self._output.procId, text + "\n")

    @Slot()
    def closeStdin(self) -> None:
        """Close the proc's stdin once the lines sent are written (Ctrl+D)."""
        if self._available:
            proc_id = self._output.procId
            self._closed.add(proc_id)
            self._controller.closeStdin(proc_id)
            self._update()
