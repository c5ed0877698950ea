"""HostTreeModel: the main window's session tree over one supervisor or several.

Each :class:`~procwindow.qt.hosts.Host` brings its own
:class:`~procwindow.qt.models.SessionModel` (sessions, their agents, live
counts); this model shows them side by side. With one host the tree is that
host's sessions at the top level, as a window of one supervisor has always
shown it; with several, each host is a top-level node (``kind == "host"``)
with its sessions and agents below. Every node answers ``host`` (its host's
key) and ``connected`` (false while that host's link is down).

The model maps its indexes onto the hosts' models and forwards their row
insertions and data changes (a SessionModel only ever appends rows, and
changes counts). Adding a second host, or removing down to one, resets the
model: the tree changes shape.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QAbstractItemModel, QByteArray, QModelIndex, QObject, Qt, Signal, Slot
from PySide6.QtQml import QmlElement, QmlUncreatable

from ._support import connect_all, empty_data, qt_property
from .hosts import Host
from .models import SessionModel
from .models.roles import COUNT_ROLES, DISPLAY, ROOT, SESSION_ROLE_NAMES, ModelIndex, SessionRole
from .models.sessions import count_text

__all__ = ["HostTreeModel"]

QML_IMPORT_NAME = "Procwindow"
QML_IMPORT_MAJOR_VERSION = 1

#: The internal id of a host's row (the top level, in a tree of several hosts).
_HOST_ROW = 0


@dataclass(eq=False)
class _Branch:
    """A host in the tree, and the internal ids of its rows' parents."""

    host: Host
    sessions_id: int  # internal id of its session rows
    agents_ids: dict[int, int] = field(default_factory=dict)  # session row -> id of its agents
    disconnect: list[Callable[[], None]] = field(default_factory=list)

    @property
    def model(self) -> SessionModel:
        return self.host.session_model


@QmlElement
@QmlUncreatable("the application makes the session tree over its hosts")
class HostTreeModel(QAbstractItemModel):  # type: ignore[operator]  # PySide's stub: not callable
    """The session tree over the window's hosts (see the module's docstring).

    ``addHost``/``removeHost`` change the hosts (``hostsChanged`` follows);
    ``scopeOf(index)`` names a node's host, session and agent, and
    ``indexFor(session, agent, host)`` finds one (a host's own node with
    ``session == ""``, when the tree shows hosts).
    """

    ROLE_NAMES = SESSION_ROLE_NAMES
    hostsChanged = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._branches: list[_Branch] = []
        self._ids: dict[int, tuple[_Branch, int]] = {}  # id -> (branch, session row or -1)
        self._next_id = itertools.count(1)

    # -- the hosts -------------------------------------------------------------------

    def hosts(self) -> list[Host]:
        """The hosts, in the order they were added (the first is the window's own)."""
        return [b.host for b in self._branches]

    def host(self, key: str) -> Host | None:
        """The host of this key, or None."""
        branch = self._branch_of(key)
        return branch.host if branch is not None else None

    @property
    def shows_hosts(self) -> bool:
        """True when each host is a node of its own (there are several)."""
        return len(self._branches) > 1

    def _get_shows_hosts(self) -> bool:
        return self.shows_hosts

    showsHosts = qt_property(bool, _get_shows_hosts, notify=hostsChanged)
    """True when each host is a node of its own (there are several)."""

    def _branch_of(self, key: str) -> _Branch | None:
        return next((b for b in self._branches if b.host.key == key), None)

    def addHost(self, host: Host) -> None:
        """Show ``host`` after the others; ValueError if its key is taken."""
        if self._branch_of(host.key) is not None:
            raise ValueError(f"a host named {host.key!r} is shown already")
        branch = _Branch(host, next(self._next_id))
        self._ids[branch.sessions_id] = (branch, -1)
        reshape = len(self._branches) < 2  # the first host, or the second: a new shape
        row = len(self._branches)
        if reshape:
            self.beginResetModel()
        else:
            self.beginInsertRows(ROOT, row, row)
        self._branches.append(branch)
        self._follow(branch)
        if reshape:
            self.endResetModel()
        else:
            self.endInsertRows()
        self.hostsChanged.emit()

    def removeHost(self, key: str) -> Host | None:
        """Stop showing the host of ``key`` (its models stay open); the host, or None."""
        branch = self._branch_of(key)
        if branch is None:
            return None
        row = self._branches.index(branch)
        reshape = len(self._branches) <= 2  # back to one host (or none): a new shape
        if reshape:
            self.beginResetModel()
        else:
            self.beginRemoveRows(ROOT, row, row)
        self._branches.remove(branch)
        for disconnect in branch.disconnect:
            disconnect()
        for key_id in (branch.sessions_id, *branch.agents_ids.values()):
            self._ids.pop(key_id, None)
        if reshape:
            self.endResetModel()
        else:
            self.endRemoveRows()
        self.hostsChanged.emit()
        return branch.host

    def _follow(self, branch: _Branch) -> None:
        model, host = branch.model, branch.host

        def about_to_insert(parent: QModelIndex, first: int, last: int) -> None:
            self.beginInsertRows(self._from_source(branch, parent), first, last)

        def inserted(*_args: Any) -> None:
            self.endInsertRows()

        def changed(top: QModelIndex, bottom: QModelIndex, roles: list[int]) -> None:
            self._source_changed(branch, top, bottom, roles)

        def link_changed() -> None:
            self._link_changed(branch)

        branch.disconnect = connect_all(
            [
                (model.rowsAboutToBeInserted, about_to_insert),
                (model.rowsInserted, inserted),
                (model.dataChanged, changed),
                (host.connectedChanged, link_changed),
            ]
        )

    def _link_changed(self, branch: _Branch) -> None:
        """Every node of ``branch`` reads its host's link again (they grey together)."""
        roles = [SessionRole.CONNECTED, *COUNT_ROLES]
        index = self._host_index(branch)
        if index.isValid():
            self.dataChanged.emit(index, index, roles)
        model = branch.model
        sessions = model.rowCount()
        if sessions == 0:
            return
        first, last = model.index(0, 0), model.index(sessions - 1, 0)
        self.dataChanged.emit(
            self._from_source(branch, first), self._from_source(branch, last), roles
        )
        for row in range(sessions):
            parent = model.index(row, 0)
            agents = model.rowCount(parent)
            if agents:
                top, bottom = model.index(0, 0, parent), model.index(agents - 1, 0, parent)
                self.dataChanged.emit(
                    self._from_source(branch, top), self._from_source(branch, bottom), roles
                )

    # -- mapping ------------------------------------------------------------------------

    def _host_index(self, branch: _Branch) -> QModelIndex:
        if not self.shows_hosts or branch not in self._branches:
            return QModelIndex()
        return self.createIndex(self._branches.index(branch), 0, _HOST_ROW)

    def _agents_id(self, branch: _Branch, session_row: int) -> int:
        key = branch.agents_ids.get(session_row)
        if key is None:
            key = branch.agents_ids[session_row] = next(self._next_id)
            self._ids[key] = (branch, session_row)
        return key

    def _from_source(self, branch: _Branch, source: QModelIndex) -> QModelIndex:
        """This model's index of a node of ``branch``'s SessionModel (invalid: its root)."""
        if not source.isValid():
            return self._host_index(branch)
        parent = source.parent()
        if not parent.isValid():
            return self.createIndex(source.row(), 0, branch.sessions_id)
        return self.createIndex(source.row(), 0, self._agents_id(branch, parent.row()))

    def _to_source(self, index: ModelIndex) -> tuple[_Branch | None, QModelIndex]:
        """The branch of ``index``, and its SessionModel's index (invalid for a host's node)."""
        if not index.isValid():
            return None, QModelIndex()
        key = index.internalId()
        if key == _HOST_ROW:
            row = index.row()
            return (self._branches[row] if row < len(self._branches) else None), QModelIndex()
        found = self._ids.get(key)
        if found is None:
            return None, QModelIndex()
        branch, session_row = found
        if session_row < 0:
            return branch, branch.model.index(index.row(), 0)
        return branch, branch.model.index(index.row(), 0, branch.model.index(session_row, 0))

    def _source_changed(
        self, branch: _Branch, top: QModelIndex, bottom: QModelIndex, roles: list[int]
    ) -> None:
        self.dataChanged.emit(
            self._from_source(branch, top), self._from_source(branch, bottom), roles
        )
        if not top.parent().isValid():  # a session's counts: its host's change too
            index = self._host_index(branch)
            if index.isValid():
                self.dataChanged.emit(index, index, COUNT_ROLES)

    # -- Qt model interface ---------------------------------------------------------------

    def index(self, row: int, column: int, parent: ModelIndex = ROOT) -> QModelIndex:
        if column != 0 or row < 0 or not self._branches:
            return QModelIndex()
        if not parent.isValid():
            if self.shows_hosts:
                if row >= len(self._branches):
                    return QModelIndex()
                return self.createIndex(row, 0, _HOST_ROW)
            return self._child(self._branches[0], QModelIndex(), row)
        owner, source = self._to_source(parent)
        return self._child(owner, source, row) if owner is not None else QModelIndex()

    def _child(self, branch: _Branch, source_parent: QModelIndex, row: int) -> QModelIndex:
        if row >= branch.model.rowCount(source_parent):
            return QModelIndex()
        return self._from_source(branch, branch.model.index(row, 0, source_parent))

    def parent(  # type: ignore[override]
        self, index: ModelIndex | None = None
    ) -> QModelIndex | QObject | None:
        if index is None:  # QObject.parent()
            return super().parent()
        if not index.isValid() or index.internalId() == _HOST_ROW:
            return QModelIndex()
        branch, source = self._to_source(index)
        if branch is None:
            return QModelIndex()
        return self._from_source(branch, source.parent())

    def rowCount(self, parent: ModelIndex = ROOT) -> int:
        if not self._branches or (parent.isValid() and parent.column() != 0):
            return 0
        if not parent.isValid():
            return len(self._branches) if self.shows_hosts else self._branches[0].model.rowCount()
        branch, source = self._to_source(parent)
        return branch.model.rowCount(source) if branch is not None else 0

    def columnCount(self, parent: ModelIndex = ROOT) -> int:
        return 1

    def roleNames(self) -> dict[int, QByteArray]:
        return self.ROLE_NAMES

    def data(self, index: ModelIndex, role: int = DISPLAY) -> object:
        branch, source = self._to_source(index)
        if branch is None:
            return empty_data(role)
        host = branch.host
        if role == SessionRole.HOST:
            return host.key
        if role == SessionRole.CONNECTED:
            return host.connected
        if role == SessionRole.COUNT_TEXT and not host.connected:
            return count_text(0, 0, connected=False)
        if source.isValid():
            return branch.model.data(source, role)
        return self._host_data(branch, role)

    def _host_data(self, branch: _Branch, role: int) -> object:
        host, model = branch.host, branch.model
        match role:
            case SessionRole.NAME:
                return host.label
            case SessionRole.KIND:
                return "host"
            case SessionRole.SESSION | SessionRole.AGENT:
                return ""
            case SessionRole.RUNNING | SessionRole.TOTAL:
                return self._host_count(model, role)
            case SessionRole.COUNT_TEXT:
                running = self._host_count(model, SessionRole.RUNNING)
                return count_text(
                    running, self._host_count(model, SessionRole.TOTAL), connected=True
                )
            case Qt.ItemDataRole.DisplayRole | SessionRole.LABEL:
                return host.label if host.connected else f"{host.label} (disconnected)"
            case Qt.ItemDataRole.ToolTipRole:
                where = host.where or "the supervisor of this window"
                return where if host.connected else f"{where}: disconnected, reconnecting"
            case _:
                return empty_data(role)

    @staticmethod
    def _host_count(model: SessionModel, role: int) -> int:
        """A host's ``running`` or ``total``: its sessions' summed."""
        return sum(int(model.index(r, 0).data(role)) for r in range(model.rowCount()))

    # -- finding nodes --------------------------------------------------------------------

    def scopeOf(self, index: ModelIndex) -> tuple[Host, str, str] | None:
        """The host, session and agent of a node ("" for a host's own node), or None."""
        branch, source = self._to_source(index)
        if branch is None:
            return None
        if not source.isValid():
            return branch.host, "", ""
        session = str(source.data(SessionRole.SESSION))
        return branch.host, session, str(source.data(SessionRole.AGENT))

    @Slot(str, result=QModelIndex)
    @Slot(str, str, result=QModelIndex)
    @Slot(str, str, str, result=QModelIndex)
    def indexFor(self, session: str, agent: str = "", host: str = "") -> QModelIndex:
        """The node of a session (``agent == ""``) or an agent of ``host`` (its
        key; "" for the first); with ``session == ""``, the host's own node
        (when the tree shows hosts). Invalid if unknown."""
        branch = self._branch_of(host) if host else next(iter(self._branches), None)
        if branch is None:
            return QModelIndex()
        if not session:
            return self._host_index(branch)
        source = branch.model.indexFor(session, agent)
        return self._from_source(branch, source) if source.isValid() else QModelIndex()
