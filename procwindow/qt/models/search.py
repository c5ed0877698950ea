"""SearchModel: the lines of every run, live and past, that match a pattern.

The main window's search across all history. :meth:`Supervisor.search` does
the work (on the loop, in slices, newest runs first); this model collects its
hits and shows them in batches, a frame at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import functools
import logging
import weakref
from collections.abc import AsyncIterator
from dataclasses import dataclass

from PySide6.QtCore import QAbstractListModel, QByteArray, QObject, Qt, QTimer, Signal, Slot
from PySide6.QtQml import QmlElement

from procwindow.core import InvalidPattern, ProcNotFound, SearchHit, Stream, SupervisorAPI

from .. import ansi
from .._support import (
    current_loop,
    empty_data,
    plural,
    qt_property,
    resolve_supervisor,
    set_stored,
    stored_property,
)
from .format import time_text
from .roles import DISPLAY, ROOT, ModelIndex

__all__ = ["FLUSH_MS", "MAX_HITS", "SearchModel", "SearchRole"]

QML_IMPORT_NAME = "Procwindow"
QML_IMPORT_MAJOR_VERSION = 1

log = logging.getLogger("procwindow")

#: Hits shown at most: a search stops there (and says so).
MAX_HITS = 5_000
#: Milliseconds between two batches of hits shown.
FLUSH_MS = 50
#: Characters of a hit's line shown (the whole line opens with the proc).
_TEXT_CHARS = 400


class SearchRole(enum.IntEnum):
    """SearchModel roles (QML names in :meth:`SearchModel.roleNames`)."""

    PROC_ID = int(Qt.ItemDataRole.UserRole) + 1
    SEQ = enum.auto()
    SESSION = enum.auto()
    AGENT = enum.auto()
    COMMAND = enum.auto()
    TEXT = enum.auto()
    TIME_TEXT = enum.auto()
    STREAM = enum.auto()
    FIRST_OF_PROC = enum.auto()
    RUN_TITLE = enum.auto()
    SCOPE_TEXT = enum.auto()
    IS_STDERR = enum.auto()


_ROLE_NAMES: dict[int, QByteArray] = {
    SearchRole.PROC_ID: QByteArray(b"procId"),
    SearchRole.SEQ: QByteArray(b"seq"),
    SearchRole.SESSION: QByteArray(b"session"),
    SearchRole.AGENT: QByteArray(b"agent"),
    SearchRole.COMMAND: QByteArray(b"command"),
    SearchRole.TEXT: QByteArray(b"text"),
    SearchRole.TIME_TEXT: QByteArray(b"timeText"),
    SearchRole.STREAM: QByteArray(b"stream"),
    SearchRole.FIRST_OF_PROC: QByteArray(b"firstOfProc"),
    SearchRole.RUN_TITLE: QByteArray(b"runTitle"),
    SearchRole.SCOPE_TEXT: QByteArray(b"scopeText"),
    SearchRole.IS_STDERR: QByteArray(b"isStderr"),
    Qt.ItemDataRole.ToolTipRole: QByteArray(b"toolTip"),
}
#: What the line under the field says before any search.
_HINT = "Enter searches the live processes and the history, newest runs first"


@dataclass(frozen=True, slots=True)
class _Hit:
    proc_id: int
    seq: int
    session: str
    agent: str
    command: str
    text: str
    time_text: str
    stream: str
    first_of_proc: bool

    def value(self, role: int) -> object:
        match role:
            case SearchRole.PROC_ID:
                return self.proc_id
            case SearchRole.SEQ:
                return self.seq
            case SearchRole.SESSION:
                return self.session
            case SearchRole.AGENT:
                return self.agent
            case SearchRole.COMMAND:
                return self.command
            case Qt.ItemDataRole.DisplayRole | SearchRole.TEXT:
                return self.text
            case SearchRole.TIME_TEXT:
                return self.time_text
            case SearchRole.STREAM:
                return self.stream
            case SearchRole.FIRST_OF_PROC:
                return self.first_of_proc
            case SearchRole.RUN_TITLE:  # the heading of its run's lines
                return self.command or "(forgotten)"
            case SearchRole.SCOPE_TEXT:
                return f"{self.session} / {self.agent}  ·  #{self.proc_id}"
            case SearchRole.IS_STDERR:
                return self.stream == Stream.STDERR.value
            case Qt.ItemDataRole.ToolTipRole:
                return f"Open this run at line {self.seq}"
        return empty_data(role)


@QmlElement
class SearchModel(QAbstractListModel):
    """Matching lines across the history: set ``pattern`` (and ``regex``,
    ``caseSensitive``), then ``start()``.

    Hits arrive newest run first, each run's lines in order, and show every
    FLUSH_MS. ``running`` is true until the search has read everything (or
    stopped at MAX_HITS, or ``cancel()``); ``statusText`` says where it is. A
    new ``start()`` cancels the search under way. Nothing runs once the model
    is destroyed.
    """

    patternChanged = Signal()
    regexChanged = Signal()
    caseSensitiveChanged = Signal()
    runningChanged = Signal()
    countChanged = Signal()
    statusChanged = Signal()

    def __init__(
        self,
        supervisor: SupervisorAPI | None = None,
        parent: QObject | None = None,
        *,
        max_hits: int = MAX_HITS,
    ) -> None:
        super().__init__(parent)
        self._sup = resolve_supervisor(supervisor, "SearchModel")
        self._pattern = ""
        self._regex = False
        self._case = False
        self._running = False
        self._max_hits = max_hits
        self._status = ""
        self._error = False
        self._hits: list[_Hit] = []
        self._pending: list[_Hit] = []
        self._procs: set[int] = set()
        self._commands: dict[int, str] = {}
        self._capped = False
        self._task: asyncio.Task[None] | None = None
        self._flush = QTimer(self)
        self._flush.setInterval(FLUSH_MS)
        self._flush.timeout.connect(self._show_pending)
        # The task holds this model weakly; destroyed, its search is cancelled.
        self._tasks: set[asyncio.Task[None]] = set()
        self.destroyed.connect(functools.partial(_cancel_all, self._tasks))
        weakref.finalize(self, _cancel_all, self._tasks)

    pattern = stored_property(str, "_pattern", patternChanged)
    """What to look for: a substring, or a regular expression (RE2 syntax) with ``regex``."""
    regex = stored_property(bool, "_regex", regexChanged)
    """Read ``pattern`` as a regular expression."""
    caseSensitive = stored_property(bool, "_case", caseSensitiveChanged)
    """Match case (off by default)."""
    running = stored_property(bool, "_running", runningChanged, writable=False)
    """True while the search reads."""

    def _get_count(self) -> int:
        return len(self._hits)

    count = qt_property(int, _get_count, notify=countChanged)
    """Hits shown."""

    def _get_status(self) -> str:
        return self._status

    def _get_error(self) -> bool:
        return self._error

    statusText = qt_property(str, _get_status, notify=statusChanged)
    """``searching… 12 matches in 3 runs``, ``No match``, or why the pattern is bad."""
    statusError = qt_property(bool, _get_error, notify=statusChanged)
    """True when ``statusText`` is an error (a bad regular expression)."""
    summaryText = qt_property(str, lambda self: self._status or _HINT, notify=statusChanged)
    """What the line under the search field says: ``statusText``, or before any
    search what Enter does."""

    @Slot()
    def start(self) -> None:
        """Search for ``pattern`` from the beginning (an empty one clears)."""
        self.cancel()
        self._clear()
        if not self._pattern:
            self._set_status("", False)
            return
        try:
            hits = self._sup.search(self._pattern, regex=self._regex, case_sensitive=self._case)
        except InvalidPattern as exc:
            self._set_status(str(exc), True)
            return
        task = current_loop().create_task(
            _collect(weakref.ref(self), hits), name=f"procwindow.qt search {self._pattern!r}"
        )
        self._task = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        set_stored(self, "_running", True, SearchModel.runningChanged)
        self._flush.start()
        self._set_status("searching…", False)

    @Slot(str)
    def search(self, pattern: str) -> None:
        """Set ``pattern`` and start searching for it."""
        self.pattern = pattern
        self.start()

    @Slot()
    def cancel(self) -> None:
        """Stop the search under way; the hits found so far stay."""
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
        if self._running:
            self._finish(cancelled=True)

    @Slot(int, result=int)
    def procIdAt(self, row: int) -> int:
        """The proc of the hit at ``row``, -1 if none."""
        return self._hits[row].proc_id if 0 <= row < len(self._hits) else -1

    @Slot(int, result=int)
    def seqAt(self, row: int) -> int:
        """The line number (seq) of the hit at ``row``, -1 if none."""
        return self._hits[row].seq if 0 <= row < len(self._hits) else -1

    # -- collecting (the task) ---------------------------------------------------

    def _add(self, hit: SearchHit) -> bool:
        """Keep a hit for the next batch; False once there are enough."""
        line = hit.line
        first = hit.proc_id not in self._procs
        self._procs.add(hit.proc_id)
        text = ansi.strip_ansi(line.text)
        if len(text) > _TEXT_CHARS:
            text = text[:_TEXT_CHARS] + "…"
        self._pending.append(
            _Hit(
                hit.proc_id,
                line.seq,
                hit.session,
                hit.agent,
                self._command_of(hit.proc_id),
                text,
                time_text(line.time),
                line.stream.value,
                first,
            )
        )
        if len(self._hits) + len(self._pending) >= self._max_hits:
            self._capped = True
            return False
        return True

    def _command_of(self, proc_id: int) -> str:
        command = self._commands.get(proc_id)
        if command is None:
            try:
                command = self._sup.get(proc_id).cmd
            except ProcNotFound:  # forgotten meanwhile
                command = ""
            self._commands[proc_id] = command
        return command

    def _finish(self, *, cancelled: bool = False, error: str = "") -> None:
        self._flush.stop()
        self._show_pending()
        set_stored(self, "_running", False, SearchModel.runningChanged)
        if error:
            self._set_status(error, True)
            return
        found = self._found_text()
        if cancelled:
            self._set_status(f"stopped · {found}" if self._hits else "stopped", False)
        elif self._capped:
            self._set_status(f"the first {found} (refine the search for more)", False)
        else:
            self._set_status(found if self._hits else "No match", False)

    # -- showing -------------------------------------------------------------------

    def _show_pending(self) -> None:
        if self._pending:
            first = len(self._hits)
            self.beginInsertRows(ROOT, first, first + len(self._pending) - 1)
            self._hits.extend(self._pending)
            self._pending = []
            self.endInsertRows()
            self.countChanged.emit()
        if self._running:
            self._set_status(f"searching… {self._found_text()}", False)

    def _found_text(self) -> str:
        matches = plural(len(self._hits), "match", "matches")
        return f"{matches} in {plural(len(self._procs), 'run', 'runs')}"

    def _clear(self) -> None:
        self.beginResetModel()
        self._hits, self._pending = [], []
        self._procs = set()
        self._commands = {}
        self._capped = False
        self.endResetModel()
        self.countChanged.emit()

    def _set_status(self, text: str, error: bool) -> None:
        if (text, error) != (self._status, self._error):
            self._status, self._error = text, error
            self.statusChanged.emit()

    # -- Qt model interface ------------------------------------------------------

    def rowCount(self, parent: ModelIndex = ROOT) -> int:
        return 0 if parent.isValid() else len(self._hits)

    def roleNames(self) -> dict[int, QByteArray]:
        return dict(_ROLE_NAMES)

    def data(self, index: ModelIndex, role: int = DISPLAY) -> object:
        if not index.isValid() or not 0 <= index.row() < len(self._hits):
            return empty_data(role)
        return self._hits[index.row()].value(role)


async def _collect(ref: weakref.ref[SearchModel], hits: AsyncIterator[SearchHit]) -> None:
    """Feed a model the hits of a search, until it has enough or is gone."""
    error = ""
    try:
        async for hit in hits:
            model = ref()
            if model is None or not model._add(hit):
                break
            del model
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # a broken history: say so, keep the window
        log.exception("procwindow.qt: search failed")
        error = f"search failed: {exc}"
    finally:
        close = getattr(hits, "aclose", None)  # the search's files close now
        if close is not None:
            with contextlib.suppress(Exception):
                await close()
    model = ref()
    if model is not None and model._task is asyncio.current_task():
        model._task = None
        model._finish(error=error)


def _cancel_all(tasks: set[asyncio.Task[None]], *_: object) -> None:
    for task in list(tasks):
        if not task.done() and not task.get_loop().is_closed():
            task.cancel()
