"""Line matching: a pattern tested against one line, or against a block of
joined lines so that a scan skips whole blocks without splitting them."""

from __future__ import annotations

from collections.abc import Callable

from ._errors import InvalidPattern
from ._regex import BlockTest, Regex
from .rules import shown

__all__ = ["LineMatch", "line_matcher"]


class LineMatch:
    """A test for one line's text: an RE2 ``pattern`` (:class:`Regex`), or a substring.

    ``block`` tells, for many lines joined by ``\n``, whether any of them may
    match, so that a scan skips whole blocks without splitting them (None when
    the pattern cannot be tested that way).
    """

    __slots__ = ("block", "line", "pattern")

    def __init__(self, pattern: str, *, regex: bool) -> None:
        if not isinstance(pattern, str) or not pattern:
            raise InvalidPattern(shown(pattern), "a pattern must be a non-empty string")
        self.pattern = pattern
        self.block: BlockTest | _Substring | None
        if not regex:
            self.line: Callable[[str], bool] = lambda text: pattern in text
            self.block = None if "\n" in pattern else _Substring(pattern)
            return
        compiled = Regex(pattern)
        self.line = compiled.search
        self.block = compiled.block_test()


class _Substring:
    """A substring's block test: ``in`` is fast over any block."""

    __slots__ = ("_text",)
    size = 1 << 22

    def __init__(self, text: str) -> None:
        self._text = text

    def __call__(self, text: str) -> bool:
        return self._text in text


def line_matcher(pattern: str, *, regex: bool) -> Callable[[str], bool]:
    """``LineMatch(pattern, regex=regex).line``: raises InvalidPattern at once."""
    return LineMatch(pattern, regex=regex).line
