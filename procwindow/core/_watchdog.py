"""The watchdog: if the supervisor's process dies, its children die with it.

One small process per supervisor, started with the first child. It reads what is
running from a pipe; when that pipe closes without a goodbye (the supervisor was
SIGKILLed or crashed), it SIGKILLs the process group of every child still
listed, and every process carrying the supervisor's marker (descendants that
called ``setsid`` or double-forked), then exits.

Why not ``PR_SET_PDEATHSIG``: it must be set in the child between fork and exec,
which costs the vfork/posix_spawn fast path (Popen falls back to fork with a
``preexec_fn``); it fires when the *thread* that forked the child exits, not the
process; and it reaches only the direct child, never a ``setsid`` grandchild.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import time

__all__ = ["WATCHDOG_SOURCE", "Watchdog"]

log = logging.getLogger("procwindow")

# Runs with `python -I -S`: no site, no imports beyond the stdlib.
WATCHDOG_SOURCE = r"""
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
token = sys.argv[1].encode()
needle = b"PROCWINDOW_PROC=" + token + b":"
listed = {}

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

stdin = sys.stdin.buffer
for line in stdin:
    parts = line.split()
    if not parts:
        continue
    if parts[0] == b"+":
        listed[int(parts[1])] = parts[2]
    elif parts[0] == b"-":
        listed.pop(int(parts[1]), None)
    elif parts[0] == b"BYE":
        sys.exit(0)
# The supervisor is gone without a goodbye: stop everything it started.
for pid, start in listed.items():
    if start_of(pid) == start:  # still that process (a zombie keeps its start time)
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass
for _ in range(3):  # a few passes catch processes forked while we kill
    for pid in marked():
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    time.sleep(0.05)
"""


class Watchdog:
    """The supervisor's side of the watchdog: tells it what runs, says goodbye on close."""

    def __init__(self, token: str) -> None:
        self._token = token
        self._popen: subprocess.Popen[bytes] | None = None
        self._fd: int | None = None

    @property
    def pid(self) -> int | None:
        """The watchdog's pid while it runs."""
        return self._popen.pid if self._popen is not None else None

    def _start(self) -> None:
        read_end, write_end = os.pipe2(os.O_CLOEXEC)
        try:
            self._popen = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", WATCHDOG_SOURCE, self._token],
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
        self._fd = write_end

    def _send(self, line: str) -> None:
        if self._fd is None:
            return
        try:
            os.write(self._fd, line.encode())
        except OSError as exc:
            log.warning("the watchdog is gone (%s); restarting it", exc)
            self._stop(goodbye=False)
            self._start()

    def started(self, pid: int, start_time: int) -> None:
        """A child started (its pid leads its own group)."""
        if self._fd is None and self._popen is None:
            self._start()
        self._send(f"+ {pid} {start_time}\n")

    def reaped(self, pid: int) -> None:
        """A child was reaped: its pid may be reused from now on."""
        self._send(f"- {pid}\n")

    def close(self) -> None:
        """Say goodbye (nothing to kill) and reap the watchdog."""
        self._stop(goodbye=True)

    def _stop(self, goodbye: bool) -> None:
        if self._fd is not None:
            if goodbye:
                with contextlib.suppress(OSError):
                    os.write(self._fd, b"BYE\n")
            os.close(self._fd)
            self._fd = None
        if self._popen is not None:
            popen, self._popen = self._popen, None
            deadline = time.monotonic() + 2.0
            while popen.poll() is None:
                if time.monotonic() > deadline:
                    popen.kill()
                    popen.wait()
                    break
                time.sleep(0.002)
