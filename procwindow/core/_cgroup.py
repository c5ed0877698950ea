"""A cgroup per proc, where the system lets us make one (cgroup v2).

A process cannot leave its cgroup: not by forking, ``setsid``, double-forking,
changing its pid over and over (a "pid hopper"), or scrubbing its environment
(which loses the marker). So where one can be made, each proc's first process
is put in a cgroup of its own, ``<ours>/procwindow-<pid ns>.<token>/<proc id>``, as soon
as it has exec'd (microseconds later, while a dynamically linked program is
still being loaded: a fork before that is the one way out, and a tree that
forks at once is still found by its group and marker), and its tree is what
that cgroup holds: ``cgroup.kill``
stops all of it at once, and the watchdog does the same for every proc if the
host dies. Where no cgroup can be made (no cgroup v2, or not ours to write), the
process group and the marker chase do the work alone, as they always did.

Our cgroup is the one ``/proc/self/cgroup`` names under the cgroup2 mount;
making a child cgroup there needs write access to it (root, or a delegated
subtree as systemd gives a user's session), and no controller enabled below it.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import time

from . import _linux

__all__ = ["Cgroups", "cgroup2_root"]

log = logging.getLogger("procwindow")

#: Seconds ``close`` waits for the processes it killed to be gone.
CLOSE_WAIT = 2.0


def _cgroup2_mount() -> str | None:
    """Where the cgroup v2 hierarchy is mounted (``/sys/fs/cgroup`` on a
    unified system, ``/sys/fs/cgroup/unified`` on a hybrid one), or None."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                left, _, right = line.partition(" - ")
                if right.split(" ", 1)[0] == "cgroup2":
                    return left.split(" ")[4].replace("\\040", " ")
    except OSError:
        return None
    return None


def cgroup2_root() -> str | None:
    """The directory of this process's own cgroup v2, or None."""
    mount = _cgroup2_mount()
    if mount is None:
        return None
    try:
        with open("/proc/self/cgroup", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("0::"):
                    path = line[3:].rstrip("\n")
                    if path.endswith(" (deleted)"):
                        return None
                    return os.path.join(mount, path.lstrip("/"))
    except OSError:
        return None
    return None


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


#: The most processes forked before their proc was moved that are moved after it.
_MAX_EARLY_FORKS = 64


def _children(pid: int) -> list[int]:
    """The children of ``pid`` now (of every thread of it)."""
    out: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                out += [int(word) for word in f.read().split()]
        except (OSError, ValueError):
            continue
    return out


def _exited(pid: int) -> bool:
    """True if ``pid`` is a zombie or gone (or cannot be looked at, at the fd limit)."""
    try:
        info = _linux.stat_fields(pid)
    except OSError:
        return True
    return info is None or info.state in ("Z", "X")


def _move_children(procs: str, pid: int, most: int) -> None:
    """Move the descendants of ``pid`` (by parentage, at most ``most``) into the
    cgroup whose ``cgroup.procs`` is ``procs``."""
    todo = _children(pid)
    while todo and most > 0:
        child = todo.pop()
        most -= 1
        with contextlib.suppress(OSError):  # gone meanwhile
            _write(procs, str(child))
        todo += _children(child)


#: A supervisor's cgroup: ``procwindow-<its pid namespace>.<its pid>.<token's rest>``.
_STALE = re.compile(r"procwindow-(\d+)\.(\d+)\.[0-9a-f]+")


def _pid_namespace() -> int:
    """The inode of this process's pid namespace (0 if it cannot be read)."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def _clear_stale(root: str) -> None:
    """Remove the cgroups of supervisors that died without their watchdog
    (its pid names no process now), killing what they still hold. Only those of
    our pid namespace: a pid seen from another one (a container, ``unshare``)
    names another process, and the cgroup tree is shared. One whose pid was
    reused since is left alone: a rare leftover, never a wrong kill."""
    try:
        names = os.listdir(root)
    except OSError:
        return
    ours = str(_pid_namespace())
    for name in names:
        match = _STALE.fullmatch(name)
        if match is None or match[1] != ours or os.path.exists(f"/proc/{match[2]}"):
            continue
        base = os.path.join(root, name)
        with contextlib.suppress(OSError):
            _write(os.path.join(base, "cgroup.kill"), "1")
        deadline = time.monotonic() + CLOSE_WAIT
        while os.path.isdir(base) and time.monotonic() < deadline:
            try:
                for sub in os.listdir(base):
                    if os.path.isdir(os.path.join(base, sub)):
                        with contextlib.suppress(OSError):
                            os.rmdir(os.path.join(base, sub))
                os.rmdir(base)
            except OSError:
                time.sleep(0.01)
        log.info("removed the cgroups of a dead supervisor: %s", base)


class Cgroups:
    """The cgroups of one supervisor's procs, under ``base``."""

    def __init__(self, base: str) -> None:
        self.base = base
        #: Procs that have a cgroup: their ids.
        self._made: set[int] = set()
        #: Procs whose cgroup is to go as soon as it is empty.
        self._doomed: set[int] = set()
        #: Procs whose first process had exited when it was moved: what it forked
        #: before may not be in its cgroup (an orphan is no one's child to move).
        self._late: set[int] = set()

    @classmethod
    def make(cls, token: str) -> Cgroups | None:
        """The supervisor's cgroup (``procwindow-<pid ns>.<token>`` in our own), or
        None where one cannot be made: then procs get none."""
        if os.environ.get("PROCWINDOW_NO_CGROUPS"):
            return None
        root = cgroup2_root()
        if root is None:
            return None
        _clear_stale(root)
        base = os.path.join(root, f"procwindow-{_pid_namespace()}.{token}")
        try:
            os.mkdir(base, 0o755)
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOENT):
                log.info("no cgroups for procs (%s): trees are found by marker", exc)
            return None
        return cls(base)

    def _path(self, proc_id: int) -> str:
        return os.path.join(self.base, str(proc_id))

    def add(self, proc_id: int, pid: int) -> bool:
        """Put process ``pid`` (a proc's first) in a cgroup of its own; False
        if it cannot be (its tree is then found by marker alone)."""
        path = self._path(proc_id)
        try:
            os.mkdir(path, 0o755)
        except OSError:
            return False
        procs = os.path.join(path, "cgroup.procs")
        try:
            _write(procs, str(pid))
        except OSError:
            with contextlib.suppress(OSError):
                os.rmdir(path)
            return False
        self._made.add(proc_id)
        # What it forked before it was moved (a loaded machine may take a while
        # to get here) stayed in our cgroup: the children it still has go too,
        # and theirs. Whatever forks from now on is born in its cgroup.
        _move_children(procs, pid, _MAX_EARLY_FORKS)
        if _exited(pid):  # its children were orphans already: not all were moved
            self._late.add(proc_id)
        return True

    def whole(self, proc_id: int) -> bool:
        """True if a proc's cgroup holds its whole tree: it has one, and its first
        process still ran when its children were moved there (so an empty cgroup
        means nothing of the proc is left)."""
        return proc_id in self._made and proc_id not in self._late

    def has(self, proc_id: int) -> bool:
        return proc_id in self._made

    def members(self, proc_id: int) -> list[int] | None:
        """The processes in a proc's cgroup (its whole tree), or None if it has none."""
        if proc_id not in self._made:
            return None
        try:
            with open(os.path.join(self._path(proc_id), "cgroup.procs"), "rb") as f:
                return [int(pid) for pid in f.read().split()]
        except OSError:
            return None

    def kill(self, proc_id: int) -> bool:
        """SIGKILL every process of a proc's cgroup at once (no fork escapes);
        False if it has none, or the kernel has no ``cgroup.kill`` (before 5.14)."""
        if proc_id not in self._made:
            return False
        try:
            _write(os.path.join(self._path(proc_id), "cgroup.kill"), "1")
        except OSError:
            return False
        return True

    def remove(self, proc_id: int) -> bool:
        """Remove a proc's cgroup once it holds no process; False while it does."""
        if proc_id not in self._made:
            return True
        try:
            os.rmdir(self._path(proc_id))
        except FileNotFoundError:
            pass
        except OSError:
            return False
        self._made.discard(proc_id)
        self._late.discard(proc_id)
        return True

    def discard(self, proc_id: int) -> None:
        """A proc is done with (dismissed): kill what is left of its tree, and
        remove its cgroup now or, once those are gone, at a later ``tidy``."""
        if proc_id in self._made:
            self.kill(proc_id)
            if not self.remove(proc_id):
                self._doomed.add(proc_id)

    def tidy(self, proc_id: int | None = None) -> None:
        """Remove the cgroup of ``proc_id`` if it is empty (an exited proc that
        left nothing running), and those of dismissed procs now empty."""
        if proc_id is not None and self.members(proc_id) == []:
            self.remove(proc_id)
        for doomed in list(self._doomed):
            if self.remove(doomed):
                self._doomed.discard(doomed)

    def close(self) -> None:
        """Kill what is left in every proc's cgroup and remove them all."""
        for proc_id in list(self._made):
            self.kill(proc_id)
        deadline = time.monotonic() + CLOSE_WAIT
        while True:
            for proc_id in list(self._made):
                self.remove(proc_id)
            if not self._made or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        if self._made:
            log.warning("cgroups of procs %s still hold processes", sorted(self._made))
            return
        with contextlib.suppress(OSError):
            os.rmdir(self.base)
