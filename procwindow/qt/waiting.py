"""WorkspaceStatus: what the workspaces running on a supervisor do in one scope.

The process table lists procs; a workspace command that has not started yet
(it waits for a dependency, or was skipped) has none. This object says what
those commands wait for, for the ProcWindow's workspace bar.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtQml import QmlElement, QmlUncreatable

from procwindow.core import CommandState, Event, EventKind, Phase
from procwindow.core.rules import scope_pattern

from ._support import EventPump, Later, Lifeline, qt_property
from .controller import ProcController

__all__ = ["WorkspaceStatus"]

QML_IMPORT_NAME = "Procwindow"
QML_IMPORT_MAJOR_VERSION = 1

#: Phases of a command with no proc to show in the table.
_NOT_STARTED = frozenset({Phase.WAITING, Phase.SKIPPED})


@QmlElement
@QmlUncreatable("a ProcWindowModel makes its workspace status")
class WorkspaceStatus(QObject):  # type: ignore[operator]  # PySide's stub: not callable
    """The workspace commands of a scope that have no proc yet.

    ``pendingText``: ``web: waiting for api (ready) · cron: skipped: …`` for the
    commands of the scope that wait or were skipped ("" when none);
    ``pendingCount`` counts them. They follow the supervisor's ``phase`` events.
    (What a command that runs depends on is in its row's Status tooltip:
    :func:`~procwindow.qt.models.format.depends_text`.)
    """

    changed = Signal()

    def __init__(self, controller: ProcController, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._sup = controller.supervisor
        self._scope = ("", "")
        self._pending: list[CommandState] = []
        self._lifeline = Lifeline(self)
        self._pump: EventPump | None = None
        self._update_later = Later(self, self.update)

    def setScope(self, session: str, agent: str) -> None:
        """Follow another scope (a session, and one agent or "" for all)."""
        if (session, agent) == self._scope:
            return
        self._scope = (session, agent)
        self._lifeline.release(self._pump)
        self._pump = None
        if session:
            pattern = scope_pattern(session, agent)
            self._pump = self._lifeline.hold(EventPump(self._sup, pattern, self._on_events))
        self.update()

    def _on_events(self, events: list[Event]) -> None:
        if any(e.kind is EventKind.PHASE for e in events):
            self._update_later.start()

    @Slot()
    def update(self) -> None:
        """Read the workspaces' states again."""
        session, agent = self._scope
        pending = [
            state
            for run in self._sup.workspaces
            for state in run.states()
            if state.phase in _NOT_STARTED
            and state.session == session
            and (not agent or state.agent == agent)
        ]
        if pending != self._pending:
            self._pending = pending
            self.changed.emit()

    def _get_pending_text(self) -> str:
        now = time.time()
        return "  ·  ".join(f"{s.name}: {s.describe(now)}" for s in self._pending)

    def _get_pending_count(self) -> int:
        return len(self._pending)

    pendingText = qt_property(str, _get_pending_text, notify=changed)
    """What the scope's commands without a proc wait for, or why they were skipped."""
    pendingCount = qt_property(int, _get_pending_count, notify=changed)
    """How many commands of the scope have no proc yet (waiting or skipped)."""
