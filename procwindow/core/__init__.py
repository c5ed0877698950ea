"""procwindow.core: the headless supervisor (stdlib + psutil; never imports Qt)."""

from __future__ import annotations

from ._checks import MAX_GRACEFUL_TIMEOUT, check_graceful_timeout
from ._errors import (
    CommandNotFound,
    CwdMissing,
    InvalidArgv,
    InvalidPattern,
    InvalidScope,
    NotExecutable,
    ProcNotFound,
    ProcRunning,
    ProcwindowError,
    SpawnFailed,
    SupervisorClosed,
    UnsafePath,
    UnsupportedPlatform,
)
from ._output import LINE_MAX
from ._proc import Proc
from ._supervisor import Clock, Subscription, Supervisor, format_runtime
from ._topics import Pattern
from ._types import (
    Event,
    EventKind,
    ExitInfo,
    ExitReason,
    Line,
    ProcState,
    ProcStats,
    ReadBatch,
    Stream,
)

__all__ = [
    "LINE_MAX",
    "MAX_GRACEFUL_TIMEOUT",
    "Clock",
    "CommandNotFound",
    "CwdMissing",
    "Event",
    "EventKind",
    "ExitInfo",
    "ExitReason",
    "InvalidArgv",
    "InvalidPattern",
    "InvalidScope",
    "Line",
    "NotExecutable",
    "Pattern",
    "Proc",
    "ProcNotFound",
    "ProcRunning",
    "ProcState",
    "ProcStats",
    "ProcwindowError",
    "ReadBatch",
    "SpawnFailed",
    "Stream",
    "Subscription",
    "Supervisor",
    "SupervisorClosed",
    "UnsafePath",
    "UnsupportedPlatform",
    "check_graceful_timeout",
    "format_runtime",
]
