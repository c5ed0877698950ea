"""PySide6 6.12.0 on CPython 3.11 drops a reference to None on every Python override
of a Qt virtual that returns None, and one to True on every ``Signal.emit()``. The
interpreter then aborts with ``Fatal Python error: none_dealloc`` (or ``bool_dealloc``).
A model's ``data()``, qasync's ``call_soon`` (a ``timerEvent``) and signals all hit it,
so the bad release is excluded in pyproject.toml and this test runs the three paths
many times in a child interpreter, where an abort cannot take pytest down with it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
RESULT_PREFIX = "pyside-regression: ok"

SCRIPT = textwrap.dedent(
    """
    import asyncio
    import gc
    import sys

    import qasync
    from PySide6.QtCore import (
        QAbstractListModel, QModelIndex, QObject, QSortFilterProxyModel, Qt, Signal,
    )
    from PySide6.QtWidgets import QApplication

    N = 20_000
    ROWS = 100
    UNUSED_ROLE = Qt.ItemDataRole.UserRole + 7
    # Immortal objects (Python >= 3.12) keep a fixed count: nothing to measure there.
    MORTAL = sys.version_info < (3, 12)
    # Counts wobble by a few as temporaries come and go; the bug loses one per call.
    TOLERANCE = 200


    class Model(QAbstractListModel):
        def rowCount(self, parent=QModelIndex()):
            return 0 if parent.isValid() else ROWS

        def data(self, index, role=Qt.ItemDataRole.DisplayRole):
            if role == Qt.ItemDataRole.DisplayRole:
                return index.row()
            return None


    class Emitter(QObject):
        fired = Signal(int)


    def virtual_calls(model, proxy, n):
        for i in range(n):
            row = i % ROWS
            # Both go through C++: QSortFilterProxyModel::data and QModelIndex::data
            # call the Python override of QAbstractItemModel::data.
            assert proxy.data(proxy.index(row, 0), UNUSED_ROLE) is None
            assert model.index(row, 0).data(UNUSED_ROLE) is None


    def emits(emitter, n):
        for i in range(n):
            emitter.fired.emit(i)


    def callbacks(loop, n):
        done = loop.create_future()
        count = 0

        def tick():
            nonlocal count
            count += 1
            if count < n:
                loop.call_soon(tick)
            else:
                done.set_result(count)

        loop.call_soon(tick)
        return loop.run_until_complete(done)


    app = QApplication(sys.argv[:1])
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)

    model = Model()
    proxy = QSortFilterProxyModel()
    proxy.setSourceModel(model)
    emitter = Emitter()
    received = []
    emitter.fired.connect(received.append)


    def run(n):
        virtual_calls(model, proxy, n)
        emits(emitter, n)
        return callbacks(loop, n)


    run(100)  # warm up: caches, lazy imports, first-call allocations
    received.clear()
    gc.collect()
    none_before, true_before = sys.getrefcount(None), sys.getrefcount(True)

    ran = run(N)

    gc.collect()
    none_drift = sys.getrefcount(None) - none_before
    true_drift = sys.getrefcount(True) - true_before
    assert ran == N, ran
    assert len(received) == N, len(received)
    if MORTAL and (none_drift < -TOLERANCE or true_drift < -TOLERANCE):
        print(f"refcount drift: None {none_drift:+d}, True {true_drift:+d}", file=sys.stderr)
        sys.exit(1)

    loop.close()
    drift = f"None {none_drift:+d} True {true_drift:+d}" if MORTAL else "immortal"
    print(f"RESULT_PREFIX calls={N} emits={N} callbacks={N} drift={drift}")
    """
).replace("RESULT_PREFIX", RESULT_PREFIX)


def test_virtuals_signals_and_qasync_keep_none_and_true_alive() -> None:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        timeout=100,
        check=False,
    )
    assert result.returncode == 0, (
        f"child exited with {result.returncode}\n"
        f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"
    )
    assert RESULT_PREFIX in result.stdout, result.stdout + result.stderr


def test_pyproject_excludes_pyside6_6_12_0() -> None:
    with (ROOT / "pyproject.toml").open("rb") as f:
        dependencies = tomllib.load(f)["project"]["dependencies"]
    pyside = [Requirement(d) for d in dependencies if Requirement(d).name == "PySide6-Essentials"]
    assert len(pyside) == 1, dependencies
    assert not pyside[0].specifier.contains("6.12.0")
    assert pyside[0].specifier.contains("6.11.3")
