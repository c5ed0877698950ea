"""One ssh process of an ``SshLink``'s connections: reaped through its pidfd
(no watcher thread), the tail of its stderr kept for the line that says why a
connection failed."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess

from .aclient import AsyncClient

__all__ = ["SshProcess", "close_warm"]

#: Bytes of an ssh process's stderr kept, for its last line.
_STDERR_TAIL = 4096
#: Seconds an ssh process is given to exit on its own once its connection is closed.
_EXIT_WAIT = 2.0


class SshProcess:
    """One ssh process: reaped through its pidfd, its stderr's tail kept."""

    def __init__(self, proc: subprocess.Popen[bytes], loop: asyncio.AbstractEventLoop) -> None:
        self.proc = proc
        self._loop = loop
        self._tail = b""
        self.done: asyncio.Future[int] = loop.create_future()
        self._pidfd = os.pidfd_open(proc.pid)
        loop.add_reader(self._pidfd, self._exited)
        assert proc.stderr is not None
        self._stderr = proc.stderr.fileno()
        os.set_blocking(self._stderr, False)
        loop.add_reader(self._stderr, self._read_stderr)

    def _read_stderr(self) -> None:
        try:
            data = os.read(self._stderr, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._loop.remove_reader(self._stderr)
            return
        self._tail = (self._tail + data)[-_STDERR_TAIL:]

    def _exited(self) -> None:
        self._loop.remove_reader(self._pidfd)
        os.close(self._pidfd)
        self._pidfd = -1
        # The pipe may still hold ssh's last words.
        with contextlib.suppress(OSError):
            while data := os.read(self._stderr, 65536):
                self._tail = (self._tail + data)[-_STDERR_TAIL:]
        self._loop.remove_reader(self._stderr)
        assert self.proc.stderr is not None
        self.proc.stderr.close()
        status = self.proc.wait()
        if not self.done.done():
            self.done.set_result(status)

    @property
    def last_line(self) -> str:
        lines = [ln.strip() for ln in self._tail.decode(errors="replace").splitlines()]
        lines = [ln for ln in lines if ln]
        return lines[-1] if lines else ""

    async def finish(self, wait: float = _EXIT_WAIT) -> int:
        """Wait for it to exit (its connection is closed), killing it if it lingers."""
        try:
            return await asyncio.wait_for(asyncio.shield(self.done), wait)
        except TimeoutError:
            pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        return await asyncio.shield(self.done)


async def close_warm(client: AsyncClient, helper: SshProcess) -> None:
    """Close a connection opened ahead (its bridge ends, then its ssh)."""
    client.abort()
    await helper.finish()
