"""The packages import their exports when first used: every exported name
resolves (as the ``if TYPE_CHECKING:`` imports say), and ``procwindow ctl
bridge``, three of which start on a host for each attach, imports no more than
it needs."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

PACKAGES = ["procwindow", "procwindow.core", "procwindow.control"]


@pytest.mark.parametrize("name", PACKAGES)
def test_every_exported_name_resolves(name: str) -> None:
    package = importlib.import_module(name)
    for export in package.__all__:
        assert getattr(package, export) is not None, export
        assert export in dir(package)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        package.nope  # noqa: B018


def test_a_star_import_gives_every_export() -> None:
    namespace: dict[str, object] = {}
    exec("from procwindow import *", namespace)
    assert set(importlib.import_module("procwindow").__all__) <= set(namespace)


def test_the_bridge_imports_only_what_it_needs() -> None:
    code = (
        "import sys\n"
        "from procwindow.cli import main\n"
        "main(['ctl', 'bridge', 'nobody'])\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PROCWINDOW_SOCKET": "/nonexistent/socket", "PATH": "/usr/bin:/bin"},
    )
    loaded = set(done.stdout.split())
    assert "procwindow.control.bridge" in loaded, done.stderr
    heavy = {"asyncio", "psutil", "procwindow.core._supervisor", "procwindow.control.server"}
    assert not heavy & loaded
