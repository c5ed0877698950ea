"""ProcTreeModel: the processes one proc is made of, parents first (a ProcWindow's
*Processes* panel).

It lists what :meth:`SupervisorAPI.tree` lists (the proc's own process and
every live descendant, those that left it with ``setsid`` included), read
again every second while ``active``; a row that stays keeps its place. Its
CPU and memory come from the sample the proc's row and its output pane show,
so the panel's figures add up to theirs. A signal to one of its processes goes
through the controller (``ProcController.sendSignal``), which the supervisor
checks against the tree.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from dataclasses import dataclass

import shiboken6
from PySide6.QtCore import (
    Property,
    QAbstractListModel,
    QByteArray,
    QObject,
    Qt,
    QTimer,
    Signal,
    Slot,
)
from PySide6.QtQml import QmlElement

from procwindow.core import ProcwindowError, SupervisorAPI, TreeProcess, escape_controls

from .._support import (
    current_loop,
    empty_data,
    format_bytes,
    plural,
    qt_property,
    resolve_supervisor,
    stored_property,
)
from ._keyed import sync_rows
from .roles import DISPLAY, ROOT, ModelIndex, role_names

__all__ = ["TREE_POLL_MS", "ProcTreeModel", "TreeRole"]

QML_IMPORT_NAME = "Procwindow"
QML_IMPORT_MAJOR_VERSION = 1

log = logging.getLogger("procwindow.qt")

#: How often the tree is read again while shown (ms): the stats' own pace.
TREE_POLL_MS = 1000
#: After a signal, the tree is read again this soon (ms), to show its effect.
AFTER_SIGNAL_MS = 150
#: The signals the panel's menu offers, by the names the supervisor takes.
SIGNALS = ("TERM", "KILL", "INT", "HUP", "STOP", "CONT")


class TreeRole(enum.IntEnum):
    """ProcTreeModel roles (QML names in :data:`_ROLE_NAMES`)."""

    OS_PID = int(Qt.ItemDataRole.UserRole) + 1
    PPID = enum.auto()
    DEPTH = enum.auto()
    STATE_TEXT = enum.auto()
    COMMAND = enum.auto()
    CPU = enum.auto()
    CPU_TEXT = enum.auto()
    MEM_TEXT = enum.auto()
    THREADS = enum.auto()
    LEADER = enum.auto()
    STOPPED = enum.auto()


_ROLE_NAMES = role_names(TreeRole, tooltip=True)


@dataclass(frozen=True, slots=True)
class _Row:
    member: TreeProcess

    def value(self, role: int) -> object:
        m = self.member
        match role:
            case TreeRole.OS_PID:
                return m.os_pid
            case TreeRole.PPID:
                return m.ppid
            case TreeRole.DEPTH:
                return m.depth
            case TreeRole.STATE_TEXT:
                return m.state
            case Qt.ItemDataRole.DisplayRole | TreeRole.COMMAND:
                return escape_controls(m.command)
            case TreeRole.CPU:
                return m.cpu_percent
            case TreeRole.CPU_TEXT:
                return f"{m.cpu_percent:.1f} %"
            case TreeRole.MEM_TEXT:
                return format_bytes(m.rss)
            case TreeRole.THREADS:
                return m.threads
            case TreeRole.LEADER:
                return m.depth == 0
            case TreeRole.STOPPED:
                return m.state in ("stopped", "tracing-stop")
            case Qt.ItemDataRole.ToolTipRole:
                return (
                    f"{escape_controls(m.command)}\npid {m.os_pid}  ·  parent {m.ppid}"
                    f"  ·  {m.state}  ·  {plural(m.threads, 'thread', 'threads')}"
                )
        return empty_data(role)


@QmlElement
class ProcTreeModel(QAbstractListModel):
    """The processes of proc ``procId``'s tree, read every TREE_POLL_MS while
    ``active``; ``summaryText`` sums them up, ``emptyText`` says why there are none.

    Like every model it acts on nothing: a signal to one of its processes goes
    through :meth:`ProcController.sendSignal`.
    """

    procIdChanged = Signal()
    activeChanged = Signal()
    countChanged = Signal()
    textsChanged = Signal()

    def __init__(
        self,
        supervisor: SupervisorAPI | None = None,
        parent: QObject | None = None,
        *,
        poll_ms: int = TREE_POLL_MS,
    ) -> None:
        super().__init__(parent)
        self._sup = resolve_supervisor(supervisor, "ProcTreeModel")
        self._proc_id = -1
        self._active = False
        self._rows: list[_Row] = []
        self._error = ""
        self._task: asyncio.Task[None] | None = None
        self._poll = QTimer(self)
        self._poll.setInterval(poll_ms)
        self._poll.timeout.connect(self.reload)

    # -- properties ----------------------------------------------------------------

    def _on_target(self) -> None:
        self._error = ""
        self._set_rows([])  # another proc's processes are not this one's
        if self._active and self._proc_id > 0:
            self._poll.start()
            self.reload()
        else:
            self._poll.stop()
        self.textsChanged.emit()

    procId = stored_property(int, "_proc_id", procIdChanged, on_change=_on_target)
    """The proc whose tree is listed (-1: none)."""
    active = stored_property(bool, "_active", activeChanged, on_change=_on_target)
    """True while a view shows the tree: only then is it read."""

    def _get_count(self) -> int:
        return len(self._rows)

    count = qt_property(int, _get_count, notify=countChanged)
    """Processes listed."""

    def _get_summary(self) -> str:
        if not self._rows:
            return ""
        cpu = sum(r.member.cpu_percent for r in self._rows)
        rss = sum(r.member.rss for r in self._rows)
        count = plural(len(self._rows), "process", "processes")
        return f"{count}  ·  {cpu:.1f} % CPU  ·  {format_bytes(rss)}"

    summaryText = qt_property(str, _get_summary, notify=textsChanged)
    """``3 processes · 41.2 % CPU · 12.0 MiB`` ("" when there are none)."""

    def _get_empty(self) -> str:
        if self._error:
            return self._error
        if self._proc_id <= 0:
            return "No process selected"
        return "No process left: it has exited, and nothing it started runs"

    emptyText = qt_property(str, _get_empty, notify=textsChanged)
    """What the list says while it is empty."""

    signalNames = Property(list, lambda self: list(SIGNALS), constant=True)
    """The signals the panel offers, as ``signalProcess`` takes them."""

    # -- reading -------------------------------------------------------------------

    @Slot()
    def reload(self) -> None:
        """Read the tree again now (while active); a read under way is not doubled."""
        if not self._active or self._proc_id <= 0 or self._task is not None:
            return
        self._task = current_loop().create_task(self._read(self._proc_id))

    async def _read(self, proc_id: int) -> None:
        try:
            rows = [_Row(m) for m in await self._sup.tree(proc_id)]
            error = ""
        except ProcwindowError as exc:
            rows, error = [], str(exc)
        except Exception as exc:  # a failing read must not stop the next one
            log.exception("procwindow: reading the tree of %s failed", proc_id)
            rows, error = [], f"cannot read its processes: {exc}"
        finally:
            self._task = None
        if not shiboken6.isValid(self) or not self._active:
            return
        if proc_id != self._proc_id:  # read for the proc shown before: read again
            self.reload()
            return
        self._error = error
        self._set_rows(rows)
        self.textsChanged.emit()
        if not rows and not error and not self._still_running(proc_id):
            self._poll.stop()  # nothing will appear any more

    def _still_running(self, proc_id: int) -> bool:
        try:
            return self._sup.get(proc_id).running
        except ProcwindowError:
            return False

    @Slot()
    def reloadSoon(self) -> None:
        """Read the tree again in a moment (after a signal, to show its effect)."""
        QTimer.singleShot(AFTER_SIGNAL_MS, self, self.reload)

    def close(self) -> None:
        """Stop reading (the window is going away)."""
        self._poll.stop()
        self._active = False
        if self._task is not None:
            self._task.cancel()
            self._task = None

    # -- the model -----------------------------------------------------------------

    def rowCount(self, parent: ModelIndex = ROOT) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def roleNames(self) -> dict[int, QByteArray]:
        return _ROLE_NAMES

    def data(self, index: ModelIndex, role: int = DISPLAY) -> object:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        return self._rows[index.row()].value(role)

    @Slot(int, result=int)
    def osPidAt(self, row: int) -> int:
        """The kernel pid listed at ``row``, -1 if none."""
        return self._rows[row].member.os_pid if 0 <= row < len(self._rows) else -1

    def _set_rows(self, rows: list[_Row]) -> None:
        """Show ``rows``: a process that stays keeps its row (its figures change in
        place), one gone is removed, one new is inserted where the tree has it."""
        count = len(self._rows)
        sync_rows(self, self._rows, rows, _pid_of)
        if len(self._rows) != count:
            self.countChanged.emit()


def _pid_of(row: _Row) -> int:
    return row.member.os_pid
