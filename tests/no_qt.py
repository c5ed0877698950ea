"""``pytest -p tests.no_qt``: run the tests as if Qt were not installed.

PySide6, shiboken6 and qasync cannot be imported, and pytest-qt is not loaded (it
imports Qt as pytest starts). The Qt-free suites pass this way::

    python -m pytest -p tests.no_qt tests/core tests/test_headless.py

The qasync variant of the ``run`` fixture is skipped; Qt tests cannot be collected.
"""

from __future__ import annotations

import importlib.abc
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

import pytest

#: Top-level packages made unimportable.
QT_PACKAGES = ("PySide6", "shiboken6", "qasync")


class NoQt(importlib.abc.MetaPathFinder):
    """Refuses every module of ``QT_PACKAGES`` (a finder, so submodules too)."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> ModuleSpec | None:
        if fullname.split(".")[0] in QT_PACKAGES:
            raise ModuleNotFoundError(
                f"{fullname} is made unimportable (tests.no_qt)", name=fullname
            )
        return None


if not any(isinstance(finder, NoQt) for finder in sys.meta_path):
    sys.meta_path.insert(0, NoQt())


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    # `-p` plugins load before the installed ones: block pytest-qt before it loads.
    pluginmanager.set_blocked("pytest-qt")
    # pyproject.toml sets pytest-qt's option, which --strict-config then would not know.
    parser.addini("qt_api", "pytest-qt's Qt binding (pytest-qt is not loaded)")
