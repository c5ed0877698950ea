"""The processes of a proc's tree, one by one: what ``tree`` reports of each
(pid, parent, command, state, CPU, memory) and a signal to one of them.

A tree's members are found as ``stats`` finds them (``_signals.tree_in``: its
descendants by parentage, every process carrying its marker, its cgroup) in
the same scan of /proc, and measured by the same sample, so that the figures
of a tree's processes add up to its row's.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal

import psutil

from . import _linux
from ._child import Child, StopCause
from ._reports import STATS_TREE_TTL, tree_sample
from ._signals import TreeSignals
from ._tree import FRESH_TTL
from ._types import TreeProcess

__all__ = ["MAX_TREE", "live_tree", "send", "tree_processes"]

#: The most processes a ``tree`` report lists (a fork bomb's tree is cut here).
MAX_TREE = 1000


def live_tree(child: Child, signals: TreeSignals | None) -> tuple[Child, list[int]]:
    """The child and its live descendants, from a scan at most STATS_TREE_TTL old."""
    tree = signals.tree(child, max_age=STATS_TREE_TTL) if signals is not None else None
    return child, list(tree or ())


def tree_processes(child: Child, signals: TreeSignals | None) -> list[TreeProcess]:
    """The proc's own process (while it runs) and its live descendants, parents
    before their children, siblings by pid; at most :data:`MAX_TREE`.

    It costs what ``stats`` costs and little more: the members come from its
    scan, CPU and memory from its sample; state, parent and command line are
    read now (``/proc/<pid>/stat`` and ``cmdline``, a read each)."""
    _, descendants = live_tree(child, signals)
    snap = signals.snap(STATS_TREE_TTL) if signals is not None else None
    _, sampled = tree_sample(child, descendants)
    members = ([child.os_pid] if child.running else []) + descendants
    stat: dict[int, _linux.Stat] = {}
    for pid in members:
        # The scan finds the members (up to STATS_TREE_TTL old); each one's state
        # and parent are read now, and one gone since (or whose pid names another
        # process now) is left out.
        known_start = snap.info[pid].start if snap is not None and pid in snap.info else None
        try:
            info = _linux.stat_fields(pid)
        except OSError:  # out of fds: what the scan saw
            info = snap.info.get(pid) if snap is not None else None
        if info is not None and info.state != "X" and known_start in (None, info.start):
            stat[pid] = info
    parent = {pid: info.ppid for pid, info in stat.items()}
    out: list[TreeProcess] = []
    for pid, depth in _ordered(child.os_pid if child.running else None, parent)[:MAX_TREE]:
        info = stat[pid]
        # Read each time: an exec changes it, not the pid or the start.
        command = _command(pid)
        cpu, rss, threads = sampled.get(pid, (0.0, 0, 0))
        started = _boot_time() + info.start / _TICKS
        state = _STATES.get(info.state, info.state)
        out.append(TreeProcess(pid, info.ppid, depth, state, command, cpu, rss, threads, started))
    return out


def _ordered(root: int | None, parent: dict[int, int]) -> list[tuple[int, int]]:
    """``(pid, depth)`` depth-first: the root, then each process under its parent
    (one whose parent is not a member hangs under the root, at depth 1)."""
    kids: dict[int | None, list[int]] = {}
    for pid, ppid in parent.items():
        if pid == root:
            continue
        kids.setdefault(ppid if ppid in parent else root, []).append(pid)
    out: list[tuple[int, int]] = []
    todo: list[tuple[int, int]] = [(root, 0)] if root is not None else []
    todo += [(pid, 1) for pid in sorted(kids.get(None, ()), reverse=True)]
    while todo:
        pid, depth = todo.pop()
        out.append((pid, depth))
        todo += [(kid, depth + 1) for kid in sorted(kids.get(pid, ()), reverse=True)]
    return out


#: The kernel's one-letter states (``/proc/<pid>/stat``), as ``ps`` and psutil name them.
_STATES = {
    "R": "running",
    "S": "sleeping",
    "D": "disk-sleep",
    "T": "stopped",
    "t": "tracing-stop",
    "Z": "zombie",
    "X": "dead",
    "I": "idle",
    "P": "parked",
    "W": "waking",
    "K": "wake-kill",
}
#: Clock ticks a second, the unit of a process's start in ``/proc/<pid>/stat``.
_TICKS = os.sysconf("SC_CLK_TCK")


@functools.cache
def _boot_time() -> float:
    return float(psutil.boot_time())


def _command(pid: int) -> str:
    """The command line of ``pid`` (``[name]`` for one without: a zombie)."""
    raw = name = None
    with contextlib.suppress(OSError):
        raw = _linux.read_proc(pid, "cmdline")
        if not raw:
            name = _linux.read_proc(pid, "comm")
    if raw:
        return " ".join(a.decode("utf-8", "replace") for a in raw.rstrip(b"\0").split(b"\0"))
    return f"[{name.decode('utf-8', 'replace').strip() if name else pid}]"


def send(child: Child, signals: TreeSignals, sig: int, os_pid: int | None) -> bool:
    """``sig`` to the child's process group, or with ``os_pid`` to that one
    process of its tree. False when the child has exited, or ``os_pid`` is not
    (or no longer) a live process of its tree: a pid is checked against the
    tree and its start time just before the signal, so a reused pid is never hit."""
    if os_pid is None or os_pid == child.os_pid:
        if not child.running:
            return False
        if sig not in (0, signal.SIGCONT):
            child.note_stop(StopCause.SIGNALLED)
        if os_pid is None:
            return signals.signal_group(child, sig)
        pidfd = child.pidfd
        if pidfd is None:
            return False
        with contextlib.suppress(ProcessLookupError):
            signal.pidfd_send_signal(pidfd, sig)
        return True
    tree = signals.tree(child, max_age=FRESH_TTL)
    start = (tree or {}).get(os_pid)
    if start is None:
        return False
    return _linux.signal_if_same(os_pid, start, sig)
