"""Output filters without Qt: which lines a filter keeps, and where it matches in each.

:func:`compile_filter` gives a :data:`Matcher`, which the line buffer's scan runs
over chunks of plain lines; :func:`compile_marker` gives a :data:`Marker`, which
the renderer runs over one line to mark its matches. The two agree on the same
arguments: a line the filter keeps has a mark, and a line it drops has none.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from procwindow.core import InvalidPattern, Regex

__all__ = [
    "MAX_MARKS",
    "FilterError",
    "Marker",
    "Matcher",
    "compile_filter",
    "compile_marker",
]

#: A compiled filter: given a chunk of plain lines and the number of its first
#: line, the numbers of the lines that match.
Matcher = Callable[[list[str], int], list[int]]
#: A filter's matches in one plain line: the ``(start, end)`` of each, in order,
#: none empty and none overlapping.
Marker = Callable[[str], list[tuple[int, int]]]

#: The most matches marked in one line (a one-letter filter over a long line
#: would otherwise make a page of markup for one row).
MAX_MARKS = 500


class FilterError(ValueError):
    """A filter that cannot be compiled; the message says why, for people."""


def compile_filter(text: str, regex: bool, case_sensitive: bool) -> Matcher | None:
    """The matcher of a filter (None for ``""``: no filter).

    A substring, or a regular expression (RE2, as every pattern procwindow
    takes: :class:`~procwindow.core.Regex`) with ``regex``; without
    ``case_sensitive`` a substring is compared ``casefold()``-ed and a regex
    is matched case-insensitively. Raises :class:`FilterError` for an invalid
    regex. A substring is one comprehension per chunk (DESIGN.md: substring
    8 ms, casefold+substring ~16 ms per 100k lines); a regex scans the chunk's
    joined text, in time linear in it whatever the pattern.
    """
    if not text:
        return None
    if regex:
        pattern = _compile(text, case_sensitive)
        return lambda chunk, start: [start + i for i in pattern.lines_matching(chunk)]
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
        return functools.partial(_compile(text, case_sensitive).spans, limit=MAX_MARKS)
    if case_sensitive:
        return functools.partial(_occurrences, text)
    return functools.partial(_folded_occurrences, text.casefold())


def _compile(text: str, case_sensitive: bool) -> Regex:
    try:
        return Regex(text, case_sensitive=case_sensitive)
    except InvalidPattern as exc:
        raise FilterError(f"invalid regular expression: {exc.why}") from exc


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
