"""``procwindow`` as a program: the demo, ``procwindow -- CMD``, and quitting cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from procwindow import cli
from procwindow.demo import DEMO_JOBS, DEMO_SCOPES, job_argv
from tests.core.helpers import alive

ROOT = Path(__file__).resolve().parents[2]


def launch(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    env = dict(
        os.environ,
        QT_QPA_PLATFORM="offscreen",
        XDG_STATE_HOME=str(tmp_path),
        PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    return subprocess.Popen(
        [sys.executable, "-m", "procwindow", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def children_named(
    parent: psutil.Process, needle: str, timeout: float = 20
) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = []
        for child in parent.children(recursive=True):
            try:
                if needle in " ".join(child.cmdline()):
                    found.append(child)
            except psutil.Error:
                continue
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"no child running {needle!r}")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_command_runs_in_default_main_and_a_signal_quits_cleanly(
    tmp_path: Path, signum: signal.Signals
) -> None:
    app = launch(tmp_path, "--", "sh", "-c", "echo started; exec sleep 300")
    try:
        sleeper = children_named(psutil.Process(app.pid), "sleep 300")[0]
        app.send_signal(signum)
        _, err = app.communicate(timeout=30)
        assert app.returncode == 0, err
        assert "Traceback" not in err, err
        # The supervisor terminated what it ran before the program ended.
        assert not alive(sleeper.pid)
    finally:
        if app.poll() is None:
            app.kill()
            app.communicate()


def test_a_command_that_does_not_exist_is_an_error(tmp_path: Path) -> None:
    app = launch(tmp_path, "--", "no-such-command-procwindow")
    _, err = app.communicate(timeout=30)
    assert app.returncode == 2
    assert err.startswith("procwindow: ")
    assert "no-such-command-procwindow" in err


def test_version_and_help_do_not_open_a_window() -> None:
    assert cli.main(["--version"]) == 0
    assert cli.main(["--help"]) == 0


def test_the_demo_covers_two_sessions_and_three_agents() -> None:
    assert len(DEMO_SCOPES) == 2
    assert sum(len(agents) for agents in DEMO_SCOPES.values()) == 3
    assert {(job.session, job.agent) for job in DEMO_JOBS} == {
        (session, agent) for session, agents in DEMO_SCOPES.items() for agent in agents
    }
    assert job_argv("build") == ["sh", "demo/build.sh"]
    assert [job.name for job in DEMO_JOBS] == ["build", "server", "test", "fetch", "docs"]
    # Each row names its command, unless the file gives a tool.
    assert {job.tool for job in DEMO_JOBS} == {"build", "server", "test", "web_fetch", "docs"}
