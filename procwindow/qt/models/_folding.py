"""A workspace command's runs as one row of the process table, without Qt.

A command that a workspace restarts (a crash loop, a Restart) leaves a proc per
run. :class:`FoldingRows` shows them as one row: the newest run, in the place
of the command's first run here, with the earlier ones behind it, newest first,
shown under it (indented, by the view) while it is *expanded* (``toggle``).
Which command ran a proc comes from the proc (``Proc.command_run``, which the
history keeps), else from the supervisor's running workspaces (a ``resolve``
function), and from their ``phase`` events (a run's link may come after its
``start``); it is remembered while the table lives.

Every change comes as :class:`~._proc_rows.RowStep` s from a generator, one
at a time: the model tells its views of a step (``beginInsertRows``…) and
makes it (``insert_rows``, ``remove``) before it asks for the next, whose row
numbers count on it.

>>> from ._proc_rows import NO_VALUES
>>> rows = FoldingRows(NO_VALUES, lambda proc: None)
>>> rows.reset([])
>>> list(rows.toggle(5))
[]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

from procwindow.core import Event, EventKind, Proc, SupervisorAPI, command_state

from ._proc_rows import (
    STATE_SORT,
    EventDigest,
    Fold,
    ProcRow,
    ProcRows,
    RowStep,
    RowValues,
    ranges,
)

__all__ = ["FoldingRows", "command_key"]

Key = tuple[str, str]


def command_key(supervisor: SupervisorAPI, proc: Proc) -> Key | None:
    """The workspace and name of the command that ran ``proc``, or None."""
    run = proc.command_run
    if run is not None:
        return run.workspace, run.command
    state = command_state(supervisor, proc.id)
    return (state.workspace, state.name) if state is not None else None


def _neg_id(row: ProcRow) -> int:
    return -row.proc.id


def _neg_order(row: ProcRow) -> int:
    return -row.order


class FoldingRows(ProcRows):
    """:class:`~._proc_rows.ProcRows` whose workspace commands' runs fold into
    one row each (see the module's docstring). ``expanded``: the commands whose
    earlier runs show, kept while the table lives (a scope shown again keeps them)."""

    def __init__(self, values: RowValues, resolve: Callable[[Proc], Key | None]) -> None:
        super().__init__(values)
        self._resolve = resolve
        self._keys: dict[int, Key] = {}  # proc id -> its command, once known
        self.folds: dict[Key, Fold] = {}
        self.expanded: set[Key] = set()

    @property
    def counts(self) -> tuple[int, int]:
        """The rows, and the earlier runs hidden behind them (each a proc, not shown)."""
        return len(self.rows), sum(len(f.earlier) for f in self.folds.values() if not f.expanded)

    # -- which command ran a proc ---------------------------------------------------

    def join(self, row: ProcRow) -> Fold | None:
        """The fold of ``row``'s command (``row.fold`` from now on), or None."""
        if row.fold is None:
            proc_id = row.proc.id
            key = self._keys.get(proc_id)
            if key is None and (key := self._resolve(row.proc)) is not None:
                self._keys[proc_id] = key
            if key is not None:
                fold = self.folds.get(key)
                if fold is None:
                    fold = self.folds[key] = Fold(key, expanded=key in self.expanded)
                row.fold = fold
        return row.fold

    def digest(self, events: Iterable[Event]) -> EventDigest:
        """As :meth:`ProcRows.digest`; a ``phase`` event also says which command
        ran its proc: a row shown on its own that turns out to be a command's run
        is ``learned`` (the model folds it in with :meth:`relearn`)."""
        events = list(events)
        digest = super().digest(events)
        for ev in events:
            command = getattr(ev, "command", "")
            if ev.kind is not EventKind.PHASE or not ev.proc_id or not command:
                continue
            key = (str(getattr(ev, "workspace", "")), str(command))
            if self._keys.setdefault(ev.proc_id, key) != key:
                continue
            row = self.row_of(ev.proc_id)
            if row >= 0 and self.rows[row].fold is None:
                digest.learned.append(ev.proc_id)
        return digest

    # -- the whole table ---------------------------------------------------------------

    def reset(self, procs: Sequence[Proc]) -> None:
        """Show ``procs`` (newest first): each command's newest run in its row."""
        self.folds = {}
        tops: list[ProcRow] = []
        for row in map(ProcRow.of, procs):
            fold = self.join(row)
            if fold is None or fold.head is None:
                if fold is not None:
                    fold.head = row
                tops.append(row)
            else:
                row.depth = 1
                fold.earlier.append(row)
        self.rows = self._arranged(tops)
        self._from_end = None
        self.running = {r.proc.id for r in self.rows if r.exit is None}
        self.dirty = self.pending = False

    def _default_rows(self) -> list[ProcRow]:
        tops = [r for r in self.rows if not r.depth]
        for r in tops:
            r.key = ()
        return self._arranged(tops)

    def _arranged(self, tops: list[ProcRow]) -> list[ProcRow]:
        """``tops`` (no earlier runs among them) in order, each command's row in
        the place of its oldest run here, its earlier runs under it if expanded."""
        for r in tops:
            fold = r.fold
            r.order = fold.earlier[-1].proc.id if fold and fold.earlier else r.proc.id
        tops.sort(key=_neg_order)
        self._place(tops)
        if self.sort_column is not None:
            tops = self._sorted(tops)
        rows = []
        for r in tops:
            rows.append(r)
            if r.fold is not None:
                rows.extend(self._under(r.fold))
        return rows

    def _under(self, fold: Fold) -> list[ProcRow]:
        """The rows shown under ``fold``'s row: its earlier runs, if expanded,
        each in its current state and sorted right under the command's row."""
        if not fold.expanded or fold.head is None:
            return []
        head = fold.head
        for r in fold.earlier:
            r.catch_up()
            r.order = head.order
            r.key = self._key_before(r, head) if self.sort_column is not None else ()
        return fold.earlier

    # -- rows that come and go ---------------------------------------------------------

    def arrive(self, procs: Iterable[Proc]) -> Iterator[RowStep]:
        """New ``procs`` come: the steps that show them."""
        added = self.new_rows(procs)
        folds = [self.join(r) for r in added]
        if not any(folds) and self.fit_on_top(added):
            yield RowStep("insert", 0, len(added) - 1, tuple(added))  # the usual case
            return
        for r in reversed(added):  # oldest first: a restart's predecessor comes before it
            yield from self._arrive(r)

    def relearn(self, proc_ids: Iterable[int]) -> Iterator[RowStep]:
        """Shown rows of ``proc_ids`` turned out to be commands' runs: they fold in."""
        for proc_id in proc_ids:
            at = self.row_of(proc_id)
            if at >= 0 and self.rows[at].fold is None:
                row = self.rows[at]
                yield RowStep("remove", at, at)
                self.join(row)
                yield from self._arrive(row)

    def _arrive(self, row: ProcRow) -> Iterator[RowStep]:
        fold = row.fold
        head = fold.head if fold is not None else None
        if fold is None or head is None:  # on its own, or its command's first run here
            if fold is not None:
                fold.head = row
            at = self.place_of(row)
            yield RowStep("insert", at, at, (row,))
            return
        at = self.row_of(head.proc.id)
        if row.proc.id < head.proc.id:  # an earlier run, heard of late
            row.depth = 1
            fold.earlier.append(row)
            fold.earlier.sort(key=_neg_id)
            self.running.discard(row.proc.id)
            if fold.expanded:
                self._under(fold)
                below = at + 1 + fold.earlier.index(row)
                yield RowStep("insert", below, below, (row,))
            yield RowStep("changed", at, at)  # its count of earlier runs
            return
        # The command's newest run takes its row; the run it follows goes under it.
        row.order = head.order
        row.key = self._key_before(row, head) if self.sort_column is not None else ()
        self.values_changed(STATE_SORT)
        self.rows[at] = row
        self._from_end = None
        fold.head = row
        head.depth = 1
        fold.earlier.insert(0, head)
        self.running.discard(head.proc.id)
        if row.exit is None:
            self.running.add(row.proc.id)
        yield RowStep("changed", at, at)
        if fold.expanded:
            yield RowStep("insert", at + 1, at + 1, tuple(self._under(fold)[:1]))
        else:
            yield RowStep("folded", head.proc.id, row.proc.id)

    def leave(self, proc_ids: set[int]) -> Iterator[RowStep]:
        """``proc_ids`` were dismissed: the steps that take them away. A
        command's row that goes shows its newest earlier run instead."""
        alone = set()
        for proc_id in sorted(proc_ids):
            row = self._member(proc_id)
            if row is None:
                alone.add(proc_id)
            else:
                yield from self._leave(row)
        # Bottom-up, so that the row numbers of the runs still to remove hold.
        for first, last in reversed(ranges(self.rows_of(alone))):
            yield RowStep("remove", first, last)

    def _member(self, proc_id: int) -> ProcRow | None:
        """The row of a command's run ``proc_id``, shown or not (None: not a run)."""
        at = self.row_of(proc_id)
        if at >= 0:
            return self.rows[at] if self.rows[at].fold is not None else None
        key = self._keys.get(proc_id)
        fold = self.folds.get(key) if key is not None else None
        return next((r for r in fold.earlier if r.proc.id == proc_id), None) if fold else None

    def _leave(self, row: ProcRow) -> Iterator[RowStep]:
        fold = row.fold
        assert fold is not None
        assert fold.head is not None
        at = self.row_of(row.proc.id)
        if row is not fold.head:
            fold.earlier.remove(row)
            if at >= 0:
                yield RowStep("remove", at, at)
            head = self.row_of(fold.head.proc.id)
            yield RowStep("changed", head, head)
            return
        if not fold.earlier:
            fold.head = None
            yield RowStep("remove", at, at)
            return
        successor = fold.earlier.pop(0)  # the newest earlier run takes the row
        successor.depth, successor.order, successor.key = 0, row.order, row.key
        fold.head = successor
        self.values_changed(STATE_SORT)
        if fold.expanded:  # shown under it: the row goes, the one under it moves up
            yield RowStep("remove", at, at)
        else:
            successor.catch_up()
            self.rows[at] = successor
            self._from_end = None
            self.running.discard(row.proc.id)
            if successor.exit is None:
                self.running.add(successor.proc.id)
        yield RowStep("changed", at, at)

    def toggle(self, proc_id: int) -> Iterator[RowStep]:
        """Show the earlier runs under the row of proc ``proc_id``, or hide them."""
        at = self.row_of(proc_id)
        fold = self.rows[at].fold if at >= 0 else None
        if fold is None or fold.head is None or self.rows[at].depth or not fold.earlier:
            return
        fold.expanded = not fold.expanded
        (self.expanded.add if fold.expanded else self.expanded.discard)(fold.key)
        if fold.expanded:
            yield RowStep("insert", at + 1, at + len(fold.earlier), tuple(self._under(fold)))
        else:
            yield RowStep("remove", at + 1, at + len(fold.earlier))
        yield RowStep("changed", at, at)

    def showing(self, proc_id: int) -> int:
        """The row that shows proc ``proc_id``: its own, or its command's; -1."""
        at = self.row_of(proc_id)
        if at < 0 and (row := self._member(proc_id)) is not None and row.fold is not None:
            head = row.fold.head
            at = self.row_of(head.proc.id) if head is not None else -1
        return at
