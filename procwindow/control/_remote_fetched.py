"""What a RemoteSupervisor answers from its last fetch: the server's history (per
filters) and its procs' resource use, answered at once and fetched again in
the background, since the window asks for them from slots and timers.

A part of RemoteSupervisor over :mod:`._remote_calls`.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from ..core import ProcNotFound, ProcStats, SupervisorClosed
from ._links import Disconnected
from ._protocol import HistoryUnavailable
from ._remote_calls import _Calls
from ._remote_procs import RemoteProc, _Procs
from .client import ServerError

#: Seconds a history answer is served before it is fetched again.
_HISTORY_TTL = 1.0
_ZERO_STATS = ProcStats(0.0, 0, 0, 0, 0, 0)


class _Fetched:
    """The history answers and resource use last fetched."""

    def __init__(self, calls: _Calls, procs: _Procs) -> None:
        self._calls = calls
        self._procs = procs
        self.history_on = False
        self._history: dict[tuple[Any, ...], tuple[float, list[int]]] = {}
        self._stats: dict[int, ProcStats] = {}
        self._stats_wanted: set[int] = set()
        self._stats_off = False

    async def probe(self) -> None:
        """Whether the server keeps a history."""
        try:
            await self._calls.call("history", limit=1)
            self.history_on = True
        except HistoryUnavailable:
            self.history_on = False

    def history(self, key: tuple[Any, ...]) -> list[RemoteProc]:
        """The last answer to these filters; fetched again if it is old."""
        held = self._history.get(key)
        if (held is None or time.monotonic() - held[0] > _HISTORY_TTL) and self._calls.connected:
            self._history[key] = (time.monotonic(), held[1] if held else [])
            self._calls.spawn_task(self._fetch_history(key), "procwindow remote history")
        ids = held[1] if held else []
        return [p for pid in ids if (p := self._procs.find(pid)) is not None]

    async def _fetch_history(self, key: tuple[Any, ...]) -> None:
        session, agent, tool, reason, since, limit, command = key
        try:
            records = await self._calls.call(
                "history",
                session=session,
                agent=agent,
                tool=tool,
                reason=reason,
                since=since,
                limit=limit,
                command=command,
            )
        except HistoryUnavailable:
            self.history_on = False
            records = []
        except (Disconnected, SupervisorClosed):
            return
        now = time.monotonic()
        ids = []
        for record in records:
            pid = int(record["id"])
            ids.append(pid)
            if pid in self._procs.live:
                continue
            p = self._procs.past.get(pid)
            if p is None:
                p = RemoteProc(record, now)
            else:
                p._take(record, now)
            self._procs.remember(p)
        old = self._history.get(key)
        self._history[key] = (now, ids)
        if old is None or old[1] != ids or records:
            self._calls.notify("history")

    def stats(self, proc_id: int) -> ProcStats:
        """The resource use last fetched (zeros at first); fetched again at once."""
        if proc_id not in self._procs.live:
            raise ProcNotFound(proc_id)
        if not self._stats_off and self._calls.connected:
            if not self._stats_wanted:
                self._calls.spawn_task(self._fetch_stats(), "procwindow remote stats")
            self._stats_wanted.add(proc_id)
        return self._stats.get(proc_id, _ZERO_STATS)

    def forget(self, proc_id: int) -> None:
        """The proc left the live view."""
        self._stats.pop(proc_id, None)

    async def _fetch_stats(self) -> None:
        await asyncio.sleep(0)  # the ids asked for in this turn, in one request
        ids, self._stats_wanted = sorted(self._stats_wanted), set()
        try:
            reply = await self._calls.call("stats", procs=ids)
        except ServerError:
            self._stats_off = True  # an older server
            return
        except (Disconnected, SupervisorClosed):
            return
        for item in reply.get("stats", ()):
            pid = item.pop("proc")
            if pid in self._procs.live:
                self._stats[pid] = ProcStats(**item)
