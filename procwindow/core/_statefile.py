"""The state file: the last line of defence against children outliving their supervisor.

Each supervisor records what it starts and reaps (pid and start time, from
``/proc/<pid>/stat``) in ``<state>/procwindow/run/<token>.pids``, and removes
the file on a clean close. If both the supervisor and its watchdog were
killed, the next supervisor to start finds the file, sees that its owner is
dead, and kills what is still listed — only where the pid's start time still
matches in the same boot, so a process that merely reused the pid is never
touched — and every process that carries the dead supervisor's marker.

The file is never half-written: it appears with its header and the full set
of running children in one rename, each later record is a single write of a
whole line, and a write that fails (a full disk) is cut back to the last whole
line; the next change, or ``flush``, rewrites the file from the set kept in
memory. Only a directory of ours is used or read: a state directory that is a
symlink, another user's, or writable by others means no state file at all, and
nothing in it is read, trusted or removed.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import re
import signal
import stat
import time

from . import _linux
from ._errors import UnsafePath
from ._guard import Guard
from ._private import open_private_file, private_dir, private_state_root

__all__ = ["StateFile", "recover_leftovers", "state_dir"]

log = logging.getLogger("procwindow")

_WHAT = "state directory"
#: A state file's name: "<token>.pids", the token being "<pid>.<random>".
_NAME = re.compile(r"[0-9]+\.[A-Za-z0-9]+\.pids")
#: A file being written, renamed into place once whole: ".<token>.tmp".
_TMP_NAME = re.compile(r"\.[0-9]+\.[A-Za-z0-9]+\.tmp")
#: A temporary file older than this was left by a process that died writing it.
_TMP_STALE = 60.0
_BOOT_ID = re.compile(rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
#: Past this size the file is rewritten from the running set instead of appended to.
_COMPACT_AT = 64 * 1024
#: Longest record line ("+ <pid> <start>\n", generously).
_LINE_MAX = 48
#: Bigger than any file of ours: such a file is not read.
_READ_MAX = 16 * 1024 * 1024


def state_dir() -> str:
    """``$XDG_STATE_HOME/procwindow/run`` (``~/.local/state/procwindow/run``)."""
    return os.path.join(private_state_root(), "run")


def _start_time(pid: int) -> int | None:
    fields = _linux.stat_fields(pid)
    return fields.start if fields is not None else None


def _boot_id() -> bytes | None:
    """This boot's id: start times count clock ticks from boot, so they only
    identify a process within one boot."""
    try:
        with open("/proc/sys/kernel/random/boot_id", "rb") as f:
            raw = f.read().strip()
    except OSError:
        return None
    return raw if _BOOT_ID.fullmatch(raw) else None


class StateFile(Guard):
    """One supervisor's record of its running children.

    ``folder`` defaults to ``state_dir()``; it, and with the default its parent
    ``procwindow/``, must be a private directory of ours (see ``private_dir``),
    or no state file is kept.
    """

    def __init__(self, token: str, folder: str | None = None) -> None:
        super().__init__()
        self._token = token
        self._folder = folder
        self.path = os.path.join(folder or state_dir(), f"{token}.pids")
        self._size = 0
        self._stale = False  # the file is behind self._listed: rewrite it
        self._refused = False  # the directory is not ours: keep no file
        self._warned = False

    @property
    def in_sync(self) -> bool:
        """True when the file (if one is needed) holds every recorded change."""
        return self._refused or not self._stale

    def flush(self) -> bool:
        """Record the reaps not recorded yet, retry a write that failed; True
        once the file is up to date."""
        super().flush()
        if not self._closed and self._stale:
            self._sync()
        return self.in_sync

    def _stand_down(self) -> None:
        # Nothing listed: the file has nothing left to say.
        if self._fd is not None:
            self._close_fd()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)

    def _let_go(self) -> None:
        # The file stays for ``recover_leftovers`` once this process is gone.
        if self._stale and self._listed:
            self._sync()
        self._set_closed()
        self._close_fd()

    # -- internals -------------------------------------------------------------

    def _record(self, line: str) -> None:
        if self._refused:
            return
        if self._fd is None or self._stale:
            self._sync()
            return
        if self._size > _COMPACT_AT and self._size > 4 * _LINE_MAX * len(self._listed):
            self._sync()
            return
        data = line.encode()
        try:
            n = os.write(self._fd, data)
        except OSError as exc:
            self._failed(exc)
            return
        if n == len(data):
            self._size += n
            return
        # A short write (a full disk): cut the piece back off, so the file
        # ends on a whole line, and rewrite it whole later.
        with contextlib.suppress(OSError):
            os.ftruncate(self._fd, self._size)
        self._failed(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))

    def _sync(self) -> None:
        """Replace the file, in one rename, by a header and the running set."""
        if self._fd is None and not self._listed:
            self._stale = False  # nothing to protect and nothing on disk
            return
        try:
            folder = self._private_folder()
        except UnsafePath as exc:
            self._refused = True
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
            log.warning("no state file: %s", exc)
            return
        except OSError as exc:
            self._failed(exc)
            return
        tmp = os.path.join(folder, f".{self._token}.tmp")
        fd: int | None = None
        try:
            me = os.getpid()
            boot = (_boot_id() or b"-").decode()
            lines = [f"supervisor {me} {_start_time(me)} {boot}\n"]
            lines += [f"+ {pid} {start}\n" for pid, start in self._listed.items()]
            self._reaped.clear()  # the file lists only who is running
            data = "".join(lines).encode()
            fd = open_private_file(tmp, what="state file")
            view = memoryview(data)
            done = 0
            while done < len(data):
                n = os.write(fd, view[done:])
                if n <= 0:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                done += n
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_APPEND)
            os.rename(tmp, self.path)
        except OSError as exc:
            if fd is not None:
                os.close(fd)
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            self._failed(exc)
            return
        if self._fd is not None:
            os.close(self._fd)
        self._fd, self._size, self._stale = fd, len(data), False
        if self._warned:
            log.info("state file %s is up to date again", self.path)
            self._warned = False

    def _private_folder(self) -> str:
        if self._folder is not None:
            return private_dir(self._folder, what=_WHAT)
        private_dir(private_state_root(), what=_WHAT)
        return private_dir(state_dir(), what=_WHAT)

    def _failed(self, exc: OSError) -> None:
        self._stale = True
        if not self._warned:
            self._warned = True
            log.warning(
                "cannot update the state file %s (%s); retrying with the next change",
                self.path,
                exc.strerror or exc,
            )


# -- recovery ----------------------------------------------------------------


def recover_leftovers(folder: str | None = None) -> list[int]:
    """Kill what dead supervisors left running; return the pids signalled.

    Reads only a private directory of ours (else logs a warning and does
    nothing), and only our own regular files in it; anything else there is
    removed unread. A file whose supervisor still runs (same pid and start
    time, same boot) is left alone; one from an earlier boot is removed.
    """
    try:
        if folder is None:
            private_dir(private_state_root(), what=_WHAT, create=False)
            folder = state_dir()
        private_dir(folder, what=_WHAT, create=False)
    except UnsafePath as exc:
        log.warning("not looking for leftovers of dead supervisors: %s", exc)
        return []
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    boot = _boot_id()
    killed: list[int] = []
    for name in names:
        path = os.path.join(folder, name)
        if _TMP_NAME.fullmatch(name):
            _remove_if_stale(path)
            continue
        data = _read_own_file(path) if _NAME.fullmatch(name) else None
        parsed = _parse(data) if data is not None else None
        if parsed is None:
            _remove_foreign(path)
            continue
        (owner, owner_start, file_boot), listed = parsed
        if file_boot is not None and file_boot != boot:
            _unlink(path)  # an earlier boot: none of its processes exist now
            continue
        if _start_time(owner) == owner_start:
            continue  # its supervisor is alive
        found: list[int] = []
        if file_boot is not None:  # start times identify processes in this boot only
            found += [pid for pid, start in listed.items() if _kill_listed(pid, start)]
        needle = _linux.marker_needle(name.removesuffix(".pids"))
        found += [pid for pid in _kill_marked(needle) if pid not in found]
        if found:
            log.warning("killed %d processes left by a dead supervisor (%s)", len(found), name)
        killed += found
        _unlink(path)
    return killed


def _read_own_file(path: str) -> bytes | None:
    """The file's bytes if it is our own private regular file, else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if (
            not stat.S_ISREG(st.st_mode)
            or st.st_uid != os.getuid()
            or st.st_nlink != 1
            or st.st_mode & 0o022  # writable by others: anyone could have planted it
            or st.st_size > _READ_MAX
        ):
            return None
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def _parse(
    data: bytes,
) -> tuple[tuple[int, int, bytes | None], dict[int, int]] | None:
    """((owner pid, owner start, boot id or None), listed) or None if not a state file.

    Only whole lines count: a line cut short has no newline and is dropped;
    a malformed record is ignored.
    """
    lines = data.split(b"\n")[:-1]
    if not lines:
        return None
    head = lines[0].split(b" ")
    if not (
        len(head) in (3, 4) and head[0] == b"supervisor" and head[1].isdigit() and head[2].isdigit()
    ):
        return None
    boot: bytes | None = None
    if len(head) == 4:
        if head[3] != b"-" and not _BOOT_ID.fullmatch(head[3]):
            return None
        boot = head[3] if head[3] != b"-" else None
    listed: dict[int, int] = {}
    for line in lines[1:]:
        parts = line.split(b" ")
        if len(parts) == 3 and parts[0] == b"+" and parts[1].isdigit() and parts[2].isdigit():
            listed[int(parts[1])] = int(parts[2])
        elif len(parts) == 2 and parts[0] == b"-" and parts[1].isdigit():
            listed.pop(int(parts[1]), None)
    return (int(head[1]), int(head[2]), boot), listed


def _kill_listed(pid: int, start: int) -> bool:
    """SIGKILL ``pid`` and its group if it is still the process that was listed."""
    try:
        pidfd = os.pidfd_open(pid)
    except OSError:
        return False
    try:
        # Checked after the pidfd is open: a pid reused since then shows another
        # start time, and the pidfd still names the process that was checked.
        if _start_time(pid) != start:
            return False
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        return True
    except OSError:
        return False
    finally:
        os.close(pidfd)


def _kill_marked(needle: bytes) -> list[int]:
    """SIGKILL every process carrying ``needle`` in its environment; return their pids."""
    me = os.getpid()
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        pid = int(entry)
        try:
            if _linux.read_marker(pid, needle) is None:
                continue
            pidfd = os.pidfd_open(pid)
        except OSError:
            continue
        try:
            if _linux.read_marker(pid, needle) is not None:
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                found.append(pid)
        except OSError:
            pass
        finally:
            os.close(pidfd)
    return found


def _remove_if_stale(path: str) -> None:
    try:
        st = os.lstat(path)
    except OSError:
        return
    if not stat.S_ISREG(st.st_mode) or time.time() - st.st_mtime > _TMP_STALE:
        _unlink(path)


def _remove_foreign(path: str) -> None:
    """Remove what is not a state file of ours (never a directory, never following a link)."""
    try:
        st = os.lstat(path)
    except OSError:
        return
    if not stat.S_ISDIR(st.st_mode):
        _unlink(path)


def _unlink(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
