"""The agent layer under load: 50 agents x 10 commands each, every command
waited on for a line and summed up in an excerpt. Run by hand; nothing here
asserts a time.

    python benchmarks/bench_agents.py [--agents 50] [--commands 10] [--rounds 3] [--lines 2000]

Each agent runs its commands one after another; all agents run at once on one
event loop. A command prints ``--lines`` numbered lines, then ``listening``,
then sleeps 0.5 s (an agent's pace) and exits. Per command the agent:

- procwindow: ``spawn`` → ``wait_for(id, "listening")`` → ``wait`` →
  ``excerpt(id, head=20, tail=40)``;
- baseline (the same run, the same commands and concurrency): what a harness
  writes without procwindow, ``asyncio.create_subprocess_exec`` with both pipes,
  reading stdout line by line until ``listening`` (stderr drained), the last 40
  lines kept in a deque, ``wait``.

Reported, as medians over interleaved rounds:

- the loop's lag: a ticker sleeps 5 ms over and over and records how late each
  wake-up is; p50 and p99 in ms;
- the supervisor's CPU per command: this process's user+sys seconds
  (``RUSAGE_SELF``, children excluded) divided by the commands run, in ms;
- the wall time of the whole run.

ratio = baseline / procwindow for CPU per command (1.0: as cheap as the
hand-written harness, which keeps no history, no ring, no events).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import resource
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from procwindow import Supervisor

TICK = 0.005


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _command(lines: int) -> list[str]:
    return ["sh", "-c", f"seq 1 {lines}; echo listening; sleep 0.5"]


async def _ticker(lags: list[float], stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        start = loop.time()
        await asyncio.sleep(TICK)
        lags.append(max(0.0, loop.time() - start - TICK))


async def _measure(work, agents: int, commands: int):
    lags: list[float] = []
    stop = asyncio.Event()
    ticker = asyncio.create_task(_ticker(lags, stop))
    cpu0 = _cpu()
    t0 = time.perf_counter()
    await asyncio.gather(*(work(a) for a in range(agents)))
    wall = time.perf_counter() - t0
    cpu = _cpu() - cpu0
    stop.set()
    await ticker
    lags.sort()
    n = agents * commands
    return {
        "p50": lags[len(lags) // 2] * 1000,
        "p99": lags[int(len(lags) * 0.99)] * 1000,
        "cpu_ms": cpu / n * 1000,
        "wall": wall,
    }


async def procwindow_round(agents: int, commands: int, lines: int, state: str):
    async with Supervisor(state_dir=state) as sup:

        async def agent(a: int) -> None:
            for _ in range(commands):
                p = await sup.spawn(_command(lines), session="bench", agent=f"agent-{a}")
                await sup.wait_for(p.id, "^listening$", timeout=60)
                await sup.wait(p.id)
                ex = await sup.excerpt(p.id, head=20, tail=40)
                assert ex.omitted_lines == lines + 1 - 60, ex.omitted_lines

        return await _measure(agent, agents, commands)


async def baseline_round(agents: int, commands: int, lines: int):
    async def agent(a: int) -> None:
        for _ in range(commands):
            proc = await asyncio.create_subprocess_exec(
                *_command(lines),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            assert proc.stdout is not None
            assert proc.stderr is not None
            tail: collections.deque[bytes] = collections.deque(maxlen=40)
            drain = asyncio.create_task(proc.stderr.read())
            async for line in proc.stdout:
                tail.append(line)
            await drain
            await proc.wait()
            assert tail[-1] == b"listening\n"

    return await _measure(agent, agents, commands)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agents", type=int, default=50)
    ap.add_argument("--commands", type=int, default=10)
    ap.add_argument("--lines", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    ours: list[dict[str, float]] = []
    base: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="bench-agents-") as tmp:
        for r in range(args.rounds):
            state = os.path.join(tmp, f"state{r}")
            order = (0, 1) if r % 2 == 0 else (1, 0)
            for which in order:
                if which == 0:
                    ours.append(
                        asyncio.run(procwindow_round(args.agents, args.commands, args.lines, state))
                    )
                else:
                    base.append(asyncio.run(baseline_round(args.agents, args.commands, args.lines)))
    n = args.agents * args.commands
    print(
        f"{args.agents} agents x {args.commands} commands ({n} in all), "
        f"{args.lines} lines each, medians of {args.rounds} rounds"
    )
    print(f"{'':24}{'procwindow':>12}{'baseline':>12}{'ratio':>8}")

    def row(key: str, label: str, ratio: bool) -> None:
        a = statistics.median(x[key] for x in ours)
        b = statistics.median(x[key] for x in base)
        extra = f"{b / a:8.2f}x" if ratio and a else ""
        print(f"{label:24}{a:12.2f}{b:12.2f}{extra}")

    row("p50", "loop lag p50 (ms)", False)
    row("p99", "loop lag p99 (ms)", False)
    row("cpu_ms", "CPU per command (ms)", True)
    row("wall", "wall time (s)", False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
