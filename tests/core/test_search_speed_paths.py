"""The scans of searching on disk (RE2 over raw blocks in pieces, a
case-insensitive needle, invalid UTF-8, one reused read buffer) find exactly the
lines whose text matches on its own."""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from procwindow import Supervisor
from procwindow.core import Regex, _search
from procwindow.core._output import _decode_lines
from procwindow.core._search import Matcher

from ..tiers import examples
from .helpers import py, until

#: (pattern, regex): literals, alternations, anchors, classes, inline flags,
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
    (r"err\z", True),
    (r"(?i)Err", True),
    (r"(?-i:Err)or", True),
    (r"(?i:ERR)or", True),
    (r"(?s)e.r", True),
    (r"err\s+x", True),
    (r"err\nx", True),
    (r"r\W+e", True),
    (r"[^a]err", True),
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
    if not block:
        return []  # an empty log holds no line
    ends = [i for i, c in enumerate(block) if c == 0x0A]
    if not block.endswith(b"\n"):
        ends.append(len(block))
    return ends


def _scan(m: Matcher, buf: bytes | bytearray, end: int) -> list[int]:
    """Every piece of a block's scan, as ``scan_disk`` takes them."""
    ends: list[int] = []
    pos = 0
    while pos < end:
        got, pos = m.line_ends(buf, pos, end)
        ends += got
    return ends


@settings(max_examples=examples(400), deadline=None)
@example(["ok \u212as".encode(), b"ks"], True, b"", (r"ks", True), False)
@example([b"a", "\u0130s \u017f".encode()], False, b"\xff", (r"is", True), False)
@example([b"err 1x", b"\xff err 2x"], True, b"", (r"err(or)? [0-9]+x", True), False)
@example([b"err", b"err"], True, b"", (r"\Aerr", True), False)
@example([b"x", b""], False, b"", (r"^$", True), False)
@given(
    lines=lines_st,
    terminated=st.booleans(),
    stale=st.one_of(st.binary(max_size=8), st.binary(min_size=300, max_size=600)),
    case=st.sampled_from(PATTERNS),
    case_sensitive=st.booleans(),
)
def test_the_scan_finds_the_lines_that_match_on_their_own(
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
    got = _hits(m, block, _scan(m, buf, len(block)))
    assert got == _hits(m, block, _scan(m, block, len(block)))
    line = Regex(pattern, case_sensitive=case_sensitive, literal=not regex)
    want = [e for e in _line_ends(block) if line.search(_text(block, e))]
    if m._needle is not None and not case_sensitive:
        # The needle path folds ASCII only ("\u212a" is no "k" there).
        want = [e for e in want if m._needle in _raw(block, e).lower()]
    # A "\r" redraw shows the text after it: the raw line may miss an anchor.
    assert set(got) <= set(want)
    assert [e for e in want if b"\r" not in _raw(block, e)] == [
        e for e in got if b"\r" not in _raw(block, e)
    ]


def test_a_slow_pattern_is_scanned_in_short_pieces() -> None:
    # Linear, but a few MB/s: each call into RE2 stays short, and the pieces
    # together find every line.
    rows = [(b"ab" * 40 + (b"a" if i % 7 else b"b") * 21) for i in range(20_000)]
    block = b"\n".join(rows)
    m = Matcher(r"[ab]*a[ab]{20}$", regex=True, case_sensitive=True)
    pieces, pos, ends = 0, 0, []
    while pos < len(block):
        got, stop = m.line_ends(block, pos, len(block))
        assert stop > pos and (stop == len(block) or block[stop - 1 : stop] == b"\n")
        ends += got
        pos = stop
        pieces += 1
    assert pieces > 4
    assert len(ends) == sum(1 for i in range(20_000) if i % 7)


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


def test_search_on_disk_matches_each_line_on_its_own(run, monkeypatch: pytest.MonkeyPatch) -> None:
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
                rx = Regex(pattern, case_sensitive=case_sensitive, literal=not regex)
                want = [(ln.seq, ln.text) for ln in lines if rx.search(ln.text)]
                got = [
                    (h.line.seq, h.line.text)
                    async for h in sup.search(pattern, regex=regex, case_sensitive=case_sensitive)
                ]
                assert got == want, pattern
                assert want, pattern

    run(second())
