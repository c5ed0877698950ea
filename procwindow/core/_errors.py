"""The error hierarchy: every error procwindow raises derives from ProcwindowError.

Each error carries the fact the caller needs to act on as an attribute, so a
window, a control socket or a script can show it without parsing the message.

Each class has a stable ``code`` (a word for programs: ``proc-not-found``) and
names in ``details`` the attributes that carry those facts. One registry maps a
code back to its class, so an error that crossed a boundary (the control socket,
an MCP result) is rebuilt as the same class with the same attributes, never
guessed from its message: see :func:`error_class` and
:meth:`ProcwindowError.rebuild`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

from ._types import ExitInfo

__all__ = [
    "CommandNotFound",
    "CwdMissing",
    "InvalidArgv",
    "InvalidField",
    "InvalidPattern",
    "InvalidScope",
    "NoMatch",
    "NoTerminal",
    "NotExecutable",
    "NotReady",
    "ProcNotFound",
    "ProcRunning",
    "ProcwindowError",
    "SpawnFailed",
    "StdinClosed",
    "SupervisorClosed",
    "Timeout",
    "UnsafePath",
    "UnsupportedPlatform",
    "WrongLoop",
    "error_class",
    "error_codes",
]

E = TypeVar("E", bound="ProcwindowError")

#: Every code, and the class whose errors carry it.
_REGISTRY: dict[str, type[ProcwindowError]] = {}


class ProcwindowError(Exception):
    """Base class of every error procwindow raises on purpose.

    ``code``: a stable word for programs, the class's own (a subclass that names
    none is told apart by nothing but its class). ``codes``: every code the
    class's errors carry, where one class has several (the protocol's faults).
    ``details``: the attributes that say what happened, by name and type; they
    cross a boundary with the message.
    """

    code: str = "error"
    codes: ClassVar[tuple[str, ...]] = ()
    details: ClassVar[Mapping[str, type]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("codes") or (
            (cls.__dict__["code"],) if "code" in cls.__dict__ else ()
        )
        for code in own:
            taken = _REGISTRY.setdefault(code, cls)
            if taken is not cls:
                raise TypeError(f"error code {code!r} is {taken.__name__}'s already")

    def detail_values(self) -> dict[str, Any]:
        """The ``details`` of this error, by name (None where one is not set)."""
        return {name: getattr(self, name, None) for name in self.details}

    @classmethod
    def rebuild(cls: type[E], message: str, values: Mapping[str, Any], code: str = "") -> E:
        """An error of this class with ``message`` and the ``details`` in ``values``,
        as it was raised on the other side of a boundary (its ``__init__`` is not
        run: the message is kept as it was written)."""
        err = cls.__new__(cls)
        Exception.__init__(err, message)
        for name in cls.details:
            setattr(err, name, values.get(name))
        if code and code != cls.code:
            err.code = code  # one of ``codes``
        return err


def error_class(code: str) -> type[ProcwindowError] | None:
    """The class whose errors carry ``code`` (None for a code unknown here)."""
    return _REGISTRY.get(code)


def error_codes() -> dict[str, type[ProcwindowError]]:
    """Every registered code and its class (the codes of the layers imported so far)."""
    return dict(_REGISTRY)


class CommandNotFound(ProcwindowError, LookupError):
    """The command is not a path that exists and is not found on ``PATH``.

    >>> str(CommandNotFound("nmp"))
    "command not found: 'nmp'"
    """

    code = "command-not-found"
    details: ClassVar[Mapping[str, type]] = {"command": str}

    def __init__(self, command: str) -> None:
        super().__init__(f"command not found: {command!r}")
        self.command = command


class NotExecutable(ProcwindowError, PermissionError):
    """The command exists but cannot be executed (no permission, a directory, bad format)."""

    code = "not-executable"
    details: ClassVar[Mapping[str, type]] = {"path": str, "why": str}

    def __init__(self, path: str, why: str = "permission denied") -> None:
        super().__init__(f"not executable: {path!r} ({why})")
        self.path = path
        self.why = why


class CwdMissing(ProcwindowError, FileNotFoundError):
    """The working directory given to ``spawn`` does not exist or is not a directory."""

    code = "cwd-missing"
    details: ClassVar[Mapping[str, type]] = {"cwd": str, "why": str}

    def __init__(self, cwd: str, why: str = "no such directory") -> None:
        super().__init__(f"working directory unusable: {cwd!r} ({why})")
        self.cwd = cwd
        self.why = why


class InvalidArgv(ProcwindowError, ValueError):
    """argv is empty, holds a non-string, holds a NUL byte, or is too long for the kernel."""

    code = "invalid-argv"


class InvalidScope(ProcwindowError, ValueError):
    """A session or agent name cannot be used as a topic token."""

    code = "invalid-scope"


class ProcNotFound(ProcwindowError, LookupError):
    """No proc has this id (it never existed or was dismissed)."""

    code = "proc-not-found"
    details: ClassVar[Mapping[str, type]] = {"proc_id": int}

    def __init__(self, proc_id: int) -> None:
        super().__init__(f"no such proc: {proc_id}")
        self.proc_id = proc_id


class ProcRunning(ProcwindowError, RuntimeError):
    """The operation needs an exited proc (``dismiss``), and this one still runs."""

    code = "proc-running"
    details: ClassVar[Mapping[str, type]] = {"proc_id": int}

    def __init__(self, proc_id: int) -> None:
        super().__init__(f"proc {proc_id} is still running; term or kill it first")
        self.proc_id = proc_id


class InvalidPattern(ProcwindowError, ValueError):
    """A subscription pattern or a search pattern is malformed."""

    code = "invalid-pattern"
    details: ClassVar[Mapping[str, type]] = {"pattern": str, "why": str}

    def __init__(self, pattern: str, why: str) -> None:
        super().__init__(f"invalid pattern {pattern!r}: {why}")
        self.pattern = pattern
        self.why = why


class SpawnFailed(ProcwindowError, OSError):
    """The kernel refused to start the child for a reason other than the ones above.

    ``errno`` and ``strerror`` are those of the underlying OSError (EMFILE, EAGAIN, ENOMEM…).
    """

    code = "spawn-failed"
    details: ClassVar[Mapping[str, type]] = {"errno": int, "strerror": str}


class UnsupportedPlatform(ProcwindowError, RuntimeError):
    """procwindow's supervisor needs Linux ≥ 5.3 (pidfd_open and waitid(P_PIDFD))."""

    code = "unsupported-platform"


class UnsafePath(ProcwindowError, PermissionError):
    """A directory or file procwindow would write to is not safely ours.

    A symlink, another user's, writable by others, or (for a file) not a
    regular file. ``what`` names its role (``log_dir``, ``state directory``…).

    >>> str(UnsafePath("/tmp", "log_dir", "is writable by others (mode 1777)"))
    'unsafe log_dir /tmp: is writable by others (mode 1777); refusing to use it'
    """

    code = "unsafe-path"
    details: ClassVar[Mapping[str, type]] = {"path": str, "what": str, "why": str}

    def __init__(self, path: str, what: str, why: str) -> None:
        super().__init__(f"unsafe {what} {path}: {why}; refusing to use it")
        self.path = path
        self.what = what
        self.why = why


class SupervisorClosed(ProcwindowError, RuntimeError):
    """The supervisor is closing or closed: it starts nothing more."""

    code = "supervisor-closed"


class WrongLoop(ProcwindowError, RuntimeError):
    """A supervisor is used from an event loop other than the one it first ran on."""

    code = "wrong-loop"

    def __init__(self) -> None:
        super().__init__("a Supervisor is bound to the event loop it first ran on")


def _ended(exit_: ExitInfo) -> str:
    signal = f", signal {exit_.signal}" if exit_.signal is not None else ""
    return f"exited with code {exit_.code} ({exit_.reason.value}{signal})"


class NoMatch(ProcwindowError, LookupError):
    """``wait_for``: the proc ended and none of its lines matched.

    ``exit`` is how it ended, ``cursor`` the seq of its last line read.
    """

    code = "no-match"
    details: ClassVar[Mapping[str, type]] = {
        "proc_id": int,
        "pattern": str,
        "exit": ExitInfo,
        "cursor": int,
    }

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

    code = "not-ready"
    details: ClassVar[Mapping[str, type]] = {"proc_id": int, "why": str, "exit": ExitInfo}

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

    code = "stdin-closed"
    details: ClassVar[Mapping[str, type]] = {"proc_id": int, "why": str}

    def __init__(self, proc_id: int, why: str) -> None:
        super().__init__(f"proc {proc_id}: {why}")
        self.proc_id = proc_id
        self.why = why


class NoTerminal(ProcwindowError, LookupError):
    """``resize`` or ``screen`` of a proc that has no terminal (spawned without
    ``pty``), or whose terminal is closed (it exited)."""

    code = "no-terminal"
    details: ClassVar[Mapping[str, type]] = {"proc_id": int, "why": str}

    def __init__(self, proc_id: int, why: str) -> None:
        super().__init__(f"proc {proc_id}: {why}")
        self.proc_id = proc_id
        self.why = why


class InvalidField(ProcwindowError, ValueError):
    """A field of an operation (an argument of a library call, a field of a request,
    an option of ``ctl``, an argument of an MCP tool) that is unknown, missing, of the
    wrong type or out of range. Every surface refuses it with this same message.

    ``verb`` is the operation (as the protocol names it: ``run``, ``out``…),
    ``field`` the field at fault.
    """

    code = "bad-field"
    details: ClassVar[Mapping[str, type]] = {"verb": str, "field": str}

    def __init__(self, verb: str, field: str, message: str) -> None:
        super().__init__(message)
        self.verb = verb
        self.field = field


class Timeout(ProcwindowError, TimeoutError):
    """A wait (``wait``, ``wait_for``, ``wait_ready``) ran out of its ``timeout``; the
    proc was left alone. ``seconds`` is that timeout.

    >>> str(Timeout.waiting(3, 2.0, "did not exit"))
    'proc 3 did not exit within 2 s'
    """

    code = "timeout"
    details: ClassVar[Mapping[str, type]] = {"proc_id": int, "seconds": float}

    def __init__(self, proc_id: int, seconds: float, message: str) -> None:
        super().__init__(message)
        self.proc_id = proc_id
        self.seconds = seconds

    @classmethod
    def waiting(cls, proc_id: int, seconds: float, what: str) -> Timeout:
        """``proc N WHAT within S s``."""
        return cls(proc_id, seconds, f"proc {proc_id} {what} within {seconds:g} s")
