"""LineBuffer and the filter scan, without Qt: OutputModel's lines, rows and filter.

Every test here but the last takes no fixture; the last runs all the others in
a subprocess where PySide6 cannot be imported.
"""

from __future__ import annotations

import gc
import itertools
import math
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from procwindow.core import Line, LineRun, Stream, runs_of
from procwindow.qt.models import _lines, _texts
from procwindow.qt.models._filter import FilterError, compile_filter
from procwindow.qt.models._lines import FILTER_CHUNK, STRIP_AT_ONCE, LineBuffer, NewRows, Trim
from procwindow.qt.models._texts import TEXT_CHUNK, Texts

ROOT = Path(__file__).resolve().parent.parent.parent

#: A budget that lets one step scan exactly one chunk.
ONE_CHUNK = 0.0


def numbered(texts: list[str], first_seq: int = 1) -> list[Line]:
    return [
        Line(seq, Stream.STDERR if seq % 3 == 0 else Stream.STDOUT, 1000.0 + seq, text)
        for seq, text in enumerate(texts, first_seq)
    ]


def cut_run(run: LineRun, rnd: random.Random) -> list[LineRun]:
    """``run`` cut into shorter runs at random places."""
    marks = sorted({rnd.randrange(len(run.texts) + 1) for _ in range(2)} | {0, len(run.texts)})
    return [
        run._replace(first=run.first + a, texts=run.texts[a:b])
        for a, b in itertools.pairwise(marks)
        if b > a
    ]


def rows_of(buf: LineBuffer) -> list[str]:
    return [buf.text(buf.position(r)) for r in range(buf.row_count)]


def show(buf: LineBuffer, budget: float = math.inf) -> list[NewRows]:
    """What a model does each frame: trim, then make rows of new lines, until none come."""
    steps = []
    while True:
        trim = buf.overflow()
        if trim is not None:
            buf.drop_front(trim.lines)
        new = buf.take_new(budget)
        if new is None and not buf.filtering:
            return steps
        if new is not None:
            steps.append(new)
            buf.add_rows(new)


def filtered(text: str, regex: bool = False, case: bool = False) -> LineBuffer:
    buf = LineBuffer(max_lines=100)
    buf.set_filter(compile_filter(text, regex, case))
    return buf


# -- lines and rows ---------------------------------------------------------------


def test_lines_become_rows_only_when_taken() -> None:
    buf = LineBuffer(max_lines=10)
    buf.extend(numbered(["a", "\x1b[31mb\x1b[0m", "c"]))
    assert (len(buf.lines), buf.row_count, buf.filtering) == (3, 0, True)
    new = buf.take_new(math.inf)
    assert new == NewRows(0, range(0, 3))
    assert new.last == 2
    assert buf.row_count == 0  # not before add_rows
    buf.add_rows(new)
    assert (buf.row_count, buf.filtering, buf.pending) == (3, False, False)
    assert rows_of(buf) == ["a", "b", "c"]
    assert buf.take_new(math.inf) is None
    seq, is_stderr, when, raw, split = buf.lines[1]
    assert (seq, is_stderr, when, raw, split) == (2, False, 1002.0, "\x1b[31mb\x1b[0m", False)
    assert buf.lines[2][1] is True  # seq 3 came on stderr
    assert buf.position(3) == buf.position(-1) == -1


def test_trimming_at_the_cap_drops_the_oldest_lines_and_their_rows() -> None:
    buf = LineBuffer(max_lines=5)
    buf.extend(numbered([f"line {i}" for i in range(4)]))
    show(buf)
    assert buf.overflow() is None  # under the cap
    buf.extend(numbered([f"line {i}" for i in range(4, 8)], first_seq=5))
    # Four rows shown, four new lines not yet rows: the three oldest go, all rows.
    assert buf.overflow() == Trim(lines=3, rows=3)
    buf.drop_front(3)
    assert (buf.base, buf.end, len(buf.lines), buf.row_count) == (3, 8, 5, 1)
    assert rows_of(buf) == ["line 3"]
    show(buf)
    assert rows_of(buf) == [f"line {i}" for i in range(3, 8)]
    assert buf.lines[0][0] == 4  # its seq
    # Of twelve lines dropped, only the five shown were rows.
    buf.extend(numbered([f"line {i}" for i in range(8, 20)], first_seq=9))
    assert buf.overflow() == Trim(lines=12, rows=5)
    buf.max_lines = 20
    assert buf.overflow() is None


def test_trimming_with_a_filter_removes_only_the_matching_rows_it_drops() -> None:
    buf = filtered("keep")
    buf.max_lines = 6
    buf.extend(numbered(["keep 0", "drop 1", "keep 2", "drop 3", "keep 4"]))
    show(buf)
    assert rows_of(buf) == ["keep 0", "keep 2", "keep 4"]
    buf.extend(numbered(["drop 5", "keep 6", "drop 7"], first_seq=6))
    # Lines 0-1 go: one of them (line 0) was a row.
    assert buf.overflow() == Trim(lines=2, rows=1)
    show(buf)
    assert rows_of(buf) == ["keep 2", "keep 4", "keep 6"]
    assert (buf.base, len(buf.lines)) == (2, 6)


def test_clear_drops_everything_and_numbering_goes_on() -> None:
    buf = filtered("x")
    buf.extend(numbered(["x1", "x2"]))
    show(buf)
    buf.clear()
    assert (len(buf.lines), buf.row_count, buf.base, buf.end) == (0, 0, 2, 2)
    buf.extend(numbered(["y", "x3"], first_seq=3))
    show(buf)
    assert rows_of(buf) == ["x3"]
    assert buf.base == 2
    buf.reset()
    assert (buf.base, buf.end, buf.row_count) == (0, 0, 0)


def test_lines_read_back_come_before_the_others_with_their_rows() -> None:
    buf = filtered("2")
    buf.max_lines = 5
    buf.extend(numbered([f"line {n}" for n in range(1, 21)]))
    show(buf)
    assert (rows_of(buf), buf.base) == (["line 20"], 15)
    # Lines 11-15, read back from the log: scanned when made ready, so a model
    # knows how many rows come at the top before they do.
    staged = buf.stage(runs_of(numbered([f"\x1b[1mline\x1b[0m {n}" for n in range(11, 16)], 11)))
    assert (staged.rows, rows_of(buf)) == (1, ["line 20"])
    buf.prepend(staged)
    buf.extra = 5
    assert (rows_of(buf), buf.base, len(buf.lines)) == (["line 12", "line 20"], 10, 10)
    assert [line[0] for line in buf.lines] == list(range(11, 21))
    assert (buf.row_of_seq(12), buf.row_of_seq(20), buf.row_of_seq(13)) == (0, 1, -1)
    assert buf.copy_all() == "line 12\nline 20" and buf.raw(1) == "\x1b[1mline\x1b[0m 12"
    assert buf.overflow() is None  # held over max_lines: the extra lines read back
    # The newest go to make room; later lines are numbered on from the last kept.
    buf.drop_back(4)
    assert (rows_of(buf), buf.end, buf.last_seq()) == (["line 12"], 16, 16)
    buf.extend(numbered(["line 21", "line 22"], first_seq=21))
    show(buf)
    assert rows_of(buf) == ["line 12", "line 21", "line 22"]
    buf.extra = 0  # following again: trimmed to max_lines
    show(buf)
    assert rows_of(buf) == ["line 21", "line 22"] and len(buf.lines) == 5


def test_copies_are_plain_text_of_rows_in_order() -> None:
    buf = LineBuffer(max_lines=100)
    buf.extend(numbered([f"\x1b[1mrow\x1b[0m {i}" for i in range(5)]))
    show(buf)
    assert buf.copy_all() == "\n".join(f"row {i}" for i in range(5))
    assert buf.copy_rows([3, 1, 1, 99, -1]) == "row 1\nrow 3"
    buf.set_filter(compile_filter("row [13]", regex=True, case_sensitive=True))
    show(buf)
    assert buf.copy_all() == "row 1\nrow 3"
    assert buf.copy_rows([1]) == "row 3"


def test_a_big_append_is_stripped_later_and_reads_the_same() -> None:
    texts = [f"ab\x1b[0mcd {i}" for i in range(STRIP_AT_ONCE + 1)]
    buf = LineBuffer(max_lines=len(texts))
    buf.extend(numbered(texts))
    show(buf)
    assert buf.pending  # not stripped yet
    assert buf.text(len(texts) - 1) == f"abcd {len(texts) - 1}"  # stripped on demand
    buf.strip_some(math.inf)
    assert not buf.pending
    assert buf.text(0) == "abcd 0"
    # A small append to a stripped buffer is stripped at once.
    buf.extend(numbered(["\x1b[2Ksmall"], first_seq=len(texts) + 1))
    show(buf)
    assert not buf.pending


# -- the filter -------------------------------------------------------------------


def test_plain_filters_are_substrings_case_folded_unless_case_sensitive() -> None:
    texts = ["RED alert", "red herring", "Straße", "reduce", "blue"]
    buf = filtered("red")
    buf.extend(numbered(texts))
    show(buf)
    assert rows_of(buf) == ["RED alert", "red herring", "reduce"]

    buf.set_filter(compile_filter("STRASSE", regex=False, case_sensitive=False))
    show(buf)
    assert rows_of(buf) == ["Straße"]  # casefold, not lower()

    buf.set_filter(compile_filter("red", regex=False, case_sensitive=True))
    show(buf)
    assert rows_of(buf) == ["red herring", "reduce"]

    buf.set_filter(compile_filter("re.", regex=False, case_sensitive=True))
    show(buf)
    assert rows_of(buf) == []  # "." is a character, not a wildcard


def test_regex_filters_honour_case() -> None:
    texts = ["line 10", "LINE 20", "line 21", "lines"]
    buf = filtered(r"^line \d0$", regex=True)
    buf.extend(numbered(texts))
    show(buf)
    assert rows_of(buf) == ["line 10", "LINE 20"]
    buf.set_filter(compile_filter(r"^line \d0$", regex=True, case_sensitive=True))
    show(buf)
    assert rows_of(buf) == ["line 10"]


def test_filters_see_the_text_without_ansi() -> None:
    buf = filtered("abcd")
    buf.extend(numbered(["ab\x1b[1mcd", "abc"]))
    show(buf)
    assert rows_of(buf) == ["abcd"]


def test_no_filter_text_means_every_line() -> None:
    assert compile_filter("", regex=True, case_sensitive=True) is None
    buf = filtered("zzz")
    buf.extend(numbered(["a", "b"]))
    show(buf)
    assert buf.row_count == 0
    buf.set_filter(compile_filter("", regex=False, case_sensitive=False))
    show(buf)
    assert rows_of(buf) == ["a", "b"]


def test_an_invalid_regex_says_why() -> None:
    with pytest.raises(FilterError, match=r"^invalid regular expression: missing \)"):
        compile_filter("line (", regex=True, case_sensitive=False)
    with pytest.raises(FilterError, match=r"^invalid regular expression: .*repetition size"):
        compile_filter("a{1001}", regex=True, case_sensitive=True)
    # What a backtracking engine takes and RE2 (linear time) does not: said so.
    with pytest.raises(FilterError, match=r"^invalid regular expression: lookahead .*RE2"):
        compile_filter("a(?=b)", regex=True, case_sensitive=True)
    # The same text is a fine substring.
    matcher = compile_filter("line (", regex=False, case_sensitive=False)
    assert matcher is not None
    assert matcher(["a line (1)", "line 2"], 10) == [10]


# -- the scan, in budgeted steps ----------------------------------------------------

MANY = 50_000


def many(first: int = 0, count: int = MANY) -> list[Line]:
    return numbered(
        [f"{'hit' if i % 7 == 0 else 'miss'} {i}" for i in range(first, first + count)],
        first_seq=first + 1,
    )


def test_a_long_scan_in_steps_gives_the_one_shot_result() -> None:
    one_shot = filtered("hit")
    one_shot.max_lines = MANY
    one_shot.extend(many())
    assert len(show(one_shot)) == 1

    stepped = filtered("hit")
    stepped.max_lines = MANY
    stepped.extend(many())
    steps = show(stepped, budget=ONE_CHUNK)
    assert len(steps) == math.ceil(MANY / FILTER_CHUNK) > 10
    # Each step's rows follow the last one's.
    assert all(b.first == a.last + 1 for a, b in itertools.pairwise(steps))
    assert rows_of(stepped) == rows_of(one_shot) == [f"hit {i}" for i in range(0, MANY, 7)]
    assert stepped.copy_all() == one_shot.copy_all()


def test_a_scan_is_one_chunk_per_step_and_filtering_until_done() -> None:
    buf = filtered("hit")
    buf.max_lines = MANY
    buf.extend(many())
    new = buf.take_new(ONE_CHUNK)
    assert new is not None
    assert new.first == 0
    assert list(new.lines) == list(range(0, FILTER_CHUNK, 7))
    buf.add_rows(new)
    assert buf.filtering and buf.row_count == len(new.lines)


def test_lines_appended_during_a_scan_are_scanned_after_the_others() -> None:
    buf = filtered("hit")
    buf.max_lines = 2 * MANY
    buf.extend(many())
    for _ in range(3):
        new = buf.take_new(ONE_CHUNK)
        assert new is not None
        buf.add_rows(new)
    buf.extend(many(first=MANY, count=1000))
    show(buf, budget=ONE_CHUNK)
    assert rows_of(buf) == [f"hit {i}" for i in range(0, MANY + 1000, 7)]


def test_a_refilter_during_a_scan_starts_over() -> None:
    buf = filtered("hit")
    buf.max_lines = MANY
    buf.extend(many())
    new = buf.take_new(ONE_CHUNK)
    assert new is not None
    buf.add_rows(new)
    buf.set_filter(compile_filter("hit 4", regex=False, case_sensitive=True))
    assert buf.row_count == 0 and buf.filtering
    show(buf, budget=ONE_CHUNK)
    assert rows_of(buf) == [f"hit {i}" for i in range(0, MANY, 7) if str(i).startswith("4")]


def test_lines_trimmed_during_a_scan_never_become_rows() -> None:
    buf = filtered("hit")
    buf.max_lines = MANY
    buf.extend(many())
    new = buf.take_new(ONE_CHUNK)  # the first chunk
    assert new is not None
    buf.add_rows(new)
    buf.extend(many(first=MANY, count=MANY // 2))
    trim = buf.overflow()
    assert trim == Trim(lines=MANY // 2, rows=len(new.lines))
    buf.drop_front(trim.lines)
    show(buf, budget=ONE_CHUNK)
    assert rows_of(buf) == [f"hit {i}" for i in range(MANY // 2, MANY + MANY // 2) if i % 7 == 0]


# -- storage ------------------------------------------------------------------------


def test_columns_and_chunks_keep_the_lines_a_list_would() -> None:
    """Appends of every size (as lines, and as runs of any length: few runs,
    many runs, a line each), trims, clears and filters, lines read back before
    the others and the newest dropped, with chunks and compactions small enough
    to happen often: what the buffer shows is what a plain list of the lines
    shows."""
    saved = _lines.COMPACT_MIN, _texts.TEXT_CHUNK
    _lines.COMPACT_MIN, _texts.TEXT_CHUNK = 8, 5
    try:
        rnd = random.Random(7)
        buf = LineBuffer(max_lines=40)
        held: list[Line] = []  # the reference: the lines held, oldest first
        ever: list[Line] = []  # every line appended (what a log keeps)
        seq = 0
        for step in range(400):
            count = rnd.choice([0, 1, 2, 3, 7, 30, 120])
            group = rnd.choice([1, 6])
            lines = [
                Line(
                    seq + i + 1,
                    Stream.STDERR if rnd.random() < 0.1 else Stream.STDOUT,
                    float((seq + i) // group),  # lines of one read share a time
                    f"\x1b[1mhit\x1b[0m {seq + i}" if (seq + i) % 3 == 0 else f"line {seq + i}",
                    split=rnd.random() < 0.1,
                )
                for i in range(count)
            ]
            seq += count + rnd.choice([0, 0, 0, 5])  # now and then a gap in the seqs
            if step % 2:
                buf.extend(lines)
            else:  # runs as read_runs gives them, or cut anywhere
                runs = runs_of(lines)
                if step % 4:
                    runs = [piece for run in runs for piece in cut_run(run, rnd)]
                buf.extend_runs(runs)
            held += lines
            ever += lines
            if step % 7 == 3 and held:  # read back the lines before the oldest held
                before = [ln for ln in ever if ln.seq < held[0].seq]
                before = before[len(before) - rnd.choice([1, 6, 33]) :]
                staged = buf.stage(runs_of(before))
                buf.prepend(staged)
                held[0:0] = before
                buf.extra = max(0, len(held) - buf.max_lines)
            if step % 11 == 5 and held:  # the newest go, to make room
                gone = rnd.choice([1, 4, 25])
                buf.drop_back(gone)
                del held[-gone:]
            if step % 50 == 49:
                buf.max_lines = rnd.choice([10, 40, 90])
            if step % 97 == 96:
                buf.clear()
                held.clear()
            if step % 61 == 60:
                buf.set_filter(compile_filter(rnd.choice(["", "hit", "1"]), False, False))
            show(buf, budget=rnd.choice([ONE_CHUNK, math.inf]))
            del held[: max(0, len(held) - buf.max_lines - buf.extra)]
            assert [tuple(line) for line in buf.lines] == [
                (ln.seq, ln.stream is Stream.STDERR, ln.time, ln.text, ln.split) for ln in held
            ]
            plain = [ln.text.replace("\x1b[1m", "").replace("\x1b[0m", "") for ln in held]
            assert [buf.text(i) for i in range(len(held))] == plain
            shown = [t for t in plain if buf._matcher is None or buf._matcher([t], 0)]
            assert rows_of(buf) == shown
            assert buf.copy_all() == "\n".join(shown)
            if held:
                probe = rnd.choice(held)
                row = buf.row_of_seq(probe.seq)
                expect = (
                    shown.index(plain[held.index(probe)])
                    if plain[held.index(probe)] in shown
                    else -1
                )
                assert row == expect
    finally:
        _lines.COMPACT_MIN, _texts.TEXT_CHUNK = saved


def test_the_garbage_collector_sees_no_object_per_line() -> None:
    """A full collection visits every item of every list it tracks; the buffer's
    lines are in arrays and tuples of strings, which it does not look into."""
    buf = LineBuffer(max_lines=30_000)
    buf.set_filter(compile_filter("1", regex=False, case_sensitive=False))
    for first in range(0, 40_000, 2_000):
        buf.extend(many(first=first, count=2_000))
        show(buf)
    assert len(buf.lines) == 30_000 and buf.row_count > 10_000
    gc.collect()
    tracked = [
        buf,
        *vars(buf).values(),
        buf._texts,
        *(getattr(buf._texts, s) for s in Texts.__slots__),
    ]
    visited = [len(gc.get_referents(obj)) for obj in tracked if gc.is_tracked(obj)]
    assert max(visited) < 30_000 // TEXT_CHUNK + 10, visited


# -- without Qt ---------------------------------------------------------------------

NO_QT = textwrap.dedent(
    """
    import sys, types

    import tests.no_qt  # PySide6, shiboken6 and qasync cannot be imported

    root = sys.argv[1]
    # The packages around the module register Qt types when imported: stand in
    # for them with bare packages, so that only the module and its imports run.
    for name in ("procwindow.qt", "procwindow.qt.models"):
        package = types.ModuleType(name)
        package.__path__ = [root + "/" + name.replace(".", "/")]
        sys.modules[name] = package

    import tests.qt.test_lines as module

    ran = []
    for name, test in vars(module).items():
        if name.startswith("test_") and name != "test_runs_with_qt_unimportable":
            test()
            ran.append(name)
    leaked = sorted(m for m in sys.modules if m.split(".")[0] in ("PySide6", "shiboken6", "qasync"))
    print(len(ran), "tests; qt modules:", leaked)
    """
)


def test_runs_with_qt_unimportable(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", NO_QT, str(ROOT)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    tests = [name for name in globals() if name.startswith("test_")]
    assert done.stdout.splitlines() == [f"{len(tests) - 1} tests; qt modules: []"]
