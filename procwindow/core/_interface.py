"""SupervisorAPI: what a window (or any client) needs of "a supervisor".

The in-process :class:`~procwindow.core.Supervisor` implements it, and so does
:class:`procwindow.control.remote.RemoteSupervisor`, over the control socket of
another process, locally or through ``ssh``. The Qt models and controllers
need nothing more, so they never know which one they hold.

The queries (``get``, ``procs``, ``read``, ``read_runs``, ``runtime``, ``stats``,
``history``, ``log_path``, ``dismiss``) are synchronous: a model calls them
from a frame timer or a slot. A remote implementation answers them from a
local mirror kept current by the server's events, and fetches what it lacks
in the background (an event announces it once it is there), so that a slow
link never blocks the caller. The actions are coroutines.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from ._events import DEFAULT_QUEUE_SIZE, Subscription
from ._types import ExitInfo, ExitReason, ProcStats, ReadBatch, RunBatch, Stream
from .rules import DEFAULT_TOOL

if TYPE_CHECKING:
    from ._agent import Ready
    from ._orchestra import WorkspaceRun
    from ._proc import Proc
    from ._search import SearchHit
    from ._supervisor import Supervisor

__all__ = ["SupervisorAPI"]


class SupervisorAPI(Protocol):
    """The operations the window's models and controllers use.

    Semantics and errors are :class:`~procwindow.core.Supervisor`'s: an
    unknown id raises :class:`~procwindow.core.ProcNotFound`, ``dismiss`` of
    a running proc :class:`~procwindow.core.ProcRunning`, a bad search
    pattern :class:`~procwindow.core.InvalidPattern` at once, and so on.

    >>> def show(sup: SupervisorAPI) -> None:  # doctest: +SKIP
    ...     for p in sup.procs("s1"):
    ...         print(p.id, p.state, sup.read(p.id).cursor)
    """

    # -- the link ------------------------------------------------------------------

    @property
    def where(self) -> str:
        """How the supervisor is reached: a socket path, ``ssh://host/NAME``; "" in process."""
        ...

    @property
    def connected(self) -> bool:
        """True while the link to the supervisor is up (always, in process)."""
        ...

    def add_listener(self, callback: Callable[[str], None]) -> Callable[[], None]:
        """Call ``callback(what)`` when the link changes: ``"connected"``,
        ``"disconnected"``, ``"history"`` (a history answer came: ask again).
        Returns the function that removes it."""
        ...

    # -- queries (synchronous) ---------------------------------------------------

    @property
    def history_enabled(self) -> bool:
        """True while procs are recorded in a history database."""
        ...

    @property
    def workspaces(self) -> list[WorkspaceRun]:
        """The workspaces running here, whose command states the process table shows."""
        ...

    def get(self, proc_id: int) -> Proc:
        """The proc with this id, live or past; ProcNotFound if unknown."""
        ...

    def procs(self, session: str | None = None, agent: str | None = None) -> list[Proc]:
        """The live procs of a scope (None: any), newest first."""
        ...

    def runtime(self, proc_id: int) -> float:
        """Seconds the proc has run (until its exit)."""
        ...

    def read(
        self,
        proc_id: int,
        since: int = 0,
        *,
        limit: int | None = None,
        stream: Stream | str | None = None,
        partial: bool = False,
    ) -> ReadBatch:
        """Lines with ``seq > since``, oldest first; pass ``cursor`` next time."""
        ...

    def read_runs(
        self,
        proc_id: int,
        since: int = 0,
        *,
        limit: int | None = None,
        stream: Stream | str | None = None,
        partial: bool = False,
    ) -> RunBatch:
        """``read()``'s lines grouped into runs (a viewer's columns)."""
        ...

    def history(
        self,
        *,
        session: str | None = None,
        agent: str | None = None,
        tool: str | None = None,
        reason: ExitReason | str | None = None,
        since: float | None = None,
        limit: int | None = None,
    ) -> list[Proc]:
        """Every recorded proc, newest first (empty when history is off)."""
        ...

    def stats(self, proc_id: int) -> ProcStats:
        """Resource use of the proc's whole live tree."""
        ...

    def log_path(self, proc_id: int, stream: Stream | str = Stream.STDOUT) -> str:
        """The raw log file of a proc's stream (none if it wrote nothing)."""
        ...

    def subscribe(
        self, pattern: str = ">", *, proc: int | None = None, maxsize: int = DEFAULT_QUEUE_SIZE
    ) -> Subscription:
        """Events whose topic matches ``pattern``; InvalidPattern if malformed."""
        ...

    def search(
        self,
        pattern: str,
        *,
        regex: bool = False,
        case_sensitive: bool = False,
        session: str | None = None,
        agent: str | None = None,
        proc: int | None = None,
        since: float | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[SearchHit]:
        """Matching lines, live and past, newest proc first; InvalidPattern at once."""
        ...

    def dismiss(self, proc_id: int) -> None:
        """Remove an exited proc from the live view; ProcRunning if it runs."""
        ...

    # -- actions (coroutines) ----------------------------------------------------

    async def spawn(
        self,
        argv: Sequence[str] | None = None,
        *,
        session: str,
        agent: str,
        shell: str | None = None,
        tool: str = DEFAULT_TOOL,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str | None] | None = None,
        graceful_timeout: float | None = None,
        timeout: float | None = None,
        merge_stderr: bool = False,
        stdin: bool = False,
        ready: Ready | str | int | Mapping[str, object] | None = None,
        reuse: bool = False,
    ) -> Proc:
        """Start a command for a scope; its Proc."""
        ...

    async def restart(self, proc_id: int) -> Proc:
        """Start the proc's command again as a new proc."""
        ...

    async def term(self, proc_id: int) -> ExitInfo:
        """SIGTERM, then SIGKILL after the grace; how it ended."""
        ...

    async def kill(self, proc_id: int) -> ExitInfo:
        """SIGKILL now; how it ended."""
        ...

    async def interrupt(self, proc_id: int) -> bool:
        """SIGINT; False if it already exited."""
        ...

    async def write(self, proc_id: int, data: bytes | str = "") -> int:
        """Write to the proc's stdin; the bytes written."""
        ...

    async def close_stdin(self, proc_id: int) -> bool:
        """Close the proc's stdin; False if it had none or it was closed."""
        ...

    async def term_all(self, session: str | None = None, agent: str | None = None) -> None:
        """``term`` every running proc of a scope (None: any)."""
        ...


if TYPE_CHECKING:

    def _conforms(sup: Supervisor) -> SupervisorAPI:
        # mypy checks here that the in-process Supervisor has every operation.
        return sup
