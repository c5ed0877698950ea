"""The agent verbs: ``wait_for`` (a line that matches), ``ready`` (a readiness
check passed), ``excerpt`` (the head and tail of an output) and ``write`` (to a
proc's stdin).

Apart from :mod:`._handlers` as a family: each waits on the supervisor's agent
layer for as long as the client stays.
"""

from __future__ import annotations

from typing import Any

from ..core import StdinClosed
from ._conn import Conn
from ._handlers_base import _bool, _int, _opt_seconds, _str, _stream, _Verbs
from ._protocol import ProtocolError, Timeout, excerpt_to_json, line_to_json, proc_to_json

#: Bounds of an ``excerpt``: its text (bytes) and its head and tail lines together.
MIN_EXCERPT_BYTES = 256
MAX_EXCERPT_BYTES = 1024 * 1024
MAX_EXCERPT_LINES = 10_000


class _AgentVerbs(_Verbs):
    """``wait_for``, ``ready``, ``excerpt`` and ``write``."""

    async def _wait_for(self, req: dict[str, Any], conn: Conn) -> Any:
        """The first line after ``since`` that matches; waits for it (until the
        proc's output ends, or ``timeout``). The client leaving ends the wait."""
        proc_id = _int(req, "proc", minimum=1)
        pattern = _str(req, "pattern")
        regex = _bool(req, "regex", default=True)
        stream = _stream(req)
        since = _int(req, "since", 0, minimum=0)
        timeout = _opt_seconds(req, "timeout")

        async def body() -> dict[str, Any]:
            try:
                line = await self.sup.wait_for(
                    proc_id, pattern, regex=regex, stream=stream, since=since, timeout=timeout
                )
            except TimeoutError:
                if timeout is None:
                    raise
                raise Timeout(
                    f"proc {proc_id}: no line matched {pattern!r} within {timeout:g} s", timeout
                ) from None
            cursor = line.seq - 1 if line.partial else line.seq
            return {"line": line_to_json(line), "cursor": cursor}

        return await conn.stream(body())

    async def _wait_ready(self, req: dict[str, Any], conn: Conn) -> Any:
        """Wait until the proc's readiness check (``run``'s ``ready``) passes."""
        proc_id = _int(req, "proc", minimum=1)
        timeout = _opt_seconds(req, "timeout")

        async def body() -> dict[str, Any]:
            try:
                p = await self.sup.wait_ready(proc_id, timeout)
            except TimeoutError:
                if timeout is None:
                    raise
                raise Timeout(
                    f"proc {proc_id} was not ready within {timeout:g} s", timeout
                ) from None
            return {"ready": True, "proc": proc_to_json(p, self._runtime(p))}

        return await conn.stream(body())

    async def _excerpt(self, req: dict[str, Any], conn: Conn) -> Any:
        proc_id = _int(req, "proc", minimum=1)
        head = _int(req, "head", 20, minimum=0)
        tail = _int(req, "tail", 40, minimum=0)
        max_bytes = _int(req, "max_bytes", 8000, minimum=MIN_EXCERPT_BYTES)
        since = _int(req, "since", 0, minimum=0)
        if max_bytes > MAX_EXCERPT_BYTES:
            raise ProtocolError(
                "bad-field", f"excerpt: 'max_bytes' must be at most {MAX_EXCERPT_BYTES}"
            )
        if head + tail > MAX_EXCERPT_LINES:
            raise ProtocolError(
                "bad-field",
                f"excerpt: 'head' and 'tail' together must be at most {MAX_EXCERPT_LINES}",
            )
        ex = await self.sup.excerpt(proc_id, head=head, tail=tail, max_bytes=max_bytes, since=since)
        return excerpt_to_json(ex)

    async def _write(self, req: dict[str, Any], conn: Conn) -> Any:
        """Write ``data`` (UTF-8) to the proc's stdin, then close it with ``close``.
        A write waits while the pipe is full; the client leaving ends it."""
        proc_id = _int(req, "proc", minimum=1)
        data = _str(req, "data", "")
        close = _bool(req, "close")
        p = self.sup.get(proc_id)
        if not p.live:
            raise StdinClosed(proc_id, "its stdin is not held here (it is not in the live view)")
        if not p.options.stdin:
            raise StdinClosed(proc_id, 'it has no stdin (run it with "stdin": true)')

        async def body() -> dict[str, Any]:
            result: dict[str, Any] = {"written": await self.sup.write(proc_id, data) if data else 0}
            if close:
                result["closed"] = await self.sup.close_stdin(proc_id)
            return result

        return await conn.stream(body())
