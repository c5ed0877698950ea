"""One ssh connection per host: an OpenSSH master that every connection to the
host rides on (``ControlMaster``).

Each connection through ssh of its own costs a TCP connection, a key exchange
and an authentication, and an attached server takes three; multiplexed over a
master, a connection costs a round trip. The master is ours, and nothing of it
outlives us: it runs ``cat`` on the far side with its stdin a pipe from this
process (no ``ControlPersist``), so however this process ends, the pipe closes,
``cat`` ends, and the master goes once the connections on it have. It is
shared by every link to the same host with the same ssh command, user and
port, and stopped when the last of them closes.

A master also holds connections opened ahead, PARKED per remote command
(``park``): a link that connects to the same server on the host takes one
(``take``) instead of waiting for ssh to start a session and the host to start
``procwindow ctl bridge`` (an attach opens two at once: a second attach to a
host is then a few round trips). They are closed with the master.

Where no master can be had (an ssh without ``ControlMaster``, a socket path
too long, a master that failed or died), connections go straight to the host
as each did before: ssh itself connects directly when the master's socket does
not answer, and says why a connection fails as it always did.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["PARKED", "Master", "acquire", "release"]

log = logging.getLogger("procwindow")

#: The longest path a Unix socket may have (sun_path holds 108 bytes; ssh adds a
#: temporary suffix while it makes the socket).
_MAX_SOCKET_PATH = 80
#: Seconds a master is given to exit once its pipe is closed, before SIGKILL.
_STOP_WAIT = 2.0
#: How often (seconds) a starting master is looked at.
_POLL = 0.01
#: Connections held ahead per remote command: what an attach opens at once
#: (its events' connection and one for its requests).
PARKED = 2


class Master:
    """A running ssh master for one host (``key``: the ssh command line up to
    and with the host), its control socket at ``path``."""

    def __init__(self, key: tuple[str, ...], folder: str, proc: subprocess.Popen[bytes]) -> None:
        self.key = key
        self.folder = folder
        self.path = os.path.join(folder, "s")
        self.proc = proc
        self.users = 0
        #: Connections opened ahead, by the remote command they run: (the
        #: connection, how to close it), oldest first.
        self._parked: dict[str, list[tuple[Any, Callable[[], Awaitable[None]]]]] = {}
        #: What parks them (a link's ``warm_up``), called again when a user leaves.
        self.warmers: dict[int, Callable[[], None]] = {}

    def park(self, command: str, item: Any, close: Callable[[], Awaitable[None]]) -> bool:
        """Hold ``item``, a connection that runs ``command``, for a link to take;
        False (the caller closes it) if PARKED are held already or the master
        is gone."""
        held = self._parked.setdefault(command, [])
        if len(held) >= PARKED or not self.alive:
            return False
        held.append((item, close))
        return True

    def parked(self, command: str) -> int:
        """How many connections that run ``command`` are held."""
        return len(self._parked.get(command, ()))

    def take(self, command: str) -> Any | None:
        """A connection held for ``command`` (the caller's now), or None."""
        held = self._parked.get(command)
        return held.pop(0)[0] if held else None

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None and os.path.exists(self.path)

    def options(self) -> list[str]:
        """The ssh options that put a connection on this master."""
        return ["-S", self.path, "-o", "ControlMaster=no"]

    @classmethod
    def launch(cls, key: tuple[str, ...], host: str) -> Master | None:
        """Run a master for ``key`` (the ssh command and its options, then
        ``host``); None if it cannot be run."""
        folder = tempfile.mkdtemp(prefix="procwindow-ssh-")
        path = os.path.join(folder, "s")
        if len(path) > _MAX_SOCKET_PATH:
            shutil.rmtree(folder, ignore_errors=True)
            return None
        far = "cat >/dev/null"  # ends when our end of its stdin closes
        argv = [*key[:-1], "-M", "-S", path, "-o", "ControlPersist=no", "--", host, far]
        try:
            with open(os.path.join(folder, "stderr"), "wb") as err:
                proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=err,
                    start_new_session=True,  # Ctrl+C in our terminal is ours to handle
                )
        except OSError:
            shutil.rmtree(folder, ignore_errors=True)
            return None
        return cls(key, folder, proc)

    @classmethod
    async def start(cls, key: tuple[str, ...], host: str, timeout: float) -> Master | None:
        """:meth:`launch`, then wait until it is logged in (ssh makes the
        socket then); None if it is not within ``timeout`` seconds."""
        master = cls.launch(key, host)
        if master is None:
            return None
        deadline = time.monotonic() + timeout
        try:
            while not master.alive:  # no event says a file appeared: looked at
                if master.proc.poll() is not None or time.monotonic() > deadline:
                    log.info("no ssh master for %s: %s", host, master.last_words())
                    master.kill()
                    return None
                await asyncio.sleep(_POLL)  # a log-in takes a few hundred ms
        except BaseException:  # cancelled (the link closed meanwhile): none is left
            master.kill()
            raise
        return master

    def kill(self) -> None:
        """End it now (SIGKILL), and remove its socket's folder."""
        if self.proc.poll() is None:  # unreaped: its group id is still its own
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        shutil.rmtree(self.folder, ignore_errors=True)

    def last_words(self) -> str:
        """The last line the master wrote to its stderr."""
        try:
            with open(os.path.join(self.folder, "stderr"), "rb") as f:
                lines = f.read().decode(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return lines[-1] if lines else ""

    async def stop(self) -> None:
        """End it: close the connections held ahead and its pipe (``cat`` ends,
        then the master), SIGKILL if it lingers, and remove its socket's folder."""
        parked, self._parked = self._parked, {}
        for _, close in [item for held in parked.values() for item in held]:
            with contextlib.suppress(Exception):
                await close()
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        deadline = time.monotonic() + _STOP_WAIT
        while self.proc.poll() is None and time.monotonic() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(_POLL)  # bounded, and once per host
        self.kill()


#: The masters running now, by their ssh command line up to and with the host.
_MASTERS: dict[tuple[str, ...], Master] = {}
#: Starts under way, so that links to one host opening at once share one master.
_STARTING: dict[tuple[str, ...], asyncio.Future[Master | None]] = {}


async def acquire(base: tuple[str, ...], host: str, timeout: float) -> Master | None:
    """The master for ``host`` reached with ``base`` (the ssh command and its
    options), started if none runs; None where none can be had. A caller that
    gets one calls :func:`release` once, also after it died."""
    key = (*base, host)
    master = _MASTERS.get(key)
    if master is not None and not master.alive:
        # It died (the link was cut): its users let go of it as they notice.
        del _MASTERS[key]
        master = None
    if master is None:
        starting = _STARTING.get(key)
        if starting is not None:
            master = await asyncio.shield(starting)
        else:
            fut: asyncio.Future[Master | None] = asyncio.get_running_loop().create_future()
            _STARTING[key] = fut
            try:
                master = await Master.start(key, host, timeout)
                if master is not None:
                    _MASTERS[key] = master
            finally:
                del _STARTING[key]
                fut.set_result(master)
    if master is not None:
        master.users += 1
    return master


async def release(master: Master) -> None:
    """A user of ``master`` is done with it; the last one stops it."""
    master.users -= 1
    if master.users > 0:
        for warm_up in list(master.warmers.values()):  # park again what a user took
            warm_up()
        return
    if _MASTERS.get(master.key) is master:
        del _MASTERS[master.key]
    await master.stop()
