"""The workspace file's orchestration keys: names, depends_on, ready, liveness,
restart, backoff and max_restarts. Every mistake is one line naming file, line
and key, and nothing starts."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from procwindow import Backoff, Condition, Dependency, Liveness, Ready, RestartPolicy
from procwindow.control.workspace import WorkspaceError, load_workspace, parse_workspace

from .conftest import isolated_env

HEAD = '[[session]]\nname = "s"\n[[session.agent]]\nname = "a"\n'  # lines 1-4


def cmd(body: str) -> str:
    return "[[session.agent.command]]\n" + body


C0 = "session[0].agent[0].command[0]"
C1 = "session[0].agent[0].command[1]"

# (text, line, key, part of the message)
BAD: dict[str, tuple[str, int, str, str]] = {
    "cycle": (
        HEAD
        + cmd('name = "db"\nargv = ["true"]\ndepends_on = ["web"]\n')
        + cmd('name = "api"\nargv = ["true"]\ndepends_on = { db = "started" }\n')
        + cmd('name = "web"\nargv = ["true"]\ndepends_on = { api = "started" }\n'),
        8,
        f"{C0}.depends_on[0]",
        "a dependency cycle: db -> web -> api -> db",
    ),
    "unknown-name": (
        HEAD
        + cmd('name = "db"\nargv = ["true"]\n')
        + cmd('name = "api"\nargv = ["true"]\ndepends_on = { dbx = "started" }\n'),
        11,
        f"{C1}.depends_on.dbx",
        "'api' depends on 'dbx', which is no command of this workspace (did you mean 'db'?)",
    ),
    "unknown-in-list": (
        HEAD + cmd('argv = ["true"]\ndepends_on = ["db", "nope"]\n'),
        7,
        f"{C0}.depends_on[0]",
        "'a' depends on 'db', which is no command",
    ),
    "itself": (
        HEAD + cmd('name = "db"\nargv = ["true"]\ndepends_on = ["db"]\n'),
        8,
        f"{C0}.depends_on[0]",
        "'db' depends on itself",
    ),
    "ready-of-unchecked": (
        HEAD
        + cmd('name = "db"\nargv = ["true"]\n')
        + cmd('argv = ["true"]\ndepends_on = { db = "ready" }\n'),
        10,
        f"{C1}.depends_on.db",
        "'db' has no ready check",
    ),
    "compose-condition": (
        HEAD + cmd('argv = ["true"]\ndepends_on = { db = "service_healthy" }\n'),
        7,
        f"{C0}.depends_on.db",
        "got 'service_healthy' ('service_healthy' is 'ready' here)",
    ),
    "condition-int": (
        HEAD + cmd('argv = ["true"]\ndepends_on = { db = 1 }\n'),
        7,
        f"{C0}.depends_on.db",
        "must be a condition",
    ),
    "depends-string": (
        HEAD + cmd('argv = ["true"]\ndepends_on = "db"\n'),
        7,
        f"{C0}.depends_on",
        "an array of command names, got a string",
    ),
    "depends-twice": (
        HEAD + cmd('argv = ["true"]\ndepends_on = ["x", "x"]\n'),
        7,
        f"{C0}.depends_on[1]",
        "names 'x' twice",
    ),
    "name-twice": (
        HEAD + cmd('name = "db"\nargv = ["true"]\n') + cmd('name = "db"\nargv = ["true"]\n'),
        9,
        f"{C1}.name",
        "two commands are named 'db'",
    ),
    "name-blank": (
        HEAD + cmd('name = "d b"\nargv = ["true"]\n'),
        6,
        f"{C0}.name",
        "command name 'd b' contains ' '",
    ),
    "name-int": (HEAD + cmd('name = 1\nargv = ["true"]\n'), 6, f"{C0}.name", "must be a string"),
    "restart-compose": (
        HEAD + cmd('argv = ["true"]\nrestart = "unless-stopped"\n'),
        7,
        f"{C0}.restart",
        "got 'unless-stopped' (write 'always')",
    ),
    "restart-bool": (
        HEAD + cmd('argv = ["true"]\nrestart = false\n'),
        7,
        f"{C0}.restart",
        "got a boolean",
    ),
    "backoff-cap": (
        HEAD + cmd('argv = ["true"]\nbackoff = { initial = 2, cap = 1 }\n'),
        7,
        f"{C0}.backoff.cap",
        "must be between 2 and 3600, got 1",
    ),
    "backoff-fast": (
        HEAD + cmd('argv = ["true"]\nbackoff = { initial = 0 }\n'),
        7,
        f"{C0}.backoff.initial",
        "must be between 0.1 and 3600",
    ),
    "backoff-key": (
        HEAD + cmd('argv = ["true"]\nbackoff = { start = 2 }\n'),
        7,
        f"{C0}.backoff.start",
        "unknown key",
    ),
    "max-restarts": (
        HEAD + cmd('argv = ["true"]\nmax_restarts = -1\n'),
        7,
        f"{C0}.max_restarts",
        "must be between 0 and 10,000",
    ),
    "ready-two-kinds": (
        HEAD + cmd('argv = ["true"]\nready = { port = 1, line = "x" }\n'),
        7,
        f"{C0}.ready",
        "exactly one of line, port, command, shell or http",
    ),
    "ready-port": (
        HEAD + cmd('argv = ["true"]\nready = { port = 70000 }\n'),
        7,
        f"{C0}.ready.port",
        "1-65535",
    ),
    "ready-regex": (
        HEAD + cmd('argv = ["true"]\nready = "(unclosed"\n'),
        7,
        f"{C0}.ready.line",
        "invalid pattern",
    ),
    "ready-foreign-key": (
        HEAD + cmd('argv = ["true"]\nready = { port = 5, regex = true }\n'),
        7,
        f"{C0}.ready.regex",
        "a port check takes no 'regex'",
    ),
    "ready-program": (
        HEAD + cmd('argv = ["true"]\nready = { command = ["nmp", "test"] }\n'),
        7,
        f"{C0}.ready.command",
        "nmp",
    ),
    "ready-timeout": (
        HEAD + cmd('argv = ["true"]\nready = { port = 5, timeout = -1 }\n'),
        7,
        f"{C0}.ready.timeout",
        "positive number of seconds",
    ),
    "liveness-period": (
        HEAD + cmd('argv = ["true"]\n[session.agent.command.liveness]\nport = 5\nperiod = 0\n'),
        9,
        f"{C0}.liveness.period",
        "must be between 0.01 and 86400",
    ),
    "liveness-interval": (
        HEAD + cmd('argv = ["true"]\nliveness = { port = 5, interval = 1 }\n'),
        7,
        f"{C0}.liveness.interval",
        "a port check takes no 'interval'",
    ),
    "liveness-failures": (
        HEAD + cmd('argv = ["true"]\nliveness = { port = 5, failures = 0 }\n'),
        7,
        f"{C0}.liveness.failures",
        "between 1 and 1,000",
    ),
    "liveness-array": (
        HEAD + cmd('argv = ["true"]\nliveness = [1]\n'),
        7,
        f"{C0}.liveness",
        "got an array",
    ),
}


@pytest.mark.parametrize(("text", "line", "key", "fragment"), BAD.values(), ids=BAD.keys())
def test_a_bad_key_is_one_line_naming_file_line_and_key(tmp_path, text, line, key, fragment):
    path = tmp_path / "ws.toml"
    path.write_text(text)
    with pytest.raises(WorkspaceError) as info:
        load_workspace(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}:{line}: {key}: "), message
    assert fragment in message, message
    assert (info.value.line, info.value.key) == (line, key)


def test_the_new_keys_keep_their_meaning(tmp_path):
    (tmp_path / "dist").mkdir()
    ws = parse_workspace(
        HEAD
        + cmd(
            'name = "build"\nargv = ["true"]\n'
            'ready = { shell = "test -f dist/app.js", interval = 0.5, timeout = 30 }\n'
        )
        + cmd(
            'name = "server"\nargv = ["true"]\n'
            'depends_on = { build = "ready" }\n'
            "ready = 8000\n"
            "liveness = { port = 8000, period = 5, timeout = 1, failures = 2, delay = 3 }\n"
            'restart = "on-failure"\nbackoff = { initial = 0.5, factor = 3, cap = 20 }\n'
            "max_restarts = 4\n"
        )
        + cmd('argv = ["true"]\ndepends_on = ["server", "build"]\nliveness = "alive"\n'),
        str(tmp_path / "ws.toml"),
    )
    build, server, third = ws.commands
    assert build.readiness == Ready(
        shell="test -f dist/app.js", interval=0.5, timeout=30, cwd=str(tmp_path)
    )
    assert build.policy is RestartPolicy.NO and build.max_restarts == 10
    assert build.backoff == Backoff(1, 2, 60)
    assert server.dependencies == (Dependency("build", Condition.READY),)
    assert server.readiness == Ready(port=8000)
    assert server.liveness == Liveness(Ready(port=8000), period=5, timeout=1, failures=2, delay=3)
    assert server.policy is RestartPolicy.ON_FAILURE
    assert server.backoff == Backoff(0.5, 3, 20)
    assert server.max_restarts == 4
    assert third.name == "a"  # the agent's name
    assert third.dependencies == (
        Dependency("server", Condition.STARTED),
        Dependency("build", Condition.STARTED),
    )
    assert third.liveness == Liveness(Ready(line="alive"))
    assert ws.title == "ws"


def test_http_checks_for_ready_and_liveness(tmp_path):
    ws = parse_workspace(
        HEAD
        + cmd(
            'name = "api"\nargv = ["true"]\n'
            'ready = { http = "http://127.0.0.1:8000/health", timeout = 30 }\n'
            'liveness = { http = "https://localhost/live?deep=1", period = 5, failures = 2 }\n'
        ),
        str(tmp_path / "ws.toml"),
    )
    (api,) = ws.commands
    assert api.readiness == Ready(http="http://127.0.0.1:8000/health", timeout=30)
    assert api.liveness == Liveness(Ready(http="https://localhost/live?deep=1"), 5, failures=2)
    ws = parse_workspace(
        HEAD + cmd('name = "api"\nargv = ["true"]\nready = { http = "http://h/", status = 204 }\n'),
        str(tmp_path / "ws.toml"),
    )
    assert ws.commands[0].readiness == Ready(http="http://h/", status=204)


@pytest.mark.parametrize(
    ("ready", "message"),
    [
        ('{ http = "http://h/", status = 2000 }', "ready status must be an HTTP status (100-599)"),
        ('{ http = "http://h/", status = "ok" }', "ready status must be an HTTP status (100-599)"),
        ("{ port = 80, status = 200 }", "a port check takes no 'status'"),
    ],
)
def test_a_bad_http_status_is_one_line_naming_file_line_and_key(tmp_path, ready, message):
    path = tmp_path / "ws.toml"
    path.write_text(HEAD + cmd(f'name = "api"\nargv = ["true"]\nready = {ready}\n'))
    with pytest.raises(WorkspaceError) as info:
        load_workspace(path)
    text = str(info.value)
    assert text.startswith(f"{path}:8: {C0}.ready.status: "), text
    assert message in text and "\n" not in text, text


@pytest.mark.promise("Workspaces: env_file")
def test_env_files_of_the_workspace_and_of_a_command(tmp_path):
    (tmp_path / ".env").write_text("# shared\nexport A=1\nB=top\nURL='postgres://u@h/db#x'\n")
    (tmp_path / "api.env").write_text('B=api\nC="two\\nlines" # a comment\nD= spaced  # c\n')
    ws = parse_workspace(
        'env_file = ".env"\n'
        + HEAD
        + cmd('name = "api"\nargv = ["true"]\nenv_file = ["api.env"]\nenv = { D = "own" }\n')
        + cmd('name = "db"\nargv = ["true"]\n'),
        str(tmp_path / "ws.toml"),
    )
    api, db = ws.commands
    # The workspace's file, then the command's, then its env: a later one wins.
    assert api.env == {
        "A": "1",
        "B": "api",
        "URL": "postgres://u@h/db#x",
        "C": "two\nlines",
        "D": "own",
    }
    assert db.env == {"A": "1", "B": "top", "URL": "postgres://u@h/db#x"}


@pytest.mark.promise("Workspaces: env_file")
@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (None, "cannot read"),
        ("A=1\nnot a variable\n", "line 2: not NAME=value"),
        ('A="open\n', 'line 1: no closing "'),
        ("1A=x\n", "line 1: not NAME=value"),
        ("A='nul\0inside'\n", "line 1: a NUL character"),
        ("A=" + "x" * 1024 * 1024 + "\n", "larger than 1,048,576 bytes"),
    ],
)
def test_a_bad_env_file_is_one_line_naming_file_line_and_key(tmp_path, content, fragment):
    env_file = tmp_path / "bad.env"
    if content is not None:
        env_file.write_text(content)
    path = tmp_path / "ws.toml"
    path.write_text(HEAD + cmd('name = "api"\nargv = ["true"]\nenv_file = "bad.env"\n'))
    with pytest.raises(WorkspaceError) as info:
        load_workspace(path)
    message = str(info.value)
    assert message.startswith(f"{path}:8: {C0}.env_file: "), message
    assert str(env_file) in message and fragment in message, message
    assert "\n" not in message


def test_serve_exits_with_the_status_of_the_command_it_was_told_to(tmp_path):
    # A test-runner stack: a service, and tests that need it and fail with 3.
    env, runtime = isolated_env(tmp_path, "rt")
    pid_file = tmp_path / "db.pid"
    ws_file = tmp_path / "ws.toml"
    ws_file.write_text(
        HEAD
        + cmd(f'name = "db"\nshell = "echo $$ > {pid_file}; exec sleep 60"\n')
        + cmd(
            'name = "tests"\nshell = "sleep 0.3; echo ran; exit 3"\n'
            'depends_on = { db = "started" }\n'
        )
    )

    def serve(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "procwindow", "serve", *extra],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )

    done = serve(str(ws_file), "--exit-code-from", "tests", "--graceful-timeout", "1")
    assert done.returncode == 3, done.stderr
    assert "procwindow: tests exited with code 3; stopping the workspace" in done.stderr
    assert "Traceback" not in done.stderr
    db = int(pid_file.read_text())
    assert not os.path.exists(f"/proc/{db}")  # the stack was stopped with it
    assert not (runtime / "procwindow" / "s.sock").exists()
    # Refused at once, in one line: a name the file lacks, or no file.
    done = serve(str(ws_file), "--exit-code-from", "nope")
    assert done.returncode == 2
    assert done.stderr == (
        f"procwindow serve: --exit-code-from: {ws_file} has no command 'nope' (it has: db, tests)\n"
    )
    done = serve("--exit-code-from", "tests")
    assert (done.returncode, done.stderr) == (
        2,
        "procwindow serve: --exit-code-from needs a workspace FILE\n",
    )


@pytest.mark.promise("Workspaces: exit_on_end")
def test_exit_on_end_and_exit_on_failure_end_a_serve_with_the_command_s_status(tmp_path):
    env, _runtime = isolated_env(tmp_path, "rt")
    pid_file = tmp_path / "db.pid"
    ws_file = tmp_path / "ws.toml"

    def serve(lint: str, tests: str) -> subprocess.CompletedProcess[str]:
        ws_file.write_text(
            HEAD
            + cmd(f'name = "db"\nshell = "echo $$ > {pid_file}; exec sleep 60"\n')
            + cmd(f'name = "lint"\nshell = "exit 0"\nexit_on_failure = true\n{lint}')
            + cmd(f'name = "tests"\nshell = "sleep 0.5; exit 4"\n{tests}')
        )
        return subprocess.run(
            [sys.executable, "-m", "procwindow", "serve", str(ws_file), "--graceful-timeout", "1"],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )

    # lint succeeds: its exit_on_failure does nothing; tests' end stops it all, status 4.
    done = serve("", "exit_on_end = true\n")
    assert done.returncode == 4, done.stderr
    assert "procwindow: tests exited with code 4; stopping the workspace" in done.stderr
    assert "lint" not in done.stderr
    assert not os.path.exists(f"/proc/{int(pid_file.read_text())}")
    # tests fails with exit_on_failure: the same.
    done = serve("", "exit_on_failure = true\n")
    assert done.returncode == 4, done.stderr
    bad = tmp_path / "bad.toml"
    bad.write_text(HEAD + cmd('name = "x"\nargv = ["true"]\nexit_on_end = "yes"\n'))
    done = subprocess.run(
        [sys.executable, "-m", "procwindow", "serve", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 1  # a bad file, in one line
    assert done.stderr.strip().endswith("exit_on_end: must be true or false, got a string")
    assert len(done.stderr.strip().splitlines()) == 1


def test_serve_starts_nothing_when_the_graph_is_bad(tmp_path):
    marker = tmp_path / "MARKER"
    env, runtime = isolated_env(tmp_path, "rt")
    ws_file = tmp_path / "ws.toml"
    ws_file.write_text(
        HEAD
        + cmd(f'name = "first"\nargv = ["touch", "{marker}"]\n')
        + cmd('name = "api"\nargv = ["true"]\ndepends_on = { db = "ready" }\n')
    )
    done = subprocess.run(
        [sys.executable, "-m", "procwindow", "serve", str(ws_file)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr == (
        f"procwindow serve: {ws_file}:11: {C1}.depends_on.db: 'api' depends on 'db',"
        " which is no command of this workspace\n"
    )
    assert not marker.exists()
    assert not (runtime / "procwindow" / "default.sock").exists()


def test_the_demo_waits_for_its_build(tmp_path):
    from procwindow.demo import demo_workspace

    ws = demo_workspace()
    server = ws.command("server")
    assert server.dependencies == (Dependency("build", Condition.READY),)
    assert ws.command("build").readiness is not None
    assert ws.command("docs").dependencies == (
        Dependency("fetch", Condition.COMPLETED_SUCCESSFULLY),
    )


def test_stop_signal_of_a_command(tmp_path):
    ws = parse_workspace(
        HEAD
        + cmd('name = "api"\nargv = ["true"]\nstop_signal = "INT"\n')
        + cmd('name = "db"\nargv = ["true"]\nstop_signal = 1\n')
        + cmd('name = "web"\nargv = ["true"]\n'),
        str(tmp_path / "ws.toml"),
    )
    assert [c.stop_signal for c in ws.commands] == [2, 1, None]
    ws = parse_workspace(
        HEAD + cmd('name = "api"\nargv = ["true"]\nstop_command = ["sh", "-c", "kill 1"]\n'),
        str(tmp_path / "ws.toml"),
    )
    assert ws.commands[0].stop_command == ("sh", "-c", "kill 1")
    path = tmp_path / "bad.toml"
    for value, fact in (
        ("[]", "stop_command: must not be empty"),
        ('"stop it"', "stop_command: must be a sequence of strings, not a str"),
        ('["no-such-program-here"]', "stop_command: command not found: 'no-such-program-here'"),
    ):
        path.write_text(HEAD + cmd(f'name = "api"\nargv = ["true"]\nstop_command = {value}\n'))
        with pytest.raises(WorkspaceError) as info:
            load_workspace(path)
        assert str(info.value).startswith(f"{path}:8: {C0}.{fact}"), str(info.value)
    path = tmp_path / "bad.toml"
    for value in ("0", '"NOPE"', "true"):
        path.write_text(HEAD + cmd(f'name = "api"\nargv = ["true"]\nstop_signal = {value}\n'))
        with pytest.raises(WorkspaceError) as info:
            load_workspace(path)
        text = str(info.value)
        assert text.startswith(f"{path}:8: {C0}.stop_signal: stop_signal must be a signal name")
        assert "\n" not in text


def test_a_disabled_command_starts_only_when_named(tmp_path):
    ws = parse_workspace(
        HEAD
        + cmd('name = "db"\nargv = ["true"]\n')
        + cmd('name = "seed"\nargv = ["true"]\ndisabled = true\n'),
        str(tmp_path / "ws.toml"),
    )
    assert [c.name for c in ws.select().commands] == ["db"]
    assert [c.name for c in ws.select(["seed"]).commands] == ["seed"]
