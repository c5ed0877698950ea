"""Screenshots of the real windows, written to build/screenshots/ and checked non-blank.

The demo workspace runs (real commands: colours, stderr, a failing test run), the
windows are grabbed with ``QQuickWindow.grabWindow()`` at three sizes (the smallest
is raised to a window's minimum where that is larger), and each image must show
many colours and plenty of non-background pixels: an empty or unstyled window fails.
"""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtQuick import QQuickWindow

from procwindow.app import Workspace
from procwindow.core import Proc, Supervisor
from procwindow.demo import DEMO_SCOPES, job_argv, start_demo
from procwindow.qt.window import open_proc_window, window_model

from ..tiers import first_fast
from .conftest import MakeWorkspace, Run
from .helpers import (
    click,
    find_item,
    image_stats,
    item,
    key,
    move_mouse_away,
    py,
    save_screenshot,
    settle,
    type_text,
    until,
)

SIZES = {"700x450": (700, 450), "1024x640": (1024, 640), "1400x900": (1400, 900)}


def resize(window: QQuickWindow, width: int, height: int) -> None:
    """``width`` × ``height``, or the window's minimum where that is larger."""
    window.resize(max(width, window.minimumWidth()), max(height, window.minimumHeight()))


def assert_not_blank(name: str, image: object, colours: int = 12, share: float = 0.05) -> None:
    distinct, differ = image_stats(image)  # type: ignore[arg-type]
    assert distinct >= colours, f"{name}: only {distinct} colours"
    assert differ >= share, f"{name}: only {differ:.1%} of the pixels differ from the background"


async def demo(sup: Supervisor, make_workspace: MakeWorkspace) -> tuple[Workspace, list[Proc]]:
    procs = await start_demo(sup)
    workspace = make_workspace(scopes=DEMO_SCOPES)
    workspace.active_scope.setScope("webapp", "")
    workspace.load()
    # Enough output to fill the panes: the test run has failed, the build has built.
    test_run = next(p for p in procs if p.argv == tuple(job_argv("test")))
    await sup.wait(test_run.id)
    return workspace, procs


@pytest.mark.parametrize("size", first_fast(SIZES))
def test_screenshots(sup: Supervisor, make_workspace: MakeWorkspace, run: Run, size: str) -> None:
    width, height = SIZES[size]

    async def scenario() -> None:
        workspace, procs = await demo(sup, make_workspace)
        build = next(p for p in procs if p.argv == tuple(job_argv("build")))
        main = workspace.main_window
        assert main is not None
        resize(main, width, height)
        await until(lambda: find_item(main, "sessionNode-docs") is not None, what="the tree")
        await settle(0.5)
        path, image = save_screenshot(main, f"main-{size}")
        assert_not_blank(path.name, image)

        # A ProcWindow on the builder: the watch-mode build streams coloured output.
        window = open_proc_window(
            sup, "webapp", "builder", workspace.engine, active_scope=workspace.active_scope
        )
        resize(window, width, height)
        await click(window, await item(window, f"streamButton-{build.id}"))
        output = window.property("outputModel")
        assert output.procId == build.id
        await move_mouse_away(window)
        await until(lambda: output.lineCount >= 12, timeout=20, what="build output")
        await settle(0.6)
        path, image = save_screenshot(window, f"procwindow-live-{size}")
        assert_not_blank(path.name, image, colours=20)

        # With its Tree: the processes the build is made of.
        await key(window, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)
        tree = window_model(window).treeModel
        await until(lambda: tree.count >= 1, what="the build's processes")
        await settle(0.4)
        path, image = save_screenshot(window, f"procwindow-tree-{size}")
        assert_not_blank(path.name, image, colours=20)
        await key(window, Qt.Key.Key_E, Qt.KeyboardModifier.ControlModifier)

        # The same window with a filter typed in.
        await key(window, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
        await type_text(window, "src/")
        view = await item(window, "outputView")
        await until(lambda: 0 < output.matchCount < output.lineCount, what="filtered")
        await until(lambda: view.property("count") == output.matchCount, what="view updated")
        # Enter twice: the second match is the current one, centred.
        await key(window, Qt.Key.Key_Return)
        await key(window, Qt.Key.Key_Return)
        await until(lambda: output.currentMatch == 1, what="the current match")
        await settle(0.4)
        path, image = save_screenshot(window, f"procwindow-filter-{size}")
        assert_not_blank(path.name, image, colours=20)
        window.close()

        # The session-wide view, with stderr lines (the docs build) streaming.
        workspace.active_scope.setScope("docs", "")
        docs = open_proc_window(sup, "docs", "", workspace.engine)
        resize(docs, width, height)
        await until(lambda: docs.property("procModel").count == 2, what="the docs procs")
        docs_output = docs.property("outputModel")
        await until(lambda: docs_output.lineCount >= 6, timeout=20, what="docs output")
        await click(docs, await item(docs, f"streamButton-{docs_output.procId}"))
        await move_mouse_away(docs)
        await settle(0.6)
        path, image = save_screenshot(docs, f"procwindow-session-{size}")
        assert_not_blank(path.name, image)
        docs.close()

        # The whole webapp session (an Agent column), its server terminated: the
        # longest status there is, "killed (ignored SIGTERM)", and every action.
        server = next(p for p in procs if p.argv == tuple(job_argv("server")))
        webapp = open_proc_window(sup, "webapp", "", workspace.engine)
        resize(webapp, width, height)
        await sup.term(server.id)
        webapp_output = webapp.property("outputModel")
        await click(webapp, await item(webapp, f"streamButton-{server.id}"))
        await until(lambda: webapp_output.lineCount >= 3, timeout=20, what="server output")
        await move_mouse_away(webapp)
        await settle(0.6)
        path, image = save_screenshot(webapp, f"procwindow-session-webapp-{size}")
        assert_not_blank(path.name, image)

    run(scenario(), timeout=90)


# A few lines, then a prompt that waits for its answer on stdin.
PROMPT = py(
    """
    import sys
    for i in range(6):
        print(f"step {i + 1}/6: \x1b[32mok\x1b[0m", flush=True)
    sys.stdout.write("Deploy to production? [y/N] "); sys.stdout.flush()
    sys.stdin.readline()
    """
)


@pytest.mark.parametrize("size", first_fast(SIZES))
def test_screenshot_of_a_prompt_and_the_stdin_line(sup: Supervisor, run: Run, size: str) -> None:
    width, height = SIZES[size]

    async def scenario() -> None:
        await sup.spawn(PROMPT, session="deploy", agent="ops", stdin=True)
        window = open_proc_window(sup, "deploy", "ops")
        resize(window, width, height)
        output = window.property("outputModel")
        await until(lambda: output.partialText.startswith("Deploy"), what="the prompt")
        await move_mouse_away(window)
        await click(window, await item(window, "timesToggle"))
        await click(window, await item(window, "inputField"))
        await type_text(window, "y")
        await move_mouse_away(window)
        await settle(0.5)
        path, image = save_screenshot(window, f"procwindow-input-{size}")
        assert_not_blank(path.name, image)

    run(scenario(), timeout=60)


@pytest.mark.parametrize("size", first_fast(SIZES))
def test_screenshots_of_history_and_search(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run, size: str, tmp_path: object
) -> None:
    width, height = SIZES[size]

    async def scenario() -> None:
        # Runs of an earlier supervisor (history only), then a live one.
        async with Supervisor(log_dir=f"{tmp_path}/earlier") as earlier:
            for n in range(3):
                p = await earlier.spawn(
                    py(f"import sys; print('error: disk {n} full'); sys.exit({n})"),
                    session="webapp",
                    agent="builder",
                )
                await earlier.wait(p.id)
        workspace, _ = await demo(sup, make_workspace)
        main = workspace.main_window
        assert main is not None
        resize(main, width, height)
        await settle(0.3)  # laid out at its new size
        await click(main, await item(main, "searchButton"))
        await settle(0.2)
        await type_text(main, "error")
        await key(main, Qt.Key.Key_Return)
        status = await item(main, "searchStatusText")
        await until(lambda: "searching" not in str(status.property("text")), what="the search")
        await move_mouse_away(main)
        await settle(0.4)
        path, image = save_screenshot(main, f"main-search-{size}")
        assert_not_blank(path.name, image)

        window = open_proc_window(sup, "webapp", "builder", workspace.engine)
        resize(window, width, height)
        await key(window, Qt.Key.Key_H, Qt.KeyboardModifier.ControlModifier)
        await item(window, "historyTable")
        await move_mouse_away(window)
        await settle(0.5)
        path, image = save_screenshot(window, f"procwindow-history-{size}")
        assert_not_blank(path.name, image)

    run(scenario(), timeout=90)


@pytest.mark.parametrize("size", first_fast(SIZES))
def test_screenshots_of_a_workspace(
    sup: Supervisor, make_workspace: MakeWorkspace, run: Run, size: str
) -> None:
    """A workspace running: a command ready, one waiting on it, one that gave up
    after a crash loop, its restarts folded into its row and then shown."""
    from procwindow.core import Backoff, Command, Ready
    from procwindow.core import Workspace as Stack

    width, height = SIZES[size]
    db = Command(
        "stack",
        "db",
        tuple(py("print('ready', flush=True)\nimport time; time.sleep(60)")),
        name="db",
        ready=Ready(line="ready"),
    )
    web = Command("stack", "web", ("sleep", "60"), name="web", depends_on=["db"])
    api = Command(
        "stack",
        "api",
        ("sh", "-c", "echo cannot bind :8080 >&2; exit 3"),
        name="api",
        restart="on-failure",
        backoff=Backoff(initial=0.1, factor=1.0, cap=60.0),
        max_restarts=3,
    )

    async def scenario() -> None:
        workspace = make_workspace()
        workspace.load()
        started = await Stack([db, web, api], name="stack").start(sup)
        state = await started.wait_ended("api")
        main = workspace.main_window
        assert main is not None
        workspace.active_scope.setScope("stack", "")
        resize(main, width, height)
        await until(lambda: find_item(main, "agentNode-stack-api") is not None, what="the tree")
        await settle(0.5)
        path, image = save_screenshot(main, f"main-workspace-{size}")
        assert_not_blank(path.name, image)

        window = open_proc_window(
            sup, "stack", "", workspace.engine, active_scope=workspace.active_scope
        )
        resize(window, width, height)
        newest = state.runs[-1]
        await click(window, await item(window, f"runsButton-{newest}"))
        await click(window, await item(window, f"statusCell-{state.runs[0]}"))
        await move_mouse_away(window)
        await settle(0.5)
        path, image = save_screenshot(window, f"procwindow-workspace-{size}")
        assert_not_blank(path.name, image)
        window.close()

    run(scenario())
