"""Archive: where a supervisor keeps what outlives a proc — the log files, the
journal, the history database — and the rules that bound them on disk."""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Callable, Container, Iterable, Iterator
from typing import Any

from ._child import Child
from ._disklog import DiskLog
from ._errors import ProcNotFound, ProcRunning, ProcwindowError
from ._history import History, HistoryRow
from ._logdir import LogDir, journal_path, log_file_path
from ._output import OutputStore, RingBudget
from ._proc import Proc
from ._replay import ByteBatch, ByteSink, DiskOutput, encode_lines
from ._types import CommandRun, ReadBatch, RunBatch, Stream

__all__ = [
    "DEFAULT_HISTORY_AGE",
    "DEFAULT_HISTORY_BYTES",
    "DEFAULT_LOG_CAP",
    "MIN_LOG_CAP",
    "Archive",
    "reclaim_rings",
]

log = logging.getLogger("procwindow")

#: Disk a proc's output may use (both logs and its journal), by default.
DEFAULT_LOG_CAP = 64 * 1024 * 1024
#: The smallest per-proc cap accepted.
MIN_LOG_CAP = 64 * 1024
#: Disk the history of finished procs may use in all, by default.
DEFAULT_HISTORY_BYTES = 2 * 1024 * 1024 * 1024
#: Seconds a finished proc's history is kept, by default (30 days).
DEFAULT_HISTORY_AGE = 30 * 24 * 3600.0
#: Pruning runs at most this often (seconds).
PRUNE_INTERVAL = 5.0
#: Disk readers kept open for finished procs.
_READERS = 8


def _check_size(name: str, value: int | None, minimum: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int of at least {minimum} (or None), got {value!r}")
    return value


class Archive:
    """The logs, journals and history of one supervisor.

    ``history=True`` records every proc in ``<state_dir>/history.db`` and keeps
    its logs and journal in ``<state_dir>/logs/`` (or ``log_dir``) after the
    supervisor closes. ``history=False`` keeps nothing: ids start at 1 and the
    default log directory is removed on close.
    """

    def __init__(
        self,
        *,
        token: str,
        history: bool,
        state_dir: str,
        log_dir: str | os.PathLike[str] | None,
        log_cap: int | None,
        history_bytes: int | None,
        history_age: float | None,
    ) -> None:
        self.log_cap = _check_size("log_cap", log_cap, MIN_LOG_CAP)
        self.history_bytes = _check_size("history_bytes", history_bytes, 0)
        if history_age is not None and not (
            isinstance(history_age, (int, float)) and history_age >= 0
        ):
            raise ValueError(f"history_age must be seconds >= 0 (or None), got {history_age!r}")
        self.history_age = history_age
        self.state_dir = state_dir
        self.error: str | None = None
        self.db: History | None = None
        self._next_id = 1
        if history:
            try:
                self.db = History(state_dir, token)
            except ProcwindowError as exc:  # an unsafe state directory
                self.error = str(exc)
            except OSError as exc:
                self.error = f"{state_dir}: {exc.strerror or exc}"
            else:
                self.error = self.db.error
        try:
            self.logs = LogDir(log_dir, token, state_dir if self.db is not None else None)
        except BaseException:
            if self.db is not None:
                self.db.close()
            raise
        self._readers: OrderedDict[int, tuple[tuple[int, bool], DiskOutput]] = OrderedDict()
        self._pruned_at = 0.0
        self.prune((), force=True)

    @property
    def on(self) -> bool:
        """True while history is kept."""
        return self.db is not None and self.db.available

    @contextlib.contextmanager
    def reserve_id(self, *, wait: bool = True) -> Iterator[int | None]:
        """The id of the proc being spawned, used up only if the block succeeds;
        None with ``wait=False`` while another supervisor holds the counter."""
        if self.db is not None:
            with self.db.reserve_id(wait=wait) as proc_id:
                yield proc_id
            return
        yield self._next_id
        self._next_id += 1

    def defer_writes(self, later: Callable[[float, Callable[[], None]], object]) -> None:
        """Commit the history writes after a start together, ``COMMIT_DELAY``
        after the first, through ``later`` (the loop's ``call_later``), instead
        of one each; a start is committed at once (see ``_history``)."""
        if self.db is not None:
            self.db.later = later

    def prepare(self, proc_id: int) -> DiskLog:
        return self.logs.prepare(proc_id, self.log_cap)

    # -- recording -----------------------------------------------------------------

    def started(self, proc: Proc) -> None:
        if self.db is None:
            return
        self.db.started(
            proc_id=proc.id,
            session=proc.session,
            agent=proc.agent,
            tool=proc.tool,
            argv=proc.argv,
            cwd=proc.cwd,
            env=proc.env,
            graceful_timeout=proc.graceful_timeout,
            os_pid=proc.os_pid,
            started_at=proc.started_at,
            log_dir=self.logs.path,
        )
        self._note_error()

    def ended(self, proc: Proc) -> None:
        if self.db is None or proc.exit is None or proc.ended_at is None:
            return
        exit_ = proc.exit
        self.db.ended(
            proc.id,
            ended_at=proc.ended_at,
            code=exit_.code,
            signal=exit_.signal,
            reason=exit_.reason.value,
            runtime=exit_.runtime,
        )
        self._note_error()

    def output(self, child: Child) -> None:
        """Record a child's output counters (its pipes closed, or it is dismissed)."""
        if self.db is None:
            return
        disk = child.disk
        self.db.output(
            child.id,
            stdout_bytes=disk.logs[Stream.STDOUT].size + disk.cut_bytes[Stream.STDOUT],
            stderr_bytes=disk.logs[Stream.STDERR].size + disk.cut_bytes[Stream.STDERR],
            lines=child.store.last_seq,
            cut_bytes=sum(disk.cut_bytes.values()),
            cut_lines=disk.cut_lines,
            disk_bytes=disk.disk_bytes,
            log_error=disk.error,
        )
        self._note_error()

    def seen(self, now: float) -> None:
        if self.db is not None:
            self.db.seen(now)
            self.db.flush()
            self._note_error()

    def _note_error(self) -> None:
        # A database that broke is no longer written; its id counter still serves.
        if self.db is not None and self.db.error:
            self.error = self.db.error

    # -- reading -------------------------------------------------------------------

    def row(self, proc_id: int) -> HistoryRow:
        row = self.db.get(proc_id) if self.db is not None else None
        if row is None:
            raise ProcNotFound(proc_id)
        return row

    def output_of(self, proc_id: int) -> tuple[str, bool]:
        """A recorded proc's log directory and whether it is finished;
        ProcNotFound if there is none."""
        found = self.db.output_of(proc_id) if self.db is not None else None
        if found is None:
            raise ProcNotFound(proc_id)
        log_dir, finished = found
        return log_dir or self.logs.path, finished

    def past(self, proc_id: int) -> Proc:
        return Proc._from_record(self.row(proc_id))

    def rows(self, **filters: object) -> list[HistoryRow]:
        if self.db is None:
            return []
        rows = self.db.rows(**filters)  # type: ignore[arg-type]
        self._note_error()
        return rows

    def reader(self, directory: str, proc_id: int, finished: bool) -> DiskOutput:
        """A reader of a proc's output on disk (kept open while it is unchanged)."""
        path = journal_path(directory, proc_id)
        try:
            size = os.stat(path).st_size
        except OSError:
            size = -1
        key = (size, finished)
        cached = self._readers.get(proc_id)
        if cached is not None and cached[0] == key:
            self._readers.move_to_end(proc_id)
            return cached[1]
        if cached is not None:
            cached[1].close()
        logs = {s: log_file_path(directory, proc_id, s) for s in Stream}
        out = DiskOutput(logs, path, finished=finished)
        self._readers[proc_id] = (key, out)
        while len(self._readers) > _READERS:
            _, (_, old) = self._readers.popitem(last=False)
            old.close()
        return out

    def read_past(
        self, proc_id: int, since: int, limit: int | None, stream: Stream | None
    ) -> ReadBatch:
        directory, finished = self.output_of(proc_id)
        out = self.reader(directory, proc_id, finished)
        lines, dropped, cursor = out.read(since, limit, stream)
        last = out.last_seq
        if lines:
            last = max(last, lines[-1].seq)
        eof = finished and (limit is None or len(lines) < limit or cursor >= last)
        return ReadBatch(lines, dropped, cursor, eof)

    def _live_disk(self, child: Child) -> DiskOutput | None:
        """The log on disk of a live child, for its lines that left its ring;
        None without a journal."""
        if child.disk.journal_path is None or child.disk.error is not None:
            return None
        return self.reader(self.logs.path, child.id, finished=False)

    def read_child(
        self, child: Child, since: int, limit: int | None, want: Stream | None
    ) -> ReadBatch:
        """A live child's lines: those older than its ring from disk, then the ring."""
        lines, dropped, cursor, eof = self._read_child(child, since, limit, want, runs=False)
        return ReadBatch(lines, dropped, cursor, eof)

    def read_child_runs(
        self, child: Child, since: int, limit: int | None, want: Stream | None
    ) -> RunBatch:
        """``read_child``'s lines as runs (the ring's without a Line per line)."""
        runs, dropped, cursor, eof = self._read_child(child, since, limit, want, runs=True)
        return RunBatch(runs, dropped, cursor, eof)

    def _read_child(
        self, child: Child, since: int, limit: int | None, want: Stream | None, *, runs: bool
    ) -> tuple[list[Any], int, int, bool]:
        store = child.store
        out: list[Any] = []
        dropped = 0
        cursor = since
        if since + 1 < store.first_seq:
            disk = self._live_disk(child)
            if disk is not None:
                if runs:
                    out, dropped, cursor = disk.read_runs(since, limit, want, store.first_seq)
                    taken = sum(len(run.texts) for run in out)
                else:
                    out, dropped, cursor = disk.read(since, limit, want, store.first_seq)
                    taken = len(out)
                if limit is not None:
                    limit -= taken
                if limit == 0 and (want is None or cursor < store.first_seq - 1):
                    return out, dropped, max(cursor, since), False
                # Met at the ring's edge by a filtered read: a limit of 0 takes the
                # ring's lines of the other stream that come next, as a read wholly
                # in the ring goes past them after its last line.
                cursor = max(cursor, store.first_seq - 1)
        more, lost, cursor = (store.read_runs if runs else store.read)(cursor, limit, want)
        out += more
        dropped += lost
        eof = not child.open_streams and cursor >= store.last_seq
        return out, dropped, max(cursor, since), eof

    def read_past_bytes(
        self,
        proc_id: int,
        since: int,
        limit: int | None,
        max_bytes: int | None,
        stream: Stream | None,
    ) -> ByteBatch:
        directory, finished = self.output_of(proc_id)
        out = self.reader(directory, proc_id, finished)
        sink = ByteSink(since, limit, max_bytes)
        reached = out.read_bytes(sink, stream)
        eof = finished and (reached or sink.cursor >= out.last_seq)
        return sink.batch(eof)

    def read_child_bytes(
        self,
        child: Child,
        since: int,
        limit: int | None,
        max_bytes: int | None,
        want: Stream | None,
    ) -> ByteBatch:
        """A live child's lines as bytes: those ``read_child`` gives."""
        store = child.store
        disk = child.disk
        sink = ByteSink(since, limit, max_bytes)
        usable = disk.journal_path is not None and disk.error is None
        if (
            usable
            and disk.complete
            and not child.capture_failed
            and not any(disk.cut_bytes.values())
        ):
            # Disk holds every line the ring does, the same ones: copy them
            # all from the logs (the ring's blocks would cost a Line each).
            out = self.reader(self.logs.path, child.id, finished=False)
            out.read_bytes(sink, want, upto=store.last_seq + 1)
        else:
            reached = True
            if since + 1 < store.first_seq and usable:
                out = self.reader(self.logs.path, child.id, finished=False)
                reached = out.read_bytes(sink, want, upto=store.first_seq)
                if reached:
                    sink.cursor = max(sink.cursor, store.first_seq - 1)
            if reached:
                _ring_bytes(store, sink, want)
        eof = not child.open_streams and sink.cursor >= store.last_seq
        return sink.batch(eof)

    def log_path(self, proc_id: int, stream: Stream) -> str:
        row = self.row(proc_id)
        return log_file_path(row.log_dir or self.logs.path, proc_id, stream)

    # -- hiding, forgetting, pruning ---------------------------------------------------

    def linked(self, proc: Proc, run: CommandRun) -> None:
        """``proc`` is a run of a workspace's command: it says so, and so does
        its row in the history."""
        proc._set_command_run(run)
        if self.db is not None:
            self.db.linked(proc.id, run)
            self._note_error()

    def hide(self, proc_id: int) -> None:
        if self.db is not None:
            self.db.hide(proc_id)

    def forget(self, proc_id: int, directory: str | None) -> None:
        cached = self._readers.pop(proc_id, None)
        if cached is not None:
            cached[1].close()
        LogDir.delete(directory or self.logs.path, proc_id)
        if self.db is not None:
            self.db.delete([proc_id])
            self._note_error()

    def forget_past(self, proc_id: int) -> None:
        row = self.row(proc_id)
        if row.ended_at is None and row.live_run:
            raise ProcRunning(proc_id)
        self.forget(proc_id, row.log_dir)

    def prune(
        self, keep: Container[int], now: float | None = None, *, force: bool = False
    ) -> list[int] | None:
        """Delete the oldest finished procs' history beyond the total and age
        bounds (never one in ``keep``); the ids that went. None when the last
        prune was less than PRUNE_INTERVAL ago (``prune_wait()`` says how long
        to wait) and not ``force``."""
        if self.db is None or (self.history_bytes is None and self.history_age is None):
            return []
        mono = time.monotonic()
        if not force and mono - self._pruned_at < PRUNE_INTERVAL:
            return None
        self._pruned_at = mono
        rows = self.db.prunable(
            total=self.history_bytes, max_age=self.history_age, now=now or time.time()
        )
        gone = []
        for row in rows:
            if row.id in keep:
                continue
            self.forget(row.id, row.log_dir)
            gone.append(row.id)
        return gone

    def prune_wait(self) -> float:
        """Seconds until a prune may run again."""
        return max(0.0, self._pruned_at + PRUNE_INTERVAL - time.monotonic())

    def close(self) -> None:
        for _, out in self._readers.values():
            out.close()
        self._readers.clear()
        if self.db is not None:
            self.db.close()
        self.logs.remove()


#: Lines taken from a ring at a time by ``read_bytes``.
_RING_STEP = 4096


def _ring_bytes(store: OutputStore, sink: ByteSink, want: Stream | None) -> None:
    """Add a ring's lines after ``sink.cursor`` to ``sink``, within its bounds."""
    while not sink.full:
        left = sink.lines_left()
        step = _RING_STEP if left is None else min(left, _RING_STEP)
        lines, lost, cursor = store.read(sink.cursor, step, want)
        before = sink.count
        if not sink.add_lines(encode_lines(lines)):
            if sink.count > before:
                sink.dropped += lost
            return
        sink.dropped += lost
        sink.cursor = max(sink.cursor, cursor)
        if len(lines) < step:
            return


def reclaim_rings(children: Iterable[Child], budget: RingBudget) -> None:
    """All rings together hold more than the budget: finished procs whose lines
    are all on disk give theirs back, then the biggest rings halve."""
    kids = list(children)
    for child in kids:
        if budget.used <= budget.limit:
            return
        if not child.open_streams and child.disk.complete:
            child.store.shrink(0)
    while budget.used > budget.limit:
        biggest = max(kids, key=lambda c: c.store.nbytes, default=None)
        if biggest is None or not biggest.store.shrink(biggest.store.nbytes // 2):
            return
