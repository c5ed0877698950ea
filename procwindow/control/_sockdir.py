"""Where control sockets live, and the checks that keep them private."""

from __future__ import annotations

import os
import re
import stat

from ..core import ProcwindowError, private_dir

__all__ = [
    "DEFAULT_SERVER_NAME",
    "SocketDirError",
    "check_name",
    "default_socket_path",
    "lock_path_for",
    "socket_dir",
]

#: The server a client talks to, and a server listens as, when nobody names one.
DEFAULT_SERVER_NAME = "default"

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class SocketDirError(ProcwindowError):
    """The socket directory or path is unsafe or unusable, or a server name is invalid.

    Unsafe means a symlink, another user's, or writable by others; the message
    says which (it carries UnsafePath's when that was the cause).
    """


def check_name(name: str) -> str:
    """A server name becomes a file name: letters, digits, ``.``, ``_``, ``-``."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise SocketDirError(
            f"invalid server name {name!r}: use 1-64 letters, digits, '.', '_' or '-',"
            " starting with a letter or digit"
        )
    return name


def socket_dir(create: bool = True) -> str:
    """``$XDG_RUNTIME_DIR/procwindow``, else ``/tmp/procwindow-<uid>``: ours, mode 0700.

    Refuses (SocketDirError) a directory that is a symlink, belongs to another
    user, or is writable by anyone else: a socket planted there could pass for
    ours. A directory of ours that others may merely read or enter is narrowed
    to 0700 when ``create`` (a server is about to listen there); without
    ``create`` (a client looking for a server) nothing is changed, and a
    missing directory is returned as it is.
    """
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime) and os.path.isdir(runtime):
        path = os.path.join(runtime, "procwindow")
    else:
        path = os.path.join("/tmp", f"procwindow-{os.getuid()}")
    try:
        private_dir(path, what="socket directory", create=create)
    except ProcwindowError as exc:
        raise SocketDirError(str(exc)) from exc
    except OSError as exc:
        raise SocketDirError(f"cannot create socket directory {path}: {exc.strerror}") from exc
    if create:
        _narrow(path)
    return path


def _narrow(path: str) -> None:
    """chmod 0700 through a descriptor, so that a swapped-in symlink is never followed."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise SocketDirError(f"cannot open socket directory {path}: {exc.strerror}") from exc
    try:
        st = os.fstat(fd)
        if st.st_uid != os.getuid():
            raise SocketDirError(
                f"unsafe socket directory {path}: belongs to uid {st.st_uid}; refusing to use it"
            )
        if stat.S_IMODE(st.st_mode) & 0o077:
            os.fchmod(fd, 0o700)
    finally:
        os.close(fd)


def default_socket_path(name: str = DEFAULT_SERVER_NAME, create: bool = True) -> str:
    """The path of server ``name``'s socket."""
    check_name(name)
    return os.path.join(socket_dir(create), f"{name}.sock")


def lock_path_for(socket_path: str) -> str:
    """The lock file a server holds for as long as it owns ``socket_path``.

    ``<name>.sock`` goes with ``<name>.lock``; any other path with ``<path>.lock``.
    """
    base = socket_path[: -len(".sock")] if socket_path.endswith(".sock") else socket_path
    return base + ".lock"
