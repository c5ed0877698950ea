"""The id counter of a state directory: proc ids no supervisor sharing it has used.

A small file (``<state_dir>/ids``) holds the last id given; a spawn takes the next
one under an exclusive ``flock``, so two supervisors (the window and a ``serve``)
never give the same id. When the counter cannot be written (a full disk), ids
stay unique here from memory and the caller is told (history turns off).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator

from ._private import open_private_file

__all__ = ["IdCounter"]


class IdCounter:
    """The counter file of ``state_dir``, open until :meth:`close`."""

    def __init__(self, state_dir: str) -> None:
        self._fd: int | None = open_private_file(
            os.path.join(state_dir, "ids"), what="id counter", readable=True, keep=True
        )
        self._floor = 0  # the last id given, when the counter could not be written

    @contextlib.contextmanager
    def reserve(
        self, *, wait: bool = True, on_error: Callable[[OSError], None]
    ) -> Iterator[int | None]:
        """A proc id no supervisor of this state directory has used: taken for
        good only if the block succeeds (a spawn that fails leaves no gap).
        Other supervisors wait for the block (a spawn: about a millisecond);
        with ``wait=False`` the block gets None instead while one holds it.
        A counter that cannot be written is ``on_error``'s to report."""
        fd = self._fd
        assert fd is not None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield None
            return
        try:
            raw = os.pread(fd, 32, 0)
            new = max(_value(raw), self._floor) + 1
            yield new
            try:
                _write(fd, new, len(raw))
            except OSError as exc:
                # A full or failing disk: the spawn goes on, and so does capture.
                self._floor = new
                on_error(exc)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    def raise_to(self, at_least: int) -> None:
        """Make the counter at least ``at_least`` (ids the database holds)."""
        fd = self._fd
        assert fd is not None
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            raw = os.pread(fd, 32, 0)
            if _value(raw) < at_least:
                _write(fd, at_least, len(raw))
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _value(raw: bytes) -> int:
    stripped = raw.strip()
    return int(stripped) if stripped.isdigit() else 0


def _write(fd: int, value: int, old_size: int) -> None:
    """Write ``value`` over a counter file of ``old_size`` bytes (as read, up to
    32). A counter only grows, so the file is cut only when it held something
    longer (a damaged counter): a truncate per spawn costs a metadata write."""
    data = f"{value}\n".encode()
    os.pwrite(fd, data, 0)
    if old_size > len(data):
        os.ftruncate(fd, len(data))
