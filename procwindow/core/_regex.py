"""Patterns that users give (a search, a line to wait for, a readiness or a
liveness line, the window's filter), matched by RE2.

RE2 matches in time linear in the text, whatever the pattern: no regex an
agent writes can hold the event loop for seconds, as ``(a+)+$`` does with a
backtracking engine. It has no backreferences, lookaround, atomic groups or
possessive quantifiers; a pattern using one is refused with a one-line reason.
``\\d``, ``\\w``, ``\\s`` and ``\\b`` are ASCII (``\\pL``, ``\\pN`` are the Unicode
classes) and ``\\Z`` is written ``\\z``.

Linear is not always fast: a pattern whose automaton has very many states runs
at a few MB/s. So a scan over a block of many lines goes in pieces sized from
the rate this pattern has shown (:data:`PIECE_SECONDS` each), and the callers
return to their loop between pieces.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import re2

from ._errors import InvalidPattern

__all__ = ["PIECE_SECONDS", "BlockTest", "Regex"]

#: About how long one call into RE2 over a block of lines may take.
PIECE_SECONDS = 0.004
#: The first piece of a new pattern's scan (its rate is not known yet), and the bounds.
_FIRST_PIECE = 16 * 1024
_MIN_PIECE = 4 * 1024
_MAX_PIECE = 4 * 1024 * 1024

#: Empty matches in a row after which ``spans`` stops looking.
_EMPTY_MATCHES = 4096

_SYNTAX = "patterns use RE2 syntax, which matches in linear time"

#: RE2's message for a construct it lacks, and what to tell a person instead.
_LACKS: tuple[tuple[str, str], ...] = (
    ("invalid perl operator: (?=", "lookahead (?=...) is not supported"),
    ("invalid perl operator: (?!", "lookahead (?!...) is not supported"),
    ("invalid perl operator: (?<=", "lookbehind (?<=...) is not supported"),
    ("invalid perl operator: (?<!", "lookbehind (?<!...) is not supported"),
    ("invalid perl operator: (?>", "atomic groups (?>...) are not supported"),
    ("invalid perl operator: (?P=", "backreferences (?P=name) are not supported"),
    ("bad repetition operator: *+", "possessive quantifiers (*+, ++, ?+) are not supported"),
    ("bad repetition operator: ++", "possessive quantifiers (*+, ++, ?+) are not supported"),
    ("bad repetition operator: ?+", "possessive quantifiers (*+, ++, ?+) are not supported"),
    ("invalid perl operator: (?x", "verbose mode (?x) is not supported"),
    ("invalid escape sequence: \\Z", "\\Z is written \\z"),
)


def _why(message: str) -> str:
    """RE2's compile error as one line for people."""
    for said, meant in _LACKS:
        if message.startswith(said):
            return f"{meant}; {_SYNTAX}"
    if message.startswith("invalid escape sequence: \\") and message[-1:].isdigit():
        return f"backreferences ({message.rpartition(' ')[2]}) are not supported; {_SYNTAX}"
    if message.startswith("pattern too large"):
        return "the pattern is too large to compile (RE2's memory bound)"
    return f"{message} ({_SYNTAX})"


def _compile(source: bytes, case_sensitive: bool, literal: bool) -> Any:
    options = re2.Options()
    options.log_errors = False
    options.never_capture = True
    options.case_sensitive = case_sensitive
    options.literal = literal
    return re2.compile(source, options)


class Regex:
    """A pattern compiled once: a test of one line, and a scan of many.

    ``literal``: ``source`` is plain text, not a regex. Raises InvalidPattern
    for a pattern RE2 does not take.
    """

    __slots__ = ("_edges", "_line", "_lines", "_piece", "source")

    def __init__(self, source: str, *, case_sensitive: bool = True, literal: bool = False) -> None:
        if not isinstance(source, str) or not source:
            raise InvalidPattern(repr(source), "a pattern must be a non-empty string")
        self.source = source
        try:
            encoded = source.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidPattern(source, "a pattern must be valid Unicode") from None
        try:
            self._line = _compile(encoded, case_sensitive, literal)
            # Over a block of lines: ^ and $ at each line's edges.
            self._lines = (
                self._line if literal else _compile(b"(?m)" + encoded, case_sensitive, False)
            )
        except re2.error as exc:
            message = exc.args[0] if exc.args else "invalid pattern"
            if isinstance(message, bytes):
                message = message.decode("utf-8", "replace")
            raise InvalidPattern(source, _why(str(message))) from None
        # \A and \z mean a line's edges in a line and the block's in a block:
        # such a pattern is tested line by line.
        self._edges = not literal and (b"\\A" in encoded or b"\\z" in encoded)
        self._piece = _FIRST_PIECE

    def __repr__(self) -> str:
        return f"Regex({self.source!r})"

    def search(self, text: str) -> bool:
        """True if the pattern matches in one line's text."""
        return self._line.search(text.encode("utf-8", "surrogatepass")) is not None

    def spans(self, text: str, limit: int) -> list[tuple[int, int]]:
        """Where it matches in a line, in characters: the non-empty matches, at
        most ``limit``. A pattern that matches the empty string (``x*``) is
        given up after _EMPTY_MATCHES empty matches in a row (each costs a call)."""
        spans: list[tuple[int, int]] = []
        empty = 0
        subject: str | bytes = text.encode() if text.isascii() else text  # bytes: no offset map
        try:
            for m in self._line.finditer(subject):
                if m.end() == m.start():
                    empty += 1
                    if empty > _EMPTY_MATCHES:
                        break
                    continue
                empty = 0
                spans.append((m.start(), m.end()))
                if len(spans) >= limit:
                    break
        except UnicodeEncodeError:  # a lone surrogate: the window marks nothing
            return []
        return spans

    def line_ends(self, data: bytes | bytearray, start: int, end: int) -> tuple[list[int], int]:
        """Scan one piece of the lines of ``data[start:end]`` (``start`` at a
        line's start): the offsets of the ends (``\\n``, or ``end``) of the
        lines that match, and where the piece stopped (a line's start, or
        ``end``). The piece is sized so that it takes about PIECE_SECONDS at the
        rate this pattern has shown; a line is never cut."""
        if start >= end:
            return [], end
        stop = end
        if end - start > self._piece:
            nl = data.find(b"\n", start + self._piece - 1, end)
            stop = end if nl < 0 else nl + 1
        began = time.perf_counter()
        piece = bytes(data[start:stop])
        ends = [start + at for at in self._piece_ends(piece)]
        self._learn(stop - start, time.perf_counter() - began)
        return ends, stop

    def lines_matching(self, texts: list[str]) -> Iterator[int]:
        """The indexes of the lines of ``texts`` that match (no line holds a ``\\n``)."""
        data = "\n".join(texts).encode("utf-8", "surrogatepass")
        pos, line, counted = 0, 0, 0
        while pos < len(data):
            ends, pos = self.line_ends(data, pos, len(data))
            for at in ends:
                line += data.count(b"\n", counted, at)
                counted = at
                yield line
        if texts and not texts[-1] and self.search(""):  # no scan sees an empty last line
            yield len(texts) - 1

    def block_test(self) -> BlockTest | None:
        """A test of lines joined by ``\\n``: whether any may match (None where
        only a line-by-line test is exact)."""
        return None if self._edges else BlockTest(self)

    def _test_block(self, text: str) -> bool:
        began = time.perf_counter()
        data = text.encode("utf-8", "surrogatepass")
        found = self._lines.search(data) is not None
        self._learn(len(data), time.perf_counter() - began)
        return found

    def _learn(self, nbytes: int, elapsed: float) -> None:
        """Size the next piece from the rate just seen."""
        rate = nbytes / max(elapsed, 1e-6)
        self._piece = max(_MIN_PIECE, min(_MAX_PIECE, int(rate * PIECE_SECONDS)))

    def _piece_ends(self, piece: bytes) -> Iterator[int]:
        """Ends of the matching lines of a piece."""
        if self._edges:
            yield from self._each_line(piece)
            return
        if piece.isascii() or _valid_utf8(piece):
            yield from self._scan(piece)
            return
        # RE2 matches no character at an invalid byte, where a line's text has
        # U+FFFD: scan the text as lines read it, and map each hit back by its
        # line number (a \n is never part of an invalid sequence).
        fixed = piece.decode("utf-8", "replace").encode("utf-8")
        line, counted, raw = 0, 0, piece.find(b"\n")  # raw: where line `line` ends
        for at in self._scan(fixed):
            target = line + fixed.count(b"\n", counted, at)
            counted = at
            while line < target:
                raw = piece.find(b"\n", raw + 1)
                line += 1
            yield len(piece) if raw < 0 else raw

    def _scan(self, piece: bytes) -> Iterator[int]:
        """Ends of the matching lines of a valid UTF-8 piece."""
        search, size, pos = self._lines.search, len(piece), 0
        while pos < size:
            m = search(piece, pos, size)
            if m is None or m.start() == size:  # after a last "\n": no line
                return
            first = piece.rfind(b"\n", 0, m.start()) + 1
            nl = piece.find(b"\n", m.start())
            stop = size if nl < 0 else nl
            # A match inside one line is that line's own; one across lines
            # ((?s), \s, [^x]) only says where to look.
            if m.end() <= stop or self._line.search(piece[first:stop]) is not None:
                yield stop
            if nl < 0:
                return
            pos = nl + 1

    def _each_line(self, piece: bytes) -> Iterator[int]:
        search, first, size = self._line.search, 0, len(piece)
        while first < size:
            nl = piece.find(b"\n", first)
            stop = size if nl < 0 else nl
            if search(piece[first:stop].decode("utf-8", "replace").encode()) is not None:
                yield stop
            if nl < 0:
                return
            first = nl + 1


class BlockTest:
    """A :class:`Regex`'s test of lines joined by ``\\n``; ``size``: about how
    many characters to give it at once (sized from the rate it has shown)."""

    __slots__ = ("_regex",)

    def __init__(self, regex: Regex) -> None:
        self._regex = regex

    @property
    def size(self) -> int:
        return self._regex._piece

    def __call__(self, text: str) -> bool:
        return self._regex._test_block(text)


def _valid_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
