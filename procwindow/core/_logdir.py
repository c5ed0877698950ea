"""LogDir: where a supervisor's raw log files go, and who may write there."""

from __future__ import annotations

import logging
import os
import shutil
import time

from ._errors import ProcwindowError
from ._output import LogFile
from ._private import check_private_file, private_dir, private_state_root
from ._types import Stream

__all__ = ["LogDir"]

log = logging.getLogger("procwindow")


class LogDir:
    """The directory of one supervisor's log files: ``<proc id>.<stream>.log``.

    ``path=None`` makes a run directory of our own under
    ``$XDG_STATE_HOME/procwindow/logs/``, removed by :meth:`remove`; a given
    path is the caller's and is kept. Either must be a directory of ours that
    nobody else can write to: UnsafePath otherwise, at once for a given path.
    """

    def __init__(self, path: str | os.PathLike[str] | None, token: str) -> None:
        if path is None:
            stamp = time.strftime("%Y%m%d-%H%M%S")
            self.path = os.path.join(private_state_root(), "logs", f"{stamp}-{token}")
            self._own = True
        else:
            self.path = os.fspath(path)
            self._own = False
            # Refuse an unsafe directory now, not at the first spawn.
            private_dir(self.path, what="log_dir", create=False)
        self._ready = False

    def file_path(self, proc_id: int, stream: Stream | str) -> str:
        """The path of a proc's log file (named from ids only)."""
        return os.path.join(self.path, f"{int(proc_id)}.{Stream(stream).value}.log")

    def prepare(self, proc_id: int) -> dict[Stream, LogFile]:
        """The log files of a new proc, opened on first write.

        Raises UnsafePath for an unsafe directory, or for a FIFO, symlink or
        foreign file where a log file goes. A directory that cannot be created
        (read-only, EACCES) is not an error: capture goes on in memory and each
        LogFile carries the error.
        """
        if self._ensure():
            for stream in Stream:
                check_private_file(self.file_path(proc_id, stream), what="log file")
        return {s: LogFile(self.file_path(proc_id, s)) for s in Stream}

    def _ensure(self) -> bool:
        if self._ready:
            return True
        try:
            if self._own:
                # Every level of ours is checked: procwindow/, logs/, the run's.
                private_dir(private_state_root(), what="state directory")
                private_dir(os.path.dirname(self.path), what="log root")
            private_dir(self.path, what="log_dir")
        except ProcwindowError:
            raise  # unsafe: refuse rather than write output where others can reach it
        except OSError as exc:
            log.warning("cannot create log dir %s: %s", self.path, exc)
            return False
        self._ready = True
        return True

    def delete(self, proc_id: int) -> None:
        """Delete a proc's log files (those that exist)."""
        for stream in Stream:
            try:
                os.unlink(self.file_path(proc_id, stream))
            except FileNotFoundError:
                pass

    def remove(self) -> None:
        """Remove the directory if it is our own run's."""
        if self._own and self._ready:
            shutil.rmtree(self.path, ignore_errors=True)
