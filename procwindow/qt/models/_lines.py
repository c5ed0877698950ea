"""The lines of one output pane and the filter scan over them, without Qt.

The filters themselves are compiled in ``_filter``, the texts kept in ``_texts``.

:class:`LineBuffer` holds the lines :class:`~procwindow.qt.models.OutputModel`
shows, up to ``max_lines``, and decides which of them are rows: every line
without a filter, the matching ones with one. Lines have absolute numbers:
line ``n`` is ``lines[n - base]``, and dropping the oldest lines never
renumbers the others, so a filter's rows can name lines by number.

A line becomes a row only once scanned. Scanning (and ANSI stripping, which a
filter needs first) runs in chunks of :data:`FILTER_CHUNK` lines for at most a
given budget of seconds, so a long scan is spread over several steps; lines
appended meanwhile are scanned after the others.

Changes to the rows come in two steps, so that a model can tell its views
before and after each one: :meth:`LineBuffer.overflow` says which lines and
rows trimming to ``max_lines`` drops, :meth:`LineBuffer.drop_front` drops them;
:meth:`LineBuffer.take_new` says which rows the scan found next,
:meth:`LineBuffer.add_rows` adds them.

Lines older than every line held (read back from the log when the view reaches
its top) come in before them in two steps too: :meth:`LineBuffer.stage` makes
them ready (stripped, scanned: it says how many rows they make),
:meth:`LineBuffer.prepend` holds them; ``base`` goes down, every other line
keeps its number, and their rows come first. :meth:`LineBuffer.drop_back`
drops the newest lines to make room for them.
"""

from __future__ import annotations

import bisect
import itertools
import time
from array import array
from collections.abc import Iterable, Sequence
from operator import add
from typing import NamedTuple, overload

from procwindow.core import Line, LineRun, Stream, runs_of

from .. import ansi
from ._filter import Matcher
from ._texts import Texts
from .format import time_text

__all__ = [
    "COMPACT_MIN",
    "FILTER_CHUNK",
    "STRIP_AT_ONCE",
    "Held",
    "HeldLines",
    "LineBuffer",
    "NewRows",
    "Staged",
    "Trim",
    "timed",
]

#: One held line: seq, is stderr, time, raw text (with ANSI), split piece.
Held = tuple[int, bool, float, str, bool]

#: Lines filtered (or stripped) between two looks at the clock.
FILTER_CHUNK = 4096
#: Appends up to this many lines are ANSI-stripped at once; a bigger one (a
#: proc's whole ring, when it is selected) is stripped later, a chunk at a time
#: (:meth:`LineBuffer.strip_some`), or where a filter or a copy needs it.
STRIP_AT_ONCE = 4096
#: Dropped lines a buffer keeps before it compacts its number columns (and at
#: least as many as it holds): trimming moves an index, and every so often the
#: columns.
COMPACT_MIN = 4096


_STDERR = 1
_SPLIT = 2
#: Up to this many runs, :meth:`LineBuffer.extend_runs` grows the columns run by run.
_FEW_RUNS = 8


def _flag(stream: Stream, split: bool) -> int:
    return (stream is Stream.STDERR) | (split << 1)


def _grow(
    runs: Sequence[LineRun], seqs: array[int], times: array[float], flags: bytearray
) -> tuple[str, ...]:
    """Append the seqs, times and flags of ``runs`` to the columns; their texts.
    In C: by a whole run at once when runs are few (a frame's read of a flood is
    one or two), by one item per run when each holds one line (streams
    interleaved line by line)."""
    if len(runs) <= _FEW_RUNS:
        for run in runs:
            n = len(run.texts)
            seqs.extend(range(run.first, run.first + n))
            times.extend(array("d", (run.time,)) * n)
            flags += bytes((_flag(run.stream, run.split),)) * n
        return tuple(itertools.chain.from_iterable(run.texts for run in runs))
    firsts, streams, when, parts, splits, _ = zip(*runs, strict=True)
    texts = tuple(itertools.chain.from_iterable(parts))
    flag = bytes(map(_flag, streams, splits))
    if len(texts) == len(runs):  # a line each
        seqs.extend(firsts)
        times.extend(when)
        flags += flag
    else:
        counts = list(map(len, parts))
        seqs.extend(itertools.chain.from_iterable(map(range, firsts, map(add, firsts, counts))))
        times.extend(itertools.chain.from_iterable(map(itertools.repeat, when, counts)))
        flags += bytes(itertools.chain.from_iterable(map(itertools.repeat, flag, counts)))
    return texts


def timed(when: float, text: str) -> str:
    """``text`` after the time its line arrived, as the pane shows and copies it.

    >>> timed(0.25, "ok")[-7:]
    '.250 ok'
    """
    return f"{time_text(when, millis=True)} {text}"


class Trim(NamedTuple):
    """What trimming drops: the oldest ``lines`` lines, which hold rows 0 to ``rows - 1``."""

    lines: int
    rows: int


class NewRows(NamedTuple):
    """Lines (absolute numbers) that become rows ``first`` to :attr:`last`."""

    first: int
    lines: Sequence[int]

    @property
    def last(self) -> int:
        return self.first + len(self.lines) - 1


class Staged(NamedTuple):
    """Lines read back from the log, made ready to go before the others
    (:meth:`LineBuffer.stage`): their columns, their texts raw and plain, and
    the numbers of the lines that match the filter (None: no filter, every
    line is a row)."""

    seqs: array[int]
    times: array[float]
    flags: bytearray
    texts: tuple[str, ...]
    plain: list[str]
    found: array[int] | None

    @property
    def rows(self) -> int:
        """The rows they make."""
        return len(self.texts) if self.found is None else len(self.found)


class HeldLines(Sequence[Held]):
    """The lines a :class:`LineBuffer` holds, oldest first, each as a :data:`Held`
    tuple made when asked for (the buffer keeps them in columns)."""

    __slots__ = ("_buf",)

    def __init__(self, buf: LineBuffer) -> None:
        self._buf = buf

    def __len__(self) -> int:
        return self._buf.held_count

    @overload
    def __getitem__(self, pos: int) -> Held: ...
    @overload
    def __getitem__(self, pos: slice) -> list[Held]: ...
    def __getitem__(self, pos: int | slice) -> Held | list[Held]:
        count = self._buf.held_count
        if isinstance(pos, slice):
            return [self._buf.held(i) for i in range(*pos.indices(count))]
        if pos < 0:
            pos += count
        if not 0 <= pos < count:
            raise IndexError("line position out of range")
        return self._buf.held(pos)


class LineBuffer:
    """The lines of one proc, the rows among them, and the filter that picks them.

    The lines are kept in columns, not as an object per line: seqs, times and
    flags in arrays, the texts in tuples (:class:`Texts`). Appending a frame's
    lines is a few C-level extends, and the garbage collector has nothing to
    look at. Dropping the oldest lines moves a head index; the arrays are
    compacted once the dropped part is as long as the rest, so trimming costs
    the same at 10,000 lines as at a million (``del lines[:n]`` moved every
    line left each frame).
    """

    def __init__(self, max_lines: int) -> None:
        #: The cap on lines held (see :meth:`overflow`).
        self.max_lines = max_lines
        #: Lines held over the cap for now: read back from the log before the
        #: others (see ``_earlier``); 0 again when the view follows the tail.
        self.extra = 0
        # Array item i is line number i - _head + _base, for i >= _head; below
        # _head, dropped lines until the next compaction.
        self._seqs = array("q")
        self._times = array("d")
        self._flags = bytearray()  # _STDERR | _SPLIT
        self._head = 0
        self._base = 0
        # The texts, by line number; stripped below _texts.clean and still raw
        # from there: stripping 100k lines costs ~0.1 s, too long to do at once
        # when a proc is selected.
        self._texts = Texts()
        self._scanned = 0  # the number of the first line not yet considered for a row
        # The numbers of the lines that are rows, from _rows[_rows_head] on
        # (None: every scanned line is a row).
        self._rows: array[int] | None = None
        self._rows_head = 0
        self._matcher: Matcher | None = None

    # -- reading -----------------------------------------------------------------

    @property
    def lines(self) -> HeldLines:
        """The lines held, oldest first: ``lines[i]`` is line number ``base + i``."""
        return HeldLines(self)

    @property
    def held_count(self) -> int:
        """The number of lines held (``len(lines)``)."""
        return len(self._seqs) - self._head

    def held(self, pos: int) -> Held:
        """``lines[pos]`` (``0 <= pos < held_count``)."""
        i = self._head + pos
        flags = self._flags[i]
        raw = self._texts.raw(self._base + pos)
        return (self._seqs[i], bool(flags & _STDERR), self._times[i], raw, bool(flags & _SPLIT))

    def first_seq(self) -> int:
        """The seq of the oldest line held, or 0 when none is."""
        return self._seqs[self._head] if self._head < len(self._seqs) else 0

    def last_seq(self) -> int:
        """The seq of the newest line held, or 0 when none is."""
        return self._seqs[-1] if self._head < len(self._seqs) else 0

    @property
    def base(self) -> int:
        """The number of the oldest line held."""
        return self._base

    @property
    def end(self) -> int:
        """The number the next appended line gets."""
        return self._texts.end

    @property
    def row_count(self) -> int:
        if self._rows is None:
            return self._scanned - self._base
        return len(self._rows) - self._rows_head

    @property
    def filtering(self) -> bool:
        """True while some held lines are not scanned yet."""
        return self._scanned < self.end

    @property
    def pending(self) -> bool:
        """True while some held lines are not scanned or not stripped yet."""
        end = self.end
        return self._scanned < end or self._texts.clean < end

    def position(self, row: int) -> int:
        """The index into :attr:`lines` of ``row``, or -1."""
        if row < 0:
            return -1
        if self._rows is None:
            return row if row < self._scanned - self._base else -1
        i = self._rows_head + row
        return self._rows[i] - self._base if i < len(self._rows) else -1

    def row_of_seq(self, seq: int) -> int:
        """The row of the line numbered ``seq`` by the supervisor, or -1 (not
        held, filtered out, or not scanned yet)."""
        seqs, head = self._seqs, self._head
        i = bisect.bisect_left(seqs, seq, lo=head)
        if i >= len(seqs) or seqs[i] != seq:
            return -1
        pos = i - head
        number = self._base + pos
        if self._rows is None:
            return pos if number < self._scanned else -1
        rows = self._rows
        at = bisect.bisect_left(rows, number, lo=self._rows_head)
        return at - self._rows_head if at < len(rows) and rows[at] == number else -1

    def text(self, pos: int) -> str:
        """The plain (ANSI-stripped) text of ``lines[pos]``."""
        return self._texts.plain(self._base + pos)

    def raw(self, pos: int) -> str:
        """The text of ``lines[pos]`` as it came (with its escape sequences)."""
        return self._texts.raw(self._base + pos)

    def is_plain(self, pos: int) -> bool:
        """True if ``lines[pos]`` has nothing to strip: its plain text is the raw
        text itself (stripping gives back the same object when it removes nothing)."""
        number = self._base + pos
        return self._texts.plain(number) is self._texts.raw(number)

    def is_stderr(self, pos: int) -> bool:
        """True if ``lines[pos]`` came on stderr."""
        return bool(self._flags[self._head + pos] & _STDERR)

    def time(self, pos: int) -> float:
        """When ``lines[pos]`` arrived (seconds since the epoch)."""
        return self._times[self._head + pos]

    def copy_rows(self, rows: Iterable[int], times: bool = False) -> str:
        """The plain text of these rows (others ignored), in row order, one per line;
        with ``times``, each after the time it arrived (:func:`timed`)."""
        count = self.row_count
        wanted = sorted({int(r) for r in rows if 0 <= int(r) < count})
        positions = [self.position(r) for r in wanted]
        if times:
            return "\n".join(timed(self.time(p), self.text(p)) for p in positions)
        return "\n".join(self.text(p) for p in positions)

    def copy_all(self, times: bool = False) -> str:
        """The plain text of every row, one per line (with ``times``, as :meth:`copy_rows`)."""
        base = self._base
        self.strip_to(self._scanned)
        plain = self._texts.plains(base, self._scanned)
        if self._rows is None:
            shown: Iterable[int] = range(len(plain))
        else:
            shown = [n - base for n in self._rows[self._rows_head :]]
        if times:
            when, head = self._times, self._head
            return "\n".join(timed(when[head + p], plain[p]) for p in shown)
        if self._rows is None:
            return "\n".join(plain)
        return "\n".join(plain[p] for p in shown)

    # -- lines -------------------------------------------------------------------

    def reset(self) -> None:
        """Hold nothing, numbering from 0 (another proc's lines come next)."""
        self._drop_all(0)

    def clear(self) -> None:
        """Drop every line; later lines go on with the numbering."""
        self._drop_all(self.end)

    def _drop_all(self, base: int) -> None:
        self.extra = 0
        self._seqs, self._times, self._flags = array("q"), array("d"), bytearray()
        self._head = 0
        self._base = self._scanned = base
        self._texts = Texts(base)
        self._rows = None if self._matcher is None else array("q")
        self._rows_head = 0

    def extend(self, lines: Sequence[Line]) -> None:
        """Append lines (not rows yet: see :meth:`take_new`)."""
        self.extend_runs(runs_of(lines))

    def extend_runs(self, runs: Sequence[LineRun]) -> None:
        """Append runs of lines (``Supervisor.read_runs``; not rows yet: see
        :meth:`take_new`). The columns grow in C (see :func:`_grow`)."""
        if runs:
            texts = _grow(runs, self._seqs, self._times, self._flags)
            self._texts.append(texts, stripped=len(texts) <= STRIP_AT_ONCE)

    def stage(self, runs: Sequence[LineRun]) -> Staged:
        """Make ready ``runs``, lines older than every line held (read back from the
        log), to go before them: stripped, and scanned by the filter now (so that
        a model can tell its views how many rows come before they do). Pass them
        to :meth:`prepend` next, before any other change."""
        seqs, times, flags = array("q"), array("d"), bytearray()
        texts = _grow(runs, seqs, times, flags) if runs else ()
        plain = ansi.strip_lines(list(texts))
        found = None
        if self._matcher is not None:
            found = array("q", self._matcher(plain, self._base - len(texts)))
        return Staged(seqs, times, flags, texts, plain, found)

    def prepend(self, staged: Staged) -> None:
        """Hold the lines :meth:`stage` made ready before the others: ``base`` goes
        down by as many, and their rows come first."""
        if not staged.texts:
            return
        head = self._head
        self._seqs = staged.seqs + self._seqs[head:]
        self._times = staged.times + self._times[head:]
        self._flags = staged.flags + self._flags[head:]
        self._head = 0
        self._texts.prepend(staged.texts, staged.plain)
        self._base -= len(staged.texts)
        if self._rows is not None:  # (without a filter every line below _scanned is a row)
            assert staged.found is not None
            self._rows = staged.found + self._rows[self._rows_head :]
            self._rows_head = 0

    def drop_back(self, count: int) -> None:
        """Drop the newest ``count`` lines, and the rows they were (the opposite of
        :meth:`drop_front`, to make room for lines read back before the others)."""
        count = min(count, self.held_count)
        if count <= 0:
            return
        del self._seqs[-count:], self._times[-count:], self._flags[-count:]
        stop = self.end - count
        self._texts.drop_from(stop)
        self._scanned = min(self._scanned, stop)
        if self._rows is not None:
            del self._rows[bisect.bisect_left(self._rows, stop, lo=self._rows_head) :]

    def overflow(self) -> Trim | None:
        """What dropping the lines beyond ``max_lines`` (and ``extra``) removes, or
        None: nothing."""
        excess = self.held_count - self.max_lines - self.extra
        if excess <= 0:
            return None
        cut = self._base + excess  # the number of the first line kept
        if self._rows is None:
            shown = min(self._scanned, cut) - self._base
        else:
            shown = bisect.bisect_left(self._rows, cut, lo=self._rows_head) - self._rows_head
        return Trim(excess, shown)

    def drop_front(self, count: int) -> None:
        """Drop the oldest ``count`` lines, and the rows they were."""
        count = min(count, self.held_count)
        if count <= 0:
            return
        self._head += count
        self._base += count
        self._texts.drop_before(self._base)
        self._scanned = max(self._scanned, self._base)
        if self._rows is not None:
            self._rows_head = bisect.bisect_left(self._rows, self._base, lo=self._rows_head)
        self._compact()

    def _compact(self) -> None:
        """Forget the dropped part of the columns once it is as long as the rest."""
        head = self._head
        if head >= COMPACT_MIN and 2 * head >= len(self._seqs):
            del self._seqs[:head], self._times[:head], self._flags[:head]
            self._head = 0
        rows = self._rows
        if rows is not None and self._rows_head >= COMPACT_MIN and 2 * self._rows_head >= len(rows):
            del rows[: self._rows_head]
            self._rows_head = 0

    def strip_to(self, stop: int) -> None:
        """Strip the lines up to line number ``stop`` (exclusive), at least."""
        self._texts.strip_to(stop)

    def strip_some(self, budget: float) -> None:
        """Strip unstripped lines in chunks, for about ``budget`` seconds."""
        deadline = time.perf_counter() + budget
        texts = self._texts
        while texts.clean < texts.end and time.perf_counter() < deadline:
            texts.strip_to(texts.clean + 1)

    # -- rows --------------------------------------------------------------------

    def set_filter(self, matcher: Matcher | None) -> None:
        """Filter with ``matcher`` (None: every line) from scratch: no rows until scanned."""
        self._matcher = matcher
        self._rows = None if matcher is None else array("q")
        self._rows_head = 0
        self._scanned = self._base

    def take_new(self, budget: float) -> NewRows | None:
        """The rows that come next: every unscanned line, or the matches among
        the lines scanned now (for about ``budget`` seconds). None if no row
        comes. They are rows once passed to :meth:`add_rows`.
        """
        end = self.end
        if self._scanned >= end:
            return None
        if self._rows is None:
            return NewRows(self._scanned - self._base, range(self._scanned, end))
        found = self._scan(budget)
        return NewRows(self.row_count, found) if found else None

    def add_rows(self, new: NewRows) -> None:
        """Make rows of what :meth:`take_new` returned."""
        if self._rows is None:
            self._scanned = max(self._scanned, new.lines[-1] + 1)
        else:
            self._rows.extend(new.lines)

    def scan(self, budget: float) -> None:
        """:meth:`take_new` and :meth:`add_rows` at once."""
        new = self.take_new(budget)
        if new is not None:
            self.add_rows(new)

    def _scan(self, budget: float) -> list[int]:
        """Advance the filter over unscanned lines for about ``budget`` seconds; the matches."""
        assert self._matcher is not None
        matcher, texts = self._matcher, self._texts
        end = self.end
        deadline = time.perf_counter() + budget
        found: list[int] = []
        while self._scanned < end:
            stop = min(self._scanned + FILTER_CHUNK, end)
            texts.strip_to(stop)
            found += matcher(texts.plains(self._scanned, stop), self._scanned)
            self._scanned = stop
            if time.perf_counter() >= deadline:
                break
        return found
