"""LogDir: where a supervisor's raw log files and journals go, and who may write there."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import time

from ._disklog import DiskLog, LogFile
from ._errors import ProcwindowError
from ._private import check_private_file, private_dir, private_state_root
from ._types import Stream

__all__ = ["LogDir", "log_file_path"]

log = logging.getLogger("procwindow")

_STREAMS = tuple(Stream)


def log_file_path(directory: str, proc_id: int, stream: Stream | str) -> str:
    """The path of a proc's log file in ``directory`` (named from ids only)."""
    return os.path.join(directory, f"{int(proc_id)}.{Stream(stream).value}.log")


def journal_path(directory: str, proc_id: int) -> str:
    return os.path.join(directory, f"{int(proc_id)}.journal")


class LogDir:
    """The directory of one supervisor's log files: ``<proc id>.<stream>.log``
    and ``<proc id>.journal``.

    ``path=None`` with a ``state_dir`` logs to ``<state_dir>/logs/``, kept for
    the history; with neither, to a run directory of our own under
    ``$XDG_STATE_HOME/procwindow/logs/``, removed by :meth:`remove`. A given
    path is the caller's and is kept. Each must be a directory of ours that
    nobody else can write to: UnsafePath otherwise, at once for a given path.
    """

    def __init__(
        self, path: str | os.PathLike[str] | None, token: str, state_dir: str | None = None
    ) -> None:
        self._root: str | None = None
        if path is not None:
            self.path = os.fspath(path)
            self._own = False
            # Refuse an unsafe directory now, not at the first spawn.
            private_dir(self.path, what="log_dir", create=False)
        elif state_dir is not None:
            self._root = state_dir
            self.path = os.path.join(state_dir, "logs")
            self._own = False
        else:
            stamp = time.strftime("%Y%m%d-%H%M%S")
            self._root = private_state_root()
            self.path = os.path.join(self._root, "logs", f"{stamp}-{token}")
            self._own = True
        self._ready = False

    def file_path(self, proc_id: int, stream: Stream | str) -> str:
        """The path of a proc's log file (named from ids only)."""
        return log_file_path(self.path, proc_id, stream)

    def prepare(self, proc_id: int, cap: int | None) -> DiskLog:
        """The log files (and journal) of a new proc, made at its first write
        (a stream that writes nothing has none).

        Raises UnsafePath for an unsafe directory, or for a FIFO, symlink or
        foreign file where a log file goes. A file of ours left there (an
        earlier run that reused the id, with ``history=False``) is removed,
        so that what is there is this proc's output and nothing else. A
        directory that cannot be created (read-only, EACCES) is not an error:
        capture goes on in memory and each LogFile carries the error.
        """
        ready = self._ensure()
        base = f"{self.path}{os.sep}{int(proc_id)}."
        logs = {s: LogFile(f"{base}{s.value}.log") for s in _STREAMS}
        journal = f"{base}journal"
        if ready:
            for log_file in logs.values():
                _clear(log_file.path, "log file")
            _clear(journal, "journal")
        return DiskLog(logs, journal, cap)

    def _ensure(self) -> bool:
        if self._ready:
            return True
        try:
            if self._root is not None:
                # Every level of ours is checked: procwindow/, logs/, the run's.
                private_dir(self._root, what="state directory")
                private_dir(os.path.join(self._root, "logs"), what="log root")
            private_dir(self.path, what="log_dir")
        except ProcwindowError:
            raise  # unsafe: refuse rather than write output where others can reach it
        except OSError as exc:
            log.warning("cannot create log dir %s: %s", self.path, exc)
            return False
        self._ready = True
        return True

    @staticmethod
    def delete(directory: str, proc_id: int) -> None:
        """Delete a proc's log files and journal in ``directory`` (those that exist)."""
        for path in (
            *(log_file_path(directory, proc_id, s) for s in Stream),
            journal_path(directory, proc_id),
        ):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass

    def remove(self) -> None:
        """Remove the directory if it is our own run's."""
        if self._own and self._ready:
            shutil.rmtree(self.path, ignore_errors=True)


def _clear(path: str, what: str) -> None:
    """Make way for a new file at ``path``: UnsafePath if something not ours
    is there (refused before the child starts), and a file of ours is removed."""
    # The common case, nothing there, is answered without raising (a dangling
    # symlink is something: the look does not follow it).
    if not os.access(path, os.F_OK, follow_symlinks=False):
        return
    if check_private_file(path, what=what):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
