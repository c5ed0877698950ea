"""What a process table remembers across restarts, per kind of window.

A person who hides a column, drags one wider or sorts by one means it for every
window of that kind: the main window's overview and the ProcWindows each keep
their own (a ``key``: ``"overview"``, ``"procWindow"``). They are kept with
:class:`~PySide6.QtCore.QSettings`, in an INI file in the user's configuration
directory (``$XDG_CONFIG_HOME/procwindow/procwindow.ini``), under
``tables/<key>/``:

``hidden``
    The columns the person hid (a list of ``ProcColumn`` values).
``widths``
    The widths the person dragged columns to, ``name=width``, the one set longest
    ago first: when the view is too narrow for them all, that one gives way first,
    and an INI map would lose the order.
``sortColumn``, ``sortDescending``
    The column the person last sorted by ("" for the default order).

What the file holds is checked as it is read: an unknown column, a width that is
not a number, is dropped, so that a hand-edited or older file cannot break a table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from PySide6.QtCore import QSettings

from .models import ProcColumn

__all__ = ["TableMemory", "load_table", "open_settings", "save_table"]

#: Every column a table can have.
_COLUMNS = frozenset(c.value for c in ProcColumn)


@dataclass
class TableMemory:
    """What one kind of table remembers."""

    hidden: list[str] = field(default_factory=list)
    widths: dict[str, float] = field(default_factory=dict)  # the one set longest ago first
    sort_column: str = ""
    sort_descending: bool = False


def open_settings() -> QSettings:
    """procwindow's settings file (named here, not by the application object: the
    same file whichever program, or test, shows the window)."""
    return QSettings(
        QSettings.Format.IniFormat, QSettings.Scope.UserScope, "procwindow", "procwindow"
    )


def _strings(value: object) -> list[str]:
    # An INI file gives a list of one as a string, and an empty list as nothing.
    if isinstance(value, str):
        return [value] if value else []
    if isinstance(value, Iterable):
        return [str(v) for v in value]
    return []


def _widths(entries: list[str]) -> dict[str, float]:
    widths: dict[str, float] = {}
    for entry in entries:
        name, _, number = entry.partition("=")
        try:
            width = float(number)
        except ValueError:
            continue
        if name in _COLUMNS and width > 0:
            widths.pop(name, None)
            widths[name] = width
    return widths


def load_table(key: str) -> TableMemory:
    """What tables of kind ``key`` remember (nothing yet: a default ``TableMemory``)."""
    settings = open_settings()
    settings.beginGroup(f"tables/{key}")
    hidden = [n for n in _strings(settings.value("hidden")) if n in _COLUMNS]
    widths = _widths(_strings(settings.value("widths")))
    sort = str(settings.value("sortColumn", "") or "")
    descending = str(settings.value("sortDescending", "false")).lower() == "true"
    settings.endGroup()
    if sort not in _COLUMNS:
        sort, descending = "", False
    return TableMemory(list(dict.fromkeys(hidden)), widths, sort, descending)


def save_table(
    key: str,
    *,
    hidden: Iterable[str] | None = None,
    widths: Mapping[str, float] | None = None,
    sort: tuple[str, bool] | None = None,
) -> None:
    """Remember, for tables of kind ``key``, what is given (what is not stays as it was)."""
    settings = open_settings()
    settings.beginGroup(f"tables/{key}")
    if hidden is not None:
        settings.setValue("hidden", list(hidden))
    if widths is not None:
        settings.setValue("widths", [f"{name}={width:g}" for name, width in widths.items()])
    if sort is not None:
        settings.setValue("sortColumn", sort[0])
        settings.setValue("sortDescending", sort[1])
    settings.endGroup()
    # Written now: another window of the kind may open before this one is destroyed.
    settings.sync()
