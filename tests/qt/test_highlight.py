"""Marking a filter's matches inside a line, without Qt: where the marks go
(plain, regex, case), the HTML they make (escaped, ANSI colours kept), and
copies with the times a line arrived."""

from __future__ import annotations

import re
import time

import pytest

from procwindow.core import Line, Stream
from procwindow.qt import ansi
from procwindow.qt.highlight import marked_html, time_html
from procwindow.qt.models._filter import MAX_MARKS, compile_filter, compile_marker
from procwindow.qt.models._lines import LineBuffer, timed
from procwindow.qt.models.format import time_text

MARK = "#6bd4a017"
SPAN = f'<span style="background-color:{MARK}">'


def marks(text: str, regex: bool, case: bool, line: str) -> list[str]:
    marker = compile_marker(text, regex, case)
    assert marker is not None
    return [line[a:b] for a, b in marker(line)]


def test_a_substring_is_marked_wherever_it_occurs() -> None:
    line = "Error: error in ERRORS.txt (err)"
    assert marks("error", False, False, line) == ["Error", "error", "ERROR"]
    assert marks("error", False, True, line) == ["error"]
    # Non-overlapping, left to right, as a search moves on.
    assert marks("aa", False, True, "aaaaa") == ["aa", "aa"]
    # Case-insensitive as the filter is: casefolded, mapped back to the line.
    assert marks("STRASSE", False, False, "die Straße, die strasse") == ["Straße", "strasse"]
    assert marks("ss", False, False, "Maß") == ["ß"]
    # Special characters are literal in a substring.
    assert marks("a.c(", False, True, "abc( a.c(") == ["a.c("]


def test_a_regex_marks_its_matches_and_never_an_empty_one() -> None:
    line = "took 12ms, then 340ms, TOOK 5MS"
    assert marks(r"\d+ms", True, False, line) == ["12ms", "340ms", "5MS"]
    assert marks(r"\d+ms", True, True, line) == ["12ms", "340ms"]
    # Empty matches mark nothing, and the search still moves on past them.
    for pattern in ("x*", "^", "$", r"\b", "(?:)", "a{0}"):
        assert marks(pattern, True, True, line) == [], pattern
    assert marks("o*", True, True, "foo bar oo") == ["oo", "oo"]
    # A long line of empty matches returns at once (~20 ms; a loop that did not move
    # past them would never end). This thread's CPU time, which other load leaves alone.
    start = time.thread_time()
    assert compile_marker("x*", True, True)("y" * 200_000) == []  # type: ignore[misc]
    assert time.thread_time() - start < 1.0


@pytest.mark.parametrize(
    ("text", "regex", "case"),
    [
        ("err", False, False),
        ("ERR", False, True),
        ("ß", False, False),
        (r"e.r", True, False),
        (r"^\s*x", True, True),
        ("İ", False, False),
    ],
)
def test_marks_agree_with_the_filter(text: str, regex: bool, case: bool) -> None:
    lines = [
        "error",
        "ERROR 42",
        "no match",
        "  x marks",
        "Strasse STRASSE straße",
        "İstanbul i̇",
        "",
        "e r",
    ]
    matcher = compile_filter(text, regex, case)
    marker = compile_marker(text, regex, case)
    assert matcher is not None and marker is not None
    kept = set(matcher(lines, 0))
    for i, line in enumerate(lines):
        assert bool(marker(line)) == (i in kept), (text, line)


def test_no_filter_no_marker_and_a_bad_regex_is_an_error() -> None:
    assert compile_marker("", True, True) is None
    with pytest.raises(ValueError, match="invalid regular expression"):
        compile_marker("(", True, False)


def test_marks_per_line_are_bounded() -> None:
    marker = compile_marker("a", False, True)
    assert marker is not None
    assert len(marker("a" * (MAX_MARKS * 3))) == MAX_MARKS


def test_marked_html_escapes_and_drops_the_ansi_colours_inside_a_mark() -> None:
    # Red text on the amber mark could not be read: a mark shows the line's own
    # text colour, and the ANSI colour goes on around it.
    line = "\x1b[31m<b>&</b>\x1b[0m x<y"
    plain = ansi.strip_ansi(line)
    marker = compile_marker("b>&<", False, True)
    assert marker is not None
    html = marked_html(line, marker(plain), MARK, ansi.DARK_PALETTE)
    red = ansi.DARK_PALETTE.colors[1]
    assert html == (
        f'<font color="{red}">&lt;</font>'
        f"{SPAN}b&gt;&amp;&lt;</span>"
        f'<font color="{red}">/b&gt;</font>&nbsp;x&lt;y'
    )
    # No markup in the text survives unescaped; without marks it is ansi's own.
    assert "<b>" not in html and "<y" not in html
    assert marked_html(line, [], MARK, ansi.DARK_PALETTE) == ansi.to_html(line, ansi.DARK_PALETTE)


def test_marked_html_spans_styles_and_keeps_columns() -> None:
    # A match across two colours: one mark per styled piece, side by side, each
    # in the line's own colour; bold and the rest of the style stay.
    line = "\x1b[32mgre\x1b[34men\x1b[0m\tdone  twice"
    html = marked_html(line, [(1, 4), (9, 15)], MARK)
    green, blue = ansi.LIGHT_PALETTE.colors[2], ansi.LIGHT_PALETTE.colors[4]
    assert html.startswith(
        f'<font color="{green}">g</font>{SPAN}re</span>{SPAN}e</span><font color="{blue}">n</font>'
    )
    # The tab still reaches column 8, and runs of spaces keep their width.
    assert re.sub("<[^>]+>", "", html).replace("&nbsp;", " ") == "green   done  twice"
    # An ANSI background or inverse gives way to the mark inside it.
    inverse = marked_html("\x1b[7;41mhot\x1b[0m", [(0, 3)], MARK)
    assert inverse == f"{SPAN}hot</span>"
    assert marked_html("\x1b[1;31mhot\x1b[0m", [(0, 3)], MARK) == f"{SPAN}<b>hot</b></span>"


def test_times_before_lines_and_in_copies() -> None:
    when = time.mktime((2024, 5, 6, 7, 8, 9, 0, 0, -1)) + 0.042
    assert time_html(time_text(when, millis=True), "#777777") == (
        '<font color="#777777">07:08:09.042</font>&nbsp;'
    )
    assert timed(when, "ok") == "07:08:09.042 ok"
    buf = LineBuffer(100)
    buf.extend([Line(i + 1, Stream.STDOUT, when + i, f"\x1b[1mrow\x1b[0m {i}") for i in range(4)])
    buf.scan(1.0)
    assert buf.copy_all() == "row 0\nrow 1\nrow 2\nrow 3"
    assert buf.copy_all(times=True).splitlines() == [
        "07:08:09.042 row 0",
        "07:08:10.042 row 1",
        "07:08:11.042 row 2",
        "07:08:12.042 row 3",
    ]
    assert buf.copy_rows([2, 0], times=True) == "07:08:09.042 row 0\n07:08:11.042 row 2"
    buf.set_filter(compile_filter("[13]", regex=True, case_sensitive=True))
    buf.scan(1.0)
    assert buf.copy_all(times=True) == "07:08:10.042 row 1\n07:08:12.042 row 3"
    assert buf.copy_rows([1], times=False) == "row 3"
