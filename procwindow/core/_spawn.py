"""Checking a spawn's arguments and starting the child (Popen's vfork fast path)."""

from __future__ import annotations

import errno
import os
import resource
import subprocess
from collections.abc import Mapping

from ._errors import CommandNotFound, CwdMissing, InvalidArgv, NotExecutable, SpawnFailed

__all__ = ["check_cwd", "check_env", "os_error_text", "popen", "resolve"]


def os_error_text(exc: OSError) -> str:
    """``exc.strerror``, with the fd limit named when that is what ran out."""
    text = exc.strerror or str(exc)
    if exc.errno == errno.EMFILE:
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        text += f" (this process is at its limit of {soft} open files: ulimit -n)"
    return text


def check_cwd(cwd: str | os.PathLike[str] | None) -> str | None:
    if cwd is None:
        return None
    path = os.fspath(cwd)
    if "\0" in path:
        raise CwdMissing(path, "contains a NUL byte")
    if not os.path.exists(path):
        raise CwdMissing(path)
    if not os.path.isdir(path):
        raise CwdMissing(path, "not a directory")
    return path


def check_env(env: Mapping[str, str | None] | None) -> dict[str, str | None] | None:
    if env is None:
        return None
    out: dict[str, str | None] = {}
    for key, value in env.items():
        if not isinstance(key, str) or not key or "=" in key or "\0" in key:
            raise InvalidArgv(f"invalid environment variable name: {key!r}")
        if value is not None and not isinstance(value, str):
            raise InvalidArgv(f"environment variable {key} must be a str or None, got {value!r}")
        if value is not None and "\0" in value:
            raise InvalidArgv(f"environment variable {key} contains a NUL byte: {value!r}")
        out[key] = value
    return out


def resolve(cmd: str, env: Mapping[str, str], cwd: str | None) -> str:
    """The file to execute, or CommandNotFound / NotExecutable."""
    if "/" in cmd:
        path = cmd if os.path.isabs(cmd) else os.path.join(cwd or os.getcwd(), cmd)
        if not os.path.exists(path):
            raise CommandNotFound(cmd)
        _check_executable(cmd, path)
        return path
    denied: str | None = None
    for folder in os.get_exec_path(dict(env)):
        path = os.path.join(folder or ".", cmd)
        if os.path.isfile(path):
            if os.access(path, os.X_OK):
                return path
            denied = denied or path
    if denied is not None:
        raise NotExecutable(denied)
    raise CommandNotFound(cmd)


def _check_executable(cmd: str, path: str) -> None:
    if os.path.isdir(path):
        raise NotExecutable(cmd, "is a directory")
    if not os.access(path, os.X_OK):
        raise NotExecutable(cmd)


def popen(
    args: tuple[str, ...],
    exe: str,
    cwd: str | None,
    env: dict[str, str],
    stdin: int | None,
    out_w: int,
    err_w: int,
) -> subprocess.Popen[bytes]:
    try:
        # Popen takes the vfork/posix_spawn fast path (no preexec_fn). process_group=0
        # puts the child in a group of its own before it execs.
        return subprocess.Popen(
            args,
            executable=exe,
            stdin=stdin,
            stdout=out_w,
            stderr=err_w,
            cwd=cwd,
            env=env,
            process_group=0,
            close_fds=True,
        )
    except FileNotFoundError as exc:
        if cwd is not None and exc.filename == cwd:
            raise CwdMissing(cwd) from exc
        raise CommandNotFound(args[0]) from exc
    except PermissionError as exc:
        raise NotExecutable(exe, exc.strerror or "permission denied") from exc
    except IsADirectoryError as exc:
        raise NotExecutable(exe, "is a directory") from exc
    except OSError as exc:
        if exc.errno == errno.E2BIG:
            size = sum(len(a) + 1 for a in args)
            raise InvalidArgv(
                f"argument list too long for the kernel ({size} bytes, E2BIG)"
            ) from exc
        if exc.errno == errno.ENOEXEC:
            raise NotExecutable(exe, "exec format error") from exc
        raise SpawnFailed(exc.errno, f"cannot start {args[0]!r}: {os_error_text(exc)}") from exc
