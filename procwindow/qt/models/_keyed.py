"""A list model's rows made into a new list of them, row by row: a row whose key
stays keeps its place (a view's selection and scroll stay with it), one that
went is removed, one that came is inserted where the new list has it, and the
rows that changed in place are announced together."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TypeVar

from PySide6.QtCore import QAbstractListModel

from .roles import ROOT

__all__ = ["sync_rows"]

Row = TypeVar("Row")


def sync_rows(
    model: QAbstractListModel, rows: list[Row], new: list[Row], key: Callable[[Row], Hashable]
) -> None:
    """Make ``rows`` (``model``'s own list, changed in place) equal to ``new``,
    telling the model's views each step. Rows that stay are those of the longest
    run that both lists have in the same order (greedy: lists change little
    between two reads); the others are moved by a remove and an insert."""
    want = [key(r) for r in new]
    place = {k: i for i, k in enumerate(want)}
    kept: set[Hashable] = set()
    last = -1
    for k in map(key, rows):
        at = place.get(k)
        if at is not None and at > last:
            kept.add(k)
            last = at
    for i in range(len(rows) - 1, -1, -1):
        if key(rows[i]) not in kept:
            model.beginRemoveRows(ROOT, i, i)
            del rows[i]
            model.endRemoveRows()
    changed: list[int] = []
    for i, row in enumerate(new):
        if i < len(rows) and key(rows[i]) == want[i]:
            if rows[i] != row:
                rows[i] = row
                changed.append(i)
            continue
        model.beginInsertRows(ROOT, i, i)
        rows.insert(i, row)
        model.endInsertRows()
    if changed:
        model.dataChanged.emit(model.index(changed[0]), model.index(changed[-1]))
