"""Small helpers for core tests: fake children are real interpreters."""

from __future__ import annotations

import asyncio
import sys
import textwrap
from collections.abc import Callable


def py(code: str) -> list[str]:
    """argv that runs ``code`` (dedented) in a fresh Python."""
    return [sys.executable, "-c", textwrap.dedent(code)]


async def until(cond: Callable[[], object], timeout: float = 10.0, what: str = "") -> None:
    """Poll ``cond`` on the loop until it is true; fail after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not cond():
        if loop.time() > end:
            raise AssertionError(f"timed out waiting for {what or cond}")
        await asyncio.sleep(0.01)


def state_of(pid: int) -> str | None:
    """The process state letter from /proc/<pid>/stat (R, S, T, Z …), None if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    return raw[raw.rfind(b")") + 2 :].split()[0].decode()


def alive(pid: int) -> bool:
    """True if ``pid`` exists and is not a zombie (os.kill(pid, 0) succeeds on zombies)."""
    return state_of(pid) not in (None, "Z", "X")


#: The line a child made by ``ignores_term`` prints once it ignores SIGTERM.
IGNORES_TERM_READY = "ready"


def ignores_term(setup: str = "") -> list[str]:
    """argv of a Python child that ignores SIGTERM, runs ``setup`` (dedented), prints
    ``IGNORES_TERM_READY`` and sleeps a minute: term has to escalate to SIGKILL."""
    return py(
        "import signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        f"{textwrap.dedent(setup)}\n"
        f"print({IGNORES_TERM_READY!r}, flush=True)\n"
        "time.sleep(60)\n"
    )


#: A child that ignores SIGTERM, prints ``IGNORES_TERM_READY`` and sleeps: term escalates.
IGNORES_TERM = ignores_term()
