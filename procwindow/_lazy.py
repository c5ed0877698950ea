"""A package's exports, imported when first used (PEP 562).

``procwindow``, ``procwindow.core`` and ``procwindow.control`` export many
names from many modules. Imported eagerly, ``import procwindow`` costs about
0.14 s, paid by every command line, ``procwindow ctl bridge`` on the far side of
an ssh link included (three of those per attach), though a bridge needs two
small modules. So a package lists its exports once, as ordinary imports under
``if TYPE_CHECKING:`` (what type checkers and editors read), and hands its
module attribute lookups to :func:`exports`, which reads that block from the
package's source, once, when a name is first asked for, and imports the module
that name comes from.
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["exports"]


def _table(path: str) -> dict[str, tuple[str, str]]:
    """``{exported name: (module, its name there)}`` from the ``from … import``
    statements under the module's top-level ``if TYPE_CHECKING:``."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    table: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if not (isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"):
            continue
        for stmt in node.body:
            if isinstance(stmt, ast.ImportFrom):
                module = "." * stmt.level + (stmt.module or "")
                for alias in stmt.names:
                    table[alias.asname or alias.name] = (module, alias.name)
    return table


def exports(package: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``, whose exports are the names
    its ``if TYPE_CHECKING:`` block imports."""
    table: dict[str, tuple[str, str]] | None = None

    def where(name: str) -> tuple[str, str] | None:
        nonlocal table
        if table is None:
            path = sys.modules[package].__file__
            assert path is not None
            table = _table(path)
        return table.get(name)

    def __getattr__(name: str) -> Any:
        found = where(name)
        if found is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attr = found
        value = getattr(importlib.import_module(module, package), attr)
        setattr(sys.modules[package], name, value)  # the next lookup is a plain one
        return value

    def __dir__() -> list[str]:
        where("")
        assert table is not None
        return sorted(set(vars(sys.modules[package])) | set(table))

    return __getattr__, __dir__
