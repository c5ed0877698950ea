"""A workspace command's runs are linked (``Proc.command_run``): each names its
workspace and command, and a restart the run before it. The history keeps the
links, so they hold after the supervisor restarts; a history of the schema
before them is brought up to date and still reads."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest

from procwindow import Backoff, Command, CommandRun, Phase, Supervisor, Workspace

from .helpers import py, until

CRASH = Command(
    "s",
    "a",
    tuple(py("import sys; sys.exit(3)")),
    name="crash",
    restart="on-failure",
    backoff=Backoff(initial=0.1, factor=1.0, cap=60.0),  # a run never "long enough"
    max_restarts=2,
)


async def _crash_loop(sup: Supervisor) -> list[int]:
    """The runs of a command that fails three times, oldest first."""
    started = await Workspace([CRASH], name="demo").start(sup)
    await until(lambda: started.state("crash").phase is Phase.FAILED, 30, "gave up")
    return list(started.state("crash").runs)


@pytest.mark.promise("Workspaces: restart")
def test_a_command_s_runs_are_linked_and_the_links_outlive_the_supervisor(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"

    async def first() -> list[int]:
        async with Supervisor(state_dir=state) as sup:
            runs = await _crash_loop(sup)
            assert [sup.get(i).command_run for i in runs] == [
                CommandRun("demo", "crash", None),
                CommandRun("demo", "crash", runs[0]),
                CommandRun("demo", "crash", runs[1]),
            ]
            lone = await sup.spawn(["true"], session="s", agent="a")
            await sup.wait(lone.id)
            assert lone.command_run is None  # no workspace started it
            return [*runs, lone.id]

    ids = asyncio.run(first())

    async def later() -> None:
        async with Supervisor(state_dir=state) as sup:
            past = {p.id: p.command_run for p in sup.history(session="s")}
            assert past == {
                ids[0]: CommandRun("demo", "crash", None),
                ids[1]: CommandRun("demo", "crash", ids[0]),
                ids[2]: CommandRun("demo", "crash", ids[1]),
                ids[3]: None,
            }

    asyncio.run(later())


def test_a_history_of_the_first_schema_is_brought_up_to_date(tmp_path: Path) -> None:
    state = tmp_path / "state"

    async def record() -> int:
        async with Supervisor(state_dir=state) as sup:
            p = await sup.spawn(["true"], session="s", agent="a")
            await sup.wait(p.id)
            return p.id

    old_id = asyncio.run(record())
    # Make it a database of schema 1, as an older procwindow left it.
    (db_path,) = state.rglob("history.db")
    with sqlite3.connect(db_path) as db:
        for column in ("workspace", "command", "restart_of"):
            db.execute(f"ALTER TABLE procs DROP COLUMN {column}")
        db.execute("PRAGMA user_version = 1")

    async def reopen() -> None:
        async with Supervisor(state_dir=state) as sup:
            assert sup.history_enabled, sup.history_error
            (old,) = sup.history(session="s")
            assert (old.id, old.command_run) == (old_id, None)
            runs = await _crash_loop(sup)
        async with Supervisor(state_dir=state) as sup:
            assert sup.get(runs[1]).command_run == CommandRun("demo", "crash", runs[0])

    asyncio.run(reopen())
    with sqlite3.connect(db_path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == 2
