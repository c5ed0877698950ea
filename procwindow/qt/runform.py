"""The Run… dialog's form: what it opens on, its checks, and the errors beside its fields.

The dialog's QML collects the four fields and binds to a :class:`RunForm`; the
form decides. ``open(session, agent)`` fills in a scope and asks the dialog to
show; ``submit(session, agent, commandLine, cwd)`` checks the fields and starts
the command through the :class:`~procwindow.qt.ProcController`. A failure
leaves the dialog open, the fields as typed, with a one-line error beside the
field at fault (``commandError``, ``sessionError``, ``agentError``,
``cwdError``) or under them all (``generalError``); ``succeeded(procId)`` tells
the dialog to close. The checks are :func:`read_fields`, a plain function.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shlex
from dataclasses import dataclass
from enum import StrEnum

import shiboken6
from PySide6.QtCore import QObject, Signal, Slot
from PySide6.QtQml import QmlElement, QmlUncreatable

from procwindow.core import (
    CommandNotFound,
    CwdMissing,
    InvalidArgv,
    InvalidScope,
    NotExecutable,
    ProcwindowError,
    rules,
)

from ._support import current_loop, qt_property, set_stored, stored_property
from .controller import ProcController

__all__ = [
    "Field",
    "RunForm",
    "RunRequest",
    "cwd_placeholder",
    "failure_field",
    "read_fields",
    "resolve_cwd",
]

QML_IMPORT_NAME = "Procwindow"
QML_IMPORT_MAJOR_VERSION = 1

log = logging.getLogger("procwindow.qt")


class Field(StrEnum):
    """A place of the form an error is shown: beside a field, or under them all."""

    COMMAND = "command"
    SESSION = "session"
    AGENT = "agent"
    CWD = "cwd"
    GENERAL = "general"


@dataclass(frozen=True, slots=True)
class RunRequest:
    """The fields of the form, read: what to spawn, where."""

    session: str
    agent: str
    argv: tuple[str, ...]
    cwd: str | None
    """An absolute path, or None for the supervisor's own directory."""


def _shown_dir(path: str) -> str:
    home = os.path.expanduser("~")
    if home not in ("", "/", "~") and (path == home or path.startswith(home + os.sep)):
        return "~" + path[len(home) :]
    return path


def cwd_placeholder(here: str) -> str:
    """What the empty Directory field says: where an empty or relative path leads.

    >>> cwd_placeholder("/srv/app")
    '/srv/app  (relative paths start here)'
    """
    return f"{_shown_dir(here)}  (relative paths start here)"


def resolve_cwd(text: str, here: str) -> str | None:
    """The directory typed in the form as an absolute path (None when empty).

    ``~`` is the home directory; a relative path starts from ``here`` (the
    window's current directory). Whether it exists is the supervisor's to say.

    >>> resolve_cwd("src/../build", "/srv/app"), resolve_cwd("  ", "/srv/app")
    ('/srv/app/build', None)
    """
    text = text.strip()
    if not text:
        return None
    return os.path.normpath(os.path.join(here, os.path.expanduser(text)))


def _bad_name(name: str) -> str:
    """Why ``name``, refused by :func:`rules.check_scope_name`, is refused, briefly."""
    if not name:
        return ""
    parts = [repr(c) for c in "*>" if c in name]
    if any(c.isspace() for c in name):
        parts.append("spaces")
    if any(not c.isprintable() and not c.isspace() for c in name):
        parts.append("control characters")
    if not parts:
        return "not a usable name"
    listed = ", ".join(parts[:-1]) + " or " + parts[-1] if len(parts) > 1 else parts[0]
    return f"may not contain {listed}"


def read_fields(
    session: str, agent: str, command_line: str, cwd: str, here: str | None
) -> tuple[RunRequest | None, dict[Field, str]]:
    """Read the form's fields: a request to spawn, or the error of each field at fault.

    Session and agent are trimmed and must be names (:func:`rules.check_scope_name`);
    the command line is split as a shell would split it (``shlex``), but no shell
    runs it; the directory goes through :func:`resolve_cwd` (``here=None``: the
    supervisor is elsewhere, and resolves it there: it is only trimmed).

    >>> read_fields("web", "api", "make 'a b'", "", "/srv")[0]
    RunRequest(session='web', agent='api', argv=('make', 'a b'), cwd=None)
    >>> read_fields("we b", "", "echo 'hi", "", "/srv")[1]  # doctest: +NORMALIZE_WHITESPACE
    {<Field.COMMAND: 'command'>: 'cannot read the line: no closing quotation',
     <Field.SESSION: 'session'>: 'may not contain spaces',
     <Field.AGENT: 'agent'>: 'name an agent'}
    """
    errors: dict[Field, str] = {}
    argv: list[str] = []
    try:
        argv = shlex.split(command_line)
    except ValueError as exc:
        reason = str(exc)
        errors[Field.COMMAND] = f"cannot read the line: {reason[:1].lower()}{reason[1:]}"
    else:
        if not argv:
            errors[Field.COMMAND] = "type a command"
    names: dict[Field, str] = {}
    for field, kind, empty, value in (
        (Field.SESSION, "session", "name a session", session),
        (Field.AGENT, "agent", "name an agent", agent),
    ):
        name = value.strip()
        try:
            names[field] = rules.check_scope_name(kind, name)
        except InvalidScope:
            errors[field] = _bad_name(name) or empty
    if errors:
        return None, errors
    where = resolve_cwd(cwd, here) if here is not None else cwd.strip() or None
    request = RunRequest(names[Field.SESSION], names[Field.AGENT], tuple(argv), where)
    return request, {}


def failure_field(exc: BaseException) -> tuple[Field, str]:
    """Where the form shows a failed spawn, and what it says there.

    >>> failure_field(CwdMissing("/srv/nope"))
    (<Field.CWD: 'cwd'>, 'no such directory: /srv/nope')
    """
    match exc:
        case CwdMissing():
            return Field.CWD, f"{exc.why}: {exc.cwd}"
        case CommandNotFound() | NotExecutable() | InvalidArgv():
            return Field.COMMAND, str(exc)
        case _:
            return Field.GENERAL, str(exc)


@QmlElement
@QmlUncreatable("a window's view-model makes its Run dialog's form")
class RunForm(QObject):  # type: ignore[operator]  # PySide's stub: not callable
    """The state and decisions of one Run… dialog.

    ``open(session, agent)`` sets the scope the dialog shows (the default
    session and agent where none is named), clears the errors and emits
    ``openRequested``. ``submit`` checks the fields (:func:`read_fields`); if
    they read, ``busy`` turns true and the controller spawns the command. Then
    either ``succeeded(procId)`` (the dialog closes; the controller's
    ``started`` fires too) or the error shows beside the field at fault
    (:func:`failure_field`), and ``busy`` is false again. ``edited(field)``
    clears that field's error, and the general one.
    """

    scopeChanged = Signal()
    errorsChanged = Signal()
    busyChanged = Signal()
    stdinChanged = Signal()
    ptyChanged = Signal()
    openRequested = Signal()
    """The dialog should open, on ``session``/``agent``."""
    succeeded = Signal(int, arguments=["procId"])
    """The command started as proc ``procId``: the dialog closes."""

    def __init__(self, controller: ProcController, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._controller = controller
        self._session = ""
        self._agent = ""
        self._cwd_placeholder = ""
        self._where = ""
        self._errors: dict[Field, str] = {}
        self._busy = False
        self._stdin = False
        self._pty = False
        self._task: asyncio.Task[None] | None = None

    session = stored_property(str, "_session", scopeChanged, writable=False)
    """The session the dialog opens on."""
    agent = stored_property(str, "_agent", scopeChanged, writable=False)
    """The agent the dialog opens on."""
    where = stored_property(str, "_where", scopeChanged, writable=False)
    """The supervisor the command runs on, named, when it is not only this window's ("")."""
    title = qt_property(
        str,
        lambda self: f"Run a command on {self._where}" if self._where else "Run a command",
        notify=scopeChanged,
    )
    """The dialog's title: which supervisor runs the command, when it is not this window's."""
    cwdPlaceholder = stored_property(str, "_cwd_placeholder", scopeChanged, writable=False)
    """What the empty Directory field says (the directory relative paths start from)."""
    busy = stored_property(bool, "_busy", busyChanged, writable=False)
    """True while a spawn is in flight (OK is disabled)."""
    stdin = stored_property(bool, "_stdin", stdinChanged)
    """Start the command with its stdin open (the output pane's stdin line writes to it)."""
    pty = stored_property(bool, "_pty", ptyChanged)
    """Start the command on a terminal (the output pane shows its screen; keys
    typed there go to it), at the supervisor's default size until the pane's
    terminal view gives it the pane's."""

    def _error(self, field: Field) -> str:
        return self._errors.get(field, "")

    def _get_command_error(self) -> str:
        return self._error(Field.COMMAND)

    def _get_session_error(self) -> str:
        return self._error(Field.SESSION)

    def _get_agent_error(self) -> str:
        return self._error(Field.AGENT)

    def _get_cwd_error(self) -> str:
        return self._error(Field.CWD)

    def _get_general_error(self) -> str:
        return self._error(Field.GENERAL)

    # Each error is "" while its field is fine.
    commandError = qt_property(str, _get_command_error, notify=errorsChanged)
    """Beside Command: not found, not executable, cannot be split, empty."""
    sessionError = qt_property(str, _get_session_error, notify=errorsChanged)
    """Beside Session: empty, or not a name."""
    agentError = qt_property(str, _get_agent_error, notify=errorsChanged)
    """Beside Agent: empty, or not a name."""
    cwdError = qt_property(str, _get_cwd_error, notify=errorsChanged)
    """Beside Directory: no such directory, not a directory."""
    generalError = qt_property(str, _get_general_error, notify=errorsChanged)
    """Under the fields: any other failure (the kernel refused, the supervisor is closing…)."""

    def _set_errors(self, errors: dict[Field, str]) -> None:
        if errors != self._errors:
            self._errors = errors
            self.errorsChanged.emit()

    @Slot(str, str)
    def open(
        self,
        session: str,
        agent: str,
        *,
        controller: ProcController | None = None,
        where: str = "",
    ) -> None:
        """Open the dialog on ``(session, agent)`` (the defaults where one is "").

        ``controller``: the one to start the command through from now on (the
        scope's supervisor's). ``where``: the supervisor, named for the person,
        when it is not (only) this window's own: the title says where the
        command runs, and a directory is the server's to resolve, not this
        machine's.
        """
        if controller is not None and not self._busy:
            self._controller = controller
        self._session = session or rules.DEFAULT_SESSION
        self._agent = agent or rules.DEFAULT_AGENT
        self._where = where
        self._cwd_placeholder = (
            "the server's directory (relative paths start there)"
            if where
            else cwd_placeholder(os.getcwd())
        )
        self.scopeChanged.emit()
        if not self._busy:
            self._set_errors({})
        self.openRequested.emit()

    @Slot(str)
    def edited(self, field: str) -> None:
        """The person edited ``field`` (``command``, ``session``, ``agent``, ``cwd``)."""
        kept = {key: text for key, text in self._errors.items() if key != field}
        kept.pop(Field.GENERAL, None)
        self._set_errors(kept)

    @Slot(str, str, str, str)
    def submit(self, session: str, agent: str, commandLine: str, cwd: str) -> None:
        """OK: check the fields and, if they read, start the command."""
        if self._busy:
            return
        here = None if self._where else os.getcwd()
        request, errors = read_fields(session, agent, commandLine, cwd, here)
        self._set_errors(errors)
        if request is None:
            return
        set_stored(self, "_busy", True, RunForm.busyChanged)
        self._task = current_loop().create_task(
            self._spawn(request, self._stdin, self._pty), name=f"procwindow run {request.argv[0]}"
        )

    async def wait_idle(self) -> None:
        """Wait until the spawn in flight, if any, has ended."""
        if self._task is not None:
            await asyncio.wait({self._task})

    async def _spawn(self, request: RunRequest, stdin: bool, pty: bool) -> None:
        errors: dict[Field, str] = {}
        proc_id = -1
        try:
            proc_id = await self._controller.spawn(
                request.argv,
                session=request.session,
                agent=request.agent,
                cwd=request.cwd,
                stdin=stdin,
                pty=pty,
            )
        except ProcwindowError as exc:
            field, message = failure_field(exc)
            errors[field] = message
        except Exception as exc:
            log.exception("procwindow: run %s failed", request.argv[0])
            errors[Field.GENERAL] = f"cannot run {request.argv[0]}: {exc}"
        # The form outlived its window (deleted with it): no report.
        if not shiboken6.isValid(self):
            return
        self._task = None
        set_stored(self, "_busy", False, RunForm.busyChanged)
        self._set_errors(errors)
        if proc_id >= 0:
            self.succeeded.emit(proc_id)
