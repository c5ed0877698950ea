"""Qt adapters over the supervisor: models, controllers and the window's view-models.

Importing this package registers the QML types below under ``import Procwindow``
(version 1.0). QML can create them (``ProcModel { session: "build" }``) once the
application has called :func:`set_default_supervisor`; Python code passes the
supervisor to the constructor instead. Every model and controller schedules its
work on the asyncio loop, which must be qasync's ``QEventLoop``.
"""

from __future__ import annotations

from ._support import default_supervisor, format_bytes, set_default_supervisor
from .attachform import AttachForm
from .controller import DEFAULT_AGENT, ActiveScope, ProcController, StatsSampler
from .host_tree import HostTreeModel
from .hosts import Host
from .main_viewmodel import MainWindowModel, ScopeSelection
from .models import (
    HistoryModel,
    OutputModel,
    OutputRole,
    ProcColumn,
    ProcModel,
    ProcRole,
    SearchModel,
    SessionModel,
    SessionRole,
    status_text,
)
from .runform import RunForm
from .sparkline import Sparkline
from .table import ProcTableStyle
from .terminal import TerminalModel
from .terminal_view import TerminalView
from .viewmodel import ProcWindowModel

__all__ = [
    "DEFAULT_AGENT",
    "QML_IMPORT_MAJOR_VERSION",
    "QML_IMPORT_MINOR_VERSION",
    "QML_IMPORT_NAME",
    "ActiveScope",
    "AttachForm",
    "HistoryModel",
    "Host",
    "HostTreeModel",
    "MainWindowModel",
    "OutputModel",
    "OutputRole",
    "ProcColumn",
    "ProcController",
    "ProcModel",
    "ProcRole",
    "ProcTableStyle",
    "ProcWindowModel",
    "RunForm",
    "ScopeSelection",
    "SearchModel",
    "SessionModel",
    "SessionRole",
    "Sparkline",
    "StatsSampler",
    "TerminalModel",
    "TerminalView",
    "default_supervisor",
    "format_bytes",
    "set_default_supervisor",
    "status_text",
]

#: The QML module the types are registered in: ``import Procwindow``.
QML_IMPORT_NAME = "Procwindow"
QML_IMPORT_MAJOR_VERSION = 1
QML_IMPORT_MINOR_VERSION = 0
