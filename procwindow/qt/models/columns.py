"""The columns of the process table, without Qt (the rows are kept without it too)."""

from __future__ import annotations

import enum

__all__ = [
    "AGENT_COLUMNS",
    "COLUMN_TITLES",
    "SESSION_COLUMNS",
    "SORTABLE_COLUMNS",
    "ProcColumn",
]


class ProcColumn(enum.StrEnum):
    """The columns of the process table; the value is the ``columnName`` role."""

    ID = "id"  # procwindow's id
    PID = "pid"  # the kernel's
    AGENT = "agent"
    TOOL = "tool"
    STATUS = "status"
    RUNTIME = "runtime"
    CPU = "cpu"
    MEMORY = "memory"
    ACTIONS = "actions"


#: The header of each column.
COLUMN_TITLES = {
    ProcColumn.ID: "ID",
    ProcColumn.PID: "PID",
    ProcColumn.AGENT: "Agent",
    ProcColumn.TOOL: "Tool",
    ProcColumn.STATUS: "Status",
    ProcColumn.RUNTIME: "Runtime",
    ProcColumn.CPU: "CPU",
    ProcColumn.MEMORY: "Mem",
    ProcColumn.ACTIONS: "Actions",
}
#: The columns of one agent's table.
AGENT_COLUMNS = (
    ProcColumn.ID,
    ProcColumn.PID,
    ProcColumn.TOOL,
    ProcColumn.STATUS,
    ProcColumn.RUNTIME,
    ProcColumn.CPU,
    ProcColumn.MEMORY,
    ProcColumn.ACTIONS,
)
#: The columns of a whole session's table: an Agent column after the ids.
SESSION_COLUMNS = (ProcColumn.ID, ProcColumn.PID, ProcColumn.AGENT, *AGENT_COLUMNS[2:])
#: The columns a click on the header sorts by (every one but the actions).
SORTABLE_COLUMNS = frozenset(ProcColumn) - {ProcColumn.ACTIONS}
