"""Desktop notifications: a proc failed while no window of the application had the focus.

The desktop's own notifier shows them, where it has one: ``notify-send``
(libnotify), else ``gdbus`` calling ``org.freedesktop.Notifications`` on the
session bus. Without either, :attr:`FailureNotifier.available` is false and
nothing is sent. A burst of failures is one notification.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable, Sequence

from PySide6.QtCore import QObject, QProcess, Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication

from procwindow.core import Event, EventKind, ExitInfo, ExitReason, ProcState, SupervisorAPI

from ._support import EventPump, Lifeline, plural, resolve_supervisor
from .models.format import status_text

__all__ = ["COALESCE_MS", "FAILURE_REASONS", "FailureNotifier", "notifier_command"]

log = logging.getLogger("procwindow")

#: Failures within this many milliseconds of the first are told in one notification.
COALESCE_MS = 1500
#: Exit reasons told: the proc failed on its own, or ran out of time. A proc
#: someone stopped (terminated, killed) is not news.
FAILURE_REASONS = frozenset({ExitReason.FAILED, ExitReason.TIMEOUT})
#: Milliseconds a notifier command may take before it is killed.
_COMMAND_MS = 5000
_APP = "procwindow"


def notifier_command() -> list[str] | None:
    """The command that shows a notification here (summary and body are
    appended), or None when the desktop offers none."""
    send = shutil.which("notify-send")
    if send is not None:
        return [send, f"--app-name={_APP}", "--icon=dialog-error", "--"]
    gdbus = shutil.which("gdbus")
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    has_bus = bool(os.environ.get("DBUS_SESSION_BUS_ADDRESS")) or (
        bool(runtime) and os.path.exists(os.path.join(runtime, "bus"))
    )
    if gdbus is not None and has_bus:
        return [
            gdbus,
            "call",
            "--session",
            "--dest=org.freedesktop.Notifications",
            "--object-path=/org/freedesktop/Notifications",
            "--method=org.freedesktop.Notifications.Notify",
            _APP,
            "0",
            "dialog-error",
        ]
    return None


def _application_active() -> bool:
    return QGuiApplication.applicationState() == Qt.ApplicationState.ApplicationActive


class FailureNotifier(QObject):
    """Tells the desktop when a proc fails (FAILURE_REASONS) while the
    application is not active (none of its windows has the focus).

    Failures within COALESCE_MS are one notification: the proc and how it
    ended, or how many failed. ``command`` is the notifier to run (summary and
    body are appended; default: :func:`notifier_command`); ``active()`` says
    whether the application has the focus (default: Qt's application state).
    ``host_label``, when set, names the supervisor in each summary (``ci on
    build: make failed (2)``): the window that shows several sets it.
    ``sent`` fires with the summary and body of each notification sent.
    """

    sent = Signal(str, str)

    def __init__(
        self,
        supervisor: SupervisorAPI | None = None,
        parent: QObject | None = None,
        *,
        command: Sequence[str] | None = None,
        active: Callable[[], bool] = _application_active,
        coalesce_ms: int = COALESCE_MS,
    ) -> None:
        super().__init__(parent)
        self._sup = resolve_supervisor(supervisor, "FailureNotifier")
        self._command = list(command) if command is not None else notifier_command()
        self._active = active
        self.host_label = ""
        self._failed: list[Event] = []
        self._running: set[QProcess] = set()
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(coalesce_ms)
        self._timer.timeout.connect(self._send)
        self._lifeline = Lifeline(self)
        if self._command is not None:
            self._lifeline.hold(EventPump(self._sup, ">", self._on_events))

    @property
    def available(self) -> bool:
        """True when the desktop has a notifier to run."""
        return self._command is not None

    def close(self) -> None:
        """Stop listening; a notification under way is let finish."""
        self._timer.stop()
        self._failed = []
        self._lifeline.close()

    def _on_events(self, events: list[Event]) -> None:
        for event in events:
            if event.kind is EventKind.EXIT and event.reason in FAILURE_REASONS:
                if self._active():
                    continue  # the person is looking at the window
                self._failed.append(event)
                if not self._timer.isActive():
                    self._timer.start()

    def _send(self) -> None:
        failed, self._failed = self._failed, []
        if not failed or self._command is None:
            return
        if len(failed) == 1:
            event = failed[0]
            summary = f"{event.cmd or event.tool or f'process {event.proc_id}'} {_ended(event)}"
            body = f"{event.session} / {event.agent} · process {event.proc_id}"
        else:
            summary = f"{plural(len(failed), 'process', 'processes')} failed"
            body = "\n".join(
                f"{e.cmd or e.tool or e.proc_id}: {_ended(e)} ({e.session} / {e.agent})"
                for e in failed[:5]
            )
            if len(failed) > 5:
                body += f"\n… and {len(failed) - 5} more"
        if self.host_label:
            summary = f"{self.host_label}: {summary}"
        self._run([*self._command, summary, body])
        self.sent.emit(summary, body)

    def _run(self, argv: list[str]) -> None:
        process = QProcess(self)
        process.setProgram(argv[0])
        process.setArguments(argv[1:])
        process.setStandardOutputFile(QProcess.nullDevice())
        process.setStandardErrorFile(QProcess.nullDevice())
        self._running.add(process)
        process.finished.connect(lambda *_: self._done(process))
        process.errorOccurred.connect(lambda error: self._failed_to_run(process, error))
        QTimer.singleShot(_COMMAND_MS, process, process.kill)
        process.start()

    def _done(self, process: QProcess) -> None:
        if process in self._running:
            self._running.discard(process)
            process.deleteLater()

    def _failed_to_run(self, process: QProcess, error: QProcess.ProcessError) -> None:
        if error == QProcess.ProcessError.FailedToStart:
            log.warning("procwindow: cannot run the desktop notifier %s", process.program())
            self._command = None  # not again
            self._done(process)


def _ended(event: Event) -> str:
    """``failed (2)``, ``timed out (SIGTERM)``: how the proc ended, as the table says it."""
    code = event.code if event.code is not None else 0
    reason = event.reason if event.reason is not None else ExitReason.FAILED
    info = ExitInfo(code, event.signal, reason, event.runtime or 0.0)
    return status_text(ProcState.EXITED, info)
