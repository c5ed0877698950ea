"""A sparkline for table cells: the last minute of a value as one polyline.

:class:`Sparkline` is a ``QQuickPaintedItem`` (``import Procwindow``). In the
process table it draws a row's samples straight from the model: QML sets
``source`` (the ProcModel), ``procId``, ``series`` (``"cpu"`` or ``"memory"``)
and binds ``revision`` to the row's ``samples`` role, which changes once per
sample; the item then asks ``source.sparkline(procId, series)`` for the
:class:`~procwindow.qt.sampler.Trace` polylines and paints them through a
transform. No list crosses into QML and back, and no point is made per frame.
Anything else can set ``values`` (heights 0…1, oldest first, NaN for a gap).

Newest sample at the right edge, ``capacity`` samples across, 0 at the bottom,
and a faint fill below the line unless ``fillOpacity`` is 0 (the table's cells:
the fill doubles a paint's cost). ``benchmarks/bench_sampler.py draw`` measured,
for 100 rows x 2 sparklines per tick, offscreen: this item reading the model
~2.4x the frame of a text-only row, given the values as a ``list<real>`` ~5.9x
(the list crosses into QML and back), a QML ``Shape`` ~6.3x (its points too),
a ``Canvas`` ~18x.
"""

from __future__ import annotations

from typing import Protocol

from PySide6.QtCore import Property, QObject, QPointF, Qt, Signal
from PySide6.QtGui import QColor, QPainter, QPen, QPolygonF, QTransform
from PySide6.QtQml import QmlElement
from PySide6.QtQuick import QQuickItem, QQuickPaintedItem

from .sampler import HISTORY_LENGTH, Drawing

__all__ = ["Sparkline", "SparklineSource", "drawing_of"]

QML_IMPORT_NAME = "Procwindow"
QML_IMPORT_MAJOR_VERSION = 1


class SparklineSource(Protocol):
    """What ``Sparkline.source`` answers (ProcModel does)."""

    def sparkline(self, proc_id: int, series: str) -> Drawing | None: ...


def drawing_of(values: list[float]) -> Drawing:
    """``values`` (0…1, NaN for a gap) as a :data:`Drawing`: sample numbers are indexes.

    >>> runs, last, top = drawing_of([0.5, float("nan"), 0.25, 1.0])
    >>> [[(p.x(), p.y()) for p in run.toList()] for run in runs], last, top
    ([[(0.0, 0.5)], [(2.0, 0.25), (3.0, 1.0)]], 3.0, 1.0)
    """
    runs: list[QPolygonF] = []
    run: list[QPointF] = []
    for i, value in enumerate(values):
        if value != value:  # NaN: a gap
            if run:
                runs.append(QPolygonF(run))
                run = []
            continue
        run.append(QPointF(i, value))
    if run:
        runs.append(QPolygonF(run))
    return runs, float(len(values) - 1), 1.0


@QmlElement
class Sparkline(QQuickPaintedItem):
    """A cell's last values as a line, newest at the right (see the module).

    ``capacity`` is how many samples fit across (60: a minute); ``color`` draws
    the line (``lineWidth`` px) and, at ``fillOpacity``, the area below it.
    """

    sourceChanged = Signal()
    valuesChanged = Signal()
    capacityChanged = Signal()
    colorChanged = Signal()
    lineWidthChanged = Signal()
    fillOpacityChanged = Signal()
    lonePointsChanged = Signal()

    def __init__(self, parent: QQuickItem | None = None) -> None:
        super().__init__(parent)
        self._source: QObject | None = None
        self._proc_id = -1
        self._series = ""
        self._revision = 0
        self._values: list[float] = []
        self._drawn: Drawing | None = None  # made from `values`
        self._capacity = HISTORY_LENGTH
        self._color = QColor("#3574f0")
        self._line_width = 1.0
        self._fill_opacity = 0.2
        self._lone_points = True
        self.setAntialiasing(True)

    # -- what it draws -----------------------------------------------------------------

    def _get_source(self) -> QObject | None:
        return self._source

    def _set_source(self, source: QObject | None) -> None:
        if source is not self._source:
            self._source = source
            self.sourceChanged.emit()
            self.update()

    def _get_proc_id(self) -> int:
        return self._proc_id

    def _set_proc_id(self, proc_id: int) -> None:
        if proc_id != self._proc_id:
            self._proc_id = proc_id
            self.sourceChanged.emit()
            self.update()

    def _get_series(self) -> str:
        return self._series

    def _set_series(self, series: str) -> None:
        if series != self._series:
            self._series = series
            self.sourceChanged.emit()
            self.update()

    def _get_revision(self) -> int:
        return self._revision

    def _set_revision(self, revision: int) -> None:
        if revision != self._revision:
            self._revision = revision
            self.sourceChanged.emit()
            self.update()

    def _get_values(self) -> list[float]:
        return self._values

    def _set_values(self, values: list[float]) -> None:
        self._values = list(values)
        self._drawn = None
        self.valuesChanged.emit()
        self.update()

    source = Property(QObject, _get_source, _set_source, notify=sourceChanged)
    """The model to draw from (it has ``sparkline(procId, series)``), or null."""
    procId = Property(int, _get_proc_id, _set_proc_id, notify=sourceChanged)
    series = Property(str, _get_series, _set_series, notify=sourceChanged)
    """Which of the row's series: ``"cpu"`` or ``"memory"``."""
    revision = Property(int, _get_revision, _set_revision, notify=sourceChanged)
    """Changes when the source has a new sample (the row's ``samples`` role)."""
    values = Property(list, _get_values, _set_values, notify=valuesChanged)
    """Without a source: heights 0…1, oldest first; NaN breaks the line."""

    # -- how it looks --------------------------------------------------------------------

    def _get_capacity(self) -> int:
        return self._capacity

    def _set_capacity(self, capacity: int) -> None:
        if capacity != self._capacity:
            self._capacity = max(capacity, 2)
            self.capacityChanged.emit()
            self.update()

    def _get_color(self) -> QColor:
        return self._color

    def _set_color(self, color: QColor) -> None:
        if color != self._color:
            self._color = QColor(color)
            self.colorChanged.emit()
            self.update()

    def _get_line_width(self) -> float:
        return self._line_width

    def _set_line_width(self, width: float) -> None:
        if width != self._line_width:
            self._line_width = width
            self.lineWidthChanged.emit()
            self.update()

    def _get_fill_opacity(self) -> float:
        return self._fill_opacity

    def _set_fill_opacity(self, opacity: float) -> None:
        if opacity != self._fill_opacity:
            self._fill_opacity = opacity
            self.fillOpacityChanged.emit()
            self.update()

    def _get_lone_points(self) -> bool:
        return self._lone_points

    def _set_lone_points(self, lone: bool) -> None:
        if lone != self._lone_points:
            self._lone_points = lone
            self.lonePointsChanged.emit()
            self.update()

    capacity = Property(int, _get_capacity, _set_capacity, notify=capacityChanged)
    """How many samples fit across the width."""
    color = Property(QColor, _get_color, _set_color, notify=colorChanged)
    lineWidth = Property(float, _get_line_width, _set_line_width, notify=lineWidthChanged)
    fillOpacity = Property(float, _get_fill_opacity, _set_fill_opacity, notify=fillOpacityChanged)
    lonePoints = Property(bool, _get_lone_points, _set_lone_points, notify=lonePointsChanged)
    """Draw a sample with no neighbour as a dot (off: only lines are drawn)."""

    # -- painting ------------------------------------------------------------------------

    def drawing(self) -> Drawing | None:
        """What the item draws now (from ``source``, else from ``values``)."""
        source = self._source
        if source is not None:
            get = getattr(source, "sparkline", None)
            return get(self._proc_id, self._series) if get is not None else None
        if self._drawn is None and self._values:
            self._drawn = drawing_of(self._values)
        return self._drawn

    def paint(self, painter: QPainter) -> None:
        drawn = self.drawing()
        if drawn is None or not drawn[0] or drawn[2] <= 0:
            return
        runs, last, top = drawn
        half = self._line_width / 2
        sx = (self.width() - self._line_width) / (self._capacity - 1)
        sy = (self.height() - self._line_width) / top
        # Sample number `last` at the right edge, value 0 at the bottom, `top` at the top.
        painter.setTransform(
            QTransform(sx, 0, 0, -sy, half - (last - self._capacity + 1) * sx, half + top * sy)
        )
        if self._fill_opacity > 0:
            # Without antialiasing: half the cost of the fill, and a faint area shows no steps.
            fill = QColor(self._color)
            fill.setAlphaF(fill.alphaF() * self._fill_opacity)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(fill)
            for run in runs:
                area = QPolygonF(run)
                area.append(QPointF(run.last().x(), 0.0))
                area.append(QPointF(run.first().x(), 0.0))
                painter.drawPolygon(area)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        pen = QPen(self._color, self._line_width)
        pen.setCosmetic(True)  # the transform scales the points, not the line
        pen.setCapStyle(Qt.PenCapStyle.RoundCap)
        pen.setJoinStyle(Qt.PenJoinStyle.RoundJoin)
        painter.setPen(pen)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        for run in runs:
            if run.size() > 1:
                painter.drawPolyline(run)
            elif self._lone_points:
                painter.drawPoint(run.first())
