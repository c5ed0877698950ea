"""SIGTERM to the window ends it within the grace plus a margin, exit 0, no traceback,
whoever is connected to its control socket."""

from __future__ import annotations

import json
import signal
import socket
import time
from pathlib import Path

import psutil
import pytest

from procwindow.control import default_socket_path

from ..core.helpers import alive
from ..tiers import scaled
from ..ui.test_app import launch

ROOT = Path(__file__).resolve().parents[2]
MARGIN = scaled(10.0)


def _connect(path: str, timeout: float = 30) -> socket.socket:
    deadline = time.monotonic() + timeout
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(path)
            return sock
        except OSError:
            sock.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _subscribe(path: str) -> socket.socket:
    sock = _connect(path)
    sock.sendall(json.dumps({"op": "events", "pattern": ">", "id": 1}).encode() + b"\n")
    sock.settimeout(30)
    reply = sock.makefile("rb").readline()
    assert json.loads(reply)["ok"] is True
    return sock


@pytest.mark.parametrize("client", ["connected", "left"])
def test_sigterm_with_an_events_client_exits_0_within_the_grace(tmp_path, client):
    stubborn = "trap '' TERM; echo up; exec sleep 300"
    app = launch(tmp_path, "--", "sh", "-c", stubborn)
    sock: socket.socket | None = None
    try:
        sock = _subscribe(default_socket_path("default"))
        if client == "left":
            sock.close()
            sock = None
        sleeper = None
        deadline = time.monotonic() + 30
        while sleeper is None and time.monotonic() < deadline:
            for child in psutil.Process(app.pid).children(recursive=True):
                try:
                    if "sleep 300" in " ".join(child.cmdline()):
                        sleeper = child
                except psutil.Error:
                    continue
            time.sleep(0.05)
        assert sleeper is not None
        started = time.monotonic()
        app.send_signal(signal.SIGTERM)
        _, err = app.communicate(timeout=5.0 + MARGIN)  # the window's default grace is 5 s
        took = time.monotonic() - started
        assert app.returncode == 0, err
        assert "Traceback" not in err and "CancelledError" not in err, err
        assert took < 5.0 + MARGIN
        assert not alive(sleeper.pid)
    finally:
        if sock is not None:
            sock.close()
        if app.poll() is None:
            app.kill()
            app.communicate()


def test_a_second_signal_kills_without_waiting_out_the_grace(tmp_path):
    workspace = tmp_path / "slow.toml"
    workspace.write_text(
        'name = "slow"\n'
        "graceful_timeout = 60\n"
        '[[session]]\nname = "s"\n[[session.agent]]\nname = "a"\n'
        "[[session.agent.command]]\n"
        "shell = \"trap '' TERM; exec sleep 300\"\n"
    )
    app = launch(tmp_path, "up", str(workspace))
    try:
        _connect(default_socket_path("slow")).close()  # up and serving
        app.send_signal(signal.SIGTERM)
        time.sleep(1.0)
        assert app.poll() is None  # waiting out the minute of grace
        started = time.monotonic()
        app.send_signal(signal.SIGTERM)
        _, err = app.communicate(timeout=30)
        assert app.returncode == 0, err
        assert "Traceback" not in err, err
        assert "killing every process now" in err
        assert time.monotonic() - started < 30  # far less than the 60 s grace
    finally:
        if app.poll() is None:
            app.kill()
            app.communicate()
