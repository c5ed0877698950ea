"""What one row of an output pane shows, role by role: ``OutputModel.data()``.

A function of the :class:`~procwindow.qt.models._lines.LineBuffer` that holds the
line and the :class:`~procwindow.qt.models._render.LineRenderer` that draws it;
the model only says which row, and how many rows its views know of.
"""

from __future__ import annotations

from PySide6.QtCore import Qt

from procwindow.core import Stream

from .._support import empty_data
from ._lines import LineBuffer
from ._render import PLAIN_TEXT, LineRenderer
from .format import time_text
from .roles import OutputRole

__all__ = ["row_data"]


def row_data(buf: LineBuffer, render: LineRenderer, row: int, rows: int, role: int) -> object:
    """What row ``row`` (of the ``rows`` views know of) shows for ``role``."""
    pos = buf.position(row) if row < rows else -1
    if pos < 0:
        return PLAIN_TEXT if role == OutputRole.SHOWN_FORMAT else empty_data(role)
    match role:
        case OutputRole.SHOWN:
            return render.shown(buf, pos, row)[0]
        case OutputRole.SHOWN_FORMAT:
            return render.shown(buf, pos, row)[1]
        case OutputRole.STYLED:
            return render.styled_at(buf, pos, row)
        case OutputRole.IS_STDERR:
            return buf.is_stderr(pos)
        case Qt.ItemDataRole.DisplayRole | OutputRole.TEXT:
            return buf.text(pos)
        case OutputRole.SEQ:
            return buf.held(pos)[0]
        case OutputRole.STREAM:
            return Stream.STDERR.value if buf.is_stderr(pos) else Stream.STDOUT.value
        case OutputRole.TIME:
            return buf.time(pos)
        case OutputRole.TIME_TEXT:
            return time_text(buf.time(pos), millis=True)
        case OutputRole.SPLIT:
            return buf.held(pos)[4]
        case _:
            return empty_data(role)
