"""The set-up scripts: ./scripts/run installs only what the window needs, ./scripts/test
adds the test extra, each once, saying what it installs as it goes."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: A stand-in for the venv's python: it records its arguments; as "pip install"
#: it prints what pip prints (progress lines among noise) and exits $PIP_STATUS.
FAKE_PYTHON = """#!/bin/sh
echo "$@" >> "$(dirname "$0")/../calls"
if [ "$2" = pip ]; then
  echo "Looking in links: /nowhere"
  echo "Collecting PySide6-Essentials"
  echo "  Downloading PySide6_Essentials.whl (90 MB)"
  echo "Successfully installed PySide6-Essentials procwindow"
  exit "${PIP_STATUS:-0}"
fi
exit 0
"""

FAKE_PROCWINDOW = """#!/bin/sh
echo "procwindow $@"
"""


def fake_venv(tmp_path: Path) -> Path:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    for name, text in (("python", FAKE_PYTHON), ("procwindow", FAKE_PROCWINDOW)):
        path = venv / "bin" / name
        path.write_text(text)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return venv


def calls(venv: Path) -> list[str]:
    path = venv / "calls"
    return path.read_text().splitlines() if path.exists() else []


def ensure(venv: Path, *extra: str, pip_status: int = 0) -> subprocess.CompletedProcess[str]:
    script = (
        f'set -euo pipefail; source "{ROOT}/scripts/_venv.sh"; ensure_venv "$1" {" ".join(extra)}'
    )
    return subprocess.run(
        ["bash", "-c", script, "bash", str(venv)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PIP_STATUS": str(pip_status)},
    )


def test_run_installs_only_the_window_and_says_so(tmp_path):
    venv = fake_venv(tmp_path)
    done = subprocess.run(
        [str(ROOT / "scripts" / "run"), "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "VENV": str(venv)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "procwindow --version\n"
    [install] = calls(venv)
    assert install.endswith(f"-e {ROOT}")  # no [test]: no pytest, ruff or mypy to open a window
    assert "==> installing procwindow into" in done.stderr
    assert "Collecting PySide6-Essentials" in done.stderr  # progress, as it goes
    assert "Successfully installed" in done.stderr
    assert "Downloading" not in done.stderr and "Looking in" not in done.stderr
    # Once only.
    again = subprocess.run(
        [str(ROOT / "scripts" / "run"), "x"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "VENV": str(venv)},
    )
    assert again.returncode == 0
    assert again.stderr == ""
    assert len(calls(venv)) == 1


def test_the_test_extra_is_installed_on_its_own_stamp(tmp_path):
    venv = fake_venv(tmp_path)
    assert ensure(venv).returncode == 0
    done = ensure(venv, "test")
    assert done.returncode == 0, done.stderr
    assert calls(venv)[-1].endswith(f"-e {ROOT}[test]")
    assert ensure(venv, "test").returncode == 0
    assert ensure(venv).returncode == 0
    assert len(calls(venv)) == 2
    assert 'ensure_venv "$VENV" test' in (ROOT / "scripts" / "test").read_text()
    assert 'ensure_venv "$VENV" test' in (ROOT / ".ci" / "run").read_text()


def test_a_failed_install_is_one_clear_error_and_not_stamped(tmp_path):
    venv = fake_venv(tmp_path)
    done = ensure(venv, pip_status=1)
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1].startswith(f"installing procwindow into {venv} failed")
    assert not list(venv.glob(".procwindow-installed*"))
    assert ensure(venv).returncode == 0  # tried again next time
    assert len(calls(venv)) == 2
