"""The objects QML acts through: process actions, the active scope, resource stats.

The models are read-only views; every action a person takes (term, kill, run…)
goes through :class:`ProcController`, which calls the supervisor and reports a
failure as ``actionFailed(procId, action, message)``. :class:`ActiveScope` is the
main window's selection, and :class:`StatsSampler` samples one process's
resource use once a second.
"""

from __future__ import annotations

import asyncio
import logging
import shlex
from collections.abc import Coroutine, Sequence
from typing import Any

import shiboken6
from PySide6.QtCore import QObject, QTimer, Signal, Slot
from PySide6.QtQml import QmlElement

from procwindow.core import ProcNotFound, ProcStats, ProcwindowError, SupervisorAPI, rules

from ._support import (
    current_loop,
    format_bytes,
    qt_property,
    resolve_supervisor,
    scope_properties,
)

__all__ = ["DEFAULT_AGENT", "NO_PROC", "RUN_TOOL", "ActiveScope", "ProcController", "StatsSampler"]

QML_IMPORT_NAME = "Procwindow"
QML_IMPORT_MAJOR_VERSION = 1

log = logging.getLogger("procwindow.qt")

#: The agent a command typed into the window runs as when only a session is chosen.
DEFAULT_AGENT = rules.DEFAULT_AGENT
#: The ``tool`` recorded for commands started from the window.
RUN_TOOL = rules.DEFAULT_TOOL
#: The ``procId`` of ``actionFailed`` for an action on no single proc (run, termAll).
NO_PROC = -1
#: Milliseconds between two resource samples.
STATS_INTERVAL_MS = 1000


@QmlElement
class ProcController(QObject):
    """Process actions for QML: each slot starts the supervisor call on the loop.

    Slots return at once; the work runs as a task on the running (qasync) loop.
    A failure is reported through ``actionFailed(procId, action, message)``: the
    proc acted on (:data:`NO_PROC` for ``run`` and ``termAll``), the slot's name
    (``"term"``, ``"run"``…) and the error's own text, meant for the user
    (``command not found: 'nmp'``). A new process is reported through
    ``started(procId)``, a restart also through ``restarted(procId, newProcId)``.
    An action runs to its end even if the controller is destroyed first (a Term
    clicked just before the window closes still terminates); it then reports to
    no one. Before closing the supervisor, an application awaits
    :meth:`wait_idle` so that no action is left half-done.
    """

    actionFailed = Signal(int, str, str, arguments=["procId", "action", "message"])
    """An action failed: ``(procId, action, message)``; the message is meant for the user."""
    started = Signal(int, arguments=["procId"])
    """``run`` or ``restart`` started a process with this id."""
    restarted = Signal(int, int, arguments=["procId", "newProcId"])
    """``restart(procId)`` started its command again as ``newProcId`` (before ``started``)."""

    def __init__(self, supervisor: SupervisorAPI | None = None, parent: QObject | None = None):
        super().__init__(parent)
        self._sup = resolve_supervisor(supervisor, "ProcController")
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def supervisor(self) -> SupervisorAPI:
        """The supervisor this controller acts on."""
        return self._sup

    @Slot(int)
    def term(self, procId: int) -> None:
        """The proc's stop signal (SIGTERM unless it has its own) to its group;
        SIGKILL after its graceful timeout."""
        self._start(self._sup.term(procId), procId, "term", f"terminate {procId}")

    @Slot(int)
    def kill(self, procId: int) -> None:
        """SIGKILL the proc's group now."""
        self._start(self._sup.kill(procId), procId, "kill", f"kill {procId}")

    @Slot(int)
    def interrupt(self, procId: int) -> None:
        """SIGINT the proc's group, as Ctrl-C would."""
        self._start(self._sup.interrupt(procId), procId, "interrupt", f"interrupt {procId}")

    @Slot(int, str, int)
    def sendSignal(self, procId: int, name: str, osPid: int) -> None:
        """Send signal ``name`` (``"TERM"``, ``"HUP"``, ``"9"``…) to the proc's process
        group (``osPid`` 0), or to that one process of its tree (as ``tree`` lists it)."""
        what = f"send {rules.signal_name(name)} to {osPid or procId}"
        self._start(self._signal(procId, name, osPid), procId, "sendSignal", what)

    @Slot(int, str)
    def write(self, procId: int, text: str) -> None:
        """Write ``text`` (UTF-8) to the stdin of a proc spawned with ``stdin=True``,
        after the writes under way (a full pipe is waited for on the loop)."""
        self._start(self._sup.write(procId, text), procId, "write", f"write to {procId}")

    @Slot(int)
    def closeStdin(self, procId: int) -> None:
        """Close the proc's stdin (it reads end of file) once the writes under way are done."""
        what = f"close the stdin of {procId}"
        self._start(self._sup.close_stdin(procId), procId, "closeStdin", what)

    @Slot(int)
    def dismiss(self, procId: int) -> None:
        """Hide an exited proc from the live view (its row goes away; its history
        stays). A workspace command's newest run stands for the row its earlier
        runs are folded into: they go with it."""
        try:
            for proc_id in self._folded_behind(procId):
                self._sup.dismiss(proc_id)
            self._sup.dismiss(procId)
        except ProcwindowError as exc:
            self.actionFailed.emit(procId, "dismiss", str(exc))

    def _folded_behind(self, proc_id: int) -> list[int]:
        """The ended earlier runs of the command whose newest run is ``proc_id``
        (none unless it is that), oldest first."""
        p = self._sup.get(proc_id)
        run = p.command_run
        if run is None or p.exit is None:
            return []
        key = (run.workspace, run.command)
        same = [
            q
            for q in self._sup.procs(p.session, p.agent)
            if q.command_run is not None and (q.command_run.workspace, q.command_run.command) == key
        ]
        if max(q.id for q in same) != proc_id:
            return []  # an earlier run, shown on its own: it goes alone
        return [q.id for q in same if q.id != proc_id and q.exit is not None]

    @Slot(int)
    def restart(self, procId: int) -> None:
        """Start the proc's command again as a new proc, stopping it first if it runs."""
        self._start(self._restart(procId), procId, "restart", f"restart {procId}")

    @Slot(str, str)
    def termAll(self, session: str, agent: str) -> None:
        """Terminate every running proc of a session (``agent == ""``) or of one agent."""
        if not session:
            self.actionFailed.emit(NO_PROC, "termAll", "choose a session first")
            return
        self._start(
            self._sup.term_all(session, agent or None), NO_PROC, "termAll", f"terminate {session}"
        )

    @Slot(str, str, str)
    @Slot(str, str, str, str)
    def run(self, session: str, agent: str, commandLine: str, cwd: str = "") -> None:
        """Start ``commandLine`` (split like a shell would, but no shell runs it).

        ``agent == ""`` runs it as :data:`DEFAULT_AGENT`; ``cwd == ""`` in the
        supervisor's directory. Emits ``started(procId)`` or ``actionFailed``.
        """
        if not session:
            self.actionFailed.emit(NO_PROC, "run", "choose a session first")
            return
        try:
            argv = shlex.split(commandLine)
        except ValueError as exc:
            self.actionFailed.emit(NO_PROC, "run", f"cannot read the command line: {exc}")
            return
        if not argv:
            self.actionFailed.emit(NO_PROC, "run", "the command line is empty")
            return
        self._start(
            self._run(session, agent or DEFAULT_AGENT, argv, cwd or None),
            NO_PROC,
            "run",
            f"run {argv[0]}",
        )

    async def wait_idle(self) -> None:
        """Wait until every action started so far has finished."""
        while self._tasks:
            await asyncio.wait(set(self._tasks))

    async def spawn(
        self,
        argv: Sequence[str],
        *,
        session: str,
        agent: str,
        cwd: str | None = None,
        stdin: bool = False,
        pty: bool = False,
    ) -> int:
        """Start ``argv`` as ``run`` does and return the new proc's id
        (``stdin``: with a pipe to its stdin, for ``write``; ``pty``: on a
        terminal, which ``write`` types into).

        For a caller that shows a failure itself (the Run dialog, beside the
        field at fault): the supervisor's error is raised, not reported through
        ``actionFailed``. ``started(procId)`` fires as for ``run``.
        """
        proc = await self._sup.spawn(
            argv, session=session, agent=agent, tool=RUN_TOOL, cwd=cwd, stdin=stdin, pty=pty
        )
        self._started(proc.id)
        return proc.id

    async def _run(self, session: str, agent: str, argv: list[str], cwd: str | None) -> None:
        await self.spawn(argv, session=session, agent=agent, cwd=cwd)

    async def _signal(self, proc_id: int, name: str, os_pid: int) -> None:
        if not await self._sup.signal(proc_id, name, os_pid=os_pid or None):
            gone = f"pid {os_pid} has already exited" if os_pid else "it has already exited"
            self._failed(proc_id, "sendSignal", f"{rules.signal_name(name)} not sent: {gone}")

    async def _restart(self, proc_id: int) -> None:
        if self._sup.get(proc_id).running:
            await self._sup.term(proc_id)
        proc = await self._sup.restart(proc_id)
        if shiboken6.isValid(self):
            self.restarted.emit(proc_id, proc.id)
        self._started(proc.id)

    def _start(
        self, coro: Coroutine[Any, Any, object], proc_id: int, action: str, what: str
    ) -> None:
        task = current_loop().create_task(
            self._report(coro, proc_id, action, what), name=f"procwindow {what}"
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _report(
        self, coro: Coroutine[Any, Any, object], proc_id: int, action: str, what: str
    ) -> None:
        try:
            await coro
        except ProcwindowError as exc:
            self._failed(proc_id, action, str(exc))
        except Exception as exc:
            log.exception("procwindow: %s failed", what)
            self._failed(proc_id, action, f"{what} failed: {exc}")

    # The action outlived the controller (deleted by its parent or by QML): no report.
    def _started(self, proc_id: int) -> None:
        if shiboken6.isValid(self):
            self.started.emit(proc_id)

    def _failed(self, proc_id: int, action: str, message: str) -> None:
        if shiboken6.isValid(self):
            self.actionFailed.emit(proc_id, action, message)


@QmlElement
class ActiveScope(QObject):
    """The scope selected in the main window: a session, and optionally one agent.

    ``changed`` fires once after any change (``setScope`` changes both at once),
    after the per-property signals.
    """

    sessionChanged = Signal()
    agentChanged = Signal()
    changed = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._session = ""
        self._agent = ""

    session, agent = scope_properties(sessionChanged, agentChanged)
    """The selected ``session`` ("" for none) and ``agent`` ("" for the whole session)."""

    @Slot(str, str)
    def setScope(self, session: str, agent: str) -> None:
        """Select ``(session, agent)``."""
        session_changed = session != self._session
        agent_changed = agent != self._agent
        self._session, self._agent = session, agent
        if session_changed:
            self.sessionChanged.emit()
        if agent_changed:
            self.agentChanged.emit()
        if session_changed or agent_changed:
            self.changed.emit()


_NO_STATS = ProcStats(0.0, 0, 0, 0, 0, 0)


@QmlElement
class StatsSampler(QObject):
    """Resource use of one proc's tree (the proc and its live descendants), once a second.

    Set ``procId`` (-1: none). Sampling starts at once (CPU % reads 0.0 on the
    first sample: it is measured between two) and stops when the proc has
    exited and left no descendant; the values then read zero.
    """

    procIdChanged = Signal()
    statsChanged = Signal()

    def __init__(
        self,
        supervisor: SupervisorAPI | None = None,
        parent: QObject | None = None,
        *,
        interval_ms: int = STATS_INTERVAL_MS,
    ) -> None:
        super().__init__(parent)
        self._sup = resolve_supervisor(supervisor, "StatsSampler")
        self._proc_id = -1
        self._stats = _NO_STATS
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.sample)

    def _get_proc_id(self) -> int:
        return self._proc_id

    def _set_proc_id(self, proc_id: int) -> None:
        proc_id = max(proc_id, -1)
        if proc_id == self._proc_id:
            return
        self._proc_id = proc_id
        self.procIdChanged.emit()
        self._timer.stop()
        self._set_stats(_NO_STATS)
        if proc_id >= 0:
            self._timer.start()
            self.sample()

    def _get_cpu(self) -> float:
        return self._stats.cpu_percent

    def _get_rss(self) -> int:
        return self._stats.rss

    def _get_rss_text(self) -> str:
        return format_bytes(self._stats.rss)

    def _get_threads(self) -> int:
        return self._stats.threads

    def _get_descendants(self) -> int:
        return self._stats.descendants

    def _get_active(self) -> bool:
        return self._timer.isActive()

    procId = qt_property(int, _get_proc_id, _set_proc_id, notify=procIdChanged)
    """The proc sampled (the supervisor's id), -1 for none."""
    cpuPercent = qt_property(float, _get_cpu, notify=statsChanged)
    """CPU use over the last interval, in % of one core (can exceed 100)."""
    # qint64: a Property(int) is a 32-bit int and overflows at 2 GiB.
    rssBytes = qt_property("qint64", _get_rss, notify=statsChanged)
    """Resident memory of the tree, in bytes."""
    rssText = qt_property(str, _get_rss_text, notify=statsChanged)
    """``rssBytes`` for people: ``12.3 MiB``."""
    threads = qt_property(int, _get_threads, notify=statsChanged)
    """Threads in the tree."""
    descendants = qt_property(int, _get_descendants, notify=statsChanged)
    """Live processes in the tree besides the proc itself."""
    active = qt_property(bool, _get_active, notify=statsChanged)
    """True while sampling."""

    @Slot()
    def sample(self) -> None:
        """Take a sample now (the timer does it every interval)."""
        if self._proc_id < 0:
            return
        try:
            stats = self._sup.stats(self._proc_id)
            running = self._sup.get(self._proc_id).running
        except ProcNotFound:
            stats, running = _NO_STATS, False
        if not running and stats.descendants == 0:
            self._timer.stop()
        self._set_stats(stats, force=not self._timer.isActive())

    def _set_stats(self, stats: ProcStats, *, force: bool = False) -> None:
        if stats != self._stats or force:
            self._stats = stats
            self.statsChanged.emit()
