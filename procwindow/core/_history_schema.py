"""The history database's schema, and the migrations that bring an older one up
to it (``PRAGMA user_version`` holds a database's schema)."""

from __future__ import annotations

import sqlite3

__all__ = ["MIGRATIONS", "SCHEMA", "SCHEMA_VERSION", "migrate"]

SCHEMA_VERSION = 2
SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    token TEXT NOT NULL UNIQUE,
    pid INTEGER NOT NULL,
    pid_start INTEGER,
    started_at REAL NOT NULL,
    seen_at REAL NOT NULL,
    ended_at REAL
);
CREATE TABLE IF NOT EXISTS procs (
    id INTEGER PRIMARY KEY,
    run INTEGER,
    session TEXT NOT NULL,
    agent TEXT NOT NULL,
    tool TEXT NOT NULL,
    argv TEXT NOT NULL,
    cwd TEXT,
    env TEXT,
    graceful_timeout REAL,
    os_pid INTEGER NOT NULL,
    started_at REAL NOT NULL,
    ended_at REAL,
    code INTEGER,
    signal INTEGER,
    reason TEXT,
    runtime REAL,
    stdout_bytes INTEGER NOT NULL DEFAULT 0,
    stderr_bytes INTEGER NOT NULL DEFAULT 0,
    lines INTEGER NOT NULL DEFAULT 0,
    cut_bytes INTEGER NOT NULL DEFAULT 0,
    cut_lines INTEGER NOT NULL DEFAULT 0,
    disk_bytes INTEGER NOT NULL DEFAULT 0,
    log_dir TEXT,
    log_error TEXT,
    hidden INTEGER NOT NULL DEFAULT 0,
    workspace TEXT,
    command TEXT,
    restart_of INTEGER
);
CREATE INDEX IF NOT EXISTS procs_scope ON procs (session, agent, id);
CREATE INDEX IF NOT EXISTS procs_ended ON procs (ended_at);
"""
#: What brings a database of each older schema up to the next one.
MIGRATIONS = {
    # 2: a workspace command's runs are linked (``CommandRun``).
    1: (
        "ALTER TABLE procs ADD COLUMN workspace TEXT",
        "ALTER TABLE procs ADD COLUMN command TEXT",
        "ALTER TABLE procs ADD COLUMN restart_of INTEGER",
    ),
}


def migrate(db: sqlite3.Connection) -> None:
    """Bring an older database up to this schema, once (another supervisor may
    be at it too: the version is read again under the write lock)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        for older in range(version, SCHEMA_VERSION):
            for statement in MIGRATIONS[older]:
                db.execute(statement)
        db.execute(f"PRAGMA user_version = {max(version, SCHEMA_VERSION)}")
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
