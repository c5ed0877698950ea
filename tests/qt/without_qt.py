"""Running a test module of the Qt-free parts of procwindow.qt with Qt unimportable.

The packages around those parts (``procwindow.qt``, ``procwindow.qt.models``)
register Qt types when imported; a subprocess stands in for them with bare
packages, makes PySide6, shiboken6 and qasync unimportable (``tests.no_qt``),
runs every ``test_*`` function of the module that takes no argument, and says
which Qt modules got imported (none may).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

_SCRIPT = textwrap.dedent(
    """
    import importlib, inspect, sys, types

    import tests.no_qt  # PySide6, shiboken6 and qasync cannot be imported

    root, name = sys.argv[1], sys.argv[2]
    for package_name in ("procwindow.qt", "procwindow.qt.models"):
        package = types.ModuleType(package_name)
        package.__path__ = [root + "/" + package_name.replace(".", "/")]
        sys.modules[package_name] = package

    module = importlib.import_module(name)
    ran = []
    for test_name, test in vars(module).items():
        if test_name.startswith("test_") and not inspect.signature(test).parameters:
            test()
            ran.append(test_name)
    leaked = sorted(m for m in sys.modules if m.split(".")[0] in ("PySide6", "shiboken6", "qasync"))
    print(len(ran), "tests; qt modules:", leaked)
    """
)


def run_without_qt(module: str, cwd: Path) -> tuple[int, str, str]:
    """Run the plain tests of ``module`` (``tests.qt.test_…``) with Qt unimportable:
    (return code, stdout, stderr)."""
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, str(ROOT), module],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    return done.returncode, done.stdout, done.stderr


def plain_tests(namespace: dict[str, object]) -> int:
    """How many ``test_*`` functions of a module take no argument."""
    import inspect

    return sum(
        1
        for name, test in namespace.items()
        if name.startswith("test_") and callable(test) and not inspect.signature(test).parameters
    )
