"""Control-socket benchmarks, run by hand; ratios against a baseline measured in the same run.

    python benchmarks/bench_control.py [--n 2000] [--procs 1000]

Baseline: a minimal asyncio Unix-socket server that answers each JSON line with a
JSON line, in the same framing, measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

ECHO_SERVER = textwrap.dedent(
    """
    import asyncio, json, sys
    async def client(reader, writer):
        while line := await reader.readline():
            req = json.loads(line)
            writer.write(json.dumps({"v": 1, "id": req.get("id"), "ok": True, "result": {}}).encode() + b"\\n")
            await writer.drain()
        writer.close()
    async def main():
        server = await asyncio.start_unix_server(client, path=sys.argv[1])
        print("ready", flush=True)
        await server.serve_forever()
    asyncio.run(main())
    """
)


def _connect(path: str) -> tuple[socket.socket, object]:
    deadline = time.monotonic() + 20
    while True:
        try:
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.connect(path)
            return sock, sock.makefile("rb")
        except OSError:
            sock.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _rate(path: str, request: dict, n: int) -> tuple[float, list[float]]:
    sock, rfile = _connect(path)
    lat = []
    with sock:
        t0 = time.perf_counter()
        for i in range(n):
            body = json.dumps({**request, "id": i}).encode() + b"\n"
            t = time.perf_counter()
            sock.sendall(body)
            reply = json.loads(rfile.readline())
            lat.append(time.perf_counter() - t)
            assert reply["ok"], reply
        return n / (time.perf_counter() - t0), lat


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--procs", type=int, default=1000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, XDG_RUNTIME_DIR=tmp, XDG_STATE_HOME=tmp, PYTHONPATH=str(ROOT))
        sock_dir = Path(tmp) / "s"
        sock_dir.mkdir(mode=0o700)
        echo_path, pw_path = str(sock_dir / "echo.sock"), str(sock_dir / "pw.sock")
        echo = subprocess.Popen(
            [sys.executable, "-c", ECHO_SERVER, echo_path], stdout=subprocess.PIPE, env=env
        )
        serve = subprocess.Popen(
            [sys.executable, "-m", "procwindow", "serve", "--socket", pw_path],
            env=env,
            stderr=subprocess.DEVNULL,
        )
        try:
            echo.stdout.readline()
            base_rate, base_lat = _rate(echo_path, {"op": "idx"}, args.n)
            idx_rate, _ = _rate(pw_path, {"op": "idx"}, args.n)
            run_rate, _ = _rate(
                pw_path,
                {"op": "run", "session": "bench", "agent": "a", "argv": ["true"]},
                min(args.n, 1000),
            )
            print(
                f"baseline echo server: {base_rate:.0f} req/s, median round trip {statistics.median(base_lat) * 1e6:.0f} us"
            )
            print(
                f"idx (empty-ish index): {idx_rate:.0f} req/s = {idx_rate / base_rate:.2f}x of the echo baseline"
            )
            print(
                f"run of `true`: {run_rate:.0f} req/s = {run_rate / base_rate:.2f}x of the echo baseline"
            )
            # fill the index to `procs` entries, then time idx round trips
            sock, rfile = _connect(pw_path)
            with sock:
                have = min(args.n, 1000)
                batch = b"".join(
                    json.dumps(
                        {"op": "run", "id": i, "session": "bench", "agent": "b", "argv": ["true"]}
                    ).encode()
                    + b"\n"
                    for i in range(max(0, args.procs - have))
                )
                sock.sendall(batch)
                for _ in range(max(0, args.procs - have)):
                    rfile.readline()
            _, lat = _rate(pw_path, {"op": "idx"}, 200)
            med = statistics.median(lat)
            print(
                f"idx with {args.procs} procs listed: median round trip {med * 1e3:.2f} ms "
                f"(p90 {statistics.quantiles(lat, n=10)[-1] * 1e3:.2f} ms) = {med / statistics.median(base_lat):.1f}x the echo round trip"
            )
        finally:
            serve.terminate()
            echo.terminate()
            serve.wait(30)
            echo.wait(30)


if __name__ == "__main__":
    main()
