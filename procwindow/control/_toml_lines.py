"""Where a key stands in a TOML text: the line numbers of workspace errors.

tomllib gives values without positions, so these helpers read the text's
tokens themselves: enough of TOML to place a key path like
``("session", 0, "agent", 1, "argv")`` on its line, and to refuse dotted keys
too long for tomllib before it sees them. Every pattern is possessive and
every loop consumes a token, so that no text makes them slow.
"""

from __future__ import annotations

import re
import tomllib
from collections import deque
from collections.abc import Iterator, Sequence

__all__ = ["Key", "key_line", "key_text", "long_dotted_key"]

#: A key path: table names and array indexes.
Key = tuple[str | int, ...]

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def key_text(key: Sequence[str | int]) -> str:
    """A key path as a user writes it: ``session[0].agent[1]."A B"``."""
    out = ""
    for part in key:
        if isinstance(part, int):
            out += f"[{part}]"
            continue
        if not _BARE_KEY.fullmatch(part):
            part = '"' + part.replace("\\", "\\\\").replace('"', '\\"') + '"'
        out += f".{part}" if out else part
    return out


# A key part: a bare word (starting a word: matches never start inside one, which
# keeps the scan linear), or a one-line quoted string.
_KEY_PART = r"""(?:(?<![A-Za-z0-9_-])[A-Za-z0-9_-]++|"(?:[^"\\\n]|\\.)*+"|'[^'\n]*+')"""
_KEY_PART_RE = re.compile(_KEY_PART)
# Dotted runs outside strings and comments. Every quantifier is possessive and an
# unterminated string runs to the end of its line (or of the text), so that no
# input makes the scan backtrack.
_DOTTED = re.compile(
    rf"""
      (?P<key>{_KEY_PART}(?:[ \t]*+\.[ \t]*+{_KEY_PART})++)
    | \"\"\"(?:[^"\\]|\\[\s\S]|"(?!""))*+(?:\"\"\"|\Z)
    | '''(?:[^']|'(?!''))*+(?:'''|\Z)
    | "(?:[^"\\\n]|\\.)*+"?
    | '[^'\n]*+'?
    | \#[^\n]*+
    """,
    re.VERBOSE,
)


def long_dotted_key(text: str, max_parts: int) -> int | None:
    """The line of the first dotted key of more than ``max_parts`` parts, or None.

    tomllib's cost grows with the square of a key's length: such keys are to be
    refused before it sees them.
    """
    for match in _DOTTED.finditer(text):
        run = match.group("key")
        # Dots inside quoted parts make the count an upper bound; count exactly if it matters.
        if run is None or run.count(".") < max_parts:
            continue
        if len(_KEY_PART_RE.findall(run)) > max_parts:
            return text.count("\n", 0, match.start()) + 1
    return None


def key_line(text: str, key: Key) -> int | None:
    """The line of ``key`` in ``text``, else of the nearest table or array holding it.

    None if neither can be found. It costs a pass over the text.
    """
    return _KeyLines(text, key).line


_TOKEN = re.compile(
    r"""
      (?P<nl>\n)
    | [ \t\r]++
    | \#[^\n]*+
    | (?P<ml>\"\"\"(?:[^"\\]|\\[\s\S]|"(?!""))*+(?:\"\"\"|\Z)|'''(?:[^']|'(?!''))*+(?:'''|\Z))
    | (?P<str>"(?:[^"\\\n]|\\.)*+"?|'[^'\n]*+'?)
    | (?P<bare>[A-Za-z0-9_-]++)
    | (?P<punct>.)
    """,
    re.VERBOSE,
)

#: Past this depth, a value's elements are skipped rather than indexed.
_MAX_INDEX_DEPTH = 64

_Token = tuple[str, str, int]  # kind (a group of _TOKEN), text, line
_EOF: _Token = ("eof", "", 0)


class _Found(Exception):
    pass


class _KeyLines:
    """Finds the line of a key path like ("session", 0, "agent", 1, "argv").

    tomllib gives no positions, so this reads the text's tokens: table headers,
    ``key =`` lines, and the elements and keys of arrays and inline tables. It
    stops at ``target``; ``line`` is the line of ``target``, else of the nearest
    enclosing table or array, else None.
    """

    def __init__(self, text: str, target: Key) -> None:
        self.target = target
        self.where: dict[Key, int] = {}
        self._counters: dict[Key, int] = {}
        self._tokens = self._lex(text)
        self._ahead: deque[_Token] = deque()
        self._taken = 0
        try:
            self._scan()
        except _Found:
            pass
        self.line = self._find()

    def _find(self) -> int | None:
        for end in range(len(self.target), 0, -1):
            line = self.where.get(self.target[:end])
            if line is not None:
                return line
        return None

    @staticmethod
    def _lex(text: str) -> Iterator[_Token]:
        line = 1
        for match in _TOKEN.finditer(text):
            kind = match.lastgroup
            if kind is None:  # blanks and comments
                continue
            token = match.group()
            yield kind, token, line
            if kind == "nl":
                line += 1
            elif kind == "ml":
                line += token.count("\n")

    def _peek(self, ahead: int = 0) -> _Token:
        while len(self._ahead) <= ahead:
            token = next(self._tokens, None)
            if token is None:
                return _EOF
            self._ahead.append(token)
        return self._ahead[ahead]

    def _take(self) -> _Token:
        token = self._peek()
        if self._ahead:
            self._ahead.popleft()
            self._taken += 1
        return token

    def _is(self, punct: str, ahead: int = 0) -> bool:
        kind, token, _line = self._peek(ahead)
        return kind == "punct" and token == punct

    def _wanted(self, path: Key) -> bool:
        return path == self.target[: len(path)]

    def _record(self, path: Key, line: int) -> None:
        if self._wanted(path):
            self.where.setdefault(path, line)
            if len(path) == len(self.target):
                raise _Found

    def _record_all(self, path: Key, line: int) -> None:
        """Record ``path`` and the tables it implies."""
        for end in range(1, len(path) + 1):
            if not self._wanted(path[:end]):
                return
            self._record(path[:end], line)

    def _scan(self) -> None:
        current: Key = ()
        while self._peek()[0] != "eof":
            kind, _token, line = self._peek()
            if self._is("["):
                is_array = self._is("[", 1)
                self._take()
                if is_array:
                    self._take()
                parts = self._key()
                if parts:
                    current = self._header(parts, is_array)
                    self._record_all(current, line)
            elif kind in ("str", "bare"):
                parts = self._key()
                if self._is("="):
                    self._take()
                    self._record_all((*current, *parts), line)
                    self._value((*current, *parts), 0)
            # The rest of the line: a comment, or something not understood.
            while self._peek()[0] not in ("nl", "eof"):
                self._take()
            self._take()

    def _key(self) -> list[str]:
        parts: list[str] = []
        while True:
            kind, token, _line = self._peek()
            if kind == "bare":
                parts.append(token)
            elif kind == "str":
                parts.append(_unquote(token))
            else:
                return parts
            self._take()
            if not self._is("."):
                return parts
            self._take()

    def _header(self, names: list[str], is_array: bool) -> Key:
        path: list[str | int] = []
        for i, name in enumerate(names):
            path.append(name)
            last = i == len(names) - 1
            if last and is_array:
                key = tuple(path)
                self._counters[key] = self._counters.get(key, -1) + 1
                path.append(self._counters[key])
            elif not last:
                # an enclosing array of tables: its most recent element
                index = self._counters.get(tuple(path))
                if index is not None:
                    path.append(index)
        return tuple(path)

    def _value(self, path: Key, depth: int) -> None:
        """Index the value at the current token, if it may hold the target, and pass it."""
        if self._is("[") or self._is("{"):
            if depth > _MAX_INDEX_DEPTH or not self._wanted(path):
                self._skip_nested()
            elif self._is("["):
                self._array(path, depth)
            else:
                self._table(path, depth)
            return
        while True:
            kind, token, _line = self._peek()
            if kind in ("nl", "eof") or (kind == "punct" and token in ",]}"):
                return
            self._take()

    def _inside(self, close: str) -> tuple[str, int] | None:
        """The kind and line of the next token before ``close``; None past it (or at the end)."""
        kind, _token, line = self._peek()
        if kind == "eof":
            return None
        if self._is(close):
            self._take()
            return None
        return kind, line

    def _array(self, path: Key, depth: int) -> None:
        self._take()
        index = 0
        while (token := self._inside("]")) is not None:
            kind, line = token
            if kind == "nl":
                self._take()
            elif self._is(","):
                self._take()
                index += 1
            else:
                taken = self._taken
                self._record((*path, index), line)
                self._value((*path, index), depth + 1)
                if self._taken == taken:  # a stray token: never loop on it
                    self._take()

    def _table(self, path: Key, depth: int) -> None:
        self._take()
        while (token := self._inside("}")) is not None:
            _kind, line = token
            parts = self._key()
            if not parts:
                self._take()
                continue
            self._record_all((*path, *parts), line)
            if self._is("="):
                self._take()
                self._value((*path, *parts), depth + 1)

    def _skip_nested(self) -> None:
        depth = 0
        while True:
            kind, token, _line = self._take()
            if kind == "eof":
                return
            if kind == "punct" and token in "[{":
                depth += 1
            elif kind == "punct" and token in "]}":
                depth -= 1
                if depth == 0:
                    return


def _unquote(token: str) -> str:
    """A quoted key's text (a best effort: it only places errors)."""
    quote = token[0]
    body = token[1:-1] if len(token) >= 2 and token.endswith(quote) else token[1:]
    if quote == "'" or "\\" not in body:
        return body
    try:
        value = tomllib.loads(f"k = {token}")["k"]
    except (ValueError, RecursionError):
        return body
    return value if isinstance(value, str) else body
