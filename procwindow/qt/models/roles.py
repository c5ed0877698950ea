"""The roles and columns of the three models, and the index types they share.

The process table's columns are defined without Qt in ``columns`` (its rows
are kept without Qt) and re-exported here.

Roles are ``IntEnum`` members from ``Qt.UserRole + 1``; QML sees them by the
camelCase names in each ``*_ROLE_NAMES`` table (a model's ``roleNames()``).
"""

from __future__ import annotations

import enum

from PySide6.QtCore import QByteArray, QModelIndex, QPersistentModelIndex, Qt

from .columns import AGENT_COLUMNS, COLUMN_TITLES, SESSION_COLUMNS, SORTABLE_COLUMNS, ProcColumn

__all__ = [
    "AGENT_COLUMNS",
    "COLUMN_TITLES",
    "COUNTDOWN_ROLES",
    "COUNT_ROLES",
    "DISPLAY",
    "OUTPUT_ROLE_NAMES",
    "PHASE_ROLES",
    "PROC_ROLE_NAMES",
    "ROOT",
    "RUNTIME_ROLES",
    "SESSION_COLUMNS",
    "SESSION_ROLE_NAMES",
    "SORTABLE_COLUMNS",
    "STATE_ROLES",
    "STATS_ROLES",
    "TOOLTIP",
    "ModelIndex",
    "OutputRole",
    "ProcColumn",
    "ProcRole",
    "SessionRole",
]

ModelIndex = QModelIndex | QPersistentModelIndex
#: The invalid index: the parent of every top-level row.
ROOT = QModelIndex()
DISPLAY = int(Qt.ItemDataRole.DisplayRole)
TOOLTIP = int(Qt.ItemDataRole.ToolTipRole)
_USER = int(Qt.ItemDataRole.UserRole)


# -- ProcModel -------------------------------------------------------------------


class ProcRole(enum.IntEnum):
    """ProcModel roles (QML names in :data:`PROC_ROLE_NAMES`)."""

    PROC_ID = _USER + 1
    OS_PID = enum.auto()
    TOOL = enum.auto()
    COMMAND = enum.auto()
    STATUS = enum.auto()
    EXIT_CODE = enum.auto()
    EXIT_REASON = enum.auto()
    START_TIME = enum.auto()
    RUNTIME_TEXT = enum.auto()
    CAN_TERM = enum.auto()
    CAN_KILL = enum.auto()
    CAN_DISMISS = enum.auto()
    CAN_RESTART = enum.auto()
    SESSION = enum.auto()
    AGENT = enum.auto()
    STATUS_COLOR = enum.auto()
    STATUS_TEXT = enum.auto()
    RUNTIME = enum.auto()
    START_TEXT = enum.auto()
    COLUMN_NAME = enum.auto()
    CPU_PERCENT = enum.auto()
    CPU_TEXT = enum.auto()
    CPU_HISTORY = enum.auto()
    MEMORY = enum.auto()
    MEMORY_TEXT = enum.auto()
    MEMORY_HISTORY = enum.auto()
    STATS_LIVE = enum.auto()
    SAMPLES = enum.auto()
    PHASE_TEXT = enum.auto()
    WORKSPACE_TIP = enum.auto()
    STATUS_LABEL = enum.auto()
    STATUS_TIP = enum.auto()
    STATUS_TINT = enum.auto()
    COMMAND_NAME = enum.auto()
    RESTART_COUNT = enum.auto()
    RUNS_SHOWN = enum.auto()
    EARLIER_RUN = enum.auto()
    RUN_TEXT = enum.auto()


PROC_ROLE_NAMES: dict[int, QByteArray] = {
    DISPLAY: QByteArray(b"display"),
    TOOLTIP: QByteArray(b"toolTip"),
    ProcRole.PROC_ID: QByteArray(b"procId"),
    ProcRole.OS_PID: QByteArray(b"osPid"),
    ProcRole.TOOL: QByteArray(b"tool"),
    ProcRole.COMMAND: QByteArray(b"command"),
    ProcRole.STATUS: QByteArray(b"status"),
    ProcRole.EXIT_CODE: QByteArray(b"exitCode"),
    ProcRole.EXIT_REASON: QByteArray(b"exitReason"),
    ProcRole.START_TIME: QByteArray(b"startTime"),
    ProcRole.RUNTIME_TEXT: QByteArray(b"runtimeText"),
    ProcRole.CAN_TERM: QByteArray(b"canTerm"),
    ProcRole.CAN_KILL: QByteArray(b"canKill"),
    ProcRole.CAN_DISMISS: QByteArray(b"canDismiss"),
    ProcRole.CAN_RESTART: QByteArray(b"canRestart"),
    ProcRole.SESSION: QByteArray(b"session"),
    ProcRole.AGENT: QByteArray(b"agent"),
    ProcRole.STATUS_COLOR: QByteArray(b"statusColor"),
    ProcRole.STATUS_TEXT: QByteArray(b"statusText"),
    ProcRole.RUNTIME: QByteArray(b"runtime"),
    ProcRole.START_TEXT: QByteArray(b"startText"),
    ProcRole.COLUMN_NAME: QByteArray(b"columnName"),
    ProcRole.CPU_PERCENT: QByteArray(b"cpuPercent"),
    ProcRole.CPU_TEXT: QByteArray(b"cpuText"),
    ProcRole.CPU_HISTORY: QByteArray(b"cpuHistory"),
    ProcRole.MEMORY: QByteArray(b"memory"),
    ProcRole.MEMORY_TEXT: QByteArray(b"memoryText"),
    ProcRole.MEMORY_HISTORY: QByteArray(b"memoryHistory"),
    ProcRole.STATS_LIVE: QByteArray(b"statsLive"),
    ProcRole.SAMPLES: QByteArray(b"samples"),
    ProcRole.PHASE_TEXT: QByteArray(b"phaseText"),
    ProcRole.WORKSPACE_TIP: QByteArray(b"workspaceTip"),
    ProcRole.STATUS_LABEL: QByteArray(b"statusLabel"),
    ProcRole.STATUS_TIP: QByteArray(b"statusTip"),
    ProcRole.STATUS_TINT: QByteArray(b"statusTint"),
    ProcRole.COMMAND_NAME: QByteArray(b"commandName"),
    ProcRole.RESTART_COUNT: QByteArray(b"restartCount"),
    ProcRole.RUNS_SHOWN: QByteArray(b"runsShown"),
    ProcRole.EARLIER_RUN: QByteArray(b"earlierRun"),
    ProcRole.RUN_TEXT: QByteArray(b"runText"),
}


#: Roles that change when a proc changes state (stopping, exited).
STATE_ROLES = [
    DISPLAY,
    ProcRole.STATUS,
    ProcRole.STATUS_TEXT,
    ProcRole.STATUS_LABEL,
    ProcRole.STATUS_TIP,
    ProcRole.STATUS_COLOR,
    ProcRole.STATUS_TINT,
    ProcRole.EXIT_CODE,
    ProcRole.EXIT_REASON,
    ProcRole.RUNTIME,
    ProcRole.RUNTIME_TEXT,
    ProcRole.CAN_TERM,
    ProcRole.CAN_KILL,
    ProcRole.CAN_DISMISS,
    ProcRole.CAN_RESTART,
    ProcRole.CPU_TEXT,
    ProcRole.MEMORY_TEXT,
    ProcRole.STATS_LIVE,
]
#: Roles that change with what a workspace does with a proc (on the Tool and Status columns).
PHASE_ROLES = [
    ProcRole.RUN_TEXT,
    ProcRole.PHASE_TEXT,
    ProcRole.WORKSPACE_TIP,
    ProcRole.STATUS_LABEL,
    ProcRole.STATUS_TIP,
]
#: Roles a restart's countdown changes every second (on the Status column).
COUNTDOWN_ROLES = [ProcRole.PHASE_TEXT, ProcRole.STATUS_LABEL]
#: Roles that change every second while a proc runs (on the Runtime column).
RUNTIME_ROLES = [DISPLAY, ProcRole.RUNTIME, ProcRole.RUNTIME_TEXT]
#: Roles that change when a running proc is sampled (on the CPU and Mem columns).
STATS_ROLES = [
    DISPLAY,
    ProcRole.CPU_PERCENT,
    ProcRole.CPU_TEXT,
    ProcRole.CPU_HISTORY,
    ProcRole.MEMORY,
    ProcRole.MEMORY_TEXT,
    ProcRole.MEMORY_HISTORY,
    ProcRole.STATS_LIVE,
    ProcRole.SAMPLES,
]


# -- OutputModel -----------------------------------------------------------------


class OutputRole(enum.IntEnum):
    """OutputModel roles (QML names in :data:`OUTPUT_ROLE_NAMES`)."""

    SEQ = _USER + 1
    STREAM = enum.auto()
    IS_STDERR = enum.auto()
    TIME = enum.auto()
    TIME_TEXT = enum.auto()
    TEXT = enum.auto()
    STYLED = enum.auto()
    SPLIT = enum.auto()
    SHOWN = enum.auto()
    SHOWN_FORMAT = enum.auto()


OUTPUT_ROLE_NAMES: dict[int, QByteArray] = {
    DISPLAY: QByteArray(b"display"),
    OutputRole.SEQ: QByteArray(b"seq"),
    OutputRole.STREAM: QByteArray(b"stream"),
    OutputRole.IS_STDERR: QByteArray(b"isStderr"),
    OutputRole.TIME: QByteArray(b"time"),
    OutputRole.TIME_TEXT: QByteArray(b"timeText"),
    OutputRole.TEXT: QByteArray(b"text"),
    OutputRole.STYLED: QByteArray(b"styled"),
    OutputRole.SPLIT: QByteArray(b"split"),
    OutputRole.SHOWN: QByteArray(b"shown"),
    OutputRole.SHOWN_FORMAT: QByteArray(b"shownFormat"),
}


# -- SessionModel ----------------------------------------------------------------


class SessionRole(enum.IntEnum):
    """SessionModel roles (QML names in :data:`SESSION_ROLE_NAMES`)."""

    NAME = _USER + 1
    KIND = enum.auto()
    SESSION = enum.auto()
    AGENT = enum.auto()
    RUNNING = enum.auto()
    TOTAL = enum.auto()
    LABEL = enum.auto()
    HOST = enum.auto()
    CONNECTED = enum.auto()
    COUNT_TEXT = enum.auto()


SESSION_ROLE_NAMES: dict[int, QByteArray] = {
    DISPLAY: QByteArray(b"display"),
    TOOLTIP: QByteArray(b"toolTip"),
    SessionRole.NAME: QByteArray(b"name"),
    SessionRole.KIND: QByteArray(b"kind"),
    SessionRole.SESSION: QByteArray(b"session"),
    SessionRole.AGENT: QByteArray(b"agent"),
    SessionRole.RUNNING: QByteArray(b"running"),
    SessionRole.TOTAL: QByteArray(b"total"),
    SessionRole.LABEL: QByteArray(b"label"),
    SessionRole.HOST: QByteArray(b"host"),
    SessionRole.CONNECTED: QByteArray(b"connected"),
    SessionRole.COUNT_TEXT: QByteArray(b"countText"),
}

#: Roles that change with a node's counts.
COUNT_ROLES = [
    DISPLAY,
    TOOLTIP,
    SessionRole.RUNNING,
    SessionRole.TOTAL,
    SessionRole.LABEL,
    SessionRole.COUNT_TEXT,
]
