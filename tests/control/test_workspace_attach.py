"""A workspace file's ``attach``: the servers a window opening it shows beside its
own supervisor. Each is checked as ``procwindow attach`` reads it; a mistake is
one line naming file, line and key. ``procwindow attach`` with several targets
says in one line each why one cannot be reached."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from procwindow.control.workspace import WorkspaceError, load_workspace, parse_workspace

from .conftest import Server, isolated_env

HEAD = '[[session]]\nname = "s"\n'

BAD = {
    "not-an-array": ('attach = "ssh://box"\n', 1, "attach", "must be an array of strings"),
    "not-a-string": ('attach = ["ci", 3]\n', 1, "attach[1]", "must be a string, got an integer"),
    "not-ssh": ('attach = ["https://box/ci"]\n', 1, "attach[0]", "only ssh:// reaches"),
    "bad-url": ('attach = ["ssh://"]\n', 1, "attach[0]", "give ssh://[user@]host[:port][/NAME]"),
    "bad-name": ('attach = ["two words"]\n', 1, "attach[0]", "two words"),
    "twice": (
        'attach = [\n  "ssh://box/ci",\n  "ssh://box/ci",\n]\n',
        3,
        "attach[1]",
        "'ssh://box/ci' is listed twice",
    ),
}


@pytest.mark.parametrize(("text", "line", "key", "fragment"), BAD.values(), ids=BAD.keys())
def test_a_bad_attach_is_one_line_naming_file_line_and_key(
    tmp_path: Path, text: str, line: int, key: str, fragment: str
) -> None:
    path = tmp_path / "ws.toml"
    path.write_text(text + HEAD)
    with pytest.raises(WorkspaceError) as info:
        load_workspace(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}:{line}: {key}: "), message
    assert fragment in message, message


def test_attach_lists_names_paths_and_ssh_urls_in_order() -> None:
    ws = parse_workspace(
        'attach = ["ssh://me@build:2222/ci", "default", "/run/user/1/procwindow/api.sock"]\n'
        + HEAD,
        "ws.toml",
    )
    assert ws.attach == ("ssh://me@build:2222/ci", "default", "/run/user/1/procwindow/api.sock")
    assert parse_workspace(HEAD, "ws.toml").attach == ()


def attach_cli(tmp_path: Path, *targets: str) -> subprocess.CompletedProcess[str]:
    env, _runtime = isolated_env(tmp_path)
    env["QT_QPA_PLATFORM"] = "offscreen"
    return subprocess.run(
        [sys.executable, "-m", "procwindow", "attach", *targets],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_attach_says_why_each_target_cannot_be_reached(tmp_path: Path) -> None:
    gone = str(tmp_path / "nobody.sock")
    done = attach_cli(tmp_path, "nobody", gone)
    assert done.returncode == 3
    lines = done.stderr.splitlines()
    assert len(lines) == 2, done.stderr
    assert all(line.startswith("procwindow: ") for line in lines)
    assert any("nobody" in line for line in lines)
    assert any(gone in line for line in lines)
    assert "Traceback" not in done.stderr


def test_attach_opens_the_reachable_and_reports_the_rest(tmp_path: Path, server: Server) -> None:
    """One server reached, one not: the window opens on the first (SIGTERM closes it)."""
    env, _runtime = isolated_env(tmp_path)
    env["QT_QPA_PLATFORM"] = "offscreen"
    window = subprocess.Popen(
        [sys.executable, "-m", "procwindow", "attach", "nobody", server.path],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert window.stderr is not None
        seen = [window.stderr.readline(), window.stderr.readline()]
        assert any(line.startswith("procwindow: attached to ") for line in seen), seen
        assert any("nobody" in line for line in seen), seen
        window.terminate()
        assert window.wait(timeout=30) == 0
        assert server.proc.poll() is None  # closing the window stops nothing there
    finally:
        if window.poll() is None:
            window.kill()
            window.wait()
        if window.stderr is not None:
            window.stderr.close()
    assert os.path.exists(server.path)
