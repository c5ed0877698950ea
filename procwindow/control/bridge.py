"""``procwindow ctl bridge [NAME]``: the control socket on stdin and stdout.

What ``ssh host procwindow ctl bridge NAME`` runs on the far side of an
attach: it connects to the server's socket and pumps bytes both ways until
either side closes: stdin to the socket (its end becomes a half-close, so the
server finishes what it was asked), the socket to stdout (its end ends the
bridge). It reads no message: the protocol is the client's and the server's.
A failure is one line on stderr; no server to connect to exits 3 (as
``procwindow ctl``).
"""

from __future__ import annotations

import os
import socket
import sys
import threading

__all__ = ["EXIT_NO_SERVER", "main", "pump"]

#: Exit status when nothing listens at the socket (``ctl``'s EXIT_CONNECT).
EXIT_NO_SERVER = 3
#: Exit status of a bad server name (``ctl``'s EXIT_USAGE).
_EXIT_USAGE = 2
#: Bytes moved per read.
_CHUNK = 256 * 1024


def main(name: str | None, socket_path: str | None = None) -> int:
    """``ctl bridge [NAME]`` (``--socket PATH``, else ``$PROCWINDOW_SOCKET``, else
    the server ``NAME``'s socket here): pump until either side closes. It imports
    only what it needs: three of these start on the host for each attach."""
    from ..core import ProcwindowError
    from ._sockdir import DEFAULT_SERVER_NAME, SocketDirError, check_name, default_socket_path

    path = socket_path or os.environ.get("PROCWINDOW_SOCKET")
    if not path:
        name = name or DEFAULT_SERVER_NAME
        try:
            check_name(name)
            path = default_socket_path(name, create=False)
        except SocketDirError as exc:
            print(f"procwindow ctl: --name: {exc}", file=sys.stderr)
            return _EXIT_USAGE
        except ProcwindowError as exc:
            print(f"procwindow ctl: {exc}", file=sys.stderr)
            return EXIT_NO_SERVER
    return pump(path)


def pump(path: str, stdin: int = 0, stdout: int = 1) -> int:
    """Connect to ``path`` and pump until either side closes; the exit status."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except (OSError, ValueError) as exc:
        sock.close()
        why = getattr(exc, "strerror", None) or str(exc)
        print(
            f"procwindow ctl bridge: no procwindow server at {path}: {why}"
            " (is 'procwindow serve' or the window running there?)",
            file=sys.stderr,
            flush=True,
        )
        return EXIT_NO_SERVER
    # The other direction gets a thread: each side blocks on its own reads,
    # and a full pipe on one never stalls the other.
    upstream = threading.Thread(target=_to_socket, args=(stdin, sock), daemon=True)
    upstream.start()
    try:
        while data := sock.recv(_CHUNK):
            _write_all(stdout, data)
    except OSError:
        pass  # the server or our reader (ssh) went: either ends the bridge
    finally:
        sock.close()
    return 0


def _to_socket(stdin: int, sock: socket.socket) -> None:
    try:
        while data := os.read(stdin, _CHUNK):
            sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        # The server closed the connection (or our own side did, on the way
        # out): recv() in the main thread sees it and ends the bridge.
        pass


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
