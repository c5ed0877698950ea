"""SessionModel: the tree of sessions and their agents, with live process counts."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from PySide6.QtCore import QAbstractItemModel, QByteArray, QModelIndex, QObject, Qt, Slot
from PySide6.QtQml import QmlElement

from procwindow.core import Event, EventKind, ScopeCounts, SupervisorAPI, count_scopes
from procwindow.core.rules import scope_pattern

from .._support import EventPump, Lifeline, empty_data, resolve_supervisor
from .roles import COUNT_ROLES, DISPLAY, ROOT, SESSION_ROLE_NAMES, ModelIndex, SessionRole

__all__ = ["SessionModel", "count_text"]

QML_IMPORT_NAME = "Procwindow"
QML_IMPORT_MAJOR_VERSION = 1


def count_text(running: int, total: int, *, connected: bool) -> str:
    """What a node of the session tree says beside its name: ``2/5`` (running of
    all), ``disconnected`` while its supervisor is out of reach, "" with no
    process.

    >>> count_text(2, 5, connected=True), count_text(0, 0, connected=True)
    ('2/5', '')
    """
    if not connected:
        return "disconnected"
    return f"{running}/{total}" if total > 0 else ""


@dataclass(slots=True, eq=False)
class _Node:
    session: str
    agent: str  # "" for a session node
    row: int  # rows never move: nodes are only ever appended
    key: int  # a session's QModelIndex internal id for its children (0 is the top level)
    counts: ScopeCounts = field(default_factory=ScopeCounts)  # a session's: over its agents
    children: list[_Node] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.agent or self.session

    @property
    def label(self) -> str:
        return self.counts.label(self.name)


@QmlElement
class SessionModel(QAbstractItemModel):
    """The tree of sessions and their agents, with live process counts.

    Top-level rows are sessions, their children agents, in the order first
    seen (declared with ``addSession``, met in the supervisor's events, or named
    by a running workspace's command, before its first proc starts);
    nodes are never removed, so rows never move. ``running`` and ``total`` count
    processes, not table rows (a session: over all its agents): a workspace
    command's earlier runs, folded into its one row in the process table, count
    in ``total`` each, as the supervisor holds them (they have exited: none
    counts as running), ``label`` reads
    ``"build  2/5"`` (running/total; just the name while empty) and is also
    ``display``; ``countText`` is the count alone (``2/5``, "" while empty).
    Counts follow start/exit/dismiss events; a lost event (a full queue)
    triggers a recount.
    """

    ROLE_NAMES = SESSION_ROLE_NAMES

    def __init__(self, supervisor: SupervisorAPI | None = None, parent: QObject | None = None):
        super().__init__(parent)
        self._sup = resolve_supervisor(supervisor, "SessionModel")
        self._sessions: list[_Node] = []
        self._by_name: dict[str, _Node] = {}
        self._by_key: dict[int, _Node] = {}
        self._procs: dict[int, tuple[_Node, bool]] = {}  # proc id -> (agent node, running)
        self._lifeline = Lifeline(self)
        self._pump = self._lifeline.hold(EventPump(self._sup, scope_pattern(), self._on_events))
        self._recount()

    def close(self) -> None:
        """Stop following the supervisor (the tree stays). Done on destruction too."""
        self._lifeline.close()

    # -- Qt model interface ------------------------------------------------------

    def index(self, row: int, column: int, parent: ModelIndex = ROOT) -> QModelIndex:
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

    def rowCount(self, parent: ModelIndex = ROOT) -> int:
        if not parent.isValid():
            return len(self._sessions)
        if parent.column() != 0:
            return 0
        node = self._node(parent)
        return len(node.children) if node is not None and not node.agent else 0

    def columnCount(self, parent: ModelIndex = ROOT) -> int:
        return 1

    def roleNames(self) -> dict[int, QByteArray]:
        return self.ROLE_NAMES

    def data(self, index: ModelIndex, role: int = DISPLAY) -> object:
        node = self._node(index)
        if node is None:
            return empty_data(role)
        match role:
            case Qt.ItemDataRole.DisplayRole | SessionRole.LABEL:
                return node.label
            case Qt.ItemDataRole.ToolTipRole:
                return f"{node.name}: {node.counts.running} running, {node.counts.total} in all"
            case SessionRole.NAME:
                return node.name
            case SessionRole.KIND:
                return "agent" if node.agent else "session"
            case SessionRole.SESSION:
                return node.session
            case SessionRole.AGENT:
                return node.agent
            case SessionRole.RUNNING:
                return node.counts.running
            case SessionRole.TOTAL:
                return node.counts.total
            case SessionRole.CONNECTED:
                return True  # a SessionModel on its own is its supervisor's, in process
            case SessionRole.COUNT_TEXT:
                return count_text(node.counts.running, node.counts.total, connected=True)
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
            self.beginInsertRows(ROOT, row, row)
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
                    if ev.proc_id not in self._procs:
                        node = self._agent_node(ev.session, ev.agent)
                        self._procs[ev.proc_id] = (node, True)
                        self._add(node, ScopeCounts(1, 1), dirty)
                case EventKind.EXIT:
                    known = self._procs.get(ev.proc_id)
                    if known is not None and known[1]:
                        self._procs[ev.proc_id] = (known[0], False)
                        self._add(known[0], ScopeCounts(-1, 0), dirty)
                case EventKind.DISMISS:
                    known = self._procs.pop(ev.proc_id, None)
                    if known is not None:
                        self._add(known[0], ScopeCounts(-1 if known[1] else 0, -1), dirty)
                case EventKind.PHASE:  # a workspace's command, maybe waiting to start
                    self._agent_node(ev.session, ev.agent)
                case _:
                    pass
        self._announce(dirty.values())

    def _add(self, agent: _Node, change: ScopeCounts, dirty: dict[int, _Node]) -> None:
        """Add ``change`` (which may be negative) to an agent and its session."""
        session = self._by_name[agent.session]
        for node in (agent, session):
            node.counts += change
            dirty[id(node)] = node

    def _announce(self, nodes: Iterable[_Node]) -> None:
        for node in nodes:
            index = self._index_of(node)
            self.dataChanged.emit(index, index, COUNT_ROLES)

    def _recount(self) -> None:
        """Count from the supervisor's list (at start, and after lost events)."""
        before = {id(n): n.counts for n in self._all_nodes()}
        procs = self._sup.procs()
        self._procs.clear()
        for p in reversed(procs):  # oldest first: sessions appear in start order
            self._procs[p.id] = (self._agent_node(p.session, p.agent), p.running)
        for run in self._sup.workspaces:  # commands that have not started yet
            for state in run.states():
                self._agent_node(state.session, state.agent)
        tree = count_scopes(procs)
        for session in self._sessions:
            agents = tree.get(session.session, {})
            for agent in session.children:
                agent.counts = agents.get(agent.agent, ScopeCounts())
            session.counts = sum((agent.counts for agent in session.children), ScopeCounts())
        self._announce(n for n in self._all_nodes() if before.get(id(n)) != n.counts)

    def _all_nodes(self) -> list[_Node]:
        return [n for s in self._sessions for n in (s, *s.children)]
