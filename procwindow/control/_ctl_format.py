"""How ``procwindow ctl`` prints the server's replies: text for people, or JSON
with ``--json``; gaps in an output marked on stderr; the tables of ``history``,
``sessions`` and the workspaces' commands.

Apart from the verbs (:mod:`._ctl_verbs`) so that what a verb asks and how its
answer looks can be read apart.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from typing import Any, TextIO

from ..core import (
    CommandState,
    ScopeCounts,
    commands_table,
    escape_controls,
    format_runtime,
    format_size,
)

__all__ = ["history_table", "tree_table"]


def _emit(args: argparse.Namespace, data: Any, text: str) -> int:
    if args.json:
        print(json.dumps(data, ensure_ascii=False))
    else:
        sys.stdout.write(text)
    sys.stdout.flush()
    return 0


@dataclass
class _Gaps:
    """Where lines of ``out`` are missing: a marker line on stderr in their place.

    Each gap is marked on the line after it (``cut``); lines missing after the
    last line printed are only in a reply's ``dropped``, and marked at the end.
    """

    dropped: int = 0
    marked: int = 0

    def mark(self, lines: int, cut_bytes: int) -> None:
        self.marked += lines
        sys.stdout.flush()
        # Without bytes cut, they were not cut but lost (writing the log failed).
        what = f"({format_size(cut_bytes)}) cut" if cut_bytes else "missing"
        print(f"[… {lines:,} lines {what} …]", file=sys.stderr, flush=True)

    def finish(self, args: argparse.Namespace, batch: dict[str, Any]) -> None:
        owed = self.dropped - self.marked
        if owed > 0 and not args.json:
            self.mark(owed, batch.get("cut_bytes", 0))


def _print_lines(args: argparse.Namespace, batch: dict[str, Any], gaps: _Gaps) -> None:
    gaps.dropped += batch.get("dropped", 0)
    if args.json:
        if batch.get("dropped"):
            print(json.dumps({"dropped": batch["dropped"]}))
        for line in batch["lines"]:
            print(json.dumps(line, ensure_ascii=False))
        sys.stdout.flush()
        return
    for line in batch["lines"]:
        if line.get("cut"):
            gaps.mark(line["cut"], batch.get("cut_bytes", 0))
        out: TextIO = sys.stderr if line["stream"] == "stderr" else sys.stdout
        out.write(line["text"] + ("" if line.get("split") else "\n"))
    sys.stdout.flush()
    sys.stderr.flush()


def _describe_exit(proc: int, info: dict[str, Any]) -> str:
    return f"{proc}: {_exit_text(info)}\n"


def _exit_text(info: dict[str, Any]) -> str:
    return f"exited {info['code']} ({info['reason']}) after {info['runtime']:.1f}s"


def history_table(procs: list[dict[str, Any]]) -> str:
    """Procs as ``top`` shows them, with when each started; names and commands escaped."""
    head = ("ID", "SCOPE", "TOOL", "STATUS", "EXIT", "STARTED", "RUNTIME", "COMMAND")
    rows = [head]
    for p in procs:
        info = p["exit"]
        rows.append(
            (
                str(p["id"]),
                escape_controls(f"{p['session']}/{p['agent']}"),
                escape_controls(p["tool"]),
                p["state"],
                f"{info['code']} {info['reason']}" if info is not None else "-",
                time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(p["started_at"])),
                format_runtime(p["runtime"]),
                _run_of(p.get("command_run")) + escape_controls(p["cmd"]),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(head) - 1)]
    return "".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1] + "\n"
        for r in rows
    )


def _run_of(run: dict[str, Any] | None) -> str:
    """``[demo/web, restart of 12] `` before a workspace command's run ("" for none)."""
    if not run:
        return ""
    after = f", restart of {run['restart_of']}" if run.get("restart_of") is not None else ""
    return f"[{escape_controls(run['workspace'])}/{escape_controls(run['command'])}{after}] "


def _states_text(runs: list[dict[str, Any]]) -> str:
    """The commands of running workspaces (as the server lists them), as a table."""
    states = [CommandState.from_json(c) for run in runs for c in run["commands"]]
    return commands_table(states, time.time())


def _count_line(name: str, counts: ScopeCounts) -> str:
    """``name  running/total``; unlike ScopeCounts.label, an empty scope shows ``0/0``."""
    return f"{name}  {counts.running}/{counts.total}\n"


def tree_table(tree: list[dict[str, Any]]) -> str:
    """A proc's tree as ``tree`` lists it, as a table: each command indented
    under its parent; commands escaped."""
    head = ("PID", "PPID", "STATE", "CPU%", "MEM", "THREADS", "COMMAND")
    rows = [head]
    for p in tree:
        rows.append(
            (
                str(p["os_pid"]),
                str(p["ppid"]),
                p["state"],
                f"{p['cpu_percent']:.1f}",
                format_size(p["rss"]),
                str(p["threads"]),
                "  " * p["depth"] + escape_controls(p["command"]),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(head) - 1)]
    right = {1, 3, 4, 5}
    return "".join(
        "  ".join(
            c.rjust(w) if i in right and r is not head else c.ljust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=False))
        )
        + "  "
        + r[-1]
        + "\n"
        for r in rows
    )
