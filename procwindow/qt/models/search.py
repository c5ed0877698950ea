"""SearchModel: the lines of every run, live and past, that match a pattern.

The main window's search across all history, on one supervisor or several
(the window's own and those it is attached to). :meth:`Supervisor.search` does
the work (on the loop, in slices, newest runs first); this model runs one
search per supervisor at once, collects their hits and shows them in batches,
a frame at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import functools
import logging
import weakref
from collections.abc import AsyncIterator, Callable, Sequence
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
from .roles import DISPLAY, ROOT, ModelIndex, role_names

__all__ = ["FLUSH_MS", "MAX_HITS", "SearchModel", "SearchRole", "SearchSource"]

QML_IMPORT_NAME = "Procwindow"
QML_IMPORT_MAJOR_VERSION = 1

log = logging.getLogger("procwindow")

#: Hits shown at most, from every supervisor together: a search stops there (and says so).
MAX_HITS = 5_000
#: Milliseconds between two batches of hits shown.
FLUSH_MS = 50
#: Characters of a hit's line shown (the whole line opens with the proc).
_TEXT_CHARS = 400
#: Between the parts of the line under the field.
_SEP = "  ·  "


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
    HOST = enum.auto()
    HOST_LABEL = enum.auto()


_ROLE_NAMES = role_names(SearchRole, tooltip=True)
#: What the line under the field says before any search.
_HINT = "Enter searches the live processes and the history, newest runs first"


@dataclass(frozen=True, slots=True)
class SearchSource:
    """A supervisor to search. ``key`` names it to whoever opens a hit (each
    hit's ``host``); ``label`` names it to the person (``ci on build``), on
    its hits when there are several sources and in what the status line says
    of it. A source not ``connected`` is not searched, and the status says so."""

    supervisor: SupervisorAPI
    key: str = ""
    label: str = ""
    connected: bool = True


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
    host: str
    host_label: str  # "" when the search covers one supervisor

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
            case SearchRole.HOST:
                return self.host
            case SearchRole.HOST_LABEL:
                return self.host_label
            case Qt.ItemDataRole.ToolTipRole:
                where = f" on {self.host_label}" if self.host_label else ""
                return f"Open this run{where} at line {self.seq}"
        return empty_data(role)


@QmlElement
class SearchModel(QAbstractListModel):
    """Matching lines across the history: set ``pattern`` (and ``regex``,
    ``caseSensitive``), then ``start()``.

    ``sources`` (Python only) gives the supervisors to search, asked anew at
    each ``start()``; without it, the model searches ``supervisor`` alone.
    The supervisors are searched at once. Their hits are grouped by
    supervisor, in the order of ``sources``, each one's newest run first and
    each run's lines in order: proc ids and clocks of different machines do
    not compare, so a merge by either could put a run in the wrong place, and
    a supervisor's hits stay where they are while another's arrive. Hits show
    every FLUSH_MS; with several sources each names its supervisor
    (``hostLabel``). A source not connected is skipped; one whose search fails
    does not stop the others: the status says which (a failure all share, as
    a bad pattern, once).

    ``running`` is true until every search has read everything (or MAX_HITS
    hits in all were found, or ``cancel()``); ``statusText`` says where it is.
    A new ``start()`` cancels the search under way. Nothing runs once the
    model is destroyed.
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
        sources: Callable[[], Sequence[SearchSource]] | None = None,
    ) -> None:
        super().__init__(parent)
        if sources is None:
            only = SearchSource(resolve_supervisor(supervisor, "SearchModel"))
            sources = functools.partial(lambda source: [source], only)
        self._get_sources = sources
        self._sources: list[SearchSource] = []
        self._pattern = ""
        self._regex = False
        self._case = False
        self._running = False
        self._max_hits = max_hits
        self._status = ""
        self._error = False
        self._hits: list[_Hit] = []
        self._shown: list[int] = []  # hits shown of each source (their rows follow in order)
        self._pending: dict[int, list[_Hit]] = {}  # source -> its hits for the next batch
        self._pending_count = 0
        self._procs: set[tuple[int, int]] = set()  # (source, proc id)
        self._commands: dict[tuple[int, int], str] = {}
        self._skipped: list[int] = []  # sources not connected
        self._failed: dict[int, str] = {}  # source -> why its search failed
        self._searched = 0  # sources asked
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
    """``searching… 12 matches in 3 runs``, ``No match``, or why the pattern is
    bad; then the supervisors not searched, and why."""
    statusError = qt_property(bool, _get_error, notify=statusChanged)
    """True when ``statusText`` is an error: the search failed on every
    supervisor searched (a bad regular expression)."""
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
        streams = self._open_searches()
        if not streams:
            self._finish()
            return
        task = current_loop().create_task(
            _search_all(weakref.ref(self), streams),
            name=f"procwindow.qt search {self._pattern!r}",
        )
        self._task = task
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        set_stored(self, "_running", True, SearchModel.runningChanged)
        self._flush.start()
        self._set_status(self._with_notes("searching…"), False)

    def _open_searches(self) -> list[tuple[int, AsyncIterator[SearchHit]]]:
        """Start the search of every connected source: each one's index and hits."""
        self._sources = list(self._get_sources())
        self._shown = [0] * len(self._sources)
        streams: list[tuple[int, AsyncIterator[SearchHit]]] = []
        for i, source in enumerate(self._sources):
            if not source.connected:
                self._skipped.append(i)
                continue
            self._searched += 1
            try:
                hits = source.supervisor.search(
                    self._pattern, regex=self._regex, case_sensitive=self._case
                )
            except InvalidPattern as exc:
                self._failed[i] = str(exc)
                continue
            streams.append((i, hits))
        return streams

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

    @Slot(int, result=str)
    def hostAt(self, row: int) -> str:
        """The key of the supervisor of the hit at ``row`` ("" if none)."""
        return self._hits[row].host if 0 <= row < len(self._hits) else ""

    def scope_of(self, host: str, proc_id: int) -> tuple[str, str] | None:
        """The session and agent of a hit of ``proc_id`` on ``host``, or None."""
        hit = next((h for h in self._hits if h.host == host and h.proc_id == proc_id), None)
        return None if hit is None else (hit.session, hit.agent)

    # -- collecting (the tasks) ----------------------------------------------------

    def _add(self, source: int, hit: SearchHit) -> bool:
        """Keep a hit of ``source`` for the next batch; False once there are enough."""
        if self._capped:  # another source found the last one
            return False
        line = hit.line
        proc = (source, hit.proc_id)
        first = proc not in self._procs
        self._procs.add(proc)
        text = ansi.strip_ansi(line.text)
        if len(text) > _TEXT_CHARS:
            text = text[:_TEXT_CHARS] + "…"
        where = self._sources[source]
        self._pending.setdefault(source, []).append(
            _Hit(
                hit.proc_id,
                line.seq,
                hit.session,
                hit.agent,
                self._command_of(source, hit.proc_id),
                text,
                time_text(line.time),
                line.stream.value,
                first,
                where.key,
                where.label if len(self._sources) > 1 else "",
            )
        )
        self._pending_count += 1
        if len(self._hits) + self._pending_count >= self._max_hits:
            self._capped = True
            return False
        return True

    def _command_of(self, source: int, proc_id: int) -> str:
        command = self._commands.get((source, proc_id))
        if command is None:
            try:
                command = self._sources[source].supervisor.get(proc_id).cmd
            except ProcNotFound:  # forgotten meanwhile
                command = ""
            self._commands[source, proc_id] = command
        return command

    def _fail(self, source: int, message: str) -> None:
        """The search of ``source`` failed: the others go on."""
        self._failed[source] = message

    def _finish(self, *, cancelled: bool = False) -> None:
        self._flush.stop()
        self._show_pending()
        set_stored(self, "_running", False, SearchModel.runningChanged)
        failed_all = bool(self._failed) and len(self._failed) == self._searched
        found = self._found_text()
        if failed_all and not self._hits:
            self._set_status(self._with_notes(self._failures(), failures=False), True)
            return
        if cancelled:
            text = f"stopped · {found}" if self._hits else "stopped"
        elif self._capped:
            text = f"the first {found} (refine the search for more)"
        elif not self._searched:
            text = ""  # no source connected: the notes say so
        else:
            text = found if self._hits else "No match"
        self._set_status(self._with_notes(text), failed_all)

    # -- the status line -------------------------------------------------------------

    def _name(self, source: int, message: str) -> str:
        """``message`` about ``source``, naming it when there are several."""
        label = self._sources[source].label
        return f"{label}: {message}" if label and len(self._sources) > 1 else message

    def _failures(self) -> str:
        """Why the sources failed: a reason they all give once, else each its own."""
        reasons = set(self._failed.values())
        if len(reasons) == 1:
            return reasons.pop()
        return _SEP.join(self._name(i, m) for i, m in sorted(self._failed.items()))

    def _with_notes(self, text: str, *, failures: bool = True) -> str:
        """``text``, then the sources not searched (and, with ``failures``, those whose
        search failed)."""
        notes = [self._name(i, "disconnected, not searched") for i in self._skipped]
        if failures:
            notes += [self._name(i, m) for i, m in sorted(self._failed.items())]
        return _SEP.join(part for part in (text, *notes) if part)

    # -- showing -------------------------------------------------------------------

    def _show_pending(self) -> None:
        if self._pending:
            pending, self._pending, self._pending_count = self._pending, {}, 0
            for source in sorted(pending):
                hits = pending[source]
                # A source's rows follow the rows of the sources before it.
                at = sum(self._shown[: source + 1])
                self.beginInsertRows(ROOT, at, at + len(hits) - 1)
                self._hits[at:at] = hits
                self._shown[source] += len(hits)
                self.endInsertRows()
            self.countChanged.emit()
        if self._running:
            self._set_status(self._with_notes(f"searching… {self._found_text()}"), False)

    def _found_text(self) -> str:
        matches = plural(len(self._hits), "match", "matches")
        return f"{matches} in {plural(len(self._procs), 'run', 'runs')}"

    def _clear(self) -> None:
        self.beginResetModel()
        self._hits, self._pending, self._pending_count = [], {}, 0
        self._shown = []
        self._procs = set()
        self._commands = {}
        self._skipped, self._failed, self._searched = [], {}, 0
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


async def _search_all(
    ref: weakref.ref[SearchModel], streams: list[tuple[int, AsyncIterator[SearchHit]]]
) -> None:
    """Feed a model the hits of its searches, all at once, until it has enough or is gone."""
    loop = asyncio.get_running_loop()
    owner = asyncio.current_task()
    tasks = [loop.create_task(_collect(ref, owner, source, hits)) for source, hits in streams]
    try:
        pending: set[asyncio.Task[None]] = set(tasks)
        while pending:
            _done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            model = ref()
            if model is None or model._capped:  # the others' hits would not show
                break
            del model
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    model = ref()
    if model is not None and model._task is asyncio.current_task():
        model._task = None
        model._finish()


async def _collect(
    ref: weakref.ref[SearchModel],
    owner: asyncio.Task[object] | None,
    source: int,
    hits: AsyncIterator[SearchHit],
) -> None:
    """Feed a model the hits of one source's search (the search ``owner`` runs),
    until it has enough or is gone."""
    try:
        async for hit in hits:
            model = ref()
            # A search cancelled, or followed by another, takes no more hits.
            if model is None or model._task is not owner or not model._add(source, hit):
                break
            del model
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # a broken history, a lost link: say so, keep the others
        log.exception("procwindow.qt: search failed")
        model = ref()
        if model is not None and model._task is owner:
            model._fail(source, f"search failed: {exc}")
    finally:
        close = getattr(hits, "aclose", None)  # the search's files close now
        if close is not None:
            with contextlib.suppress(Exception):
                await close()


def _cancel_all(tasks: set[asyncio.Task[None]], *_: object) -> None:
    for task in list(tasks):
        if not task.done() and not task.get_loop().is_closed():
            task.cancel()
