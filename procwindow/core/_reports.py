"""The supervisor's reports: ``idx`` (a TSV), ``top`` (a table for people) and
``stats`` (resource use of a proc's tree).

Names and commands come from whoever spawned the proc and may hold anything
but NUL. A report shows them escaped, so that a terminal never receives a raw
control sequence and a TSV reader always sees one row per proc.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable

import psutil

from ._child import Child
from ._proc import Proc
from ._text import escape_controls, format_runtime
from ._types import ListeningPort, ProcStats

__all__ = [
    "STATS_MIN_INTERVAL",
    "STATS_TREE_TTL",
    "PerProcess",
    "idx_text",
    "top_text",
    "tree_ports",
    "tree_sample",
    "tree_stats",
]

#: How old the scan of /proc that ``stats`` finds a tree's members in may be (seconds).
STATS_TREE_TTL = 3.0
#: Calls of ``stats`` for one proc closer together than this (seconds) share one
#: sample: CPU % measured over a few milliseconds is noise (0 %, then 337 %), and a
#: table and an output pane that sample the same proc must read one number.
STATS_MIN_INTERVAL = 0.5


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


#: What one sample says of each process it looked at: {pid: (CPU %, RSS, threads)}.
PerProcess = dict[int, tuple[float, int, int]]


def tree_stats(child: Child, descendants: Iterable[int]) -> ProcStats:
    """CPU %, RSS, I/O bytes and threads of the child (while it runs) and its
    live ``descendants``. CPU % counts since the previous sample of the same
    processes: their psutil handles are kept in ``child.ps_cache``. A call within
    :data:`STATS_MIN_INTERVAL` of the last sample gets that sample again (CPU
    time is real time: no clock seam)."""
    return tree_sample(child, descendants)[0]


def tree_sample(child: Child, descendants: Iterable[int]) -> tuple[ProcStats, PerProcess]:
    """:func:`tree_stats`, with what the sample says of each process (the
    ``tree`` report shows those: they add up to the stats)."""
    now = time.monotonic()
    pids = list(descendants)
    if child.running:
        pids.insert(0, child.os_pid)
    last = child.ps_last
    # The same tree, sampled moments ago: that sample (a tree that changed is new).
    if last is not None and 0 <= now - last[0] < STATS_MIN_INTERVAL and last[1] == pids:
        return last[2], last[3]
    stats, each = _sample(child, pids)
    child.ps_last = (now, pids, stats, each)
    return stats, each


def _sample(child: Child, pids: list[int]) -> tuple[ProcStats, PerProcess]:
    cache = child.ps_cache
    seen: dict[int, psutil.Process] = {}
    each: PerProcess = {}
    rd = wr = 0
    for pid in pids:
        proc = cache.get(pid)
        try:
            if proc is None:
                proc = psutil.Process(pid)
            with proc.oneshot():
                each[pid] = (proc.cpu_percent(None), proc.memory_info().rss, proc.num_threads())
                with contextlib.suppress(psutil.AccessDenied, AttributeError):
                    io = proc.io_counters()
                    rd += io.read_bytes
                    wr += io.write_bytes
            seen[pid] = proc
        except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied, OSError):
            each.pop(pid, None)
            continue
    child.ps_cache = seen
    cpu = sum(v[0] for v in each.values())
    rss = sum(v[1] for v in each.values())
    threads = sum(v[2] for v in each.values())
    return ProcStats(cpu, rss, rd, wr, threads, max(0, len(seen) - child.running)), each


def tree_ports(child: Child, descendants: Iterable[int]) -> list[ListeningPort]:
    """The TCP ports the child (while it runs) and its live ``descendants`` listen
    on, by port; a process that is gone or not ours to read is passed over."""
    pids = list(descendants)
    if child.running:
        pids.insert(0, child.os_pid)
    found: set[ListeningPort] = set()
    for pid in pids:
        try:
            conns = psutil.Process(pid).net_connections(kind="tcp")
        except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied, OSError):
            continue
        for conn in conns:
            if conn.status == psutil.CONN_LISTEN and conn.laddr:
                found.add(ListeningPort(conn.laddr.port, conn.laddr.ip, pid))
    return sorted(found)
