"""Many children at once: no thread per child, few fds per child."""

from __future__ import annotations

import asyncio
import os
import threading

from procwindow import ExitReason, Supervisor
from procwindow.core._starter import IDLE_LINGER


def _fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_500_concurrent_children_spawned_and_closed(run, tmp_path):
    async def main():
        fds0, threads0 = _fd_count(), threading.active_count()
        sup = Supervisor(log_dir=tmp_path, graceful_timeout=2)
        async with sup:
            # The first child also opens the supervisor's own fds (/dev/null, the
            # watchdog's pipe, the state file): count per child after it.
            procs = [await sup.spawn(["sleep", "60"], session="s", agent="a0")]
            fds1 = _fd_count()
            for i in range(499):
                procs.append(await sup.spawn(["sleep", "60"], session="s", agent=f"a{i % 7}"))
            per_child = (_fd_count() - fds1) / 499
            assert per_child <= 3, per_child
            # The spawn thread stays for the next spawn a moment, then goes.
            assert threading.active_count() == threads0 + 1
            await asyncio.sleep(IDLE_LINGER + 0.5)
            assert threading.active_count() == threads0
            assert len({p.os_pid for p in procs}) == 500
        assert all(p.exit is not None and p.exit.reason is ExitReason.TERMINATED for p in procs)
        assert _fd_count() == fds0
        assert threading.active_count() == threads0

    run(main())
