"""Text for people: escaping what a terminal must not receive raw, and runtimes."""

from __future__ import annotations

__all__ = ["escape_controls", "format_runtime", "format_size"]

_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
#: Characters that end a line for ``str.splitlines`` or reorder text on screen.
_INVISIBLE = frozenset("\u2028\u2029\u200e\u200f\u061c") | frozenset(
    chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))
)


def escape_controls(text: str) -> str:
    """``text`` with control characters, line separators and bidi overrides
    written as escapes (``\\n``, ``\\x1b``, ``\\u2028``).

    >>> escape_controls("make\\tall\\x1b[2J")
    'make\\\\tall\\\\x1b[2J'
    """
    if text.isprintable():
        return text
    out = []
    for ch in text:
        code = ord(ch)
        if ch in _NAMED:
            out.append(_NAMED[ch])
        elif code < 0x20 or 0x7F <= code < 0xA0:
            out.append(f"\\x{code:02x}")
        elif ch in _INVISIBLE:
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    return "".join(out)


def format_runtime(seconds: float) -> str:
    """``45s``, ``2m 34s``, ``1h 02m`` — the window's and ``top``'s runtime text."""
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m {s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h {s % 3600 // 60:02d}m"
    return f"{s // 86400}d {s % 86400 // 3600:02d}h"


def format_size(n: int) -> str:
    """Bytes for people: ``512 B``, ``64.0 kB``, ``36.7 MB``, ``2.1 GB`` (powers of 1000)."""
    if n < 1000:
        return f"{n} B"
    value = float(n)
    for unit in ("kB", "MB", "GB", "TB"):
        value /= 1000
        if value < 1000 or unit == "TB":
            break
    return f"{value:.1f} {unit}"
