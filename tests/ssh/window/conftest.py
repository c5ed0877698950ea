"""The window tests' fixtures (tests/ui): a warmed-up UI, a qasync loop per test,
the workspaces closed at teardown, and Qt warnings failing the test."""

from __future__ import annotations

from tests.ui.conftest import (  # noqa: F401  (fixtures used here)
    _warm_qt,
    before_leak_baseline,
    loop,
    run,
    windows,
)
