"""A workspace that ends with one of its commands, as a test-runner stack does:
``--exit-code-from NAME`` (``serve`` and ``up``), and the commands with
``exit_on_end`` or ``exit_on_failure``. Once such a command starts no more, the
workspace is stopped (its ``stop`` event is set) and the program exits with the
command's status: 128+N for signal N, 1 if it never ran."""

from __future__ import annotations

import argparse
import asyncio
import sys

from ..core import Supervisor, Workspace, WorkspaceRun

__all__ = ["Endings", "add_exit_code_option", "exit_code_problem"]


def add_exit_code_option(parser: argparse.ArgumentParser) -> None:
    """``--exit-code-from NAME`` (``serve``, ``up``)."""
    parser.add_argument(
        "--exit-code-from",
        metavar="NAME",
        help="a test-runner stack: once the workspace's command NAME ends (and starts no"
        " more), stop the workspace and exit with its exit status (128+N for signal N, 1"
        " if it never ran)",
    )


def exit_code_problem(name: str | None, ws: Workspace | None, file: str | None) -> str | None:
    """What is wrong with ``--exit-code-from NAME`` for ``ws`` (one line), or None."""
    if name is None:
        return None
    if ws is None:
        return "--exit-code-from needs a workspace FILE"
    names = [str(c.name) for c in ws.commands]
    if name not in names:
        return f"--exit-code-from: {file} has no command {name!r} (it has: {', '.join(names)})"
    return None


class Endings:
    """Watches the commands whose end ends the workspace, from its start on."""

    def __init__(self, ws: Workspace, exit_code_from: str | None) -> None:
        #: (command name, whether only a failure of it ends the workspace)
        self.commands = [(exit_code_from, False)] if exit_code_from is not None else []
        for c in ws.commands:
            if (c.exit_on_end or c.exit_on_failure) and c.name != exit_code_from:
                self.commands.append((str(c.name), not c.exit_on_end))
        self._watchers: list[asyncio.Future[int | None]] = []

    def watch(self, run: WorkspaceRun, sup: Supervisor, stop: asyncio.Event) -> None:
        """Set ``stop`` once one of the commands ends (or fails) for good."""
        self._watchers = [
            asyncio.ensure_future(_end_with(run, name, sup, stop, failure_only))
            for name, failure_only in self.commands
        ]

    def cancel(self) -> None:
        for watcher in self._watchers:
            if not watcher.done():
                watcher.cancel()

    def status(self) -> int | None:
        """The status of the command that ended the workspace (None: none did)."""
        for watcher in self._watchers:
            if watcher.done() and not watcher.cancelled() and watcher.result() is not None:
                return watcher.result()
        return None


async def _end_with(
    run: WorkspaceRun, name: str, sup: Supervisor, stop: asyncio.Event, failure_only: bool
) -> int | None:
    """Once NAME starts no more, set ``stop``; NAME's status. With
    ``failure_only``, only if it failed (else None, and nothing is stopped)."""
    state = await run.wait_ended(name)
    exit_info = sup.get(state.proc_id).exit if state.proc_id is not None else None
    if exit_info is None:
        code, how = 1, f"{state.phase.value}" + (f": {state.detail}" if state.detail else "")
    elif exit_info.code is not None:
        code, how = exit_info.code, f"exited with code {exit_info.code}"
    else:
        code, how = 128 + (exit_info.signal or 0), f"was killed by signal {exit_info.signal}"
    if failure_only and code == 0:
        return None
    print(f"procwindow: {name} {how}; stopping the workspace", file=sys.stderr, flush=True)
    stop.set()
    return code
