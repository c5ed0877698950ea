"""The process table's layout: its column widths, the ones a person dragged, its colours.

:class:`ProcTableStyle`
    What each ProcTable (``qml/Procwindow/Ui/ProcTable.qml``) makes one of: the
    width of each column for the width of its view, the widths set by dragging a
    header's edge, and the colours its statuses are drawn in.
:func:`column_widths`, :func:`minimum_table_width`
    The same layout as plain functions (what the table fits in, tested without a window).

Fixed columns keep their width (``pid``, ``status``, ``runtime``, ``actions``);
the command column (``tool``) takes what is left, and the Agent, CPU and Mem
columns give their spare room up as the view narrows. A column a person widened
keeps its width until the view is narrower than the sum; then the command
shrinks first, and the widened columns give their extra room back (the one
resized longest ago first). The actions are never squeezed, a status never
elides, and every table fits in :func:`minimum_table_width`.

Narrower than that, columns go (:func:`fitting_columns`): Mem, CPU, PID, Runtime,
then Agent, until the rest fit; ID, the command, Status and the actions stay,
whole. A person hides and shows columns by hand too (all but the command and the
actions), and a table of a kind of window remembers what was hidden, dragged and
sorted (:mod:`~procwindow.qt.table_settings`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtGui import QColor, QFont, QFontMetricsF
from PySide6.QtQml import QmlElement

from ._support import qt_property, stored_property
from .models import ProcModel, status_tint
from .models.columns import COLUMN_TITLES
from .models.format import status_texts
from .table_settings import load_table, save_table

__all__ = [
    "AGENT_WIDTH",
    "COLUMN_WIDTHS",
    "COMFORTABLE_FLEXIBLE_WIDTH",
    "DEFAULT_STATUS_WIDTH",
    "ELASTIC_WIDTHS",
    "HIDE_ORDER",
    "KEPT_COLUMNS",
    "MIN_COLUMN_WIDTHS",
    "MIN_FLEXIBLE_WIDTH",
    "ProcTableStyle",
    "column_widths",
    "fitting_columns",
    "minimum_table_width",
    "status_tint",
    "widest_status",
    "widest_text",
]

QML_IMPORT_NAME = "Procwindow"
QML_IMPORT_MAJOR_VERSION = 1

#: Widths of the process table's fixed columns (px). ``status`` is measured (the
#: widest status text, see :class:`ProcTableStyle`); ``actions`` is the table's to say.
COLUMN_WIDTHS = {"id": 56, "pid": 72, "runtime": 88}
#: The Status column's width until a font has been measured.
DEFAULT_STATUS_WIDTH = 200.0
#: The width of the columns that give way as the view narrows, and the narrowest
#: each gets: an agent name elides; a CPU or Mem value fits at the narrowest, over
#: a shorter sparkline. They give their room up last first (Mem, CPU, then Agent).
ELASTIC_WIDTHS = {"agent": (104.0, 72.0), "cpu": (96.0, 64.0), "memory": (104.0, 72.0)}
#: The Agent column's width, and the narrowest it gets.
AGENT_WIDTH = ELASTIC_WIDTHS["agent"]
#: The command column (``tool``) shrinks to this width before the Agent, CPU and Mem
#: columns give up their spare room.
COMFORTABLE_FLEXIBLE_WIDTH = 160.0
#: The narrowest the other columns (``tool``) get; they share what is left. Below
#: the table's minimum width (:func:`minimum_table_width`) the view scrolls sideways;
#: the windows never get that narrow: their minimum width fits every column.
MIN_FLEXIBLE_WIDTH = 100.0
#: The narrowest a person can drag each column (``status``: its measured width,
#: so that no status elides; ``actions`` does not resize).
MIN_COLUMN_WIDTHS = {
    "id": 36,
    "pid": 44,
    "agent": 48,
    "tool": 60,
    "runtime": 56,
    "cpu": 44,
    "memory": 48,
}
#: Columns a person cannot resize.
FIXED_COLUMNS = frozenset({"actions"})
#: Columns of numbers, aligned right (their headers too).
NUMERIC_COLUMNS = frozenset({"runtime", "cpu", "memory"})
#: The columns that go when the view is too narrow for them all, the first to go
#: first: the live numbers (a glance at a row reads them least), the kernel's pid
#: (procwindow's id names the process too), the runtime, then the agent. What
#: stays names a row, says how it is, and acts on it.
HIDE_ORDER = ("memory", "cpu", "pid", "runtime", "agent")
#: The columns a person cannot hide: the command names the row, the actions act on it.
KEPT_COLUMNS = frozenset({"tool", "actions"})
#: Each column's header, by its name.
_TITLES: dict[str, str] = {column.value: title for column, title in COLUMN_TITLES.items()}


def _fixed_widths(status_width: float, actions_width: float) -> dict[str, float]:
    return {**COLUMN_WIDTHS, "status": status_width, "actions": actions_width}


def _narrowest(name: str, status_width: float) -> float:
    """The narrowest a person can drag column ``name``."""
    return status_width if name == "status" else float(MIN_COLUMN_WIDTHS.get(name, 24))


def _floor(name: str, status_width: float, actions_width: float) -> float:
    """How far a widened column gives its room back when the view is too narrow."""
    if name == "tool":
        return MIN_FLEXIBLE_WIDTH
    if name in ELASTIC_WIDTHS:
        return ELASTIC_WIDTHS[name][1]
    return _fixed_widths(status_width, actions_width).get(name, MIN_FLEXIBLE_WIDTH)


def column_widths(
    names: list[str],
    width: float,
    actions_width: float,
    status_width: float = DEFAULT_STATUS_WIDTH,
    user: Mapping[str, float] | None = None,
) -> list[float]:
    """The process table's column widths for a view ``width`` px wide.

    Fixed columns take :data:`COLUMN_WIDTHS` (``status`` takes ``status_width``,
    ``actions`` takes ``actions_width``): they never shrink, so a status is never
    cut and the actions never leave the view. The command column (``tool``) takes
    what is left. As the view narrows, the command shrinks to
    :data:`COMFORTABLE_FLEXIBLE_WIDTH`, then the Mem, CPU and Agent columns to
    their narrowest (:data:`ELASTIC_WIDTHS`), then the command to
    :data:`MIN_FLEXIBLE_WIDTH`.

    ``user`` holds the widths a person dragged columns to (oldest first; each at
    least :data:`MIN_COLUMN_WIDTHS`): they replace the automatic ones. If the
    view is narrower than the sum, the command column shrinks first, then the
    columns set wider than their automatic width give that room back, the one
    set longest ago first; below :func:`minimum_table_width` the view scrolls.

    >>> column_widths(["id", "pid", "tool", "status", "runtime", "actions"], 1000, 154, 200)
    [56.0, 72.0, 430.0, 200.0, 88.0, 154.0]
    >>> column_widths(["id", "pid", "agent", "tool", "status", "runtime"], 604, 0, 200)
    [56.0, 72.0, 72.0, 116.0, 200.0, 88.0]
    >>> column_widths(["id", "pid", "tool", "status", "runtime"], 672, 0, 200, {"id": 150})
    [150.0, 72.0, 162.0, 200.0, 88.0]
    >>> column_widths(["id", "pid", "tool", "status", "runtime"], 516, 0, 200, {"id": 150})
    [56.0, 72.0, 100.0, 200.0, 88.0]
    >>> column_widths(["id", "pid", "tool", "status", "cpu", "memory"], 692, 0, 200)
    [56.0, 72.0, 164.0, 200.0, 96.0, 104.0]
    """
    set_by_hand = {
        name: max(float(w), _narrowest(name, status_width))
        for name, w in (user or {}).items()
        if name in names and name not in FIXED_COLUMNS
    }
    widths = {**_fixed_widths(status_width, actions_width), **set_by_hand}
    elastic = [name for name in ELASTIC_WIDTHS if name in names and name not in widths]
    for name in elastic:
        widths[name] = ELASTIC_WIDTHS[name][1]
    rest = width - sum(widths.get(name, 0.0) for name in names)
    flexible = [name for name in names if name not in widths]
    # What the command has beyond a comfortable width goes to the elastic columns.
    spare = rest - COMFORTABLE_FLEXIBLE_WIDTH * len(flexible)
    for name in elastic:
        preferred, narrowest = ELASTIC_WIDTHS[name]
        grow = min(preferred - narrowest, max(spare, 0.0))
        widths[name] += grow
        spare -= grow
        rest -= grow
    share = max(MIN_FLEXIBLE_WIDTH, rest / max(len(flexible), 1))
    for name in flexible:
        widths[name] = share
    excess = sum(widths[name] for name in names) - width
    # The command first, then the others, least recently set first.
    for name in sorted(set_by_hand, key=lambda n: n != "tool"):
        if excess <= 0:
            break
        give = min(excess, widths[name] - _floor(name, status_width, actions_width))
        if give > 0:
            widths[name] -= give
            excess -= give
    return [float(widths[name]) for name in names]


def minimum_table_width(names: list[str], actions_width: float, status_width: float) -> float:
    """The narrowest view in which every column of ``names`` fits (see :func:`column_widths`).

    >>> minimum_table_width(
    ...     ["id", "pid", "agent", "tool", "status", "runtime", "actions"], 154, 200
    ... )
    742.0
    """
    return float(sum(_floor(name, status_width, actions_width) for name in names))


def fitting_columns(
    names: list[str],
    width: float,
    actions_width: float,
    status_width: float,
    hidden: frozenset[str] | set[str] = frozenset(),
) -> list[str]:
    """The columns of ``names`` a view ``width`` px wide shows: those not ``hidden``
    (by a person; never one of :data:`KEPT_COLUMNS`), less those of
    :data:`HIDE_ORDER` that do not fit, the first to go first. The rest fit in
    ``width`` (see :func:`minimum_table_width`), or nothing more can go.

    >>> names = ["id", "pid", "agent", "tool", "status", "runtime", "cpu", "memory", "actions"]
    >>> fitting_columns(names, 700, 154, 200)
    ['id', 'agent', 'tool', 'status', 'runtime', 'actions']
    >>> fitting_columns(names, 700, 154, 200, {"runtime", "tool"})
    ['id', 'pid', 'agent', 'tool', 'status', 'actions']
    """
    shown = [name for name in names if name not in hidden or name in KEPT_COLUMNS]
    for name in HIDE_ORDER:
        if minimum_table_width(shown, actions_width, status_width) <= width:
            break
        if name in shown:
            shown.remove(name)
    return shown


def widest_text(font: QFont, texts: frozenset[str]) -> float:
    """The advance (px) of the widest of ``texts`` drawn in ``font``."""
    metrics = QFontMetricsF(font)
    return max((metrics.horizontalAdvance(text) for text in texts), default=0.0)


_widest_status: dict[str, float] = {}  # font key -> widest status text (px)


def widest_status(font: QFont) -> float:
    """The advance (px) of the widest status text in ``font`` (measured once per font)."""
    key = font.key()
    width = _widest_status.get(key)
    if width is None:
        width = _widest_status[key] = widest_text(font, status_texts())
    return width


@QmlElement
class ProcTableStyle(QObject):
    """How a ProcTable is drawn: its column widths, and the colours of its statuses.

    QML makes one per table and binds ``columnNames``, ``viewWidth``,
    ``actionsWidth``, and the font (``statusFontFamily``, ``statusFontSize`` in
    pixels) and ``statusPadding`` of its Status cells; ``columnWidths`` and
    ``minimumWidth`` follow (see :func:`column_widths`). The Status column is as
    wide as the widest text a status can have
    (:func:`~procwindow.qt.models.format.status_texts`) in that font, plus
    ``statusPadding``: every status reads in full, whatever the width of the view.

    **Resizing.** A drag on a header's right edge calls ``beginResize(column, x)``,
    ``resizeTo(x)`` as the pointer moves (``x`` in any coordinates that do not
    scroll with the header) and ``endResize()``; the column keeps the width it
    was dragged to (at least its :data:`MIN_COLUMN_WIDTHS`, at most what the view
    has room for while the others keep their automatic widths) as the view
    changes, until ``resetColumn(column)`` (a double click on the edge) gives it
    its automatic width back. ``resizable(name)`` says which columns can be dragged.

    **Hiding.** ``setColumnShown(name, shown)`` hides a column by hand, or shows it
    again (``hiddenColumns``; ``hideable(name)`` says which can go). A view too
    narrow for the rest drops more (``autoHiddenColumns``, see
    :func:`fitting_columns`); a hidden column is 0 px wide (a TableView does not
    lay it out). ``narrowestWidth`` is as narrow as the table gets so.

    **Remembering.** With a ``settingsKey`` (the kind of window), the hidden columns,
    the dragged widths and the sort the person chose (``rememberSort(column,
    descending)``; read back as ``savedSortColumn``, ``savedSortDescending``) are
    kept across restarts (:mod:`~procwindow.qt.table_settings`).
    """

    columnNamesChanged = Signal()
    viewWidthChanged = Signal()
    actionsWidthChanged = Signal()
    statusFontChanged = Signal()
    statusPaddingChanged = Signal()
    columnWidthsChanged = Signal()
    resizingChanged = Signal()
    hiddenColumnsChanged = Signal()
    settingsKeyChanged = Signal()
    savedSortChanged = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._column_names: list[str] = []
        self._view_width = 0.0
        self._actions_width = 0.0
        self._status_family = ""
        self._status_size = 0
        self._status_padding = 0.0
        self._status_width = DEFAULT_STATUS_WIDTH
        self._minimum_width = 0.0
        self._column_widths: list[float] = []
        self._tints: dict[int, QColor] = {}
        # Widths set by dragging, by column name, the most recent last.
        self._user: dict[str, float] = {}
        self._drag: tuple[str, float, float] | None = None  # column, its width, pointer x
        self._resizing = ""
        self._hidden: list[str] = []  # by the person
        self._auto_hidden: list[str] = []  # for lack of room
        self._narrowest = 0.0
        self._settings_key = ""
        self._saved_sort: tuple[str, bool] = ("", False)

    def _relayout(self) -> None:
        font = QFont(self._status_family) if self._status_family else QFont()
        if self._status_size > 0:
            font.setPixelSize(self._status_size)
        # A pixel to spare: a text laid out in a QML Text can round up.
        status = math.ceil(widest_status(font)) + 1.0 + self._status_padding
        names, actions = self._column_names, self._actions_width
        # As narrow as a session's table (an Agent column more): a window keeps its
        # minimum width when it follows the scope from a session to one of its agents.
        widest = names if not names or "agent" in names else [*names, "agent"]
        shown = fitting_columns(names, self._view_width, actions, status, set(self._hidden))
        widths = column_widths(shown, self._view_width, actions, status, self._user)
        by_name = dict(zip(shown, widths, strict=True))
        kept = [name for name in widest if name not in HIDE_ORDER]
        layout = (
            [by_name.get(name, 0.0) for name in names],
            status,
            minimum_table_width(widest, actions, status),
            minimum_table_width(kept, actions, status),
            [name for name in names if name not in shown and name not in self._hidden],
        )
        now = (
            self._column_widths,
            self._status_width,
            self._minimum_width,
            self._narrowest,
            self._auto_hidden,
        )
        if layout != now:
            (
                self._column_widths,
                self._status_width,
                self._minimum_width,
                self._narrowest,
                self._auto_hidden,
            ) = layout
            self.columnWidthsChanged.emit()

    columnNames = stored_property(list, "_column_names", columnNamesChanged, on_change=_relayout)
    """The table's column keys (``ProcModel.columnNames``)."""
    viewWidth = stored_property(float, "_view_width", viewWidthChanged, on_change=_relayout)
    """The width the columns share."""
    actionsWidth = stored_property(
        float, "_actions_width", actionsWidthChanged, on_change=_relayout
    )
    """The width of the ``actions`` column (0 when the table shows no actions)."""
    statusFontFamily = stored_property(
        str, "_status_family", statusFontChanged, on_change=_relayout
    )
    """The font family of a Status cell's text ("" for the application's)."""
    statusFontSize = stored_property(int, "_status_size", statusFontChanged, on_change=_relayout)
    """The pixel size of a Status cell's text (0 for the application font's size)."""
    statusPadding = stored_property(
        float, "_status_padding", statusPaddingChanged, on_change=_relayout
    )
    """The room a Status cell takes beside its text (margins, the coloured dot)."""
    columnWidths = stored_property(list, "_column_widths", columnWidthsChanged, writable=False)
    """The width of each column, in order."""
    statusWidth = stored_property(float, "_status_width", columnWidthsChanged, writable=False)
    """The width of the Status column."""
    minimumWidth = stored_property(float, "_minimum_width", columnWidthsChanged, writable=False)
    """The narrowest view in which every column fits (see :func:`minimum_table_width`),
    with an Agent column counted in: the same for a session's table as for an agent's."""
    resizing = stored_property(str, "_resizing", resizingChanged, writable=False)
    """The column being dragged ("" for none)."""
    narrowestWidth = stored_property(float, "_narrowest", columnWidthsChanged, writable=False)
    """The narrowest the table gets: every column of :data:`HIDE_ORDER` hidden, the
    rest at their narrowest (the window's minimum width follows it)."""
    hiddenColumns = stored_property(list, "_hidden", hiddenColumnsChanged, writable=False)
    """The columns the person hid (``setColumnShown``), whether the table has them or not."""
    autoHiddenColumns = stored_property(list, "_auto_hidden", columnWidthsChanged, writable=False)
    """The columns of ``columnNames`` hidden for lack of room (see :func:`fitting_columns`)."""
    savedSortColumn = qt_property(str, lambda self: self._saved_sort[0], notify=savedSortChanged)
    """The column the person last sorted a table of this kind by ("" for none)."""
    savedSortDescending = qt_property(
        bool, lambda self: self._saved_sort[1], notify=savedSortChanged
    )
    """Whether that sort was descending."""

    def _get_settings_key(self) -> str:
        return self._settings_key

    def _set_settings_key(self, key: str) -> None:
        """Show the table as tables of kind ``key`` were left ("": remember nothing)."""
        if key == self._settings_key:
            return
        self._settings_key = key
        if key:
            memory = load_table(key)
            self._hidden = [name for name in memory.hidden if name not in KEPT_COLUMNS]
            self._user = {n: w for n, w in memory.widths.items() if n not in FIXED_COLUMNS}
            self._saved_sort = (memory.sort_column, memory.sort_descending)
            self.hiddenColumnsChanged.emit()
            self.savedSortChanged.emit()
            self._relayout()
        self.settingsKeyChanged.emit()

    settingsKey = qt_property(str, _get_settings_key, _set_settings_key, notify=settingsKeyChanged)
    """The kind of window the table is in (``"overview"``, ``"procWindow"``): what a
    person chose is remembered for the next table of the kind ("": not remembered)."""

    def _save(
        self,
        *,
        hidden: list[str] | None = None,
        widths: dict[str, float] | None = None,
        sort: tuple[str, bool] | None = None,
    ) -> None:
        if self._settings_key:
            save_table(self._settings_key, hidden=hidden, widths=widths, sort=sort)

    @Slot(str, result=str)
    def columnTitle(self, name: str) -> str:
        """Column ``name``'s header ("" for no column)."""
        return _TITLES.get(name, "")

    @Slot(str, result=bool)
    def hideable(self, name: str) -> bool:
        """Whether a person can hide column ``name`` (all but the command and the actions)."""
        return name not in KEPT_COLUMNS

    @Slot(str, bool)
    def setColumnShown(self, name: str, shown: bool) -> None:
        """Show column ``name`` (if it fits), or hide it, by hand; remembered."""
        if not self.hideable(name) or (name not in self._hidden) == shown:
            return
        if shown:
            self._hidden.remove(name)
        else:
            self._hidden.append(name)
        self.hiddenColumnsChanged.emit()
        self._relayout()
        self._save(hidden=self._hidden)

    @Slot()
    def showAllColumns(self) -> None:
        """Show every column hidden by hand (those that fit); remembered."""
        if self._hidden:
            self._hidden.clear()
            self.hiddenColumnsChanged.emit()
            self._relayout()
            self._save(hidden=self._hidden)

    @Slot(QObject, str)
    def cycleSort(self, model: QObject, column: str) -> None:
        """A click on ``column``'s header of ``model`` (a ProcModel): its next sort
        (:meth:`ProcModel.cycleSort`), remembered."""
        if isinstance(model, ProcModel):
            model.cycleSort(column)
            self.rememberSort(model.sortColumn, model.sortDescending)

    @Slot(QObject)
    def restoreSort(self, model: QObject) -> None:
        """Sort ``model`` (a ProcModel) as the person left a table of this kind."""
        if isinstance(model, ProcModel) and self._saved_sort[0]:
            model.sortBy(*self._saved_sort)

    @Slot(str, bool)
    def rememberSort(self, column: str, descending: bool) -> None:
        """The person sorted by ``column`` ("" for the default order): remembered."""
        if (column, descending) != self._saved_sort:
            self._saved_sort = (column, descending)
            self.savedSortChanged.emit()
            self._save(sort=self._saved_sort)

    @Slot(QColor, result=QColor)
    def statusColor(self, base: QColor) -> QColor:
        """The colour a status is drawn in: ``base`` (the row's ``statusColor``) tinted."""
        key = base.rgba()
        tint = self._tints.get(key)
        if tint is None:
            tint = self._tints[key] = status_tint(base)
        return tint

    # -- resizing ----------------------------------------------------------------------

    def _name(self, column: int) -> str:
        return self._column_names[column] if 0 <= column < len(self._column_names) else ""

    def _width(self, name: str) -> float:
        return self._column_widths[self._column_names.index(name)]

    @Slot(str, result=bool)
    def alignRight(self, name: str) -> bool:
        """Whether column ``name`` holds numbers (aligned right, as its header)."""
        return name in NUMERIC_COLUMNS

    @Slot(str, result=bool)
    def resizable(self, name: str) -> bool:
        """Whether a person can drag column ``name``'s edge (all but the actions)."""
        return name in self._column_names and name not in FIXED_COLUMNS

    @Slot(int, float)
    def beginResize(self, column: int, x: float) -> None:
        """The pointer pressed column ``column``'s right edge at ``x``."""
        name = self._name(column)
        if not self.resizable(name) or len(self._column_widths) != len(self._column_names):
            return
        self._drag = (name, self._width(name), x)
        self._resizing = name
        self.resizingChanged.emit()

    @Slot(float)
    def resizeTo(self, x: float) -> None:
        """The pointer, still pressed, is at ``x``: the column's edge follows it."""
        if self._drag is None:
            return
        name, start, start_x = self._drag
        self._user.pop(name, None)
        self._user[name] = start + x - start_x
        self._relayout()
        # Remember what the view had room for, not what was asked.
        self._user[name] = self._width(name)

    @Slot()
    def endResize(self) -> None:
        """The pointer let go."""
        if self._drag is not None:
            self._drag = None
            self._resizing = ""
            self.resizingChanged.emit()
            self._save(widths=self._user)

    @Slot(int)
    def resetColumn(self, column: int) -> None:
        """Give column ``column`` its automatic width back."""
        if self._user.pop(self._name(column), None) is not None:
            self._relayout()
            self._save(widths=self._user)

    @Slot()
    def resetColumns(self) -> None:
        """Give every column its automatic width back."""
        if self._user:
            self._user.clear()
            self._relayout()
            self._save(widths=self._user)
