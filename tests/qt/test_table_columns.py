"""The process table's columns without a window: which go when the view is too narrow,
which a person hides, and what a kind of table remembers (QSettings, in a temporary
directory: see ``conftest``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from procwindow.qt import ProcTableStyle
from procwindow.qt.table import HIDE_ORDER, fitting_columns, minimum_table_width
from procwindow.qt.table_settings import load_table, open_settings, save_table

SESSION = ["id", "pid", "agent", "tool", "status", "runtime", "cpu", "memory", "actions"]


def test_the_columns_that_do_not_fit_go_the_least_needed_first() -> None:
    assert fitting_columns(SESSION, 2000, 154, 200) == SESSION
    every = minimum_table_width(SESSION, 154, 200)
    assert fitting_columns(SESSION, every, 154, 200) == SESSION
    assert fitting_columns(SESSION, every - 1, 154, 200) == [c for c in SESSION if c != "memory"]
    # Narrower and narrower: one more goes each time, in HIDE_ORDER; ID, the command,
    # Status and the actions stay, down to nothing.
    gone: list[str] = []
    for width in range(int(every), 0, -10):
        shown = fitting_columns(SESSION, width, 154, 200)
        now = [c for c in SESSION if c not in shown]
        assert now == [c for c in SESSION if c in HIDE_ORDER[: len(now)]], (width, now)
        assert len(now) >= len(gone)
        assert {"id", "tool", "status", "actions"} <= set(shown)
        if len(now) < len(HIDE_ORDER):
            assert minimum_table_width(shown, 154, 200) <= width
        gone = now
    assert set(gone) == set(HIDE_ORDER)
    # Hidden by hand: never the command or the actions; what is hidden leaves room.
    shown = fitting_columns(SESSION, 600, 154, 200, {"tool", "actions", "status", "agent"})
    assert shown == ["id", "pid", "tool", "runtime", "cpu", "actions"]


def test_a_column_hidden_is_zero_wide_and_the_narrowest_keeps_what_names_a_row() -> None:
    style = ProcTableStyle()
    style.columnNames = SESSION
    style.actionsWidth = 154.0
    style.viewWidth = 2000.0
    status = style.statusWidth
    assert style.autoHiddenColumns == [] and style.hiddenColumns == []
    assert style.narrowestWidth == 56 + 100 + status + 154
    assert style.narrowestWidth < style.minimumWidth

    assert [style.hideable(c) for c in SESSION] == [True] * 3 + [False] + [True] * 4 + [False]
    style.setColumnShown("pid", False)
    style.setColumnShown("tool", False)  # the command names the row: it stays
    assert style.hiddenColumns == ["pid"]
    widths = dict(zip(SESSION, style.columnWidths, strict=True))
    assert widths["pid"] == 0 and all(w > 0 for c, w in widths.items() if c != "pid")
    assert sum(style.columnWidths) == pytest.approx(2000.0)

    style.viewWidth = style.narrowestWidth
    assert style.autoHiddenColumns == ["agent", "runtime", "cpu", "memory"]
    assert sum(style.columnWidths) == pytest.approx(style.narrowestWidth)
    assert style.columnWidths[SESSION.index("actions")] == 154
    style.showAllColumns()
    assert style.hiddenColumns == [] and "pid" in style.autoHiddenColumns
    assert style.columnTitle("memory") == "Mem" and style.columnTitle("nothing") == ""


def test_a_kind_of_table_remembers_its_hidden_columns_widths_and_sort(tmp_path: Path) -> None:
    # The fixture keeps the file in a temporary directory, never in the person's own.
    assert Path(open_settings().fileName()).is_relative_to(tmp_path.parent)

    first = ProcTableStyle()
    first.settingsKey = "procWindow"
    first.columnNames = SESSION
    first.actionsWidth = 154.0
    first.viewWidth = 1400.0
    first.setColumnShown("cpu", False)
    first.beginResize(0, 100.0)
    first.resizeTo(140.0)
    first.endResize()
    first.rememberSort("runtime", True)
    assert first.columnWidths[0] == 96

    second = ProcTableStyle()
    second.columnNames = SESSION
    second.actionsWidth = 154.0
    second.viewWidth = 1400.0
    second.settingsKey = "procWindow"
    assert second.hiddenColumns == ["cpu"]
    assert second.columnWidths == first.columnWidths
    assert (second.savedSortColumn, second.savedSortDescending) == ("runtime", True)
    # Another kind of table remembers its own.
    other = ProcTableStyle()
    other.settingsKey = "overview"
    assert other.hiddenColumns == [] and other.savedSortColumn == ""

    # Shown again, back to automatic widths, the default order: remembered too.
    second.setColumnShown("cpu", True)
    second.resetColumns()
    second.rememberSort("", False)
    assert load_table("procWindow").hidden == []
    assert load_table("procWindow").widths == {}
    assert load_table("procWindow").sort_column == ""


def test_what_a_settings_file_holds_is_checked_as_it_is_read() -> None:
    settings = open_settings()
    settings.setValue("tables/procWindow/hidden", ["pid", "bogus", "pid"])
    settings.setValue("tables/procWindow/widths", ["id=120", "tool=wide", "nothing=3", "cpu=-4"])
    settings.setValue("tables/procWindow/sortColumn", "bogus")
    settings.setValue("tables/procWindow/sortDescending", True)
    settings.sync()
    memory = load_table("procWindow")
    assert memory.hidden == ["pid"]
    assert memory.widths == {"id": 120.0}
    assert (memory.sort_column, memory.sort_descending) == ("", False)
    # A list of one comes back from an INI file as a string; an empty list as nothing.
    save_table("procWindow", hidden=["agent"], widths={})
    assert load_table("procWindow").hidden == ["agent"]
    assert load_table("procWindow").widths == {}
    # The command and the actions cannot be hidden, even by a hand-edited file.
    save_table("procWindow", hidden=["tool", "actions"])
    style = ProcTableStyle()
    style.settingsKey = "procWindow"
    assert style.hiddenColumns == []
