"""A real `procwindow serve` on a temporary socket, for ctl and protocol tests."""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from procwindow import cli

ROOT = Path(__file__).resolve().parents[2]


def isolated_env(tmp_path: Path, runtime_name: str = "runtime") -> tuple[dict[str, str], Path]:
    """An environment for a ``procwindow`` subprocess with its own runtime and state
    directories under ``tmp_path`` (the runtime one made, 0700), and the runtime dir."""
    runtime = tmp_path / runtime_name
    runtime.mkdir(mode=0o700, exist_ok=True)
    env = dict(
        os.environ,
        XDG_RUNTIME_DIR=str(runtime),
        XDG_STATE_HOME=str(tmp_path / "state"),
        PYTHONPATH=str(ROOT),
    )
    return env, runtime


@dataclass
class Server:
    proc: subprocess.Popen[str]
    path: str
    env: dict[str, str]

    def ctl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """`procwindow ctl --socket PATH ARGS...`, run in this process through the
        command line's ``main(argv)`` (its stdout and stderr captured): the same code
        as the ``procwindow`` command, without an interpreter's start-up per call.
        ``ctl_process`` runs the real command."""
        done = ctl_in_process("--socket", self.path, *args)
        if check and done.returncode != 0:
            raise AssertionError(f"ctl {args} exited {done.returncode}: {done.stderr}")
        return done

    def ctl_process(
        self, *args: str, check: bool = True, timeout: float = 30
    ) -> subprocess.CompletedProcess[str]:
        """Run `procwindow ctl --socket PATH ARGS...` as a separate process."""
        done = subprocess.run(
            [sys.executable, "-m", "procwindow", "ctl", "--socket", self.path, *args],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=timeout,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"ctl {args} exited {done.returncode}: {done.stderr}")
        return done

    def connect(self) -> socket.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(20)
        sock.connect(self.path)
        return sock

    def request(self, message: dict | bytes, sock: socket.socket | None = None) -> dict:
        """Send one request line, return the first reply."""
        own = sock is None
        sock = sock or self.connect()
        try:
            data = message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n"
            sock.sendall(data)
            return read_message(sock)
        finally:
            if own:
                sock.close()


def ctl_in_process(*args: str) -> subprocess.CompletedProcess[str]:
    """``procwindow ctl ARGS...`` through ``procwindow.cli.main``, in this process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(["ctl", *args])
    return subprocess.CompletedProcess(
        ["procwindow", "ctl", *args], status, out.getvalue(), err.getvalue()
    )


def out_result(batch: Any) -> dict:
    """The ``result`` of an ``out`` reply that gives ``batch`` (a ``read()``), as JSON reads it."""
    result = {
        "lines": [
            {
                "seq": ln.seq,
                "stream": ln.stream.value,
                "time": ln.time,
                "text": ln.text,
                **({"split": True} if ln.split else {}),
            }
            for ln in batch.lines
        ],
        "dropped": batch.dropped,
        "cursor": batch.cursor,
        "eof": batch.eof,
    }
    return dict(json.loads(json.dumps(result)))


def read_message(sock: socket.socket) -> dict:
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = sock.recv(1)
        if not chunk:
            raise ConnectionError(f"closed after {buf!r}")
        buf += chunk
    return json.loads(buf)


def start_server(tmp_path: Path, *extra: str) -> Server:
    env, runtime = isolated_env(tmp_path)
    path = str(runtime / "procwindow" / "test.sock")
    if "--socket" in extra:
        path = extra[extra.index("--socket") + 1]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "procwindow",
            "serve",
            "--name",
            "test",
            "--graceful-timeout",
            "1",
            *extra,
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 20
    while True:
        if proc.poll() is not None:
            raise AssertionError(f"serve exited {proc.returncode}: {proc.stderr.read()}")
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                s.connect(path)
            break
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                raise
            time.sleep(0.05)
    return Server(proc, path, env)


def stop_server(server: Server, sig: int = signal.SIGTERM) -> int:
    if server.proc.poll() is None:
        server.proc.send_signal(sig)
    try:
        server.proc.wait(timeout=30)
    finally:
        server.proc.stdout.close()
        server.proc.stderr.close()
    return server.proc.returncode


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    srv = start_server(tmp_path)
    try:
        yield srv
    finally:
        assert stop_server(srv) == 0
