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

    python benchmarks/bench_agents.py mcp [--calls 200] [--procs 1,100,1000,4000]

The MCP surface: a real ``procwindow serve`` and a real ``procwindow mcp`` on
stdio, driven by the SDK's client, against the same call made on the control
socket by the asyncio client (a raw call). Reported, as medians of interleaved
calls:

- the overhead of MCP: ``read`` of a proc's last 200 lines through MCP vs one
  raw ``out`` call for the same lines (ratio = MCP / raw; the tool's one ``out``
  also brings the proc, for its state and the session's rules, and asks for the
  lines in the run form, timed apart as well);
- the SDK's floor: a server on the same SDK and stdio transport
  (``_mcp_floor.py``) whose ``read`` returns a constant result of the same shape
  and size, with the same output schema; what is left of the MCP call once the
  floor and the socket call are taken away is procwindow's own part;
- ``read`` with 1 to 4,000 procs in the server: the median at each count and
  its ratio to the one with a single proc (flat: about 1.0).
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


async def _mcp_read_costs(calls: int, counts: list[int], tmp: str) -> None:
    """The MCP section: see the docstring."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    from procwindow.control.aclient import AsyncClient

    root = os.path.join(os.path.dirname(__file__), "..")
    env = dict(
        os.environ,
        XDG_RUNTIME_DIR=tmp,
        XDG_STATE_HOME=os.path.join(tmp, "state"),
        PYTHONPATH=os.path.abspath(root),
    )
    path = os.path.join(tmp, "bench.sock")
    serve = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "procwindow", "serve", "--socket", path, env=env
    )
    try:
        while not os.path.exists(path):
            await asyncio.sleep(0.05)
        raw = await AsyncClient.connect(path)
        target = await raw.call("run", session="bench", agent="a", shell="seq 1 5000")
        await raw.call("wait", proc=target["id"])
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "procwindow", "mcp", "--socket", path, "--session", "bench"],
            env=env,
        )
        floor = StdioServerParameters(
            command=sys.executable, args=[os.path.join(os.path.dirname(__file__), "_mcp_floor.py")]
        )
        with open(os.devnull, "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
                stdio_client(floor, errlog=errlog) as (floor_read, floor_write),
                ClientSession(floor_read, floor_write) as floor_session,
            ):
                await session.initialize()
                await floor_session.initialize()
                args = {"id": target["id"], "since": 4800, "limit": 200}

                async def mcp_call() -> None:
                    result = await session.call_tool("read", args)
                    assert not result.is_error, result

                async def floor_call() -> None:
                    result = await floor_session.call_tool("read", args)
                    assert not result.is_error, result

                async def raw_call() -> None:
                    await raw.call("out", proc=target["id"], since=4800, limit=200)

                async def raw_runs() -> None:  # what the MCP tool asks for
                    await raw.call("out", proc=target["id"], since=4800, limit=200, runs=True)

                ours, sdk, base, runs = await _interleaved(
                    [mcp_call, floor_call, raw_call, raw_runs], calls
                )
                print(f"read of 200 lines, medians of {calls} interleaved calls")
                print(
                    f"  MCP {ours * 1000:.2f} ms, raw socket {base * 1000:.2f} ms,"
                    f" ratio {ours / base:.2f}x"
                )
                print(
                    f"  the SDK's floor (the same result, constant, on the same SDK and"
                    f" transport): {sdk * 1000:.2f} ms, {sdk / base:.2f}x the raw call"
                )
                print(
                    f"  raw socket in the run form (what the tool asks for): {runs * 1000:.2f} ms;"
                    f" procwindow's own part (MCP - floor - that): {(ours - sdk - runs) * 1000:.2f} ms"
                )
                print("read through MCP by the number of procs in the server")
                started, first = 1, None
                for count in counts:
                    last = None
                    while started < count:
                        last = await raw.call("run", session="other", agent="a", argv=["true"])
                        started += 1
                    if last is not None:  # every one reaped: only their number differs
                        await raw.call("wait", proc=last["id"])
                        await asyncio.sleep(2)
                    (median,) = await _interleaved([mcp_call], calls)
                    first = first or median
                    print(
                        f"  {count:6d} procs: {median * 1000:.2f} ms,"
                        f" ratio to 1 proc {median / first:.2f}x"
                    )
        await raw.close()
    finally:
        serve.terminate()
        await serve.wait()


async def _interleaved(fns, calls: int) -> list[float]:
    """Median seconds of each of ``fns``, called in turn ``calls`` times."""
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(calls):
        for spent, fn in zip(times, fns, strict=True):
            t0 = time.perf_counter()
            await fn()
            spent.append(time.perf_counter() - t0)
    return [statistics.median(t) for t in times]


def main() -> int:
    if sys.argv[1:2] == ["mcp"]:
        ap = argparse.ArgumentParser(description="the MCP surface's costs")
        ap.add_argument("--calls", type=int, default=200)
        ap.add_argument("--procs", default="1,100,1000,4000")
        args = ap.parse_args(sys.argv[2:])
        counts = [int(n) for n in args.procs.split(",")]
        with tempfile.TemporaryDirectory(prefix="bench-mcp-") as tmp:
            asyncio.run(_mcp_read_costs(args.calls, counts, tmp))
        return 0
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
