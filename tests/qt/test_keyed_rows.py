"""sync_rows: a list model's rows made into a new list, a row that stays keeping
its place and its persistent indexes (the History and Tree panels use it)."""

from __future__ import annotations

from PySide6.QtCore import QAbstractListModel, QModelIndex, QPersistentModelIndex, Qt
from pytestqt.modeltest import ModelTester

from procwindow.qt.models._keyed import sync_rows
from procwindow.qt.models.roles import ROOT

Row = tuple[str, int]


class _Rows(QAbstractListModel):
    def __init__(self) -> None:
        super().__init__()
        self.rows: list[Row] = []

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = ROOT) -> int:
        return 0 if parent.isValid() else len(self.rows)

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = 0) -> object:
        if role != Qt.ItemDataRole.DisplayRole or not index.isValid():
            return None
        key, value = self.rows[index.row()]
        return f"{key}={value}"

    def show(self, new: list[Row]) -> None:
        sync_rows(self, self.rows, new, lambda row: row[0])


def test_rows_that_stay_keep_their_indexes_through_inserts_removes_and_moves(
    qtmodeltester: ModelTester,
) -> None:
    model = _Rows()
    qtmodeltester.check(model)
    heard: list[str] = []
    model.modelReset.connect(lambda: heard.append("reset"))
    model.rowsInserted.connect(lambda _p, first, last: heard.append(f"+{first}"))
    model.rowsRemoved.connect(lambda _p, first, last: heard.append(f"-{first}"))
    model.dataChanged.connect(lambda a, b: heard.append(f"~{a.row()}..{b.row()}"))

    model.show([("a", 1), ("b", 1), ("c", 1)])
    b = QPersistentModelIndex(model.index(1))
    assert heard == ["+0", "+1", "+2"]

    heard.clear()
    model.show([("new", 1), ("a", 1), ("b", 2), ("c", 1)])  # one on top, b changed
    assert model.rows == [("new", 1), ("a", 1), ("b", 2), ("c", 1)]
    assert heard == ["+0", "~2..2"] and b.row() == 2 and b.data() == "b=2"

    heard.clear()
    model.show([("new", 1), ("b", 2), ("c", 3)])  # a went, c changed
    assert heard == ["-1", "~2..2"] and b.row() == 1

    heard.clear()
    model.show([("c", 3), ("new", 1), ("b", 2)])  # c moved to the top
    assert model.rows == [("c", 3), ("new", 1), ("b", 2)]
    assert "reset" not in heard and b.row() == 2 and b.data() == "b=2"

    heard.clear()
    model.show([])
    assert model.rows == [] and not b.isValid() and "reset" not in heard
