"""Line matching: a pattern tested against one line, or against a block of
joined lines so that a scan skips whole blocks without splitting them."""

from __future__ import annotations

import re
from collections.abc import Callable

from ._errors import InvalidPattern
from .rules import shown

__all__ = ["LineMatch", "line_matcher"]


#: Regex constructs whose meaning at a line's edges differs in a block of
#: joined lines: such patterns are checked line by line only.
_EDGE_SENSITIVE = ("\\A", "\\Z", "\\n", "(?=", "(?!", "(?<", "(?>", "(?s", "*+", "++", "?+", "}+")


class LineMatch:
    """A test for one line's text: ``re.search`` of ``pattern``, or a substring.

    ``block`` tells, for many lines joined by ``\n``, whether any of them may
    match, so that a scan skips whole blocks without splitting them (None when
    the pattern cannot be tested that way).
    """

    __slots__ = ("block", "line", "pattern")

    def __init__(self, pattern: str, *, regex: bool) -> None:
        if not isinstance(pattern, str) or not pattern:
            raise InvalidPattern(shown(pattern), "a pattern must be a non-empty string")
        self.pattern = pattern
        self.block: Callable[[str], bool] | None
        if not regex:
            self.line: Callable[[str], bool] = lambda text: pattern in text
            self.block = None if "\n" in pattern else self.line
            return
        try:
            rx = re.compile(pattern)
            block_rx = re.compile(pattern, re.MULTILINE)
        except re.error as exc:
            raise InvalidPattern(pattern, str(exc)) from None
        self.line = lambda text: rx.search(text) is not None
        if any(edge in pattern for edge in _EDGE_SENSITIVE):
            self.block = None
        else:
            self.block = lambda text: block_rx.search(text) is not None


def line_matcher(pattern: str, *, regex: bool) -> Callable[[str], bool]:
    """``LineMatch(pattern, regex=regex).line``: raises InvalidPattern at once."""
    return LineMatch(pattern, regex=regex).line
