"""The built-in demo workspace: two sessions, three agents, real commands.

``procwindow`` with no arguments opens the workspace file ``resources/demo.toml``
(installed inside the package), a shipped example of the workspace format:

=========  =======  =========  ==================================================
session    agent    tool       what it does
=========  =======  =========  ==================================================
webapp     builder  build      a chatty watch-mode build: ANSI colours, a ``\\r``
                               progress bar, a rebuild every few seconds
webapp     builder  server     a dev server that ignores SIGTERM (Term escalates)
webapp     tester   test       a test run that fails with exit status 1
docs       writer   web_fetch  a fetch that finishes cleanly
docs       writer   docs       a docs build that writes warnings to stderr
=========  =======  =========  ==================================================

The jobs are POSIX ``sh`` scripts beside it, ``resources/demo/NAME.sh``. They
start in order: the server waits until the build is ready (its first artefact
built), the docs build until the fetch completed successfully.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from procwindow._paths import resources_dir
from procwindow.control.workspace import Command, Workspace, load_workspace
from procwindow.core import Proc, Supervisor

__all__ = [
    "DEMO_JOBS",
    "DEMO_SCOPES",
    "DemoJob",
    "demo_path",
    "demo_workspace",
    "job_argv",
    "start_demo",
]


def demo_path() -> Path:
    """The demo workspace file."""
    return resources_dir() / "demo.toml"


@cache
def demo_workspace() -> Workspace:
    """The demo workspace, parsed and checked."""
    return load_workspace(demo_path())


@dataclass(frozen=True, slots=True)
class DemoJob:
    """One command of the demo workspace."""

    name: str
    session: str
    agent: str
    tool: str


def _job_name(command: Command) -> str:
    return Path(command.argv[-1]).stem  # sh demo/NAME.sh


#: The demo's jobs, in start order (the window lists the newest first).
DEMO_JOBS: tuple[DemoJob, ...] = tuple(
    DemoJob(_job_name(c), c.session, c.agent, c.tool) for c in demo_workspace().commands
)

#: The sessions of the demo workspace and their agents, in tree order.
DEMO_SCOPES: dict[str, list[str]] = {s: list(a) for s, a in demo_workspace().sessions.items()}


def job_argv(name: str) -> list[str]:
    """The argv that runs demo job ``name``."""
    for command in demo_workspace().commands:
        if _job_name(command) == name:
            return list(command.argv)
    raise KeyError(name)


async def start_demo(supervisor: Supervisor) -> list[Proc]:
    """Start the demo workspace on ``supervisor`` and wait until every job has
    started (the server waits for the build's first artefact); return their
    procs in the workspace's order."""
    run = await demo_workspace().start(supervisor)
    await run.wait_started()
    return run.procs()
