"""The MCP ``read`` tool's text, made from what the server sends: an ``out`` reply's
``lines`` in the run form (``runs_json``), runs and line objects mixed."""

from __future__ import annotations

import json
from typing import Any

from procwindow.control._protocol import runs_json
from procwindow.core import LineRun, Stream
from procwindow.mcp._text import byte_size, format_lines

OUT, ERR = Stream.STDOUT, Stream.STDERR


def _wire(*runs: LineRun, cuts: dict[int, int] | None = None) -> list[Any]:
    """``runs`` as the client receives them."""
    return json.loads(b"[" + runs_json(runs, cuts) + b"]")


def test_runs_and_line_objects_read_in_order_with_their_marks() -> None:
    elements = _wire(
        LineRun(1, OUT, 1.0, ["a", "b"]),
        LineRun(3, ERR, 1.0, ["oops", "again"]),
        LineRun(5, OUT, 1.0, ["after the gap", "c"]),
        LineRun(7, OUT, 1.0, ["Continue? "], partial=True),
        cuts={5: 12},
    )
    assert any(type(e) is dict for e in elements) and any(type(e) is list for e in elements)
    text, shown, last = format_lines(elements)
    assert text.split("\n") == [
        "a",
        "b",
        "[stderr] oops",
        "[stderr] again",
        "[… 12 lines missing …]",
        "after the gap",
        "c",
        "[partial] Continue? ",
    ]
    # The partial line comes again once complete: the cursor stays before it.
    assert (shown, last) == (7, 6)


def test_a_run_larger_than_the_budget_is_cut_between_lines() -> None:
    texts = [f"line {i:04d} é" for i in range(1000)]  # 13 bytes each, with the newline
    budget = 13 * 100 + 5
    text, shown, last = format_lines(_wire(LineRun(41, OUT, 1.0, texts)), budget)
    assert text.split("\n") == texts[:100]
    assert (shown, last) == (100, 140)
    assert byte_size(text) + 1 <= budget


def test_lines_that_fill_the_budget_exactly_all_show() -> None:
    texts = ["x" * 9] * 10  # 10 bytes each, with the newline
    assert format_lines(_wire(LineRun(1, ERR, 1.0, texts)), 10 * 19)[1:] == (10, 10)
    assert format_lines(_wire(LineRun(1, ERR, 1.0, texts)), 10 * 19 - 1)[1:] == (9, 9)


def test_a_first_line_alone_over_the_budget_is_cut_and_said_so() -> None:
    elements = _wire(LineRun(3, OUT, 1.0, ["y" * 5000, "next"]))
    text, shown, last = format_lines(elements, 1000)
    first, after = text.split("\n")
    assert first == "y" * 936 + " [… 4064 more bytes of this line]"
    assert after == "next" and (shown, last) == (2, 4)  # what still fits comes after it
    assert byte_size(text) + 1 <= 1000
