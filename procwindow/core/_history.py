"""History: the on-disk record of every proc, shared by the supervisors of one
state directory.

``<state>/history.db`` is an SQLite database (WAL, mode 0600 in a 0700
directory) with one row per proc and one per supervisor run. Proc ids come
from ``<state>/ids``, a counter taken under ``flock``: unique across every
supervisor sharing the directory, never reused, and still unique when the
database is locked or broken. A supervisor that dies leaves its run open;
the next one to open the database marks that run's unfinished procs
``lost``.

The database is a record, never a reason to stop: a write that finds it
locked is kept and retried (opening waits a few seconds for a lock); a
broken one, or one still locked after that wait at open, disables history
with ``error`` set, and supervision goes on.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shlex
import sqlite3
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from . import _linux
from ._history_schema import SCHEMA, SCHEMA_VERSION, migrate
from ._ids import IdCounter
from ._private import open_private_file, private_dir
from ._types import CommandRun

__all__ = ["History", "HistoryRow"]

log = logging.getLogger("procwindow")

#: How long a statement waits for another supervisor's lock (the event loop
#: waits with it); past that, the write is kept and retried.
_BUSY_MS = 200
#: How long close() waits for a lock to flush what was kept.
_CLOSE_BUSY_MS = 2000
#: How long opening waits for a lock (another supervisor making the schema or
#: writing): what fails to open is off for the supervisor's whole life.
_OPEN_BUSY_MS = 5000
#: With an event loop, the writes after a proc's start (its exit, its output's
#: counts) are committed together this many seconds after the first of them:
#: one transaction for a burst of exits. A start is committed before ``spawn``
#: returns: a proc whose id was handed out is on record even if the host is
#: killed the next instant (its run is then marked lost), and it takes what is
#: kept along: short commands run one after another cost one commit each.
#: Readers in this process always see every write (a query commits what is
#: kept first); other processes see an exit within COMMIT_DELAY.
COMMIT_DELAY = 0.1
#: Seconds between tries of writes another process's lock held back.
RETRY_DELAY = 0.5


@dataclass(frozen=True, slots=True)
class HistoryRow:
    """One proc as the database records it."""

    id: int
    session: str
    agent: str
    tool: str
    argv: tuple[str, ...]
    cwd: str | None
    env: dict[str, str | None] | None
    graceful_timeout: float | None
    os_pid: int
    started_at: float
    ended_at: float | None
    code: int | None
    signal: int | None
    reason: str | None
    runtime: float | None
    stdout_bytes: int
    stderr_bytes: int
    lines: int
    cut_bytes: int
    cut_lines: int
    disk_bytes: int
    log_dir: str | None
    log_error: str | None
    hidden: bool
    live_run: bool  # its supervisor still runs (it may still be running)
    workspace: str | None  # with command and restart_of: its CommandRun, if any
    command: str | None
    restart_of: int | None


#: A proc's supervisor still runs (``r``: its row in ``runs``).
_LIVE_RUN = "r.ended_at IS NULL AND r.id IS NOT NULL"
_COLUMNS = (
    "p.id, p.session, p.agent, p.tool, p.argv, p.cwd, p.env, p.graceful_timeout, p.os_pid, "
    "p.started_at, p.ended_at, p.code, p.signal, p.reason, p.runtime, p.stdout_bytes, "
    "p.stderr_bytes, p.lines, p.cut_bytes, p.cut_lines, p.disk_bytes, p.log_dir, "
    f"p.log_error, p.hidden, {_LIVE_RUN}, p.workspace, p.command, p.restart_of"
)


def _start_of(pid: int) -> int | None:
    """When ``pid`` started (clock ticks after boot), None if it is gone or a zombie."""
    try:
        st = _linux.stat_fields(pid)
    except OSError:
        return -1  # cannot look (out of fds): not known to be gone
    return None if st is None or st.state in "ZX" else st.start


def _row(values: Sequence[Any]) -> HistoryRow:
    v = list(values)
    v[4] = tuple(json.loads(v[4]))
    v[6] = json.loads(v[6]) if v[6] is not None else None
    v[23] = bool(v[23])
    v[24] = bool(v[24])
    return HistoryRow(*v)


class History:
    """The history database of one state directory, as one supervisor uses it."""

    def __init__(self, state_dir: str, token: str) -> None:
        self.state_dir = state_dir
        self.path = os.path.join(state_dir, "history.db")
        self.error: str | None = None
        self._token = token
        self._db: sqlite3.Connection | None = None
        self._run_id: int | None = None
        self._ids: IdCounter | None = None
        self._kept: list[tuple[str, tuple[Any, ...]]] = []
        self._seen = 0.0
        #: The connection's busy timeout now (ms): set only when it changes.
        self._busy_ms = _BUSY_MS
        #: Set (to a loop's ``call_later``), writes are committed together
        #: COMMIT_DELAY after the first, in one transaction; unset, each is
        #: committed at once.
        self.later: Callable[[float, Callable[[], None]], object] | None = None
        self._flush_pending = False
        private_dir(state_dir, what="state directory")
        self._ids = IdCounter(state_dir)
        try:
            self._open()
        except sqlite3.Error as exc:
            self._disable(exc)
        except BaseException:
            self.close()
            raise

    # -- opening -----------------------------------------------------------------

    def _open(self) -> None:
        fd = open_private_file(self.path, what="history database", keep=True)
        os.close(fd)
        try:
            db = self._connect()
        except sqlite3.DatabaseError as exc:
            if "not a database" not in str(exc) and "malformed" not in str(exc):
                raise
            aside = f"{self.path}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}"
            log.warning(
                "%s is damaged (%s): moved to %s, starting a new one", self.path, exc, aside
            )
            os.replace(self.path, aside)
            for suffix in ("-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.replace(self.path + suffix, aside + suffix)
            os.close(open_private_file(self.path, what="history database", keep=True))
            db = self._connect()
        self._db = db
        now = time.time()
        start = _start_of(os.getpid())
        with db:
            cur = db.execute(
                "INSERT INTO runs (token, pid, pid_start, started_at, seen_at) VALUES (?,?,?,?,?)",
                (self._token, os.getpid(), start, now, now),
            )
            self._run_id = cur.lastrowid
        self._seen = now
        self._mark_dead_runs()
        row = db.execute("SELECT max(id) FROM procs").fetchone()
        if row and row[0]:
            assert self._ids is not None
            self._ids.raise_to(int(row[0]))
        db.execute(f"PRAGMA busy_timeout = {_BUSY_MS}")

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=_OPEN_BUSY_MS / 1000, isolation_level=None)
        db.create_function("command_line", 1, _command_line, deterministic=True)
        try:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise sqlite3.DatabaseError(
                    f"written by a newer procwindow (schema {version}; this one knows"
                    f" {SCHEMA_VERSION})"
                )
            if 0 < version < SCHEMA_VERSION:
                migrate(db)
            elif version < SCHEMA_VERSION:
                db.executescript(SCHEMA + f"PRAGMA user_version = {SCHEMA_VERSION};")
            db.execute("SELECT count(*) FROM procs").fetchone()
        except BaseException:
            db.close()
            raise
        return db

    def _mark_dead_runs(self) -> None:
        """Runs whose supervisor is gone: their unfinished procs are ``lost``."""
        db = self._db
        assert db is not None
        rows = db.execute(
            "SELECT id, pid, pid_start, seen_at FROM runs WHERE ended_at IS NULL AND id != ?",
            (self._run_id,),
        ).fetchall()
        for run_id, pid, pid_start, seen_at in rows:
            now_start = _start_of(pid)
            if now_start == -1 or (pid_start is not None and now_start == pid_start):
                continue
            with db:
                db.execute(
                    "UPDATE procs SET ended_at = max(started_at, ?), reason = 'lost', code = 255,"
                    " runtime = max(0, ? - started_at) WHERE run = ? AND ended_at IS NULL",
                    (seen_at, seen_at, run_id),
                )
                db.execute("UPDATE runs SET ended_at = seen_at WHERE id = ?", (run_id,))

    def _disable(self, exc: BaseException) -> None:
        self.error = f"{self.path}: {exc}"
        if self._run_id is not None:  # at open, the supervisor's history_error tells
            log.warning("history is off: %s", self.error)
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._db = None

    @property
    def available(self) -> bool:
        return self._db is not None

    # -- ids -------------------------------------------------------------------------

    def reserve_id(self, *, wait: bool = True) -> contextlib.AbstractContextManager[int | None]:
        """A proc id no supervisor of this state directory has used (see
        :meth:`IdCounter.reserve`); a counter that cannot be written turns
        history off."""
        assert self._ids is not None
        return self._ids.reserve(wait=wait, on_error=self._counter_failed)

    def _counter_failed(self, exc: OSError) -> None:
        if self._db is not None:
            self._disable(exc)

    # -- writing ---------------------------------------------------------------------

    def _write(self, sql: str, params: tuple[Any, ...], *, at_once: bool = False) -> None:
        """Run one write now (``at_once``, or without a loop), else soon with
        others; kept for later if another process holds the lock."""
        if self._db is None:
            return
        self._kept.append((sql, params))
        if self.later is None or at_once:
            if not self.flush(_BUSY_MS):
                self._flush_later(RETRY_DELAY)
        else:
            self._flush_later(COMMIT_DELAY)

    def _flush_later(self, delay: float) -> None:
        """Flush what is kept in ``delay`` seconds (once: a flush already planned
        stands)."""
        if self.later is not None and not self._flush_pending:
            self._flush_pending = True
            self.later(delay, self._flush_soon)

    def _flush_soon(self) -> None:
        self._flush_pending = False
        if not self.flush(_BUSY_MS):
            # Locked by another process: try again on a timer, not only at the
            # next write (an idle supervisor would keep them until it closes).
            self._flush_later(RETRY_DELAY)

    def flush(self, busy_ms: int = _BUSY_MS) -> bool:
        """Write what was kept; False if the database is still locked."""
        db = self._db
        if db is None or not self._kept:
            return True
        try:
            self._busy_timeout(db, busy_ms)
            # All or nothing: a lock met halfway must not leave half the writes
            # done, or the next flush would insert the same rows twice.
            db.execute("BEGIN IMMEDIATE")
            try:
                for sql, params in self._kept:
                    db.execute(sql, params)
                db.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
                raise
            self._kept.clear()
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                return False
            self._disable(exc)
        except sqlite3.Error as exc:
            self._disable(exc)
        return True

    def _busy_timeout(self, db: sqlite3.Connection, busy_ms: int) -> None:
        """How long the next statements wait for another process's lock."""
        if busy_ms != self._busy_ms:
            db.execute(f"PRAGMA busy_timeout = {int(busy_ms)}")
            self._busy_ms = busy_ms

    def started(
        self,
        *,
        proc_id: int,
        session: str,
        agent: str,
        tool: str,
        argv: Sequence[str],
        cwd: str | None,
        env: dict[str, str | None] | None,
        graceful_timeout: float | None,
        os_pid: int,
        started_at: float,
        log_dir: str,
    ) -> None:
        self._write(
            "INSERT OR REPLACE INTO procs (id, run, session, agent, tool, argv, cwd, env,"
            " graceful_timeout, os_pid, started_at, log_dir) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                proc_id,
                self._run_id,
                session,
                agent,
                tool,
                json.dumps(list(argv)),
                cwd,
                json.dumps(env) if env is not None else None,
                graceful_timeout,
                os_pid,
                started_at,
                log_dir,
            ),
            at_once=True,
        )

    def ended(
        self,
        proc_id: int,
        *,
        ended_at: float,
        code: int,
        signal: int | None,
        reason: str,
        runtime: float,
    ) -> None:
        self._write(
            "UPDATE procs SET ended_at=?, code=?, signal=?, reason=?, runtime=? WHERE id=?",
            (ended_at, code, signal, reason, runtime, proc_id),
        )

    def output(
        self,
        proc_id: int,
        *,
        stdout_bytes: int,
        stderr_bytes: int,
        lines: int,
        cut_bytes: int,
        cut_lines: int,
        disk_bytes: int,
        log_error: str | None,
    ) -> None:
        self._write(
            "UPDATE procs SET stdout_bytes=?, stderr_bytes=?, lines=?, cut_bytes=?, cut_lines=?,"
            " disk_bytes=?, log_error=? WHERE id=?",
            (
                stdout_bytes,
                stderr_bytes,
                lines,
                cut_bytes,
                cut_lines,
                disk_bytes,
                log_error,
                proc_id,
            ),
        )

    def linked(self, proc_id: int, run: CommandRun) -> None:
        """The proc is a run of a workspace's command (after the one it restarted)."""
        self._write(
            "UPDATE procs SET workspace=?, command=?, restart_of=? WHERE id=?",
            (run.workspace, run.command, run.restart_of, proc_id),
        )

    def hide(self, proc_id: int) -> None:
        self._write("UPDATE procs SET hidden = 1 WHERE id = ?", (proc_id,))

    def delete(self, ids: Iterable[int]) -> None:
        for proc_id in ids:
            self._write("DELETE FROM procs WHERE id = ?", (proc_id,))

    def seen(self, now: float) -> None:
        """This run is alive at ``now`` (at most one write per 10 s)."""
        if now - self._seen >= 10.0:
            self._seen = now
            self._write("UPDATE runs SET seen_at = ? WHERE id = ?", (now, self._run_id))

    # -- reading ---------------------------------------------------------------------

    def _query(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        self.flush()  # a reader sees this supervisor's own writes
        db = self._db
        if db is None:
            return []
        try:
            self._busy_timeout(db, _BUSY_MS)
            return db.execute(sql, params).fetchall()
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                return []
            self._disable(exc)
        except sqlite3.Error as exc:
            self._disable(exc)
        return []

    def get(self, proc_id: int) -> HistoryRow | None:
        rows = self._query(
            f"SELECT {_COLUMNS} FROM procs p LEFT JOIN runs r ON p.run = r.id WHERE p.id = ?",
            (proc_id,),
        )
        return _row(rows[0]) if rows else None

    def output_of(self, proc_id: int) -> tuple[str | None, bool] | None:
        """Where a proc's output lives (its log_dir) and whether it is
        finished (it ended, or its supervisor is gone); None if there is no
        such proc. ``get`` without its other columns: a reader paging through
        a proc's output asks this at every call."""
        rows = self._query(
            f"SELECT p.log_dir, p.ended_at IS NOT NULL OR NOT ({_LIVE_RUN})"
            " FROM procs p LEFT JOIN runs r ON p.run = r.id WHERE p.id = ?",
            (proc_id,),
        )
        return (rows[0][0], bool(rows[0][1])) if rows else None

    def rows(
        self,
        *,
        session: str | None = None,
        agent: str | None = None,
        tool: str | None = None,
        reason: str | None = None,
        since: float | None = None,
        limit: int | None = None,
        proc: int | None = None,
        command: str | None = None,
    ) -> list[HistoryRow]:
        """Rows newest first, filtered; hidden ones included. ``command``: text
        the command line holds, in any case."""
        where: list[str] = ["1"]
        params: list[object] = []
        for column, value in (
            ("p.session", session),
            ("p.agent", agent),
            ("p.tool", tool),
            ("p.reason", reason),
            ("p.id", proc),
        ):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        if since is not None:
            where.append("p.started_at >= ?")
            params.append(since)
        if command is not None:
            where.append("instr(lower(command_line(p.argv)), lower(?)) > 0")
            params.append(command)
        sql = (
            f"SELECT {_COLUMNS} FROM procs p LEFT JOIN runs r ON p.run = r.id"
            f" WHERE {' AND '.join(where)} ORDER BY p.id DESC"
        )
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return [_row(r) for r in self._query(sql, tuple(params))]

    def prunable(self, *, total: int | None, max_age: float | None, now: float) -> list[HistoryRow]:
        """Finished procs to delete, oldest first: older than ``max_age``, then
        the oldest until the rest fits in ``total`` bytes."""
        rows = self._query(
            f"SELECT {_COLUMNS} FROM procs p LEFT JOIN runs r ON p.run = r.id"
            " WHERE p.ended_at IS NOT NULL ORDER BY p.id ASC",
            (),
        )
        finished = [_row(r) for r in rows]
        out: list[HistoryRow] = []
        size = sum(r.disk_bytes for r in finished)
        for row in finished:
            old = max_age is not None and (row.ended_at or 0.0) < now - max_age
            big = total is not None and size > total
            if old or big:
                out.append(row)
                size -= row.disk_bytes
        return out

    # -- closing ---------------------------------------------------------------------

    def close(self) -> None:
        if self._db is not None:
            self._write(
                "UPDATE runs SET ended_at = ?, seen_at = ? WHERE id = ?",
                (time.time(), time.time(), self._run_id),
            )
            if not self.flush(_CLOSE_BUSY_MS):
                log.warning(
                    "history: %s stayed locked; %d writes are lost", self.path, len(self._kept)
                )
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._db = None
        if self._ids is not None:
            self._ids.close()
            self._ids = None


def _command_line(argv: str) -> str:
    """The command line of a row's ``argv`` (JSON), for the ``command`` filter."""
    try:
        return shlex.join(json.loads(argv))
    except (ValueError, TypeError):
        return argv
