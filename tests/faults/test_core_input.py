"""Bad values at the library's door: a clear error, and nothing starts.

Shutdown is bounded because every grace is finite and capped; reports stay
one row per proc, whatever bytes a command line holds.
"""

from __future__ import annotations

import asyncio
import math

import pytest

from procwindow import InvalidArgv, InvalidScope, Supervisor
from procwindow.core import MAX_GRACEFUL_TIMEOUT, check_graceful_timeout

BAD_GRACES = [math.inf, -math.inf, math.nan, float("1e999"), 10**400, -1, -0.001, True, "5"]


@pytest.mark.parametrize("grace", BAD_GRACES, ids=repr)
def test_an_unbounded_supervisor_grace_is_refused(tmp_path, grace):
    with pytest.raises(ValueError, match="graceful_timeout"):
        Supervisor(log_dir=tmp_path, graceful_timeout=grace)


@pytest.mark.parametrize("grace", [*BAD_GRACES, MAX_GRACEFUL_TIMEOUT + 1], ids=repr)
@pytest.mark.promise("Guarantees and limits: Shutdown is bounded")
def test_an_unbounded_proc_grace_is_refused_and_nothing_starts(tmp_path, grace):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            with pytest.raises(ValueError, match="graceful_timeout"):
                await sup.spawn(["true"], session="s", agent="a", graceful_timeout=grace)
            assert sup.procs() == []

    asyncio.run(main())


def test_the_largest_grace_is_accepted():
    assert check_graceful_timeout(MAX_GRACEFUL_TIMEOUT) == MAX_GRACEFUL_TIMEOUT
    assert check_graceful_timeout(0) == 0.0


HOSTILE = ["echo", "a\tb", "c\nd", "\x1b[2J\x1b]0;pwned\x07", "e\u2028f", "g\x85h", "\u202eevil"]


@pytest.mark.promise("Guarantees and limits: Reports are one row per proc")
def test_control_characters_in_argv_never_reach_the_reports_raw(run, tmp_path):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            procs = [await sup.spawn(HOSTILE, session="s", agent="a") for _ in range(3)]
            for p in procs:
                await sup.wait(p.id)
            idx = sup.idx()
            rows = idx.splitlines()  # splits on \\x85, \\u2028 and friends too
            assert len(rows) == 1 + len(procs)
            assert all(row.count("\t") == 6 for row in rows)
            top = sup.top()
            assert len(top.splitlines()) == 1 + len(procs)
            for text in (idx, top):
                assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
            assert "\\x1b[2J" in idx and "\\u2028" in idx and "\\u202e" in idx
            assert procs[0].argv == tuple(HOSTILE)  # the child got them as given

    run(main())


@pytest.mark.parametrize("name", ["a\x1bb", "tab\there", "nl\n", "bell\x07", "sep\u2028"])
@pytest.mark.promise("Guarantees and limits: Reports are one row per proc")
def test_control_characters_in_scope_names_are_refused(tmp_path, name):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            with pytest.raises(InvalidScope):
                await sup.spawn(["true"], session=name, agent="a")
            with pytest.raises(InvalidScope):
                await sup.spawn(["true"], session="s", agent=name)
            assert sup.procs() == []

    asyncio.run(main())


@pytest.mark.parametrize("tool", ["", "a\x1bb", "x\ny", "\u2028"])
def test_a_tool_name_must_be_printable(tmp_path, tool):
    async def main():
        async with Supervisor(log_dir=tmp_path) as sup:
            with pytest.raises(InvalidArgv, match="tool"):
                await sup.spawn(["true"], session="s", agent="a", tool=tool)

    asyncio.run(main())
