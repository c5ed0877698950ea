"""A line of output as HTML with a filter's matches marked, its ANSI colours kept.

No Qt here, as in :mod:`procwindow.qt.ansi`, whose rendering this extends: the
visible text of a line (its escape sequences rendered as styles, see
:func:`~procwindow.qt.ansi.to_html`) is cut where a match starts or ends, and
each marked piece is wrapped in a ``<span>`` with a background colour. A QML
``Text`` draws such a background only as ``Text.RichText`` (``StyledText``
ignores it), so the output pane switches its lines to ``RichText`` while a
filter is set, and only then.

Marks are ``(start, end)`` offsets into the line's plain text
(:func:`~procwindow.qt.ansi.strip_ansi`), which is the text the filter saw:
``parse`` guarantees that its spans join to exactly that text.

>>> marked_html("a <b> \x1b[1mb\x1b[0m", [(3, 4), (6, 7)], "#80ffc107")
'a &lt;<span style="background-color:#80ffc107">b</span>&gt; \
<span style="background-color:#80ffc107"><b>b</b></span>'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

# The escaping and styling of a run of text are ansi's own, so that a marked line
# reads exactly as it does unmarked.
from .ansi import LIGHT_PALETTE, Palette, _html_text, _wrap, parse, to_html

__all__ = ["marked_html", "time_html"]


def marked_html(
    text: str,
    marks: Sequence[tuple[int, int]],
    color: str,
    palette: Palette = LIGHT_PALETTE,
) -> str:
    """``text`` as HTML (as ``ansi.to_html`` renders it), ``marks`` on a ``color`` background.

    ``marks`` are sorted, non-overlapping ``(start, end)`` offsets into the
    plain text; ``color`` is any CSS colour Qt reads (``#aarrggbb`` for a
    translucent one). Inside a mark the text keeps its ANSI attributes (bold,
    underline…) but not its ANSI colours nor ``inverse``: the mark's colour
    shows behind the line's own text colour, which reads on it (red on amber
    did not). Text is escaped (``<``, ``>``, ``&``), runs of spaces and tabs
    keep their width, as in ``to_html``.
    """
    if not marks:
        return to_html(text, palette)
    spans, _ = parse(text)
    out: list[str] = []
    column = 0  # for tab stops, across pieces
    pos = 0  # where the current span starts, in the plain text
    mark = 0  # the first mark that may still reach past pos
    opening = f'<span style="background-color:{color}">'
    for span in spans:
        end = pos + len(span.text)
        cut = pos
        while cut < end:
            while mark < len(marks) and marks[mark][1] <= cut:
                mark += 1
            inside = mark < len(marks) and marks[mark][0] <= cut
            if inside:
                stop = min(end, marks[mark][1])
            else:
                stop = min(end, marks[mark][0]) if mark < len(marks) else end
            body, column = _html_text(span.text[cut - pos : stop - pos], column)
            if inside:
                style = dataclasses.replace(span.style, fg=None, bg=None, inverse=False)
                out.append(f"{opening}{_wrap(body, style, palette)}</span>")
            else:
                out.append(_wrap(body, span.style, palette))
            cut = stop
        pos = end
    return "".join(out)


def time_html(time_text: str, color: str) -> str:
    """The time a line arrived, in ``color``, with the space that separates it from the line.

    >>> time_html("12:00:00.000", "#6f737a")
    '<font color="#6f737a">12:00:00.000</font>&nbsp;'
    """
    return f'<font color="{color}">{time_text}</font>&nbsp;'
