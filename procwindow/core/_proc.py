"""Proc: the read-only view of one supervised child."""

from __future__ import annotations

import shlex
import time
from collections.abc import Set
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from . import _pty
from ._text import escape_controls
from ._types import CommandRun, ExitInfo, ExitReason, ProcState, Stream

if TYPE_CHECKING:
    from ._disklog import DiskLog
    from ._history import HistoryRow
    from ._output import OutputStore
    from ._ready import Ready

__all__ = ["Holder", "Proc", "SpawnOptions", "format_cmd"]


class Holder(Protocol):
    """What the view reads of the record its supervisor keeps for a live child
    (``_child.Child``, which owns the view): a protocol, so that the view
    depends on nothing above it."""

    @property
    def open_streams(self) -> Set[Stream]: ...

    @property
    def disk(self) -> DiskLog: ...

    @property
    def store(self) -> OutputStore: ...


@dataclass(frozen=True, slots=True)
class SpawnOptions:
    """What a spawn asked for beyond the command and its scope (restart repeats it)."""

    timeout: float | None = None
    merge_stderr: bool = False
    stdin: bool = False
    ready: Ready | None = None
    #: Its terminal's size when it started (rows, columns), spawned with
    #: ``pty``; None: pipes.
    pty: tuple[int, int] | None = None
    #: The signal that asks it to stop (terminate, a timeout, a workspace's
    #: stop); None: SIGTERM.
    stop_signal: int | None = None
    #: A command run to ask it to stop, instead of the stop signal (in its
    #: directory and environment); None: the signal.
    stop_command: tuple[str, ...] | None = None

    def spawn_args(self) -> dict[str, Any]:
        """These options as ``spawn``'s keyword arguments (to run it again)."""
        return {
            "timeout": self.timeout,
            "merge_stderr": self.merge_stderr,
            "stdin": self.stdin,
            "ready": self.ready,
            "stop_signal": self.stop_signal,
            "stop_command": self.stop_command,
            **_pty.spawn_args(self.pty),
        }


def format_cmd(argv: tuple[str, ...]) -> str:
    """argv as one shell-quoted line, control characters escaped (safe for TSV
    and for a terminal)."""
    return escape_controls(shlex.join(argv))


class Proc:
    """One supervised child, as the supervisor sees it.

    A read-only view of its identity, state and exit: the supervisor owns the
    child, its pipes, its pidfd and its log files (a private record, never
    handed out); everyone else reads these properties and acts through the
    supervisor by ``id``.
    """

    __slots__ = (
        "__weakref__",
        "_agent",
        "_argv",
        "_child",
        "_cmd",
        "_command_run",
        "_cwd",
        "_ended_at",
        "_ended_mono",
        "_env",
        "_exit",
        "_graceful_timeout",
        "_id",
        "_options",
        "_os_pid",
        "_ready",
        "_record",
        "_session",
        "_started_at",
        "_started_mono",
        "_state",
        "_tool",
    )

    def __init__(
        self,
        *,
        proc_id: int,
        os_pid: int,
        argv: tuple[str, ...],
        session: str,
        agent: str,
        tool: str,
        cwd: str | None,
        env: dict[str, str | None] | None,
        started_at: float,
        started_mono: float,
        graceful_timeout: float | None = None,
        options: SpawnOptions | None = None,
    ) -> None:
        self._id = proc_id
        self._os_pid = os_pid
        self._argv = argv
        self._cmd = format_cmd(argv)
        self._session = session
        self._agent = agent
        self._tool = tool
        self._cwd = cwd
        self._env = env
        self._started_at = started_at
        self._started_mono = started_mono
        self._ended_at: float | None = None
        self._ended_mono: float | None = None
        self._state = ProcState.RUNNING
        self._exit: ExitInfo | None = None
        self._graceful_timeout = graceful_timeout
        self._child: Holder | None = None
        self._record: HistoryRow | None = None
        self._options = options or SpawnOptions()
        self._ready = self._options.ready is None
        self._command_run: CommandRun | None = None

    @classmethod
    def _from_record(cls, row: HistoryRow) -> Proc:
        """A proc of the history (of an earlier run, another supervisor, or dismissed)."""
        p = cls(
            proc_id=row.id,
            os_pid=row.os_pid,
            argv=row.argv,
            session=row.session,
            agent=row.agent,
            tool=row.tool,
            cwd=row.cwd,
            env=row.env,
            started_at=row.started_at,
            started_mono=0.0,
            graceful_timeout=row.graceful_timeout,
        )
        p._record = row
        if row.workspace is not None and row.command is not None:
            p._command_run = CommandRun(row.workspace, row.command, row.restart_of)
        if row.ended_at is not None and row.reason is not None:
            runtime = row.runtime if row.runtime is not None else row.ended_at - row.started_at
            p._ended_at = row.ended_at
            p._ended_mono = max(0.0, runtime)
            p._exit = ExitInfo(
                row.code if row.code is not None else 255,
                row.signal,
                ExitReason(row.reason),
                max(0.0, runtime),
            )
            p._state = ProcState.EXITED
        return p

    # -- set by the supervisor only --------------------------------------------

    def _attach(self, child: Holder) -> None:
        self._child = child

    def _set_command_run(self, run: CommandRun) -> None:
        self._command_run = run

    def _set_ready(self) -> bool:
        """Its readiness check passed; False if it was ready already."""
        if self._ready:
            return False
        self._ready = True
        return True

    def _set_stopping(self) -> bool:
        """Running → stopping; False if it was stopping or exited already."""
        if self._state is not ProcState.RUNNING:
            return False
        self._state = ProcState.STOPPING
        return True

    def _set_exited(
        self, code: int, sig: int | None, reason: ExitReason, at: float, mono: float
    ) -> ExitInfo:
        self._ended_at = at
        self._ended_mono = mono
        self._exit = ExitInfo(code, sig, reason, self.runtime(mono))
        self._state = ProcState.EXITED
        return self._exit

    # -- identity ------------------------------------------------------------

    @property
    def id(self) -> int:
        """The supervisor's own number for this proc: 1, 2, 3 … never reused."""
        return self._id

    @property
    def os_pid(self) -> int:
        """The kernel's pid of the child (may be reused by the kernel after exit)."""
        return self._os_pid

    @property
    def pgid(self) -> int:
        """The child's process group: it leads its own group, so this is ``os_pid``."""
        return self._os_pid

    @property
    def argv(self) -> tuple[str, ...]:
        """The command, as given."""
        return self._argv

    @property
    def cmd(self) -> str:
        """The command as one shell-quoted line (control characters escaped)."""
        return self._cmd

    @property
    def session(self) -> str:
        """The session this proc belongs to."""
        return self._session

    @property
    def agent(self) -> str:
        """The agent this proc belongs to."""
        return self._agent

    @property
    def tool(self) -> str:
        """Who asked for it (``shell``, ``web_fetch`` …)."""
        return self._tool

    @property
    def cwd(self) -> str | None:
        """The working directory it was started in (None: the supervisor's)."""
        return self._cwd

    @property
    def env(self) -> dict[str, str | None] | None:
        """The environment overrides it was started with (a copy)."""
        return dict(self._env) if self._env is not None else None

    @property
    def graceful_timeout(self) -> float | None:
        """This proc's seconds between SIGTERM and SIGKILL (None: the supervisor's)."""
        return self._graceful_timeout

    @property
    def options(self) -> SpawnOptions:
        """What its spawn asked for: timeout, merge_stderr, stdin, ready, pty."""
        return self._options

    @property
    def timeout(self) -> float | None:
        """Seconds it may run before it is terminated (reason ``timeout``), or None."""
        return self._options.timeout

    @property
    def ready(self) -> bool:
        """True once its readiness check passed; True from the start without one."""
        return self._ready

    # -- life ----------------------------------------------------------------

    @property
    def state(self) -> ProcState:
        """``starting``, ``running``, ``stopping`` or ``exited``."""
        return self._state

    @property
    def running(self) -> bool:
        """True until the child has exited (``stopping`` still runs)."""
        return self._state is not ProcState.EXITED

    @property
    def exit(self) -> ExitInfo | None:
        """None while running, else how it ended."""
        return self._exit

    @property
    def started_at(self) -> float:
        """Wall-clock start time (seconds since the epoch)."""
        return self._started_at

    @property
    def ended_at(self) -> float | None:
        """Wall-clock exit time, None while running."""
        return self._ended_at

    @property
    def output_open(self) -> bool:
        """True while a pipe is still open (a descendant may hold it after exit)."""
        return self._child is not None and bool(self._child.open_streams)

    @property
    def disconnected(self) -> bool:
        """True while the link to the supervisor that runs it is down (a remote
        proc's state is then the last one heard); always False in process."""
        return False

    @property
    def command_run(self) -> CommandRun | None:
        """Which command of which workspace it is a run of, and the run it
        restarted; None for a proc no workspace started."""
        return self._command_run

    @property
    def live(self) -> bool:
        """True for a proc this supervisor runs or ran (listed by ``procs()``
        until dismissed); False for one read from the history."""
        return self._child is not None

    @property
    def log_error(self) -> str | None:
        """The OS error that stopped logging to a file, if any. Capture goes on."""
        if self._child is not None:
            return self._child.disk.error
        return self._record.log_error if self._record is not None else None

    @property
    def output_bytes(self) -> int:
        """Bytes captured from both pipes so far."""
        if self._child is not None:
            return self._child.store.total_bytes
        if self._record is not None:
            return self._record.stdout_bytes + self._record.stderr_bytes
        return 0

    @property
    def cut_lines(self) -> int:
        """Lines cut from the middle of its log by the per-proc disk cap."""
        if self._child is not None:
            return self._child.disk.cut_lines
        return self._record.cut_lines if self._record is not None else 0

    @property
    def cut_bytes(self) -> int:
        """Bytes cut from the middle of its logs by the per-proc disk cap."""
        if self._child is not None:
            return sum(self._child.disk.cut_bytes.values())
        return self._record.cut_bytes if self._record is not None else 0

    @property
    def held_bytes(self) -> int:
        """Bytes of output held in memory now (the ring; bounded by ``ring_bytes``)."""
        return self._child.store.nbytes if self._child is not None else 0

    @property
    def last_seq(self) -> int:
        """The seq of the newest complete line."""
        if self._child is not None:
            return self._child.store.last_seq
        return self._record.lines if self._record is not None else 0

    def runtime(self, now_mono: float) -> float:
        """Seconds from start to exit, or to ``now_mono`` (a monotonic time) while running."""
        if self._ended_mono is None and self._record is not None:
            # Running under another supervisor: only wall-clock times are shared.
            return max(0.0, time.time() - self._started_at)
        end = self._ended_mono if self._ended_mono is not None else now_mono
        return max(0.0, end - self._started_mono)

    def __repr__(self) -> str:
        extra = f" code={self._exit.code}" if self._exit else ""
        return f"<Proc {self._id} {self._tool} {self._state} pid={self._os_pid}{extra}>"
