"""Workspaces through the control socket: ``ctl up`` / ``down`` / ``workspaces``,
waiting and skipped commands in ``idx`` and ``top``, phase events, a term that
ends a crash loop, and ``serve FILE`` stopping dependents first."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ..tiers import scaled
from .conftest import isolated_env, read_message, start_server, stop_server


def _wait(cond, timeout=20.0, what="condition"):
    end = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.05)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def toml_str(text: str) -> str:
    return json.dumps(text)  # a JSON string is a TOML basic string


def command(name: str, code: str, **keys: str) -> str:
    """A [[session.agent.command]] running ``python -c code``; ``keys`` are TOML values."""
    lines = [
        "[[session.agent.command]]",
        f"name = {toml_str(name)}",
        f"argv = [{toml_str(sys.executable)}, '-c', {toml_str(code)}]",
    ]
    lines += [f"{key} = {value}" for key, value in keys.items()]
    return "\n".join(lines) + "\n"


def listen_code(port: int, delay: float) -> str:
    return (
        "import socket, time\n"
        f"time.sleep({delay})\n"
        "s = socket.socket()\n"
        "s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
        f"s.bind(('127.0.0.1', {port}))\n"
        "s.listen(16)\n"
        "print('listening', flush=True)\n"
        "time.sleep(60)\n"
    )


def on_term_code(name: str, log: Path) -> str:
    return (
        "import signal, sys, time\n"
        "def bye(*_):\n"
        f"    open({str(log)!r}, 'a').write({name!r} + ' ' + repr(time.time()) + '\\n')\n"
        "    time.sleep(0.2)\n"
        "    sys.exit(0)\n"
        "signal.signal(signal.SIGTERM, bye)\n"
        "print('up', flush=True)\n"
        "while True:\n"
        "    time.sleep(1)\n"
    )


HEAD = '[[session]]\nname = "stack"\n[[session.agent]]\nname = "dev"\n'


def stack_file(tmp_path: Path, port: int) -> Path:
    path = tmp_path / "stack.toml"
    path.write_text(
        'name = "stack"\n'
        + HEAD
        + command("db", listen_code(port, 2.0), ready=f"{{ port = {port}, interval = 0.05 }}")
        + command("api", "import time; time.sleep(60)", depends_on='{ db = "ready" }')
        + command("migrate", "import sys; sys.exit(3)")
        + command(
            "report",
            "print('never')",
            depends_on='{ migrate = "completed_successfully" }',
        )
    )
    return path


@pytest.mark.promise("Workspaces")
@pytest.mark.promise("Workspaces: name")
def test_up_shows_waiting_and_skipped_commands_then_down_stops_in_order(server, tmp_path):
    port = free_port()
    ws_file = stack_file(tmp_path, port)
    up = server.ctl_process("up", str(ws_file)).stdout  # the real command, once
    assert "stack/api" in up and "waiting for db (ready)" in up
    assert up.splitlines()[0].split() == [
        "COMMAND",
        "SCOPE",
        "STATE",
        "RESTARTS",
        "PROC",
        "DEPENDS",
        "ON",
    ]

    # Not started yet: a row of its own in idx (pid "-"), the reason in top.
    def skipped_and_waiting():
        text = server.request({"op": "idx"})["result"]["text"]
        return "\tskipped\t" in text and "\twaiting\t" in text and text

    idx = _wait(skipped_and_waiting, what="api waiting and report skipped")
    rows = [row.split("\t") for row in idx.splitlines()[1:]]
    waiting = [r for r in rows if r[1] == "waiting"]
    assert len(waiting) == 1 and waiting[0][0] == "-" and waiting[0][2] == "-1"
    assert waiting[0][5] == "-" and waiting[0][6] == "0.0"
    top = server.ctl("top").stdout
    assert "skipped: migrate did not complete successfully: it exited with code 3" in top
    reply = server.request({"op": "idx", "session": "stack"})["result"]
    report = next(c for c in reply["commands"] if c["name"] == "report")
    assert report["phase"] == "skipped" and report["proc"] is None
    assert report["depends_on"] == [["migrate", "completed_successfully"]]

    # Once the db listens, the api starts.
    def api_running():
        runs = json.loads(server.ctl("workspaces", "--json").stdout)
        states = {c["name"]: c for c in runs[0]["commands"]}
        return states["api"]["phase"] == "running" and states

    states = _wait(api_running, what="api running")
    assert states["db"]["phase"] == "ready"
    assert server.ctl("sessions").stdout.splitlines()[:2] == ["stack  2/3", "  dev  2/3"]

    again = server.ctl("up", str(ws_file), check=False)
    assert again.returncode == 1
    assert again.stderr.strip().endswith(
        "workspace 'stack' is up already (stop it first: ctl down stack)"
    )

    part = server.ctl("down", "stack", "api").stdout
    assert part == "stack: stopped api\n"
    states = {
        c["name"]: c for c in json.loads(server.ctl("workspaces", "--json").stdout)[0]["commands"]
    }
    assert states["api"]["phase"] == "stopped" and states["db"]["phase"] == "ready"

    missing = server.ctl("down", "nope", check=False)
    assert missing.returncode == 1
    assert (
        missing.stderr.count("\n") == 1
        and "no workspace named 'nope' (up: stack)" in missing.stderr
    )

    down = json.loads(server.ctl("down", "--json").stdout)
    assert down["workspaces"] == ["stack"]
    assert [name for _ws, name in down["stopped"]][-1] == "db"
    assert json.loads(server.ctl("workspaces", "--json").stdout) == []
    nothing = server.ctl("down")
    assert nothing.stdout == "" and "no workspace is up" in nothing.stderr


def test_a_bad_file_is_refused_whole_in_one_line(server, tmp_path):
    bad = tmp_path / "cycle.toml"
    bad.write_text(
        HEAD
        + command("a", "print(1)", depends_on='["b"]')
        + command("b", "print(1)", depends_on='{ a = "started" }')
    )
    done = server.ctl("up", str(bad), check=False)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1
    assert f"{bad}:8: session[0].agent[0].command[0].depends_on[0]:" in done.stderr
    assert "a dependency cycle: a -> b -> a" in done.stderr
    assert "Traceback" not in done.stderr
    assert server.request({"op": "procs"})["result"] == []

    missing = server.ctl("up", str(tmp_path / "none.toml"), check=False)
    assert missing.returncode == 1 and "cannot open" in missing.stderr
    reply = server.request({"op": "up", "path": ""})
    assert reply["error"]["code"] == "bad-field"
    reply = server.request({"op": "down", "commands": ["a"]})
    assert reply["error"]["code"] == "bad-field"


def test_phase_events_and_term_ends_a_crash_loop(server, tmp_path):
    ws_file = tmp_path / "loop.toml"
    ws_file.write_text(
        HEAD
        + command(
            "crash",
            "import sys, time; time.sleep(0.3); sys.exit(1)",
            restart='"always"',
            backoff="{ initial = 5, cap = 5 }",
        )
    )
    with server.connect() as sock:
        sock.sendall(b'{"op": "events", "pattern": "session.*.agent.*.proc.phase"}\n')
        assert read_message(sock)["ok"] is True
        server.ctl("up", str(ws_file))
        while True:
            ev = read_message(sock)["event"]
            assert ev["kind"] == "phase" and ev["command"] == "crash"
            if ev["phase"] == "restarting":
                break
        assert ev["workspace"] == "loop" and ev["restarts"] == 1
        assert ev["detail"] == "it exited with code 1 (failed)"
        # The attempt is announced for 5 s after the event (its own time, not ours:
        # how late this test reads the event depends on the machine's load).
        assert 4.5 < ev["next_attempt_at"] - ev["time"] <= 5.0
        proc = ev["proc"]
        # The person stops its last run: the loop ends there.
        assert "exited 1 (failed)" in server.ctl("term", str(proc)).stdout
        ev = read_message(sock)["event"]
        assert ev["phase"] == "stopped" and ev["proc"] == proc
        assert ev["detail"].startswith("restart cancelled")
    state = json.loads(server.ctl("workspaces", "--json").stdout)[0]["commands"][0]
    assert state["phase"] == "stopped" and state["runs"] == [proc]


@pytest.mark.promise("Workspaces: Shutdown")
def test_serve_file_stops_dependents_first_within_the_grace(tmp_path):
    log = tmp_path / "terms.log"
    ws_file = tmp_path / "chain.toml"
    ws_file.write_text(
        'name = "chain"\ngraceful_timeout = 2\n'
        + HEAD
        + command("db", on_term_code("db", log), ready='"up"')
        + command("api", on_term_code("api", log), ready='"up"', depends_on='{ db = "ready" }')
        + command("web", on_term_code("web", log), ready='"up"', depends_on='{ api = "ready" }')
    )
    srv = start_server(tmp_path, str(ws_file))
    try:

        def web_ready():
            reply = srv.request({"op": "workspaces"})["result"]
            return reply and reply[0]["commands"][2]["phase"] == "ready"

        _wait(web_ready, what="web ready")
    finally:
        started = time.monotonic()
        assert stop_server(srv) == 0
        took = time.monotonic() - started
    names = [line.split()[0] for line in log.read_text().splitlines()]
    assert names == ["web", "api", "db"]
    assert took < 3 * (2 + 1) + scaled(5)


def test_up_when_no_server_answers_is_exit_3(tmp_path):
    env, _runtime = isolated_env(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "procwindow", "ctl", "--name", "nobody", "up", "x.toml"],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    assert done.returncode == 3
    assert done.stderr.count("\n") == 1


def test_a_second_signal_during_an_ordered_stop_kills_at_once(tmp_path):
    ws_file = tmp_path / "stuck.toml"
    ws_file.write_text(
        'name = "stuck"\ngraceful_timeout = 60\n'
        + HEAD
        + command("db", "import time; print('up', flush=True); time.sleep(300)", ready='"up"')
        + command(
            "api",
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN);"
            " print('up', flush=True); time.sleep(300)",
            depends_on='{ db = "ready" }',
            ready='"up"',
        )
    )
    srv = start_server(tmp_path, str(ws_file))
    try:
        _wait(
            lambda: (
                srv.request({"op": "workspaces"})["result"][0]["commands"][1]["phase"] == "ready"
            ),
            what="api ready",
        )
        srv.proc.send_signal(signal.SIGTERM)
        time.sleep(1.0)
        assert srv.proc.poll() is None  # api has a minute of grace, db waits for it
        started = time.monotonic()
    finally:
        assert stop_server(srv) == 0
    assert time.monotonic() - started < scaled(20)


def test_up_file_goes_to_the_server_of_the_files_name(tmp_path):
    """`serve` names its socket after the workspace (`name = "demo1"`); `ctl up FILE`
    without --name goes there too (it went to 'default' and could not connect)."""
    env, runtime = isolated_env(tmp_path)
    serve = subprocess.Popen(
        [sys.executable, "-m", "procwindow", "serve", "--name", "demo1"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        sock = runtime / "procwindow" / "demo1.sock"
        deadline = time.monotonic() + scaled(30)
        while not sock.exists():
            assert time.monotonic() < deadline and serve.poll() is None, "serve did not start"
            time.sleep(0.05)
        ws_file = tmp_path / "demo1.toml"
        ws_file.write_text('name = "demo1"\n' + HEAD + command("hi", "print('hi')"))

        def up(path: Path) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "procwindow", "ctl", "up", str(path)],
                capture_output=True,
                text=True,
                env=env,
                timeout=60,
            )

        done = up(ws_file)
        assert done.returncode == 0, done.stderr
        assert "hi" in done.stdout
        # A broken file is refused here, in one line, before any server is asked.
        bad = tmp_path / "bad.toml"
        bad.write_text("name = [\n")
        refused = up(bad)
        assert refused.returncode == 1 and refused.stderr.count("\n") == 1, refused.stderr
        assert str(bad) in refused.stderr and "Traceback" not in refused.stderr
    finally:
        serve.terminate()
        assert serve.wait(timeout=30) == 0, serve.stderr.read() if serve.stderr else ""
        if serve.stderr:
            serve.stderr.close()


STACK = """
name = "pick"
[[session]]
name = "s"
[[session.agent]]
name = "a"
[[session.agent.command]]
name = "db"
argv = ["sleep", "60"]
[[session.agent.command]]
name = "api"
argv = ["sleep", "60"]
depends_on = ["db"]
[[session.agent.command]]
name = "web"
argv = ["sleep", "60"]
depends_on = ["api"]
[[session.agent.command]]
name = "worker"
argv = ["sleep", "60"]
"""


@pytest.mark.promise("Workspaces")
def test_up_named_commands_starts_them_with_their_dependencies_or_alone(server, tmp_path):
    path = tmp_path / "stack.toml"
    path.write_text(STACK)

    def started() -> set[str]:
        runs = json.loads(server.ctl("--json", "workspaces").stdout)
        return {c["name"] for run in runs for c in run["commands"] if c["proc"] is not None}

    up = json.loads(server.ctl("--json", "up", str(path), "api").stdout)
    assert [c["name"] for c in up["commands"]] == ["db", "api"]
    assert _wait(lambda: started() == {"db", "api"}, what="db and api")
    server.ctl("down", "pick")
    up = json.loads(server.ctl("--json", "up", str(path), "web", "--no-deps").stdout)
    assert [c["name"] for c in up["commands"]] == ["web"]
    assert _wait(lambda: started() == {"web"}, what="web alone")  # not waiting for api
    server.ctl("down", "pick")
    bad = server.ctl("up", str(path), "nope", check=False)
    assert bad.returncode != 0 and len(bad.stderr.strip().splitlines()) == 1
    assert "nope" in bad.stderr and "db" in bad.stderr  # it names what the file has
    # serve FILE COMMAND… does the same
    env, _ = isolated_env(tmp_path, "serve-pick")
    serve = subprocess.Popen(
        [sys.executable, "-m", "procwindow", "serve", str(path), "worker", "api", "--no-deps"],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert serve.stderr is not None
        assert "serving on" in serve.stderr.readline()
        sock = _wait(lambda: next(Path(env["XDG_RUNTIME_DIR"]).rglob("pick.sock"), None))
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "procwindow",
                "ctl",
                "--socket",
                str(sock),
                "--json",
                "workspaces",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        names = [c["name"] for run in json.loads(done.stdout) for c in run["commands"]]
        assert sorted(names) == ["api", "worker"]
    finally:
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(timeout=30) == 0
        serve.stderr.close()


@pytest.mark.promise("Workspaces: restart")
def test_history_links_a_command_s_runs(server, tmp_path):
    ws_file = tmp_path / "loop.toml"
    ws_file.write_text(
        HEAD
        + command(
            "crash",
            "import sys; sys.exit(1)",
            restart='"on-failure"',
            # factor 1: 0.1 s each time; cap 60: no run is long enough to start a new loop
            backoff="{ initial = 0.1, factor = 1, cap = 60 }",
            max_restarts="1",
        )
    )
    server.ctl("up", str(ws_file))
    deadline = time.monotonic() + scaled(30)
    while True:
        (state,) = json.loads(server.ctl("workspaces", "--json").stdout)[0]["commands"]
        if state["phase"] == "failed":
            break
        assert time.monotonic() < deadline, state
        time.sleep(0.05)
    first, second = state["runs"]
    procs = {p["id"]: p for p in json.loads(server.ctl("history", "--json").stdout)}
    assert procs[first]["command_run"] == {
        "workspace": "loop",
        "command": "crash",
        "restart_of": None,
    }
    assert procs[second]["command_run"] == {
        "workspace": "loop",
        "command": "crash",
        "restart_of": first,
    }
    table = server.ctl("history").stdout
    assert f"[loop/crash, restart of {first}] " in table
    assert "[loop/crash] " in table
