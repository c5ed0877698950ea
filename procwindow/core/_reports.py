"""The supervisor's text reports: ``idx`` (a TSV) and ``top`` (a table for people).

Names and commands come from whoever spawned the proc and may hold anything
but NUL. A report shows them escaped, so that a terminal never receives a raw
control sequence and a TSV reader always sees one row per proc.
"""

from __future__ import annotations

from collections.abc import Iterable

from ._proc import Proc
from ._text import escape_controls, format_runtime

__all__ = ["idx_text", "top_text"]


def idx_text(procs: Iterable[Proc], now_mono: float) -> str:
    """``pid status exit_code tool cmd start_unix runtime_sec``, a header and a row each."""
    rows = ["pid\tstatus\texit_code\ttool\tcmd\tstart_unix\truntime_sec"]
    for p in procs:
        info = p.exit
        status = "exited" if info is not None else "running"
        code = info.code if info is not None else -1
        rows.append(
            f"{p.id}\t{status}\t{code}\t{escape_controls(p.tool)}\t{escape_controls(p.cmd)}"
            f"\t{int(p.started_at)}\t{p.runtime(now_mono):.1f}"
        )
    return "\n".join(rows) + "\n"


def top_text(procs: Iterable[Proc], now_mono: float) -> str:
    """A table of procs for people: id, pid, scope, tool, status, exit, runtime, command."""
    head = ("ID", "PID", "SCOPE", "TOOL", "STATUS", "EXIT", "RUNTIME", "COMMAND")
    rows = [head]
    for p in procs:
        info = p.exit
        rows.append(
            (
                str(p.id),
                str(p.os_pid),
                escape_controls(f"{p.session}/{p.agent}"),
                escape_controls(p.tool),
                p.state.value,
                f"{info.code} {info.reason}" if info is not None else "-",
                format_runtime(p.runtime(now_mono)),
                escape_controls(p.cmd),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(head) - 1)]
    return "".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1] + "\n"
        for r in rows
    )
