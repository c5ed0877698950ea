"""The library works without Qt, and the README quickstart runs as written."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

NO_QT = textwrap.dedent(
    """
    import asyncio, sys

    import tests.no_qt  # PySide6, shiboken6 and qasync cannot be imported

    from procwindow import Supervisor, ExitReason

    async def main():
        async with Supervisor(graceful_timeout=1) as sup:
            p = await sup.spawn(["sh", "-c", "echo hello; exec sleep 60"], session="s", agent="a")
            while not sup.read(p.id).lines:
                await asyncio.sleep(0.01)
            info = await sup.term(p.id)
            assert info.reason is ExitReason.TERMINATED, info
            print(sup.read(p.id).lines[0].text)

    asyncio.run(main())
    leaked = sorted(m for m in sys.modules if m.split(".")[0] in ("PySide6", "shiboken6", "qasync"))
    print("qt modules:", leaked)
    """
)


@pytest.mark.promise("Library quickstart")
def test_core_runs_with_qt_unimportable(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", NO_QT],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "XDG_STATE_HOME": str(tmp_path), "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["hello", "qt modules: []"]


def _pytest_without_qt(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run pytest in a subprocess with Qt unimportable and pytest-qt not loaded."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.no_qt", "-p", "no:cacheprovider", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "XDG_STATE_HOME": str(tmp_path), "PYTHONPATH": str(ROOT)},
    )


def test_core_tests_run_with_qt_unimportable(tmp_path):
    # --full: the qasync variants are collected (and skip), not left to the full tier.
    done = _pytest_without_qt(tmp_path, "-q", "--full", "tests/core/test_reports.py")
    assert done.returncode == 0, done.stdout + done.stderr
    summary = done.stdout.splitlines()[-1]
    # Every test passes on asyncio; only its qasync variant is skipped.
    counts = re.fullmatch(r"(\d+) passed, (\d+) skipped in .*", summary)
    assert counts and counts[1] == counts[2] != "0", summary
    skips = [ln for ln in done.stdout.splitlines() if ln.startswith("SKIPPED")]
    assert skips and all(ln.endswith("Qt cannot be imported (qasync)") for ln in skips), skips


LEAKY = textwrap.dedent(
    """
    import os, sys

    def test_imports_no_qt():
        assert not [m for m in sys.modules if m.split(".")[0] in ("PySide6", "shiboken6", "qasync")]

    def test_leaks_a_child():
        print("leaked", os.posix_spawnp("sleep", ["sleep", "60"], os.environ))
    """
)


def test_leak_check_runs_with_qt_unimportable(tmp_path):
    test_file = tmp_path / "test_leaky.py"
    test_file.write_text(LEAKY)
    # The root conftest as a plugin: its leak check, for a test file outside tests/.
    done = _pytest_without_qt(
        tmp_path, "-c", "pyproject.toml", "-p", "tests.conftest", "-s", "-q", str(test_file)
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].startswith("2 passed, 1 error in "), done.stdout
    pid = re.search(r"leaked (\d+)$", done.stdout, re.M)
    assert pid, done.stdout
    assert "ERROR at teardown of test_leaks_a_child" in done.stdout
    assert re.search(rf"left behind:\n  child {pid[1]} \w+ \['sleep', '60'\]", done.stdout)


@pytest.mark.promise("Library quickstart")
def test_readme_quickstart_runs_verbatim(tmp_path):
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(# quickstart\n.*?)```", readme, re.S)
    assert len(blocks) == 1, "README must hold exactly one '# quickstart' block"
    done = subprocess.run(
        [sys.executable, "-c", blocks[0]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "XDG_STATE_HOME": str(tmp_path), "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:3] in (
        ["1 stdout building", "2 stderr oops", "exit 3 failed"],
        ["1 stderr oops", "2 stdout building", "exit 3 failed"],
    )
    assert lines[3] == "pid\tstatus\texit_code\ttool\tcmd\tstart_unix\truntime_sec"
    assert lines[4].startswith(
        "1\texited\t3\tshell\tsh -c 'echo building; echo oops >&2; exit 3'\t"
    )


@pytest.mark.promise("For agent harnesses")
def test_readme_harness_runs_verbatim(tmp_path):
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(# harness\n.*?)```", readme, re.S)
    assert len(blocks) == 1, "README must hold exactly one '# harness' block"
    printed = re.search(
        r"```python\n# harness\n.*?```\n\nprints\n\n```text\n(.*?)```", readme, re.S
    )
    assert printed, "the harness block is followed by what it prints"
    done = subprocess.run(
        [sys.executable, "-c", blocks[0]],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "XDG_STATE_HOME": str(tmp_path), "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == printed[1]
    # No polling loop and no private attribute in the example.
    assert "while " not in blocks[0]
    assert not re.search(r"\._[a-z]", blocks[0])
