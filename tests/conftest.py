"""Shared fixtures: both event loops, a leak check after every test, and the tiers."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

import psutil
import pytest

#: The fast and full tiers (options, what each runs, the line that says so).
pytest_plugins = ("tests.tiers",)

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

# Started in the background by a script (`.ci/run &`), this process, and every
# command a test starts, would ignore SIGINT; tests stop CLIs with it, as Ctrl+C does.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_configure(config: pytest.Config) -> None:
    from hypothesis import settings

    # A deadline measures the machine's load, not the code: the bounds that matter
    # are asserted by the tests themselves.
    settings.register_profile("procwindow", deadline=None, print_blob=True)
    settings.load_profile("procwindow")


T = TypeVar("T")
Runner = Callable[[Coroutine[Any, Any, T]], T]

#: How long a test may take for its children to disappear after it ends.
_SETTLE = 5.0


@pytest.fixture(autouse=True)
def _isolated_state(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Default log dirs, state files and control sockets go to temporary
    directories (short paths: a socket path must fit in 108 bytes)."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))
    runtime = tmp_path_factory.mktemp("run")
    runtime.chmod(0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))


def _fds() -> set[str]:
    out = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            out.add(f"{fd}->{os.readlink(f'/proc/self/fd/{fd}')}")
        except OSError:
            pass
    return out


def _threads() -> set[int]:
    return {t.ident or 0 for t in threading.enumerate()}


def _children() -> list[psutil.Process]:
    try:
        return psutil.Process().children(recursive=True)
    except psutil.Error:
        return []


def _marked_strays() -> list[int]:
    """Processes anywhere carrying a procwindow marker of this test process."""
    from procwindow.core import _linux

    needle = f"{_linux.MARKER_VAR}={os.getpid()}.".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as f:
                if needle in f.read():
                    state = _linux.stat_fields(int(name))
                    if state is not None and state[0] != "Z":
                        found.append(int(name))
        except OSError:
            continue
    return found


def _qapp(request: pytest.FixtureRequest) -> Any:
    """pytest-qt's QApplication; the test is skipped where Qt cannot be imported."""
    pytest.importorskip("qasync", reason="Qt cannot be imported (qasync)", exc_type=ImportError)
    return request.getfixturevalue("qapp")


@pytest.fixture
def before_leak_baseline(request: pytest.FixtureRequest) -> None:
    """Set up, before the leak baseline, what a process opens once and keeps until exit.

    A Qt-free test needs nothing: this fixture imports no Qt. Qt opens its own fds
    and threads with the first QApplication, so the qasync variant of ``run`` makes
    it here, and the Qt test directories override this fixture to make it for every
    test (tests/qt/conftest.py, tests/ui/conftest.py).
    """
    callspec = getattr(request.node, "callspec", None)
    if callspec is not None and callspec.params.get("run") == "qasync":
        _qapp(request)


@pytest.fixture(autouse=True)
def leak_check(request: pytest.FixtureRequest, before_leak_baseline: None) -> Iterator[None]:
    """Fail the test if it left children, zombies, fds or threads behind.

    Children include orphans that escaped to init, found by the marker every
    supervised child carries.

    The garbage of the previous test is collected here, on the main thread: left to
    the automatic collector, a Qt object in a cycle may be destroyed on another thread
    (a spawn thread, an executor) and crash the process later. What survives is then
    frozen (``gc.freeze``), so each collection scans only what the current test made:
    a full one costs ~30 ms once Qt is loaded, this a fraction of one. After the test
    the collector runs only when something looks left behind (an unreachable object
    may still hold an fd).
    """
    gc.collect()
    gc.freeze()
    fds_before = _fds()
    threads_before = _threads()
    yield
    if request.node.get_closest_marker("no_leak_check"):
        return
    deadline = time.monotonic() + _SETTLE
    collect = False
    while True:
        if collect:
            gc.collect()
        children = _children()
        strays = _marked_strays()
        extra_fds = _fds() - fds_before
        extra_threads = _threads() - threads_before
        if not (children or strays or extra_fds or extra_threads):
            return
        if time.monotonic() > deadline:
            break
        if collect:
            time.sleep(0.05)
        collect = True
    details = []
    for child in children:
        try:
            details.append(f"child {child.pid} {child.status()} {child.cmdline()}")
        except psutil.Error:
            details.append(f"child {child.pid} (gone)")
    details += [f"stray marked process {pid}" for pid in strays]
    details += [f"fd {fd}" for fd in sorted(extra_fds)]
    details += [f"thread {t}" for t in sorted(extra_threads)]
    for child in children:
        try:
            child.kill()
        except psutil.Error:
            pass
    # Reaped too: a zombie left here would fail every test after this one.
    psutil.wait_procs(children, timeout=5)
    for pid in strays:
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    pytest.fail("left behind:\n  " + "\n  ".join(details), pytrace=False)


@pytest.fixture(params=["asyncio", "qasync"])
def run(request: pytest.FixtureRequest) -> Runner[Any]:
    """Run a coroutine to completion on plain asyncio or on qasync's QEventLoop."""
    if request.param == "asyncio":

        def run_asyncio(coro: Coroutine[Any, Any, T]) -> T:
            return asyncio.run(coro)

        return run_asyncio

    qapp = _qapp(request)
    import qasync

    def run_qasync(coro: Coroutine[Any, Any, T]) -> T:
        loop = qasync.QEventLoop(qapp, already_running=False)
        try:
            return loop.run_until_complete(coro)
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()
            asyncio.set_event_loop(None)

    return run_qasync
