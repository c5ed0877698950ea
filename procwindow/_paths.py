"""Where the QML modules and the resources are, in a checkout and in an installed wheel.

A wheel installs them inside the package (``procwindow/qml``, ``procwindow/resources``,
see ``[tool.setuptools.package-dir]`` in pyproject.toml). A source checkout, and an
editable install of one, keeps them at the top of the repository, next to the package.

``qml/`` is a QML import path: the window's module ``Procwindow.Ui`` is
``qml/Procwindow/Ui/``. (``qml/tooling/`` holds, for qmllint only, the type
information of the module ``Procwindow`` that :mod:`procwindow.qt` registers from
Python.)
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def _find(name: str) -> Path:
    candidates = (_PACKAGE_DIR / name, _PACKAGE_DIR.parent / name)
    for candidate in candidates:
        if candidate.is_dir():
            return candidate
    tried = ", ".join(str(c) for c in candidates)
    raise FileNotFoundError(f"procwindow: no {name}/ directory (looked in {tried})")


def qml_dir() -> Path:
    """The QML import path that holds the window's modules (``qml/`` in a checkout)."""
    return _find("qml")


def resources_dir() -> Path:
    """The directory that holds icons and other resources (``resources/`` in a checkout)."""
    return _find("resources")
