"""Where control sockets live, and the checks that keep them private."""

from __future__ import annotations

import os
import re
import stat

from ..core import ProcwindowError

__all__ = ["SocketDirError", "check_name", "default_socket_path", "socket_dir"]

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class SocketDirError(ProcwindowError):
    """The socket directory is unsafe (not ours, open to others, a symlink) or unusable."""


def check_name(name: str) -> str:
    """A server name becomes a file name: letters, digits, ``.``, ``_``, ``-``."""
    if not _NAME.fullmatch(name):
        raise SocketDirError(
            f"invalid server name {name!r}: use 1-64 letters, digits, '.', '_' or '-'"
        )
    return name


def socket_dir(create: bool = True) -> str:
    """``$XDG_RUNTIME_DIR/procwindow``, else ``/tmp/procwindow-<uid>``: mode 0700, ours.

    Refuses a directory that is a symlink, belongs to another user, or is open to
    others (after trying to close it, if it is ours).
    """
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        path = os.path.join(runtime, "procwindow")
    else:
        path = os.path.join("/tmp", f"procwindow-{os.getuid()}")
    if create:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            raise SocketDirError(f"cannot create {path}: {exc.strerror}") from exc
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return path
    if not stat.S_ISDIR(st.st_mode):
        raise SocketDirError(f"{path} is not a directory (a symlink?); refusing to use it")
    if st.st_uid != os.getuid():
        raise SocketDirError(f"{path} belongs to uid {st.st_uid}, not to us; refusing to use it")
    if st.st_mode & 0o077:
        os.chmod(path, 0o700)
    return path


def default_socket_path(name: str = "default", create: bool = True) -> str:
    """The path of server ``name``'s socket."""
    return os.path.join(socket_dir(create), f"{check_name(name)}.sock")
