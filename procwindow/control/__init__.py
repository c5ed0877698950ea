"""Reach a supervisor from other processes: the control socket, its client, workspaces.

No Qt here: ``procwindow serve`` runs all of it headless.
"""

from __future__ import annotations

from ._protocol import MAX_REQUEST, PROTOCOL_VERSION, ProtocolError
from ._sockdir import DEFAULT_SERVER_NAME, SocketDirError, default_socket_path, socket_dir
from .client import CannotConnect, Client, ServerError
from .server import ControlServer
from .workspace import Workspace, WorkspaceError, load_workspace

__all__ = [
    "DEFAULT_SERVER_NAME",
    "MAX_REQUEST",
    "PROTOCOL_VERSION",
    "CannotConnect",
    "Client",
    "ControlServer",
    "ProtocolError",
    "ServerError",
    "SocketDirError",
    "Workspace",
    "WorkspaceError",
    "default_socket_path",
    "load_workspace",
    "socket_dir",
]
