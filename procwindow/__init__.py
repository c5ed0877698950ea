"""procwindow: an asyncio process supervisor, and a Qt window to watch and control it.

The supervisor (:class:`Supervisor`) needs only the standard library and psutil;
importing this package never imports Qt. The rules every layer shares
(defaults, command and scope checks, scope patterns and counts) are in
:mod:`procwindow.core.rules`.
"""

from __future__ import annotations

from importlib import metadata as _metadata

from procwindow.core import (
    CommandNotFound,
    CwdMissing,
    Event,
    EventKind,
    Excerpt,
    ExitEvent,
    ExitInfo,
    ExitReason,
    InvalidArgv,
    InvalidPattern,
    InvalidScope,
    Line,
    NoMatch,
    NotExecutable,
    NotReady,
    OutputEvent,
    PartialEvent,
    Proc,
    ProcNotFound,
    ProcRunning,
    ProcState,
    ProcStats,
    ProcwindowError,
    ReadBatch,
    Ready,
    SearchHit,
    SpawnFailed,
    StartEvent,
    StdinClosed,
    Stream,
    Subscription,
    Supervisor,
    SupervisorClosed,
    UnsafePath,
    UnsupportedPlatform,
    WrongLoop,
    scope_pattern,
    topic_token,
)

try:
    __version__ = _metadata.version("procwindow")
except _metadata.PackageNotFoundError:  # running from a checkout that was never installed
    __version__ = "0.0.0+unknown"

__all__ = [
    "CommandNotFound",
    "CwdMissing",
    "Event",
    "EventKind",
    "Excerpt",
    "ExitEvent",
    "ExitInfo",
    "ExitReason",
    "InvalidArgv",
    "InvalidPattern",
    "InvalidScope",
    "Line",
    "NoMatch",
    "NotExecutable",
    "NotReady",
    "OutputEvent",
    "PartialEvent",
    "Proc",
    "ProcNotFound",
    "ProcRunning",
    "ProcState",
    "ProcStats",
    "ProcwindowError",
    "ReadBatch",
    "Ready",
    "SearchHit",
    "SpawnFailed",
    "StartEvent",
    "StdinClosed",
    "Stream",
    "Subscription",
    "Supervisor",
    "SupervisorClosed",
    "UnsafePath",
    "UnsupportedPlatform",
    "WrongLoop",
    "__version__",
    "scope_pattern",
    "topic_token",
]
