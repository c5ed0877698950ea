"""Records that cross the supervisor's boundary: states, exit info, lines, events, stats."""

from __future__ import annotations

import enum
import gc
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import repeat
from typing import NamedTuple, Protocol

__all__ = [
    "SYSTEM_CLOCK",
    "Clock",
    "CommandRun",
    "Event",
    "EventKind",
    "ExitEvent",
    "ExitInfo",
    "ExitReason",
    "Line",
    "LineRun",
    "ListeningPort",
    "OutputEvent",
    "PartialEvent",
    "Phase",
    "PhaseEvent",
    "ProcState",
    "ProcStats",
    "ReadBatch",
    "RunBatch",
    "StartEvent",
    "Stream",
    "TreeProcess",
    "lines_of",
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
    ``escalated``: it ignored its stop signal (SIGTERM unless it has its own) for
    ``graceful_timeout`` and got SIGKILL.
    ``lost``: its supervisor died before it exited (found in the history; the
    watchdog stopped it; its exit status was never seen, so the code is 255).
    ``timeout``: it ran longer than its ``timeout`` and was terminated (SIGTERM,
    then SIGKILL after the grace).
    """

    EXITED = "exited"
    FAILED = "failed"
    TERMINATED = "terminated"
    KILLED = "killed"
    ESCALATED = "escalated"
    LOST = "lost"
    TIMEOUT = "timeout"


@dataclass(frozen=True, slots=True)
class CommandRun:
    """Which command of which workspace a proc is a run of, and ``restart_of``:
    the proc of that command's run before it (None for its first run). Kept in
    the history, so a command's runs stay linked after the supervisor restarts."""

    workspace: str
    command: str
    restart_of: int | None = None


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

    ``seq`` is one counter across stdout and stderr, in the order the
    supervisor read them: within a stream it is the exact order, across the two
    pipes it is the order of the reads (lines written within one wake-up of the
    supervisor may be swapped; ``merge_stderr=True`` gives one pipe and an exact
    order). ``split`` is true for a piece of a line longer than the line cap; the
    line continues in the next seq of the same stream. ``partial`` is true for
    an unterminated line shown before it ends (``read(partial=True)``): a prompt
    or a progress bar's latest state; its ``seq`` is the one it will have once
    complete, and it is returned again (completed or changed) by the next read.
    """

    seq: int
    stream: Stream
    time: float
    text: str
    split: bool = False
    partial: bool = False


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

    def __iter__(self) -> Iterator[Line]:
        return iter(self.lines)

    def __len__(self) -> int:
        return len(self.lines)

    def __getitem__(self, index: int) -> Line:
        return self.lines[index]

    @property
    def text(self) -> str:
        """The lines' text joined by newlines (with a final one)."""
        return "".join(f"{line.text}\n" for line in self.lines)


class LineRun(NamedTuple):
    """Consecutive lines that share everything but their text: ``len(texts)``
    lines from seq ``first`` on, of one stream, read at one time.

    What :meth:`Supervisor.read_runs` returns instead of a ``Line`` per line: a
    viewer that keeps its lines in columns (seqs, times, texts) extends each by
    a whole run at once. A ``partial`` line is a run of its own.
    """

    first: int
    stream: Stream
    time: float
    texts: Sequence[str]
    split: bool = False
    partial: bool = False

    @property
    def last(self) -> int:
        """The seq of its last line."""
        return self.first + len(self.texts) - 1

    def lines(self) -> Iterator[Line]:
        """Its lines, as ``read()`` returns them."""
        n = len(self.texts)
        return map(
            _new_line,
            zip(
                range(self.first, self.first + n),
                repeat(self.stream, n),
                repeat(self.time, n),
                self.texts,
                repeat(self.split, n),
                repeat(self.partial, n),
                strict=True,
            ),
        )


#: Line(*fields), made in C (a loop of Line(...) costs twice as much).
_new_line = partial(tuple.__new__, Line)
#: From this many lines on, ``lines_of`` makes them with the cycle collector paused.
_BULK = 2048


def lines_of(runs: Iterable[LineRun]) -> list[Line]:
    """The lines of ``runs``, one after another.

    A Line is a tuple, which the cycle collector tracks until a collection finds
    it holds nothing it could be a cycle with: making 100,000 of them at once
    set off a collection every 700, each walking the young objects again (a
    read of 200,000 lines took 100-170 ms, 33 ms without them). So a big batch
    is made with the collector paused, and looked at once, afterwards."""
    out: list[Line] = []
    paused = False
    try:
        for run in runs:
            if not paused and len(run.texts) + len(out) >= _BULK and gc.isenabled():
                gc.disable()
                paused = True
            out += run.lines()
    finally:
        if paused:
            gc.enable()
    return out


def runs_of(lines: Iterable[Line]) -> list[LineRun]:
    """``lines`` (in seq order) grouped into runs, each as long as it can be."""
    runs: list[LineRun] = []
    head: Line | None = None
    texts: list[str] = []
    for line in lines:
        if (
            head is None
            or line.seq != head.seq + len(texts)
            or line.stream is not head.stream
            or line.time != head.time
            or line.split != head.split
            or line.partial
            or head.partial
        ):
            if head is not None:
                runs.append(_run(head, texts))
            head, texts = line, []
        texts.append(line.text)
    if head is not None:
        runs.append(_run(head, texts))
    return runs


def _run(head: Line, texts: list[str]) -> LineRun:
    return LineRun(head.seq, head.stream, head.time, texts, head.split, head.partial)


@dataclass(frozen=True, slots=True)
class RunBatch:
    """The answer to ``Supervisor.read_runs``: what ``read()`` returns, as runs.

    ``dropped``, ``cursor`` and ``eof`` are those of the ``ReadBatch``;
    ``lines()`` gives its lines. ``len()`` is the number of lines.
    """

    runs: list[LineRun]
    dropped: int
    cursor: int
    eof: bool

    def __len__(self) -> int:
        return sum(len(run.texts) for run in self.runs)

    def lines(self) -> list[Line]:
        """The lines, as ``read()`` returns them."""
        return lines_of(self.runs)

    @classmethod
    def of(cls, batch: ReadBatch) -> RunBatch:
        """A ``ReadBatch``'s lines as runs."""
        return cls(runs_of(batch.lines), batch.dropped, batch.cursor, batch.eof)


class EventKind(enum.StrEnum):
    """The last token of an event topic.

    ``stopping``: ``term`` or ``kill`` was asked for (or a timeout ran out);
    ``exit`` follows. ``output``: new lines. ``partial``: an unterminated line
    (a prompt, a progress bar) stood still or changed; ``read(partial=True)``
    shows it. ``ready``: the proc's readiness check passed.
    ``missed``: not about a proc; the subscriber fell behind and ``Event.missed``
    events matching its pattern were dropped (topic ``missed``, proc 0).
    ``phase``: a workspace command changed phase (waiting, restarting, skipped…;
    a :class:`PhaseEvent`, proc 0 before its first start).
    """

    START = "start"
    STOPPING = "stopping"
    EXIT = "exit"
    OUTPUT = "output"
    PARTIAL = "partial"
    READY = "ready"
    DISMISS = "dismiss"
    MISSED = "missed"
    PHASE = "phase"


class Phase(enum.StrEnum):
    """Where a workspace command is in its life (``WorkspaceRun.state``).

    ``waiting``: for its dependencies. ``starting``: being spawned, or running
    while its readiness check has not passed yet. ``running``: running (it has
    no readiness check). ``ready``: running, its readiness check passed.
    ``restarting``: it exited and starts again at ``next_attempt_at``.
    ``skipped``: a dependency failed its condition; it never starts.
    ``stopped``: stopped by a person (``term``, ``kill``) or by the workspace's
    stop. ``completed``: it exited with code 0 and starts no more. ``failed``:
    it exited otherwise (or could not be spawned) and starts no more.
    """

    WAITING = "waiting"
    STARTING = "starting"
    RUNNING = "running"
    READY = "ready"
    RESTARTING = "restarting"
    SKIPPED = "skipped"
    STOPPED = "stopped"
    COMPLETED = "completed"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class Event:
    """One supervisor event, delivered to subscribers whose pattern matches ``topic``.

    Topic: ``session.{session}.agent.{agent}.proc.{kind}`` (names escaped by
    ``topic_token``). Fields that do not apply to a kind are ``None``; the
    events of kinds ``start``, ``output``, ``partial`` and ``exit`` are the
    subclasses :class:`StartEvent`, :class:`OutputEvent`, :class:`PartialEvent`
    and :class:`ExitEvent`, whose fields are never ``None``. ``missed`` counts
    events this subscriber lost just before this one because its queue was full.
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
    text: str | None = None
    missed: int = 0


@dataclass(frozen=True, slots=True)
class StartEvent(Event):
    """A proc started: its OS pid, tool and command line."""

    os_pid: int = 0
    tool: str = ""
    cmd: str = ""


@dataclass(frozen=True, slots=True)
class OutputEvent(Event):
    """Lines ``first_seq..last_seq`` arrived (those of ``stream`` among them)."""

    stream: Stream = Stream.STDOUT
    first_seq: int = 0
    last_seq: int = 0


@dataclass(frozen=True, slots=True)
class PartialEvent(Event):
    """An unterminated line of ``stream`` (a prompt, a progress bar's latest
    state) can be read with ``read(partial=True)``; ``text`` is that state and
    ``first_seq`` the seq the line will have once complete."""

    stream: Stream = Stream.STDOUT
    first_seq: int = 0
    text: str = ""


@dataclass(frozen=True, slots=True)
class ExitEvent(Event):
    """A proc exited. ``last_seq`` is the final cursor: every line the proc
    wrote before it exited has ``seq <= last_seq`` and its output events came
    before this one (a descendant that still holds the pipes may add lines
    after it, announced by output events that follow)."""

    code: int = 0
    reason: ExitReason = ExitReason.EXITED
    runtime: float = 0.0
    tool: str = ""
    cmd: str = ""
    last_seq: int = 0


@dataclass(frozen=True, slots=True)
class PhaseEvent(Event):
    """A command of workspace ``workspace`` named ``command`` entered ``phase``,
    or what it waits for changed. ``proc_id`` is its latest proc (0 before its
    first start) and ``previous`` the proc a restart follows; ``waiting_for``
    holds the ``(name, condition)`` pairs not met yet; ``next_attempt_at``
    (Unix seconds) is set while ``restarting``; ``restarts`` counts its
    restarts so far; ``detail`` says why, for people (``db never became
    ready: it exited with code 1 (failed)``)."""

    workspace: str = ""
    command: str = ""
    phase: Phase = Phase.WAITING
    waiting_for: tuple[tuple[str, str], ...] = ()
    restarts: int = 0
    next_attempt_at: float | None = None
    detail: str | None = None
    previous: int | None = None


@dataclass(frozen=True, slots=True, order=True)
class ListeningPort:
    """A TCP port a process of a proc's tree listens on: ``host`` is the address
    it is bound to (``0.0.0.0`` or ``::`` for every one), ``os_pid`` the kernel's
    pid of the process holding it."""

    port: int
    host: str
    os_pid: int


@dataclass(frozen=True, slots=True)
class TreeProcess:
    """One process of a proc's tree, as ``tree`` reports it.

    ``os_pid`` and ``ppid`` are the kernel's pids; ``depth`` is 0 for the proc's
    own process, 1 for its children and for processes that left it (``setsid``,
    a double fork: found by procwindow's marker, their parent is no longer in
    the tree), and one more for each generation below. ``state`` is the
    kernel's (``running``, ``sleeping``, ``disk-sleep``, ``stopped``,
    ``zombie``…); ``command`` its command line (``[name]`` when it has none);
    ``cpu_percent`` and ``rss`` come from the same sample as the proc's
    ``stats`` (they add up to its figures); ``started`` is Unix seconds."""

    os_pid: int
    ppid: int
    depth: int
    state: str
    command: str
    cpu_percent: float
    rss: int
    threads: int
    started: float


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
