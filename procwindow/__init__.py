"""procwindow: an asyncio process supervisor, and a Qt window to watch and control it.

The supervisor (:class:`Supervisor`) needs only the standard library and psutil;
importing this package never imports Qt. The rules every layer shares
(defaults, command and scope checks, scope patterns and counts) are in
:mod:`procwindow.core.rules`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._lazy import exports

if TYPE_CHECKING:
    from procwindow.core import (
        Backoff,
        ByteBatch,
        Command,
        CommandError,
        CommandNotFound,
        CommandRun,
        CommandState,
        Condition,
        CwdMissing,
        Dependency,
        Event,
        EventKind,
        Excerpt,
        ExitEvent,
        ExitInfo,
        ExitReason,
        InvalidArgv,
        InvalidField,
        InvalidPattern,
        InvalidScope,
        InvalidWorkspace,
        Line,
        LineRun,
        ListeningPort,
        Liveness,
        NoMatch,
        NoTerminal,
        NotExecutable,
        NotReady,
        OutputEvent,
        PartialEvent,
        Phase,
        PhaseEvent,
        Proc,
        ProcNotFound,
        ProcRunning,
        ProcState,
        ProcStats,
        ProcwindowError,
        ReadBatch,
        Ready,
        RestartPolicy,
        RunBatch,
        ScreenText,
        SearchHit,
        SpawnFailed,
        StartEvent,
        StdinClosed,
        Stream,
        Subscription,
        Supervisor,
        SupervisorAPI,
        SupervisorClosed,
        Timeout,
        TreeProcess,
        UnsafePath,
        UnsupportedPlatform,
        Workspace,
        WorkspaceConflict,
        WorkspaceNotFound,
        WorkspaceRun,
        WrongLoop,
        command_state,
        scope_pattern,
        topic_token,
    )

    __version__: str
else:
    _exported, __dir__ = exports(__name__)

    def __getattr__(name: str) -> Any:
        if name == "__version__":  # the installed metadata, read when asked for
            from importlib import metadata

            try:
                version = metadata.version("procwindow")
            except metadata.PackageNotFoundError:  # a checkout that was never installed
                version = "0.0.0+unknown"
            globals()["__version__"] = version
            return version
        return _exported(name)


#: The command's name, which its messages begin with.
PROG = "procwindow"

__all__ = [
    "Backoff",
    "ByteBatch",
    "Command",
    "CommandError",
    "CommandNotFound",
    "CommandRun",
    "CommandState",
    "Condition",
    "CwdMissing",
    "Dependency",
    "Event",
    "EventKind",
    "Excerpt",
    "ExitEvent",
    "ExitInfo",
    "ExitReason",
    "InvalidArgv",
    "InvalidField",
    "InvalidPattern",
    "InvalidScope",
    "InvalidWorkspace",
    "Line",
    "LineRun",
    "ListeningPort",
    "Liveness",
    "NoMatch",
    "NoTerminal",
    "NotExecutable",
    "NotReady",
    "OutputEvent",
    "PartialEvent",
    "Phase",
    "PhaseEvent",
    "Proc",
    "ProcNotFound",
    "ProcRunning",
    "ProcState",
    "ProcStats",
    "ProcwindowError",
    "ReadBatch",
    "Ready",
    "RestartPolicy",
    "RunBatch",
    "ScreenText",
    "SearchHit",
    "SpawnFailed",
    "StartEvent",
    "StdinClosed",
    "Stream",
    "Subscription",
    "Supervisor",
    "SupervisorAPI",
    "SupervisorClosed",
    "Timeout",
    "TreeProcess",
    "UnsafePath",
    "UnsupportedPlatform",
    "Workspace",
    "WorkspaceConflict",
    "WorkspaceNotFound",
    "WorkspaceRun",
    "WrongLoop",
    "__version__",
    "command_state",
    "scope_pattern",
    "topic_token",
]
