"""How the models put values into words and colours: status, signal names, times.

Plain functions over core types; nothing here needs Qt.
"""

from __future__ import annotations

import functools
import signal
import time

from procwindow.core import CommandState, ExitInfo, ExitReason, ProcState

__all__ = [
    "DISCONNECTED",
    "STATUS_COLORS",
    "depends_text",
    "signal_name",
    "status_color",
    "status_text",
    "status_texts",
    "time_text",
]

#: The Status of a proc whose supervisor is reached over a link that is down.
DISCONNECTED = "disconnected"

#: Status colours (any QML ``color`` string), by state or exit reason.
STATUS_COLORS: dict[str, str] = {
    DISCONNECTED: "#616161",
    ProcState.STARTING: "#1565c0",
    ProcState.RUNNING: "#2e7d32",
    ProcState.STOPPING: "#ef6c00",
    ExitReason.EXITED: "#757575",
    ExitReason.FAILED: "#c62828",
    ExitReason.TERMINATED: "#8d6e63",
    ExitReason.KILLED: "#ad1457",
    ExitReason.ESCALATED: "#ad1457",
    ExitReason.LOST: "#6d4c41",
    ExitReason.TIMEOUT: "#ef6c00",
}


def signal_name(number: int) -> str:
    """``SIGTERM`` for 15; ``signal 99`` for a number with no name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def status_text(state: ProcState, exit: ExitInfo | None, stop: int | None = None) -> str:
    """The Status cell: ``running``, ``stopping``, ``exited (0)``, ``failed (SIGSEGV)``…
    (``stop``: the proc's stop signal, None for SIGTERM).

    >>> status_text(ProcState.EXITED, ExitInfo(143, 15, ExitReason.TERMINATED, 1.0))
    'terminated (SIGTERM)'
    """
    if exit is None:
        return state.value
    detail = signal_name(exit.signal) if exit.signal is not None else str(exit.code)
    match exit.reason:
        case ExitReason.ESCALATED:
            return f"killed (ignored {signal_name(stop or signal.SIGTERM)})"
        case ExitReason.LOST:
            return "lost (its supervisor died)"
        case ExitReason.TIMEOUT:
            return f"timed out ({detail})"
        case reason:
            return f"{reason.value} ({detail})"


@functools.cache
def status_texts() -> frozenset[str]:
    """Every text :func:`status_text` can give: the Status column fits the widest.

    Each state, and each exit reason with every exit code (0-255) and every
    signal (1-64, named or not).

    >>> {"running", "killed (ignored SIGTERM)", "failed (255)"} <= status_texts()
    True
    """
    states = {status_text(state, None) for state in ProcState}
    exits = [(code, None) for code in range(256)] + [
        (128 + number, number) for number in range(1, 65)
    ]
    return frozenset(
        states
        | {
            status_text(ProcState.EXITED, ExitInfo(code, number, reason, 0.0))
            for reason in ExitReason
            for code, number in exits
        }
    )


def status_color(state: ProcState, exit: ExitInfo | None) -> str:
    """The colour of the Status cell: by exit reason once exited, else by state."""
    return STATUS_COLORS[exit.reason if exit is not None else state]


def time_text(stamp: float, millis: bool = False) -> str:
    """A wall-clock time as local ``HH:MM:SS`` (``HH:MM:SS.mmm`` with ``millis``)."""
    text = time.strftime("%H:%M:%S", time.localtime(stamp))
    return f"{text}.{int(stamp * 1000) % 1000:03d}" if millis else text


def depends_text(state: CommandState) -> str:
    """``api depends on db (ready) · restarted 2 times``: what a workspace
    command depends on, and how often it was restarted."""
    parts = []
    if state.depends_on:
        parts.append(f"{state.name} depends on " + ", ".join(map(str, state.depends_on)))
    else:
        parts.append(f"{state.name} (workspace {state.workspace})")
    if state.restarts:
        parts.append(f"restarted {state.restarts} time{'s' if state.restarts != 1 else ''}")
    return "  ·  ".join(parts)
