"""The watchdog: if the supervisor's process dies, its children die with it.

One small process per supervisor, started with the first child. It reads what is
running from a pipe and watches the host process itself through a pidfd. When
the host dies (SIGKILL, a crash), or the pipe closes without a goodbye, it
SIGKILLs the process group of every child still listed, and every process
carrying the supervisor's marker (descendants that called ``setsid`` or
double-forked), then exits.

The host's death is seen on the pidfd, not only as EOF on the pipe: a helper the
host forked (``os.fork``, ``multiprocessing``) inherits the pipe's write end,
and while it lives the pipe never reaches EOF. The write end is also closed in
forked children, but a fork that bypasses Python's hooks would still hold it.

The host never blocks on the watchdog: the pipe is non-blocking and what does
not fit waits in a bounded queue. The set of listed children, kept here, is the
truth; when the queue overflows (a stopped or starved watchdog), the queued
changes are dropped and, once the pipe takes data again, the watchdog is sent
the whole set at once. A watchdog that died is restarted and sent the set too.

Why not ``PR_SET_PDEATHSIG``: it must be set in the child between fork and exec,
which costs the vfork/posix_spawn fast path (Popen falls back to fork with a
``preexec_fn``); it fires when the *thread* that forked the child exits, not the
process; and it reaches only the direct child, never a ``setsid`` grandchild.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import subprocess
import sys
import time

from . import _linux
from ._guard import Guard

__all__ = ["WATCHDOG_SOURCE", "Watchdog"]

log = logging.getLogger("procwindow")

# Runs with `python -I -S`: no site, no imports beyond the stdlib.
# argv: token, host pid, host start time (clock ticks after boot), and the
# directory of the procs' cgroups ("" if they have none: see _cgroup).
# Lines it reads:  "+ <pid> <start>"  "- <pid>"  "RESET" ... "END"  "BYE"  "DUMP <path>"
# It reads in batches: after each read it sleeps BATCH seconds, so a burst of
# starts and reaps wakes it once per batch, not twice per child (the write
# that wakes it cost the host 0.1-0.5 ms on a busy 2-core machine, a third of
# a short child's spawn); the host's death is seen at most that much later.
WATCHDOG_SOURCE = r"""
import os, select, signal, sys, time
BATCH = 0.02
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
token = sys.argv[1].encode()
host = int(sys.argv[2])
host_start = sys.argv[3].encode()
cgroups = sys.argv[4] if len(sys.argv) > 4 else ""
needle = b"PROCWINDOW_PROC=" + token + b":"
listed = {}
staging = None  # a RESET in progress: the new set, committed by END

def start_of(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    return raw[raw.rfind(b")") + 2:].split()[19]

def marked():
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/environ", "rb") as f:
                    env = f.read()
            except OSError:
                continue
            at = env.find(needle)
            if at == 0 or (at > 0 and env[at - 1] == 0):
                found.append(int(name))
    return found

def dump(path):
    tmp = path + b".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as f:
        for pid in sorted(listed):
            f.write(b"%d %s\n" % (pid, listed[pid]))
    os.replace(tmp, path)

def handle(line):
    # True on goodbye. A malformed line is ignored: it cannot name a process to kill.
    global listed, staging
    parts = line.split()
    if not parts:
        return False
    word = parts[0]
    target = listed if staging is None else staging
    try:
        if word == b"+" and len(parts) == 3 and parts[2].isdigit():
            target[int(parts[1])] = parts[2]
        elif word == b"-" and len(parts) == 2:
            target.pop(int(parts[1]), None)
        elif word == b"RESET":
            staging = {}
        elif word == b"END" and staging is not None:
            listed, staging = staging, None
        elif word == b"BYE":
            return True
        elif word == b"DUMP":
            dump(line[5:].rstrip(b"\n"))
    except (ValueError, OSError):
        pass
    return False

def watch_host():
    # The host started us, so it was alive when we began; its start time rules
    # out a pid reused after it died before we got here.
    try:
        fd = os.pidfd_open(host)
    except ProcessLookupError:
        return None, True
    except (OSError, AttributeError):
        return None, False  # cannot watch it: rely on the pipe alone
    if start_of(host) != host_start:
        os.close(fd)
        return None, True
    return fd, False

pending = b""

def feed(data):
    global pending
    pending += data
    *lines, pending = pending.split(b"\n")
    for line in lines:
        if handle(line):
            sys.exit(0)

pidfd, host_dead = watch_host()
poller = select.poll()
poller.register(0, select.POLLIN)
if pidfd is not None:
    poller.register(pidfd, select.POLLIN)
while not host_dead:
    events = dict(poller.poll())
    if pidfd is not None and pidfd in events:
        host_dead = True
    elif 0 in events:
        data = os.read(0, 65536)
        if not data:
            break  # closed without a goodbye
        feed(data)
        time.sleep(BATCH)  # what the host writes meanwhile wakes nobody
if host_dead:
    # Take what the host wrote before it died; a helper that inherited the
    # pipe may keep it open, so read only what is there.
    os.set_blocking(0, False)
    while True:
        try:
            data = os.read(0, 65536)
        except BlockingIOError:
            break
        if not data:
            break
        feed(data)
# The supervisor is gone without a goodbye: stop everything it started.
if cgroups:  # every process of every proc's cgroup at once, whatever it did
    try:
        with open(os.path.join(cgroups, "cgroup.kill"), "w") as f:
            f.write("1")
    except OSError:
        pass
targets = dict(listed)
targets.update(staging or {})
for pid, start in targets.items():
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        continue
    try:
        if start_of(pid) == start:  # still that process (a zombie keeps its start time)
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                signal.pidfd_send_signal(fd, signal.SIGKILL)
            except OSError:
                pass
    finally:
        os.close(fd)
for _ in range(3):  # a few passes catch processes forked while we kill
    for pid in marked():
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    time.sleep(0.05)
for _ in range(40):  # the cgroups go once what they held is gone
    try:
        for name in os.listdir(cgroups) if cgroups else ():
            path = os.path.join(cgroups, name)
            if os.path.isdir(path):
                try:
                    os.rmdir(path)
                except OSError:
                    pass
        if cgroups:
            os.rmdir(cgroups)
        break
    except OSError:
        time.sleep(0.05)
"""

#: Longest line the host sends for one child ("+ <pid> <start>\n", generously).
_LINE_MAX = 48
#: How long ``close`` tries to deliver what is queued before giving up on it.
_DELIVER_WAIT = 1.0
#: How long ``close`` waits for the watchdog to exit after its goodbye.
_EXIT_WAIT = 2.0
#: How long ``abandon`` waits for the watchdog to finish killing (it starts a Python first).
_FINISH_WAIT = 5.0

# Watchdogs left to finish killing on their own, reaped once they have.
_finishing: list[subprocess.Popen[bytes]] = []


class Watchdog(Guard):
    """The supervisor's side of the watchdog: tells it what runs, says goodbye on close.

    Never blocks on the watchdog process except in ``close`` and ``abandon``,
    and there for a bounded time. ``max_backlog`` bounds the queued bytes
    (beyond a full snapshot of the listed set) while the pipe is full.
    A copy inherited by a forked child is inert.
    """

    def __init__(self, token: str, *, max_backlog: int = 64 * 1024) -> None:
        if max_backlog < _LINE_MAX:
            raise ValueError(f"max_backlog must be at least {_LINE_MAX} bytes")
        super().__init__()
        self._token = token
        #: The directory of the procs' cgroups, once the supervisor has one.
        self.cgroups = ""
        self._max_backlog = max_backlog
        self._popen: subprocess.Popen[bytes] | None = None
        self._pending = bytearray()
        # The pipe holds the first part of a line whose rest is still pending.
        self._mid_line = False
        # Queued changes were dropped: send the whole listed set next.
        self._resync = False

    @property
    def pid(self) -> int | None:
        """The watchdog's pid while it runs."""
        return self._popen.pid if self._popen is not None else None

    @property
    def backlog(self) -> int:
        """Bytes queued for the watchdog that the pipe has not taken yet."""
        return len(self._pending)

    @property
    def backlog_limit(self) -> int:
        """The most ``backlog`` may hold right now."""
        return self._max_backlog + _LINE_MAX * (len(self._listed) + 2)

    def _record(self, line: str) -> None:
        self._queue(line.encode())
        self._send()

    def flush(self) -> bool:
        """Send what is queued, as far as the pipe takes it; True once all is sent.

        Also notices a watchdog that died and starts a new one, which is told
        every child still listed. Cheap enough to call once a second.
        """
        if self._closed:
            return True
        if self._popen is not None and self._popen.poll() is not None:
            self._lost(f"it exited with status {self._popen.returncode}")
        super().flush()
        return self._send()

    def _send(self) -> bool:
        """``flush`` without looking at the process: each start and reap only
        writes. A watchdog that died shows here as EPIPE (nobody else holds
        the pipe's read end), and to ``flush`` when there is nothing to say."""
        for _ in range(2):  # at most one restart per call
            if self._popen is None and self._listed:
                self._start()
            if self._fd is None:
                return not self._listed
            try:
                return self._write()
            except OSError as exc:  # EPIPE: it is gone
                self._lost(str(exc))
        return False

    def dump(self, path: str) -> bool:
        """Ask the watchdog to write what it has listed to ``path`` ("<pid> <start>" lines).

        A diagnostic: the file appears once the watchdog has read everything
        sent before. False if the request could not be queued now (nothing
        running, or queued changes not delivered yet).
        """
        if "\n" in path or "\0" in path:
            raise ValueError("path must not contain a newline or NUL")
        if self._closed or not self.flush() or self._fd is None:
            return False
        self._pending += b"DUMP " + os.fsencode(path) + b"\n"
        self.flush()
        return True

    def _stand_down(self) -> None:
        # Nothing listed: it is told goodbye and exits without killing
        # anything; if the goodbye cannot be delivered within a second (a
        # stopped watchdog), it is SIGKILLed instead, having nothing to guard.
        if self._fd is None:
            self._stop_process(kill=True)
            return
        # Finish the line the pipe holds the start of; every other queued change is moot.
        keep = self._pending.index(b"\n") + 1 if self._mid_line else 0
        del self._pending[keep:]
        self._resync = False
        self._pending += b"BYE\n"
        try:
            said_bye = self._deliver(time.monotonic() + _DELIVER_WAIT)
        except OSError:  # it is gone already
            said_bye = False
        os.close(self._fd)
        self._fd = None
        if said_bye:
            self._stop_process(kill=False, wait=_EXIT_WAIT)
        self._stop_process(kill=True)

    def _let_go(self) -> None:
        # The pipe closes without a goodbye: the watchdog kills what is listed
        # and marked. Queued changes get a second to be delivered first; a
        # stopped watchdog is continued and given a little time to finish; one
        # still busy is left to finish on its own.
        self._set_closed()
        if self._fd is not None:
            with contextlib.suppress(OSError):
                self._deliver(time.monotonic() + _DELIVER_WAIT)
            os.close(self._fd)
            self._fd = None
        popen = self._popen
        if popen is None:
            return
        # A stopped watchdog cannot do its last job.
        with contextlib.suppress(OSError):
            popen.send_signal(signal.SIGCONT)
        if not self._stop_process(kill=False, wait=_FINISH_WAIT):
            log.warning(
                "the watchdog (pid %d) is still stopping what this supervisor left", popen.pid
            )
            _finishing.append(popen)
            self._popen = None

    # -- internals -------------------------------------------------------------

    def _queue(self, line: bytes) -> None:
        if self._fd is None or self._resync:
            return  # the next snapshot carries it
        self._pending += line
        if len(self._pending) > self.backlog_limit:
            keep = self._pending.index(b"\n") + 1 if self._mid_line else 0
            del self._pending[keep:]
            self._resync = True

    def _write(self) -> bool:
        """Write what the pipe takes without blocking; True if nothing is left."""
        assert self._fd is not None
        while True:
            if not self._pending:
                if not self._resync:
                    return True
                if not self._writable(0):
                    return False  # build the snapshot only when it can start moving
                self._resync = False
                self._pending += self._snapshot()
            try:
                n = os.write(self._fd, self._pending)
            except BlockingIOError:
                return False
            if n <= 0:
                return False
            self._mid_line = self._pending[n - 1] != ord("\n")
            del self._pending[:n]

    def _snapshot(self) -> bytes:
        self._reaped.clear()  # the snapshot lists only who is running
        body = b"".join(f"+ {pid} {start}\n".encode() for pid, start in self._listed.items())
        return b"RESET\n" + body + b"END\n"

    def _writable(self, timeout: float) -> bool:
        assert self._fd is not None
        poller = select.poll()
        poller.register(self._fd, select.POLLOUT)
        return bool(poller.poll(max(0, int(timeout * 1000))))

    def _deliver(self, deadline: float) -> bool:
        """Write everything queued, waiting for the pipe until ``deadline``."""
        while not self._write():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self._writable(min(left, 0.1))
        return True

    def _start(self) -> None:
        _finishing[:] = [popen for popen in _finishing if popen.poll() is None]
        me = os.getpid()
        try:
            fields = _linux.stat_fields(me)
            if fields is None:
                raise FileNotFoundError(f"/proc/{me}/stat is unreadable")
            read_end, write_end = os.pipe2(os.O_CLOEXEC)
        except OSError as exc:
            log.warning("no watchdog (%s): if this process is killed, its children live on", exc)
            return
        try:
            popen = subprocess.Popen(
                [
                    sys.executable,
                    "-I",
                    "-S",
                    "-c",
                    WATCHDOG_SOURCE,
                    self._token,
                    str(me),
                    str(fields[3]),
                    self.cgroups,
                ],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # out of reach of the terminal's Ctrl-C
                close_fds=True,
            )
        except OSError as exc:
            os.close(write_end)
            log.warning("no watchdog (%s): if this process is killed, its children live on", exc)
            return
        finally:
            os.close(read_end)
        os.set_blocking(write_end, False)
        self._popen, self._fd = popen, write_end
        self._pending.clear()
        self._mid_line = False
        # A new watchdog knows nothing yet: tell it everything that runs.
        self._resync = bool(self._listed)

    def _lost(self, why: str) -> None:
        if self._listed:
            log.warning("the watchdog is gone (%s); starting a new one", why)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._stop_process(kill=True)
        self._pending.clear()
        self._mid_line = False
        self._resync = False

    def _stop_process(self, kill: bool, wait: float = 0.0) -> bool:
        """Reap the watchdog, waiting up to ``wait`` s, then SIGKILL it if ``kill``.

        True once it is reaped (or there is none).
        """
        popen = self._popen
        if popen is None:
            return True
        try:
            popen.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            if not kill:
                return False
            popen.kill()  # SIGKILL works on a stopped process too
            popen.wait()
        self._popen = None
        return True

    def _forget_after_fork(self) -> None:
        # In a forked child: the pipe must not keep the watchdog from seeing
        # the parent die, and the watchdog is not this process's child.
        super()._forget_after_fork()
        if self._popen is not None:
            # Not this process's child: nothing to wait for, nothing to warn about.
            self._popen.returncode = 0
            self._popen = None
        self._pending = bytearray()
