"""The real application on a real X server: Xvfb, xdotool, ``python -m procwindow``.

The test starts its own ``Xvfb`` (on a free display it picks with -displayfd),
runs the demo workspace with Qt's xcb platform, and drives it from outside with
xdotool: a right-click on the "webapp" session, *Processes…* in its menu, then
the Kill button of the build's row, which must end that process. The app saves
screenshots of its windows on SIGUSR1 (``PROCWINDOW_SCREENSHOT_DIR``); SIGTERM
then closes it, and it must exit 0 having stopped every child.

Coordinates come from the window's fixed metrics (Theme.qml): header bar 44 px,
tree header 32 px, tree rows 30 px; table header 28 px, rows 28 px, the actions
column 154 px wide at the right edge.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest
from PySide6.QtGui import QImage

from tests.core.helpers import alive

from .helpers import SCREENSHOTS, image_stats

pytestmark = [
    pytest.mark.xvfb,
    pytest.mark.skipif(
        shutil.which("Xvfb") is None or shutil.which("xdotool") is None,
        reason="needs Xvfb and xdotool (apt-get install xvfb xdotool, see .ci/apt-packages.txt)",
    ),
]

ROOT = Path(__file__).resolve().parents[2]

# Window-relative positions (see the module docstring).
WEBAPP_NODE = (80, 44 + 32 + 4 + 15)
MENU_FIRST_ITEM = (60, 18)  # from the point the menu was opened at
TABLE_ROW_Y = 44 + 28 + 14  # the middle of row 0
ROW_HEIGHT = 28
KILL_FROM_RIGHT = 154 - (12 + 2 * 28 + 13)


def wait_for(cond: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@contextlib.contextmanager
def xvfb() -> Iterator[str]:
    """A private X server; yields its DISPLAY."""
    read_fd, write_fd = os.pipe()
    server = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write_fd), "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
        pass_fds=(write_fd,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write_fd)
    try:
        with os.fdopen(read_fd, "rb") as pipe:
            number = pipe.readline().strip().decode()
        assert number.isdigit(), f"Xvfb did not start (exit status {server.poll()})"
        yield f":{number}"
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def xdotool(display: str, *args: str, timeout: float = 15) -> str:
    result = subprocess.run(
        ["xdotool", *args],
        env=dict(os.environ, DISPLAY=display),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert result.returncode == 0, f"xdotool {' '.join(args)}: {result.stderr}"
    return result.stdout


def find_window(display: str, title_regex: str, timeout: float = 20) -> tuple[str, int, int]:
    """(window id, width, height) of the first visible window whose title matches."""
    out = xdotool(
        display, "search", "--sync", "--onlyvisible", "--name", title_regex, timeout=timeout
    )
    window = out.split()[0]
    geometry = dict(
        line.split("=", 1)
        for line in xdotool(display, "getwindowgeometry", "--shell", window).split()
    )
    return window, int(geometry["WIDTH"]), int(geometry["HEIGHT"])


def click(display: str, window: str, x: int, y: int, button: int = 1) -> None:
    xdotool(display, "mousemove", "--window", window, str(x), str(y), "click", str(button))


def demo_children(app: psutil.Process, job: str) -> list[psutil.Process]:
    found = []
    for child in app.children(recursive=True):
        with contextlib.suppress(psutil.Error):
            # the demo's jobs are `sh demo/NAME.sh`
            if child.cmdline()[-1:] == [f"demo/{job}.sh"] and child.status() != "zombie":
                found.append(child)
    return found


def test_demo_under_xvfb_right_click_processes_kill(tmp_path: Path) -> None:
    shots = tmp_path / "shots"
    env = dict(
        os.environ,
        QT_QPA_PLATFORM="xcb",
        PROCWINDOW_SCREENSHOT_DIR=str(shots),
        XDG_STATE_HOME=str(tmp_path / "state"),
        PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    with xvfb() as display:
        env["DISPLAY"] = display
        log = (tmp_path / "app.log").open("w")
        app = subprocess.Popen(
            [sys.executable, "-m", "procwindow"], env=env, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            main, _, _ = find_window(display, "^procwindow$")
            process = psutil.Process(app.pid)
            wait_for(lambda: demo_children(process, "build"), 20, "the demo build running")
            build = demo_children(process, "build")[0]
            # The server waits for the build's first artefact (the demo's depends_on).
            wait_for(lambda: demo_children(process, "server"), 30, "the demo server running")

            # Right-click the "webapp" session, then "Processes…" in the menu. A
            # first click may land before the tree is drawn: try again if no window.
            for attempt in range(3):
                click(display, main, *WEBAPP_NODE, button=3)
                time.sleep(0.6)
                click(
                    display,
                    main,
                    WEBAPP_NODE[0] + MENU_FIRST_ITEM[0],
                    WEBAPP_NODE[1] + MENU_FIRST_ITEM[1],
                )
                try:
                    procs, width, _ = find_window(display, "^Processes - webapp$", timeout=5)
                    break
                except AssertionError:
                    if attempt == 2:
                        raise
            time.sleep(1.0)

            # Session view, newest first: server (row 0, started once the build was
            # ready), test (row 1), build (row 2).
            click(display, procs, width - KILL_FROM_RIGHT, TABLE_ROW_Y + 2 * ROW_HEIGHT)
            wait_for(lambda: not alive(build.pid), 10, "kill")
            assert demo_children(process, "server"), "only the build's row was meant"

            # Screenshots: the app's own (SIGUSR1), and the whole screen if ImageMagick is here.
            app.send_signal(signal.SIGUSR1)
            wait_for(lambda: len(list(shots.glob("*.png"))) >= 2, 10, "the app's screenshots")
            time.sleep(0.3)  # written, not just created
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            for png in sorted(shots.glob("*.png")):
                target = SCREENSHOTS / f"xvfb-{png.name.split('-', 1)[1]}"
                shutil.copy(png, target)
                colours, differ = image_stats(QImage(str(target)))
                assert colours >= 12 and differ >= 0.05, f"{target.name} looks blank"
            if shutil.which("import"):
                subprocess.run(
                    ["import", "-window", "root", str(SCREENSHOTS / "xvfb-screen.png")],
                    env=env,
                    timeout=30,
                    check=True,
                )

            # SIGTERM: the app closes its windows and its supervisor stops every child
            # (the server ignores SIGTERM: it is killed after the graceful timeout).
            children = process.children(recursive=True)
            app.terminate()
            assert app.wait(30) == 0
            _, left = psutil.wait_procs(children, timeout=5)
            assert not left, f"left running: {left}"
        finally:
            if app.poll() is None:
                app.kill()
                app.wait()
            log.close()
            if app.returncode not in (0, None):
                print((tmp_path / "app.log").read_text(), file=sys.stderr)


def test_attach_under_xvfb_saves_its_windows_on_sigusr1(tmp_path: Path) -> None:
    """``procwindow attach`` is the window too: with PROCWINDOW_SCREENSHOT_DIR set,
    SIGUSR1 saves its windows (it does not end it); SIGTERM closes it, status 0,
    and the server it attached to runs on."""
    from tests.control.conftest import start_server, stop_server

    server = start_server(tmp_path)
    shots = tmp_path / "shots"
    env = dict(
        os.environ,
        QT_QPA_PLATFORM="xcb",
        PROCWINDOW_SCREENSHOT_DIR=str(shots),
        XDG_STATE_HOME=str(tmp_path / "window-state"),
        PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    try:
        with xvfb() as display:
            env["DISPLAY"] = display
            with (tmp_path / "app.log").open("w") as log:
                app = subprocess.Popen(
                    [sys.executable, "-m", "procwindow", "attach", server.path],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            try:
                find_window(display, "^procwindow$")
                app.send_signal(signal.SIGUSR1)
                wait_for(lambda: list(shots.glob("*.png")), 10, "the window's screenshot")
                assert app.poll() is None, "SIGUSR1 ended it"
                time.sleep(0.3)  # written, not just created
                colours, differ = image_stats(QImage(str(sorted(shots.glob("*.png"))[0])))
                assert colours >= 12 and differ >= 0.05, "the screenshot looks blank"
                app.terminate()
                assert app.wait(30) == 0
                assert server.request({"op": "hello"})["ok"] is True
            finally:
                if app.poll() is None:
                    app.kill()
                    app.wait()
    finally:
        assert stop_server(server) == 0
