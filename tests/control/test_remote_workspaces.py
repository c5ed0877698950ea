"""A server's workspaces, mirrored by a RemoteSupervisor: what each command waits
for, its phase, restarts and countdown arrive with the server's ``phase`` events,
so an attached window shows them as the server's own window would. A mirror kept
by events equals a fresh snapshot; a restart asked through the link stays within
the workspace; a workspace brought down leaves the list."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from procwindow.control.remote import RemoteSupervisor
from procwindow.core import CommandState, Phase, WorkspaceNotFound, command_state
from tests.core.helpers import until

from .conftest import Server, start_server, stop_server

STACK = """
name = "stack"

[[session]]
name = "dev"

[[session.agent]]
name = "db"
[[session.agent.command]]
name = "db"
shell = "sleep 3; echo accepting connections; sleep 60"
ready = "accepting connections"

[[session.agent]]
name = "api"
[[session.agent.command]]
name = "api"
argv = ["sleep", "60"]
depends_on = { db = "ready" }

[[session.agent]]
name = "crash"
[[session.agent.command]]
name = "crash"
shell = "exit 3"
restart = "always"
backoff = { initial = 30, cap = 30 }
"""


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Server]:
    path = tmp_path / "stack.toml"
    path.write_text(STACK)
    server = start_server(tmp_path, str(path))
    try:
        yield server
    finally:
        assert stop_server(server) == 0


def states(remote: RemoteSupervisor) -> dict[str, CommandState]:
    return {s.name: s for run in remote.workspaces for s in run.states()}


def test_a_servers_workspace_is_mirrored_by_its_events(served: Server) -> None:
    async def scenario() -> None:
        remote = await RemoteSupervisor.connect(served.path)
        try:
            (run,) = remote.workspaces
            assert run.name == "stack"
            # The api waits for the db, and the mirror says so.
            api = run.state("api")
            assert api.phase is Phase.WAITING
            assert [str(d) for d in api.waiting_for] == ["db (ready)"]
            with pytest.raises(WorkspaceNotFound):
                run.state("nope")

            # The events move it on: the db is ready, the api runs.
            await until(lambda: states(remote)["api"].phase is Phase.RUNNING, 20, what="api")
            assert states(remote)["db"].phase is Phase.READY
            # A crash loop: restarting, with the server's countdown.
            await until(lambda: states(remote)["crash"].phase is Phase.RESTARTING, 20)
            crash = states(remote)["crash"]
            assert crash.restarts == 1 and crash.next_attempt_at is not None
            assert crash.next_attempt_at - time.time() > 20
            assert crash.describe().startswith("restarting in ")
            # Any run of a command names it, as in process.
            db = states(remote)["db"]
            assert command_state(remote, db.proc_id) == db  # type: ignore[arg-type]

            # Kept by events, it equals a fresh snapshot.
            fresh = await RemoteSupervisor.connect(served.path)
            try:
                assert states(fresh) == states(remote)
            finally:
                await fresh.close()

            # A restart through the link stays within the workspace.
            new = await remote.restart(db.proc_id)
            await until(lambda: states(remote)["db"].runs == (db.proc_id, new.id), 20)
            await until(lambda: states(remote)["db"].phase is Phase.READY, 20, what="ready")
            assert states(remote)["db"].restarts == 1

            # Brought down on the server: its commands stop, and it leaves the list.
            await asyncio.to_thread(served.ctl, "down", "stack")
            await until(lambda: not remote.workspaces, 20, what="the workspace gone")
        finally:
            await remote.close()

    asyncio.run(scenario())
