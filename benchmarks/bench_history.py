"""History benchmarks: what keeping history (raw logs + journal + SQLite) costs,
and how fast the history is read back. Run by hand; nothing here asserts a time.

    python benchmarks/bench_history.py [--quick] [--rounds N] [--only capture,search] [--dir DIR]

Every number is a median over interleaved rounds (each round runs the variants
of a measure back to back, in a rotating order), and every ratio is against a
baseline measured in the same run, on the same disk (everything is written in
one temporary directory, ``--dir`` or the system's temp dir, removed at the
end). Each measurement gets a fresh state directory.

1. capture   A child ``cat``s a file of 100-byte lines (256 MiB; --quick 64 MiB)
             into ``Supervisor(history=True, log_cap=None)``, timed from spawn
             until both pipes are closed. Baseline: the C pipeline
             ``cat FILE | cat > LOG``. ratio = C time / our time (1.0 = as fast
             as C). The same capture with ``history=False`` (logs and journal,
             no database) gives the database's cost: (t_on / t_off - 1) in %.
             CPU: the supervisor's own user+sys seconds (``getrusage(RUSAGE_SELF)``,
             children excluded) scaled to 256 MiB; the C pipeline's CPU
             (``RUSAGE_CHILDREN``: both cats) is shown beside it. The like-for-like
             CPU ratio: the consumer ``cat > LOG`` alone (its own rusage, from
             ``wait4``) does what the supervisor does, so ratio = its CPU / ours.
             On a VM, where writing fresh page cache costs more at some moments
             than at others, this varies less from round to round than time does.
             With ``--supervisord PATH``: supervisord (``stdout_logfile``, no
             rotation) logging the same ``cat``, timed and its CPU taken (psutil)
             from its log file's creation until the log holds every byte;
             ratio = its time / ours, and its CPU / ours.
             The floor of counting lines in Python: ``cat FILE`` read 1 MiB at a
             time into one buffer, written to a log and its newlines counted
             (``count_newlines``, the supervisor's own counter, the fastest the
             stdlib allows), nothing else; its ratio to C, and ours to it.
2. spawn     ``spawn(/bin/true)`` + ``wait`` (exit observed), ms per spawn as the
             median of 200 sequential spawns per round, history on and off, vs
             ``os.posix_spawn`` + ``os.waitpid``. ratio = baseline ms / our ms.
3. idle      200 children running ``sleep 3600``: the supervisor's CPU % over
             10 s (--quick 5 s) of wall time, history on vs history off (same
             run); the ratio column gives on - off in percentage points.
4. search    ~1 GiB (--quick 128 MiB) of history on disk (4 procs ``cat`` a
             corpus with rare ``needle`` lines and some ``error 123x`` lines);
             a NEW supervisor on that state_dir (so it reads from disk) runs
             ``search("needle")`` and ``search(r"err(or)? [0-9]+x", regex=True)``
             consuming every hit, vs ``grep -F -c`` / ``grep -E -c`` (LC_ALL=C)
             over ``<state_dir>/logs/*.stdout.log``. ratio = grep time / our
             time (>= 0.5: at least half grep's speed). Hit counts are printed
             next to grep's and must agree (the corpus is lower case only, so
             the default case-insensitive search and grep count the same lines).
5. replay    A finished 1,000,000-line proc (100-byte lines) read by a new
             supervisor on its state_dir: ``read(id, limit=2000)`` in ms (the
             first read, which opens the journal; ``head -n 2000 LOG`` shown as a
             reference), and the whole ``read(id)`` vs ``cat LOG > /dev/null``;
             ratio = cat time / our time. The same through the bulk path,
             ``read_bytes``: its first 2,000 lines, the whole in calls of
             ``max_bytes=2 MiB`` passing the cursor on (as a viewer or an export
             would), and the whole in one call (one 95 MiB ``bytes``: the kernel
             zeroing and mapping that much fresh memory is most of its time).
             Each checks it got every line and byte of the log.

A measure that has used 90 s (--quick 20 s) stops after 3 rounds instead of
``--rounds`` and says so; the per-round values in brackets show how many ran.
The page cache is warm for every read measure (both sides read files just
written); ``os.sync()`` runs before each timed capture so that one run's
write-back does not land in the next. A core failure in one section is
printed with its traceback and the other sections still run (exit status 1).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from procwindow import Supervisor
from procwindow.core._output import count_newlines

MiB = 1024 * 1024
LINE = 100  # bytes per line, newline included
TRUE = "/bin/true" if os.path.exists("/bin/true") else "/usr/bin/true"
SECTIONS = ("capture", "spawn", "idle", "search", "replay")
NEEDLE = "needle"
REGEX = r"err(or)? [0-9]+x"
GREP_ENV = {**os.environ, "LC_ALL": "C"}


# -- results -------------------------------------------------------------------------------


@dataclass
class Row:
    section: str
    measure: str
    ours: str
    baseline: str
    ratio: str


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def add(self, section: str, measure: str, ours: str, baseline: str, ratio: str) -> None:
        row = Row(section, measure, ours, baseline, ratio)
        self.rows.append(row)
        print(f"  {measure}: {ours} | {baseline} | {ratio}", flush=True)

    def table(self) -> str:
        head = Row("section", "measure", "procwindow", "baseline (same run)", "ratio")
        rows = [head, *self.rows]
        cols = ("section", "measure", "ours", "baseline", "ratio")

        def cell(r: Row, c: str) -> str:
            return str(getattr(r, c)).replace("|", "\\|")  # a Markdown table

        widths = [max(len(cell(r, c)) for r in rows) for c in cols]

        def fmt(r: Row) -> str:
            cells = (cell(r, c).ljust(w) for c, w in zip(cols, widths, strict=True))
            return "| " + " | ".join(cells) + " |"

        rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
        return "\n".join([fmt(head), rule, *(fmt(r) for r in self.rows)])


def med(xs: Sequence[float]) -> float:
    return statistics.median(xs)


def ratios(num: Sequence[float], den: Sequence[float]) -> list[float]:
    """Round by round, ``num / den``."""
    return [a / b for a, b in zip(num, den, strict=True)]


def rounds_of(xs: Sequence[float], fmt: str = "{:.2f}") -> str:
    return "(" + ", ".join(fmt.format(x) for x in xs) + ")"


def cpu_self() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def interleave(name: str, variants: list[Callable[[], None]], rounds: int, budget: float) -> None:
    """Run ``rounds`` rounds of the variants, each round starting with a
    different one. A slow measure stops after 3 rounds (or ``rounds``, if
    fewer) once it has used ``budget`` seconds, and says so."""
    t0 = time.perf_counter()
    for r in range(rounds):
        k = r % len(variants)
        for run in variants[k:] + variants[:k]:
            run()
        if r + 1 >= min(rounds, 3) and r + 1 < rounds and time.perf_counter() - t0 > budget:
            print(
                f"  {name}: {r + 1} rounds, not {rounds} (time budget {budget:.0f} s)", flush=True
            )
            return


def sub_dir(root: Path, name: str) -> Path:
    """A fresh private (0700) directory under ``root``."""
    return Path(tempfile.mkdtemp(prefix=f"{name}-", dir=root))


def history_on(state_dir: Path, **kw: Any) -> Supervisor:
    return Supervisor(history=True, state_dir=state_dir, log_cap=None, history_bytes=None, **kw)


def history_off(log_dir: Path) -> Supervisor:
    return Supervisor(history=False, log_dir=log_dir, log_cap=None)


def maker(where: Path, history: bool) -> Callable[[], Supervisor]:
    """Builds the supervisor inside the coroutine that uses it: history on with
    ``where`` as its state_dir, or off with ``where`` as its log_dir."""
    return lambda: history_on(where) if history else history_off(where)


# -- input files -----------------------------------------------------------------------------


def plain_lines(path: Path, nbytes: int) -> Path:
    """``nbytes`` (a multiple of LINE) of numbered 100-byte lines."""
    if path.exists() and path.stat().st_size == nbytes:
        return path
    filler = b" lorem ipsum dolor sit amet consectetur adipiscing elit" * 2
    block = b"".join((b"%08d" % i + filler)[: LINE - 1] + b"\n" for i in range(10_000))
    with open(path, "wb") as f:
        left = nbytes
        while left:
            n = min(left, len(block))
            f.write(block[:n])
            left -= n
    return path


def search_corpus(path: Path, nbytes: int) -> Path:
    """100-byte lines, all lower case: 1 in 100,003 holds ``needle``; 1 in 997
    ``error <n>x`` and 1 in 1,999 ``err <n>x`` (regex hits); 1 in 499
    ``error <n>`` without the x (near misses)."""
    filler = b" lorem ipsum dolor sit amet consectetur adipiscing elit" * 2
    chunk: list[bytes] = []
    with open(path, "wb") as f:
        for i in range(nbytes // LINE):
            if i % 100_003 == 7:
                text = b"%08d the needle is here" % i + filler
            elif i % 997 == 3:
                text = b"%08d error %dx in module" % (i, i % 9973) + filler
            elif i % 1_999 == 5:
                text = b"%08d err %dx again" % (i, i % 97) + filler
            elif i % 499 == 1:
                text = b"%08d error %d near miss" % (i, i % 9973) + filler
            else:
                text = b"%08d" % i + filler
            chunk.append(text[: LINE - 1] + b"\n")
            if len(chunk) == 65_536:
                f.write(b"".join(chunk))
                chunk.clear()
        f.write(b"".join(chunk))
    return path


async def run_to_end(sup: Supervisor, argv: list[str], agent: str = "bench") -> tuple[int, int]:
    """Spawn ``argv``, wait for its exit and both pipes' end; (proc id, bytes)."""
    p = await sup.spawn(argv, session="bench", agent=agent)
    await sup.wait(p.id)
    while p.output_open:
        await asyncio.sleep(0.001)
    return p.id, p.output_bytes


# -- 1. capture ------------------------------------------------------------------------------


def _count_floor(src: Path, log: Path) -> int:
    """``cat src`` through a 1 MiB pipe into ``log``, newlines counted: the least
    an exact line count costs in Python. Returns the lines."""
    r, w = os.pipe2(os.O_CLOEXEC)
    with contextlib.suppress(OSError):
        fcntl.fcntl(r, fcntl.F_SETPIPE_SZ, MiB)
    try:
        with subprocess.Popen(["cat", str(src)], stdout=w) as cat:
            os.close(w)
            w = -1
            buf = bytearray(MiB)
            view = memoryview(buf)
            lines = 0
            fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
            try:
                while n := os.readv(r, [view]):
                    done = 0
                    while done < n:
                        done += os.write(fd, view[done:n])
                    lines += count_newlines(buf if n == MiB else buf[:n])
            finally:
                os.close(fd)
        if cat.returncode:
            raise RuntimeError(f"cat exited {cat.returncode}")
    finally:
        os.close(r)
        if w >= 0:
            os.close(w)
    return lines


async def _capture(make: Callable[[], Supervisor], src: Path) -> tuple[float, float, int, int]:
    """(seconds, supervisor CPU seconds, bytes captured, bytes in the log file)."""
    async with make() as sup:
        await run_to_end(sup, [TRUE])  # warm up: the first spawn starts the watchdog
        c0, t0 = cpu_self(), time.perf_counter()
        proc_id, nbytes = await run_to_end(sup, ["cat", str(src)])
        elapsed, cpu = time.perf_counter() - t0, cpu_self() - c0
        logged = os.path.getsize(sup.log_path(proc_id))
    return elapsed, cpu, nbytes, logged


SUPERVISORD_CONF = """\
[supervisord]
nodaemon=true
logfile={where}/supervisord.log
pidfile={where}/supervisord.pid
childlogdir={where}

[program:cat]
command=cat {src}
autostart=true
autorestart=false
startsecs=0
stdout_logfile={log}
stdout_logfile_maxbytes=0
stdout_logfile_backups=0
stderr_logfile={where}/cat.err
stderr_logfile_maxbytes=0
"""


def supervisord_capture(supervisord: str, src: Path, where: Path) -> tuple[float, float]:
    """supervisord logging ``cat src`` to a file: (seconds, its CPU seconds), from
    the moment its log file appears (the program spawned) until it holds every
    byte. supervisord's own start-up is not counted."""
    log = where / "cat.log"
    conf = where / "supervisord.conf"
    conf.write_text(SUPERVISORD_CONF.format(where=where, src=src, log=log))
    size = src.stat().st_size
    with subprocess.Popen(
        [supervisord, "-n", "-c", str(conf)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=where,
    ) as daemon:
        try:
            proc = psutil.Process(daemon.pid)
            deadline = time.monotonic() + 60
            while not log.exists():
                if daemon.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"supervisord did not start cat (see {where})")
                time.sleep(0.0005)
            times, t0 = proc.cpu_times(), time.perf_counter()
            c0 = times.user + times.system
            while log.stat().st_size < size:
                if daemon.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"supervisord logged {log.stat().st_size} of {size} bytes")
                time.sleep(0.0005)
            elapsed = time.perf_counter() - t0
            times = proc.cpu_times()
            cpu = times.user + times.system - c0
        finally:
            daemon.terminate()
            daemon.wait(10)
    return elapsed, cpu


def bench_capture(
    root: Path,
    mb: int,
    rounds: int,
    budget: float,
    report: Report,
    supervisord: str | None = None,
) -> None:
    size = mb * MiB
    src = plain_lines(root / f"lines-{mb}mb.txt", size)
    scale = 256 * MiB / size
    t_c: list[float] = []
    cpu_c: list[float] = []
    cpu_consumer: list[float] = []
    t_on: list[float] = []
    cpu_on: list[float] = []
    t_off: list[float] = []
    cpu_off: list[float] = []
    t_floor: list[float] = []
    cpu_floor: list[float] = []
    t_sd: list[float] = []
    cpu_sd: list[float] = []
    short: list[str] = []

    def c_pipeline() -> None:
        where = sub_dir(root, "c")
        os.sync()
        c0, t0 = cpu_children(), time.perf_counter()
        with open(where / "c.log", "wb") as log:
            producer = subprocess.Popen(["cat", str(src)], stdout=subprocess.PIPE)
            assert producer.stdout is not None
            consumer = subprocess.Popen(["cat"], stdin=producer.stdout, stdout=log)
            producer.stdout.close()
            _, status, usage = os.wait4(consumer.pid, 0)
            consumer.returncode = os.waitstatus_to_exitcode(status)
            producer.wait()
        t_c.append(time.perf_counter() - t0)
        cpu_c.append(cpu_children() - c0)
        cpu_consumer.append(usage.ru_utime + usage.ru_stime)
        if producer.returncode or consumer.returncode:
            raise RuntimeError(f"cat | cat exited {producer.returncode}, {consumer.returncode}")
        shutil.rmtree(where)

    def ours(history: bool) -> None:
        where = sub_dir(root, "on" if history else "off")
        os.sync()
        elapsed, cpu, nbytes, logged = asyncio.run(_capture(maker(where, history), src))
        (t_on if history else t_off).append(elapsed)
        (cpu_on if history else cpu_off).append(cpu)
        if nbytes != size or logged != size:
            short.append(f"history={history}: captured {nbytes}, logged {logged} of {size}")
        shutil.rmtree(where)

    def floor() -> None:
        where = sub_dir(root, "floor")
        os.sync()
        c0, t0 = cpu_self(), time.perf_counter()
        lines = _count_floor(src, where / "floor.log")
        t_floor.append(time.perf_counter() - t0)
        cpu_floor.append(cpu_self() - c0)
        if lines != size // LINE:
            short.append(f"floor: counted {lines} lines of {size // LINE}")
        shutil.rmtree(where)

    def peer() -> None:
        assert supervisord is not None
        where = sub_dir(root, "supervisord")
        os.sync()
        elapsed, cpu = supervisord_capture(supervisord, src, where)
        t_sd.append(elapsed)
        cpu_sd.append(cpu)
        shutil.rmtree(where)

    variants = [c_pipeline, lambda: ours(True), lambda: ours(False), floor]
    if supervisord is not None:
        variants.append(peer)
    interleave("capture", variants, rounds, budget)
    mbs = size / 1e6
    on_ratio = ratios(t_c, t_on)
    off_ratio = ratios(t_c, t_off)
    cost = [(on / off - 1) * 100 for on, off in zip(t_on, t_off, strict=True)]
    base = f"cat|cat>log {mbs / med(t_c):.0f} MB/s"
    report.add(
        "capture",
        f"capture {mb} MiB, history on (MB/s)",
        f"{mbs / med(t_on):.0f} MB/s",
        base,
        f"{med(on_ratio):.2f}x {rounds_of(on_ratio)}",
    )
    report.add(
        "capture",
        f"capture {mb} MiB, history off (MB/s)",
        f"{mbs / med(t_off):.0f} MB/s",
        base,
        f"{med(off_ratio):.2f}x {rounds_of(off_ratio)}",
    )
    floor_ratio = ratios(t_c, t_floor)
    to_floor = ratios(t_floor, t_on)
    report.add(
        "capture",
        "floor: Python read 1 MiB + write + count newlines",
        f"{mbs / med(t_floor):.0f} MB/s, CPU {med(cpu_floor) * scale:.3f} s per 256 MiB",
        base,
        f"{med(floor_ratio):.2f}x {rounds_of(floor_ratio)}; history on / floor "
        f"{med(to_floor):.2f}x",
    )
    report.add(
        "capture",
        "database cost (time on vs off)",
        f"{med(cost):+.1f} %",
        f"off {med(t_off) * 1000:.0f} ms, on {med(t_on) * 1000:.0f} ms",
        f"{rounds_of(cost, '{:+.1f}')} %",
    )
    report.add(
        "capture",
        "supervisor CPU per 256 MiB, on / off",
        f"{med(cpu_on) * scale:.3f} s / {med(cpu_off) * scale:.3f} s",
        f"cat|cat>log (both cats) {med(cpu_c) * scale:.3f} s",
        f"on/off {med(cpu_on) / med(cpu_off):.2f}x",
    )
    cpu_ratio = ratios(cpu_consumer, cpu_on)
    report.add(
        "capture",
        "capture CPU per 256 MiB vs the C consumer",
        f"history on {med(cpu_on) * scale:.3f} s",
        f"`cat > LOG` {med(cpu_consumer) * scale:.3f} s",
        f"{med(cpu_ratio):.2f}x {rounds_of(cpu_ratio)}",
    )
    if supervisord is not None:
        sd_ratio = ratios(t_sd, t_on)
        sd_cpu = ratios(cpu_sd, cpu_on)
        report.add(
            "capture",
            "supervisord: capture (MB/s); CPU per 256 MiB",
            f"history on {mbs / med(t_on):.0f} MB/s; {med(cpu_on) * scale:.3f} s",
            f"supervisord {mbs / med(t_sd):.0f} MB/s; {med(cpu_sd) * scale:.3f} s",
            f"speed {med(sd_ratio):.2f}x {rounds_of(sd_ratio)}; CPU theirs/ours "
            f"{med(sd_cpu):.2f}x {rounds_of(sd_cpu)}",
        )
    for s in short:
        print(f"  WARNING: {s}", flush=True)


# -- 2. spawn --------------------------------------------------------------------------------


async def _spawns(make: Callable[[], Supervisor], n: int) -> list[float]:
    async with make() as sup:
        p = await sup.spawn([TRUE], session="bench", agent="spawn")  # starts the watchdog
        await sup.wait(p.id)
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            p = await sup.spawn([TRUE], session="bench", agent="spawn")
            await sup.wait(p.id)
            times.append(time.perf_counter() - t0)
    return times


def bench_spawn(root: Path, n: int, rounds: int, budget: float, report: Report) -> None:
    base_ms: list[float] = []
    on_ms: list[float] = []
    off_ms: list[float] = []

    def posix() -> None:
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            pid = os.posix_spawn(TRUE, [TRUE], os.environ)
            os.waitpid(pid, 0)
            times.append(time.perf_counter() - t0)
        base_ms.append(med(times) * 1000)

    def ours(history: bool) -> None:
        where = sub_dir(root, "spawn")
        times = asyncio.run(_spawns(maker(where, history), n))
        (on_ms if history else off_ms).append(med(times) * 1000)
        shutil.rmtree(where)

    interleave("spawn", [posix, lambda: ours(True), lambda: ours(False)], rounds, budget)
    base = f"posix_spawn+waitpid {med(base_ms):.2f} ms"
    for label, ms in (("on", on_ms), ("off", off_ms)):
        ratio = [b / o for b, o in zip(base_ms, ms, strict=True)]
        report.add(
            "spawn",
            f"spawn true -> exit seen, history {label} (x{n})",
            f"{med(ms):.2f} ms",
            base,
            f"{med(ratio):.2f}x {rounds_of(ratio)}",
        )
    cost = [(on / off - 1) * 100 for on, off in zip(on_ms, off_ms, strict=True)]
    report.add(
        "spawn",
        "history's cost per spawn (on vs off)",
        f"{med(cost):+.1f} %",
        f"off {med(off_ms):.2f} ms, on {med(on_ms):.2f} ms",
        f"{rounds_of(cost, '{:+.1f}')} %",
    )


# -- 3. idle ---------------------------------------------------------------------------------


async def _idle(make: Callable[[], Supervisor], n: int, window: float) -> float:
    async with make() as sup:
        for i in range(n):
            await sup.spawn(["sleep", "3600"], session="bench", agent=f"a{i % 10}")
        await asyncio.sleep(1.5)  # let the spawns' sweeps and the loop settle
        c0, t0 = cpu_self(), time.perf_counter()
        await asyncio.sleep(window)
        cpu = (cpu_self() - c0) / (time.perf_counter() - t0) * 100
        running = sum(p.running for p in sup.procs())
        if running != n:
            print(f"  WARNING: {running} of {n} idle children were running", flush=True)
        return cpu


def bench_idle(
    root: Path, n: int, window: float, rounds: int, budget: float, report: Report
) -> None:
    on: list[float] = []
    off: list[float] = []

    def ours(history: bool) -> None:
        where = sub_dir(root, "idle")
        (on if history else off).append(asyncio.run(_idle(maker(where, history), n, window)))
        shutil.rmtree(where)

    interleave("idle", [lambda: ours(True), lambda: ours(False)], rounds, budget)
    diff = [a - b for a, b in zip(on, off, strict=True)]
    report.add(
        "idle",
        f"idle CPU, {n} children, {window:.0f} s, history on",
        f"{med(on):.2f} % {rounds_of(on)}",
        f"history off {med(off):.2f} % {rounds_of(off)}",
        f"on - off {med(diff):+.2f} pp",
    )


# -- 4. search -------------------------------------------------------------------------------


async def _build(state_dir: Path, src: Path, procs: int) -> list[int]:
    async with history_on(state_dir) as sup:
        return [(await run_to_end(sup, ["cat", str(src)], f"a{k}"))[0] for k in range(procs)]


async def _search(
    state_dir: Path, pattern: str, regex: bool, case_sensitive: bool
) -> tuple[float, int]:
    async with Supervisor(history=True, state_dir=state_dir) as sup:
        t0 = time.perf_counter()
        hits = 0
        async for _ in sup.search(pattern, regex=regex, case_sensitive=case_sensitive):
            hits += 1
        return time.perf_counter() - t0, hits


def grep_count(args: list[str], files: list[str]) -> tuple[float, int]:
    t0 = time.perf_counter()
    out = subprocess.run(["grep", "-c", "-h", *args, *files], capture_output=True, env=GREP_ENV)
    elapsed = time.perf_counter() - t0
    if out.returncode > 1:
        raise RuntimeError(f"grep failed: {out.stderr.decode(errors='replace')}")
    return elapsed, sum(int(x) for x in out.stdout.split())


@dataclass
class _Case:
    """Timings and hit counts of one search pattern, ours and grep's."""

    ours_t: list[float] = field(default_factory=list)
    grep_t: list[float] = field(default_factory=list)
    ours_hits: int = -1
    grep_hits: int = -1


def search_case(
    state_dir: Path,
    files: list[str],
    total: int,
    rounds: int,
    budget: float,
    report: Report,
    label: str,
    pattern: str,
    regex: bool,
    case_sensitive: bool,
    grep_args: list[str],
    grep_label: str,
) -> None:
    grep_count(grep_args, files)  # warm the page cache for both sides
    c = _Case()

    def grep() -> None:
        elapsed, c.grep_hits = grep_count(grep_args, files)
        c.grep_t.append(elapsed)

    def ours() -> None:
        elapsed, c.ours_hits = asyncio.run(_search(state_dir, pattern, regex, case_sensitive))
        c.ours_t.append(elapsed)

    interleave(label, [grep, ours], rounds, budget)
    ratio = [g / o for g, o in zip(c.grep_t, c.ours_t, strict=True)]
    agree = "agree" if c.ours_hits == c.grep_hits else "DIFFER"
    report.add(
        "search",
        f"{label}, {total / MiB:.0f} MiB",
        f"{med(c.ours_t) * 1000:.0f} ms, {c.ours_hits} hits ({total / 1e6 / med(c.ours_t):.0f} MB/s)",
        f"{grep_label} {med(c.grep_t) * 1000:.0f} ms, {c.grep_hits} hits: {agree}",
        f"{med(ratio):.2f}x {rounds_of(ratio)}",
    )


def bench_search(root: Path, mb: int, rounds: int, budget: float, report: Report) -> None:
    procs = 4
    state_dir = sub_dir(root, "search")
    corpus = search_corpus(root / "corpus.txt", mb * MiB // procs // LINE * LINE)
    t0 = time.perf_counter()
    ids = asyncio.run(_build(state_dir, corpus, procs))
    corpus.unlink()
    files = sorted(str(p) for p in (state_dir / "logs").glob("*.stdout.log"))
    total = sum(os.path.getsize(f) for f in files)
    print(
        f"  built {total / MiB:.0f} MiB of history in {len(files)} logs (procs {ids}) "
        f"in {time.perf_counter() - t0:.1f} s",
        flush=True,
    )
    cases = [
        (f'search("{NEEDLE}")', NEEDLE, False, False, ["-F", NEEDLE], "grep -F -c"),
        (
            f'search("{NEEDLE}", case_sensitive=True)',
            NEEDLE,
            False,
            True,
            ["-F", NEEDLE],
            "grep -F -c",
        ),
        (f'search(r"{REGEX}", regex=True)', REGEX, True, False, ["-E", REGEX], "grep -E -c"),
    ]
    for case in cases:
        search_case(state_dir, files, total, rounds, budget, report, *case)
    shutil.rmtree(state_dir)


# -- 5. replay -------------------------------------------------------------------------------


async def _replay_head(state_dir: Path, proc_id: int) -> tuple[float, int]:
    async with Supervisor(history=True, state_dir=state_dir) as sup:
        t0 = time.perf_counter()
        batch = sup.read(proc_id, limit=2000)
        return time.perf_counter() - t0, len(batch.lines)


async def _replay_all(state_dir: Path, proc_id: int) -> tuple[float, int, bool]:
    async with Supervisor(history=True, state_dir=state_dir) as sup:
        t0 = time.perf_counter()
        batch = sup.read(proc_id)
        elapsed = time.perf_counter() - t0
        n, eof = len(batch.lines), batch.eof
        del batch
        return elapsed, n, eof


#: Bytes per read_bytes call when the benchmark pages through a whole proc.
PAGE = 2 * MiB


async def _bytes_head(state_dir: Path, proc_id: int) -> tuple[float, int]:
    async with Supervisor(history=True, state_dir=state_dir) as sup:
        t0 = time.perf_counter()
        batch = sup.read_bytes(proc_id, limit=2000)
        return time.perf_counter() - t0, batch.count


async def _bytes_all(
    state_dir: Path, proc_id: int, page: int | None
) -> tuple[float, int, int, int]:
    """(seconds, lines, bytes, calls) for the whole proc through read_bytes."""
    async with Supervisor(history=True, state_dir=state_dir) as sup:
        t0 = time.perf_counter()
        cursor = lines = nbytes = calls = 0
        while True:
            batch = sup.read_bytes(proc_id, cursor, max_bytes=page)
            calls += 1
            lines += batch.count
            nbytes += len(batch.data)
            cursor, eof = batch.cursor, batch.eof
            del batch
            if eof:
                break
        return time.perf_counter() - t0, lines, nbytes, calls


def bench_replay(root: Path, lines: int, rounds: int, budget: float, report: Report) -> None:
    state_dir = sub_dir(root, "replay")
    src = plain_lines(root / f"replay-{lines}.txt", lines * LINE)
    (proc_id,) = asyncio.run(_build(state_dir, src, 1))
    src.unlink()
    log = state_dir / "logs" / f"{proc_id}.stdout.log"
    head_t: list[float] = []
    headc_t: list[float] = []
    all_t: list[float] = []
    cat_t: list[float] = []
    bhead_t: list[float] = []
    paged_t: list[float] = []
    one_t: list[float] = []
    seen: dict[str, int | bool] = {}
    short: list[str] = []

    def head() -> None:
        elapsed, n = asyncio.run(_replay_head(state_dir, proc_id))
        head_t.append(elapsed)
        seen["head"] = n
        t0 = time.perf_counter()
        subprocess.run(["head", "-n", "2000", str(log)], stdout=subprocess.DEVNULL, check=True)
        headc_t.append(time.perf_counter() - t0)

    def whole() -> None:
        elapsed, n, eof = asyncio.run(_replay_all(state_dir, proc_id))
        all_t.append(elapsed)
        seen["all"], seen["eof"] = n, eof

    def cat() -> None:
        t0 = time.perf_counter()
        subprocess.run(["cat", str(log)], stdout=subprocess.DEVNULL, check=True)
        cat_t.append(time.perf_counter() - t0)

    def bytes_head() -> None:
        elapsed, n = asyncio.run(_bytes_head(state_dir, proc_id))
        bhead_t.append(elapsed)
        seen["bhead"] = n

    def bytes_all(page: int | None, into: list[float]) -> None:
        elapsed, n, nbytes, calls = asyncio.run(_bytes_all(state_dir, proc_id, page))
        into.append(elapsed)
        seen[f"calls{page}"] = calls
        if (n, nbytes) != (lines, size):
            short.append(f"read_bytes(max_bytes={page}): {n} lines, {nbytes} bytes")

    size = log.stat().st_size
    cat()  # warm the page cache
    cat_t.clear()
    variants = [
        head,
        whole,
        cat,
        bytes_head,
        lambda: bytes_all(PAGE, paged_t),
        lambda: bytes_all(None, one_t),
    ]
    interleave("replay", variants, rounds, budget)
    report.add(
        "replay",
        f"read(id, limit=2000) of a finished {lines:,}-line proc",
        f"{med(head_t) * 1000:.1f} ms ({seen['head']} lines) {rounds_of([t * 1000 for t in head_t], '{:.1f}')}",
        f"head -n 2000 LOG {med(headc_t) * 1000:.1f} ms (incl. process start)",
        f"{med([h / o for h, o in zip(headc_t, head_t, strict=True)]):.2f}x",
    )
    ratio = [c / o for c, o in zip(cat_t, all_t, strict=True)]
    report.add(
        "replay",
        f"read(id), whole {size / MiB:.0f} MiB log",
        f"{med(all_t) * 1000:.0f} ms, {seen['all']:,} lines, eof={seen['eof']} "
        f"({lines / med(all_t) / 1e6:.2f} M lines/s)",
        f"cat LOG >/dev/null {med(cat_t) * 1000:.0f} ms",
        f"{med(ratio):.3f}x {rounds_of(ratio, '{:.3f}')}",
    )
    report.add(
        "replay",
        "read_bytes(id, limit=2000), first call",
        f"{med(bhead_t) * 1000:.1f} ms ({seen['bhead']} lines) "
        f"{rounds_of([t * 1000 for t in bhead_t], '{:.1f}')}",
        f"head -n 2000 LOG {med(headc_t) * 1000:.1f} ms (incl. process start)",
        f"{med([h / o for h, o in zip(headc_t, bhead_t, strict=True)]):.2f}x",
    )
    for label, times, page in (
        (f"max_bytes={PAGE // MiB} MiB per call", paged_t, PAGE),
        ("one call", one_t, None),
    ):
        ratio = [c / o for c, o in zip(cat_t, times, strict=True)]
        report.add(
            "replay",
            f"read_bytes, whole {size / MiB:.0f} MiB log, {label}",
            f"{med(times) * 1000:.1f} ms, {seen[f'calls{page}']} calls "
            f"({size / 1e6 / med(times):.0f} MB/s)",
            f"cat LOG >/dev/null {med(cat_t) * 1000:.0f} ms",
            f"{med(ratio):.2f}x {rounds_of(ratio)}",
        )
    for s in short:
        print(f"  WARNING: {s}", flush=True)
    shutil.rmtree(state_dir)


# -- main ------------------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="smaller inputs, fewer rounds (~2 min)")
    ap.add_argument(
        "--rounds", type=int, help="interleaved rounds per measure (default 5; quick 3)"
    )
    ap.add_argument("--only", help=f"comma-separated subset of {','.join(SECTIONS)}")
    ap.add_argument("--dir", help="where to write inputs, logs and state (default: temp dir)")
    ap.add_argument(
        "--supervisord",
        metavar="PATH",
        help="also capture with this supervisord (e.g. from `pip install supervisor`)",
    )
    args = ap.parse_args()
    quick: bool = args.quick
    rounds: int = args.rounds or (3 if quick else 5)
    only = set(args.only.split(",")) if args.only else set(SECTIONS)
    if not only <= set(SECTIONS):
        ap.error(f"--only takes {','.join(SECTIONS)}")
    capture_mb = 64 if quick else 256
    search_mb = 128 if quick else 1024
    idle_window = 5.0 if quick else 10.0
    budget = 20.0 if quick else 90.0  # seconds a measure may take before its rounds are cut
    root = Path(tempfile.mkdtemp(prefix="procwindow-bench-history-", dir=args.dir))
    report = Report()
    plan: list[tuple[str, Callable[[], None]]] = [
        (
            "capture",
            lambda: bench_capture(root, capture_mb, rounds, budget, report, args.supervisord),
        ),
        ("spawn", lambda: bench_spawn(root, 200, rounds, budget, report)),
        ("idle", lambda: bench_idle(root, 200, idle_window, rounds, budget, report)),
        ("search", lambda: bench_search(root, search_mb, rounds, budget, report)),
        ("replay", lambda: bench_replay(root, 1_000_000, rounds, budget, report)),
    ]
    started = time.perf_counter()
    print(
        f"bench_history: {'quick, ' if quick else ''}{rounds} rounds, {os.cpu_count()} CPUs, "
        f"Python {sys.version.split()[0]}, files in {root}",
        flush=True,
    )
    try:
        for name, run in plan:
            if name not in only:
                continue
            print(f"[{name}]", flush=True)
            t0 = time.perf_counter()
            try:
                run()
            except Exception as exc:
                traceback.print_exc()
                report.failed.append(name)
                report.add(name, "FAILED", f"{type(exc).__name__}: {exc}", "-", "-")
            print(f"  ({time.perf_counter() - t0:.0f} s)", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print()
    print(
        f"Medians over up to {rounds} interleaved rounds ({time.perf_counter() - started:.0f} s in all):"
    )
    print(report.table())
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
