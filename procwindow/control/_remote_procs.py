"""RemoteProc: a proc of a remote supervisor, as RemoteSupervisor's mirror holds it;
``_Procs``: the procs held, live and past, and who waits for one to start or end.

Apart from the supervisor because these are records updated in place: RemoteProc
reads the protocol's proc records (``procs``, ``history``) and knows nothing of
the link or of the events that change it (:mod:`._remote_sync` applies those).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from ..core import DEFAULT_TOOL, ExitInfo, ExitReason, Proc, ProcState, SpawnOptions
from ..core.rules import check_signal
from ._protocol import command_run_from_json

__all__ = ["RemoteProc"]


def _exit_of(data: Any) -> ExitInfo | None:
    if not isinstance(data, Mapping):
        return None
    return ExitInfo(
        int(data["code"]),
        data.get("signal"),
        ExitReason(data["reason"]),
        float(data.get("runtime") or 0.0),
    )


class RemoteProc(Proc):
    """A proc of a remote supervisor, as its mirror has it: a :class:`Proc`.

    Updated in place by the events, like an in-process Proc. ``disconnected``
    is true while the link to its supervisor is down (its state is then the
    last one known). ``env``, ``graceful_timeout`` and ``options.ready`` are
    not sent by the server (None); ``output_bytes`` and ``held_bytes`` are 0.
    """

    __slots__ = ("_cut_bytes", "_cut_lines", "_disconnected", "_last", "_log_err", "_on")

    def __init__(self, record: Mapping[str, Any], now_mono: float) -> None:
        super().__init__(
            proc_id=int(record["id"]),
            os_pid=int(record.get("os_pid") or 0),
            argv=tuple(record.get("argv") or ()),
            session=str(record["session"]),
            agent=str(record["agent"]),
            tool=str(record.get("tool") or DEFAULT_TOOL),
            cwd=record.get("cwd"),
            env=None,
            started_at=float(record.get("started_at") or 0.0),
            started_mono=now_mono,
            options=SpawnOptions(
                timeout=record.get("timeout"),
                merge_stderr=bool(record.get("merge_stderr")),
                stdin=bool(record.get("stdin")),
                pty=_size(record.get("pty")),
                stop_signal=_signal(record.get("stop_signal")),
                stop_command=_argv(record.get("stop_command")),
            ),
        )
        self._disconnected = False
        self._last = 0
        self._on = True
        self._log_err: str | None = None
        self._cut_lines = 0
        self._cut_bytes = 0
        self._take(record, now_mono)

    def _take(self, record: Mapping[str, Any], now_mono: float) -> None:
        """The state of a ``procs`` or ``history`` record."""
        exit_ = _exit_of(record.get("exit"))
        runtime = exit_.runtime if exit_ is not None else float(record.get("runtime") or 0.0)
        self._started_mono = now_mono - runtime
        self._exit = exit_
        self._state = ProcState(record.get("state", "running"))
        self._command_run = command_run_from_json(record.get("command_run"))
        if exit_ is not None:
            self._state = ProcState.EXITED
            self._ended_mono = now_mono
            self._ended_at = record.get("ended_at")
        else:
            self._ended_mono = self._ended_at = None
        self._ready = bool(record.get("ready", True))
        self._on = bool(record.get("live", True))
        self._log_err = record.get("log_error")
        self._cut_lines = int(record.get("cut_lines") or 0)
        self._cut_bytes = int(record.get("cut_bytes") or 0)
        last = record.get("last_seq")
        if isinstance(last, int):
            self._last = max(self._last, last)

    def _as_started(self) -> None:
        """Back to the state of its start event (its record may be newer)."""
        self._state, self._exit = ProcState.RUNNING, None
        self._ended_mono = self._ended_at = None

    def _exited(self, info: ExitInfo, at: float | None) -> None:
        self._exit = info
        self._state = ProcState.EXITED
        self._ended_mono = self._started_mono + info.runtime
        self._ended_at = at

    @property
    def disconnected(self) -> bool:
        """True while the link to its supervisor is down (the state shown is the last known)."""
        return self._disconnected

    @property
    def live(self) -> bool:
        return self._on

    @property
    def last_seq(self) -> int:
        return self._last

    @property
    def log_error(self) -> str | None:
        return self._log_err

    @property
    def cut_lines(self) -> int:
        return self._cut_lines

    @property
    def cut_bytes(self) -> int:
        return self._cut_bytes

    @property
    def output_open(self) -> bool:
        return self.running

    @property
    def output_bytes(self) -> int:
        return 0

    @property
    def held_bytes(self) -> int:
        return 0

    def __repr__(self) -> str:
        extra = f" code={self._exit.code}" if self._exit else ""
        link = " disconnected" if self._disconnected else ""
        return f"<RemoteProc {self._id} {self._tool} {self._state} pid={self._os_pid}{extra}{link}>"


#: Past procs (dismissed, or from the history) remembered for ``get``.
_PAST_PROCS = 10_000

Waiters = dict[int, list[asyncio.Future[Any]]]


class _Procs:
    """The procs held here: the live ones, the past ones (dismissed, or listed
    by the history) remembered for ``get``, and the futures of those waiting for
    a proc's start (``started``) or exit (``exits``) to be applied."""

    def __init__(self) -> None:
        self.live: dict[int, RemoteProc] = {}
        self.past: OrderedDict[int, RemoteProc] = OrderedDict()
        self.started: Waiters = {}
        self.exits: Waiters = {}

    def find(self, proc_id: int) -> RemoteProc | None:
        """The proc, live or past; None if it is not held."""
        return self.live.get(proc_id) or self.past.get(proc_id)

    def mark(self, *, disconnected: bool) -> None:
        for p in (*self.live.values(), *self.past.values()):
            p._disconnected = disconnected

    def remember(self, p: RemoteProc) -> None:
        self.past[p.id] = p
        self.past.move_to_end(p.id)
        while len(self.past) > _PAST_PROCS:
            self.past.popitem(last=False)

    async def wait(self, waiters: Waiters, proc_id: int, timeout: float | None) -> Any:
        """What ``resolve`` gives the waiters of ``proc_id``; TimeoutError after ``timeout``."""
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        waiters.setdefault(proc_id, []).append(fut)
        return await asyncio.wait_for(asyncio.shield(fut), timeout)

    @staticmethod
    def resolve(waiters: Waiters, proc_id: int, value: Any) -> None:
        for fut in waiters.pop(proc_id, ()):
            if not fut.done():
                fut.set_result(value)

    def end_waits(self) -> None:
        """Closed: every waiter is told None."""
        for waiters in (self.started, self.exits):
            for proc_id in list(waiters):
                self.resolve(waiters, proc_id, None)


def _signal(value: Any) -> int | None:
    """A stop signal as a record gives it (``SIGINT``), or None (SIGTERM)."""
    try:
        return check_signal(value) if value else None
    except ValueError:  # a signal this host has no name for
        return None


def _argv(value: Any) -> tuple[str, ...] | None:
    """A stop command as a record gives it (a list of strings), or None."""
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None


def _size(value: Any) -> tuple[int, int] | None:
    """A terminal's size as a record gives it ([rows, cols]), or None."""
    if isinstance(value, list) and len(value) == 2:
        return int(value[0]), int(value[1])
    return None
