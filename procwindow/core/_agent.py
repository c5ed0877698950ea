"""The agent layer: running readiness checks, and excerpts sized for a
context window. Built on the supervisor's public reads and a child's wake-ups
(waiting for a line or for readiness: ``_waiting``).

What a check is (``Ready``) is data of :mod:`._ready`, and line matching is
:mod:`._match`'s; both are re-exported here for older imports."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import ssl as ssl_module
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple, Protocol

from ._match import LineMatch, line_matcher
from ._ready import HttpTarget, Ready, check_timeout, http_target
from ._reaper import own_child
from ._spawn import MARKER_KEY
from ._types import ExitInfo, Line, ReadBatch, Stream

if TYPE_CHECKING:
    from ._child import Child
    from ._proc import Proc

__all__ = [
    "Excerpt",
    "LineMatch",
    "Procs",
    "Ready",
    "check_timeout",
    "excerpt",
    "line_matcher",
    "probe",
    "run_check",
    "run_command",
]

log = logging.getLogger("procwindow")

#: Lines read per step while scanning for a match or counting bytes.
SCAN_CHUNK = 20_000
#: The longest a readiness command may run per attempt (seconds).
CHECK_COMMAND_TIMEOUT = 10.0


class Read(Protocol):
    """``Supervisor.read``."""

    def __call__(
        self,
        proc_id: int,
        since: int = 0,
        *,
        limit: int | None = None,
        stream: Stream | str | None = None,
        partial: bool = False,
    ) -> ReadBatch: ...


class Procs(NamedTuple):
    """What the agent layer needs of a supervisor: its procs, live or past."""

    #: The live child with this id, or None (a past id, or not an id at all).
    live: Callable[[int], Child | None]
    #: The proc with this id, live or past (``Supervisor.get``).
    get: Callable[[int], Proc]
    #: Its lines, from the ring or the logs (``Supervisor.read``).
    read: Read


async def run_check(ready: Ready, child: Child) -> bool:
    """Poll a port or command check until it passes (True) or the proc exits
    (False). Line checks are ``wait_for``'s job."""
    while child.proc.exit is None:
        if await probe(ready, check_context(child)):
            return True
        exit_fut = asyncio.shield(child.exit_fut)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(exit_fut, ready.interval)
    return False


class CheckContext(NamedTuple):
    """Where a proc's check command runs: in the proc's directory and environment
    (its ``env`` overrides: a check may need ``PGPASSWORD`` too), carrying the
    proc's marker (whatever it leaves running is a member of the proc's tree,
    stopped with it, never an orphan)."""

    marker: bytes = b""
    env: dict[str, str | None] | None = None
    cwd: str | None = None


#: The context of a check of no proc: the supervisor's directory and environment.
NO_CONTEXT = CheckContext()


def check_context(child: Child) -> CheckContext:
    """The :class:`CheckContext` of ``child``'s checks."""
    return CheckContext(child.marker, child.proc.env, child.proc.cwd)


async def probe(ready: Ready, context: CheckContext = NO_CONTEXT) -> bool:
    """One look at a port or command check: True if it passes now. A command
    runs in ``context`` (its own ``cwd`` first)."""
    if ready.port is not None:
        return await _port_open(ready.host, ready.port, max(ready.interval, 1.0))
    if ready.http is not None:
        return await _http_ok(http_target(ready.http), max(ready.interval, 1.0), ready.status)
    assert ready.command is not None
    return await run_command(ready.command, ready.cwd or context.cwd, context)


async def _port_open(host: str, port: int, timeout: float) -> bool:
    try:
        _reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    except (OSError, TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


async def _http_ok(target: HttpTarget, timeout: float, want: int | None = None) -> bool:
    """A GET of ``target`` answers within ``timeout`` with the status ``want``, or
    (None) with one from 200 to 399."""
    writer = None
    try:
        async with asyncio.timeout(timeout):
            ssl = ssl_module.create_default_context() if target.https else None
            reader, writer = await asyncio.open_connection(target.host, target.port, ssl=ssl)
            host = target.host if ":" not in target.host else f"[{target.host}]"
            writer.write(
                f"GET {target.path} HTTP/1.1\r\nHost: {host}:{target.port}\r\n"
                "User-Agent: procwindow\r\nConnection: close\r\n\r\n".encode()
            )
            status = (await reader.readline()).split(b" ", 2)
    except (OSError, TimeoutError, ValueError):
        return False
    finally:
        if writer is not None:
            writer.close()
            with contextlib.suppress(OSError, ssl_module.SSLError):
                await writer.wait_closed()
    if len(status) < 2 or not status[0].startswith(b"HTTP/"):
        return False
    if want is not None:
        return status[1] == b"%d" % want
    return len(status[1]) == 3 and status[1][:1] in (b"2", b"3")


def _start_check(
    argv: Sequence[str], cwd: str | None, context: CheckContext
) -> subprocess.Popen[bytes] | None:
    """Start a check command (Popen's vfork fast path: a moment); None if it cannot."""
    env: dict[bytes, bytes] | None = None
    if context.marker or context.env:
        env = dict(os.environb)
        for name, value in (context.env or {}).items():
            if value is None:
                env.pop(os.fsencode(name), None)
            else:
                env[os.fsencode(name)] = os.fsencode(value)
        if context.marker:
            env[MARKER_KEY] = context.marker
    try:
        check = subprocess.Popen(
            list(argv),
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            process_group=0,
            close_fds=True,
        )
    except OSError as exc:
        log.warning("readiness check %s cannot start: %s", argv[0], exc.strerror or exc)
        return None
    own_child(check.pid, _ignore)
    return check


def _ignore() -> None:
    """The orphan reaper's owner of a check command: its status is ours to take."""


async def run_command(
    argv: Sequence[str],
    cwd: str | None = None,
    context: CheckContext = NO_CONTEXT,
    timeout: float = CHECK_COMMAND_TIMEOUT,
    what: str = "readiness check",
) -> bool:
    """Run a check (or stop) command in a group of its own; True if it exits 0
    within ``timeout``. Its exit is seen through a pidfd (no thread, no child
    watcher), and it is killed with its group when it overruns or the check is
    cancelled."""
    loop = asyncio.get_running_loop()
    check = _start_check(argv, cwd, context)
    if check is None:
        return False
    pidfd: int | None = None
    try:
        pidfd = os.pidfd_open(check.pid)
        exited: asyncio.Future[None] = loop.create_future()

        def on_exit() -> None:
            if not exited.done():
                exited.set_result(None)

        loop.add_reader(pidfd, on_exit)
        try:
            await asyncio.wait_for(exited, timeout)
        except TimeoutError:
            return False
        return check.wait() == 0
    except OSError as exc:
        log.warning("%s %s cannot be watched: %s", what, argv[0], exc.strerror or exc)
        return False
    finally:
        if pidfd is not None:
            loop.remove_reader(pidfd)
            os.close(pidfd)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(check.pid, signal.SIGKILL)
        check.wait()
        own_child(check.pid, None)


@dataclass(frozen=True, slots=True)
class Excerpt:
    """Output sized for a context window (``Supervisor.excerpt``).

    ``text``: the first and last lines after the cursor, with
    ``… K lines (J bytes) omitted …`` between them when some are left out.
    ``cursor``: pass it as ``since`` next time. ``lines``: how many lines
    came after ``since`` (shown or not); ``omitted_lines``/``omitted_bytes``:
    those left out of the text (``dropped`` of them are gone for good, cut by
    the disk cap). ``exit`` is set once the proc has exited; ``eof`` once all of
    its output has been seen. A prompt or progress bar still unterminated ends
    the text (``partial``).
    """

    text: str
    cursor: int
    lines: int
    omitted_lines: int
    omitted_bytes: int
    dropped: int
    eof: bool
    exit: ExitInfo | None
    partial: str | None = None
    shown: list[Line] = field(default_factory=list, repr=False)


def _size(line: Line) -> int:
    return len(line.text.encode("utf-8", "replace")) + 1


def _clip(text: str, limit: int) -> str:
    """A line of at most ``limit`` bytes of UTF-8 (cut lines say how much was cut)."""
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return text
    keep = max(0, limit - 24)
    return data[:keep].decode("utf-8", "ignore") + f" …[+{len(data) - keep} bytes]"


def omitted_marker(lines: int, nbytes: int) -> str:
    unit = "byte" if nbytes == 1 else "bytes"
    return f"… {lines} line{'s' if lines != 1 else ''} ({nbytes} {unit}) omitted …"


def build_excerpt(
    head: list[Line],
    tail: list[Line],
    *,
    total: int,
    total_bytes: int,
    dropped: int,
    max_bytes: int,
    cursor: int,
    eof: bool,
    exit_: ExitInfo | None,
    partial: Line | None,
) -> Excerpt:
    """Fit ``head`` and ``tail`` (disjoint, in order) into ``max_bytes`` of text.

    Lines are dropped from the end of the head and the start of the tail (the
    newest kept longest) until the text fits; a line longer than a quarter of
    the budget is clipped.
    """
    budget = max(256, max_bytes) - 64  # room for the marker line
    line_cap = max(64, budget // 4)
    head = list(head)
    tail = list(tail)

    def cost(lines: list[Line]) -> int:
        return sum(min(_size(x), line_cap + 32) for x in lines)

    partial_text = _clip(partial.text, line_cap) if partial is not None else None
    room = budget - (len(partial_text.encode()) + 1 if partial_text is not None else 0)
    while head or tail:
        if cost(head) + cost(tail) <= room:
            break
        # Take from the larger side; the last lines matter most to an agent.
        if head and (cost(head) >= cost(tail) or not tail):
            head.pop()
        else:
            tail.pop(0)
    shown_lines = head + tail
    left = total - len(shown_lines)
    left_bytes = max(0, total_bytes - sum(_size(x) for x in shown_lines))
    parts = [_clip(x.text, line_cap) for x in head]
    if left > 0:
        parts.append(omitted_marker(left, left_bytes))
    parts.extend(_clip(x.text, line_cap) for x in tail)
    if partial_text is not None:
        parts.append(partial_text)
    text = "".join(f"{p}\n" for p in parts)
    return Excerpt(
        text=text,
        cursor=cursor,
        lines=total,
        omitted_lines=left,
        omitted_bytes=left_bytes if left > 0 else 0,
        dropped=dropped,
        eof=eof,
        exit=exit_,
        partial=partial.text if partial is not None else None,
        shown=shown_lines,
    )


async def count_bytes(
    read: Callable[[int, int], ReadBatch], since: int, upto: int
) -> tuple[int, int]:
    """Bytes and lines of the lines with ``since < seq <= upto`` (as ``read``
    gives them, each counted with its newline), read in chunks that return to
    the event loop between them."""
    nbytes = 0
    count = 0
    cursor = since
    while cursor < upto:
        batch = read(cursor, SCAN_CHUNK)
        for line in batch.lines:
            if line.seq > upto:
                return nbytes, count
            nbytes += _size(line)
            count += 1
        if batch.cursor <= cursor:
            break
        cursor = batch.cursor
        await asyncio.sleep(0)
    return nbytes, count


async def excerpt(
    procs: Procs, proc_id: int, *, head: int, tail: int, max_bytes: int, since: int
) -> Excerpt:
    """``Supervisor.excerpt``: the output after ``since``, its first ``head`` and
    last ``tail`` lines, in at most ``max_bytes`` of text."""
    for name, value in (("head", head), ("tail", tail), ("max_bytes", max_bytes)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a non-negative int, got {value!r}")
    child = procs.live(proc_id)
    p = procs.get(proc_id)
    first = procs.read(proc_id, since, limit=head + tail + 1, partial=True)
    partial = next((x for x in reversed(first.lines) if x.partial), None)
    complete = [x for x in first.lines if not x.partial]
    last_seq = child.store.last_seq if child is not None else max(p.last_seq, first.cursor)
    if len(complete) <= head + tail:
        # All of them fit the counts; the bytes may not: split them, so that
        # trimming to max_bytes keeps the last lines as it keeps the first.
        split = len(complete) - min(tail, len(complete) - min(head, len(complete) // 2))
        head_lines, tail_lines = complete[:split], complete[split:]
        cursor, total = first.cursor, len(complete)
        total_bytes = sum(_size(x) for x in complete)
        dropped, eof = first.dropped, first.eof
    else:
        head_lines = complete[:head]
        start = max(head_lines[-1].seq if head_lines else since, last_seq - tail)
        end = procs.read(proc_id, start, partial=True)
        tail_lines = [x for x in end.lines if not x.partial][-tail:] if tail else []
        partial = next((x for x in reversed(end.lines) if x.partial), None)
        cursor, eof = end.cursor, end.eof
        dropped = first.dropped + end.dropped
        total = cursor - since - dropped
        if since == 0 and not p.running:
            total_bytes = max(0, p.output_bytes - p.cut_bytes)
        else:
            total_bytes, total = await count_bytes(
                lambda after, limit: procs.read(proc_id, after, limit=limit), since, cursor
            )
    return build_excerpt(
        head_lines,
        tail_lines,
        total=total,
        total_bytes=total_bytes,
        dropped=dropped,
        max_bytes=max_bytes,
        cursor=cursor,
        eof=eof,
        exit_=p.exit,
        partial=partial,
    )
