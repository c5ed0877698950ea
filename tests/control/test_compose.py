"""process-compose files as workspaces: each key mapped onto a workspace's, every
refusal one line naming file, line and YAML key, and a file run end to end."""

from __future__ import annotations

import shlex
import sys
import textwrap
import time
from pathlib import Path

import pytest

from procwindow import Backoff, Condition, Dependency, Liveness, Ready, RestartPolicy
from procwindow.control.workspace import WorkspaceError, load_workspace, parse_workspace

from ..tiers import scaled
from .conftest import start_server, stop_server

pytest.importorskip("yaml")

PY = shlex.quote(sys.executable)


def write(tmp_path: Path, text: str, name: str = "process-compose.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def error_of(tmp_path: Path, text: str) -> WorkspaceError:
    path = write(tmp_path, text)
    with pytest.raises(WorkspaceError) as info:
        load_workspace(path)
    assert len(str(info.value).splitlines()) == 1, str(info.value)
    return info.value


# The stack of process-compose's own documentation: a database with a readiness
# probe, migrations that wait for it, an api that waits for them, a worker that
# heals, in two namespaces.
STACK = """\
    version: "0.5"
    environment:
      - "LOG_LEVEL=info"
    processes:
      db:
        namespace: infra
        command: "postgres -D data"
        working_dir: data
        readiness_probe:
          exec:
            command: "pg_isready -h 127.0.0.1"
          initial_delay_seconds: 2
          period_seconds: 1
          timeout_seconds: 1
          success_threshold: 1
          failure_threshold: 5
        shutdown:
          signal: 15
          timeout_seconds: 20

      migrate:
        namespace: infra
        command: "./manage.py migrate"
        depends_on:
          db:
            condition: process_healthy

      api:
        command: "uvicorn app:app --port 8000"
        environment:
          - "PORT=8000"
          - "LOG_LEVEL=debug"
        depends_on:
          migrate:
            condition: process_completed_successfully
          db:
            condition: process_started
        readiness_probe:
          http_get:
            host: 127.0.0.1
            scheme: http
            path: "/health"
            port: 8000
        liveness_probe:
          exec:
            command: "curl -fs http://127.0.0.1:8000/health"
          initial_delay_seconds: 5
          period_seconds: 2
          timeout_seconds: 3
          failure_threshold: 4

      worker:
        command: "python worker.py"
        is_tty: true
        availability:
          restart: on_failure
          backoff_seconds: 2
          max_restarts: 5
        depends_on:
          api:
            condition: process_healthy
          migrate:
            condition: process_completed

      tests:
        entrypoint: ["pytest", "-q"]
        availability:
          exit_on_end: true
        depends_on:
          api: process_healthy
"""


@pytest.mark.promise("Workspaces: process-compose files")
def test_a_process_compose_stack_maps_onto_the_workspace_model(tmp_path, monkeypatch):
    monkeypatch.delenv("COMPOSE_SHELL", raising=False)
    (tmp_path / "data").mkdir()
    for program in ("pytest",):  # entrypoint programs are found as argv's are
        exe = tmp_path / "bin" / program
        exe.parent.mkdir(exist_ok=True)
        exe.write_text("#!/bin/sh\n")
        exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:/usr/bin:/bin")
    ws = load_workspace(write(tmp_path, STACK))
    assert ws.name is None and ws.title == "process-compose"
    assert ws.sessions == {"infra": ["db", "migrate"], "default": ["api", "worker", "tests"]}
    cmds = {c.name: c for c in ws.commands}
    base = {"LOG_LEVEL": "info"}

    db = cmds["db"]
    assert (db.session, db.agent, db.tool) == ("infra", "db", "db")
    assert db.argv == ("bash", "-c", "postgres -D data")
    assert db.cwd == str(tmp_path / "data")
    assert db.env == {**base, "PC_PROC_NAME": "db", "PC_REPLICA_NUM": "0"}
    assert db.readiness == Ready(
        command=("bash", "-c", "pg_isready -h 127.0.0.1"), interval=1, cwd=str(tmp_path / "data")
    )
    assert db.graceful_timeout == 20
    assert db.policy is RestartPolicy.NO and db.liveness is None

    migrate = cmds["migrate"]
    assert migrate.dependencies == (Dependency("db", Condition.READY),)
    assert migrate.cwd == str(tmp_path)

    api = cmds["api"]
    assert api.session == "default" and api.agent == "api"
    assert api.env == {"LOG_LEVEL": "debug", "PORT": "8000", "PC_PROC_NAME": "api"} | {
        "PC_REPLICA_NUM": "0"
    }
    assert api.dependencies == (
        Dependency("migrate", Condition.COMPLETED_SUCCESSFULLY),
        Dependency("db", Condition.STARTED),
    )
    # process-compose's default period is 10 s.
    assert api.readiness == Ready(http="http://127.0.0.1:8000/health", interval=10)
    assert api.liveness == Liveness(
        Ready(command=("bash", "-c", "curl -fs http://127.0.0.1:8000/health"), cwd=str(tmp_path)),
        period=2,
        timeout=3,
        failures=4,
        delay=5,
    )

    worker = cmds["worker"]
    assert worker.policy is RestartPolicy.ON_FAILURE
    # A constant delay, and every restart counted (a loop ends only after an hour's run).
    assert worker.backoff == Backoff(initial=2, factor=1, cap=3600)
    assert worker.max_restarts == 5 and worker.pty == (24, 80)
    assert worker.dependencies == (
        Dependency("api", Condition.READY),
        Dependency("migrate", Condition.COMPLETED),
    )

    tests = cmds["tests"]
    assert tests.argv == ("pytest", "-q") and tests.exit_on_end
    assert tests.dependencies == (Dependency("api", Condition.READY),)
    # process-compose's max_restarts 0 is "unlimited": the most a workspace allows.
    assert tests.max_restarts == 10_000 and tests.policy is RestartPolicy.NO


def test_the_documentation_examples_of_process_compose_map_as_it_runs_them(tmp_path):
    ws = parse_workspace(
        textwrap.dedent(
            """\
            processes:
              sanitycheck:
                command: "which go"
                availability:
                  restart: "exit_on_failure"
              hello:
                command: |
                  echo 'Preparing...'
                  sleep 1
                  echo 'I am ready to accept connections now'
                ready_log_line: "ready to accept connections"
              world:
                command: "echo Connected"
                depends_on:
                  hello:
                    condition: process_log_ready
                  sanitycheck:
                    condition: process_completed_successfully
              nginx:
                command: "docker run --rm -p80:80 --name nginx_test nginx"
                disabled: false
                is_daemon: false
                replicas: 1
                description: a web server
                shutdown:
                  timeout_seconds: 10
                  parent_only: no
                liveness_probe:
                  http_get:
                    host: 127.0.0.1
                    port: "80"
                    path: /
                    status_code: 200
            """
        ),
        str(tmp_path / "pc.yml"),
    )
    cmds = {c.name: c for c in ws.commands}
    # exit_on_failure: no restart, and its failure ends the workspace.
    sanity = cmds["sanitycheck"]
    assert sanity.policy is RestartPolicy.NO and sanity.exit_on_failure
    assert sanity.backoff == Backoff(1, 1, 3600)
    assert cmds["hello"].readiness == Ready(line="ready to accept connections")
    assert cmds["hello"].argv[2].endswith("echo 'I am ready to accept connections now'\n")
    assert cmds["world"].dependencies == (
        Dependency("hello", Condition.READY),
        Dependency("sanitycheck", Condition.COMPLETED_SUCCESSFULLY),
    )
    nginx = cmds["nginx"]
    assert nginx.graceful_timeout == 10
    assert nginx.stop_signal is None  # 15: SIGTERM, the default
    assert nginx.liveness == Liveness(Ready(http="http://127.0.0.1:80/", status=200), 10, 1, 3, 0)
    assert {c.session for c in ws.commands} == {"default"}


def test_values_are_expanded_from_the_environment_and_the_dotenv_file(tmp_path, monkeypatch):
    (tmp_path / ".env").write_text("VERSION='1.2.3'\nWAIT_SEC=3\nSHADOWED=from-dotenv\n")
    monkeypatch.setenv("SHADOWED", "from-environment")
    monkeypatch.setenv("WHO", "world")
    monkeypatch.delenv("UNSET_X", raising=False)
    text = """\
        processes:
          downloader:
            command: "echo data_${VERSION}.py $WHO [$UNSET_X] $$HOME $SHADOWED"
            availability:
              restart: always
              backoff_seconds: ${WAIT_SEC}
            environment:
              - "OUT=${VERSION}/out"
        """
    ws = load_workspace(write(tmp_path, text))
    cmd = ws.commands[0]
    # $$ is a $ for the shell; the environment wins over .env, as process-compose loads it.
    assert cmd.argv[2] == "echo data_1.2.3.py world [] $HOME from-environment"
    assert cmd.backoff.initial == 3
    # .env's variables reach every process, under its own (the environment's win).
    assert cmd.env == {
        "VERSION": "1.2.3",
        "WAIT_SEC": "3",
        "OUT": "1.2.3/out",
        "PC_PROC_NAME": "downloader",
        "PC_REPLICA_NUM": "0",
    }

    raw = load_workspace(
        write(
            tmp_path,
            "disable_env_expansion: true\nis_dotenv_disabled: true\n"
            + textwrap.dedent(text).replace("${WAIT_SEC}", "4"),
        )
    ).commands[0]
    assert raw.argv[2] == "echo data_${VERSION}.py $WHO [$UNSET_X] $$HOME $SHADOWED"
    assert raw.env == {"OUT": "${VERSION}/out", "PC_PROC_NAME": "downloader"} | {
        "PC_REPLICA_NUM": "0"
    }


@pytest.mark.promise("Workspaces: process-compose files")
def test_keys_of_newer_process_compose_files_as_its_repository_uses_them(tmp_path):
    # The shapes of process-compose's own fixtures (fixtures-code/, issues/).
    (tmp_path / ".env.test").write_text("MY_NAME=test\n")
    ws = load_workspace(
        write(
            tmp_path,
            """\
            version: "0.5"
            ordered_shutdown: true
            processes:
              interactive:
                command: "read -r line; echo got $$line"
                is_interactive: true
              test_env_file:
                command: "echo My name is $$MY_NAME"
                env_file: ".env.test"
                success_exit_codes: [0]
              postgresql:
                command: "sleep 60"
                launch_timeout_seconds: 30
            """,
        )
    )
    cmds = {c.name: c for c in ws.commands}
    assert cmds["interactive"].pty is not None  # a terminal, as is_tty gives
    assert cmds["test_env_file"].env is not None
    assert cmds["test_env_file"].env["MY_NAME"] == "test"
    assert cmds["postgresql"].pty is None


@pytest.mark.parametrize(
    ("text", "key", "fragment"),
    [
        (
            "processes:\n  a:\n    command: x\n    success_exit_codes: [0, 2]\n",
            "processes.a.success_exit_codes[1]",
            "(not supported: only exit code 0 is a success)",
        ),
        (
            "processes:\n  a:\n    command: x\n    availability:\n      exit_on_skipped: true\n",
            "processes.a.availability.exit_on_skipped",
            "(not supported: exit_on_end and exit_on_failure end the workspace when the process"
            " is skipped too)",
        ),
        (
            "processes:\n  a:\n    command: x\n    namespace: [a, b]\n",
            "processes.a.namespace",
            "(not supported: a process is in one namespace)",
        ),
        (
            "mcp_server:\n  host: localhost\nprocesses:\n  a:\n    command: x\n",
            "mcp_server",
            "(not supported: procwindow mcp serves agents itself; run it beside)",
        ),
        (
            "processes:\n  a:\n    command: x\n  b:\n    extends: a\n",
            "processes.b.extends",
            "(not supported: one process's keys are not merged into another's)",
        ),
    ],
)
def test_newer_keys_that_cannot_be_mapped_are_refused_with_why(tmp_path, text, key, fragment):
    message = str(error_of(tmp_path, text))
    assert f": {key}: is not read {fragment}" in message, message


def test_shell_and_plain_yaml_values_are_read_as_process_compose_reads_them(tmp_path):
    ws = parse_workspace(
        textwrap.dedent(
            """\
            shell:
              shell_command: sh
              shell_argument: "-c"
            processes:
              "on":
                command: 'true'
                availability:
                  restart: no
            """
        ),
        str(tmp_path / "pc.yaml"),
    )
    # `no` and `on` are strings to a Go decoder (YAML 1.2), not YAML 1.1 booleans.
    cmd = ws.commands[0]
    assert cmd.name == "on" and cmd.argv == ("sh", "-c", "true")
    assert cmd.policy is RestartPolicy.NO


# (file, line, key, part of the message)
REFUSED: dict[str, tuple[str, int | None, str, str]] = {
    "typo": (
        "processes:\n  db:\n    comand: postgres\n",
        3,
        "processes.db.comand",
        "unknown key (did you mean 'command'?)",
    ),
    "top-typo": ("proceses:\n  db: {}\n", 1, "proceses", "did you mean 'processes'?"),
    "no-command": ("processes:\n  db:\n    namespace: x\n", 2, "processes.db", "needs a command"),
    "daemon": (
        "processes:\n  db:\n    command: x\n    is_daemon: true\n",
        4,
        "processes.db.is_daemon",
        "(not supported: a daemon leaves the process procwindow watches",
    ),
    "replicas": (
        "processes:\n  db:\n    command: x\n    replicas: 0\n",
        4,
        "processes.db.replicas",
        "must be 1 to 100, got 0",
    ),
    "log-location": (
        "processes:\n  db:\n    command: x\n    log_location: ./db.log\n",
        4,
        "processes.db.log_location",
        "(not supported: procwindow keeps each process's output itself",
    ),
    "vars": ("vars:\n  A: 1\nprocesses: {}\n", 1, "vars", "(not supported: Go templates"),
    "template": (
        "processes:\n  db:\n    command: 'echo {{.OK}}'\n",
        3,
        "processes.db.command",
        "holds a Go template (not supported:",
    ),
    "shutdown-command-template": (
        "processes:\n  db:\n    command: x\n    shutdown:\n      command: 'stop {{.Name}}'\n",
        5,
        "processes.db.shutdown.command",
        "holds a Go template (not supported: templates are not rendered)",
    ),
    "shutdown-signal": (
        "processes:\n  db:\n    command: x\n    shutdown:\n      signal: 999\n",
        5,
        "processes.db.shutdown.signal",
        "stop_signal must be a signal name (TERM, INT, HUP, KILL, USR1…) or a number",
    ),
    "parent-only": (
        "processes:\n  db:\n    command: x\n    shutdown:\n      parent_only: yes\n",
        5,
        "processes.db.shutdown.parent_only",
        "(not supported: a stop signals the command's whole process group)",
    ),
    "probe-headers": (
        "processes:\n  db:\n    command: x\n    readiness_probe:\n      http_get:\n"
        "        port: 80\n        headers:\n          X-A: b\n",
        7,
        "processes.db.readiness_probe.http_get.headers",
        "(not supported: an http check sends no headers)",
    ),
    "probe-status": (
        "processes:\n  db:\n    command: x\n    readiness_probe:\n      http_get:\n"
        "        port: 80\n        status_code: 2000\n",
        7,
        "processes.db.readiness_probe.http_get.status_code",
        "ready status must be an HTTP status (100-599), got 2000",
    ),
    "probe-working-dir": (
        "processes:\n  db:\n    command: x\n    liveness_probe:\n      exec:\n"
        "        command: 'true'\n        working_dir: /tmp\n",
        7,
        "processes.db.liveness_probe.exec.working_dir",
        "(not supported: a probe runs in its process's working_dir)",
    ),
    "probe-both": (
        "processes:\n  db:\n    command: x\n    readiness_probe:\n      period_seconds: 1\n",
        4,
        "processes.db.readiness_probe",
        "give one of exec or http_get",
    ),
    "probe-and-log-line": (
        "processes:\n  db:\n    command: x\n    ready_log_line: up\n    readiness_probe:\n"
        "      exec:\n        command: 'true'\n",
        4,
        "processes.db.ready_log_line",
        "give a readiness_probe or a ready_log_line, not both",
    ),
    "period-float": (
        "processes:\n  db:\n    command: x\n    readiness_probe:\n      exec:\n"
        "        command: 'true'\n      period_seconds: 0.5\n",
        7,
        "processes.db.readiness_probe.period_seconds",
        "must be an integer, got a string",
    ),
    "condition": (
        "processes:\n  db:\n    command: x\n  api:\n    command: x\n    depends_on:\n"
        "      db:\n        condition: process_healty\n",
        8,
        "processes.api.depends_on.db.condition",
        "unknown condition 'process_healty' (did you mean 'process_healthy'?)",
    ),
    "unknown-dependency": (
        "processes:\n  db:\n    command: x\n  api:\n    command: x\n    depends_on:\n"
        "      dbx:\n        condition: process_started\n",
        8,
        "processes.api.depends_on.dbx.condition",
        "'api' depends on 'dbx', which is no command of this workspace (did you mean 'db'?)",
    ),
    "healthy-without-probe": (
        "processes:\n  db:\n    command: x\n  api:\n    command: x\n    depends_on:\n"
        "      db:\n        condition: process_healthy\n",
        8,
        "processes.api.depends_on.db.condition",
        "'db' has no ready check",
    ),
    "log-ready-of-a-probe": (
        "processes:\n  db:\n    command: x\n    readiness_probe:\n      exec:\n"
        "        command: 'true'\n  api:\n    command: x\n    depends_on:\n"
        "      db:\n        condition: process_log_ready\n",
        11,
        "processes.api.depends_on.db.condition",
        "process_log_ready waits for a ready_log_line, and 'db' has a readiness_probe",
    ),
    "cycle": (
        "processes:\n  a:\n    command: x\n    depends_on:\n      b:\n"
        "        condition: process_started\n  b:\n    command: x\n    depends_on:\n"
        "      a:\n        condition: process_started\n",
        6,
        "processes.a.depends_on.b.condition",
        "a dependency cycle: a -> b -> a",
    ),
    "restart-dash": (
        "processes:\n  db:\n    command: x\n    availability:\n      restart: on-failure\n",
        5,
        "processes.db.availability.restart",
        "unknown restart policy 'on-failure' (did you mean 'on_failure'?)",
    ),
    "backoff-bound": (
        "processes:\n  db:\n    command: x\n    availability:\n      backoff_seconds: 0\n",
        5,
        "processes.db.availability.backoff_seconds",
        "must be between 0.1 and 3600, got 0",
    ),
    "max-restarts-bound": (
        "processes:\n  db:\n    command: x\n    availability:\n      max_restarts: 20000\n",
        5,
        "processes.db.availability.max_restarts",
        "must be between 0 and 10,000, got 20000",
    ),
    "grace-bound": (
        "processes:\n  db:\n    command: x\n    shutdown:\n      timeout_seconds: 120\n",
        5,
        "processes.db.shutdown.timeout_seconds",
        "must be between 0 and 60 seconds, got 120",
    ),
    "liveness-bound": (
        "processes:\n  db:\n    command: x\n    liveness_probe:\n      exec:\n"
        "        command: 'true'\n      failure_threshold: 5000\n",
        7,
        "processes.db.liveness_probe.failure_threshold",
        "must be between 1 and 1,000, got 5000",
    ),
    "working-dir": (
        "processes:\n  db:\n    command: x\n    working_dir: nowhere\n",
        4,
        "processes.db.working_dir",
        "no such directory",
    ),
    "environment-item": (
        "processes:\n  db:\n    command: x\n    environment:\n      - PORT=1\n      - DEBUG\n",
        6,
        "processes.db.environment[1]",
        "must be NAME=value, got 'DEBUG'",
    ),
    "environment-map": (
        "processes:\n  db:\n    command: x\n    environment:\n      PORT: 1\n",
        4,
        "processes.db.environment",
        "must be a list of NAME=value strings, got a mapping",
    ),
    "entrypoint-missing": (
        "processes:\n  db:\n    entrypoint: [no-such-program-here]\n",
        3,
        "processes.db.entrypoint",
        "command not found: 'no-such-program-here'",
    ),
    "namespace-name": (
        "processes:\n  db:\n    command: x\n    namespace: 'a b'\n",
        4,
        "processes.db.namespace",
        "whitespace",
    ),
    "anchor": (
        "x-base: &base\n  command: x\nprocesses:\n  db: *base\n",
        1,
        "x-base",
        "anchors and aliases (&, *) are not read (not supported: write each value out)",
    ),
    "merge-key": (
        "processes:\n  db:\n    <<: {command: x}\n",
        3,
        "processes.db",
        "merge keys (<<) are not read",
    ),
    "duplicate": (
        "processes:\n  db:\n    command: x\n    command: y\n",
        4,
        "processes.db",
        "the key 'command' is given twice",
    ),
    "tag": (
        "processes:\n  db:\n    command: !!python/name:os.system x\n",
        3,
        "processes.db.command",
        "the tag 'tag:yaml.org,2002:python/name:os.system' is not read",
    ),
    "two-documents": ("processes: {}\n---\nprocesses: {}\n", 2, "", "more than one YAML document"),
    "invalid": ("processes:\n  db: [\n", 3, "", "invalid YAML:"),
    "docker-compose": (
        "services:\n  web:\n    image: nginx\n",
        1,
        "services",
        "(not supported: this reads like a Docker Compose file",
    ),
}


@pytest.mark.parametrize(("text", "line", "key", "fragment"), REFUSED.values(), ids=REFUSED.keys())
def test_what_cannot_be_mapped_is_refused_in_one_line_at_its_yaml_key(
    tmp_path, text, line, key, fragment
):
    exc = error_of(tmp_path, text)
    path = tmp_path / "process-compose.yaml"
    where = f"{path}:{line}" if line else str(path)
    prefix = f"{where}: {key}: " if key else f"{where}: "
    assert str(exc).startswith(prefix), str(exc)
    assert fragment in str(exc)
    assert (exc.line, exc.key) == (line, key)


def test_a_billion_laughs_is_refused_at_once():
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    started = time.monotonic()
    with pytest.raises(WorkspaceError, match=r"^x\.yaml:1: a: anchors and aliases"):
        parse_workspace("\n".join(lines) + "\n", "x.yaml")
    assert time.monotonic() - started < scaled(1.0)


def test_nesting_and_size_are_bounded(tmp_path):
    started = time.monotonic()
    with pytest.raises(WorkspaceError, match="nest"):
        parse_workspace("[" * 100_000 + "]" * 100_000, "deep.yaml")
    with pytest.raises(WorkspaceError, match="at most 1 MiB"):
        parse_workspace("processes: {}\n" + "#" * (1 << 20), "big.yaml")
    many = "processes:\n" + "".join(f"  p{i}:\n    command: 'true'\n" for i in range(10_001))
    with pytest.raises(WorkspaceError) as info:
        parse_workspace(many, "many.yaml")
    assert str(info.value).startswith("many.yaml:20002: processes.p10000: too many commands")
    assert time.monotonic() - started < scaled(10.0)


def test_without_pyyaml_a_yaml_file_says_how_to_install_it(tmp_path, monkeypatch):
    path = write(tmp_path, "processes: {}\n")
    monkeypatch.setitem(sys.modules, "yaml", None)  # import yaml raises ImportError
    with pytest.raises(WorkspaceError) as info:
        load_workspace(path)
    assert str(info.value) == (
        f"{path}: reading YAML needs PyYAML: pip install 'procwindow[compose]'"
    )
    # A TOML workspace needs no YAML.
    toml = tmp_path / "ws.toml"
    toml.write_text("")
    assert load_workspace(toml).commands == []


def _wait(cond, timeout=30.0, what="condition"):
    end = time.monotonic() + scaled(timeout)
    while True:
        value = cond()
        if value:
            return value
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.mark.promise("Workspaces: process-compose files")
def test_replicas_are_commands_of_one_agent_and_a_dependency_on_the_group_is_on_each(
    tmp_path,
):
    path = write(
        tmp_path,
        """\
        processes:
          worker:
            command: "echo worker $$PC_REPLICA_NUM of $$PC_PROC_NAME; sleep 60"
            replicas: 3
          api:
            command: "sleep 60"
            depends_on:
              worker:
                condition: process_started
              worker-2:
                condition: process_completed
        """,
    )
    ws = load_workspace(path)
    workers = [c for c in ws.commands if c.agent == "worker"]
    assert [c.name for c in workers] == ["worker-0", "worker-1", "worker-2"]
    assert [c.env["PC_REPLICA_NUM"] for c in workers if c.env] == ["0", "1", "2"]
    (api,) = [c for c in ws.commands if c.name == "api"]
    assert {(d.name, d.condition.value) for d in api.dependencies} == {
        ("worker-0", "started"),
        ("worker-1", "started"),
        ("worker-2", "completed"),  # named on its own, its own condition
    }
    srv = start_server(tmp_path, str(path))
    try:

        def said() -> set[str]:
            procs = srv.request({"op": "procs"})["result"]
            texts = set()
            for p in procs:
                lines = srv.request({"op": "out", "proc": p["id"]})["result"]["lines"]
                texts.update(line["text"] for line in lines)
            return texts

        want = {f"worker {i} of worker-{i}" for i in range(3)}
        assert _wait(lambda: want <= said(), what="each replica's line")
    finally:
        assert stop_server(srv) == 0


@pytest.mark.promise("Workspaces: process-compose files")
def test_a_disabled_process_starts_only_when_named_or_depended_on(tmp_path):
    path = write(
        tmp_path,
        """\
        processes:
          db:
            command: "sleep 60"
          seed:
            command: "echo seeded; sleep 60"
            disabled: true
          tools:
            command: "sleep 60"
            disabled: true
          api:
            command: "sleep 60"
            depends_on:
              tools:
                condition: process_started
        """,
    )
    ws = load_workspace(path)
    assert [c.name for c in ws.commands if c.disabled] == ["seed", "tools"]
    srv = start_server(tmp_path, str(path))
    try:

        def names() -> list[str]:
            reply = srv.request({"op": "workspaces"})["result"]
            return sorted(c["name"] for w in reply for c in w["commands"])

        # Not named: seed stays out; tools starts, as api depends on it.
        assert _wait(lambda: names() == ["api", "db", "tools"] and names(), what="three")
    finally:
        assert stop_server(srv) == 0
    srv = start_server(tmp_path, str(path), "seed")  # named, it starts
    try:
        assert _wait(lambda: names() == ["seed"] and names(), what="seed alone")
    finally:
        assert stop_server(srv) == 0


def test_serve_runs_a_process_compose_file_in_order_and_gates_on_conditions(tmp_path):
    log = tmp_path / "order.log"
    (tmp_path / "note.py").write_text(
        "import sys, time\n"
        "with open('order.log', 'a') as f:\n"
        "    f.write(sys.argv[1] + ' ' + repr(time.time()) + '\\n')\n"
    )
    note = f"{PY} note.py"
    path = write(
        tmp_path,
        f"""\
        processes:
          db:
            namespace: infra
            command: "sleep 0.5; {note} db; touch db.ready; until test -f db.stop; do sleep 0.05; done; {note} db-stopped-by-its-command"
            shutdown:
              command: "touch db.stop"
              timeout_seconds: 20
            readiness_probe:
              exec:
                command: "test -f db.ready"
              period_seconds: 1
          migrate:
            namespace: infra
            command: "{note} migrate"
            depends_on:
              db:
                condition: process_healthy
          api:
            command: "trap '{note} api-stopped-by-SIGINT; exit 0' INT; {note} api; while :; do sleep 0.05; done"
            depends_on:
              migrate:
                condition: process_completed_successfully
            shutdown:
              signal: 2
          broken:
            command: "exit 3"
          report:
            command: "{note} report"
            depends_on:
              broken:
                condition: process_completed_successfully
        """,
    )
    srv = start_server(tmp_path, str(path))
    try:

        def phases():
            reply = srv.request({"op": "workspaces"})["result"]
            states = {c["name"]: c["phase"] for c in reply[0]["commands"]} if reply else {}
            wrote = log.exists() and "api " in log.read_text()
            ok = wrote and states.get("api") == "running" and states.get("report") == "skipped"
            return ok and states

        states = _wait(phases, what="api running (and noted) and report skipped")
        assert states["db"] == "ready" and states["migrate"] == "completed"
        assert states["broken"] == "failed"
        sessions = srv.ctl("sessions").stdout.splitlines()
        assert sorted(line.split()[0] for line in sessions if not line.startswith(" ")) == [
            "default",
            "infra",
        ]
    finally:
        assert stop_server(srv) == 0
    order = [line.split() for line in log.read_text().splitlines()]
    # report never ran: what it waited for failed; api was stopped by its own signal.
    assert [name for name, _t in order] == [
        "db",
        "migrate",
        "api",
        "api-stopped-by-SIGINT",
        "db-stopped-by-its-command",  # after api: dependents stop first
    ]
    times = [float(t) for _name, t in order]
    assert times == sorted(times)
