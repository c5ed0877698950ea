"""A state directory that is full when a process is spawned: the spawn goes on and
so does capture (in memory); history turns off with the disk's error, as for every
other history failure, and ids stay unique."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from procwindow import Supervisor

from ..core.helpers import until
from .test_watchdog_faults import _fill, tmpfs


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs: room for a history database, then filled."""
    yield from tmpfs(tmp_path, "1m")


def test_a_full_state_dir_at_the_first_spawn_keeps_capture_going(small_disk: Path) -> None:
    async def main() -> None:
        async with Supervisor(state_dir=small_disk / "state") as sup:
            assert sup.history_enabled
            _fill(small_disk, "filler")
            p = await sup.spawn(["echo", "still captured"], session="s", agent="a")
            await sup.wait(p.id)
            await until(lambda: not sup.get(p.id).output_open, what="its output read")
            assert [line.text for line in sup.read(p.id).lines] == ["still captured"]
            assert sup.history_error is not None
            assert "No space left on device" in sup.history_error
            assert sup.get(p.id).log_error is not None  # its log could not be written
            q = await sup.spawn(["echo", "next"], session="s", agent="a")
            assert q.id > p.id
            await sup.wait(q.id)

    asyncio.run(main())
