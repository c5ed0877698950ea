"""The error hierarchy: every error procwindow raises derives from ProcwindowError.

Each error carries the fact the caller needs to act on as an attribute, so a
window, a control socket or a script can show it without parsing the message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._types import ExitInfo

__all__ = [
    "CommandNotFound",
    "CwdMissing",
    "InvalidArgv",
    "InvalidPattern",
    "InvalidScope",
    "NoMatch",
    "NotExecutable",
    "NotReady",
    "ProcNotFound",
    "ProcRunning",
    "ProcwindowError",
    "SpawnFailed",
    "StdinClosed",
    "SupervisorClosed",
    "UnsafePath",
    "UnsupportedPlatform",
    "WrongLoop",
]


class ProcwindowError(Exception):
    """Base class of every error procwindow raises on purpose."""


class CommandNotFound(ProcwindowError, LookupError):
    """The command is not a path that exists and is not found on ``PATH``.

    >>> str(CommandNotFound("nmp"))
    "command not found: 'nmp'"
    """

    def __init__(self, command: str) -> None:
        super().__init__(f"command not found: {command!r}")
        self.command = command


class NotExecutable(ProcwindowError, PermissionError):
    """The command exists but cannot be executed (no permission, a directory, bad format)."""

    def __init__(self, path: str, why: str = "permission denied") -> None:
        super().__init__(f"not executable: {path!r} ({why})")
        self.path = path
        self.why = why


class CwdMissing(ProcwindowError, FileNotFoundError):
    """The working directory given to ``spawn`` does not exist or is not a directory."""

    def __init__(self, cwd: str, why: str = "no such directory") -> None:
        super().__init__(f"working directory unusable: {cwd!r} ({why})")
        self.cwd = cwd
        self.why = why


class InvalidArgv(ProcwindowError, ValueError):
    """argv is empty, holds a non-string, holds a NUL byte, or is too long for the kernel."""


class InvalidScope(ProcwindowError, ValueError):
    """A session or agent name cannot be used as a topic token."""


class ProcNotFound(ProcwindowError, LookupError):
    """No proc has this id (it never existed or was dismissed)."""

    def __init__(self, proc_id: int) -> None:
        super().__init__(f"no such proc: {proc_id}")
        self.proc_id = proc_id


class ProcRunning(ProcwindowError, RuntimeError):
    """The operation needs an exited proc (``dismiss``), and this one still runs."""

    def __init__(self, proc_id: int) -> None:
        super().__init__(f"proc {proc_id} is still running; term or kill it first")
        self.proc_id = proc_id


class InvalidPattern(ProcwindowError, ValueError):
    """A subscription pattern or a search pattern is malformed."""

    def __init__(self, pattern: str, why: str) -> None:
        super().__init__(f"invalid pattern {pattern!r}: {why}")
        self.pattern = pattern
        self.why = why


class SpawnFailed(ProcwindowError, OSError):
    """The kernel refused to start the child for a reason other than the ones above.

    ``errno`` and ``strerror`` are those of the underlying OSError (EMFILE, EAGAIN, ENOMEM…).
    """


class UnsupportedPlatform(ProcwindowError, RuntimeError):
    """procwindow's supervisor needs Linux ≥ 5.3 (pidfd_open and waitid(P_PIDFD))."""


class UnsafePath(ProcwindowError, PermissionError):
    """A directory or file procwindow would write to is not safely ours.

    A symlink, another user's, writable by others, or (for a file) not a
    regular file. ``what`` names its role (``log_dir``, ``state directory``…).

    >>> str(UnsafePath("/tmp", "log_dir", "is writable by others (mode 1777)"))
    'unsafe log_dir /tmp: is writable by others (mode 1777); refusing to use it'
    """

    def __init__(self, path: str, what: str, why: str) -> None:
        super().__init__(f"unsafe {what} {path}: {why}; refusing to use it")
        self.path = path
        self.what = what
        self.why = why


class SupervisorClosed(ProcwindowError, RuntimeError):
    """The supervisor is closing or closed: it starts nothing more."""


class WrongLoop(ProcwindowError, RuntimeError):
    """A supervisor is used from an event loop other than the one it first ran on."""

    def __init__(self) -> None:
        super().__init__("a Supervisor is bound to the event loop it first ran on")


def _ended(exit_: ExitInfo) -> str:
    signal = f", signal {exit_.signal}" if exit_.signal is not None else ""
    return f"exited with code {exit_.code} ({exit_.reason.value}{signal})"


class NoMatch(ProcwindowError, LookupError):
    """``wait_for``: the proc ended and none of its lines matched.

    ``exit`` is how it ended, ``cursor`` the seq of its last line read.
    """

    def __init__(self, proc_id: int, pattern: str, exit_: ExitInfo, cursor: int) -> None:
        super().__init__(f"proc {proc_id} {_ended(exit_)} without a line matching {pattern!r}")
        self.proc_id = proc_id
        self.pattern = pattern
        self.exit = exit_
        self.cursor = cursor


class NotReady(ProcwindowError, RuntimeError):
    """``wait_ready``: the proc exited, or its check gave up, before it was ready.

    ``exit`` is how it ended (None while it runs), ``why`` says what happened.
    """

    def __init__(self, proc_id: int, why: str, exit_: ExitInfo | None = None) -> None:
        super().__init__(f"proc {proc_id} is not ready: {why}")
        self.proc_id = proc_id
        self.why = why
        self.exit = exit_

    @classmethod
    def exited(cls, proc_id: int, exit_: ExitInfo) -> NotReady:
        return cls(proc_id, f"it {_ended(exit_)} before its check passed", exit_)


class StdinClosed(ProcwindowError, BrokenPipeError):
    """``write`` to a proc whose stdin is closed, or that has none."""

    def __init__(self, proc_id: int, why: str) -> None:
        super().__init__(f"proc {proc_id}: {why}")
        self.proc_id = proc_id
