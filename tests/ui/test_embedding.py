"""A host application opens a ProcWindow on its own supervisor, in a few lines."""

from __future__ import annotations

import gc
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

from procwindow import app as window_app
from procwindow.core import Supervisor
from procwindow.qt.window import open_proc_window, proc_windows, window_model

from .conftest import Run
from .helpers import find_item, item, py, until

ROOT = Path(__file__).resolve().parents[2]


# The embedding example, as the README shows it: a host program with its own
# QApplication, qasync loop and Supervisor opens a ProcWindow on one scope.
def readme_example() -> str:
    """The README's embedding example, exactly as printed there."""
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(# embedding\n.*?)```", readme, re.S)
    assert len(blocks) == 1, "README must hold exactly one '# embedding' block"
    return blocks[0]


# Runs the README example unchanged; a wrapper around open_proc_window reports what the
# window shows once the output arrived, then closes it as a person would.
HARNESS = textwrap.dedent(
    """
    import runpy, sys
    from PySide6.QtCore import QTimer
    import procwindow.qt.window as window_module

    opened = window_module.open_proc_window

    def open_and_watch(*args, **kwargs):
        window = opened(*args, **kwargs)
        output = window.property("outputModel")

        def check():
            if output.rowCount() == 0:  # no line shown yet (held lines become rows at a frame)
                return
            timer.stop()
            model = window.property("procModel")
            print("title:", window.title(), flush=True)
            print("rows:", model.count, flush=True)
            print("line:", output.copyAll(), flush=True)
            window.close()

        timer = QTimer(window)
        timer.timeout.connect(check)
        timer.start(50)
        return window

    window_module.open_proc_window = open_and_watch
    runpy.run_path(sys.argv[1], run_name="__main__")
    print("host exited cleanly", flush=True)
    """
)


def test_a_host_opens_a_proc_window_on_its_own_supervisor(tmp_path: Path) -> None:
    example = tmp_path / "host.py"
    example.write_text(readme_example())
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_STATE_HOME=str(tmp_path))
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    result = subprocess.run(
        [sys.executable, "-c", HARNESS, str(example)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "title: Processes - build/cc",
        "rows: 1",
        "line: compiling",
        "host exited cleanly",
    ], result.stderr
    # Leaving `async with Supervisor()` terminated the sleeping child.
    assert "warning" not in result.stderr.lower(), result.stderr


def test_open_proc_window_in_process_owns_and_frees_its_engine(sup: Supervisor, run: Run) -> None:
    async def scenario() -> None:
        proc = await sup.spawn(py("print('hello from the host')"), session="build", agent="cc")
        window = open_proc_window(sup, "build", "cc")
        assert window.title() == "Processes - build/cc"
        # Without an ActiveScope there is nothing to follow: pinned, no pin button.
        assert window_model(window).pinned is True
        assert find_item(window, "pinButton") is None
        await item(window, f"statusText-{proc.id}")
        output = window.property("outputModel")
        await until(lambda: output.copyAll() == "hello from the host", what="the output")
        destroyed: list[bool] = []
        window.destroyed.connect(lambda: destroyed.append(True))
        window.close()
        await until(lambda: destroyed == [True], what="the window deleted")
        assert proc_windows() == []

    run(scenario())


def test_the_embedding_module_loads_nothing_of_the_application() -> None:
    # A host imports the window, not the procwindow program: no argparse set-up (cli),
    # no control socket (control), no TOML parsed at import (demo).
    code = textwrap.dedent(
        """
        import sys
        import procwindow.qt.window
        loaded = [m for m in ("procwindow.cli", "procwindow.control", "procwindow.demo",
                              "procwindow.app") if m in sys.modules]
        print(loaded)
        """
    )
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]", result.stdout


def test_the_main_windows_models_outlive_the_items_that_bind_to_them(
    sup: Supervisor, run: Run
) -> None:
    # The window's properties are typed (`required property MainWindowModel`): if the
    # models went first, the window's bindings would run on freed objects. A
    # Workspace dropped by Python right after close() is the hard case: its wrapper
    # is collected while the engine's deleteLater is still pending.
    order: list[str] = []

    async def scenario() -> None:
        await sup.spawn(["true"], session="s", agent="a")
        ws = window_app.Workspace(sup)
        window = ws.load()
        window.destroyed.connect(lambda: order.append("window"))
        for name in ("view_model", "session_model", "controller", "overview_model"):
            getattr(ws, name).destroyed.connect(lambda _=None, n=name: order.append(n))
        ws.close()
        del ws, window
        gc.collect()
        await until(lambda: "window" in order, what="the main window deleted")
        await until(lambda: len(order) == 5, what="its models deleted")

    run(scenario())
    assert order[0] == "window", order
