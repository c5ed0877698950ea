"""procwindow.core: the headless supervisor (stdlib + psutil; never imports Qt)."""

from __future__ import annotations

from ._archive import DEFAULT_HISTORY_AGE, DEFAULT_HISTORY_BYTES, DEFAULT_LOG_CAP, MIN_LOG_CAP
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
    WrongLoop,
)
from ._events import Subscription
from ._output import LINE_MAX
from ._proc import Proc
from ._search import SearchHit
from ._supervisor import Supervisor
from ._text import format_runtime
from ._topics import Pattern
from ._types import (
    Clock,
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
from .rules import (
    DEFAULT_AGENT,
    DEFAULT_GRACEFUL_TIMEOUT,
    DEFAULT_SESSION,
    DEFAULT_TOOL,
    MAX_GRACEFUL_TIMEOUT,
    CommandError,
    ScopeCounts,
    check_graceful_timeout,
    command_argv,
    count_scopes,
    scope_pattern,
)

__all__ = [
    "DEFAULT_AGENT",
    "DEFAULT_GRACEFUL_TIMEOUT",
    "DEFAULT_HISTORY_AGE",
    "DEFAULT_HISTORY_BYTES",
    "DEFAULT_LOG_CAP",
    "DEFAULT_SESSION",
    "DEFAULT_TOOL",
    "LINE_MAX",
    "MAX_GRACEFUL_TIMEOUT",
    "MIN_LOG_CAP",
    "Clock",
    "CommandError",
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
    "ScopeCounts",
    "SearchHit",
    "SpawnFailed",
    "Stream",
    "Subscription",
    "Supervisor",
    "SupervisorClosed",
    "UnsafePath",
    "UnsupportedPlatform",
    "WrongLoop",
    "check_graceful_timeout",
    "command_argv",
    "count_scopes",
    "format_runtime",
    "scope_pattern",
]
