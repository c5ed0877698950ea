"""Fixtures for the window tests: real QML, a real supervisor, real children.

Every test runs its scenario as a coroutine on a qasync ``QEventLoop`` (``run``):
the supervisor, the models' event tasks, Qt's timers and the QML scene all move
while it awaits. The scenario clicks and types with ``QTest`` on the
``QQuickWindow`` (see ``helpers``); it never spins a nested event loop, which
would re-enter the running asyncio task.

Any Qt warning fails the test (a QML binding error, a missing required property…):
through pytest-qt's ``qt_log_level_fail`` marker, and for what happens during
teardown, through a last look at the captured log.
"""

from __future__ import annotations

import asyncio
import gc
import os
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import qasync
from PySide6.QtCore import (
    QCoreApplication,
    QEvent,
    QThreadPool,
    QtMsgType,
    qInstallMessageHandler,
)
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication

from procwindow import app as window_app
from procwindow.core import Supervisor
from tests.control.conftest import server  # noqa: F401  (a fixture: a real `procwindow serve`)
from tests.qt.conftest import _private_settings, private_settings  # noqa: F401  (autouse)

# The software renderer (offscreen has no GPU) fills large areas on a private pool
# of threads that linger for 30 s after use: the leak check would count them, at
# random. Without the pool Qt fills on the GUI thread. (Read once, at first use.)
os.environ.setdefault("QT_NO_GUI_THREADPOOL", "1")

T = TypeVar("T")
Run = Callable[..., Any]
MakeWorkspace = Callable[..., window_app.Workspace]

HERE = Path(__file__).resolve().parent
#: Seconds a scenario may take.
RUN_TIMEOUT = 60.0
#: Seconds between SIGTERM and SIGKILL in these tests (the default is 5).
GRACEFUL_TIMEOUT = 0.6
_BAD = (QtMsgType.QtWarningMsg, QtMsgType.QtCriticalMsg, QtMsgType.QtFatalMsg)


#: Qt's offscreen animation driver says this now and then when a view's animations stop
#: (more often on a loaded machine): its own bookkeeping, not a message about our QML.
ANIMATION_DRIVER = "QUnifiedTimer::stopAnimationDriver: driver is not running"
#: A ListView whose model resets while it creates a cache-buffer delegate (asynchronously,
#: so more often on a loaded machine) cancels that delegate by its old index once the
#: model has its new count (QQuickItemViewPrivate::clear), and DelegateModel says the
#: index is out of range; the view drops the request either way (seen once in CI, when
#: a filter made a pane of 100,000 lines a pane of a few).
STALE_CANCEL = "DelegateModel::cancel: index out range"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(item.path).parents:
            item.add_marker(pytest.mark.qt_log_level_fail("WARNING"))
            # pytest-qt reads the closest qt_log_ignore only: extend a test's own.
            own = item.get_closest_marker("qt_log_ignore")
            ignored = (*(own.args if own else ()), ANIMATION_DRIVER, STALE_CANCEL)
            item.add_marker(pytest.mark.qt_log_ignore(*ignored), append=False)


@pytest.fixture
def before_leak_baseline(qapp: QApplication, _warm_qt: None) -> None:
    """Qt opens its own fds and threads once per process: the QApplication and the
    warmed-up UI come before the leak baseline of every test here (overrides the
    root fixture)."""


@pytest.fixture(scope="session", autouse=True)
def _warm_qt(qapp: QApplication, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Load and render the whole UI once, before the first test's leak baseline.

    Qt Quick starts process-wide helpers the first time they are needed (the
    image loader thread and its eventfd, the font database, the scene graph's
    caches) and keeps them until exit; the per-test leak check must not count them.
    """
    private_settings(tmp_path_factory.mktemp("warm-config"))
    # Once per process, before any QML that imports Qt Quick Controls is loaded.
    window_app.ensure_style()
    qapp.setQuitOnLastWindowClosed(False)
    event_loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(event_loop)

    async def warm() -> None:
        logs = tmp_path_factory.mktemp("warm-logs")
        async with Supervisor(log_dir=logs, graceful_timeout=GRACEFUL_TIMEOUT) as supervisor:
            await supervisor.spawn(["true"], session="warm", agent="up")
            workspace = window_app.Workspace(supervisor)
            main = workspace.load()
            window = window_app.open_proc_window(supervisor, "warm", "up", workspace.engine)
            await asyncio.sleep(0.3)
            main.grabWindow()
            window.grabWindow()
            clipboard = QGuiApplication.clipboard()
            clipboard.setText("warm")
            clipboard.clear()
            workspace.close()
            await asyncio.sleep(0.1)

    try:
        event_loop.run_until_complete(warm())
        event_loop.run_until_complete(event_loop.shutdown_asyncgens())
    finally:
        event_loop.close()
        asyncio.set_event_loop(None)
    gc.collect()


@pytest.fixture
def loop(qapp: QApplication) -> Iterator[qasync.QEventLoop]:
    """A fresh qasync loop, set as the current loop for the test."""
    event_loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(event_loop)
    try:
        yield event_loop
    finally:
        for _ in range(3):
            event_loop.run_until_complete(asyncio.sleep(0))
        pending = [task for task in asyncio.all_tasks(event_loop) if not task.done()]
        for task in pending:
            task.cancel()
        if pending:
            # A bounded wait: a task that ignores cancellation must not hang the run.
            event_loop.run_until_complete(asyncio.wait(pending, timeout=5))
        event_loop.run_until_complete(event_loop.shutdown_asyncgens())
        event_loop.close()
        asyncio.set_event_loop(None)
        gc.collect()
        assert not pending, f"tasks left pending after the test: {pending}"


@pytest.fixture
def run(loop: qasync.QEventLoop, windows: list[window_app.Workspace]) -> Run:
    """``run(awaitable, timeout=RUN_TIMEOUT)``: run it on the qasync loop, return its result.

    When it ends, however it ends, the windows it opened are closed while the loop
    still runs: nothing of the UI may act outside it (pytest-qt processes events
    between test phases, and a model task stepped there has no running loop).
    """

    async def guarded(awaitable: Awaitable[T], timeout: float) -> T:
        try:
            return await asyncio.wait_for(awaitable, timeout)
        finally:
            await close_windows(windows)

    def run_it(awaitable: Awaitable[T], timeout: float = RUN_TIMEOUT) -> T:
        return loop.run_until_complete(guarded(awaitable, timeout))

    return run_it


async def close_windows(workspaces: list[window_app.Workspace]) -> None:
    """Close every workspace and ProcWindow; let their deletions and tasks finish."""
    for workspace in workspaces:
        workspace.close()
    for window in window_app.proc_windows():
        window.close()
    await asyncio.sleep(0.05)


@pytest.fixture
def sup(loop: qasync.QEventLoop, tmp_path: Path) -> Iterator[Supervisor]:
    """A supervisor on the test's loop, closed (children stopped) at teardown."""
    supervisor = Supervisor(log_dir=tmp_path / "logs", graceful_timeout=GRACEFUL_TIMEOUT)
    try:
        yield supervisor
    finally:
        loop.run_until_complete(supervisor.close())


@pytest.fixture
def windows(loop: qasync.QEventLoop) -> Iterator[list[window_app.Workspace]]:
    """Workspaces a test creates go here; they are closed (windows deleted) at teardown."""
    workspaces: list[window_app.Workspace] = []
    yield workspaces
    # pytest-qt stops capturing after the test's call: watch the teardown ourselves.
    warnings: list[str] = []

    def handler(kind: QtMsgType, context: object, message: str) -> None:
        if kind in _BAD:
            warnings.append(message)

    previous = qInstallMessageHandler(handler)
    try:
        loop.run_until_complete(close_windows(workspaces))
        # Engines hold threads (and their eventfds) until deleted: delete them now.
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        gc.collect()
        # Qt's global pool keeps idle threads for 30 s; this ends them now.
        QThreadPool.globalInstance().waitForDone(5000)
    finally:
        qInstallMessageHandler(previous)
    assert not warnings, "Qt warnings while closing the windows:\n" + "\n".join(warnings)


@pytest.fixture
def make_workspace(sup: Supervisor, windows: list[window_app.Workspace]) -> MakeWorkspace:
    """Make the application's workspace on ``sup`` (call it inside the scenario:
    its models start tasks on the running loop); closed at teardown."""

    def make(**kwargs: Any) -> window_app.Workspace:
        ws = window_app.Workspace(sup, **kwargs)
        windows.append(ws)
        return ws

    return make
