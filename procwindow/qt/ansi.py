"""ANSI escape sequences in process output: SGR styles to spans, plain text, and HTML.

No Qt here: the output model calls these per line, the tests call them directly.

Programs colour their output with SGR sequences (``ESC [ 1;31 m``) and sometimes
move the cursor, set the window title (OSC) or emit other control codes. The
window shows a line three ways, and each function here serves one:

- :func:`strip_ansi` gives the text a person would copy or search: every escape
  sequence and control character removed (tabs kept).
- :func:`parse` gives styled spans: bold, dim, italic, underline, inverse,
  strike, and foreground/background colours from the 16-colour, 256-colour and
  24-bit forms, in both ``;`` and ``:`` sub-parameter spellings.
- :func:`to_html` renders the spans as HTML for a QML ``Text``.

None of them raises, whatever the input: a malformed or truncated sequence is
dropped, an out-of-range value is clamped or ignored (as terminals do).

>>> strip_ansi("\\x1b[1;31merror\\x1b[0m: disk full")
'error: disk full'
>>> [(s.text, s.style.bold, s.style.fg) for s in parse("\\x1b[1;31merror\\x1b[0m!")[0]]
[('error', True, 1), ('!', False, None)]
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import NamedTuple, TypeAlias

__all__ = [
    "DARK_PALETTE",
    "LIGHT_PALETTE",
    "PLAIN",
    "Color",
    "Palette",
    "Span",
    "Style",
    "color_hex",
    "parse",
    "strip_ansi",
    "strip_lines",
    "to_html",
]

#: A colour: an index into the 256-colour palette (0–15 are the themed base
#: colours), or a 24-bit ``(red, green, blue)`` triple.
Color: TypeAlias = int | tuple[int, int, int]


@dataclass(frozen=True, slots=True)
class Style:
    """The SGR attributes in effect for a run of text. ``None`` colours are the defaults."""

    fg: Color | None = None
    bg: Color | None = None
    bold: bool = False
    dim: bool = False
    italic: bool = False
    underline: bool = False
    inverse: bool = False
    strike: bool = False


#: No attributes: the state after ``ESC [ 0 m``.
PLAIN = Style()


class Span(NamedTuple):
    """A run of visible text (no escape sequences left in it) and its style."""

    text: str
    style: Style


@dataclass(frozen=True, slots=True)
class Palette:
    """The 16 base colours (``#rrggbb``, indexes 0–15) and the default foreground
    and background, which ``inverse`` swaps and ``dim`` blends."""

    colors: tuple[str, ...]
    foreground: str
    background: str

    def __post_init__(self) -> None:
        if len(self.colors) != 16:
            raise ValueError(f"a palette has 16 base colours, got {len(self.colors)}")


#: Base colours that read on a light background (a darkened xterm set).
LIGHT_PALETTE = Palette(
    colors=(
        "#000000", "#b21818", "#18a018", "#8a6d00", "#1a45c8", "#a8209f", "#0b8a94", "#8a8a8a",
        "#5a5a5a", "#e02424", "#25b825", "#b39400", "#3f6ee6", "#d040d0", "#14a9b5", "#404040",
    ),
    foreground="#1e1e1e",
    background="#ffffff",
)  # fmt: skip

#: Base colours that read on a dark background (VS Code's dark terminal set).
DARK_PALETTE = Palette(
    colors=(
        "#000000", "#cd3131", "#0dbc79", "#e5e510", "#2472c8", "#bc3fbc", "#11a8cd", "#e5e5e5",
        "#666666", "#f14c4c", "#23d18b", "#f5f543", "#3b8eea", "#d670d6", "#29b8db", "#ffffff",
    ),
    foreground="#cccccc",
    background="#1e1e1e",
)  # fmt: skip

# One pattern finds every escape sequence and control character, so that
# strip_ansi and parse agree exactly on what is visible text. It starts with the
# set of characters that can begin a match, because the regex engine skips
# quickly only to a leading literal or set (3× faster than an alternation of
# sequences); a lookbehind on that first character then picks the sequence
# (ECMA-48 names):
#   1. CSI: ESC [ (or C1 0x9B), parameter and intermediate bytes, a final byte.
#      Bytes out of order (a parameter after an intermediate) make terminals ignore
#      the sequence up to its final byte, so the body takes both kinds in any order;
#      any other character, or the end of the line, cuts the sequence short.
#   2. Control strings: OSC (ESC ]), DCS (ESC P), SOS (ESC X), PM (ESC ^) and
#      APC (ESC _), or their C1 forms, up to BEL or ST (ESC \ or 0x9C), or the end
#      of the line: no sequence crosses a newline, so strip_lines can strip many
#      lines joined by newlines in one pass.
#   3. Any other escape (nF, Fp, Fe, Fs: ESC, intermediates, one final byte),
#      or a lone ESC.
#   4. Any other C0 or C1 control character alone, except TAB and LF.
# Every ESC and control character (but TAB and LF) starts a match, so stripped
# text contains none: stripping again changes nothing.
_SEQUENCE = re.compile(
    r"""
    [\x00-\x08\x0b-\x1f\x7f-\x9f]
    (?:
        (?:(?<=\x1b)\[|(?<=\x9b)) (?P<body>[\x20-\x3f]*) (?P<final>[@-~]?)
      | (?:(?<=\x1b)[]PX^_]|(?<=[\x90\x98\x9d\x9e\x9f])) [^\n]*? (?:\x07|\x1b\\|\x9c|(?=\n)|\Z)
      | (?<=\x1b) [ -/]* [0-~]?
    )?
    """,
    re.VERBOSE,
)
# A quick test for the common case of a line with nothing to strip.
_NEEDS_WORK = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# The same test for a long text, faster: an ASCII text is clean if deleting the
# ASCII controls (str.translate has a fast path for ASCII) leaves its length;
# any other, if it is all clean characters (a regex that never backtracks).
_ASCII_CONTROLS = dict.fromkeys([*range(0x09), *range(0x0B, 0x20), 0x7F])
_ALL_CLEAN = re.compile(r"[\t\n\x20-\x7e\xa0-\U0010ffff]*")
# SGR parameters: digits, ';' separators and ':' sub-parameters (no private markers).
_SGR_PARAMS = re.compile(r"[0-9;:]*")
# Longer parameters are clamped without calling int(): Python refuses to convert
# strings of more than 4300 digits, and no SGR value needs more than three.
_MAX_PARAM_DIGITS = 6
_MAX_PARAM = 10**6  # the first value with more than _MAX_PARAM_DIGITS digits
_CUBE_LEVELS = (0, 95, 135, 175, 215, 255)
_TAB_WIDTH = 8


def strip_ansi(text: str) -> str:
    """``text`` without escape sequences and control characters (tabs kept).

    Idempotent: ``strip_ansi(strip_ansi(s)) == strip_ansi(s)``.

    >>> strip_ansi("\\x1b]0;title\\x07\\x1b[2K\\x1b[32mok\\x1b[m")
    'ok'
    """
    if _NEEDS_WORK.search(text) is None:
        return text
    return _SEQUENCE.sub("", text)


def _clean(text: str) -> bool:
    """True if ``text`` holds nothing to strip (``_NEEDS_WORK`` finds nothing),
    ~5x faster than searching for it (~0.1 ms per 2,000 ASCII lines)."""
    if text.isascii():
        return len(text.translate(_ASCII_CONTROLS)) == len(text)
    return _ALL_CLEAN.fullmatch(text) is not None


def strip_lines(lines: list[str]) -> list[str]:
    """``[strip_ansi(line) for line in lines]`` for lines without newlines, faster.

    One pass over the lines joined, instead of one per line (about 10× fewer
    calls into the regex engine); a line with nothing to strip is returned as
    the same object, so the result costs no memory for it.
    """
    joined = "\n".join(lines)
    if _clean(joined):
        return list(lines)
    stripped = _SEQUENCE.sub("", joined).split("\n")
    if len(stripped) != len(lines):  # a line held a newline after all: go line by line
        return [strip_ansi(line) for line in lines]
    # Stripping only removes characters: the same length means nothing was removed.
    return [a if len(a) == len(b) else b for a, b in zip(lines, stripped, strict=True)]


def parse(text: str, style: Style = PLAIN) -> tuple[list[Span], Style]:
    """Split ``text`` into styled spans; return them and the style in effect at the end.

    ``style`` is the style in effect before ``text`` (pass the returned one to
    continue across lines, as a terminal would). Only SGR sequences change the
    style; every other sequence and control character is dropped. Adjacent runs
    of the same style are merged, and empty runs are left out, so
    ``"".join(s.text for s in spans) == strip_ansi(text)``.
    """
    if _NEEDS_WORK.search(text) is None:
        return ([Span(text, style)] if text else []), style
    pen = _Pen(style)
    spans: list[Span] = []
    pos = 0
    for match in _SEQUENCE.finditer(text):
        if match.start() > pos:
            _add_span(spans, text[pos : match.start()], pen.style())
        pos = match.end()
        if match.group("final") == "m":
            body = match.group("body")
            if _SGR_PARAMS.fullmatch(body) is not None:
                pen.apply_sgr(body)
    if pos < len(text):
        _add_span(spans, text[pos:], pen.style())
    return spans, pen.style()


def to_html(text: str, palette: Palette = LIGHT_PALETTE) -> str:
    """``text`` as HTML for a QML ``Text``, escape sequences rendered as styles.

    Colours use ``<font color>`` and attributes ``<b>``, ``<i>``, ``<u>``, ``<s>``,
    which both ``Text.StyledText`` and ``Text.RichText`` understand; backgrounds
    use ``<span style="background-color">``, which only ``RichText`` draws
    (``StyledText`` ignores the tag and keeps the text). Runs of spaces become
    ``&nbsp;`` and tabs are expanded, so columns line up although HTML collapses
    whitespace. Each call starts from the plain style.

    >>> to_html("\\x1b[1;31m<error>\\x1b[0m  done")
    '<b><font color="#b21818">&lt;error&gt;</font></b>&nbsp;&nbsp;done'
    """
    spans, _ = parse(text)
    out: list[str] = []
    column = 0
    for span in spans:
        body, column = _html_text(span.text, column)
        out.append(_wrap(body, span.style, palette))
    return "".join(out)


def color_hex(color: Color, palette: Palette = LIGHT_PALETTE) -> str:
    """``#rrggbb`` for a palette index (0–255) or an RGB triple.

    >>> color_hex(196), color_hex((1, 2, 3))
    ('#ff0000', '#010203')
    """
    if isinstance(color, tuple):
        r, g, b = color
        return f"#{r:02x}{g:02x}{b:02x}"
    if color < 16:
        return palette.colors[color]
    if color < 232:
        n = color - 16
        r, g, b = _CUBE_LEVELS[n // 36], _CUBE_LEVELS[n // 6 % 6], _CUBE_LEVELS[n % 6]
        return f"#{r:02x}{g:02x}{b:02x}"
    level = 8 + 10 * (color - 232)
    return f"#{level:02x}{level:02x}{level:02x}"


# -- internals ---------------------------------------------------------------------


class _Pen:
    """The mutable SGR state while a line is parsed; frozen into a Style per span."""

    __slots__ = ("bg", "bold", "dim", "fg", "frozen", "inverse", "italic", "strike", "underline")

    def __init__(self, style: Style) -> None:
        self.fg = style.fg
        self.bg = style.bg
        self.bold = style.bold
        self.dim = style.dim
        self.italic = style.italic
        self.underline = style.underline
        self.inverse = style.inverse
        self.strike = style.strike
        self.frozen: Style | None = style

    def style(self) -> Style:
        if self.frozen is None:
            self.frozen = Style(
                self.fg,
                self.bg,
                self.bold,
                self.dim,
                self.italic,
                self.underline,
                self.inverse,
                self.strike,
            )
        return self.frozen

    def reset(self) -> None:
        self.fg = self.bg = None
        self.bold = self.dim = self.italic = self.underline = self.inverse = self.strike = False

    def apply_sgr(self, params: str) -> None:
        self.frozen = None
        parts = params.split(";")
        i = 0
        while i < len(parts):
            part = parts[i]
            i += 1
            if ":" in part:
                self._apply_colon_form(part.split(":"))
                continue
            code = _param(part)
            if code == 38 or code == 48:
                color, i = _extended_color(parts, i)
                if color is not None:
                    self._set_color(code, color)
            else:
                self._apply_code(code)

    def _apply_colon_form(self, sub: list[str]) -> None:
        # ITU T.416 spelling: 38:5:n, 38:2:[colourspace]:r:g:b, 4:n (underline style).
        code = _param(sub[0])
        if code == 38 or code == 48:
            if len(sub) >= 3 and sub[1] == "5":
                self._set_color(code, min(_param(sub[2]), 255))
            elif len(sub) >= 5 and sub[1] == "2":
                rgb = sub[-3:]
                self._set_color(code, (_byte(rgb[0]), _byte(rgb[1]), _byte(rgb[2])))
        elif code == 4:
            self.underline = len(sub) < 2 or _param(sub[1]) != 0
        else:
            self._apply_code(code)

    def _set_color(self, code: int, color: Color) -> None:
        if code == 38:
            self.fg = color
        else:
            self.bg = color

    def _apply_code(self, code: int) -> None:
        match code:
            case 0:
                self.reset()
            case 1:
                self.bold = True
            case 2:
                self.dim = True
            case 3:
                self.italic = True
            case 4 | 21:  # 21 is double underline (ECMA-48); a few terminals read "not bold"
                self.underline = True
            case 7:
                self.inverse = True
            case 9:
                self.strike = True
            case 22:
                self.bold = self.dim = False
            case 23:
                self.italic = False
            case 24:
                self.underline = False
            case 27:
                self.inverse = False
            case 29:
                self.strike = False
            case 39:
                self.fg = None
            case 49:
                self.bg = None
            case _ if 30 <= code <= 37:
                self.fg = code - 30
            case _ if 40 <= code <= 47:
                self.bg = code - 40
            case _ if 90 <= code <= 97:
                self.fg = code - 90 + 8
            case _ if 100 <= code <= 107:
                self.bg = code - 100 + 8
            case _:
                pass  # blink, fonts, frames, overline…: not shown


def _param(text: str) -> int:
    """An SGR parameter; an empty or non-numeric one counts as 0, as in terminals."""
    if not text or not text.isascii() or not text.isdigit():
        return 0
    if len(text) > _MAX_PARAM_DIGITS:
        return _MAX_PARAM
    return int(text)


def _byte(text: str) -> int:
    return min(_param(text), 255)


def _extended_color(parts: list[str], i: int) -> tuple[Color | None, int]:
    """Read ``5;n`` or ``2;r;g;b`` after a 38/48; return the colour and the next index."""
    if i >= len(parts):
        return None, i
    kind = parts[i]
    if kind == "5":
        if i + 1 < len(parts):
            return min(_param(parts[i + 1]), 255), i + 2
        return None, len(parts)
    if kind == "2":
        if i + 3 < len(parts):
            return (_byte(parts[i + 1]), _byte(parts[i + 2]), _byte(parts[i + 3])), i + 4
        return None, len(parts)
    # An unknown colour kind: the rest of the sequence cannot be interpreted.
    return None, len(parts)


def _add_span(spans: list[Span], text: str, style: Style) -> None:
    text = _strip_controls(text)
    if not text:
        return
    if spans and spans[-1].style == style:
        spans[-1] = Span(spans[-1].text + text, style)
    else:
        spans.append(Span(text, style))


def _strip_controls(text: str) -> str:
    # Between two matches there is no control character (the pattern consumes
    # them all), so this only guards the assumption cheaply.
    return text if _NEEDS_WORK.search(text) is None else _SEQUENCE.sub("", text)


def _html_text(text: str, column: int) -> tuple[str, int]:
    """Escape a run of text, expand its tabs from ``column``; return it and the new column."""
    if "\t" in text:
        pieces: list[str] = []
        for piece in text.split("\t")[:-1]:
            pieces.append(piece)
            column += len(piece)
            pad = _TAB_WIDTH - column % _TAB_WIDTH
            pieces.append(" " * pad)
            column += pad
        last = text.rpartition("\t")[2]
        pieces.append(last)
        column += len(last)
        text = "".join(pieces)
    else:
        column += len(text)
    body = html.escape(text, quote=False)
    if "  " in body:
        # Alternate space and &nbsp; so runs keep their width and lines can still wrap.
        body = body.replace("  ", " &nbsp;")
    if body.startswith(" "):
        body = "&nbsp;" + body[1:]
    return body, column


def _wrap(body: str, style: Style, palette: Palette) -> str:
    if style == PLAIN:
        return body
    fg = color_hex(style.fg, palette) if style.fg is not None else None
    bg = color_hex(style.bg, palette) if style.bg is not None else None
    if style.inverse:
        fg, bg = bg or palette.background, fg or palette.foreground
    if style.dim:
        fg = _blend(fg or palette.foreground, bg or palette.background)
    if fg is not None:
        body = f'<font color="{fg}">{body}</font>'
    if style.bold:
        body = f"<b>{body}</b>"
    if style.italic:
        body = f"<i>{body}</i>"
    if style.underline:
        body = f"<u>{body}</u>"
    if style.strike:
        body = f"<s>{body}</s>"
    if bg is not None:
        body = f'<span style="background-color:{bg}">{body}</span>'
    return body


def _blend(a: str, b: str) -> str:
    """The colour halfway between two ``#rrggbb`` colours (how ``dim`` is drawn)."""
    mixed = ((int(a[i : i + 2], 16) + int(b[i : i + 2], 16)) // 2 for i in (1, 3, 5))
    return "#" + "".join(f"{c:02x}" for c in mixed)
