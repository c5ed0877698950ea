"""Stdin: writing to a child's stdin pipe without blocking the event loop, and
closing it once the writes under way are done."""

from __future__ import annotations

import asyncio
import contextlib
import os
from typing import TYPE_CHECKING

from . import _pty
from ._errors import StdinClosed

if TYPE_CHECKING:
    from ._child import Child

__all__ = ["as_bytes", "close", "write"]


def as_bytes(data: bytes | str) -> bytes:
    """What ``write`` sends for ``data``: a str as UTF-8."""
    return data.encode() if isinstance(data, str) else bytes(data)


async def write(proc_id: int, child: Child, buf: bytes, loop: asyncio.AbstractEventLoop) -> int:
    """Write all of ``buf`` to ``child``'s stdin, after the writes under way;
    return its length. Waits (on the loop) while the pipe is full. Raises
    StdinClosed, naming ``proc_id``, if it has no stdin, it was closed, or the
    child stopped reading (EPIPE; its stdin is closed then)."""
    async with child.stdin_lock:
        view = memoryview(buf)
        while view:
            fd = child.stdin_fd
            if fd is None:
                why = "its stdin is closed" if child.proc.options.stdin else "it has no stdin"
                if not child.proc.options.stdin:
                    why += " (spawn it with stdin=True)"
                raise StdinClosed(proc_id, why)
            try:
                n = os.write(fd, view)
            except BlockingIOError:
                ready = loop.create_future()
                loop.add_writer(fd, _wake, ready)
                try:
                    await asyncio.wait({ready, child.exit_fut}, return_when="FIRST_COMPLETED")
                finally:
                    if child.stdin_fd == fd:
                        loop.remove_writer(fd)
                    ready.cancel()
                continue
            except BrokenPipeError:
                child.close_stdin(loop)
                raise StdinClosed(proc_id, "it closed its stdin (broken pipe)") from None
            view = view[n:]
    return len(buf)


def _wake(ready: asyncio.Future[None]) -> None:
    """The pipe has room: wake the write. The loop may call this again before
    the write resumes (the fd stays writable), so only the first call counts."""
    if not ready.done():
        ready.set_result(None)


async def close(child: Child, loop: asyncio.AbstractEventLoop | None) -> bool:
    """Close ``child``'s stdin once the writes under way are done; False if it
    had none or it was closed already. A terminal (``pty``) is sent Ctrl-D
    first: its reader reads end-of-file, as a person's Ctrl-D would give."""
    async with child.stdin_lock:
        if child.screen is not None and child.stdin_fd is not None:
            with contextlib.suppress(OSError):
                os.write(child.stdin_fd, _pty.EOF)
        return child.close_stdin(loop)
