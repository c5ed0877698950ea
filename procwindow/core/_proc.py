"""Proc: the read-only view of one supervised child."""

from __future__ import annotations

import asyncio
import shlex
import subprocess
from typing import TYPE_CHECKING

import psutil

from ._text import escape_controls
from ._types import ExitInfo, ProcState, Stream

if TYPE_CHECKING:
    from ._output import LogFile, OutputStore

__all__ = ["Proc", "format_cmd"]


def format_cmd(argv: tuple[str, ...]) -> str:
    """argv as one shell-quoted line, control characters escaped (safe for TSV
    and for a terminal)."""
    return escape_controls(shlex.join(argv))


class Proc:
    """One supervised child, as the supervisor sees it.

    A read-only view: the supervisor owns the child, its pipes, its pidfd and its
    log files; everyone else reads these properties and acts through the
    supervisor by ``id``.
    """

    __slots__ = (
        "__weakref__",
        "_agent",
        "_argv",
        "_capture_failed",
        "_cmd",
        "_cwd",
        "_ended_at",
        "_ended_mono",
        "_env",
        "_escalated",
        "_exit",
        "_exit_fut",
        "_graceful_timeout",
        "_id",
        "_kill_requested",
        "_logs",
        "_open_streams",
        "_os_pid",
        "_out_pending",
        "_pidfd",
        "_popen",
        "_ps_cache",
        "_read_size",
        "_session",
        "_signalled",
        "_started_at",
        "_started_mono",
        "_state",
        "_stop_task",
        "_store",
        "_stream_fds",
        "_tool",
    )

    def __init__(
        self,
        *,
        proc_id: int,
        argv: tuple[str, ...],
        session: str,
        agent: str,
        tool: str,
        cwd: str | None,
        env: dict[str, str | None] | None,
        popen: subprocess.Popen[bytes],
        pidfd: int,
        store: OutputStore,
        logs: dict[Stream, LogFile],
        stream_fds: dict[Stream, int],
        started_at: float,
        started_mono: float,
        exit_fut: asyncio.Future[ExitInfo],
        graceful_timeout: float | None = None,
    ) -> None:
        self._id = proc_id
        self._argv = argv
        self._cmd = format_cmd(argv)
        self._session = session
        self._agent = agent
        self._tool = tool
        self._cwd = cwd
        self._env = env
        self._popen = popen
        self._os_pid = popen.pid
        self._pidfd: int | None = pidfd
        self._store = store
        self._logs = logs
        self._stream_fds: dict[Stream, int] = stream_fds
        self._open_streams: set[Stream] = set(stream_fds)
        self._read_size = dict.fromkeys(stream_fds, 65536)
        self._started_at = started_at
        self._started_mono = started_mono
        self._ended_at: float | None = None
        self._ended_mono: float | None = None
        self._state = ProcState.RUNNING
        self._exit: ExitInfo | None = None
        self._exit_fut = exit_fut
        self._stop_task: asyncio.Task[ExitInfo] | None = None
        self._signalled = False  # term/interrupt/signal was sent by us
        self._kill_requested = False
        self._escalated = False
        self._capture_failed = False
        self._graceful_timeout = graceful_timeout
        self._out_pending: dict[Stream, list[int]] = {}
        self._ps_cache: dict[int, psutil.Process] = {}

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
        return bool(self._open_streams)

    @property
    def log_error(self) -> str | None:
        """The OS error that stopped logging to a file, if any. Capture goes on."""
        for log in self._logs.values():
            if log.error:
                return log.error
        return None

    @property
    def output_bytes(self) -> int:
        """Bytes captured from both pipes so far."""
        return self._store.total_bytes

    @property
    def last_seq(self) -> int:
        """The seq of the newest complete line."""
        return self._store.last_seq

    def runtime(self, now_mono: float) -> float:
        """Seconds from start to exit, or to ``now_mono`` (a monotonic time) while running."""
        end = self._ended_mono if self._ended_mono is not None else now_mono
        return max(0.0, end - self._started_mono)

    def __repr__(self) -> str:
        extra = f" code={self._exit.code}" if self._exit else ""
        return f"<Proc {self._id} {self._tool} {self._state} pid={self._os_pid}{extra}>"
