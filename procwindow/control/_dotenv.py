"""Dotenv files for workspaces (``env_file``): ``NAME=value`` lines, as Compose reads them.

A line is ``NAME=value`` or ``export NAME=value``; blank lines and lines that
start with ``#`` are skipped. A value in single quotes is taken as it is; one in
double quotes may hold ``\\n``, ``\\t``, ``\\"`` and ``\\\\``; an unquoted one ends
at `` #`` (a comment) and is stripped. Nothing is expanded (``$HOME`` stays).
"""

from __future__ import annotations

import re

__all__ = ["DotenvError", "parse_dotenv"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}


class DotenvError(ValueError):
    """A line that is not ``NAME=value``; ``line`` is its number (from 1)."""

    def __init__(self, line: int, why: str) -> None:
        super().__init__(f"line {line}: {why}")
        self.line = line


def parse_dotenv(text: str) -> dict[str, str]:
    """The variables of a dotenv file's ``text``, in order (a later one wins).

    >>> parse_dotenv('# db\\nexport PGHOST=localhost\\nPGPASSWORD="s3 cr#t"\\nX=1 # one\\n')
    {'PGHOST': 'localhost', 'PGPASSWORD': 's3 cr#t', 'X': '1'}
    """
    out: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export ") :].lstrip()
        name, eq, value = line.partition("=")
        name = name.strip()
        if not eq or not _NAME.fullmatch(name):
            raise DotenvError(number, f"not NAME=value: {raw.strip()[:60]!r}")
        out[name] = _value(value.strip(), number)
    return out


def _value(value: str, number: int) -> str:
    if "\0" in value:
        raise DotenvError(number, "a NUL character in the value")
    if value[:1] in ("'", '"'):
        quote = value[0]
        end = _closing(value, quote)
        if end < 0:
            raise DotenvError(number, f"no closing {quote} in the value")
        rest = value[end + 1 :].strip()
        if rest and not rest.startswith("#"):
            raise DotenvError(number, f"text after the closing {quote}: {rest[:30]!r}")
        body = value[1:end]
        if quote == "'":
            return body
        return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(0)), body)
    comment = value.find(" #")
    return (value[:comment] if comment >= 0 else value).strip()


def _closing(value: str, quote: str) -> int:
    """Where the quote that opens ``value`` closes (-1: nowhere); ``\\"`` does not close."""
    i = 1
    while i < len(value):
        if value[i] == "\\" and quote == '"':
            i += 2
            continue
        if value[i] == quote:
            return i
        i += 1
    return -1
