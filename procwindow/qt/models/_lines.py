"""The lines of one output pane and the filter scan over them, without Qt.

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
"""

from __future__ import annotations

import bisect
import functools
import itertools
import re
import time
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from procwindow.core import Line, Stream

from .. import ansi
from .format import time_text

__all__ = [
    "FILTER_CHUNK",
    "MAX_MARKS",
    "STRIP_AT_ONCE",
    "FilterError",
    "Held",
    "LineBuffer",
    "Marker",
    "Matcher",
    "NewRows",
    "Trim",
    "compile_filter",
    "compile_marker",
    "timed",
]

#: One held line: seq, is stderr, time, raw text (with ANSI), split piece.
Held = tuple[int, bool, float, str, bool]
#: A compiled filter: given a chunk of plain lines and the number of its first
#: line, the numbers of the lines that match.
Matcher = Callable[[list[str], int], list[int]]
#: A filter's matches in one plain line: the ``(start, end)`` of each, in order,
#: none empty and none overlapping.
Marker = Callable[[str], list[tuple[int, int]]]

#: Lines filtered (or stripped) between two looks at the clock.
FILTER_CHUNK = 4096
#: Appends up to this many lines are ANSI-stripped at once; a bigger one (a
#: proc's whole ring, when it is selected) is stripped later, a chunk at a time
#: (:meth:`LineBuffer.strip_some`), or where a filter or a copy needs it.
STRIP_AT_ONCE = 4096
#: The most matches marked in one line (a one-letter filter over a long line
#: would otherwise make a page of markup for one row).
MAX_MARKS = 500


class FilterError(ValueError):
    """A filter that cannot be compiled; the message says why, for people."""


def compile_filter(text: str, regex: bool, case_sensitive: bool) -> Matcher | None:
    """The matcher of a filter (None for ``""``: no filter).

    A substring, or a regular expression (Python ``re``) with ``regex``;
    without ``case_sensitive`` a substring is compared ``casefold()``-ed and a
    regex gets ``re.IGNORECASE``. Raises :class:`FilterError` for an invalid
    regex. Each kind is its own comprehension: one call per chunk, not per line
    (DESIGN.md: substring 8 ms, casefold+substring ~16 ms, regex 21 ms per 100k
    lines).
    """
    if not text:
        return None
    if regex:
        try:
            search = re.compile(text, 0 if case_sensitive else re.IGNORECASE).search
        except (re.error, OverflowError, RecursionError, ValueError) as exc:
            raise FilterError(f"invalid regular expression: {exc}") from exc
        return lambda chunk, start: [i for i, t in enumerate(chunk, start) if search(t)]
    if case_sensitive:
        return lambda chunk, start: [i for i, t in enumerate(chunk, start) if text in t]
    needle = text.casefold()
    return lambda chunk, start: [i for i, t in enumerate(chunk, start) if needle in t.casefold()]


def compile_marker(text: str, regex: bool, case_sensitive: bool) -> Marker | None:
    """Where a filter matches inside a line, for highlighting (None for ``""``).

    It agrees with :func:`compile_filter` on the same arguments: a line it keeps
    has a match here, and a line it drops has none. A regex's empty matches
    (``x*``, ``^``) are left out: they mark nothing, and ``finditer`` moves on
    past each one, so no pattern loops. A substring is found case-insensitively
    as the filter finds it, in the ``casefold()``-ed line, and mapped back to
    the line's own characters (``ß`` matches ``SS``). At most :data:`MAX_MARKS`
    per line. Raises :class:`FilterError` for an invalid regex.

    >>> compile_marker("o", regex=False, case_sensitive=False)("Foo bar O")
    [(1, 2), (2, 3), (8, 9)]
    >>> compile_marker("x*", regex=True, case_sensitive=True)("axxb")
    [(1, 3)]
    """
    if not text:
        return None
    if regex:
        try:
            finditer = re.compile(text, 0 if case_sensitive else re.IGNORECASE).finditer
        except (re.error, OverflowError, RecursionError, ValueError) as exc:
            raise FilterError(f"invalid regular expression: {exc}") from exc

        def regex_marks(line: str) -> list[tuple[int, int]]:
            spans = (m.span() for m in finditer(line))
            return list(itertools.islice(((a, b) for a, b in spans if b > a), MAX_MARKS))

        return regex_marks
    if case_sensitive:
        return functools.partial(_occurrences, text)
    return functools.partial(_folded_occurrences, text.casefold())


def _occurrences(needle: str, line: str) -> list[tuple[int, int]]:
    """The non-overlapping occurrences of ``needle`` in ``line``, left to right."""
    found: list[tuple[int, int]] = []
    size = len(needle)
    at = line.find(needle)
    while at >= 0 and len(found) < MAX_MARKS:
        found.append((at, at + size))
        at = line.find(needle, at + size)
    return found


def _folded_occurrences(needle: str, line: str) -> list[tuple[int, int]]:
    """:func:`_occurrences` of a casefolded ``needle`` in the casefolded ``line``,
    in the line's own character positions."""
    folded = line.casefold()
    if len(folded) == len(line):  # no character folded to more than one: positions agree
        return _occurrences(needle, folded)
    # Where each folded character comes from (ß folds to ss: two from one).
    owner = [i for i, char in enumerate(line) for _ in char.casefold()]
    spans: list[tuple[int, int]] = []
    for start, end in _occurrences(needle, folded):
        first, last = owner[start], owner[end - 1] + 1
        if spans and first < spans[-1][1]:  # two matches inside one character's fold
            spans[-1] = (spans[-1][0], max(spans[-1][1], last))
        else:
            spans.append((first, last))
    return spans


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


class LineBuffer:
    """The lines of one proc, the rows among them, and the filter that picks them."""

    def __init__(self, max_lines: int) -> None:
        #: The cap on lines held (see :meth:`overflow`).
        self.max_lines = max_lines
        #: The lines held, oldest first; ``lines[i]`` is line number ``base + i``.
        self.lines: list[Held] = []
        # _plain[i] is the text of lines[i], ANSI-stripped below line number
        # _clean and still raw from there: stripping 100k lines costs ~0.1 s,
        # too long to do at once when a proc is selected.
        self._plain: list[str] = []
        self._base = 0
        self._clean = 0
        self._scanned = 0  # the number of the first line not yet considered for a row
        self._rows: list[int] | None = None  # None: every scanned line is a row
        self._matcher: Matcher | None = None

    # -- reading -----------------------------------------------------------------

    @property
    def base(self) -> int:
        """The number of the oldest line held."""
        return self._base

    @property
    def end(self) -> int:
        """The number the next appended line gets."""
        return self._base + len(self.lines)

    @property
    def row_count(self) -> int:
        return self._scanned - self._base if self._rows is None else len(self._rows)

    @property
    def filtering(self) -> bool:
        """True while some held lines are not scanned yet."""
        return self._scanned < self.end

    @property
    def pending(self) -> bool:
        """True while some held lines are not scanned or not stripped yet."""
        end = self.end
        return self._scanned < end or self._clean < end

    def position(self, row: int) -> int:
        """The index into :attr:`lines` of ``row``, or -1."""
        if row < 0:
            return -1
        if self._rows is None:
            return row if row < self._scanned - self._base else -1
        return self._rows[row] - self._base if row < len(self._rows) else -1

    def row_of_seq(self, seq: int) -> int:
        """The row of the line numbered ``seq`` by the supervisor, or -1 (not
        held, filtered out, or not scanned yet)."""
        pos = bisect.bisect_left(self.lines, seq, key=lambda held: held[0])
        if pos >= len(self.lines) or self.lines[pos][0] != seq:
            return -1
        number = self._base + pos
        if self._rows is None:
            return pos if number < self._scanned else -1
        row = bisect.bisect_left(self._rows, number)
        return row if row < len(self._rows) and self._rows[row] == number else -1

    def text(self, pos: int) -> str:
        """The plain (ANSI-stripped) text of ``lines[pos]``."""
        text = self._plain[pos]
        return text if self._base + pos < self._clean else ansi.strip_ansi(text)

    def copy_rows(self, rows: Iterable[int], times: bool = False) -> str:
        """The plain text of these rows (others ignored), in row order, one per line;
        with ``times``, each after the time it arrived (:func:`timed`)."""
        count = self.row_count
        wanted = sorted({int(r) for r in rows if 0 <= int(r) < count})
        positions = [self.position(r) for r in wanted]
        if times:
            lines = self.lines
            return "\n".join(timed(lines[p][2], self.text(p)) for p in positions)
        return "\n".join(self.text(p) for p in positions)

    def copy_all(self, times: bool = False) -> str:
        """The plain text of every row, one per line (with ``times``, as :meth:`copy_rows`)."""
        self.strip_to(self._scanned)
        base, plain = self._base, self._plain
        shown = range(base, self._scanned) if self._rows is None else self._rows
        if times:
            lines = self.lines
            return "\n".join(timed(lines[i - base][2], plain[i - base]) for i in shown)
        if self._rows is None:
            return "\n".join(plain[: self._scanned - base])
        return "\n".join(plain[i - base] for i in self._rows)

    # -- lines -------------------------------------------------------------------

    def reset(self) -> None:
        """Hold nothing, numbering from 0 (another proc's lines come next)."""
        self.lines, self._plain = [], []
        self._base = self._clean = self._scanned = 0
        self._rows = None if self._matcher is None else []

    def clear(self) -> None:
        """Drop every line; later lines go on with the numbering."""
        self._base = self._clean = self._scanned = self.end
        self.lines, self._plain = [], []
        self._rows = None if self._matcher is None else []

    def extend(self, lines: Sequence[Line]) -> None:
        """Append lines (not rows yet: see :meth:`take_new`)."""
        if not lines:
            return
        caught_up = self._clean == self.end
        # Held as tuples of plain values: the garbage collector stops tracking
        # those, so 100k held lines add nothing to its pauses (a Line holds a
        # Stream member, which keeps it tracked).
        self.lines += [
            (ln.seq, ln.stream is Stream.STDERR, ln.time, ln.text, ln.split) for ln in lines
        ]
        self._plain += [ln.text for ln in lines]
        if caught_up and len(lines) <= STRIP_AT_ONCE:
            self.strip_to(self.end)

    def overflow(self) -> Trim | None:
        """What dropping the lines beyond ``max_lines`` removes, or None: nothing."""
        excess = len(self.lines) - self.max_lines
        if excess <= 0:
            return None
        cut = self._base + excess  # the number of the first line kept
        if self._rows is None:
            shown = min(self._scanned, cut) - self._base
        else:
            shown = bisect.bisect_left(self._rows, cut)
        return Trim(excess, shown)

    def drop_front(self, count: int) -> None:
        """Drop the oldest ``count`` lines, and the rows they were."""
        if count <= 0:
            return
        del self.lines[:count]
        del self._plain[:count]
        self._base += count
        self._clean = max(self._clean, self._base)
        self._scanned = max(self._scanned, self._base)
        if self._rows:
            del self._rows[: bisect.bisect_left(self._rows, self._base)]

    def strip_to(self, stop: int) -> None:
        """Strip the lines up to line number ``stop`` (exclusive)."""
        if stop <= self._clean:
            return
        first, last = self._clean - self._base, stop - self._base
        self._plain[first:last] = ansi.strip_lines(self._plain[first:last])
        self._clean = stop

    def strip_some(self, budget: float) -> None:
        """Strip unstripped lines in chunks, for about ``budget`` seconds."""
        deadline = time.perf_counter() + budget
        end = self.end
        while self._clean < end and time.perf_counter() < deadline:
            self.strip_to(min(self._clean + FILTER_CHUNK, end))

    # -- rows --------------------------------------------------------------------

    def set_filter(self, matcher: Matcher | None) -> None:
        """Filter with ``matcher`` (None: every line) from scratch: no rows until scanned."""
        self._matcher = matcher
        self._rows = None if matcher is None else []
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
        return NewRows(len(self._rows), found) if found else None

    def add_rows(self, new: NewRows) -> None:
        """Make rows of what :meth:`take_new` returned."""
        if self._rows is None:
            self._scanned = max(self._scanned, new.lines[-1] + 1)
        else:
            self._rows += new.lines

    def scan(self, budget: float) -> None:
        """:meth:`take_new` and :meth:`add_rows` at once."""
        new = self.take_new(budget)
        if new is not None:
            self.add_rows(new)

    def _scan(self, budget: float) -> list[int]:
        """Advance the filter over unscanned lines for about ``budget`` seconds; the matches."""
        assert self._matcher is not None
        matcher, plain, base = self._matcher, self._plain, self._base
        end = self.end
        deadline = time.perf_counter() + budget
        found: list[int] = []
        while self._scanned < end:
            stop = min(self._scanned + FILTER_CHUNK, end)
            self.strip_to(stop)
            found += matcher(plain[self._scanned - base : stop - base], self._scanned)
            self._scanned = stop
            if time.perf_counter() >= deadline:
                break
        return found
