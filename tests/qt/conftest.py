"""Fixtures for the Qt adapter tests: a qasync loop per test, a supervisor on it.

The loop runs for the whole test, as it does for the whole life of the
application: qasync executes asyncio callbacks from Qt timers, so anything that
processes Qt events (pytest-qt between tests, ``qtbot.waitSignal``) may step a
task, and a task stepped while no loop is running fails
(``get_running_loop()``). So the fixture makes the qasync loop asyncio's running
loop for the test, and ``qrun`` spins a nested ``QEventLoop`` until a coroutine
is done. (Not qasync's ``already_running=True``: its ``stop()`` calls
``QCoreApplication.exit()``, which makes every later ``QEventLoop.exec()`` in
the process return at once.) At teardown the supervisor is closed, the tasks it ended are
let finish, and a task still pending fails the test.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import qasync
from PySide6.QtCore import QEventLoop, QSettings
from PySide6.QtWidgets import QApplication

from procwindow.control.remote import RemoteSupervisor
from procwindow.core import Supervisor, SupervisorAPI
from tests.control.conftest import (
    Server,
    server,  # noqa: F401  (a fixture: a real `procwindow serve`)
    start_server,
    stop_server,
)

from .panes import Pane

T = TypeVar("T")
QRun = Callable[..., Any]

#: Seconds a single ``qrun`` may take before the test fails.
RUN_TIMEOUT = 20.0


def _spin(loop: asyncio.AbstractEventLoop, awaitable: Awaitable[T], timeout: float) -> T:
    future = asyncio.ensure_future(asyncio.wait_for(awaitable, timeout), loop=loop)
    if not future.done():
        waiter = QEventLoop()
        # The callback runs from the loop, inside exec(): it cannot be lost.
        future.add_done_callback(lambda _: waiter.quit())
        waiter.exec()
    return future.result()


def private_settings(directory: Path) -> None:
    """Keep the windows' settings (a table's columns and sort) in ``directory``:
    never the person's own, and fresh for each test."""
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(directory))


@pytest.fixture(autouse=True)
def _private_settings(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path_factory.mktemp("config")
    private_settings(config)
    # A child that shows a window (a real `procwindow`) reads its settings from here.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(config))


@pytest.fixture
def before_leak_baseline(qapp: QApplication) -> None:
    """Qt opens its own fds and threads once per process: the QApplication comes
    before the leak baseline of every test here (overrides the root fixture)."""


@pytest.fixture
def qloop(qapp: QApplication) -> Iterator[asyncio.AbstractEventLoop]:
    """A qasync loop, running (as the current loop) for the whole test."""
    loop = qasync.QEventLoop(qapp)
    asyncio.set_event_loop(loop)
    asyncio.events._set_running_loop(loop)
    try:
        yield loop
    finally:
        try:
            # Closed subscriptions and cancelled tasks finish on the next iterations.
            for _ in range(3):
                _spin(loop, asyncio.sleep(0), 5.0)
            pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
            for task in pending:
                task.cancel()
            if pending:
                _spin(loop, asyncio.gather(*pending, return_exceptions=True), 5.0)
            _spin(loop, loop.shutdown_asyncgens(), 5.0)
        finally:
            asyncio.events._set_running_loop(None)
            loop.close()
            asyncio.set_event_loop(None)
        assert not pending, f"tasks left pending after the test: {pending}"


@pytest.fixture
def qrun(qloop: asyncio.AbstractEventLoop) -> QRun:
    """``qrun(awaitable, timeout=RUN_TIMEOUT)``: run it on the qasync loop, return its result."""

    def run(awaitable: Awaitable[T], timeout: float = RUN_TIMEOUT) -> T:
        return _spin(qloop, awaitable, timeout)

    return run


@pytest.fixture
def sup(qrun: QRun, tmp_path: Path) -> Iterator[Supervisor]:
    """A supervisor on the test's qasync loop, closed (children stopped) at teardown."""
    supervisor = Supervisor(log_dir=tmp_path / "logs", graceful_timeout=2.0)
    try:
        yield supervisor
    finally:
        qrun(supervisor.close())


@pytest.fixture
def remote(server: Server, qrun: QRun) -> Iterator[RemoteSupervisor]:  # noqa: F811
    """A RemoteSupervisor on a real `procwindow serve` (the ``server`` fixture)."""
    sup = qrun(RemoteSupervisor.connect(server.path))
    try:
        yield sup
    finally:
        qrun(sup.close())


@pytest.fixture
def panes() -> Iterator[list[Pane]]:
    """Panes a test makes (``Pane``), closed after it."""
    made: list[Pane] = []
    yield made
    for pane in made:
        pane.close()


@pytest.fixture(params=["supervisor", "remote"])
def api(request: pytest.FixtureRequest, qrun: QRun, tmp_path: Path) -> Iterator[SupervisorAPI]:
    """A Supervisor in this process, or a RemoteSupervisor on a serve subprocess."""
    if request.param == "supervisor":
        sup = Supervisor(log_dir=tmp_path / "logs", graceful_timeout=2.0)
        try:
            yield sup
        finally:
            qrun(sup.close())
        return
    srv = start_server(tmp_path)
    try:
        remote = qrun(RemoteSupervisor.connect(srv.path))
        try:
            yield remote
        finally:
            qrun(remote.close())
    finally:
        assert stop_server(srv) == 0
