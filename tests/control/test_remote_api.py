"""SupervisorAPI is the window's one interface to "a supervisor": mypy accepts the
in-process Supervisor and the RemoteSupervisor for it, and refuses what lacks an
operation; at run time both have every operation it names."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest

from procwindow.control.remote import RemoteSupervisor
from procwindow.core import Supervisor, SupervisorAPI

ROOT = Path(__file__).resolve().parents[2]

SNIPPET = """
from procwindow.control.remote import RemoteSupervisor
from procwindow.core import Supervisor, SupervisorAPI


class Partial:
    def procs(self, session: str | None = None, agent: str | None = None) -> list[object]:
        return []


inproc: SupervisorAPI = Supervisor()
remote: SupervisorAPI = RemoteSupervisor("ssh://host/name")
partial: SupervisorAPI = Partial()  # line 13: refused
"""


def _operations() -> set[str]:
    return {name for name, _ in inspect.getmembers(SupervisorAPI) if not name.startswith("_")}


def test_both_have_every_operation_with_the_same_kind() -> None:
    ops = _operations()
    assert {"get", "procs", "read", "subscribe", "term", "kill", "spawn", "history"} <= ops
    for name in ops:
        for cls in (Supervisor, RemoteSupervisor):
            member = inspect.getattr_static(cls, name)
            expected = inspect.getattr_static(SupervisorAPI, name)
            assert isinstance(member, property) == isinstance(expected, property), (cls, name)
            if not isinstance(expected, property):
                assert inspect.iscoroutinefunction(member) == inspect.iscoroutinefunction(
                    expected
                ), (cls, name)


@pytest.mark.slow
def test_mypy_takes_both_and_refuses_a_partial_one(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    snippet = tmp_path / "check_api.py"
    snippet.write_text(SNIPPET)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--no-error-summary",
            "--follow-imports=silent",
            str(snippet),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1, done.stdout + done.stderr
    assert "check_api.py:13:" in errors[0] and "SupervisorAPI" in errors[0]
