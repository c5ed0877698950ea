"""Read-only Qt item models over the supervisor.

- :class:`ProcModel` (``proc``): the process table of a scope (a session, or one of its agents).
- :class:`OutputModel` (``output``): the output lines of one process, filtered and capped;
  its lines and filter scan live, without Qt, in ``_lines``.
- :class:`SessionModel` (``sessions``): the tree of sessions and their agents, with live counts.
- :class:`HistoryModel` (``history``): every recorded run of a scope, newest first.
- :class:`ProcTreeModel` (``tree``): the processes one proc is made of, parents first.
- :class:`SearchModel` (``search``): the lines of every run, live and past, that match a pattern
  (on one supervisor or several).

Their roles and columns are in ``roles``, the words and colours they show in
``format``. Each model follows the supervisor through an
:class:`~procwindow.qt._support.EventPump` (a task on the qasync loop reading
``Supervisor.subscribe``) and never acts on a process: actions go through
:class:`~procwindow.qt.controller.ProcController`. Roles are ``IntEnum``
members from ``Qt.UserRole + 1``; QML sees them by the camelCase names in each
model's ``ROLE_NAMES``.
"""

from __future__ import annotations

from ._lines import FILTER_CHUNK, STRIP_AT_ONCE
from ._proc_cells import status_tint
from ._reading import LogFacts
from .format import STATUS_COLORS, status_text
from .history import HistoryModel, HistoryRole
from .output import DEFAULT_MAX_LINES, FILTER_BUDGET, FRAME_MS, FRAME_READ_LIMIT, OutputModel
from .proc import TICK_INTERVAL_MS, VISIBLE_MARGIN, ProcModel
from .roles import (
    OUTPUT_ROLE_NAMES,
    PROC_ROLE_NAMES,
    SESSION_ROLE_NAMES,
    OutputRole,
    ProcColumn,
    ProcRole,
    SessionRole,
)
from .search import SearchModel, SearchRole, SearchSource
from .sessions import SessionModel
from .tree import ProcTreeModel, TreeRole

# The constants are importable from here as they were from the single module
# this package replaced; a test that changes one patches the module defining it.
__all__ = [
    "DEFAULT_MAX_LINES",
    "FILTER_BUDGET",
    "FILTER_CHUNK",
    "FRAME_MS",
    "FRAME_READ_LIMIT",
    "OUTPUT_ROLE_NAMES",
    "PROC_ROLE_NAMES",
    "SESSION_ROLE_NAMES",
    "STATUS_COLORS",
    "STRIP_AT_ONCE",
    "TICK_INTERVAL_MS",
    "VISIBLE_MARGIN",
    "HistoryModel",
    "HistoryRole",
    "LogFacts",
    "OutputModel",
    "OutputRole",
    "ProcColumn",
    "ProcModel",
    "ProcRole",
    "ProcTreeModel",
    "SearchModel",
    "SearchRole",
    "SearchSource",
    "SessionModel",
    "SessionRole",
    "TreeRole",
    "status_text",
    "status_tint",
]
