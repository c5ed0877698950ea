"""The library works without Qt, and the README quickstart runs as written."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

NO_QT = textwrap.dedent(
    """
    import asyncio, importlib.abc, sys

    class NoQt(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] in ("PySide6", "shiboken6", "qasync"):
                raise ImportError(f"{name} is made unimportable for this test")
            return None

    sys.meta_path.insert(0, NoQt())
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
