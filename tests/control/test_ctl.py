"""`procwindow ctl` against a real server, every verb, text and --json."""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

import psutil
import pytest

from ..core.helpers import IGNORES_TERM, IGNORES_TERM_READY, alive
from .conftest import ROOT, start_server, stop_server


def _wait(cond, timeout=15.0):
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.05)


@pytest.mark.promise("From other processes: procwindow ctl")
def test_run_idx_top_out_and_json(server):
    pid1 = server.ctl(
        "run",
        "--session",
        "s1",
        "--agent",
        "a1",
        "--",
        "sh",
        "-c",
        "echo hello; echo oops >&2; exit 3",
    ).stdout
    assert pid1 == "1\n"
    pid2 = server.ctl(
        "run", "--session", "s1", "--agent", "a2", "--tool", "web_fetch", "--", "sleep", "60"
    ).stdout
    assert pid2 == "2\n"
    _wait(lambda: "\t3\t" in server.ctl("idx").stdout)

    idx = server.ctl_process("idx").stdout.splitlines()  # the real command, once
    assert idx[0] == "pid\tstatus\texit_code\ttool\tcmd\tstart_unix\truntime_sec"
    assert idx[1].split("\t")[:5] == ["2", "running", "-1", "web_fetch", "sleep 60"]
    assert idx[2].split("\t")[:5] == [
        "1",
        "exited",
        "3",
        "shell",
        "sh -c 'echo hello; echo oops >&2; exit 3'",
    ]
    assert server.ctl("idx", "--agent", "a2").stdout.count("\n") == 2

    top = server.ctl("top").stdout
    assert top.split("\n")[0].split() == [
        "ID",
        "PID",
        "SCOPE",
        "TOOL",
        "STATUS",
        "EXIT",
        "RUNTIME",
        "COMMAND",
    ]
    assert "3 failed" in top

    procs = json.loads(server.ctl("--json", "idx").stdout)
    assert [(p["id"], p["state"]) for p in procs] == [(2, "running"), (1, "exited")]
    assert procs[1]["exit"] == {
        "code": 3,
        "signal": None,
        "reason": "failed",
        "runtime": procs[1]["exit"]["runtime"],
    }

    out = server.ctl("out", "1")
    assert (out.stdout, out.stderr) == ("hello\n", "oops\n")
    assert server.ctl("out", "1", "--stream", "stderr").stderr == "oops\n"
    lines = [json.loads(x) for x in server.ctl("--json", "out", "1").stdout.splitlines()]
    assert [(x["seq"], x["stream"], x["text"]) for x in lines] in (
        [(1, "stdout", "hello"), (2, "stderr", "oops")],
        [(1, "stderr", "oops"), (2, "stdout", "hello")],
    )
    assert (
        server.ctl("out", "1", "--since", "1").stdout.count("\n")
        + server.ctl("out", "1", "--since", "1").stderr.count("\n")
        == 1
    )

    sessions = server.ctl("sessions").stdout
    assert sessions == "s1  1/2\n  a1  0/1\n  a2  1/1\n"
    assert json.loads(server.ctl("--json", "sessions").stdout)[0]["agents"][1] == {
        "agent": "a2",
        "running": 1,
        "total": 1,
    }


@pytest.mark.promise("From other processes: procwindow ctl")
def test_term_kill_interrupt_dismiss_restart(server):
    server.ctl("run", "--session", "s", "--agent", "a", "--", "sleep", "60")
    server.ctl(
        "run",
        "--session",
        "s",
        "--agent",
        "a",
        "--",
        *IGNORES_TERM,
    )
    server.ctl("run", "--session", "s", "--agent", "a", "--", "sleep", "60")
    _wait(lambda: server.ctl("out", "2").stdout == f"{IGNORES_TERM_READY}\n")

    # The real command, once for the actions.
    assert server.ctl_process("term", "1").stdout.startswith("1: exited 143 (terminated) after ")
    term2 = json.loads(server.ctl("--json", "term", "2").stdout)
    assert (term2["code"], term2["signal"], term2["reason"]) == (137, 9, "escalated")
    intr = server.ctl("interrupt", "3")
    assert intr.stdout == "3: SIGINT sent\n"
    _wait(lambda: "exited" in server.ctl("idx").stdout.splitlines()[1])
    assert server.ctl("interrupt", "3").stdout == "3: already exited\n"

    again = server.ctl("restart", "1").stdout
    assert again == "4\n"
    assert json.loads(server.ctl("--json", "kill", "4").stdout)["reason"] == "killed"

    assert server.ctl("dismiss", "1").stdout == "1: dismissed\n"
    assert json.loads(server.ctl("--json", "dismiss", "2").stdout) == {}
    assert [row.split("\t")[0] for row in server.ctl("idx").stdout.splitlines()[1:]] == ["4", "3"]


@pytest.mark.promise("From other processes: procwindow ctl")
def test_show_wait_and_ports(server):
    listener = (
        "import socket, time; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen();"
        " print(s.getsockname()[1], flush=True); time.sleep(60)"
    )
    server.ctl("run", "--session", "s", "--agent", "a", "--", sys.executable, "-c", listener)
    server.ctl("run", "--session", "s", "--agent", "a", "--shell", "sleep 0.3; exit 7")
    _wait(lambda: server.ctl("out", "1").stdout.strip().isdigit())
    port = int(server.ctl("out", "1").stdout)
    os_pid = json.loads(server.ctl("--json", "show", "1").stdout)["os_pid"]

    assert server.ctl("ports", "1").stdout == f"{port}\t127.0.0.1\t{os_pid}\n"
    assert json.loads(server.ctl("ports", "1", "--json").stdout) == [
        {"port": port, "host": "127.0.0.1", "os_pid": os_pid}
    ]
    shown = dict(line.split(None, 1) for line in server.ctl("show", "1").stdout.splitlines())
    assert (shown["id"], shown["pid"], shown["state"]) == ("1", str(os_pid), "running")
    assert shown["scope"] == "s/a (shell)" and shown["exit"] == "-"

    # wait exits with the process's status; 124 when its time runs out
    late = server.ctl("wait", "1", "--timeout", "0.2", check=False)
    assert (late.returncode, late.stdout) == (124, "")
    assert late.stderr.startswith("procwindow ctl: Timeout: ")
    done = server.ctl_process("wait", "2", check=False)  # the real command, once
    assert done.returncode == 7
    assert done.stdout.startswith("2: exited 7 (failed) after ")
    assert server.ctl("wait", "2", check=False).returncode == 7  # at once, once exited
    server.ctl("kill", "1")
    assert server.ctl("ports", "1").stdout == ""
    assert "exited 137 (killed)" in server.ctl("show", "1").stdout
    missing = server.ctl("show", "99", check=False)
    assert (missing.returncode, missing.stdout) == (1, "")
    assert missing.stderr.count("\n") == 1 and "99" in missing.stderr


def test_tree_and_signal_reach_one_process(server):
    family = "sleep 600 & sleep 601 & echo $! ; wait"
    server.ctl("run", "--session", "s", "--agent", "a", "--shell", family)
    _wait(lambda: server.ctl("out", "1").stdout.strip().isdigit())
    second = int(server.ctl("out", "1").stdout)
    shell = json.loads(server.ctl("--json", "show", "1").stdout)["os_pid"]
    # The three, each with its own command (a child just forked shows its parent's).
    tree_commands = lambda: sorted(  # noqa: E731
        t["command"] for t in json.loads(server.ctl("tree", "1", "--json").stdout)
    )
    _wait(lambda: tree_commands() == ["/bin/sh -c " + family, "sleep 600", "sleep 601"])
    rows = server.ctl("tree", "1").stdout.splitlines()
    assert rows[0].split() == ["PID", "PPID", "STATE", "CPU%", "MEM", "THREADS", "COMMAND"]
    assert rows[1].split()[0] == str(shell) and rows[1].endswith("sh -c " + family)
    children = {int(r.split()[0]): r for r in rows[2:]}
    assert children[second].split()[1] == str(shell)
    assert children[second].endswith("    sleep 601")  # indented under its parent
    tree = json.loads(server.ctl("tree", "1", "--json").stdout)
    assert (tree[0]["os_pid"], tree[0]["depth"]) == (shell, 0)

    sent = server.ctl("signal", "1", "term", "--pid", str(second))
    assert sent.stdout == f"1: SIGTERM sent to pid {second}\n"
    _wait(lambda: not alive(second))
    assert json.loads(server.ctl("--json", "show", "1").stdout)["state"] == "running"
    stranger = server.ctl("signal", "1", "KILL", "--pid", str(os.getpid()), check=False)
    assert (stranger.returncode, stranger.stdout) == (
        1,
        f"1: SIGKILL not sent: pid {os.getpid()} is not in its tree\n",
    )
    assert json.loads(server.ctl("signal", "1", "0", "--json").stdout) == {"sent": True}
    assert server.ctl("signal", "1", "9").stdout == "1: SIGKILL sent to its process group\n"
    _wait(lambda: "exited 137 (terminated)" in server.ctl("show", "1").stdout)
    # Its sleeps, killed with it, are gone once reaped.
    _wait(lambda: server.ctl("tree", "1").stdout == "1: no process left\n")
    gone = server.ctl("signal", "1", "TERM", check=False)
    assert (gone.returncode, gone.stdout) == (1, "1: SIGTERM not sent: it has exited\n")


def test_out_follow_until_eof(server):
    server.ctl(
        "run",
        "--session",
        "s",
        "--agent",
        "a",
        "--",
        sys.executable,
        "-c",
        "import time\nfor i in range(20):\n    print(i, flush=True)\n    time.sleep(0.02)",
    )
    follow = server.ctl("out", "1", "--follow")
    assert follow.stdout.split() == [str(i) for i in range(20)]
    ends = [json.loads(x) for x in server.ctl("--json", "out", "1", "--follow").stdout.splitlines()]
    assert ends[-1]["end"]["eof"] is True
    assert ends[-1]["end"]["exit"]["code"] == 0


def watching(server, watcher: subprocess.Popen[str], session: str) -> None:
    """Start probes (agent "probe") in the watched session until ``watcher``
    prints an event: from then on it sees every event. (A fixed sleep is not
    enough on a busy machine: ``ctl events`` imports, connects, subscribes.)"""
    assert watcher.stdout is not None
    end = time.monotonic() + 30
    while not select.select([watcher.stdout], [], [], 0.5)[0]:
        assert time.monotonic() < end, "the watcher never subscribed"
        server.ctl("run", "--session", session, "--agent", "probe", "--", "true")


def next_line(watcher: subprocess.Popen[str]) -> str:
    """The watcher's next line that is not about a probe."""
    assert watcher.stdout is not None
    while "probe" in (line := watcher.stdout.readline()):
        pass
    return line


def test_events_stream(server):
    watcher = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "procwindow",
            "ctl",
            "--socket",
            server.path,
            "--json",
            "events",
            "session.s.agent.*.proc.>",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=server.env,
    )
    try:
        watching(server, watcher, "s")
        ran = server.ctl("run", "--session", "s", "--agent", "a", "--", "sh", "-c", "echo hi")
        server.ctl("run", "--session", "other", "--agent", "a", "--", "true")
        events = [json.loads(next_line(watcher)) for _ in range(3)]
        kinds = sorted(ev["kind"] for ev in events)
        assert kinds == ["exit", "output", "start"]
        assert all(ev["session"] == "s" and ev["proc"] == int(ran.stdout) for ev in events)
    finally:
        watcher.send_signal(signal.SIGINT)
        watcher.wait(timeout=10)
        watcher.stdout.close()
    human = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "procwindow",
            "ctl",
            "--socket",
            server.path,
            "events",
            "session.*.agent.*.proc.exit",
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=server.env,
    )
    try:
        watching(server, human, "s")
        ran = server.ctl("run", "--session", "s", "--agent", "b", "--", "sh", "-c", "exit 4")
        line = next_line(human)
        assert line.startswith(f"session.s.agent.b.proc.exit proc={int(ran.stdout)} ")
        assert " code=4 " in line
        assert 'reason="failed"' in line
    finally:
        human.send_signal(signal.SIGINT)
        human.wait(timeout=10)
        human.stdout.close()


@pytest.mark.promise("From other processes: procwindow ctl")
def test_exit_codes_for_scripts(server, tmp_path):
    bad = server.ctl("term", "99", check=False)
    assert bad.returncode == 1
    assert "ProcNotFound: no such proc: 99" in bad.stderr
    missing = server.ctl(
        "run", "--session", "s", "--agent", "a", "--", "nmp", "install", check=False
    )
    assert missing.returncode == 1
    assert "CommandNotFound" in missing.stderr
    assert "'nmp'" in missing.stderr
    usage = server.ctl("frobnicate", check=False)
    assert usage.returncode == 2
    no_cmd = server.ctl("run", "--session", "s", "--agent", "a", check=False)
    assert no_cmd.returncode == 2
    assert "needs a command" in no_cmd.stderr
    gone = subprocess.run(
        [sys.executable, "-m", "procwindow", "ctl", "--socket", str(tmp_path / "none.sock"), "idx"],
        capture_output=True,
        text=True,
        env=server.env,
    )
    assert gone.returncode == 3
    assert "cannot connect" in gone.stderr
    running = server.ctl(
        "run", "--session", "s", "--agent", "a", "--", "sleep", "60"
    ).stdout.strip()
    refused = server.ctl("dismiss", running, check=False)
    assert refused.returncode == 1
    assert "ProcRunning" in refused.stderr
    assert server.ctl("idx").returncode == 0  # the server carries on


def test_socket_and_directory_are_private(server):
    folder = os.path.dirname(server.path)
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(server.path).st_mode) == 0o600
    assert stat.S_ISSOCK(os.stat(server.path).st_mode)
    assert not server.path.startswith("\0")


NOBODY = 65534
CLIENT = """
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
try:
    s.connect(sys.argv[1])
except OSError as exc:
    print("connect-failed", exc.errno)
    raise SystemExit(0)
try:
    s.sendall(b'{"op": "idx"}\\n')
except BrokenPipeError:
    pass  # refused at once: the reason is already waiting to be read
print(s.makefile().readline().strip())
"""


def _as_nobody(path: str) -> str:
    if os.geteuid() != 0 or not os.path.exists("/usr/bin/python3"):
        pytest.skip("needs root (to run a client as another uid) and /usr/bin/python3")
    done = subprocess.run(
        ["/usr/bin/python3", "-c", CLIENT, path],
        capture_output=True,
        text=True,
        user=NOBODY,
        group=NOBODY,
        timeout=30,
        cwd="/",
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_other_uid_cannot_reach_the_socket(server):
    assert _as_nobody(server.path).startswith("connect-failed 13")  # EACCES: the 0700 directory


def test_other_uid_is_refused_by_peer_credentials(tmp_path):
    # Outside pytest's private tmp tree, so that the permissions can be opened on
    # purpose below, to reach the SO_PEERCRED check behind them.
    folder = tempfile.mkdtemp(prefix="procwindow-peer-")
    srv = start_server(tmp_path, "--socket", os.path.join(folder, "s.sock"))
    try:
        srv.path = os.path.join(folder, "s.sock")
        os.chmod(folder, 0o711)
        os.chmod(srv.path, 0o666)
        reply = json.loads(_as_nobody(srv.path))
        assert reply["ok"] is False
        assert reply["error"]["code"] == "forbidden"
        assert "uid 65534" in reply["error"]["message"]
        os.chmod(folder, 0o700)
        assert srv.ctl("idx").returncode == 0
    finally:
        assert stop_server(srv) == 0
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_serve_stops_children_and_exits_0(tmp_path, sig):
    srv = start_server(tmp_path)
    srv.ctl("run", "--session", "s", "--agent", "a", "--", "sleep", "60")
    srv.ctl(
        "run",
        "--session",
        "s",
        "--agent",
        "a",
        "--",
        *IGNORES_TERM,
    )
    srv.ctl("run", "--session", "s", "--agent", "b", "--", "sh", "-c", "setsid sleep 60 & sleep 60")
    _wait(lambda: srv.ctl("out", "2").stdout == f"{IGNORES_TERM_READY}\n")
    tree = psutil.Process(srv.proc.pid).children(recursive=True)
    assert len(tree) >= 5
    assert stop_server(srv, sig) == 0
    _gone, alive = psutil.wait_procs(tree, timeout=5)
    assert alive == []
    assert not os.path.exists(srv.path)


def test_workspace_serve_and_malformed_workspace(tmp_path):
    good = tmp_path / "ws.toml"
    (tmp_path / "work").mkdir()
    good.write_text(
        'name = "ignored-when-name-given"\n'
        '[[session]]\nname = "web"\n'
        '[[session.agent]]\nname = "front"\n'
        '[[session.agent.command]]\nargv = ["sh", "-c", "pwd; echo $GREETING; sleep 60"]\n'
        'cwd = "work"\nenv = { GREETING = "hi" }\ntool = "dev"\n'
        '[[session.agent]]\nname = "idle"\n'
    )
    srv = start_server(tmp_path, str(good))
    try:
        _wait(lambda: srv.ctl("out", "1").stdout == f"{tmp_path / 'work'}\nhi\n")
        assert srv.ctl("idx").stdout.splitlines()[1].split("\t")[3] == "dev"
        assert srv.ctl("sessions").stdout == "web  1/1\n  front  1/1\n  idle  0/0\n"
    finally:
        assert stop_server(srv) == 0

    bad = tmp_path / "bad.toml"
    bad.write_text(
        '[[session]]\nname = "web"\n[[session.agent]]\nname = "front"\n'
        '[[session.agent.command]]\nargv = ["true"]\n'
        '[[session.agent.command]]\nargv = ["nmp", "install"]\n'
    )
    runtime = tmp_path / "rt2"
    runtime.mkdir(mode=0o700)
    done = subprocess.run(
        [sys.executable, "-m", "procwindow", "serve", str(bad)],
        capture_output=True,
        text=True,
        timeout=30,
        env=dict(os.environ, XDG_RUNTIME_DIR=str(runtime), PYTHONPATH=str(ROOT)),
    )
    assert done.returncode == 1
    assert f"{bad}:8: session[0].agent[0].command[1].argv: command not found: 'nmp'" in done.stderr
    assert not (runtime / "procwindow" / "default.sock").exists()  # nothing started


@pytest.mark.promise("The window")
def test_a_command_given_while_a_window_is_open_is_handed_to_it(tmp_path):
    """``procwindow -- CMD`` with a window (or server) on the default socket runs CMD
    there, in this directory and environment, instead of opening a second one."""
    socket_path = tmp_path / "runtime" / "procwindow" / "default.sock"  # the default name's
    socket_path.parent.mkdir(mode=0o700, parents=True)
    server = start_server(tmp_path, "--socket", str(socket_path))
    try:
        work = tmp_path / "work"
        work.mkdir()
        env = {**server.env, "HANDED_OVER": "yes"}
        done = subprocess.run(
            [sys.executable, "-m", "procwindow", "--", "sh", "-c", 'echo "$HANDED_OVER in $PWD"'],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert "handed to the window already open on" in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
        proc = done.stderr.split("process ")[1].split()[0]
        assert server.ctl("wait", proc, "--timeout", "10").returncode == 0
        assert server.ctl("out", proc).stdout == f"yes in {work}\n"
    finally:
        assert stop_server(server) == 0
