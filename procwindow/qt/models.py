"""Read-only Qt item models over the supervisor.

- :class:`ProcModel`: the process table of a scope (a session, or one of its agents).
- :class:`OutputModel`: the output lines of one process, filtered and capped.
- :class:`SessionModel`: the tree of sessions and their agents, with live counts.

Each model follows the supervisor through an :class:`~procwindow.qt._support.EventPump`
(a task on the qasync loop reading ``Supervisor.subscribe``) and never acts on a
process: actions go through :class:`~procwindow.qt.controller.ProcController`.
Roles are ``IntEnum`` members from ``Qt.UserRole + 1``; QML sees them by the
camelCase names in each model's ``ROLE_NAMES``.
"""

from __future__ import annotations

import bisect
import enum
import re
import signal
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from PySide6.QtCore import (
    QAbstractItemModel,
    QAbstractListModel,
    QAbstractTableModel,
    QByteArray,
    QCoreApplication,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
    QTimer,
    Signal,
    Slot,
)
from PySide6.QtGui import QGuiApplication
from PySide6.QtQml import QmlElement

from procwindow.core import (
    Event,
    EventKind,
    ExitInfo,
    ExitReason,
    Proc,
    ProcNotFound,
    ProcState,
    Stream,
    Supervisor,
    format_runtime,
)

from . import ansi
from ._support import EventPump, Lifeline, empty_data, qt_property, resolve_supervisor

__all__ = [
    "OutputModel",
    "OutputRole",
    "ProcColumn",
    "ProcModel",
    "ProcRole",
    "SessionModel",
    "SessionRole",
]

QML_IMPORT_NAME = "Procwindow"
QML_IMPORT_MAJOR_VERSION = 1

ModelIndex = QModelIndex | QPersistentModelIndex
_ROOT = QModelIndex()
_DISPLAY = int(Qt.ItemDataRole.DisplayRole)
_TOOLTIP = int(Qt.ItemDataRole.ToolTipRole)
_USER = int(Qt.ItemDataRole.UserRole)

# Characters that cannot occur in a session or agent name (core/_topics.py):
# a scope containing one has no processes and no event topic.
_NOT_IN_NAMES = frozenset(".*> \t\r\n\0")


def _valid_name(name: str) -> bool:
    return bool(name) and _NOT_IN_NAMES.isdisjoint(name)


def _ranges(rows: Iterable[int]) -> list[tuple[int, int]]:
    """Sorted, distinct row numbers as (first, last) runs of consecutive rows."""
    out: list[tuple[int, int]] = []
    for row in sorted(set(rows)):
        if out and out[-1][1] == row - 1:
            out[-1] = (out[-1][0], row)
        else:
            out.append((row, row))
    return out


def _time_text(stamp: float, millis: bool = False) -> str:
    text = time.strftime("%H:%M:%S", time.localtime(stamp))
    return f"{text}.{int(stamp * 1000) % 1000:03d}" if millis else text


# == ProcModel =====================================================================


class ProcRole(enum.IntEnum):
    """ProcModel roles (QML names in :data:`PROC_ROLE_NAMES`)."""

    PROC_ID = _USER + 1
    OS_PID = enum.auto()
    TOOL = enum.auto()
    COMMAND = enum.auto()
    STATUS = enum.auto()
    EXIT_CODE = enum.auto()
    EXIT_REASON = enum.auto()
    START_TIME = enum.auto()
    RUNTIME_TEXT = enum.auto()
    CAN_TERM = enum.auto()
    CAN_KILL = enum.auto()
    CAN_DISMISS = enum.auto()
    CAN_RESTART = enum.auto()
    SESSION = enum.auto()
    AGENT = enum.auto()
    STATUS_COLOR = enum.auto()
    STATUS_TEXT = enum.auto()
    RUNTIME = enum.auto()
    START_TEXT = enum.auto()
    COLUMN_NAME = enum.auto()


PROC_ROLE_NAMES: dict[int, QByteArray] = {
    _DISPLAY: QByteArray(b"display"),
    _TOOLTIP: QByteArray(b"toolTip"),
    ProcRole.PROC_ID: QByteArray(b"procId"),
    ProcRole.OS_PID: QByteArray(b"osPid"),
    ProcRole.TOOL: QByteArray(b"tool"),
    ProcRole.COMMAND: QByteArray(b"command"),
    ProcRole.STATUS: QByteArray(b"status"),
    ProcRole.EXIT_CODE: QByteArray(b"exitCode"),
    ProcRole.EXIT_REASON: QByteArray(b"exitReason"),
    ProcRole.START_TIME: QByteArray(b"startTime"),
    ProcRole.RUNTIME_TEXT: QByteArray(b"runtimeText"),
    ProcRole.CAN_TERM: QByteArray(b"canTerm"),
    ProcRole.CAN_KILL: QByteArray(b"canKill"),
    ProcRole.CAN_DISMISS: QByteArray(b"canDismiss"),
    ProcRole.CAN_RESTART: QByteArray(b"canRestart"),
    ProcRole.SESSION: QByteArray(b"session"),
    ProcRole.AGENT: QByteArray(b"agent"),
    ProcRole.STATUS_COLOR: QByteArray(b"statusColor"),
    ProcRole.STATUS_TEXT: QByteArray(b"statusText"),
    ProcRole.RUNTIME: QByteArray(b"runtime"),
    ProcRole.START_TEXT: QByteArray(b"startText"),
    ProcRole.COLUMN_NAME: QByteArray(b"columnName"),
}


class ProcColumn(enum.StrEnum):
    """The columns of the process table; the value is the ``columnName`` role."""

    PID = "pid"
    AGENT = "agent"
    TOOL = "tool"
    STATUS = "status"
    RUNTIME = "runtime"
    ACTIONS = "actions"


_COLUMN_TITLES = {
    ProcColumn.PID: "PID",
    ProcColumn.AGENT: "Agent",
    ProcColumn.TOOL: "Tool",
    ProcColumn.STATUS: "Status",
    ProcColumn.RUNTIME: "Runtime",
    ProcColumn.ACTIONS: "Actions",
}
_AGENT_COLUMNS = (
    ProcColumn.PID,
    ProcColumn.TOOL,
    ProcColumn.STATUS,
    ProcColumn.RUNTIME,
    ProcColumn.ACTIONS,
)
_SESSION_COLUMNS = (ProcColumn.PID, ProcColumn.AGENT, *_AGENT_COLUMNS[1:])

#: Roles that change when a proc changes state (stopping, exited).
_STATE_ROLES = [
    _DISPLAY,
    ProcRole.STATUS,
    ProcRole.STATUS_TEXT,
    ProcRole.STATUS_COLOR,
    ProcRole.EXIT_CODE,
    ProcRole.EXIT_REASON,
    ProcRole.RUNTIME,
    ProcRole.RUNTIME_TEXT,
    ProcRole.CAN_TERM,
    ProcRole.CAN_KILL,
    ProcRole.CAN_DISMISS,
    ProcRole.CAN_RESTART,
]
#: Roles that change every second while a proc runs (on the Runtime column).
_RUNTIME_ROLES = [_DISPLAY, ProcRole.RUNTIME, ProcRole.RUNTIME_TEXT]

#: Status colours (any QML ``color`` string), by state or exit reason.
STATUS_COLORS: dict[str, str] = {
    ProcState.STARTING: "#1565c0",
    ProcState.RUNNING: "#2e7d32",
    ProcState.STOPPING: "#ef6c00",
    ExitReason.EXITED: "#757575",
    ExitReason.FAILED: "#c62828",
    ExitReason.TERMINATED: "#8d6e63",
    ExitReason.KILLED: "#ad1457",
    ExitReason.ESCALATED: "#ad1457",
}

#: Milliseconds between runtime refreshes.
TICK_INTERVAL_MS = 1000
#: Rows refreshed beyond each end of the visible range: delegates a view keeps
#: just outside its viewport stay current while it scrolls.
VISIBLE_MARGIN = 8


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def status_text(state: ProcState, exit: ExitInfo | None) -> str:
    """The Status cell: ``running``, ``stopping``, ``exited (0)``, ``failed (SIGSEGV)``…

    >>> status_text(ProcState.EXITED, ExitInfo(143, 15, ExitReason.TERMINATED, 1.0))
    'terminated (SIGTERM)'
    """
    if exit is None:
        return state.value
    detail = _signal_name(exit.signal) if exit.signal is not None else str(exit.code)
    match exit.reason:
        case ExitReason.ESCALATED:
            return "killed (ignored SIGTERM)"
        case reason:
            return f"{reason.value} ({detail})"


@dataclass(slots=True, eq=False)
class _ProcRow:
    proc: Proc
    cmd: str
    # State and exit as last announced with dataChanged: data() answers from
    # these, so what a view reads always matches what it was told.
    state: ProcState
    exit: ExitInfo | None

    @classmethod
    def of(cls, proc: Proc) -> _ProcRow:
        return cls(proc, proc.cmd, proc.state, proc.exit)

    def catch_up(self) -> bool:
        """Take the proc's current state; True if it changed."""
        state, exit = self.proc.state, self.proc.exit
        if state is self.state and exit is self.exit:
            return False
        self.state, self.exit = state, exit
        return True


def _neg_id(row: _ProcRow) -> int:
    return -row.proc.id


@QmlElement
class ProcModel(QAbstractTableModel):
    """The processes of one scope, newest first: the ProcWindow's table.

    ``agent == ""`` shows the whole session (every agent) and adds an Agent
    column after PID; ``session == ""`` shows nothing. Setting ``session`` or
    ``agent`` (or both at once with ``setScope``) re-scopes the model with one
    reset. Columns (``columnNames``): ``pid``, [``agent``], ``tool``, ``status``,
    ``runtime``, ``actions``. Every role is answered at every column;
    ``display`` is the text of the cell's column (empty for ``actions``) and
    ``columnName`` names the column, for a ``DelegateChooser``.

    Status changes arrive as supervisor events and are announced as one
    ``dataChanged`` per run of rows, across all columns, with the state roles
    only. ``stopping`` has no event: it is noticed on the next tick for the rows
    the tick visits.

    **Runtime refresh.** While a shown proc runs, a 1 s timer (:meth:`tick`)
    announces ``dataChanged`` on the Runtime column, roles ``display``,
    ``runtime`` and ``runtimeText``, only for running rows — and, once the view
    has called ``setVisibleRows(first, last)``, only for running rows in that
    range (plus a small margin). A ``dataChanged`` costs the view time in
    proportion to its range, not to what it shows, so a ``TableView`` should pass
    its ``topRow``/``bottomRow`` whenever they change. Rows scrolled into view
    are re-checked at once. ``setVisibleRows(-1, -1)`` drops the hint.
    Measured (``benchmarks/bench_table_tick.py``, 10,000 running rows, ~47
    visible): ~73 ms per tick over the whole column, ~1 ms with the hint; with
    only a few rows running the tick is well under 1 ms either way.

    >>> model = ProcModel(sup, "build")  # doctest: +SKIP
    >>> model.title, model.columnNames  # doctest: +SKIP
    ('Processes - build', ['pid', 'agent', 'tool', 'status', 'runtime', 'actions'])
    """

    ROLE_NAMES = PROC_ROLE_NAMES

    sessionChanged = Signal()
    agentChanged = Signal()
    countChanged = Signal()
    titleChanged = Signal()
    columnNamesChanged = Signal()

    def __init__(
        self,
        supervisor: Supervisor | None = None,
        session: str = "",
        agent: str = "",
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._sup = resolve_supervisor(supervisor, "ProcModel")
        self._session = session
        self._agent = agent
        self._columns: tuple[ProcColumn, ...] = ()
        self._rows: list[_ProcRow] = []
        self._running: set[int] = set()  # ids of rows not yet announced as exited
        self._visible: tuple[int, int] | None = None
        self._lifeline = Lifeline(self)
        self._pump: EventPump | None = None
        self._timer = QTimer(self)
        self._timer.setInterval(TICK_INTERVAL_MS)
        self._timer.timeout.connect(self.tick)
        self._attach()

    # -- scope -----------------------------------------------------------------

    def _get_session(self) -> str:
        return self._session

    def _set_session(self, session: str) -> None:
        self.setScope(session, self._agent)

    def _get_agent(self) -> str:
        return self._agent

    def _set_agent(self, agent: str) -> None:
        self.setScope(self._session, agent)

    def _get_count(self) -> int:
        return len(self._rows)

    def _get_title(self) -> str:
        if not self._session:
            return "Processes"
        if not self._agent:
            return f"Processes - {self._session}"
        return f"Processes - {self._session}/{self._agent}"

    def _get_column_names(self) -> list[str]:
        return [c.value for c in self._columns]

    session = qt_property(str, _get_session, _set_session, notify=sessionChanged)
    """The session shown ("" for none)."""
    agent = qt_property(str, _get_agent, _set_agent, notify=agentChanged)
    """The agent shown ("" for every agent of the session)."""
    count = qt_property(int, _get_count, notify=countChanged)
    """The number of rows."""
    title = qt_property(str, _get_title, notify=titleChanged)
    """The window title: ``Processes - {session}/{agent}`` or ``Processes - {session}``."""
    columnNames = qt_property(list, _get_column_names, notify=columnNamesChanged)
    """The ``ProcColumn`` value of each column, in order."""

    @Slot(str, str)
    def setScope(self, session: str, agent: str) -> None:
        """Show ``(session, agent)``; one model reset, and only if it changed."""
        if (session, agent) == (self._session, self._agent):
            return
        old = (self._session, self._agent, self._get_title(), self._columns, len(self._rows))
        self.beginResetModel()
        self._detach()
        self._session, self._agent = session, agent
        self._attach()
        self.endResetModel()
        if old[0] != session:
            self.sessionChanged.emit()
        if old[1] != agent:
            self.agentChanged.emit()
        if old[2] != self._get_title():
            self.titleChanged.emit()
        if old[3] != self._columns:
            self.columnNamesChanged.emit()
        if old[4] != len(self._rows):
            self.countChanged.emit()

    def _pattern(self) -> str | None:
        if not _valid_name(self._session) or (self._agent and not _valid_name(self._agent)):
            return None
        return f"session.{self._session}.agent.{self._agent or '*'}.proc.>"

    def _attach(self) -> None:
        self._columns = _AGENT_COLUMNS if self._agent else _SESSION_COLUMNS
        pattern = self._pattern()
        if pattern is None:
            self._rows, self._running = [], set()
        else:
            # Subscribe before taking the snapshot, so that nothing falls between
            # the two; events about rows already taken are applied idempotently.
            self._pump = self._lifeline.hold(EventPump(self._sup, pattern, self._on_events))
            procs = self._sup.procs(self._session, self._agent or None)
            self._rows = [_ProcRow.of(p) for p in procs]
            self._running = {row.proc.id for row in self._rows if row.exit is None}
        self._update_timer()

    def _detach(self) -> None:
        self._lifeline.release(self._pump)
        self._pump = None
        self._timer.stop()

    def close(self) -> None:
        """Stop following the supervisor (the rows stay). Done on destruction too."""
        self._detach()
        self._lifeline.close()

    # -- Qt model interface ------------------------------------------------------

    def rowCount(self, parent: ModelIndex = _ROOT) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def columnCount(self, parent: ModelIndex = _ROOT) -> int:
        return 0 if parent.isValid() else len(self._columns)

    def roleNames(self) -> dict[int, QByteArray]:
        return self.ROLE_NAMES

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = _DISPLAY) -> object:
        if role == _DISPLAY:
            if orientation == Qt.Orientation.Horizontal:
                if 0 <= section < len(self._columns):
                    return _COLUMN_TITLES[self._columns[section]]
            elif 0 <= section < len(self._rows):
                return str(section + 1)
        return empty_data(role)

    def data(self, index: ModelIndex, role: int = _DISPLAY) -> object:
        row = index.row()
        if not 0 <= row < len(self._rows):
            return empty_data(role)
        r = self._rows[row]
        p = r.proc
        match role:
            case Qt.ItemDataRole.DisplayRole:
                return self._display(r, index.column())
            case Qt.ItemDataRole.ToolTipRole | ProcRole.COMMAND:
                return r.cmd
            case ProcRole.PROC_ID:
                return p.id
            case ProcRole.OS_PID:
                return p.os_pid
            case ProcRole.TOOL:
                return p.tool
            case ProcRole.STATUS:
                return r.state.value
            case ProcRole.STATUS_TEXT:
                return status_text(r.state, r.exit)
            case ProcRole.STATUS_COLOR:
                return STATUS_COLORS[r.exit.reason if r.exit is not None else r.state]
            case ProcRole.EXIT_CODE:
                return r.exit.code if r.exit is not None else -1
            case ProcRole.EXIT_REASON:
                return r.exit.reason.value if r.exit is not None else ""
            case ProcRole.START_TIME:
                return p.started_at
            case ProcRole.START_TEXT:
                return _time_text(p.started_at)
            case ProcRole.RUNTIME:
                return self._runtime(r)
            case ProcRole.RUNTIME_TEXT:
                return format_runtime(self._runtime(r))
            case ProcRole.CAN_TERM:
                return r.exit is None and r.state is not ProcState.STOPPING
            case ProcRole.CAN_KILL:
                return r.exit is None
            case ProcRole.CAN_DISMISS:
                return r.exit is not None
            case ProcRole.CAN_RESTART:
                return r.state is not ProcState.STOPPING
            case ProcRole.SESSION:
                return p.session
            case ProcRole.AGENT:
                return p.agent
            case ProcRole.COLUMN_NAME:
                column = index.column()
                return self._columns[column].value if 0 <= column < len(self._columns) else ""
            case _:
                return empty_data(role)

    def _display(self, r: _ProcRow, column: int) -> str:
        if not 0 <= column < len(self._columns):
            return ""
        match self._columns[column]:
            case ProcColumn.PID:
                return str(r.proc.id)
            case ProcColumn.AGENT:
                return r.proc.agent
            case ProcColumn.TOOL:
                return r.proc.tool
            case ProcColumn.STATUS:
                return status_text(r.state, r.exit)
            case ProcColumn.RUNTIME:
                return format_runtime(self._runtime(r))
            case _:
                return ""

    def _runtime(self, r: _ProcRow) -> float:
        if r.exit is not None:
            return r.exit.runtime
        try:
            return self._sup.runtime(r.proc.id)
        except ProcNotFound:  # dismissed; its event is on the way
            return 0.0

    # -- lookups ---------------------------------------------------------------

    @Slot(int, result=int)
    def rowOf(self, procId: int) -> int:
        """The row of proc ``procId``, or -1."""
        rows = self._rows
        i = bisect.bisect_left(rows, -procId, key=_neg_id)
        return i if i < len(rows) and rows[i].proc.id == procId else -1

    @Slot(int, result=int)
    def procIdAt(self, row: int) -> int:
        """The proc id at ``row``, or -1."""
        return self._rows[row].proc.id if 0 <= row < len(self._rows) else -1

    # -- runtime refresh ---------------------------------------------------------

    @Slot(int, int)
    def setVisibleRows(self, first: int, last: int) -> None:
        """The rows the view shows (``TableView.topRow``/``bottomRow``); -1, -1: unknown.

        Limits the runtime tick to these rows; see the class docstring.
        """
        hint = (first, last) if 0 <= first <= last else None
        if hint == self._visible:
            return
        self._visible = hint
        if hint is not None:
            # A row that scrolled in may have changed state (stopping) unseen.
            rows = self._window()
            changed = [i for i in rows if self._rows[i].exit is None and self._rows[i].catch_up()]
            self._announce_state(changed)

    def _window(self) -> range:
        if self._visible is None:
            return range(len(self._rows))
        first, last = self._visible
        return range(
            max(first - VISIBLE_MARGIN, 0), min(last + VISIBLE_MARGIN + 1, len(self._rows))
        )

    def tick(self) -> None:
        """Refresh the runtime of running rows now (the timer does it once a second)."""
        rows = self._rows
        if self._visible is not None:
            live = [i for i in self._window() if rows[i].exit is None]
        elif len(self._running) * 8 < len(rows):
            # Few running among many rows: find each (binary search by id).
            live = sorted(i for i in map(self.rowOf, self._running) if i >= 0)
        else:
            live = [i for i, r in enumerate(rows) if r.exit is None]
        changed = [i for i in live if rows[i].catch_up()]
        for i in changed:
            if rows[i].exit is not None:
                self._running.discard(rows[i].proc.id)
        self._announce_state(changed)
        skip = set(changed)
        column = self._columns.index(ProcColumn.RUNTIME)
        for first, last in _ranges(i for i in live if i not in skip):
            self.dataChanged.emit(
                self.index(first, column), self.index(last, column), _RUNTIME_ROLES
            )
        self._update_timer()

    def _announce_state(self, rows: Iterable[int]) -> None:
        last_column = len(self._columns) - 1
        for first, last in _ranges(rows):
            self.dataChanged.emit(self.index(first, 0), self.index(last, last_column), _STATE_ROLES)

    def _update_timer(self) -> None:
        if self._running and self._pump is not None:
            if not self._timer.isActive():
                self._timer.start()
        else:
            self._timer.stop()

    # -- events ----------------------------------------------------------------

    def _on_events(self, events: list[Event]) -> None:
        if any(ev.missed for ev in events):
            self._resync()
            return
        count = len(self._rows)
        started: list[int] = []
        exited: set[int] = set()
        dismissed: set[int] = set()
        for ev in events:
            match ev.kind:
                case EventKind.START:
                    started.append(ev.proc_id)
                case EventKind.EXIT | EventKind.STOPPING:
                    exited.add(ev.proc_id)  # a state change: refresh the row
                case EventKind.DISMISS:
                    dismissed.add(ev.proc_id)
                case _:
                    pass
        if started:
            self._insert(started)
        if exited:
            self._refresh(exited)
        if dismissed:
            self._remove(dismissed)
        if len(self._rows) != count:
            self.countChanged.emit()
        self._update_timer()

    def _insert(self, proc_ids: list[int]) -> None:
        new: dict[int, Proc] = {}
        for proc_id in proc_ids:
            if proc_id in new or self.rowOf(proc_id) >= 0:
                continue
            try:
                new[proc_id] = self._sup.get(proc_id)
            except ProcNotFound:  # dismissed before we heard of it
                continue
        if not new:
            return
        rows = [_ProcRow.of(p) for p in sorted(new.values(), key=lambda p: -p.id)]
        self._running.update(r.proc.id for r in rows if r.exit is None)
        if not self._rows or rows[-1].proc.id > self._rows[0].proc.id:
            # The usual case: newer than every row, one insert at the top.
            self.beginInsertRows(_ROOT, 0, len(rows) - 1)
            self._rows[0:0] = rows
            self.endInsertRows()
            return
        for r in rows:
            at = bisect.bisect_left(self._rows, -r.proc.id, key=_neg_id)
            self.beginInsertRows(_ROOT, at, at)
            self._rows.insert(at, r)
            self.endInsertRows()

    def _refresh(self, proc_ids: set[int]) -> None:
        changed: list[int] = []
        for proc_id in proc_ids:
            row = self.rowOf(proc_id)
            if row >= 0 and self._rows[row].catch_up():
                changed.append(row)
            if row >= 0 and self._rows[row].exit is not None:
                self._running.discard(proc_id)
        self._announce_state(changed)

    def _remove(self, proc_ids: set[int]) -> None:
        rows = [row for row in map(self.rowOf, proc_ids) if row >= 0]
        # Bottom-up, so that the row numbers of the runs still to remove hold.
        for first, last in reversed(_ranges(rows)):
            self.beginRemoveRows(_ROOT, first, last)
            for r in self._rows[first : last + 1]:
                self._running.discard(r.proc.id)
            del self._rows[first : last + 1]
            self.endRemoveRows()

    def _resync(self) -> None:
        """Events were lost (a full queue): start over from the supervisor's list."""
        count = len(self._rows)
        self.beginResetModel()
        procs = self._sup.procs(self._session, self._agent or None)
        self._rows = [_ProcRow.of(p) for p in procs]
        self._running = {r.proc.id for r in self._rows if r.exit is None}
        self.endResetModel()
        if len(self._rows) != count:
            self.countChanged.emit()
        self._update_timer()


# == OutputModel ===================================================================


class OutputRole(enum.IntEnum):
    """OutputModel roles (QML names in :data:`OUTPUT_ROLE_NAMES`)."""

    SEQ = _USER + 1
    STREAM = enum.auto()
    IS_STDERR = enum.auto()
    TIME = enum.auto()
    TIME_TEXT = enum.auto()
    TEXT = enum.auto()
    STYLED = enum.auto()
    SPLIT = enum.auto()


OUTPUT_ROLE_NAMES: dict[int, QByteArray] = {
    _DISPLAY: QByteArray(b"display"),
    OutputRole.SEQ: QByteArray(b"seq"),
    OutputRole.STREAM: QByteArray(b"stream"),
    OutputRole.IS_STDERR: QByteArray(b"isStderr"),
    OutputRole.TIME: QByteArray(b"time"),
    OutputRole.TIME_TEXT: QByteArray(b"timeText"),
    OutputRole.TEXT: QByteArray(b"text"),
    OutputRole.STYLED: QByteArray(b"styled"),
    OutputRole.SPLIT: QByteArray(b"split"),
}

#: One held line: seq, is stderr, time, raw text (with ANSI), split piece.
_Held = tuple[int, bool, float, str, bool]

#: Default cap on the lines an OutputModel holds (terminals keep 10k–100k).
DEFAULT_MAX_LINES = 100_000
#: Milliseconds between two appends: at most one ``beginInsertRows`` per frame.
FRAME_MS = 16
#: Lines read from the supervisor per frame; a faster producer is caught up
#: over the next frames, so a frame's work stays bounded (under a full-speed
#: flood the loop's p99 lag stays under a frame: benchmarks/bench_window.py).
FRAME_READ_LIMIT = 2_000
#: Seconds of filtering per frame; a longer scan goes on in the next frames.
FILTER_BUDGET = 0.005
#: Lines filtered between two looks at the clock.
FILTER_CHUNK = 4096
#: Appends up to this many lines are ANSI-stripped at once; a bigger read (a
#: proc's whole ring, when it is selected) is stripped in the background.
STRIP_AT_ONCE = 4096

# Returns the absolute indexes of the lines of a chunk that match.
_Matcher = Callable[[list[str], int], list[int]]


def _compile_filter(text: str, regex: bool, case_sensitive: bool) -> _Matcher:
    """A matcher for one filter; raises re.error (and friends) for a bad regex.

    Each kind is its own comprehension: one call per chunk, not per line (DESIGN.md:
    substring 8 ms, casefold+substring ~16 ms, regex 21 ms per 100k lines).
    """
    if regex:
        search = re.compile(text, 0 if case_sensitive else re.IGNORECASE).search
        return lambda chunk, start: [i for i, t in enumerate(chunk, start) if search(t)]
    if case_sensitive:
        return lambda chunk, start: [i for i, t in enumerate(chunk, start) if text in t]
    needle = text.casefold()
    return lambda chunk, start: [i for i, t in enumerate(chunk, start) if needle in t.casefold()]


@QmlElement
class OutputModel(QAbstractListModel):
    """The output of one proc, one row per line, oldest first: the output pane.

    Set ``procId`` (-1: none) to show a proc: its lines still in the supervisor's
    ring are loaded at once (the newest ``maxLines``), and new lines follow.
    Output events (coalesced by the supervisor every 50 ms) only mark the model
    dirty; a frame timer then reads ``Supervisor.read(procId, since=cursor)``
    and appends with at most one ``beginInsertRows`` per frame (``FRAME_MS``).
    Past ``maxLines`` the oldest rows are removed (``beginRemoveRows``).

    Filter: with ``filterText`` set only matching lines are rows — a substring,
    or a regular expression with ``filterRegex``; ``caseSensitive`` applies to
    both. It runs over the plain (ANSI-stripped) text in chunks, at most
    ``FILTER_BUDGET`` per frame, so a long scan never stalls drawing;
    ``filtering`` is true until it has caught up, and ``matchCount`` grows
    meanwhile. An invalid regex sets ``filterError`` and leaves the previous
    filter in effect. ``clear()`` empties the view, not the log: later lines
    still arrive. ``matchCount`` is the number of rows (``lineCount`` when no
    filter is set).

    Roles: ``seq``, ``stream`` (``"stdout"``/``"stderr"``), ``isStderr``,
    ``time``, ``timeText`` (``HH:MM:SS.mmm``), ``text`` (ANSI stripped; also
    ``display``), ``styled`` (HTML, see :func:`procwindow.qt.ansi.to_html`; each
    line is rendered on its own, colours for ``darkBackground``), ``split``
    (a piece of an over-long line).

    Costs (100k-line ring, 2-core machine): selecting the proc ~80 ms, nearly all
    of it ``Supervisor.read``; the ANSI stripping of such a load (~0.1 s) is
    spread over the next frames, or done for a chunk when the filter or a copy
    needs it. A substring filter over 100k stripped lines fits in one frame.
    """

    ROLE_NAMES = OUTPUT_ROLE_NAMES

    procIdChanged = Signal()
    headerChanged = Signal()
    lineCountChanged = Signal()
    matchCountChanged = Signal()
    maxLinesChanged = Signal()
    filterTextChanged = Signal()
    filterRegexChanged = Signal()
    caseSensitiveChanged = Signal()
    filterErrorChanged = Signal()
    filteringChanged = Signal()
    darkBackgroundChanged = Signal()

    def __init__(
        self,
        supervisor: Supervisor | None = None,
        proc_id: int = -1,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._sup = resolve_supervisor(supervisor, "OutputModel")
        self._proc_id = -1
        self._max_lines = DEFAULT_MAX_LINES
        self._cursor = 0  # the supervisor seq read up to
        self._reading = False  # the proc may still produce lines
        self._backlog = False  # the last read hit FRAME_READ_LIMIT
        # Lines held: _lines[i] is line number _base + i (absolute numbers never
        # shift, so filtered rows can refer to lines by them). _plain[i] is its
        # text ANSI-stripped below line number _clean, and still raw from there:
        # stripping 100k lines costs ~0.1 s, too long to do all at once when a proc
        # is selected, so it is done within the frame budget, or when needed.
        self._lines: list[_Held] = []
        self._plain: list[str] = []
        self._base = 0
        self._clean = 0
        self._scanned = 0  # absolute number of the first line not yet considered for a row
        self._rows: list[int] | None = None  # None: every line is a row; else matching lines
        self._matcher: _Matcher | None = None
        self._filter_text = ""
        self._filter_regex = False
        self._case_sensitive = False
        self._filter_error = ""
        self._palette = ansi.LIGHT_PALETTE
        self._lifeline = Lifeline(self)
        self._pump: EventPump | None = None
        self._frame = QTimer(self)
        self._frame.setSingleShot(True)
        self._frame.setTimerType(Qt.TimerType.PreciseTimer)
        self._frame.setInterval(FRAME_MS)
        self._frame.timeout.connect(self._on_frame)
        if proc_id >= 0:
            self._set_proc_id(proc_id)

    # -- properties --------------------------------------------------------------

    def _get_proc_id(self) -> int:
        return self._proc_id

    def _set_proc_id(self, proc_id: int) -> None:
        proc_id = max(proc_id, -1)
        if proc_id == self._proc_id:
            return
        lines, matches, filtering = self._counts()
        self.beginResetModel()
        self._lifeline.release(self._pump)
        self._pump = None
        self._proc_id = proc_id
        self._lines, self._plain = [], []
        self._base = self._clean = self._scanned = self._cursor = 0
        self._rows = None if self._matcher is None else []
        self._reading = self._backlog = False
        proc = self._find_proc()
        if proc is not None:
            self._pump = self._lifeline.hold(
                EventPump(
                    self._sup, f"session.{proc.session}.agent.{proc.agent}.proc.>", self._on_events
                )
            )
            self._reading = True
            self._cursor = max(0, proc.last_seq - self._max_lines)
            # All at once: the view opens on the tail, not on a growing head.
            self._read(limit=None)
            self._drop_front(len(self._lines) - self._max_lines)
            self._scan_into_rows()
        self.endResetModel()
        self.procIdChanged.emit()
        self.headerChanged.emit()
        self._emit_counts(lines, matches, filtering)
        self._schedule()

    def _find_proc(self) -> Proc | None:
        if self._proc_id < 0:
            return None
        try:
            return self._sup.get(self._proc_id)
        except ProcNotFound:
            return None

    def _get_header(self) -> str:
        return f"Output for PID {self._proc_id}" if self._proc_id >= 0 else "Output"

    def _get_line_count(self) -> int:
        return len(self._lines)

    def _get_match_count(self) -> int:
        return self._row_count()

    def _get_max_lines(self) -> int:
        return self._max_lines

    def _set_max_lines(self, value: int) -> None:
        value = max(1, value)
        if value == self._max_lines:
            return
        self._max_lines = value
        counts = self._counts()
        self._trim()
        self.maxLinesChanged.emit()
        self._emit_counts(*counts)

    def _get_filter_text(self) -> str:
        return self._filter_text

    def _set_filter_text(self, text: str) -> None:
        if text != self._filter_text:
            self._filter_text = text
            self.filterTextChanged.emit()
            self._refilter()

    def _get_filter_regex(self) -> bool:
        return self._filter_regex

    def _set_filter_regex(self, on: bool) -> None:
        if on != self._filter_regex:
            self._filter_regex = on
            self.filterRegexChanged.emit()
            self._refilter()

    def _get_case_sensitive(self) -> bool:
        return self._case_sensitive

    def _set_case_sensitive(self, on: bool) -> None:
        if on != self._case_sensitive:
            self._case_sensitive = on
            self.caseSensitiveChanged.emit()
            self._refilter()

    def _get_filter_error(self) -> str:
        return self._filter_error

    def _get_filtering(self) -> bool:
        return self._scanned < self._end()

    def _get_dark_background(self) -> bool:
        return self._palette is ansi.DARK_PALETTE

    def _set_dark_background(self, dark: bool) -> None:
        palette = ansi.DARK_PALETTE if dark else ansi.LIGHT_PALETTE
        if palette is self._palette:
            return
        self._palette = palette
        rows = self._row_count()
        if rows:
            self.dataChanged.emit(self.index(0), self.index(rows - 1), [OutputRole.STYLED])
        self.darkBackgroundChanged.emit()

    procId = qt_property(int, _get_proc_id, _set_proc_id, notify=procIdChanged)
    """The proc shown (the supervisor's id), -1 for none."""
    header = qt_property(str, _get_header, notify=headerChanged)
    """``Output for PID N``."""
    lineCount = qt_property(int, _get_line_count, notify=lineCountChanged)
    """Lines held (filtered or not), at most ``maxLines``."""
    matchCount = qt_property(int, _get_match_count, notify=matchCountChanged)
    """Rows: the lines that match the filter (all lines without one)."""
    maxLines = qt_property(int, _get_max_lines, _set_max_lines, notify=maxLinesChanged)
    """The cap on lines held; the oldest go first."""
    filterText = qt_property(str, _get_filter_text, _set_filter_text, notify=filterTextChanged)
    """Show only lines containing this ("" for all lines)."""
    filterRegex = qt_property(bool, _get_filter_regex, _set_filter_regex, notify=filterRegexChanged)
    """Read ``filterText`` as a regular expression (Python ``re`` syntax)."""
    caseSensitive = qt_property(
        bool, _get_case_sensitive, _set_case_sensitive, notify=caseSensitiveChanged
    )
    """Match case (off: ``casefold()`` substring / ``re.IGNORECASE``)."""
    filterError = qt_property(str, _get_filter_error, notify=filterErrorChanged)
    """Why ``filterText`` is not a valid regular expression, else ""."""
    filtering = qt_property(bool, _get_filtering, notify=filteringChanged)
    """True while a filter scan is still catching up."""
    darkBackground = qt_property(
        bool, _get_dark_background, _set_dark_background, notify=darkBackgroundChanged
    )
    """Choose ANSI colours for a dark output pane (default: a light one)."""

    # -- Qt model interface ------------------------------------------------------

    def rowCount(self, parent: ModelIndex = _ROOT) -> int:
        return 0 if parent.isValid() else self._row_count()

    def roleNames(self) -> dict[int, QByteArray]:
        return self.ROLE_NAMES

    def data(self, index: ModelIndex, role: int = _DISPLAY) -> object:
        pos = self._position(index.row())
        if pos < 0:
            return empty_data(role)
        seq, is_stderr, when, text, split = self._lines[pos]
        match role:
            case Qt.ItemDataRole.DisplayRole | OutputRole.TEXT:
                return self._text(pos)
            case OutputRole.STYLED:
                return ansi.to_html(text, self._palette)
            case OutputRole.SEQ:
                return seq
            case OutputRole.STREAM:
                return Stream.STDERR.value if is_stderr else Stream.STDOUT.value
            case OutputRole.IS_STDERR:
                return is_stderr
            case OutputRole.TIME:
                return when
            case OutputRole.TIME_TEXT:
                return _time_text(when, millis=True)
            case OutputRole.SPLIT:
                return split
            case _:
                return empty_data(role)

    def _row_count(self) -> int:
        return self._scanned - self._base if self._rows is None else len(self._rows)

    def _position(self, row: int) -> int:
        """Index into ``_lines`` of a row, or -1."""
        if row < 0:
            return -1
        if self._rows is None:
            return row if row < self._scanned - self._base else -1
        return self._rows[row] - self._base if row < len(self._rows) else -1

    def _end(self) -> int:
        return self._base + len(self._lines)

    def _text(self, pos: int) -> str:
        """The plain text of ``_lines[pos]``."""
        text = self._plain[pos]
        return text if self._base + pos < self._clean else ansi.strip_ansi(text)

    def _strip_to(self, stop: int) -> None:
        """Strip the lines up to line number ``stop`` (exclusive) in ``_plain``."""
        if stop <= self._clean:
            return
        first, last = self._clean - self._base, stop - self._base
        self._plain[first:last] = ansi.strip_lines(self._plain[first:last])
        self._clean = stop

    # -- slots -----------------------------------------------------------------

    @Slot()
    def clear(self) -> None:
        """Empty the view (the supervisor keeps the log); new lines still arrive."""
        counts = self._counts()
        self.beginResetModel()
        self._base = self._clean = self._scanned = self._end()
        self._lines, self._plain = [], []
        self._rows = None if self._matcher is None else []
        self.endResetModel()
        self._emit_counts(*counts)

    @Slot(list, result=str)
    def copyRows(self, rows: list[int]) -> str:
        """The plain text of these rows, in row order, one per line."""
        count = self._row_count()
        wanted = sorted({int(r) for r in rows if 0 <= int(r) < count})
        return "\n".join(self._text(self._position(r)) for r in wanted)

    @Slot(result=str)
    def copyAll(self) -> str:
        """The plain text (ANSI stripped) of every row, one per line."""
        self._strip_to(self._scanned)
        if self._rows is None:
            return "\n".join(self._plain[: self._scanned - self._base])
        base, plain = self._base, self._plain
        return "\n".join(plain[i - base] for i in self._rows)

    @Slot(str)
    def copyToClipboard(self, text: str) -> None:
        """Put ``text`` on the system clipboard."""
        if isinstance(QCoreApplication.instance(), QGuiApplication):
            QGuiApplication.clipboard().setText(text)

    def close(self) -> None:
        """Stop following the supervisor (the lines stay). Done on destruction too."""
        self._lifeline.close()
        self._pump = None
        self._reading = False
        self._frame.stop()

    # -- filtering -------------------------------------------------------------

    def _refilter(self) -> None:
        text = self._filter_text
        error = ""
        matcher: _Matcher | None = None
        if text:
            try:
                matcher = _compile_filter(text, self._filter_regex, self._case_sensitive)
            except (re.error, OverflowError, RecursionError, ValueError) as exc:
                error = f"invalid regular expression: {exc}"
        if error != self._filter_error:
            self._filter_error = error
            self.filterErrorChanged.emit()
        if error:
            return  # keep showing what the last valid filter showed
        counts = self._counts()
        self.beginResetModel()
        self._matcher = matcher
        self._rows = None if matcher is None else []
        self._scanned = self._base
        self._scan_into_rows()
        self.endResetModel()
        self._emit_counts(*counts)
        self._schedule()

    def _scan_into_rows(self) -> None:
        """Make rows of unscanned lines, within the frame's budget (inside a reset)."""
        if self._rows is None:
            self._scanned = self._end()
        else:
            self._rows.extend(self._scan())

    def _scan(self) -> list[int]:
        """Advance the filter over unscanned lines for up to FILTER_BUDGET; the matches."""
        assert self._matcher is not None
        matcher, plain, base = self._matcher, self._plain, self._base
        end = self._end()
        deadline = time.perf_counter() + FILTER_BUDGET
        found: list[int] = []
        while self._scanned < end:
            stop = min(self._scanned + FILTER_CHUNK, end)
            self._strip_to(stop)
            found += matcher(plain[self._scanned - base : stop - base], self._scanned)
            self._scanned = stop
            if time.perf_counter() >= deadline:
                break
        return found

    # -- appending -------------------------------------------------------------

    def _on_events(self, events: list[Event]) -> None:
        if any(ev.proc_id == self._proc_id or ev.missed for ev in events):
            self._schedule()

    def _pending(self) -> bool:
        end = self._end()
        return self._backlog or self._scanned < end or self._clean < end

    def _schedule(self) -> None:
        if (self._pending() or self._reading) and not self._frame.isActive():
            self._frame.start()

    def _on_frame(self) -> None:
        counts = self._counts()
        self._read(limit=FRAME_READ_LIMIT)
        self._trim()
        self._show_new()
        self._emit_counts(*counts)
        if self._clean < self._end():
            self._strip_some()
        if self._pending():
            self._frame.start()

    def _strip_some(self) -> None:
        """Strip the backlog in chunks, within the frame's budget."""
        deadline = time.perf_counter() + FILTER_BUDGET
        end = self._end()
        while self._clean < end and time.perf_counter() < deadline:
            self._strip_to(min(self._clean + FILTER_CHUNK, end))

    def _read(self, limit: int | None) -> None:
        """Take new lines from the supervisor into ``_lines`` (no rows yet)."""
        self._backlog = False
        if not self._reading:
            return
        try:
            newest = self._sup.get(self._proc_id).last_seq
            if newest - self._cursor > self._max_lines:
                # Lines this far behind would be trimmed as soon as they came in:
                # skip to the newest maxLines (the log file keeps everything).
                self._cursor = newest - self._max_lines
            batch = self._sup.read(self._proc_id, since=self._cursor, limit=limit)
        except ProcNotFound:  # dismissed: what we hold stays on screen
            self._stop_following()
            return
        if batch.lines:
            caught_up = self._clean == self._end()
            # Held as tuples of plain values: the garbage collector stops tracking
            # those, so 100k held lines add nothing to its pauses (a Line holds a
            # Stream member, which keeps it tracked).
            self._lines += [
                (ln.seq, ln.stream is Stream.STDERR, ln.time, ln.text, ln.split)
                for ln in batch.lines
            ]
            self._plain += [line.text for line in batch.lines]
            if caught_up and len(batch.lines) <= STRIP_AT_ONCE:
                self._strip_to(self._end())
        self._cursor = batch.cursor
        self._backlog = limit is not None and len(batch.lines) >= limit
        if batch.eof:  # both pipes closed and all read: nothing more will come
            self._stop_following()

    def _stop_following(self) -> None:
        self._reading = False
        self._lifeline.release(self._pump)
        self._pump = None

    def _trim(self) -> None:
        """Drop the oldest lines beyond maxLines, removing the rows they had."""
        excess = len(self._lines) - self._max_lines
        if excess <= 0:
            return
        cut = self._base + excess  # absolute number of the first line kept
        if self._rows is None:
            shown = min(self._scanned, cut) - self._base
        else:
            shown = bisect.bisect_left(self._rows, cut)
        if shown > 0:
            self.beginRemoveRows(_ROOT, 0, shown - 1)
        if self._rows is not None:
            del self._rows[:shown]
        self._drop_front(excess)
        if shown > 0:
            self.endRemoveRows()

    def _drop_front(self, count: int) -> None:
        if count <= 0:
            return
        del self._lines[:count]
        del self._plain[:count]
        self._base += count
        self._clean = max(self._clean, self._base)
        self._scanned = max(self._scanned, self._base)

    def _show_new(self) -> None:
        """One beginInsertRows for the lines that became rows this frame."""
        end = self._end()
        if self._scanned >= end:
            return
        if self._rows is None:
            first = self._scanned - self._base
            self.beginInsertRows(_ROOT, first, end - self._base - 1)
            self._scanned = end
            self.endInsertRows()
            return
        found = self._scan()
        if found:
            n = len(self._rows)
            self.beginInsertRows(_ROOT, n, n + len(found) - 1)
            self._rows += found
            self.endInsertRows()

    def _counts(self) -> tuple[int, int, bool]:
        return len(self._lines), self._row_count(), self._get_filtering()

    def _emit_counts(self, lines: int, matches: int, filtering: bool) -> None:
        if lines != len(self._lines):
            self.lineCountChanged.emit()
        if matches != self._row_count():
            self.matchCountChanged.emit()
        if filtering != self._get_filtering():
            self.filteringChanged.emit()


# == SessionModel ==================================================================


class SessionRole(enum.IntEnum):
    """SessionModel roles (QML names in :data:`SESSION_ROLE_NAMES`)."""

    NAME = _USER + 1
    KIND = enum.auto()
    SESSION = enum.auto()
    AGENT = enum.auto()
    RUNNING = enum.auto()
    TOTAL = enum.auto()
    LABEL = enum.auto()


SESSION_ROLE_NAMES: dict[int, QByteArray] = {
    _DISPLAY: QByteArray(b"display"),
    _TOOLTIP: QByteArray(b"toolTip"),
    SessionRole.NAME: QByteArray(b"name"),
    SessionRole.KIND: QByteArray(b"kind"),
    SessionRole.SESSION: QByteArray(b"session"),
    SessionRole.AGENT: QByteArray(b"agent"),
    SessionRole.RUNNING: QByteArray(b"running"),
    SessionRole.TOTAL: QByteArray(b"total"),
    SessionRole.LABEL: QByteArray(b"label"),
}

_COUNT_ROLES = [
    _DISPLAY,
    _TOOLTIP,
    SessionRole.RUNNING,
    SessionRole.TOTAL,
    SessionRole.LABEL,
]


@dataclass(slots=True, eq=False)
class _Node:
    session: str
    agent: str  # "" for a session node
    row: int  # rows never move: nodes are only ever appended
    key: int  # a session's QModelIndex internal id for its children (0 is the top level)
    running: int = 0
    total: int = 0
    children: list[_Node] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.agent or self.session

    @property
    def label(self) -> str:
        return f"{self.name}  {self.running}/{self.total}" if self.total else self.name


@QmlElement
class SessionModel(QAbstractItemModel):
    """The tree of sessions and their agents, with live process counts.

    Top-level rows are sessions, their children agents, in the order first
    seen (declared with ``addSession``, or met in the supervisor's events);
    nodes are never removed, so rows never move. ``running`` and ``total`` count
    processes (a session: over all its agents), ``label`` reads
    ``"build  2/5"`` (running/total; just the name while empty) and is also
    ``display``. Counts follow start/exit/dismiss events; a lost event
    (a full queue) triggers a recount.
    """

    ROLE_NAMES = SESSION_ROLE_NAMES

    def __init__(self, supervisor: Supervisor | None = None, parent: QObject | None = None):
        super().__init__(parent)
        self._sup = resolve_supervisor(supervisor, "SessionModel")
        self._sessions: list[_Node] = []
        self._by_name: dict[str, _Node] = {}
        self._by_key: dict[int, _Node] = {}
        self._procs: dict[int, tuple[_Node, bool]] = {}  # proc id -> (agent node, running)
        self._lifeline = Lifeline(self)
        self._pump = self._lifeline.hold(
            EventPump(self._sup, "session.*.agent.*.proc.>", self._on_events)
        )
        self._recount()

    def close(self) -> None:
        """Stop following the supervisor (the tree stays). Done on destruction too."""
        self._lifeline.close()

    # -- Qt model interface ------------------------------------------------------

    def index(self, row: int, column: int, parent: ModelIndex = _ROOT) -> QModelIndex:
        if column != 0 or row < 0:
            return QModelIndex()
        if not parent.isValid():
            if row < len(self._sessions):
                return self.createIndex(row, 0, 0)
            return QModelIndex()
        node = self._node(parent)
        if node is None or node.agent or row >= len(node.children):
            return QModelIndex()
        return self.createIndex(row, 0, node.key)

    def parent(  # type: ignore[override]
        self, index: ModelIndex | None = None
    ) -> QModelIndex | QObject | None:
        if index is None:  # QObject.parent()
            return super().parent()
        key = index.internalId() if index.isValid() else 0
        if key == 0:
            return QModelIndex()
        session = self._by_key.get(key)
        return self.createIndex(session.row, 0, 0) if session is not None else QModelIndex()

    def rowCount(self, parent: ModelIndex = _ROOT) -> int:
        if not parent.isValid():
            return len(self._sessions)
        if parent.column() != 0:
            return 0
        node = self._node(parent)
        return len(node.children) if node is not None and not node.agent else 0

    def columnCount(self, parent: ModelIndex = _ROOT) -> int:
        return 1

    def roleNames(self) -> dict[int, QByteArray]:
        return self.ROLE_NAMES

    def data(self, index: ModelIndex, role: int = _DISPLAY) -> object:
        node = self._node(index)
        if node is None:
            return empty_data(role)
        match role:
            case Qt.ItemDataRole.DisplayRole | SessionRole.LABEL:
                return node.label
            case Qt.ItemDataRole.ToolTipRole:
                return f"{node.name}: {node.running} running, {node.total} in all"
            case SessionRole.NAME:
                return node.name
            case SessionRole.KIND:
                return "agent" if node.agent else "session"
            case SessionRole.SESSION:
                return node.session
            case SessionRole.AGENT:
                return node.agent
            case SessionRole.RUNNING:
                return node.running
            case SessionRole.TOTAL:
                return node.total
            case _:
                return empty_data(role)

    def _node(self, index: ModelIndex) -> _Node | None:
        if not index.isValid():
            return None
        row, key = index.row(), index.internalId()
        if key == 0:
            return self._sessions[row] if row < len(self._sessions) else None
        session = self._by_key.get(key)
        if session is None or row >= len(session.children):
            return None
        return session.children[row]

    def _index_of(self, node: _Node) -> QModelIndex:
        if not node.agent:
            return self.createIndex(node.row, 0, 0)
        return self.createIndex(node.row, 0, self._by_name[node.session].key)

    # -- slots -----------------------------------------------------------------

    @Slot(str, result=QModelIndex)
    @Slot(str, str, result=QModelIndex)
    def indexFor(self, session: str, agent: str = "") -> QModelIndex:
        """The index of a session (``agent == ""``) or an agent; invalid if unknown."""
        node = self._by_name.get(session)
        if node is None:
            return QModelIndex()
        if agent:
            node = next((n for n in node.children if n.agent == agent), None)
            if node is None:
                return QModelIndex()
        return self._index_of(node)

    @Slot(str)
    @Slot(str, list)
    def addSession(self, session: str, agents: list[str] | None = None) -> None:
        """Show a session and agents before any of their processes start."""
        if not session:
            return
        for agent in agents or ():
            if agent:
                self._agent_node(session, str(agent))
        self._session_node(session)

    # -- tree building -----------------------------------------------------------

    def _session_node(self, session: str) -> _Node:
        node = self._by_name.get(session)
        if node is None:
            row = len(self._sessions)
            node = _Node(session, "", row, key=len(self._by_key) + 1)
            self.beginInsertRows(_ROOT, row, row)
            self._sessions.append(node)
            self._by_name[session] = node
            self._by_key[node.key] = node
            self.endInsertRows()
        return node

    def _agent_node(self, session: str, agent: str) -> _Node:
        parent = self._session_node(session)
        for node in parent.children:
            if node.agent == agent:
                return node
        row = len(parent.children)
        node = _Node(session, agent, row, key=0)
        self.beginInsertRows(self._index_of(parent), row, row)
        parent.children.append(node)
        self.endInsertRows()
        return node

    # -- counting --------------------------------------------------------------

    def _on_events(self, events: list[Event]) -> None:
        if any(ev.missed for ev in events):
            self._recount()
            return
        dirty: dict[int, _Node] = {}
        for ev in events:
            match ev.kind:
                case EventKind.START:
                    self._count(ev.proc_id, ev.session, ev.agent, running=True, dirty=dirty)
                case EventKind.EXIT:
                    known = self._procs.get(ev.proc_id)
                    if known is not None and known[1]:
                        self._procs[ev.proc_id] = (known[0], False)
                        self._add(known[0], 0, -1, dirty)
                case EventKind.DISMISS:
                    known = self._procs.pop(ev.proc_id, None)
                    if known is not None:
                        self._add(known[0], -1, -1 if known[1] else 0, dirty)
                case _:
                    pass
        self._announce(dirty.values())

    def _count(
        self, proc_id: int, session: str, agent: str, *, running: bool, dirty: dict[int, _Node]
    ) -> None:
        if proc_id in self._procs:
            return
        node = self._agent_node(session, agent)
        self._procs[proc_id] = (node, running)
        self._add(node, 1, 1 if running else 0, dirty)

    def _add(self, agent: _Node, total: int, running: int, dirty: dict[int, _Node]) -> None:
        session = self._by_name[agent.session]
        for node in (agent, session):
            node.total += total
            node.running += running
            dirty[id(node)] = node

    def _announce(self, nodes: Iterable[_Node]) -> None:
        for node in nodes:
            index = self._index_of(node)
            self.dataChanged.emit(index, index, _COUNT_ROLES)

    def _recount(self) -> None:
        """Count from the supervisor's list (at start, and after lost events)."""
        before = {id(n): (n.running, n.total) for n in self._all_nodes()}
        for node in self._all_nodes():
            node.running = node.total = 0
        self._procs.clear()
        scratch: dict[int, _Node] = {}
        for p in reversed(self._sup.procs()):  # oldest first: sessions appear in start order
            self._count(p.id, p.session, p.agent, running=p.exit is None, dirty=scratch)
        self._announce(n for n in self._all_nodes() if before.get(id(n)) != (n.running, n.total))

    def _all_nodes(self) -> list[_Node]:
        return [n for s in self._sessions for n in (s, *s.children)]
