"""The fast paths of searching on disk (a regex's required literal found with
``find``, a case-insensitive needle, one reused read buffer) find exactly what
the plain scans find: the compiled regex over the whole text, and ``re`` over
each line."""

from __future__ import annotations

import re
from collections.abc import Iterable

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from procwindow import Supervisor
from procwindow.core import _search
from procwindow.core._output import LINE_MAX, _decode_lines
from procwindow.core._search import _FOLDS_OUTSIDE_ASCII, Matcher, _required_literal

from ..tiers import examples
from .helpers import py, until

#: (pattern, regex): regexes with and without a literal every match holds,
#: alternations, anchors, classes, inline flags, lookarounds, backreferences,
#: matches across lines, non-ASCII and case-folding characters.
PATTERNS = [
    (r"err(or)? [0-9]+x", True),
    (r"error", True),
    (r"ERR", True),
    (r"error|warn", True),
    (r"(error|warn) \d+", True),
    (r"(?:foo|bar)baz", True),
    (r"^err", True),
    (r"err$", True),
    (r"^$", True),
    (r"\berr\b", True),
    (r"x\Berr", True),
    (r"\Aerr", True),
    (r"err\Z", True),
    (r"(?i)Err", True),
    (r"(?-i:Err)or", True),
    (r"(?i:ERR)or", True),
    (r"(?x) e r r \d", True),
    (r"(?s)e.r", True),
    (r"err\s+x", True),
    (r"err\nx", True),
    (r"r\W+e", True),
    (r"[^a]err", True),
    (r"(?<=e)rr", True),
    (r"(?<!x)err", True),
    (r"err(?= )", True),
    (r"(r)\1", True),
    (r"(?>er)r+", True),
    (r"er{2,}", True),
    (r"\d+x", True),
    (r".*", True),
    (r"ks", True),
    (r"is", True),
    (r"caf\w", True),
    (r"caf.", True),
    ("é", True),
    ("\u017f", True),
    ("\u212a", True),
    ("needle", False),
    ("NeEdLe", False),
    ("err ", False),
    ("café", False),
    ("a.b", False),
    ("\r", False),
]

#: Pieces of lines: mixed case, characters that fold to ASCII (U+017F, U+212A, U+0130, U+0131),
#: other non-ASCII text, "\r" redraws, invalid UTF-8.
TOKENS = [
    b"err",
    b"ERR",
    b"Error",
    b"error 12x",
    b"eRr 7X",
    b"warn 3",
    b"x",
    b" ",
    b"needle",
    b"NEEDLE",
    b"a.b",
    b"fooBaz",
    b"ks",
    b"is",
    b"s",
    "\u017f".encode(),
    "\u212a".encode(),
    "\u0130".encode(),
    "\u0131".encode(),
    "é".encode(),
    "café".encode(),
    b"\r",
    b"\t",
    b"\xff",
    b"\xc3",
]

lines_st = st.lists(st.lists(st.sampled_from(TOKENS), max_size=6).map(b"".join), max_size=25)


def _text(block: bytes | bytearray, end: int) -> str:
    """The text ``read()`` gives for the line whose ``\\n`` is at ``end``."""
    first = block.rfind(b"\n", 0, end) + 1
    return _decode_lines(bytes(block[first:end]))[0]


def _raw(block: bytes, end: int) -> bytes:
    return block[block.rfind(b"\n", 0, end) + 1 : end]


def _hits(m: Matcher, block: bytes | bytearray, ends: Iterable[int]) -> list[int]:
    """Candidates that pass the final check, as ``scan_disk`` takes them."""
    return [e for e in ends if m.line(_text(block, e))]


def _line_ends(block: bytes) -> list[int]:
    ends = [i for i, c in enumerate(block) if c == 0x0A]
    if not block.endswith(b"\n"):
        ends.append(len(block))
    return ends


@settings(max_examples=examples(400), deadline=None)
@example(["ok \u212as".encode(), b"ks"], True, b"", (r"ks", True), False)
@example([b"a", "\u0130s \u017f".encode()], False, b"\xff", (r"is", True), False)
@example([b"err 1x", b"\xff err 2x"], True, b"", (r"err(or)? [0-9]+x", True), False)
@example([b"err", b"err"], True, b"", (r"\Aerr", True), False)
@given(
    lines=lines_st,
    terminated=st.booleans(),
    stale=st.one_of(st.binary(max_size=8), st.binary(min_size=300, max_size=600)),
    case=st.sampled_from(PATTERNS),
    case_sensitive=st.booleans(),
)
def test_every_path_finds_what_the_whole_text_scan_finds(
    lines: list[bytes],
    terminated: bool,
    stale: bytes,
    case: tuple[str, bool],
    case_sensitive: bool,
) -> None:
    pattern, regex = case
    m = Matcher(pattern, regex=regex, case_sensitive=case_sensitive)
    block = b"\n".join(lines) + (b"\n" if terminated and lines else b"")
    # A reused buffer: bytes past ``end`` are left from an earlier block, or
    # are the start of a long line carried to the next read.
    buf = bytearray(block + stale)
    got = _hits(m, block, m.line_ends(buf, len(block)))
    assert got == _hits(m, block, m.line_ends(block))
    if m._needle is None:
        assert got == _hits(m, block, m._regex_lines(block))  # today's scan
    if m._needle is not None or m._literal is not None:
        # No anchor nor lookaround: a hit is a line that matches on its own.
        flags = 0 if case_sensitive else re.IGNORECASE
        rx = re.compile(pattern if regex else re.escape(pattern), flags)
        want = [e for e in _line_ends(block) if rx.search(_text(block, e))]
        if m._needle is not None and not case_sensitive:
            # As ever, the needle path folds ASCII only ("\u212a" is no "k" there).
            want = [e for e in want if m._needle in _raw(block, e).lower()]
        assert got == want


@pytest.mark.parametrize(
    ("pattern", "case_sensitive", "literal"),
    [
        (r"err(or)? [0-9]+x", False, (b"err", True, True, False)),
        (r"error \d+", True, (b"error ", False, True, False)),
        (r"(foo|bar)baz", True, (b"baz", False, True, False)),
        (r"\berror\b", False, (b"error", True, True, True)),
        (r"(?i)ERR", True, (b"err", True, True, False)),
        (r"(?i:abc)d", True, (b"d", False, True, False)),
        (r"x(?:abc)+", True, (b"abc", False, True, False)),
        (r"xy(?:abc)*", True, (b"xy", False, True, False)),
        (r"Kiss", False, (b"kiss", True, False, False)),
        (r"Kiss", True, (b"Kiss", False, True, False)),
        (r"a\nbc", True, (b"bc", False, True, False)),
        (r"café", False, (b"caf", True, True, False)),
    ],
)
def test_a_required_literal(
    pattern: str, case_sensitive: bool, literal: tuple[bytes, bool, bool, bool]
) -> None:
    lit = _required_literal(pattern, 0 if case_sensitive else re.IGNORECASE)
    assert lit is not None
    assert (lit.text, lit.fold, lit.unicode_safe, lit.boundary) == literal


@pytest.mark.parametrize(
    "pattern",
    [
        r"a|b",
        r"error|warn",
        r"^error",
        r"error$",
        r"\Aerror",
        r"error\Z",
        r"(?<=x)error",
        r"error(?!x)",
        r"(e)rror\1",
        r"(a)?(?(1)b|c)",
        r".*",
        r"\d+",
        r"(?:error)?",
    ],
)
def test_no_required_literal(pattern: str) -> None:
    assert _required_literal(pattern, re.IGNORECASE) is None


def test_the_characters_that_fold_into_ascii_are_known() -> None:
    others = "".join(chr(c) for c in range(0x80, 0x110000) if not 0xD800 <= c < 0xE000)
    folding = set(re.findall(r"[\x00-\x7f]", others, re.IGNORECASE))
    assert len(folding) >= 4
    targets = {
        c.lower()
        for c in map(chr, range(0x80))
        for other in folding
        if re.fullmatch(re.escape(c), other, re.IGNORECASE)
    }
    assert targets == set(_FOLDS_OUTSIDE_ASCII)


def test_a_long_line_with_a_boundary_takes_the_whole_text_scan() -> None:
    m = Matcher(r"\berr", regex=True, case_sensitive=False)
    long_line = b"x" * (LINE_MAX + 10) + b"err"
    assert m._literal_lines(long_line, len(long_line)) is None
    short = b"an err\nxerr\n"
    assert m._literal_lines(short, len(short)) == [6]


def test_a_literal_in_most_lines_gives_way_to_the_whole_text_scan() -> None:
    m = Matcher(r"(warn|error) \d+", regex=True, case_sensitive=False)
    assert m._literal is not None and m._literal.text == b" "
    dense = b"".join(b"%d Error %d\n" % (i, i) for i in range(1000))
    assert m._literal_lines(dense, len(dense)) is None
    assert list(m.line_ends(dense)) == list(m._regex_lines(dense))
    sparse = b"x" * 100_000 + b"\nan ERROR 5\n"
    assert m._literal_lines(sparse, len(sparse)) == [len(sparse) - 1]


def test_invalid_utf8_takes_the_whole_text_scan() -> None:
    m = Matcher(r"err \d", regex=True, case_sensitive=False)
    block = "caf\u00e9 ERR 1\n".encode()
    assert m._literal_lines(block, len(block)) == [len(block) - 1]
    assert m._literal_lines(block + b"\xff", len(block) + 1) is None
    # "K" is a "k" to re.IGNORECASE: outside ASCII only the whole-text scan sees it.
    k = Matcher(r"k \d", regex=True, case_sensitive=False)
    assert k._literal_lines(block, len(block)) is None
    assert k._literal_lines(b"K 1\n", 4) == [3]


#: A child whose output crosses many small blocks: mixed case, regex hits and
#: near misses, non-ASCII and invalid UTF-8, "\r\n" and "\r" redraws, a line
#: longer than LINE_MAX with hits in its first and last pieces (completed by
#: different reads), both streams, a hit on the unterminated last line.
CHILD = """
    import sys
    out, err = sys.stdout.buffer, sys.stderr.buffer
    for i in range(3000):
        out.write(b"%05d lorem ipsum dolor sit amet " % i)
        if i % 97 == 3:
            out.write(b"the NeedLe is here")
        if i % 31 == 5:
            out.write(b"Error %dx in module" % i)
        if i % 53 == 7:
            out.write(b"err %dX again\\r\\n" % i)
            continue
        if i % 41 == 1:
            out.write(b"error %d near miss" % i)
        if i % 89 == 11:
            out.write("caf\\u00e9 \\u017f \\u212a ERROR %dx".encode() % i)
        if i % 113 == 13:
            out.write(b"bad \\xff byte error %dx" % i)
        if i % 211 == 17:
            out.write(b"progress err 1x\\rprogress 99%")
        if i == 1500:
            out.write(b"early error 3x needle " + b"y" * 200000 + b" warn 5 error 77x " + b"z" * 100)
        out.write(b"\\n")
        if i % 7 == 0:
            err.write(b"stderr error %dx needle\\n" % i)
    out.write(b"last error 1x needle")
    out.flush()
"""

E2E_CASES = [
    ("needle", False, False),
    ("NeedLe", False, True),
    (r"err(or)? [0-9]+x", True, False),
    (r"err(or)? [0-9]+x", True, True),
    (r"\berror\b \d+", True, False),
    (r"(warn|error) \d+", True, False),
    (r"\d+x", True, False),
    ("café", False, False),
    (r"k \w+", True, False),
]


def test_search_on_disk_matches_re_over_each_line(run, monkeypatch: pytest.MonkeyPatch) -> None:
    # Small blocks: many of them, and lines across their boundaries.
    monkeypatch.setattr(_search, "_BLOCK", 4099)

    async def first() -> int:
        async with Supervisor(log_cap=None) as sup:
            p = await sup.spawn(py(CHILD), session="s", agent="a")
            await sup.wait(p.id)
            await until(lambda: not sup.get(p.id).output_open)
            return p.id

    proc_id = run(first())

    async def second() -> None:
        async with Supervisor() as sup:
            lines = sup.read(proc_id).lines
            assert len(lines) > 3000
            assert any(ln.split for ln in lines)
            for pattern, regex, case_sensitive in E2E_CASES:
                rx = re.compile(
                    pattern if regex else re.escape(pattern),
                    0 if case_sensitive else re.IGNORECASE,
                )
                want = [(ln.seq, ln.text) for ln in lines if rx.search(ln.text)]
                got = [
                    (h.line.seq, h.line.text)
                    async for h in sup.search(pattern, regex=regex, case_sensitive=case_sensitive)
                ]
                assert got == want, pattern
                assert want, pattern

    run(second())
