"""The window serves the control socket: `procwindow ctl run` adds a row, live."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from procwindow.app import _serve, proc_windows
from procwindow.core import Supervisor
from procwindow.qt import ProcModel
from tests.core.helpers import alive, until

from .conftest import MakeWorkspace, Run
from .helpers import item

ROOT = Path(__file__).resolve().parents[2]


def test_ctl_run_adds_a_row_to_the_open_proc_window(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run, tmp_path: Path
) -> None:
    folder = tmp_path / "sock"
    folder.mkdir(mode=0o700)
    path = str(folder / "window.sock")

    async def scenario() -> None:
        server = await _serve(sup, path, {"proj": ["agent1"]})
        assert server is not None
        try:
            workspace = make_workspace(scopes={"proj": ["agent1"]})
            workspace.load()
            window = workspace.openProcWindow("proj", "agent1")
            await until(lambda: len(proc_windows()) == 1, what="a ProcWindow")
            model = window.property("procModel")
            assert isinstance(model, ProcModel)
            assert model.rowCount() == 0
            # `procwindow ctl run` from "a terminal": a separate process, started here
            # through the supervisor itself (no thread, no blocking call in the loop).
            ctl = await sup.spawn(
                [
                    sys.executable,
                    "-m",
                    "procwindow",
                    "ctl",
                    "--socket",
                    path,
                    "run",
                    "--session",
                    "proj",
                    "--agent",
                    "agent1",
                    "--tool",
                    "build",
                    "--",
                    "sh",
                    "-c",
                    "echo from-ctl; sleep 60",
                ],
                session="terminal",
                agent="user",
                env={"PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")},
            )
            info = await sup.wait(ctl.id)
            printed = [line.text for line in sup.read(ctl.id).lines]
            assert info.code == 0, printed
            new_id = int(printed[0])
            await until(lambda: model.rowCount() == 1, what="the new row in the open window")
            assert model.procIdAt(0) == new_id
            # and the table on screen shows it, running, with its Term button enabled
            status = await item(window, f"statusText-{new_id}")
            await until(lambda: status.property("text") == "running", what="running")
            assert (await item(window, f"termButton-{new_id}")).property("enabled") is True
            assert sup.get(new_id).tool == "build"
            await until(lambda: [ln.text for ln in sup.read(new_id).lines] == ["from-ctl"])
        finally:
            await server.close()
        assert not os.path.exists(path)

    run(scenario())


def window_env(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """The environment of a window run here: its own runtime and state directories."""
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    env = dict(
        os.environ,
        PYTHONPATH=str(ROOT),
        XDG_RUNTIME_DIR=str(runtime),
        XDG_STATE_HOME=str(tmp_path / "state"),
        QT_QPA_PLATFORM="offscreen",
    )
    return env, runtime


def test_up_opens_a_workspace_that_ctl_reaches(tmp_path: Path) -> None:
    import signal
    import subprocess
    import time

    ws = tmp_path / "ws.toml"
    ws.write_text(
        'name = "updemo"\n'
        '[[session]]\nname = "proj"\n[[session.agent]]\nname = "dev"\n'
        '[[session.agent.command]]\nargv = ["sh", "-c", "echo up-and-running; sleep 60"]\n'
    )
    env, runtime = window_env(tmp_path)
    app = subprocess.Popen(
        [sys.executable, "-m", "procwindow", "up", str(ws)],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        sock = runtime / "procwindow" / "updemo.sock"  # named by the workspace
        deadline = time.monotonic() + 30
        while not sock.exists():
            assert app.poll() is None, app.stderr.read()
            assert time.monotonic() < deadline, "no control socket"
            time.sleep(0.1)

        def ctl(*args: str) -> str:
            done = subprocess.run(
                [sys.executable, "-m", "procwindow", "ctl", "--name", "updemo", *args],
                env=env,
                capture_output=True,
                text=True,
                timeout=30,
            )
            assert done.returncode == 0, done.stderr
            return done.stdout

        rows = ctl("idx").splitlines()
        assert rows[1].split("\t")[:4] == ["1", "running", "-1", "dev"]  # the command's name
        assert ctl("sessions") == "proj  1/1\n  dev  1/1\n"
        deadline = time.monotonic() + 10
        while ctl("out", "1") != "up-and-running\n":
            assert time.monotonic() < deadline
            time.sleep(0.1)
    finally:
        app.send_signal(signal.SIGTERM)
        assert app.wait(timeout=30) == 0
        app.stderr.close()
    assert not sock.exists()


@pytest.mark.promise("Workspaces: exit_on_end")
def test_up_with_exit_code_from_closes_the_window_with_the_command_s_status(
    tmp_path: Path,
) -> None:
    # A test-runner stack in the window, as `docker compose up --exit-code-from`:
    # once `tests` ends, the stack stops, the window closes, its status is ours.
    pid_file = tmp_path / "db.pid"
    ws = tmp_path / "ws.toml"
    head = '[[session]]\nname = "proj"\n[[session.agent]]\nname = "dev"\n'
    db = f'[[session.agent.command]]\nname = "db"\nshell = "echo $$ > {pid_file}; exec sleep 60"\n'
    env, _runtime = window_env(tmp_path)

    def up(tests: str, *extra: str) -> subprocess.CompletedProcess[str]:
        ws.write_text(
            head + db + f'[[session.agent.command]]\nname = "tests"\n{tests}\ndepends_on = ["db"]\n'
        )
        return subprocess.run(
            [sys.executable, "-m", "procwindow", "up", str(ws), *extra],
            env=env,
            capture_output=True,
            text=True,
            timeout=90,
        )

    done = up('shell = "sleep 0.5; exit 3"', "--exit-code-from", "tests")
    assert done.returncode == 3, done.stderr
    assert "procwindow: tests exited with code 3; stopping the workspace" in done.stderr
    assert "Traceback" not in done.stderr
    assert not alive(int(pid_file.read_text()))  # the stack stopped with the window
    # exit_on_failure in the file does the same without the option; a success does not.
    done = up('shell = "sleep 0.5; exit 5"\nexit_on_failure = true')
    assert done.returncode == 5, done.stderr
    assert not alive(int(pid_file.read_text()))
    # A name the file lacks is refused at once, in one line.
    done = up('shell = "exit 0"', "--exit-code-from", "nope")
    assert (done.returncode, done.stderr) == (
        2,
        f"procwindow up: --exit-code-from: {ws} has no command 'nope' (it has: db, tests)\n",
    )
