"""How much a RemoteSupervisor asks for per ``out`` request: about 2 MiB of text,
whatever the lines' length, so a flood of short lines takes few round trips and
over-long lines never make a reply the client refuses (READ_LIMIT)."""

from __future__ import annotations

from procwindow.control._remote_mirror import FETCH_LINES, Mirror
from procwindow.control.aclient import READ_LIMIT
from procwindow.core import LINE_MAX, LineRun, Stream


def _run(first: int, count: int, length: int) -> LineRun:
    return LineRun(first, Stream.STDOUT, 1.0, ["x" * length] * count)


def test_requests_are_sized_by_the_text_they_bring() -> None:
    m = Mirror(1, 0)
    # The first request, of lines of unknown length, stays far under the client's limit.
    assert m.fetch * (LINE_MAX + 64) * 6 < READ_LIMIT  # JSON may escape a byte into 6
    m.pace([_run(1, 128, 80)])
    assert m.fetch == FETCH_LINES  # short lines: as many as a request takes
    m.pace([_run(129, 40, LINE_MAX)])
    assert 16 <= m.fetch <= 64 and m.fetch * LINE_MAX <= 4 * 1024 * 1024
    m.pace([])  # an empty reply says nothing of the lines' length
    assert 16 <= m.fetch <= 64
    m.pace([_run(169, 1000, 1000)])
    assert 1000 < m.fetch < 4000
