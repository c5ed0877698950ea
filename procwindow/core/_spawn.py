"""Spawning: checking the arguments, and starting a watched child (Popen's vfork
fast path) that leaves nothing behind when any step fails."""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # see ignored_signals
import contextlib
import errno
import functools
import os
import resource
import signal
import stat
import subprocess
from collections.abc import Callable, Iterable, Mapping
from typing import Any, NamedTuple

from . import _linux, _pty
from ._errors import (
    CommandNotFound,
    CwdMissing,
    InvalidArgv,
    NotExecutable,
    ProcwindowError,
    SpawnFailed,
)

__all__ = [
    "MARKER_KEY",
    "Started",
    "Wiring",
    "check_cwd",
    "child_env",
    "exec_path",
    "os_error_text",
    "popen",
    "resolve",
    "start",
]


#: The marker's name in a child's environment (``_linux.MARKER_VAR``).
MARKER_KEY = _linux.MARKER_VAR.encode()


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


#: The environment as it was when ``_inherited`` last copied it (bytes, as the
#: kernel has it), and that copy.
_environ_seen: dict[bytes, bytes] = {}


def _inherited() -> dict[bytes, bytes]:
    """What a child inherits: ``os.environb``, as bytes. Copying it through its
    mapping costs ~25 µs a spawn (a Python call per key and value), so the
    copy is kept and made again only when the environment changed: the
    mapping keeps its bytes in a dict, ``_data`` (shared with ``os.environ``),
    which compares with the copy in C in about a microsecond. Without that
    dict (another Python), every spawn copies."""
    global _environ_seen
    data = getattr(os.environb, "_data", None)
    if not isinstance(data, dict):
        return dict(os.environb)
    if data != _environ_seen:
        _environ_seen = dict(data)
    return _environ_seen


def child_env(overrides: Mapping[str, str | None] | None) -> dict[bytes, bytes]:
    """The inherited environment with ``overrides`` applied (None removes a
    variable), as bytes. The starter adds the marker (``MARKER_KEY``) once the
    proc has its id."""
    env = dict(_inherited())
    for key, value in (overrides or {}).items():
        if value is None:
            env.pop(os.fsencode(key), None)
        else:
            env[os.fsencode(key)] = os.fsencode(value)
    return env


def exec_path(env: Mapping[bytes, bytes]) -> list[str]:
    """The folders a command name is looked for in, from the child's PATH."""
    path = env.get(b"PATH")
    return (os.fsdecode(path) if path is not None else os.defpath).split(os.pathsep)


def resolve(cmd: str, search: Iterable[str], cwd: str | None) -> str:
    """The file to execute, looked for in the folders ``search`` (as
    ``exec_path`` gives them) unless it names a path; or CommandNotFound /
    NotExecutable."""
    if "/" in cmd:
        path = cmd if os.path.isabs(cmd) else os.path.join(cwd or os.getcwd(), cmd)
        try:
            st = os.stat(path)
        except (OSError, ValueError):  # as os.path.exists: any failure is "not there"
            raise CommandNotFound(cmd) from None
        _check_executable(cmd, path, stat.S_ISDIR(st.st_mode))
        return path
    denied: str | None = None
    for folder in search:
        path = os.path.join(folder or ".", cmd)
        if os.path.isfile(path):
            if os.access(path, os.X_OK):
                return path
            denied = denied or path
    if denied is not None:
        raise NotExecutable(denied)
    raise CommandNotFound(cmd)


def _check_executable(cmd: str, path: str, is_dir: bool) -> None:
    if is_dir:
        raise NotExecutable(cmd, "is a directory")
    if not os.access(path, os.X_OK):
        raise NotExecutable(cmd)


#: Signals a child must not inherit as ignored: those a shell ignores for a
#: background job (``cmd &`` in a script: SIGINT, SIGQUIT), ``nohup`` (SIGHUP),
#: and the others a program expects at their default (SIGCHLD ignored would break
#: its ``wait``). An exec keeps an ignored signal ignored; a handled one is reset.
_RESET_IF_IGNORED = tuple(
    signal.Signals[name]
    for name in (
        "SIGHUP",
        "SIGINT",
        "SIGQUIT",
        "SIGTERM",
        "SIGCHLD",
        "SIGUSR1",
        "SIGUSR2",
        "SIGALRM",
        "SIGTSTP",
        "SIGTTIN",
        "SIGTTOU",
    )
)


def ignored_signals() -> tuple[signal.Signals, ...]:
    """The signals of ``_RESET_IF_IGNORED`` this process ignores now.

    Asked of ``_signal``, the C module under ``signal``: ``signal.getsignal``
    turns each answer into an enum, which for a Python handler fails through a
    repr of it (~15 µs a spawn, against ~1 µs).
    """
    return tuple(sig for sig in _RESET_IF_IGNORED if _signal.getsignal(sig) == signal.SIG_IGN)


def _defaults(signals: tuple[signal.Signals, ...]) -> None:
    """In the child, before it execs: these signals back to their default action."""
    for sig in signals:
        signal.signal(sig, signal.SIG_DFL)


def _on_terminal(signals: tuple[signal.Signals, ...]) -> None:
    """In a PTY child, before it execs: its terminal, then ``_defaults``."""
    _pty.take_terminal()
    _defaults(signals)


def popen(
    args: tuple[str, ...],
    exe: str,
    cwd: str | None,
    env: dict[bytes, bytes],
    stdin: int | None,
    out_w: int,
    err_w: int,
    *,
    terminal: bool = False,
) -> subprocess.Popen[bytes]:
    """Start ``args`` with these fds (``terminal``: they are a PTY's slave,
    which becomes its controlling terminal in a session of its own)."""
    # A host that ignores SIGINT (started in the background by a script, or under
    # nohup) must not pass that on: interrupt() would do nothing. Resetting takes
    # a preexec_fn, so such a host forks; others keep Popen's vfork fast path.
    ignored = ignored_signals()
    if terminal:
        # setsid (start_new_session) makes a group of its own too: pgid = pid.
        group: dict[str, Any] = {"start_new_session": True}
        prepare: Callable[[], None] | None = functools.partial(_on_terminal, ignored)
    else:
        # process_group=0 puts the child in a group of its own before it execs.
        group = {"process_group": 0}
        prepare = functools.partial(_defaults, ignored) if ignored else None
    try:
        return subprocess.Popen(
            args,
            executable=exe,
            stdin=stdin,
            stdout=out_w,
            stderr=err_w,
            cwd=cwd,
            env=env,
            close_fds=True,
            preexec_fn=prepare,
            **group,
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


class Started(NamedTuple):
    """A child that runs, watched: its pidfd and the read ends of its pipes."""

    popen: subprocess.Popen[bytes]
    pidfd: int
    stdout: int  # or a PTY's master
    stderr: int | None  # None: stderr goes to the stdout pipe (merge_stderr, a PTY)
    stdin: int | None  # the write end of its stdin pipe (a PTY's master, dup'd), if any
    start: int  # its start time in clock ticks (with the pid, names it for good)


class Wiring(NamedTuple):
    """How a child's stdin, stdout and stderr are connected.

    ``merge_stderr``: one pipe for stdout and stderr (their order is exact).
    ``stdin``: a pipe to its stdin (otherwise it reads /dev/null).
    ``pty``: a pseudo-terminal of (rows, columns) for all three instead of
    pipes, its controlling terminal: one stream, and its input always open.
    """

    merge_stderr: bool = False
    stdin: bool = False
    pty: tuple[int, int] | None = None


#: Pipes for stdout and stderr, /dev/null for stdin.
PIPES = Wiring()


class _Ends(NamedTuple):
    """The fds a start hands out: ours (read ends, stdin's write end), the child's."""

    out_r: int
    err_r: int | None
    in_w: int | None
    in_r: int
    out_w: int
    err_w: int


def _open_ends(
    wiring: Wiring, devnull: int, ours: contextlib.ExitStack, theirs: contextlib.ExitStack
) -> _Ends:
    """Open the pipes (or the PTY) of ``wiring``; each fd is closed by the stack
    of its side (``ours`` on failure, ``theirs`` once the child has them)."""
    if wiring.pty is not None:
        master, slave = _pty.open_pty(*wiring.pty)
        ours.callback(os.close, master)
        theirs.callback(os.close, slave)
        dup = os.dup(master)  # closing stdin must not close what output is read from
        ours.callback(os.close, dup)
        return _Ends(master, None, dup, slave, slave, slave)
    out_r, out_w = os.pipe2(os.O_CLOEXEC)
    ours.callback(os.close, out_r)
    theirs.callback(os.close, out_w)
    err_r: int | None = None
    err_w = out_w
    if not wiring.merge_stderr:
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        ours.callback(os.close, err_r)
        theirs.callback(os.close, err_w)
    in_w: int | None = None
    in_r = devnull
    if wiring.stdin:
        in_r, in_w = os.pipe2(os.O_CLOEXEC)
        ours.callback(os.close, in_w)
        theirs.callback(os.close, in_r)
    return _Ends(out_r, err_r, in_w, in_r, out_w, err_w)


def start(
    args: tuple[str, ...],
    exe: str,
    cwd: str | None,
    env: dict[bytes, bytes],
    devnull: int,
    wiring: Wiring = PIPES,
) -> Started:
    """Start a child in a process group of its own, wired as ``wiring`` says,
    with a pidfd. The write end of its stdin, if any, is non-blocking.

    Any failure unwinds everything acquired so far, in reverse — the child too
    (killed and reaped): nothing is left behind. Raises the errors of ``popen``,
    or SpawnFailed when pipes, a terminal or the pidfd cannot be had (EMFILE
    at the fd limit).
    """
    with contextlib.ExitStack() as undo:
        try:
            # The child's ends are closed here whatever happens.
            with contextlib.ExitStack() as childs_ends:
                ends = _open_ends(wiring, devnull, undo, childs_ends)
                child = popen(
                    args,
                    exe,
                    cwd,
                    env,
                    ends.in_r,
                    ends.out_w,
                    ends.err_w,
                    terminal=wiring.pty is not None,
                )
        except ProcwindowError:
            raise
        except OSError as exc:  # EMFILE, ENFILE, no terminal left (ENOSPC from /dev/ptmx)
            what = "a terminal" if wiring.pty is not None else "pipes"
            raise SpawnFailed(
                exc.errno, f"cannot create {what} for {args[0]!r}: {os_error_text(exc)}"
            ) from exc
        undo.callback(_kill_unwatched, child)
        try:
            pidfd = os.pidfd_open(child.pid)
            undo.callback(os.close, pidfd)
            fields = _linux.stat_fields(child.pid)
        except OSError as exc:
            # We cannot watch it: do not let it run unsupervised.
            raise SpawnFailed(exc.errno, f"cannot watch {args[0]!r}: {os_error_text(exc)}") from exc
        if fields is None:
            raise SpawnFailed(None, f"{args[0]!r} vanished as it started")
        if ends.in_w is not None:
            os.set_blocking(ends.in_w, False)
        undo.pop_all()
    return Started(child, pidfd, ends.out_r, ends.err_r, ends.in_w, fields.start)


def _kill_unwatched(child: subprocess.Popen[bytes]) -> None:
    """A child we could not start watching: it must not run unsupervised."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, signal.SIGKILL)
    child.wait()
