"""ANSI parsing, stripping and HTML rendering (procwindow.qt.ansi: no Qt involved)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from procwindow.qt.ansi import (
    DARK_PALETTE,
    LIGHT_PALETTE,
    PLAIN,
    Span,
    Style,
    color_hex,
    parse,
    strip_ansi,
    to_html,
)

from ..tiers import examples

ESC = "\x1b"


def styles(text: str, start: Style = PLAIN) -> list[tuple[str, Style]]:
    spans, _ = parse(text, start)
    return [(s.text, s.style) for s in spans]


# -- SGR ---------------------------------------------------------------------------


def test_plain_text_is_one_plain_span() -> None:
    assert parse("hello") == ([Span("hello", PLAIN)], PLAIN)
    assert parse("") == ([], PLAIN)


def test_bold_and_reset() -> None:
    assert styles(f"{ESC}[1mbold{ESC}[0m plain") == [
        ("bold", Style(bold=True)),
        (" plain", PLAIN),
    ]


def test_empty_parameters_reset() -> None:
    assert styles(f"{ESC}[1;31mx{ESC}[my") == [("x", Style(fg=1, bold=True)), ("y", PLAIN)]


@pytest.mark.parametrize(
    ("code", "style"),
    [
        ("31", Style(fg=1)),
        ("37", Style(fg=7)),
        ("91", Style(fg=9)),
        ("97", Style(fg=15)),
        ("42", Style(bg=2)),
        ("107", Style(bg=15)),
        ("2", Style(dim=True)),
        ("3", Style(italic=True)),
        ("4", Style(underline=True)),
        ("7", Style(inverse=True)),
        ("9", Style(strike=True)),
    ],
)
def test_sixteen_colours_and_attributes(code: str, style: Style) -> None:
    assert styles(f"{ESC}[{code}mx") == [("x", style)]


def test_partial_resets() -> None:
    text = f"{ESC}[1;3;4;7;9;31;42mA{ESC}[22;23;24;27;29mB{ESC}[39mC{ESC}[49mD"
    assert styles(text) == [
        ("A", Style(fg=1, bg=2, bold=True, italic=True, underline=True, inverse=True, strike=True)),
        ("B", Style(fg=1, bg=2)),
        ("C", Style(bg=2)),
        ("D", PLAIN),
    ]


def test_256_colours() -> None:
    assert styles(f"{ESC}[38;5;208mA{ESC}[48;5;17mB") == [
        ("A", Style(fg=208)),
        ("B", Style(fg=208, bg=17)),
    ]
    assert color_hex(16) == "#000000"
    assert color_hex(196) == "#ff0000"
    assert color_hex(231) == "#ffffff"
    assert color_hex(232) == "#080808"
    assert color_hex(255) == "#eeeeee"
    assert color_hex(1, LIGHT_PALETTE) == LIGHT_PALETTE.colors[1]
    assert color_hex(1, DARK_PALETTE) == DARK_PALETTE.colors[1]


def test_truecolour_semicolon_and_colon_forms() -> None:
    assert styles(f"{ESC}[38;2;255;128;0mA{ESC}[48:2::1:2:3mB{ESC}[38:2:4:5:6mC") == [
        ("A", Style(fg=(255, 128, 0))),
        ("B", Style(fg=(255, 128, 0), bg=(1, 2, 3))),
        ("C", Style(fg=(4, 5, 6), bg=(1, 2, 3))),
    ]
    assert color_hex((255, 128, 0)) == "#ff8000"


def test_colour_codes_followed_by_more_codes() -> None:
    assert styles(f"{ESC}[38;5;1;1;48;2;9;9;9;4mx") == [
        ("x", Style(fg=1, bg=(9, 9, 9), bold=True, underline=True))
    ]


def test_out_of_range_and_truncated_colours_do_not_raise() -> None:
    # 999 is clamped; "-" before a parameter byte makes the whole sequence ignored
    # (as terminals do); a truncated 38;5 or 48;2 sets nothing.
    assert styles(f"{ESC}[38;5;999mA{ESC}[38;2;300;-1;7mB{ESC}[38;5mC{ESC}[48;2;1mD") == [
        ("ABCD", Style(fg=255)),
    ]
    huge = "9" * 5000
    assert styles(f"{ESC}[{huge}mx{ESC}[38;5;{huge}my") == [("x", PLAIN), ("y", Style(fg=255))]


def test_style_carries_across_calls() -> None:
    _, end = parse(f"{ESC}[32mgreen, no reset")
    assert end == Style(fg=2)
    assert styles("next line", end) == [("next line", Style(fg=2))]


def test_adjacent_runs_of_one_style_merge() -> None:
    assert styles(f"{ESC}[31ma{ESC}[31mb{ESC}[Kc") == [("abc", Style(fg=1))]


# -- stripping ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "plain"),
    [
        (f"{ESC}[1;31merror{ESC}[0m: disk full", "error: disk full"),
        (f"{ESC}[2K{ESC}[1G50%", "50%"),  # erase line, cursor to column 1
        (f"{ESC}[?25lhidden cursor{ESC}[?25h", "hidden cursor"),
        (f"{ESC}]0;window title\x07text", "text"),  # OSC ended by BEL
        (f"{ESC}]8;;https://example.com{ESC}\\link{ESC}]8;;{ESC}\\", "link"),  # OSC 8, ST
        (f"{ESC}Pq#0;1;2{ESC}\\after", "after"),  # DCS
        (f"{ESC}(Bascii{ESC}7{ESC}8", "ascii"),  # charset designation, save/restore
        ("bell\x07 and back\x08space", "bell and backspace"),
        ("tab\tkept", "tab\tkept"),
        ("\x9b31mC1 CSI", "C1 CSI"),
        (f"cut off {ESC}[38;5", "cut off "),
        (f"{ESC}[31é", "é"),  # a character no CSI may hold ends it
        (f"lone {ESC}", "lone "),
        (f"{ESC}{ESC}[31m[0m", "[0m"),
        ("ünïcödé ✓", "ünïcödé ✓"),
    ],
)
def test_strip_ansi(raw: str, plain: str) -> None:
    assert strip_ansi(raw) == plain
    assert strip_ansi(plain) == plain


def test_strip_returns_the_same_object_when_nothing_to_strip() -> None:
    text = "nothing to do here"
    assert strip_ansi(text) is text


# -- HTML --------------------------------------------------------------------------


def test_html_escapes_markup() -> None:
    assert to_html("<b>&amp;</b>") == "&lt;b&gt;&amp;amp;&lt;/b&gt;"


def test_html_colours_and_attributes() -> None:
    html = to_html(f"{ESC}[1;3;4;9;31mX")
    assert html == f'<s><u><i><b><font color="{LIGHT_PALETTE.colors[1]}">X</font></b></i></u></s>'


def test_html_background_and_palette() -> None:
    html = to_html(f"{ESC}[41mX", DARK_PALETTE)
    assert html == f'<span style="background-color:{DARK_PALETTE.colors[1]}">X</span>'


def test_html_inverse_swaps_default_colours() -> None:
    html = to_html(f"{ESC}[7mX")
    assert f'<font color="{LIGHT_PALETTE.background}">' in html
    assert f"background-color:{LIGHT_PALETTE.foreground}" in html


def test_html_dim_blends_towards_the_background() -> None:
    assert to_html(f"{ESC}[2;38;2;0;0;0mX", DARK_PALETTE) == '<font color="#0f0f0f">X</font>'


def test_html_keeps_runs_of_spaces_and_expands_tabs() -> None:
    assert to_html("a    b") == "a &nbsp; &nbsp;b"
    assert to_html("  indented") == "&nbsp;&nbsp;indented"
    assert to_html("ab\tc") == "ab &nbsp; &nbsp; &nbsp;c"  # six spaces, to column 8
    assert to_html("a b") == "a b"


def test_html_plain_line_is_just_escaped() -> None:
    assert to_html("ok 1 < 2") == "ok 1 &lt; 2"


# -- any input ---------------------------------------------------------------------

# Text dense in escape-sequence material, so the generator explores the parser.
_PIECES = st.sampled_from(
    [ESC, "[", "]", "\\", ";", ":", "m", "38", "48", "5", "2", "0", "1", "255", "999", "?", " ",
     "\x07", "\x9b", "\x9c", "\x9d", "\t", "x", "é", "<", "&", "\x00", "\x7f", "P", "("]
)  # fmt: skip
_ANSI_TEXT = st.lists(st.one_of(_PIECES, st.text(max_size=3)), max_size=40).map("".join)


@settings(max_examples=examples(400), deadline=None)
@given(_ANSI_TEXT)
def test_strip_is_idempotent_and_leaves_no_control(text: str) -> None:
    plain = strip_ansi(text)
    assert strip_ansi(plain) == plain
    assert ESC not in plain
    assert all(c in "\t\n" or not (ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F) for c in plain)


@settings(max_examples=examples(400), deadline=None)
@given(_ANSI_TEXT, st.booleans())
def test_parse_never_raises_and_agrees_with_strip(text: str, carry: bool) -> None:
    start = Style(fg=3, bold=True) if carry else PLAIN
    spans, end = parse(text, start)
    assert "".join(s.text for s in spans) == strip_ansi(text)
    assert all(s.text for s in spans)
    assert isinstance(end, Style)


@settings(max_examples=examples(300), deadline=None)
@given(_ANSI_TEXT)
def test_to_html_never_raises_and_escapes(text: str) -> None:
    html = to_html(text)
    # Every "<" in the output opens one of our tags: the input's are escaped.
    for chunk in html.split("<")[1:]:
        assert chunk.startswith(("font ", "/font", "b>", "/b", "i>", "/i", "u>", "/u", "s>",
                                 "/s", "span ", "/span"))  # fmt: skip


@settings(max_examples=examples(200), deadline=None)
@given(st.text())
def test_any_unicode_text(text: str) -> None:
    plain = strip_ansi(text)
    assert strip_ansi(plain) == plain
    assert "".join(s.text for s in parse(text)[0]) == plain
    to_html(text)
