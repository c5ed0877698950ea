"""procwindow.core: the headless supervisor (stdlib + psutil; never imports Qt)."""

from __future__ import annotations

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
    "UnsupportedPlatform",
    "format_runtime",
]
