"""What hostile or stuck clients cost ``procwindow serve``; run by hand.

    python benchmarks/bench_client_limits.py [--seconds 20] [--half 500]

Two scenarios against one real server, each measured as the server's peak RSS
and the slowest ``hello`` round trip of a well-behaved client, printed as
ratios against the same two numbers measured on the idle server in the same
run:

- ``stuck-out``: a child floods NUL-heavy lines (JSON escapes each NUL as six
  bytes) while ten clients ask for its output and never read;
- ``half-sent``: ``--half`` connections each send up to 1 MiB of a request
  and never its newline.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
FLOOD = "import sys\nline = '\\0' * 1000 + '\\n'\nwhile True: sys.stdout.write(line * 1000)"


def _request(sock: socket.socket, msg: dict[str, object]) -> dict[str, object]:
    sock.sendall(json.dumps(msg).encode() + b"\n")
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(buf[:200])
        buf += chunk
    reply: dict[str, object] = json.loads(buf)
    return reply


class Server:
    def __init__(self) -> None:
        tmp = tempfile.mkdtemp(prefix="pw-limits-")
        runtime = os.path.join(tmp, "run")
        os.mkdir(runtime, 0o700)
        env = dict(
            os.environ,
            XDG_RUNTIME_DIR=runtime,
            XDG_STATE_HOME=os.path.join(tmp, "state"),
            PYTHONPATH=str(ROOT),
        )
        self.path = os.path.join(runtime, "procwindow", "limits.sock")
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "procwindow", "serve", "--name", "limits"],
            env=env,
            stderr=subprocess.PIPE,
            text=True,
        )
        while not os.path.exists(self.path):
            time.sleep(0.05)
        self.ps = psutil.Process(self.popen.pid)
        self.good = self.connect()

    def connect(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(60)
        sock.connect(self.path)
        return sock

    def rss_mb(self) -> float:
        return float(self.ps.memory_info().rss) / 2**20

    def hello(self) -> float:
        started = time.monotonic()
        _request(self.good, {"op": "hello"})
        return time.monotonic() - started

    def watch(self, seconds: float) -> tuple[float, float]:
        """Peak RSS (MB) and slowest hello (s) over ``seconds``."""
        peak = worst = 0.0
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            peak = max(peak, self.rss_mb())
            worst = max(worst, self.hello())
            time.sleep(0.2)
        return peak, worst

    def stop(self) -> str:
        self.popen.terminate()
        _out, err = self.popen.communicate(timeout=120)
        return err


def stuck_out(server: Server, seconds: float) -> tuple[float, float]:
    _request(
        server.good,
        {"op": "run", "session": "s", "agent": "a", "argv": [sys.executable, "-c", FLOOD]},
    )
    stuck = []
    for _ in range(10):
        sock = server.connect()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.sendall(b'{"op":"out","proc":1}\n')
        stuck.append(sock)
    try:
        return server.watch(seconds)
    finally:
        for sock in stuck:
            sock.close()


def half_sent(server: Server, count: int) -> tuple[float, float]:
    half = []
    for _ in range(count):
        try:
            sock = server.connect()
        except OSError:
            continue
        sock.setblocking(False)
        data = b'{"op":"idx","pad":"' + b"x" * (1024 * 1024 - 30)
        sent = 0
        while sent < len(data):
            try:
                sent += sock.send(data[sent : sent + 65536])
            except OSError:
                break
        half.append(sock)
    try:
        return server.watch(8.0)
    finally:
        for sock in half:
            sock.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--half", type=int, default=500)
    args = parser.parse_args()

    # A fresh server per scenario: freed memory is rarely given back to the OS.
    for name, scenario in (
        ("stuck-out", lambda srv: stuck_out(srv, args.seconds)),
        (f"half-sent x{args.half}", lambda srv: half_sent(srv, args.half)),
    ):
        server = Server()
        base_rss, base_hello = server.watch(3.0)
        peak, worst = scenario(server)
        server.good.close()
        err = server.stop()
        print(
            f"{name}: rss {peak:.0f} MB ({peak / base_rss:.1f}x the idle {base_rss:.0f} MB), "
            f"slowest hello {worst * 1000:.1f} ms ({worst / base_hello:.1f}x idle); "
            f"exit {server.popen.returncode}, traceback: {'Traceback' in err}"
        )


if __name__ == "__main__":
    main()
