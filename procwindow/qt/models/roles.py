"""The roles and columns of the three models, and the index types they share.

The process table's columns are defined without Qt in ``columns`` (its rows
are kept without Qt) and re-exported here.

Roles are ``IntEnum`` members from ``Qt.UserRole + 1``; QML sees them by their
names in camelCase (:func:`role_names`, a model's ``roleNames()``).
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
    "role_names",
]

ModelIndex = QModelIndex | QPersistentModelIndex
#: The invalid index: the parent of every top-level row.
ROOT = QModelIndex()
DISPLAY = int(Qt.ItemDataRole.DisplayRole)
TOOLTIP = int(Qt.ItemDataRole.ToolTipRole)
_USER = int(Qt.ItemDataRole.UserRole)


def role_names(
    roles: type[enum.IntEnum], *, display: bool = False, tooltip: bool = False
) -> dict[int, QByteArray]:
    """A model's ``roleNames()``: each role by its member's name in camelCase
    (``STATUS_TEXT`` is ``statusText`` in QML), with Qt's ``display`` and
    ``toolTip`` where the model gives them."""
    names = {int(r): _camel(r.name) for r in roles}
    names |= {DISPLAY: "display"} if display else {}
    names |= {TOOLTIP: "toolTip"} if tooltip else {}
    return {role: QByteArray(name.encode()) for role, name in names.items()}


def _camel(name: str) -> str:
    first, *rest = name.lower().split("_")
    return first + "".join(word.capitalize() for word in rest)


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


PROC_ROLE_NAMES = role_names(ProcRole, display=True, tooltip=True)


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


OUTPUT_ROLE_NAMES = role_names(OutputRole, display=True)


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


SESSION_ROLE_NAMES = role_names(SessionRole, display=True, tooltip=True)

#: Roles that change with a node's counts.
COUNT_ROLES = [
    DISPLAY,
    TOOLTIP,
    SessionRole.RUNNING,
    SessionRole.TOTAL,
    SessionRole.LABEL,
    SessionRole.COUNT_TEXT,
]
