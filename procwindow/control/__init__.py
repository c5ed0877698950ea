"""Reach a supervisor from other processes: the control socket, its client, workspaces.

No Qt here: ``procwindow serve`` runs all of it headless.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import exports

if TYPE_CHECKING:
    from ._links import parse_target
    from ._protocol import (
        MAX_REQUEST,
        PROTOCOL_VERSION,
        WRITE_CHUNK,
        ProtocolError,
        lines_count,
    )
    from ._sockdir import (
        DEFAULT_SERVER_NAME,
        SocketDirError,
        check_name,
        default_socket_path,
        socket_dir,
    )
    from .client import CannotConnect, Client, ServerError
    from .server import ControlServer
    from .workspace import Workspace, WorkspaceError, load_workspace
else:
    __getattr__, __dir__ = exports(__name__)

__all__ = [
    "DEFAULT_SERVER_NAME",
    "MAX_REQUEST",
    "PROTOCOL_VERSION",
    "WRITE_CHUNK",
    "CannotConnect",
    "Client",
    "ControlServer",
    "ProtocolError",
    "ServerError",
    "SocketDirError",
    "Workspace",
    "WorkspaceError",
    "check_name",
    "default_socket_path",
    "lines_count",
    "load_workspace",
    "parse_target",
    "socket_dir",
]
