"""The state file: the last line of defence against children outliving their supervisor.

Each supervisor appends what it starts and reaps (pid and start time, from
``/proc/<pid>/stat``) to ``<state>/procwindow/run/<token>.pids``, and removes
the file on a clean close. If both the supervisor and its watchdog were
killed, the next supervisor to start finds the file, sees that its owner is
dead, and kills what is still listed — only where the pid's start time still
matches, so a process that merely reused the pid is never touched — and every
process that carries the dead supervisor's marker.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal

from . import _linux

__all__ = ["StateFile", "recover_leftovers", "state_dir"]

log = logging.getLogger("procwindow")


def state_dir() -> str:
    """``$XDG_STATE_HOME/procwindow/run`` (``~/.local/state/procwindow/run``)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state"
    )
    return os.path.join(base, "procwindow", "run")


def _start_time(pid: int) -> int | None:
    fields = _linux.stat_fields(pid)
    return fields[3] if fields is not None else None


class StateFile:
    """One supervisor's append-only record of its running children."""

    def __init__(self, token: str, folder: str | None = None) -> None:
        self.path = os.path.join(folder or state_dir(), f"{token}.pids")
        self._fd: int | None = None
        self._failed = False

    def _open(self) -> None:
        try:
            os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
            self._fd = os.open(
                self.path,
                os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o600,
            )
            me = os.getpid()
            os.write(self._fd, f"supervisor {me} {_start_time(me)}\n".encode())
        except OSError as exc:
            self._failed = True
            log.warning("cannot keep the state file %s: %s", self.path, exc)

    def _append(self, line: str) -> None:
        if self._fd is None and not self._failed:
            self._open()
        if self._fd is not None:
            try:
                os.write(self._fd, line.encode())
            except OSError as exc:
                log.warning("state file %s: %s", self.path, exc)

    def started(self, pid: int, start_time: int) -> None:
        """Record a started child."""
        self._append(f"+ {pid} {start_time}\n")

    def reaped(self, pid: int) -> None:
        """Record a reaped child."""
        self._append(f"- {pid}\n")

    def close(self) -> None:
        """A clean close: nothing to recover; remove the file."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)


def recover_leftovers(folder: str | None = None) -> list[int]:
    """Kill what dead supervisors left running; return the pids signalled.

    A file whose supervisor still runs (same pid and start time) is left alone.
    """
    folder = folder or state_dir()
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    killed: list[int] = []
    for name in names:
        before = len(killed)
        if not name.endswith(".pids"):
            continue
        path = os.path.join(folder, name)
        try:
            with open(path, "rb") as f:
                lines = f.read().decode(errors="replace").splitlines()
        except OSError:
            continue
        if not lines or not lines[0].startswith("supervisor "):
            continue
        _, owner, owner_start = [*lines[0].split(), "", ""][:3]
        if owner.isdigit() and str(_start_time(int(owner))) == owner_start:
            continue  # its supervisor is alive
        listed: dict[int, int] = {}
        for line in lines[1:]:
            parts = line.split()
            if len(parts) == 3 and parts[0] == "+" and parts[1].isdigit() and parts[2].isdigit():
                listed[int(parts[1])] = int(parts[2])
            elif len(parts) == 2 and parts[0] == "-" and parts[1].isdigit():
                listed.pop(int(parts[1]), None)
        for pid, start in listed.items():
            if _start_time(pid) == start:  # the same process, not a reused pid
                with contextlib.suppress(OSError):
                    os.killpg(pid, signal.SIGKILL)
                    killed.append(pid)
        token = name.removesuffix(".pids")
        needle = _linux.marker_needle(token)
        for entry in os.listdir("/proc"):
            if entry.isdigit() and _linux.read_marker(int(entry), needle) is not None:
                with contextlib.suppress(OSError):
                    os.kill(int(entry), signal.SIGKILL)
                    killed.append(int(entry))
        if len(killed) > before:
            log.warning(
                "killed %d processes left by a dead supervisor (%s)", len(killed) - before, name
            )
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    return killed
