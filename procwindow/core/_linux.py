"""The Linux facilities the supervisor stands on: pidfds, the subreaper, /proc."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import signal
import sys
from collections.abc import Iterator
from typing import NamedTuple

from ._errors import UnsupportedPlatform

__all__ = [
    "MARKER_VAR",
    "FdReserve",
    "Stat",
    "is_fd_exhaustion",
    "marker_needle",
    "read_marker",
    "read_proc",
    "require_linux",
    "set_subreaper",
    "signal_if_same",
    "stat_fields",
]

#: Every child carries ``PROCWINDOW_PROC=<supervisor token>:<proc id>`` in its
#: environment, so its descendants can be found even after they left its process
#: group (``setsid``) and its leader has exited.
MARKER_VAR = "PROCWINDOW_PROC"

_PR_SET_CHILD_SUBREAPER = 36


def require_linux() -> None:
    """Raise UnsupportedPlatform unless pidfds work here."""
    if not sys.platform.startswith("linux"):
        raise UnsupportedPlatform(
            f"procwindow's supervisor runs on Linux only (this is {sys.platform}): "
            "it needs pidfd_open and waitid(P_PIDFD), Linux ≥ 5.3"
        )
    if not hasattr(os, "pidfd_open") or not hasattr(signal, "pidfd_send_signal"):
        raise UnsupportedPlatform("this Python lacks os.pidfd_open / signal.pidfd_send_signal")
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError as exc:
        raise UnsupportedPlatform(
            f"pidfd_open failed ({exc.strerror}); procwindow needs Linux ≥ 5.3"
        ) from exc


def set_subreaper(on: bool) -> bool:
    """Make this process the reaper of orphaned descendants; True if it worked."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


#: errnos that mean "no file descriptor (or memory) to spare right now", not "gone".
_EXHAUSTION = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOMEM})


def is_fd_exhaustion(exc: BaseException) -> bool:
    """True for EMFILE, ENFILE and ENOMEM: the call may work once fds are freed."""
    return isinstance(exc, OSError) and exc.errno in _EXHAUSTION


#: Bytes asked for per read of a /proc file (``stat`` fits in one).
_PROC_READ = 64 * 1024


def read_proc(pid: int, name: str) -> bytes | None:
    """``/proc/<pid>/<name>``, or None if it cannot be read (gone, not ours).

    Out of file descriptors (EMFILE, ENFILE) it raises OSError rather than
    answering None: "cannot look" must never be taken for "it is gone".
    """
    # os.open and os.read: a buffered file object costs four more system
    # calls (fstat, ioctl, lseek), and this runs for every spawn and sweep.
    try:
        fd = os.open(f"/proc/{pid}/{name}", os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        if is_fd_exhaustion(exc):
            raise
        return None
    try:
        chunks = []
        while chunk := os.read(fd, _PROC_READ):
            chunks.append(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    return b"".join(chunks)


class Stat(NamedTuple):
    """The fields of ``/proc/<pid>/stat`` the supervisor uses."""

    state: str  # R, S, D, Z, X …
    ppid: int
    pgrp: int
    start: int  # clock ticks after boot: with the pid, names one process for good


def stat_fields(pid: int) -> Stat | None:
    """``/proc/<pid>/stat`` of a process, or None if it is gone.

    Out of file descriptors (EMFILE, ENFILE) it raises OSError rather than
    answering None: "cannot look" must never be taken for "it is gone".
    """
    raw = read_proc(pid, "stat")
    if raw is None:
        return None
    # comm may hold spaces and parentheses: the fields start after the last ')'.
    rest = raw[raw.rfind(b")") + 2 :].split()
    return Stat(rest[0].decode(), int(rest[1]), int(rest[2]), int(rest[19]))


def signal_if_same(pid: int, start: int, sig: int) -> bool:
    """Send ``sig`` to ``pid`` if it is still the process that started at ``start``.

    False if it is gone or its pid now names another process. Raises OSError
    when out of file descriptors: then nobody knows, and nothing is sent.
    (A pid read from /proc is not ours to reap, so it can be reused between the
    look and the kill; the window is the few microseconds between the two.)
    """
    now = stat_fields(pid)
    if now is None or now.start != start:
        return False
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)
    return True


def read_marker(pid: int, needle: bytes) -> int | None:
    """The proc id in ``pid``'s marker if its environment holds ``needle``, else None.

    Raises OSError when out of file descriptors (see ``stat_fields``).
    """
    env = read_proc(pid, "environ")
    if env is None:
        return None
    at = env.find(needle)
    if at < 0 or (at > 0 and env[at - 1] != 0):
        return None
    end = env.find(b"\0", at)
    value = env[at + len(needle) : end if end >= 0 else len(env)]
    return int(value) if value.isdigit() else None


def marker_needle(token: str) -> bytes:
    """What a supervisor's children carry in their environment, before the proc id."""
    return f"{MARKER_VAR}={token}:".encode()


class FdReserve:
    """A few spare file descriptors, given back when the process runs out.

    At the fd limit (``ulimit -n``) the supervisor must still be able to look at
    /proc to stop a child's whole tree: reading a directory and one file at a
    time needs two fds. ``released()`` closes the spares for the duration of
    such a look and takes them again afterwards (as many as it can get).
    """

    __slots__ = ("_fds", "_size")

    def __init__(self, size: int) -> None:
        self._size = size
        self._fds: list[int] = []
        self._fill()

    def _fill(self) -> None:
        while len(self._fds) < self._size:
            try:
                self._fds.append(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))
            except OSError:
                return

    @contextlib.contextmanager
    def released(self) -> Iterator[None]:
        """Close the spare fds for the duration of the block."""
        fds, self._fds = self._fds, []
        for fd in fds:
            os.close(fd)
        try:
            yield
        finally:
            self._fill()

    def close(self) -> None:
        """Close the spare fds for good."""
        self._size = 0
        fds, self._fds = self._fds, []
        for fd in fds:
            os.close(fd)
