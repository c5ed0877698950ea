"""The agent verbs: ``wait_for`` (a line that matches), ``ready`` (a readiness
check passed), ``wait`` (the exit), ``excerpt`` (the head and tail of an output),
``write`` (to a proc's stdin), and a terminal's ``resize`` and ``screen``.

Apart from :mod:`._handlers` as a family: each waits on the supervisor's agent
layer for as long as the client stays.
"""

from __future__ import annotations

from typing import Any

from ..core import StdinClosed, Supervisor
from ._conn import Conn
from ._handlers_base import Handler, runtime
from ._protocol import (
    excerpt_to_json,
    exit_to_json,
    line_to_json,
    proc_to_json,
    screen_to_json,
)


class _AgentVerbs:
    """``wait_for``, ``ready``, ``wait``, ``excerpt``, ``write``, ``resize`` and ``screen``."""

    def __init__(self, sup: Supervisor) -> None:
        self.sup = sup

    def verbs(self) -> dict[str, Handler]:
        return {
            "wait_for": self._wait_for,
            "ready": self._wait_ready,
            "wait": self._wait,
            "excerpt": self._excerpt,
            "write": self._write,
            "resize": self._resize,
            "screen": self._screen,
        }

    async def _wait_for(self, req: dict[str, Any], conn: Conn) -> Any:
        """The first line after ``since`` that matches; waits for it (until the
        proc's output ends, or ``timeout``). The client leaving ends the wait."""
        proc_id = req["proc"]

        async def body() -> dict[str, Any]:
            line = await self.sup.wait_for(
                proc_id,
                req["pattern"],
                regex=req["regex"],
                stream=req["stream"],
                since=req["since"],
                timeout=req["timeout"],
            )
            cursor = line.seq - 1 if line.partial else line.seq
            return {"line": line_to_json(line), "cursor": cursor}

        return await conn.stream(body())

    async def _wait_ready(self, req: dict[str, Any], conn: Conn) -> Any:
        """Wait until the proc's readiness check (``run``'s ``ready``) passes."""

        async def body() -> dict[str, Any]:
            p = await self.sup.wait_ready(req["proc"], req["timeout"])
            return {"ready": True, "proc": proc_to_json(p, runtime(self.sup, p))}

        return await conn.stream(body())

    async def _wait(self, req: dict[str, Any], conn: Conn) -> Any:
        """Wait until the proc exits (or ``timeout``); how it ended."""

        async def body() -> Any:
            return exit_to_json(await self.sup.wait(req["proc"], req["timeout"]))

        return await conn.stream(body())

    async def _excerpt(self, req: dict[str, Any], conn: Conn) -> Any:
        ex = await self.sup.excerpt(
            req["proc"],
            head=req["head"],
            tail=req["tail"],
            max_bytes=req["max_bytes"],
            since=req["since"],
        )
        return excerpt_to_json(ex)

    async def _write(self, req: dict[str, Any], conn: Conn) -> Any:
        """Write ``data`` (UTF-8) to the proc's stdin, then close it with ``close``.
        A write waits while the pipe is full; the client leaving ends it."""
        proc_id, data, close = req["proc"], req["data"], req["close"]
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

    async def _resize(self, req: dict[str, Any], conn: Conn) -> Any:
        """Give a proc's terminal a new size (it is sent SIGWINCH)."""
        await self.sup.resize(req["proc"], req["rows"], req["cols"])
        return {"rows": req["rows"], "cols": req["cols"]}

    async def _screen(self, req: dict[str, Any], conn: Conn) -> Any:
        """A proc's terminal's screen as text."""
        return screen_to_json(await self.sup.screen(req["proc"], styled=req["styled"]))
