"""SupervisorAPI: what a window (or any client) needs of "a supervisor".

The in-process :class:`~procwindow.core.Supervisor` implements it, and so does
:class:`procwindow.control.remote.RemoteSupervisor`, over the control socket of
another process, locally or through ``ssh``. The Qt models and controllers
need nothing more, so they never know which one they hold.

Both classes subclass it, and what an operation means (its arguments, its
answer, its errors) is written here once: they inherit these docstrings, and
a method says more only where its class differs (a RemoteSupervisor answers
``read`` from its mirror…).

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
from ._types import (
    ExitInfo,
    ExitReason,
    ListeningPort,
    ProcStats,
    ReadBatch,
    RunBatch,
    Stream,
    TreeProcess,
)
from .rules import DEFAULT_TOOL

if TYPE_CHECKING:
    from ._orchestra import WorkspaceRun
    from ._proc import Proc
    from ._ready import Ready
    from ._screen import ScreenText
    from ._search import SearchHit

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
        """ "": an in-process supervisor is reached by no link."""
        ...

    @property
    def connected(self) -> bool:
        """True: an in-process supervisor has no link to lose (a
        :class:`~procwindow.control.remote.RemoteSupervisor`'s goes down and up)."""
        ...

    def add_listener(self, callback: Callable[[str], None]) -> Callable[[], None]:
        """Listen to the link's changes, which an in-process supervisor never
        has: ``callback`` is never called. Returns the function that removes it."""
        ...

    # -- queries (synchronous) ---------------------------------------------------

    @property
    def history_enabled(self) -> bool:
        """True while procs are recorded in the history database."""
        ...

    @property
    def closed(self) -> bool:
        """True once ``close`` has finished."""
        ...

    @property
    def workspaces(self) -> list[WorkspaceRun]:
        """The workspaces running on this supervisor (``Workspace.start``), in
        the order they started; each tells its commands' states."""
        ...

    def get(self, proc_id: int) -> Proc:
        """The proc with this id, live or from the history; ProcNotFound if
        there is none (or it was forgotten)."""
        ...

    def procs(self, session: str | None = None, agent: str | None = None) -> list[Proc]:
        """The procs of a scope (None: any), newest first."""
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
        """Lines with ``seq > since``, oldest first, across both streams.

        Pass the returned ``cursor`` as ``since`` next time to get each line once.
        Lines that left the ring are read back from the log files; ``dropped``
        counts lines after ``since`` that are gone for good (cut by ``log_cap``).
        A past id (an earlier run, another supervisor, dismissed) reads from disk.

        ``partial``: also return, last, the unterminated line of each stream
        (``Line.partial``) once it has stood still for a moment: a prompt, or
        a progress bar's latest state. The cursor does not move past it: the
        next read returns it again, completed or changed. ``stream`` keeps
        only that stream's lines; the cursor still moves past the other's.
        """
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
        """The lines ``read()`` returns, grouped into runs (:class:`LineRun`):
        consecutive lines of one stream read at one time, with their texts in
        one list. For a viewer that keeps lines in columns: the ring gives a run
        per read of the child, without making a ``Line`` per line.

        Same arguments, same ``dropped``, ``cursor`` and ``eof``;
        ``read_runs(...).lines() == read(...).lines``.
        """
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
        command: str | None = None,
    ) -> list[Proc]:
        """Every recorded proc of this state directory, newest first: this
        supervisor's (live ones as they are now), dismissed ones, earlier runs'
        and other supervisors'. ``since`` is a start time (epoch seconds);
        ``command`` text its command line holds, in any case. Empty when
        history is off."""
        ...

    def stats(self, proc_id: int) -> ProcStats:
        """CPU %, RSS, I/O bytes and threads of the proc's whole live tree.

        CPU % is measured since the previous sample of the same processes (0.0
        the first time), so call it at a steady interval (the window: once a
        second); calls within STATS_MIN_INTERVAL (0.5 s) of a sample share it, so
        that every caller reads one number, never a noisy few milliseconds' worth.
        Who is in the tree comes from a scan of /proc at most STATS_TREE_TTL
        seconds old (a scan of 1,000 processes takes ~0.1 s: a window sampling
        every row each second must not pay it every second); the values are
        each member's own, read now. Out of file descriptors it counts what it
        can (the leader at least).
        """
        ...

    async def ports(self, proc_id: int) -> list[ListeningPort]:
        """The TCP ports the proc and its live descendants listen on now, by port
        (empty for a proc that is not in the live view)."""
        ...

    async def tree(self, proc_id: int) -> list[TreeProcess]:
        """The proc's own process (while it runs) and its live descendants, those
        that left it (``setsid``, a double fork) included: each one's kernel pid,
        parent, depth, state, command line, CPU %, memory and threads, parents
        before their children (at most 1,000). CPU % and memory come from the
        sample ``stats`` takes (they add up to its figures); empty once the
        proc and all of its tree have exited, and for a proc not in the live
        view (dismissed, or from the history)."""
        ...

    def log_path(self, proc_id: int, stream: Stream | str = Stream.STDOUT) -> str:
        """Path of the raw log file of a proc's stream (named from ids only),
        made at the stream's first write: a stream that wrote nothing has none."""
        ...

    def subscribe(
        self, pattern: str = ">", *, proc: int | None = None, maxsize: int = DEFAULT_QUEUE_SIZE
    ) -> Subscription:
        """Events whose topic matches ``pattern`` (``*`` one token, ``>`` the rest).

        Topics are ``session.{sid}.agent.{aid}.proc.{kind}``, kind one of
        ``start stopping output partial ready exit dismiss`` (and ``phase``
        for the commands of a running workspace); a ``.`` in a
        name is ``%2E`` there (``scope_pattern`` builds patterns for you).
        ``proc``: only that proc's events. A proc's output events come before
        its exit event, which carries the final cursor (``ExitEvent.last_seq``).
        Raises InvalidPattern for a malformed pattern.
        """
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
        """Lines that match ``pattern`` (a substring, or an RE2 regex with
        ``regex``: :class:`Regex`), across live procs and the on-disk history: newest procs
        first, each proc's lines in order. ``since`` keeps procs started at or
        after that time (epoch seconds). An async iterator: it streams, can be
        cancelled, and returns to the event loop every few milliseconds.
        Raises InvalidPattern at once for an empty pattern or a bad regex."""
        ...

    def dismiss(self, proc_id: int) -> None:
        """Remove an exited proc from the live view (``procs()``): kill what it
        left behind and close its pipes. Its history and logs stay (``forget``
        deletes them). ProcRunning if it still runs."""
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
        stop_signal: int | str | None = None,
        stop_command: Sequence[str] | None = None,
        timeout: float | None = None,
        merge_stderr: bool = False,
        stdin: bool = False,
        pty: bool = False,
        rows: int | None = None,
        cols: int | None = None,
        ready: Ready | str | int | Mapping[str, object] | None = None,
        reuse: bool = False,
    ) -> Proc:
        """Start ``argv`` (or the ``shell`` line) for scope ``(session, agent)``; return its Proc.

        ``argv`` runs without a shell: metacharacters reach the child literally.
        ``shell="make | tee log"`` runs ``/bin/sh -c`` with that line; give
        exactly one of the two. ``env`` adds to or overrides the inherited
        environment (a value of None removes a variable). ``graceful_timeout``
        overrides the supervisor's for this proc (0 to MAX_GRACEFUL_TIMEOUT seconds).
        ``stop_signal``: what asks it to stop instead of SIGTERM (a name such
        as ``"INT"``, or a number), whenever it is terminated; SIGKILL follows
        after the grace. ``stop_command``: a command run to ask it to stop
        instead (``["docker", "stop", "db"]``, in its directory and environment).

        ``timeout``: after that many seconds the proc is terminated (SIGTERM,
        SIGKILL after the grace) and its exit reason is ``timeout``.
        ``merge_stderr``: stderr goes into the stdout pipe, so the two are in
        the exact order written (all lines are then ``stdout``).
        ``stdin``: keep a pipe to its stdin for ``write``/``close_stdin``
        (otherwise stdin is /dev/null). ``pty``: run it on a pseudo-terminal of
        ``rows`` × ``cols`` (24 × 80 by default), its controlling terminal, in a
        session of its own: stdout and stderr are then one stream (``stdout``)
        and ``write`` types into it (see ``resize`` and ``screen``). ``ready``:
        how it shows it is ready (a :class:`Ready`, a line pattern, or a
        localhost port); see ``wait_ready``.
        ``reuse``: if a proc with the same argv, cwd and scope is running,
        return it instead of starting a second copy.

        Raises CommandNotFound, NotExecutable, CwdMissing, InvalidArgv,
        InvalidScope, UnsafePath (an unsafe log directory, or a FIFO, symlink
        or foreign file where a log file goes), SupervisorClosed or SpawnFailed
        (EMFILE at the fd limit, EAGAIN…), and then leaves nothing behind.
        """
        ...

    async def restart(self, proc_id: int) -> Proc:
        """Start the same command again (argv, scope, tool, cwd, env and the
        spawn's options), as a new proc (new id). A proc of a running
        workspace's command is restarted within the workspace
        (``WorkspaceRun.restart``): its policy and checks go on."""
        ...

    async def term(self, proc_id: int) -> ExitInfo:
        """SIGTERM then SIGCONT to the proc's group and descendants; SIGKILL after
        ``graceful_timeout``. Returns how it ended. On an exited proc it stops
        what the proc left behind (a grandchild holding its pipes) the same way."""
        ...

    async def kill(self, proc_id: int) -> ExitInfo:
        """SIGKILL to the proc's group and descendants now; return once the
        proc and every descendant are gone (as ``term`` does)."""
        ...

    async def interrupt(self, proc_id: int) -> bool:
        """SIGINT to the proc's group, as Ctrl-C would. False if it already exited."""
        ...

    async def signal(self, proc_id: int, signal: int | str, *, os_pid: int | None = None) -> bool:
        """Send ``signal`` (a number, or a name: ``"TERM"``, ``"SIGHUP"``, ``"usr1"``)
        to the proc's process group, or with ``os_pid`` to that one process of its
        tree (a kernel pid ``tree`` lists: the proc's own process or a
        descendant). False when the proc has exited, or ``os_pid`` is not (or no
        longer) a live process of its tree: it is checked just before the
        signal, so a pid the kernel gave to another process is never hit.
        InvalidField for an unknown signal."""
        ...

    async def write(self, proc_id: int, data: bytes | str = "") -> int:
        """Write ``data`` (str: as UTF-8) to the stdin of a proc spawned with
        ``stdin=True``; return the bytes written. Waits while the pipe is full.
        Raises StdinClosed if it has no stdin, it was closed, or the child
        stopped reading (EPIPE)."""
        ...

    async def resize(self, proc_id: int, rows: int, cols: int) -> None:
        """Give the terminal of a proc spawned with ``pty`` a new size; the
        kernel sends its foreground process group SIGWINCH. Raises NoTerminal
        for a proc without one, or once its terminal is closed."""
        ...

    async def screen(self, proc_id: int, *, styled: bool = False) -> ScreenText:
        """The screen of a proc spawned with ``pty``, as its terminal shows it
        now: its rows as text, the cursor, and whether a full-screen program
        switched to the alternate screen; with ``styled``, each row's runs of
        colours and attributes too (to draw it). Raises NoTerminal for a proc
        without one (or one no longer in the live view)."""
        ...

    async def close_stdin(self, proc_id: int) -> bool:
        """Close a proc's stdin (it reads EOF) once pending writes are done;
        False if it had none or it was closed already."""
        ...

    async def term_all(self, session: str | None = None, agent: str | None = None) -> None:
        """``term`` every running proc of a scope (None: any), concurrently."""
        ...

    async def kill_all(self, session: str | None = None, agent: str | None = None) -> None:
        """``kill`` every running proc of a scope (None: any), concurrently."""
        ...

    async def wait(self, proc_id: int, timeout: float | None = None) -> ExitInfo:
        """Wait until the proc exits; return how it ended.

        ``timeout``: raise Timeout (a TimeoutError) after that many seconds; the
        proc is left alone (it keeps running). A past id returns its recorded exit.
        """
        ...

    async def close(self) -> None:
        """Let go of everything this object holds; it never raises. (In process
        that stops every child; over a link, only the link: see each class.)"""
        ...
