"""The texts of an output pane's lines, raw and ANSI-stripped, without Qt.

:class:`Texts` keeps them in tuples by line number for the
:class:`~procwindow.qt.models._lines.LineBuffer`, which keeps every other
column of a line (seq, time, stream) in arrays.
"""

from __future__ import annotations

import bisect

from .. import ansi

__all__ = ["TEXT_CHUNK", "Texts"]

#: The most texts in one tuple of a :class:`Texts` (and, once dropped, the most
#: kept until the rest of their tuple goes).
TEXT_CHUNK = 4096


class Texts:
    """The texts of a buffer's lines, raw and ANSI-stripped, by line number.

    Kept as tuples of up to :data:`TEXT_CHUNK` strings, never as a list of them:
    the garbage collector stops tracking a tuple of strings once it has seen
    it, while it reads every item of a list at each full collection (~35 µs per
    1,000 items: two lists of a million lines made each such pause 70 ms).

    Lines ``first`` to ``end - 1`` are held. A chunk's plain texts are made when
    it is stripped (``clean`` is the number of the first line not stripped):
    chunks are stripped in order, and a chunk gets more lines only while in
    the same state, so every line below ``clean`` is stripped. Lines read back
    from the log come before ``first`` (:meth:`prepend`), stripped at once, so
    that this holds; the newest may go again (:meth:`drop_from`).

    >>> texts = Texts()
    >>> texts.append(("a", "\\x1b[1mb"), stripped=False)
    >>> texts.strip_to(2)
    >>> texts.raw(1), texts.plain(1), texts.plains(0, 2)
    ('\\x1b[1mb', 'b', ['a', 'b'])
    """

    __slots__ = ("_plain", "_raw", "_starts", "clean", "end", "first")

    def __init__(self, first: int = 0) -> None:
        self._raw: list[tuple[str, ...]] = []
        self._plain: list[tuple[str, ...] | None] = []  # None: not stripped yet
        self._starts: list[int] = []  # the number of each chunk's first line
        self.first = self.end = self.clean = first

    def _chunk(self, number: int) -> tuple[int, int]:
        """The chunk of line ``number`` and its place in it."""
        c = bisect.bisect_right(self._starts, number) - 1
        return c, number - self._starts[c]

    def raw(self, number: int) -> str:
        c, i = self._chunk(number)
        return self._raw[c][i]

    def plain(self, number: int) -> str:
        """The stripped text of line ``number`` (stripped now if its chunk is not yet)."""
        c, i = self._chunk(number)
        plain = self._plain[c]
        return plain[i] if plain is not None else ansi.strip_ansi(self._raw[c][i])

    def plains(self, first: int, stop: int) -> list[str]:
        """The plain texts of lines ``first`` to ``stop - 1`` (stripped below ``clean``)."""
        out: list[str] = []
        if first >= stop:
            return out
        c, i = self._chunk(first)
        while first < stop:
            plain = self._plain[c]
            part = self._raw[c] if plain is None else plain
            take = part[i : i + stop - first]
            out += take
            first += len(take)
            c, i = c + 1, 0
        return out

    def append(self, texts: tuple[str, ...], *, stripped: bool) -> None:
        """Hold ``texts`` as lines ``end`` on (with ``stripped``: clean already,
        allowed only when every line before them is stripped)."""
        if not texts:
            return
        stripped = stripped and self.clean == self.end
        plain = ansi.strip_lines(list(texts)) if stripped else None
        at = 0
        if self._raw and (self._plain[-1] is not None) == stripped:
            # Top up the last chunk, so that small appends make few chunks.
            room = TEXT_CHUNK - len(self._raw[-1])
            if room > 0:
                at = min(room, len(texts))
                self._raw[-1] += texts[:at]
                last = self._plain[-1]
                if last is not None and plain is not None:
                    self._plain[-1] = last + tuple(plain[:at])
        for start in range(at, len(texts), TEXT_CHUNK):
            self._starts.append(self.end + start)
            self._raw.append(texts[start : start + TEXT_CHUNK])
            self._plain.append(None if plain is None else tuple(plain[start : start + TEXT_CHUNK]))
        self.end += len(texts)
        if stripped:
            self.clean = self.end

    def prepend(self, texts: tuple[str, ...], plain: list[str]) -> None:
        """Hold ``texts`` as the lines before ``first``, numbered down from it, with
        their stripped ``plain`` texts (stripped already: every chunk below
        ``clean`` stays stripped)."""
        if not texts:
            return
        self._forget_dropped()
        start = self.first - len(texts)
        raws, plains, starts = [], [], []
        for at in range(0, len(texts), TEXT_CHUNK):
            starts.append(start + at)
            raws.append(texts[at : at + TEXT_CHUNK])
            plains.append(tuple(plain[at : at + TEXT_CHUNK]))
        self._raw[0:0], self._plain[0:0], self._starts[0:0] = raws, plains, starts
        self.first = start

    def drop_from(self, number: int) -> None:
        """Forget lines ``number`` on (the newest): ``end`` is ``number`` after."""
        number = max(number, self.first)
        if number >= self.end:
            return
        while self._starts and self._starts[-1] >= number:
            del self._raw[-1], self._plain[-1], self._starts[-1]
        if self._starts:
            keep = number - self._starts[-1]
            self._raw[-1] = self._raw[-1][:keep]
            last = self._plain[-1]
            if last is not None:
                self._plain[-1] = last[:keep]
        self.end = number
        self.clean = min(self.clean, number)

    def _forget_dropped(self) -> None:
        """Cut from the first chunk the lines before ``first`` it still keeps (their
        numbers go to the lines prepended)."""
        if self._starts and self._starts[0] < self.first:
            cut = self.first - self._starts[0]
            self._raw[0] = self._raw[0][cut:]
            first_plain = self._plain[0]
            if first_plain is not None:
                self._plain[0] = first_plain[cut:]
            self._starts[0] = self.first

    def drop_before(self, number: int) -> None:
        """Forget lines before ``number`` (whole chunks; at most a chunk is kept)."""
        self.first = max(self.first, number)
        self.clean = max(self.clean, self.first)
        gone = bisect.bisect_right(self._starts, self.first) - 1
        if gone > 0:
            del self._raw[:gone], self._plain[:gone], self._starts[:gone]

    def strip_to(self, stop: int) -> None:
        """Strip the chunks that hold lines before ``stop`` (``clean`` >= ``stop`` after)."""
        while self.clean < min(stop, self.end):
            c, _ = self._chunk(self.clean)
            self._plain[c] = tuple(ansi.strip_lines(list(self._raw[c])))
            self.clean = self._starts[c] + len(self._raw[c])
