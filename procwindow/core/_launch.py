"""Launching: a checked spawn becomes a started child (``Starter``) with its
Proc and Child, registered and watched (its pipes, its pidfd, its timeout and
readiness check); the exit that watch sees is taken, drained, recorded and
announced."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from . import _pty, _spawn, _waiting
from ._child import Child
from ._proc import Proc, SpawnOptions
from ._reaper import SWEEP_INTERVAL, own_child
from ._screen import TerminalScreen
from ._spawn import check_cwd, resolve
from ._types import Clock, EventKind, Stream

if TYPE_CHECKING:
    from ._agent import Procs
    from ._archive import Archive
    from ._capture import Capture
    from ._events import EventHub
    from ._guard import Guard
    from ._leaders import Leaders
    from ._output import OutputStore
    from ._reaper import Sweeper
    from ._starter import Spawned, Starter

__all__ = ["Launcher"]

log = logging.getLogger("procwindow")


class Launcher:
    """Starts the children of a supervisor bound to ``loop`` and watches each
    until it exits.

    ``guards`` (the watchdog, the state file) list a child from its start to
    its reap (``leaders`` holds an exited leader's zombie until its group is
    empty); ``new_store`` makes a child's ring; ``time_out`` is called when
    a child's ``timeout`` runs out; ``procs`` is what readiness checks read.
    """

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        starter: Starter,
        capture: Capture,
        sweeper: Sweeper,
        children: dict[int, Child],
        archive: Archive,
        events: EventHub,
        clock: Clock,
        guards: Sequence[Guard],
        new_store: Callable[[], OutputStore],
        time_out: Callable[[Child], None],
        procs: Callable[[], Procs],
        leaders: Leaders,
    ) -> None:
        self._loop = loop
        self._starter = starter
        self._capture = capture
        self._sweeper = sweeper
        self._children = children
        self._archive = archive
        self._events = events
        self._clock = clock
        self._guards = guards
        self._new_store = new_store
        self._time_out = time_out
        self._procs = procs
        self._leaders = leaders

    async def spawn(self, values: Mapping[str, Any]) -> Proc:
        """``Supervisor.spawn`` once its arguments are checked (``values``, as
        the spec's ``run`` gives them): a new proc, or the running one reused."""
        args, session, agent = values["argv"], values["session"], values["agent"]
        cwd = check_cwd(values["cwd"])
        overrides = values["env"]
        options = SpawnOptions(
            timeout=values["timeout"],
            merge_stderr=values["merge_stderr"],
            stdin=values["stdin"],
            ready=values["ready"],
            pty=(values["rows"], values["cols"]) if values["pty"] else None,
            stop_signal=values["stop_signal"],
            stop_command=values["stop_command"],
        )
        if values["reuse"]:
            for child in reversed(self._children.values()):
                p = child.proc
                if p.running and (p.argv, p.cwd, p.session, p.agent) == (args, cwd, session, agent):
                    return p
        env = _spawn.child_env(overrides)
        exe = resolve(args[0], _spawn.exec_path(env), cwd)
        if options.pty is not None:
            _pty.describe_terminal(env, overrides or {})
        wiring = _spawn.Wiring(options.merge_stderr, options.stdin, options.pty)
        spawned = await self._starter.start(args, exe, cwd, env, wiring)
        started = spawned.started
        for guard in self._guards:
            guard.started(started.popen.pid, started.start)
        proc = Proc(
            proc_id=spawned.proc_id,
            os_pid=started.popen.pid,
            argv=args,
            session=session,
            agent=agent,
            tool=values["tool"],
            cwd=cwd,
            env=dict(overrides) if overrides is not None else None,
            started_at=self._clock.time(),
            started_mono=self._clock.monotonic(),
            graceful_timeout=values["graceful_timeout"],
            options=options,
        )
        self._watch(proc, spawned)
        return proc

    def _watch(self, proc: Proc, spawned: Spawned) -> None:
        """Make the proc's Child and register it; watch its pipes, its pidfd
        (the exit), its timeout and its readiness check; announce the start."""
        started = spawned.started
        fds = {Stream.STDOUT: started.stdout}
        if started.stderr is not None:
            fds[Stream.STDERR] = started.stderr
        else:  # merged: stderr has no pipe, and nothing more to log
            spawned.disk.end(Stream.STDERR, proc.started_at, 0)
        child = Child(
            proc,
            started.popen,
            started.pidfd,
            fds,
            self._new_store(),
            spawned.disk,
            self._loop.create_future(),
        )
        child.stdin_fd = started.stdin
        child.marker = spawned.marker
        if proc.options.pty is not None:
            child.screen = TerminalScreen(*proc.options.pty)
        self._children[proc.id] = child
        self._archive.started(proc)
        pid = proc.os_pid
        own_child(pid, functools.partial(self.on_exit, child))
        self._capture.watch(child)
        self._loop.add_reader(started.pidfd, self.on_exit, child)
        self._events.publish(
            proc, EventKind.START, os_pid=pid, tool=proc.tool, cmd=proc.cmd, at=proc.started_at
        )
        options = proc.options
        if options.timeout is not None:
            child.timeout_handle = self._loop.call_later(options.timeout, self._time_out, child)
        if options.ready is not None:
            watch = _waiting.watch_ready(self._procs(), child, options.ready, self._events.publish)
            child.ready_task = self._loop.create_task(watch)
        self._sweeper.schedule(SWEEP_INTERVAL, scan=False)

    def on_exit(self, child: Child) -> None:
        """The pidfd is readable (or a subreaper saw the zombie): take the
        status, drain the pipes, record and announce the exit."""
        status = child.take_exit(self._loop)
        if status is None:  # woken, but not exited yet (or its exit was taken)
            return
        code, sig, stolen = status
        if stolen:
            log.warning("proc %d: its exit status was reaped by someone else", child.id)
        # Everything the child wrote is in the pipes now: take it before
        # announcing the exit, so a reader woken by the exit sees all output.
        try:
            self._capture.drain(child)
        except Exception:  # the exit must be recorded whatever happened above
            log.exception("proc %d: draining its pipes at exit failed", child.id)
        if child.timeout_handle is not None:
            child.timeout_handle.cancel()
            child.timeout_handle = None
        # Its stdin goes with it (a descendant that reads it sees EOF).
        child.close_stdin(self._loop)
        reason = child.exit_reason(code, sig, stolen)
        info = child.proc._set_exited(
            code, sig, reason, self._clock.time(), self._clock.monotonic()
        )
        child.final_seq = child.store.last_seq
        self._archive.ended(child.proc)
        child.set_exit(info)
        self._capture.flush_child(child)  # its output events come before its exit
        self._events.publish(
            child.proc,
            EventKind.EXIT,
            code=code,
            signal=sig,
            reason=reason,
            runtime=info.runtime,
            tool=child.proc.tool,
            cmd=child.proc.cmd,
            last_seq=child.final_seq,
            at=child.proc.ended_at,
        )
        child.wake()
        if child.held:
            self._leaders.hold(child)  # reaped once its group is empty
        else:
            self.reaped(child)

    def reaped(self, child: Child) -> None:
        """``child`` was reaped: its pid may be reused from now on."""
        own_child(child.os_pid, None)
        for guard in self._guards:
            guard.reaped(child.os_pid)
        self._sweeper.schedule(SWEEP_INTERVAL, scan=False)  # to flush the guards
