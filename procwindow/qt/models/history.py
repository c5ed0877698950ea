"""HistoryModel: every recorded run of a scope, newest first (the History view).

It lists what :meth:`Supervisor.history` lists: this supervisor's procs (live
and dismissed), earlier runs' and other supervisors' sharing the state
directory. Their output reads from disk like a live proc's.
"""

from __future__ import annotations

import enum
import time
import weakref
from dataclasses import dataclass

from PySide6.QtCore import QAbstractListModel, QByteArray, QObject, Qt, QTimer, Signal, Slot
from PySide6.QtQml import QmlElement

from procwindow.core import Event, EventKind, Proc, SupervisorAPI, format_runtime
from procwindow.core.rules import scope_pattern

from .._support import (
    EventPump,
    Later,
    Lifeline,
    empty_data,
    qt_property,
    resolve_supervisor,
    scope_properties,
    set_stored,
    stored_property,
)
from ._keyed import sync_rows
from .format import status_color, status_text
from .roles import DISPLAY, ROOT, ModelIndex, role_names

__all__ = ["DEFAULT_HISTORY_LIMIT", "POLL_MS", "HistoryModel", "HistoryRole", "when_text"]

QML_IMPORT_NAME = "Procwindow"
QML_IMPORT_MAJOR_VERSION = 1

#: Runs listed at most (the newest).
DEFAULT_HISTORY_LIMIT = 500
#: While shown, the list is read again this often: runs of other supervisors
#: sharing the state directory send this one no events.
POLL_MS = 5000
#: Events of this supervisor that change the list (read again soon after).
_KINDS = frozenset({EventKind.START, EventKind.EXIT, EventKind.DISMISS})


class HistoryRole(enum.IntEnum):
    """HistoryModel roles (QML names in :data:`HistoryModel.roleNames`)."""

    PROC_ID = int(Qt.ItemDataRole.UserRole) + 1
    COMMAND = enum.auto()
    TOOL = enum.auto()
    SESSION = enum.auto()
    AGENT = enum.auto()
    STATUS_TEXT = enum.auto()
    STATUS_COLOR = enum.auto()
    WHEN_TEXT = enum.auto()
    RUNTIME_TEXT = enum.auto()
    LINES = enum.auto()
    LIVE = enum.auto()
    RUNNING = enum.auto()
    LINES_TEXT = enum.auto()


_ROLE_NAMES = role_names(HistoryRole, tooltip=True)
#: What the empty list says, by ``available``.
_EMPTY_TEXTS = {
    True: "No runs recorded for this scope",
    False: "History is off: only this session's processes are listed",
}


def when_text(stamp: float, now: float | None = None) -> str:
    """When a run started: ``14:02:11`` today, ``Nov 30 14:02`` this year, else
    ``2025-11-30 14:02``."""
    at, today = time.localtime(stamp), time.localtime(time.time() if now is None else now)
    if at[:3] == today[:3]:
        return time.strftime("%H:%M:%S", at)
    if at.tm_year == today.tm_year:
        return time.strftime("%b %d %H:%M", at)
    return time.strftime("%Y-%m-%d %H:%M", at)


@dataclass(frozen=True, slots=True)
class _Row:
    proc_id: int
    command: str
    tool: str
    session: str
    agent: str
    status_text: str
    status_color: str
    when_text: str
    runtime_text: str
    lines: int
    live: bool
    running: bool

    @classmethod
    def of(cls, proc: Proc, now_mono: float) -> _Row:
        return cls(
            proc.id,
            proc.cmd,
            proc.tool,
            proc.session,
            proc.agent,
            status_text(proc.state, proc.exit, proc.options.stop_signal),
            status_color(proc.state, proc.exit),
            when_text(proc.started_at),
            format_runtime(proc.runtime(now_mono)),
            proc.last_seq,
            proc.live,
            proc.running,
        )

    @property
    def tool_tip(self) -> str:
        """The command, its scope and status; a run this supervisor no longer
        holds says it comes from the history."""
        where = "" if self.live else "  ·  from the history"
        return f"{self.command}\n{self.session} / {self.agent}  ·  {self.status_text}{where}"

    def value(self, role: int) -> object:
        match role:
            case HistoryRole.PROC_ID:
                return self.proc_id
            case Qt.ItemDataRole.DisplayRole | HistoryRole.COMMAND:
                return self.command
            case HistoryRole.TOOL:
                return self.tool
            case HistoryRole.SESSION:
                return self.session
            case HistoryRole.AGENT:
                return self.agent
            case HistoryRole.STATUS_TEXT:
                return self.status_text
            case HistoryRole.STATUS_COLOR:
                return self.status_color
            case HistoryRole.WHEN_TEXT:
                return self.when_text
            case HistoryRole.RUNTIME_TEXT:
                return self.runtime_text
            case HistoryRole.LINES:
                return self.lines
            case HistoryRole.LIVE:
                return self.live
            case HistoryRole.RUNNING:
                return self.running
            case HistoryRole.LINES_TEXT:
                return f"{self.lines:,}"
            case Qt.ItemDataRole.ToolTipRole:
                return self.tool_tip
        return empty_data(role)


@QmlElement
class HistoryModel(QAbstractListModel):
    """The recorded runs of a scope (``session``, and ``agent`` or "" for all of
    the session's), newest first, at most ``limit``.

    It reads the history while ``active`` (a view shows it): at once, soon
    after this supervisor starts, ends or dismisses a proc of the scope, and
    every POLL_MS for runs of other supervisors. Rows that stay keep their
    place; new runs come in at the top.
    """

    sessionChanged = Signal()
    agentChanged = Signal()
    activeChanged = Signal()
    limitChanged = Signal()
    countChanged = Signal()
    availableChanged = Signal()

    def __init__(
        self,
        supervisor: SupervisorAPI | None = None,
        parent: QObject | None = None,
        *,
        session: str = "",
        agent: str = "",
        poll_ms: int = POLL_MS,
    ) -> None:
        super().__init__(parent)
        self._sup = resolve_supervisor(supervisor, "HistoryModel")
        self._session, self._agent = session, agent
        self._active = False
        self._limit = DEFAULT_HISTORY_LIMIT
        self._rows: list[_Row] = []
        self._available = self._sup.history_enabled
        self._lifeline = Lifeline(self)
        self._pump: EventPump | None = None
        self._reload_later = Later(self, self.reload)
        self._poll = QTimer(self)
        self._poll.setInterval(poll_ms)
        self._poll.timeout.connect(self.reload)
        # A RemoteSupervisor answers history from what it fetched last, and says
        # when a fresh answer has come: read again then.
        ref = weakref.ref(self)

        def heard(what: str) -> None:
            model = ref()
            if model is not None and what == "history":
                model._reload_later.start()

        self._lifeline.on_close(self._sup.add_listener(heard))

    # -- properties ----------------------------------------------------------------

    session, agent = scope_properties(sessionChanged, agentChanged)
    """The scope: a session, and one of its agents ("" for all of them)."""

    @Slot(str, str)
    def setScope(self, session: str, agent: str) -> None:
        """Show the runs of another scope."""
        if (session, agent) == (self._session, self._agent):
            return
        old = (self._session, self._agent)
        self._session, self._agent = session, agent
        if old[0] != session:
            self.sessionChanged.emit()
        if old[1] != agent:
            self.agentChanged.emit()
        self._listen()
        if self._active:
            self._set_rows([])  # another scope's rows are not this one's
            self.reload()

    def _on_active(self) -> None:
        self._listen()
        if self._active:
            self._poll.start()
            self.reload()
        else:
            self._poll.stop()

    active = stored_property(bool, "_active", activeChanged, on_change=_on_active)
    """True while a view shows the list: only then is the history read."""

    def _on_limit(self) -> None:
        self._limit = max(1, self._limit)
        if self._active:
            self.reload()

    limit = stored_property(int, "_limit", limitChanged, on_change=_on_limit)
    """Runs listed at most, the newest."""

    def _get_count(self) -> int:
        return len(self._rows)

    count = qt_property(int, _get_count, notify=countChanged)
    """Rows listed."""

    available = stored_property(bool, "_available", availableChanged, writable=False)
    """False when the supervisor keeps no history (then only its own procs show)."""
    emptyText = qt_property(
        str, lambda self: _EMPTY_TEXTS[self._available], notify=availableChanged
    )
    """What the list says while it is empty."""

    # -- reading -------------------------------------------------------------------

    @Slot()
    def reload(self) -> None:
        """Read the history again now (while active)."""
        if not self._active:
            return
        set_stored(self, "_available", self._sup.history_enabled, HistoryModel.availableChanged)
        session = self._session or None
        agent = self._agent or None
        if self._available:
            procs = self._sup.history(session=session, agent=agent, limit=self._limit)
        else:  # no database: this supervisor's own procs are its history
            procs = self._sup.procs(session, agent)[: self._limit]
        now = time.monotonic()
        self._set_rows([_Row.of(p, now) for p in procs])

    @Slot(int, result=int)
    def rowOf(self, procId: int) -> int:
        """The row listing ``procId``, -1 if none."""
        for row, item in enumerate(self._rows):
            if item.proc_id == procId:
                return row
        return -1

    @Slot(int, result=int)
    def procIdAt(self, row: int) -> int:
        """The proc listed at ``row``, -1 if none."""
        return self._rows[row].proc_id if 0 <= row < len(self._rows) else -1

    def _listen(self) -> None:
        self._lifeline.release(self._pump)
        self._pump = None
        if self._active and self._session:
            pattern = scope_pattern(self._session, self._agent)
            self._pump = self._lifeline.hold(EventPump(self._sup, pattern, self._on_events))

    def _on_events(self, events: list[Event]) -> None:
        if any(e.kind in _KINDS for e in events):
            self._reload_later.start()

    # -- updating rows in place ------------------------------------------------------

    def _set_rows(self, rows: list[_Row]) -> None:
        count = len(self._rows)
        sync_rows(self, self._rows, rows, _id_of)
        if len(self._rows) != count:
            self.countChanged.emit()

    # -- Qt model interface ------------------------------------------------------

    def rowCount(self, parent: ModelIndex = ROOT) -> int:
        return 0 if parent.isValid() else len(self._rows)

    def roleNames(self) -> dict[int, QByteArray]:
        return dict(_ROLE_NAMES)

    def data(self, index: ModelIndex, role: int = DISPLAY) -> object:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return empty_data(role)
        return self._rows[index.row()].value(role)


def _id_of(row: _Row) -> int:
    return row.proc_id
