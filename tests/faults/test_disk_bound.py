"""Disk stays within ``history_bytes`` when nobody dismisses: finished procs still
listed give their logs up, oldest first, and say so; the ones still running keep
theirs; a prune held back by its interval runs once the interval is over, with no
new event to trigger it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from procwindow import Supervisor
from procwindow.core import _archive

from ..core.helpers import py, until

KIB = 1024
#: ~100 KB of output each.
CHILD = "import sys\nsys.stdout.write(('x' * 99 + '\\n') * 1000)"


def _disk(path: Path) -> int:
    return sum(f.stat().st_size for f in path.iterdir() if f.is_file())


@pytest.mark.promise("History: Disk is bounded")
def test_finished_procs_nobody_dismissed_stay_within_history_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_archive, "PRUNE_INTERVAL", 0.5)
    bound = 1024 * KIB
    logs = tmp_path / "logs"

    async def main() -> None:
        async with Supervisor(
            history_bytes=bound, log_dir=logs, state_dir=tmp_path / "state", ring_lines=100
        ) as sup:
            runner = await sup.spawn(["sleep", "60"], session="s", agent="a")
            procs = [await sup.spawn(py(CHILD), session="s", agent="a") for _ in range(30)]
            for p in procs:
                await sup.wait(p.id)
            await until(lambda: not any(sup.get(p.id).output_open for p in procs))
            # The burst of exits came within one interval: the prune that was held
            # back runs by itself once it is over.
            await until(lambda: _disk(logs) <= bound + 150 * KIB, timeout=10, what="a prune")
            listed = {p.id for p in sup.procs()}
            assert {p.id for p in procs} | {runner.id} <= listed  # rows stay
            pruned = [p for p in procs if sup.get(p.id).log_error]
            kept = [p for p in procs if not sup.get(p.id).log_error]
            assert pruned and kept
            assert max(p.id for p in pruned) < min(p.id for p in kept)  # oldest first
            assert all("history_bytes" in (sup.get(p.id).log_error or "") for p in pruned)
            assert sup.get(runner.id).log_error is None
            # A pruned proc reads what is still in memory, and counts the rest dropped.
            old = sup.read(pruned[0].id)
            assert len(old.lines) <= 100 and old.dropped == 1000 - len(old.lines)
            assert [h.line async for h in sup.search("x" * 99, proc=pruned[0].id)] == old.lines
            # A kept one reads every line from its log.
            assert len(sup.read(kept[-1].id).lines) == 1000
            sup.dismiss(pruned[0].id)
            await sup.term(runner.id)

    asyncio.run(main())
