"""Records that cross the supervisor's boundary: states, exit info, lines, events, stats."""

from __future__ import annotations

import enum
import time
from dataclasses import dataclass
from typing import NamedTuple, Protocol

__all__ = [
    "SYSTEM_CLOCK",
    "Clock",
    "Event",
    "EventKind",
    "ExitInfo",
    "ExitReason",
    "Line",
    "ProcState",
    "ProcStats",
    "ReadBatch",
    "Stream",
]


class ProcState(enum.StrEnum):
    """Where a proc is in its life: ``starting → running → stopping → exited``."""

    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"
    EXITED = "exited"


class Stream(enum.StrEnum):
    """Which pipe a line came from."""

    STDOUT = "stdout"
    STDERR = "stderr"


class ExitReason(enum.StrEnum):
    """Why a proc ended.

    ``exited``: it exited with code 0 on its own. ``failed``: it exited on its own
    with a non-zero code, or died of a signal nobody here sent. ``terminated``: it
    ended after ``term``/``interrupt``/``signal``. ``killed``: SIGKILL from ``kill``.
    ``escalated``: it ignored SIGTERM for ``graceful_timeout`` and got SIGKILL.
    ``lost``: its supervisor died before it exited (found in the history; the
    watchdog stopped it; its exit status was never seen, so the code is 255).
    """

    EXITED = "exited"
    FAILED = "failed"
    TERMINATED = "terminated"
    KILLED = "killed"
    ESCALATED = "escalated"
    LOST = "lost"


@dataclass(frozen=True, slots=True)
class ExitInfo:
    """How a proc ended.

    ``code`` follows the shell convention: the exit status, or ``128 + signal``
    when a signal ended it (then ``signal`` holds the signal number).
    ``runtime`` is in seconds.
    """

    code: int
    signal: int | None
    reason: ExitReason
    runtime: float


class Line(NamedTuple):
    """One line of output.

    ``seq`` is one counter across stdout and stderr, so sorting by it gives the
    exact merged order. ``split`` is true for a piece of a line longer than
    the line cap; the line continues in the next seq of the same stream.
    """

    seq: int
    stream: Stream
    time: float
    text: str
    split: bool = False


@dataclass(frozen=True, slots=True)
class ReadBatch:
    """The answer to ``Supervisor.read``.

    ``lines`` have ``seq > since``; ``dropped`` counts lines after ``since``
    that are gone for good: cut from the middle by the per-proc disk cap, or
    fallen off the in-memory ring when there is no history on disk to read them
    from. ``cursor`` is the value to pass as ``since`` next time; ``eof`` is
    true once both pipes are closed and every line has been returned.
    """

    lines: list[Line]
    dropped: int
    cursor: int
    eof: bool


class EventKind(enum.StrEnum):
    """The last token of an event topic.

    ``stopping``: ``term`` or ``kill`` was asked for; ``exit`` follows.
    ``missed``: not about a proc; the subscriber fell behind and ``Event.missed``
    events matching its pattern were dropped (topic ``missed``, proc 0).
    """

    START = "start"
    STOPPING = "stopping"
    EXIT = "exit"
    OUTPUT = "output"
    DISMISS = "dismiss"
    MISSED = "missed"


@dataclass(frozen=True, slots=True)
class Event:
    """One supervisor event, delivered to subscribers whose pattern matches ``topic``.

    Topic: ``session.{session}.agent.{agent}.proc.{kind}``. Fields that do not
    apply to a kind are ``None``. ``missed`` counts events this subscriber lost
    just before this one because its queue was full.
    """

    topic: str
    kind: EventKind
    proc_id: int
    session: str
    agent: str
    time: float
    os_pid: int | None = None
    tool: str | None = None
    cmd: str | None = None
    code: int | None = None
    signal: int | None = None
    reason: ExitReason | None = None
    runtime: float | None = None
    stream: Stream | None = None
    first_seq: int | None = None
    last_seq: int | None = None
    missed: int = 0


@dataclass(frozen=True, slots=True)
class ProcStats:
    """Resource use of a proc's whole tree (the proc and its live descendants)."""

    cpu_percent: float
    rss: int
    io_read: int
    io_write: int
    threads: int
    descendants: int


class Clock(Protocol):
    """Where the supervisor gets time from (a seam for tests)."""

    def time(self) -> float:
        """Wall-clock seconds since the epoch."""
        ...

    def monotonic(self) -> float:
        """Monotonic seconds, for runtimes."""
        ...


class _SystemClock:
    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()


SYSTEM_CLOCK: Clock = _SystemClock()
