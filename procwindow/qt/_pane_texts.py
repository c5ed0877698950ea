"""What the output pane says, without Qt: its counts, its notices and its hints.

:func:`pane_texts` makes every text of the pane from plain facts (the counts of
an :class:`~procwindow.qt.models.OutputModel`, the log files, whether the view
follows); :class:`~procwindow.qt.ProcWindowModel` shows them as properties.

>>> texts = pane_texts(PaneFacts(proc_id=5, lines=120, matches=8, filtered=True))
>>> texts.line_count, texts.match, texts.empty
('8 of 120 lines', '8 matches', 'No line matches the filter')
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import NamedTuple

from procwindow.core import format_size

__all__ = [
    "MEMORY_GAUGE_FULL",
    "NO_GAUGES",
    "NO_VALUE",
    "PaneFacts",
    "PaneTexts",
    "count_text",
    "cpu_load",
    "gauge_texts",
    "memory_load",
    "pane_texts",
]

#: What a gauge reads while nothing is sampled.
NO_VALUE = "–"
#: The texts of the CPU and memory gauges while nothing is sampled.
NO_GAUGES = (NO_VALUE, NO_VALUE)
#: The resident memory that fills the memory gauge: enough to see a child grow.
MEMORY_GAUGE_FULL = 1 << 30


def count_text(count: int, one: str, many: str) -> str:
    """``"1 line"``, ``"100,000 lines"``: a count, thousands separated, and its noun.

    >>> count_text(1, "line", "lines"), count_text(100_000, "line", "lines")
    ('1 line', '100,000 lines')
    """
    return f"{count:,} {one if count == 1 else many}"


@dataclass(frozen=True, slots=True)
class PaneFacts:
    """What the pane's texts say something about."""

    proc_id: int = -1  # the proc streaming (-1: none)
    lines: int = 0  # lines held
    matches: int = 0  # rows (the lines that match the filter)
    earlier: int = 0  # lines of the proc before the oldest one held
    loadable: bool = False  # ... some of which the pane may read back from the log
    rewound: bool = False  # newest lines went for lines read back (``pending`` counts them)
    filtered: bool = False  # a filter is set
    filter_error: bool = False  # ... and it is not a valid regular expression
    current_match: int = -1  # the row of the current match (-1: none)
    logs: tuple[str, ...] = ()  # the log files that keep the lines, stdout's first
    kept_by: str = ""  # ... or the server that keeps them (an attached one's where)
    cut_lines: int = 0  # lines the disk cap cut from the middle of those logs
    cut_bytes: int = 0  # ... and their bytes
    following: bool = True  # the view follows the tail
    pending: int = 0  # ... if not: lines written since, not shown yet
    partial: bool = False  # an unfinished last line (a prompt, a progress bar) shows


class PaneTexts(NamedTuple):
    """What the output pane says (see ProcWindowModel's properties of the same names)."""

    empty: str = ""
    line_count: str = ""
    match: str = ""
    earlier: str = ""
    log_text: str = ""
    log_path: str = ""
    follow: str = ""
    load_earlier: str = ""

    def counts(self) -> tuple[str, str, str]:
        """The texts that move with the lines (every frame, under a flood)."""
        return self.line_count, self.match, self.earlier

    def others(self) -> tuple[str, str, str, str, str]:
        return self.empty, self.log_text, self.log_path, self.follow, self.load_earlier

    @property
    def open_log_tip(self) -> str:
        """The tooltip of the button that opens ``log_path``."""
        return f"Open the full log with its application: {self.log_path}"


def pane_texts(facts: PaneFacts) -> PaneTexts:
    """Every text of the output pane for ``facts``."""
    notice, log_text, log_path = _earlier_texts(facts)
    return PaneTexts(
        _empty_text(facts),
        _line_count_text(facts),
        _match_text(facts),
        notice,
        log_text,
        log_path,
        _follow_text(facts),
        "Show earlier" if facts.earlier and facts.loadable else "",
    )


def _empty_text(facts: PaneFacts) -> str:
    if facts.proc_id < 0:
        return "Select a process and press Enter to stream its output"
    return "No line matches the filter" if facts.filtered else "No output yet"


def _line_count_text(facts: PaneFacts) -> str:
    """``120 lines``, ``8 of 120 lines`` while filtered; with earlier lines not
    held, ``last 100,000 of 30,000,000 lines`` or ``8 of the last 100,000 lines``;
    with the newest gone for lines read back, ``200,000 of 30,000,000 lines``
    or ``8 of 200,000 held of 30,000,000 lines``."""
    held, earlier = facts.lines, facts.earlier
    if facts.rewound:
        total = count_text(earlier + held + facts.pending, "line", "lines")
        if facts.filtered:
            return f"{facts.matches:,} of {held:,} held of {total}"
        return f"{held:,} of {total}"
    if not earlier:
        lines = count_text(held, "line", "lines")
        if facts.filtered:
            return f"{facts.matches:,} of {lines}"
        return f"{lines} + 1 unfinished" if facts.partial else lines
    if facts.filtered:
        return f"{facts.matches:,} of the last {count_text(held, 'line', 'lines')}"
    return f"last {held:,} of {count_text(earlier + held, 'line', 'lines')}"


def _match_text(facts: PaneFacts) -> str:
    """``1 match``, ``8 matches``, ``3 of 120`` once a match is current, or ``invalid``."""
    if facts.filter_error:
        return "invalid"
    if facts.current_match >= 0:
        return f"{facts.current_match + 1:,} of {facts.matches:,}"
    return count_text(facts.matches, "match", "matches")


def _earlier_texts(facts: PaneFacts) -> tuple[str, str, str]:
    """What became of the lines the pane no longer holds, the log files that keep
    them (``/logs/5.stdout.log, 5.stderr.log``) and the one to open; "" each
    when the pane holds every line."""
    if not facts.earlier:
        return "", "", ""
    logs = facts.logs
    older = count_text(facts.earlier, "earlier line", "earlier lines")
    where = "the log:" if len(logs) == 1 else "the logs:"
    if facts.kept_by:
        # The server's log, on its side (its `out` reads it): named as a log path
        # is, so that the words stay whole and the server's address gives way.
        if facts.cut_lines:
            cut = count_text(facts.cut_lines, "line", "lines")
            notice = (
                f"{older} are not shown here — the server keeps the first and last in its"
                f" log; log_cap cut {cut} ({format_size(facts.cut_bytes)}) between them:"
            )
        else:
            notice = f"{older} are not shown here — the server keeps them in its log:"
        return notice, facts.kept_by, ""
    if not logs:
        return f"{older} are not shown here, and no log file keeps them", "", ""
    if facts.cut_lines:
        # What is on disk: the log's head and tail, and a marker line where it was cut.
        cut = count_text(facts.cut_lines, "line", "lines")
        kept = (
            f"the log keeps the first and last; log_cap cut {cut}"
            f" ({format_size(facts.cut_bytes)}) between them (marked there):"
        )
        if facts.filtered:
            notice = f"The filter sees {_held(facts)}; of {older}, {kept}"
        else:
            notice = f"{older} are not shown here — {kept}"
    elif facts.filtered:
        notice = f"The filter sees {_held(facts)}; {older} are in {where}"
    else:
        notice = f"{older} are not shown here — in {where}"
    log_text = ", ".join([logs[0], *(os.path.basename(p) for p in logs[1:])])
    return notice, log_text, logs[0]


def _held(facts: PaneFacts) -> str:
    """The lines held, as a filter's notice names them: the last, unless the
    newest went for lines read back."""
    return f"{facts.lines:,} lines" if facts.rewound else f"the last {facts.lines:,}"


def _follow_text(facts: PaneFacts) -> str:
    if facts.proc_id < 0:
        return ""
    if facts.following:
        return "● following"
    if facts.pending:
        # Lines written since, or (the newest gone for lines read back) after those held.
        kind = "later" if facts.rewound else "new"
        lines = count_text(facts.pending, f"{kind} line", f"{kind} lines")
        return f"paused · {lines} · End to follow"
    return "paused · End to follow"


def gauge_texts(cpu_percent: float, rss_text: str) -> tuple[str, str]:
    """The texts of the CPU and memory gauges: ``12%`` (rounded half up, as the
    gauge always showed it) and the resident memory (``12.3 MiB``).

    >>> gauge_texts(12.5, "1.0 MiB")
    ('13%', '1.0 MiB')
    """
    return f"{math.floor(cpu_percent + 0.5)}%", rss_text


def cpu_load(cpu_percent: float) -> float:
    """How full the CPU gauge is: one core's worth fills it (the bar clamps)."""
    return cpu_percent / 100


def memory_load(rss: int) -> float:
    """How full the memory gauge is: :data:`MEMORY_GAUGE_FULL` fills it (the bar clamps)."""
    return rss / MEMORY_GAUGE_FULL
