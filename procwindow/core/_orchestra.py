"""Running a workspace on a supervisor: commands start as their dependencies
allow, are probed for liveness, restart by their policy with backoff, and stop
dependents first.

Each command has one driver task: it waits for its dependencies, spawns, waits
for the exit (while a readiness watcher and a liveness prober, :mod:`._liveness`,
run beside it), and asks the restart policy (:mod:`._restart`) whether to start
again. Every change of a command's state is published on the supervisor's event
hub as a ``phase`` event of the command's scope, and wakes the drivers that
wait for it; nothing polls.

The runtime sits between the data (:mod:`._workspace`, :mod:`._command`) and
the supervisor: it sees a supervisor as :class:`RunHost`, and hands itself to
``Workspace.start`` (``use_runtime``) when imported.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol

from ._command import Dependency, WorkspaceConflict, WorkspaceNotFound
from ._command_state import CommandState, commands_table, idx_rows
from ._errors import NotReady, ProcNotFound, ProcwindowError, SupervisorClosed
from ._liveness import Probed, probe_liveness
from ._proc import Proc
from ._ready import Ready, check_timeout
from ._restart import decide
from ._slot import FINAL, Slot, verdict
from ._types import EventKind, ExitInfo, Phase
from ._workspace import Host, Workspace, use_runtime

if TYPE_CHECKING:
    from ._archive import Archive
    from ._events import EventHub

__all__ = [
    "CommandState",
    "RunHost",
    "WorkspaceRun",
    "command_state",
    "commands_table",
    "idx_rows",
    "launch",
    "run_of",
]

log = logging.getLogger("procwindow")

#: Seconds past a command's grace (when SIGKILL is sent) that an ordered stop waits
#: for its exit; a process in uninterruptible sleep is left to the supervisor's close.
STOP_SLACK = 1.0


class RunHost(Probed, Protocol):
    """What a run needs of its supervisor (a ``Supervisor``): to spawn, wait
    and term (and probe, :class:`~._liveness.Probed`), its grace, its event
    hub, and its list of runs, which a run joins at its start and leaves at its
    end (the supervisor's ``close()`` stops those on it)."""

    @property
    def closed(self) -> bool: ...

    @property
    def _closing(self) -> bool: ...

    @property
    def graceful_timeout(self) -> float: ...

    @property
    def _events(self) -> EventHub: ...

    @property
    def _archive(self) -> Archive: ...

    @property
    def _workspaces(self) -> list[WorkspaceRun]: ...

    async def spawn(
        self,
        argv: Sequence[str] | None = None,
        *,
        session: str,
        agent: str,
        tool: str,
        cwd: str | None,
        env: Mapping[str, str] | None,
        graceful_timeout: float | None,
        stop_signal: int | None,
        stop_command: Sequence[str] | None,
        ready: Ready | None,
        pty: bool = False,
        rows: int | None = None,
        cols: int | None = None,
    ) -> Proc: ...

    async def wait(self, proc_id: int, timeout: float | None = None) -> ExitInfo: ...


async def _sleep_until(when: float) -> None:
    """Sleep until the wall clock reads ``when``, never less: qasync's timers are
    Qt's coarse ones, which may fire up to 5 % early, and an attempt announced for
    ``next_attempt_at`` must not come before it."""
    while (left := when - time.time()) > 0:  # noqa: ASYNC110 (a deadline, not an event)
        await asyncio.sleep(left)


class _About(NamedTuple):
    """What a phase event is about: the command's latest proc (0: none yet) and scope."""

    id: int
    session: str
    agent: str


class WorkspaceRun:
    """A workspace running on a supervisor (``Workspace.start`` makes one).

    Its commands' states are read with ``state(name)``, ``states()`` and
    ``state_of(proc_id)``, and followed as ``phase`` events on the
    supervisor (``sup.subscribe("session.*.agent.*.proc.phase")``), published
    whenever a command's phase, or what it waits for, changes.

    ``stop()`` stops it, dependents before what they depend on; the
    supervisor's ``close()`` does so too. ``cancel_restart(name)`` ends a crash
    loop while it waits for its next attempt; ``restart(name)`` starts a
    command again now, within the workspace (``Supervisor.restart`` of any of
    its procs does it).
    """

    def __init__(self, workspace: Workspace, supervisor: RunHost) -> None:
        self.workspace = workspace
        self.supervisor = supervisor
        self.name = workspace.title
        self._slots = {c.name: Slot(c) for c in workspace.commands if c.name is not None}
        self._dependents: dict[str, list[str]] = {name: [] for name in self._slots}
        for slot in self._slots.values():
            for dep in slot.spec.dependencies:
                self._dependents[dep.name].append(slot.name)
        self._by_proc: dict[int, Slot] = {}  # every run of every command
        self._waiters: list[asyncio.Future[None]] = []
        self._started = False
        self._stopped = False
        self._stopping: asyncio.Future[list[str]] | None = None

    def __repr__(self) -> str:
        phases = ", ".join(f"{s.name}={s.phase.value}" for s in list(self._slots.values())[:5])
        more = ", …" if len(self._slots) > 5 else ""
        state = "stopped" if self._stopped else "running"
        return f"<WorkspaceRun {self.name!r} {state} {phases}{more}>"

    # -- reading ---------------------------------------------------------------

    @property
    def running(self) -> bool:
        """True from ``start`` until it is stopped."""
        return self._started and not self._stopped

    def state(self, name: str) -> CommandState:
        """The state of the command ``name``; WorkspaceNotFound if there is none."""
        slot = self._slots.get(name)
        if slot is None:
            raise WorkspaceNotFound("command", name, list(self._slots)[:10])
        return slot.snapshot(self.name)

    def states(self) -> list[CommandState]:
        """Every command's state, in the workspace's order."""
        return [slot.snapshot(self.name) for slot in self._slots.values()]

    def state_of(self, proc_id: int) -> CommandState | None:
        """The state of the command that ran proc ``proc_id`` (any of its runs), or None."""
        slot = self._by_proc.get(proc_id)
        return slot.snapshot(self.name) if slot is not None else None

    def procs(self) -> list[Proc]:
        """The latest proc of each command that started, in the workspace's order."""
        return [slot.proc for slot in self._slots.values() if slot.proc is not None]

    async def wait_started(self, timeout: float | None = None) -> None:
        """Wait until no command waits any more: each has started (once at
        least), or was skipped, stopped or failed to start. TimeoutError after
        ``timeout`` seconds."""

        def settled() -> bool:
            return all(s.runs or s.phase in FINAL for s in self._slots.values())

        async with asyncio.timeout(check_timeout(timeout)):
            while not settled():
                await self._changed()

    async def wait_ended(self, name: str) -> CommandState:
        """Wait until the command ``name`` starts no more (completed, failed,
        stopped or skipped); its state then. WorkspaceNotFound if there is none."""
        self.state(name)
        while self._slots[name].phase not in FINAL:
            await self._changed()
        return self.state(name)

    # -- running ---------------------------------------------------------------

    async def start(self) -> None:
        """Start the drivers; return once each took its first step (see
        ``Workspace.start``)."""
        sup = self.supervisor
        if self._started:
            raise WorkspaceConflict(self.name)
        if sup.closed or sup._closing:
            raise SupervisorClosed("this supervisor is closing")
        for other in sup._workspaces:
            if other.name == self.name:
                raise WorkspaceConflict(self.name)
        self._started = True
        sup._workspaces.append(self)
        loop = asyncio.get_running_loop()
        for slot in self._slots.values():
            slot.first_step = loop.create_future()
            slot.task = loop.create_task(
                self._drive(slot), name=f"workspace {self.name}: {slot.name}"
            )
        steps = [s.first_step for s in self._slots.values() if s.first_step is not None]
        await asyncio.gather(*(asyncio.shield(step) for step in steps))

    async def _drive(self, slot: Slot) -> None:
        """The life of one command: dependencies, then runs until it settles."""
        try:
            if not await self._wait_for_dependencies(slot):
                return
            while True:
                proc = await self._spawn(slot)
                info = await self._watch(slot, proc) if proc is not None else None
                if not self._decide(slot, info):
                    return
                await _sleep_until(slot.next_attempt_at or 0.0)
        except SupervisorClosed:
            if slot.phase not in FINAL:
                self._set(slot, Phase.STOPPED, detail="the supervisor is closing")
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("workspace %s: command %s failed", self.name, slot.name)
            if slot.phase not in FINAL:
                self._set(slot, Phase.FAILED, detail=f"internal error: {exc}")
        finally:
            slot.stepped()

    async def _wait_for_dependencies(self, slot: Slot) -> bool:
        """Wait until every dependency's condition holds (True), or one of them
        can hold no more (False: the command is skipped, with the reason)."""
        while True:
            unmet = []
            for dep in slot.spec.dependencies:
                holds = verdict(dep.condition, self._slots[dep.name])
                if isinstance(holds, str):
                    self._set(slot, Phase.SKIPPED, detail=holds)
                    return False
                if not holds:
                    unmet.append(dep)
            if not unmet:
                return True
            if slot.phase is not Phase.WAITING or tuple(unmet) != slot.waiting_for:
                self._set(slot, Phase.WAITING, waiting_for=tuple(unmet))
            slot.stepped()
            await self._changed()

    async def _spawn(self, slot: Slot) -> Proc | None:
        """Start a run of the command; None if it cannot be started (the reason
        is its detail)."""
        spec = slot.spec
        self._set(slot, Phase.STARTING, waiting_for=())
        try:
            proc = await self.supervisor.spawn(
                spec.argv, **spec.spawn_args(self.workspace.graceful_timeout)
            )
        except SupervisorClosed:
            raise
        except (ProcwindowError, OSError) as exc:
            slot.last_exit = None
            slot.detail = f"cannot start: {exc}"
            return None
        link = slot.ran(proc, self.name)
        self.supervisor._archive.linked(proc, link)  # in the history too: it outlives us
        self._by_proc[proc.id] = slot
        slot.unhealthy = slot.check_gave_up = False
        phase = Phase.STARTING if spec.readiness is not None else Phase.RUNNING
        self._set(slot, phase, detail=None, previous=link.restart_of)
        slot.stepped()
        return proc

    async def _watch(self, slot: Slot, proc: Proc) -> ExitInfo:
        """Wait for the run's exit, watching its readiness and liveness meanwhile."""
        loop = asyncio.get_running_loop()
        helpers = []
        if slot.spec.readiness is not None:
            helpers.append(loop.create_task(self._watch_ready(slot, proc)))
        if slot.spec.liveness is not None:
            helpers.append(loop.create_task(self._probe_liveness(slot, proc)))
        try:
            return await self.supervisor.wait(proc.id)
        finally:
            for task in helpers:
                task.cancel()
            await asyncio.gather(*helpers, return_exceptions=True)

    async def _watch_ready(self, slot: Slot, proc: Proc) -> None:
        try:
            await self.supervisor.wait_ready(proc.id)
        except NotReady as exc:
            if exc.exit is None:  # its check gave up; the proc runs on, never ready
                slot.check_gave_up = True
                self._set(slot, Phase.RUNNING, detail=exc.why)  # "its check (…) gave up after 5 s"
            return
        except ProcNotFound:
            return
        slot.ever_ready = True
        if slot.proc is proc and proc.exit is None:
            self._set(slot, Phase.READY)

    async def _probe_liveness(self, slot: Slot, proc: Proc) -> None:
        live = slot.spec.liveness
        assert live is not None

        def failed(why: str) -> None:
            slot.unhealthy = True
            self._set(slot, slot.phase, detail=why)

        await probe_liveness(
            self.supervisor,
            proc,
            live,
            after_ready=slot.spec.readiness is not None,
            on_failure=failed,
        )

    def _decide(self, slot: Slot, info: ExitInfo | None) -> bool:
        """After a run ended (``info``; None: it could not start), whether to
        start again (the policy's ``decide``). Sets the phase and, for a
        restart, its time."""
        asked, slot.restart_asked = slot.restart_asked, False
        decision = decide(
            slot.spec,
            info,
            streak=slot.streak,
            unhealthy=slot.unhealthy,
            detail=slot.detail,
            asked=asked,
        )
        if info is not None or asked:
            slot.last_exit = info
        slot.streak = decision.streak
        if decision.restart:
            slot.restarts += 1
            slot.next_attempt_at = time.time() + decision.delay
        self._set(slot, decision.phase, detail=decision.detail)
        return decision.restart

    # -- restarting on request ---------------------------------------------------------

    def owns(self, proc_id: int) -> str | None:
        """The name of the command that ran ``proc_id`` (any of its runs), or None."""
        slot = self._by_proc.get(proc_id)
        return slot.name if slot is not None else None

    async def restart(self, name: str) -> Proc:
        """Start the command ``name`` again now, within the workspace, and
        return its new proc: a running proc is terminated (with its grace) and
        the next run starts at once; one waiting out its backoff starts now; a
        command that had stopped, completed or failed starts again (once its
        dependencies allow). Its restart policy, checks and dependents stay as
        they were; the crash loop's count starts again. WorkspaceNotFound if
        there is no such command; SupervisorClosed once the run has stopped.
        """
        slot = self._slots.get(name)
        if slot is None:
            raise WorkspaceNotFound("command", name, list(self._slots)[:10])
        if self._stopped:
            raise SupervisorClosed(f"workspace {self.name!r} is stopped")
        before = slot.proc.id if slot.proc is not None else None
        proc = slot.proc
        driving = slot.task is not None and not slot.task.done()
        if driving and proc is not None and proc.exit is None and slot.phase is not Phase.WAITING:
            slot.restart_asked = True
            with contextlib.suppress(ProcNotFound):
                await self.supervisor.term(proc.id)
        else:
            if driving and slot.task is not None:  # waiting out a backoff, or its dependencies
                slot.task.cancel()
                await asyncio.gather(slot.task, return_exceptions=True)
            slot.streak = 0
            slot.restarts += 1 if before is not None else 0
            slot.task = asyncio.get_running_loop().create_task(
                self._drive(slot), name=f"workspace {self.name}: {slot.name}"
            )
        while slot.proc is None or slot.proc.id == before:
            if self._stopped or (slot.task is not None and slot.task.done()):
                raise ProcwindowError(
                    f"{self.name}/{slot.name} did not start again: {slot.detail or slot.phase}"
                )
            await self._changed()
        return slot.proc

    # -- stopping ----------------------------------------------------------------

    def cancel_restart(self, name: str) -> bool:
        """End the crash loop of ``name`` while it waits for its next attempt:
        it is ``stopped`` and starts no more. False if it was not restarting."""
        slot = self._slots.get(name)
        if slot is None:
            raise WorkspaceNotFound("command", name, list(self._slots)[:10])
        if slot.phase is not Phase.RESTARTING:
            return False
        if slot.task is not None:
            slot.task.cancel()
        self._set(slot, Phase.STOPPED, detail=f"restart cancelled; {slot.detail or 'it exited'}")
        return True

    async def stop(self, names: Iterable[str] | None = None) -> list[str]:
        """Stop the commands ``names`` and every command that depends on them
        (None: every command), dependents before what they depend on, each
        terminated with its grace (SIGTERM, SIGKILL after the grace);
        independent ones at once. Nothing of them starts again. Returns the
        names in the order they stopped.

        Bounded: each command takes at most its grace plus a second, so the
        whole stop takes at most that much along the longest dependency chain.
        Stopping every command ends the run (it leaves ``supervisor.workspaces``).
        """
        if names is None:
            if self._stopping is not None:  # a stop of everything is under way
                return await asyncio.shield(self._stopping)
            self._stopping = asyncio.get_running_loop().create_future()
            try:
                order = await self._stop(list(self._slots))
            except BaseException as exc:
                self._stopping.set_exception(exc)
                self._stopping.exception()  # retrieved: whoever awaits it sees it
                raise
            finally:
                self._end()
            self._stopping.set_result(order)
            return order
        targets = self._with_dependents(list(names))
        return await self._stop(targets)

    def _with_dependents(self, names: Sequence[str]) -> list[str]:
        for name in names:
            if name not in self._slots:
                raise WorkspaceNotFound("command", name, list(self._slots)[:10])
        chosen: set[str] = set()
        todo = list(names)
        while todo:
            name = todo.pop()
            if name not in chosen:
                chosen.add(name)
                todo.extend(self._dependents[name])
        return [name for name in self._slots if name in chosen]

    async def _stop(self, names: list[str]) -> list[str]:
        slots = [self._slots[name] for name in names]
        drivers = [s.task for s in slots if s.task is not None and not s.task.done()]
        for task in drivers:
            task.cancel()
        # Each driver only awaits what gives way to a cancel at once (a spawn
        # gives its child up, a term goes on in the supervisor).
        await asyncio.gather(*drivers, return_exceptions=True)
        order: list[str] = []
        loop = asyncio.get_running_loop()
        done: dict[str, asyncio.Future[None]] = {s.name: loop.create_future() for s in slots}

        async def stop_one(slot: Slot) -> None:
            try:
                await asyncio.gather(*(done[d] for d in self._dependents[slot.name] if d in done))
                proc = slot.proc
                if proc is not None and proc.exit is None:
                    grace = proc.graceful_timeout
                    if grace is None:
                        grace = self.supervisor.graceful_timeout
                    try:
                        await asyncio.wait_for(self.supervisor.term(proc.id), grace + STOP_SLACK)
                    except TimeoutError:
                        log.warning(
                            "workspace %s: %s (proc %d) did not exit within its grace",
                            self.name,
                            slot.name,
                            proc.id,
                        )
                    except ProcNotFound:
                        pass
                if slot.phase not in FINAL:
                    self._set(slot, Phase.STOPPED, detail="stopped on request")
                order.append(slot.name)
            finally:
                done[slot.name].set_result(None)

        await asyncio.gather(*(stop_one(slot) for slot in slots))
        return order

    def _end(self) -> None:
        """The run is over: it leaves its supervisor's list."""
        self._stopped = True
        with contextlib.suppress(ValueError):
            self.supervisor._workspaces.remove(self)
        self._fire()

    # -- state changes -------------------------------------------------------------

    def _set(
        self,
        slot: Slot,
        phase: Phase,
        *,
        waiting_for: tuple[Dependency, ...] | None = None,
        detail: str | None = None,
        previous: int | None = None,
    ) -> None:
        """Change a command's state, announce it, and wake whoever waits on states."""
        slot.phase = phase
        if waiting_for is not None:
            slot.waiting_for = waiting_for
        slot.detail = detail
        if phase is not Phase.RESTARTING:
            slot.next_attempt_at = None
        spec = slot.spec
        about = _About(slot.proc.id if slot.proc is not None else 0, spec.session, spec.agent)
        self.supervisor._events.publish(
            about,
            EventKind.PHASE,
            workspace=self.name,
            command=slot.name,
            phase=phase,
            waiting_for=tuple((d.name, d.condition.value) for d in slot.waiting_for)
            if phase is Phase.WAITING
            else (),
            restarts=slot.restarts,
            next_attempt_at=slot.next_attempt_at,
            detail=slot.detail,
            previous=previous,
        )
        self._fire()

    def _fire(self) -> None:
        waiters, self._waiters = self._waiters, []
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    async def _changed(self) -> None:
        """Wait for the next change of any command's state (or the run's end)."""
        fut = asyncio.get_running_loop().create_future()
        self._waiters.append(fut)
        await fut


def run_of(supervisor: Host[WorkspaceRun], proc_id: int) -> tuple[WorkspaceRun, str] | None:
    """The running workspace that ran ``proc_id``, and its command's name; or None."""
    for run in supervisor.workspaces:
        name = run.owns(proc_id)
        if name is not None:
            return run, name
    return None


def command_state(supervisor: Host[WorkspaceRun], proc_id: int) -> CommandState | None:
    """The workspace state of the command that ran ``proc_id`` on ``supervisor``
    (any of its runs), or None if no running workspace ran it.

    >>> state = command_state(sup, 12)  # doctest: +SKIP
    >>> state.describe() if state else ""  # doctest: +SKIP
    'restarting in 4 s'
    """
    for run in supervisor.workspaces:
        state = run.state_of(proc_id)
        if state is not None:
            return state
    return None


async def launch(workspace: Workspace, supervisor: RunHost) -> WorkspaceRun:
    """``Workspace.start``: a run of ``workspace`` on ``supervisor``, started."""
    run = WorkspaceRun(workspace, supervisor)
    await run.start()
    return run


use_runtime(launch)
