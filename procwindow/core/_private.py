"""Private paths: the directories and files procwindow writes must be ours alone.

Every place that keeps something of a user's (raw logs, state files, control
sockets) goes through these two functions, so one rule holds everywhere: a
directory is owned by us, writable by nobody else and not a symlink; a file we
write is our own regular file, mode 0600, opened without ever blocking (a FIFO
planted where a log goes must not freeze the event loop, nor receive the output).
"""

from __future__ import annotations

import errno
import os
import stat

from ._errors import UnsafePath

__all__ = ["check_private_file", "open_private_file", "private_dir", "private_state_root"]


def private_dir(path: str, *, what: str, create: bool = True) -> str:
    """Make sure ``path`` is a directory of ours that nobody else can write to.

    Creates it (mode 0700, parents as needed) when ``create``; an existing one
    must not be a symlink, must belong to us and must not be group- or
    world-writable. Raises UnsafePath naming ``what`` (``"log_dir"``…), or
    OSError when it cannot be created at all (read-only file system, EACCES).
    """
    if "\0" in path:
        raise UnsafePath(path, what, "contains a NUL byte")
    if create:
        try:
            os.makedirs(path, mode=0o700)
        except FileExistsError:
            pass
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if create:
            raise
        return path
    _refuse_unless_ours(path, what, st, directory=True)
    return path


def _refuse_unless_ours(path: str, what: str, st: os.stat_result, *, directory: bool) -> None:
    """UnsafePath unless ``st`` is our own directory that only we can write to
    (``directory``), or our own regular file with a single link."""
    if stat.S_ISLNK(st.st_mode):
        raise UnsafePath(path, what, "is a symlink")
    if directory and not stat.S_ISDIR(st.st_mode):
        raise UnsafePath(path, what, "is not a directory")
    if not directory and not stat.S_ISREG(st.st_mode):
        raise UnsafePath(path, what, "is not a regular file")
    if st.st_uid != os.getuid():
        raise UnsafePath(path, what, f"belongs to uid {st.st_uid}, not to us ({os.getuid()})")
    if directory and st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UnsafePath(path, what, f"is writable by others (mode {stat.S_IMODE(st.st_mode):04o})")
    if not directory and st.st_nlink != 1:
        raise UnsafePath(path, what, f"has {st.st_nlink} hard links")


def private_state_root() -> str:
    """``$XDG_STATE_HOME/procwindow`` (``~/.local/state/procwindow``), not created."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return os.path.join(base, "procwindow")


def open_private_file(
    path: str, *, what: str, append: bool = False, readable: bool = False, keep: bool = False
) -> int:
    """Open ``path`` for writing as our own regular file, mode 0600; return the fd.

    Never blocks and never follows a symlink: a FIFO, a socket, a device, a
    symlink, a hard link or another user's file in its place raises UnsafePath
    (nothing is written to it). An existing file of ours is truncated (or
    appended to, with ``append``, or kept as it is, with ``keep``) and its mode
    narrowed to 0600. ``readable`` opens it for reading too. The fd is
    blocking and close-on-exec.
    """
    flags = (os.O_RDWR if readable else os.O_WRONLY) | os.O_CREAT | os.O_NOFOLLOW
    flags |= os.O_NONBLOCK | os.O_CLOEXEC
    if append:
        flags |= os.O_APPEND
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePath(path, what, "is a symlink") from None
        if exc.errno == errno.ENXIO:  # a FIFO nobody reads
            raise UnsafePath(path, what, "is not a regular file") from None
        raise
    try:
        st = os.fstat(fd)
        _refuse_unless_ours(path, what, st, directory=False)
        if stat.S_IMODE(st.st_mode) != 0o600:
            os.fchmod(fd, 0o600)
        if not (append or keep) and st.st_size:
            os.ftruncate(fd, 0)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def check_private_file(path: str, *, what: str) -> bool:
    """Raise UnsafePath unless ``path`` is absent or our own single-link
    regular file; True if there is one.

    A look before a file is first opened, so that a planted FIFO or symlink is
    refused up front, with its name; ``open_private_file`` checks again at the
    open itself.
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    _refuse_unless_ours(path, what, st, directory=False)
    return True
