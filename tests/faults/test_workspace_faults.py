"""Bad workspace files: one WorkspaceError, one line naming file, line and key; nothing starts."""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from procwindow.control.workspace import (
    MAX_COMMANDS,
    MAX_FILE_SIZE,
    MAX_KEY_PARTS,
    Workspace,
    WorkspaceError,
    load_workspace,
    parse_workspace,
)
from procwindow.core import MAX_GRACEFUL_TIMEOUT

from ..control.conftest import isolated_env
from ..tiers import examples, scaled

# Lines 1-5; a command's keys follow from line 6.
HEAD = '[[session]]\nname = "s"\n[[session.agent]]\nname = "a"\n[[session.agent.command]]\n'
CMD = "session[0].agent[0].command[0]"


def error_of(tmp_path: Path, text: str | bytes) -> WorkspaceError:
    """Load ``text`` from a file; it must fail with one one-line WorkspaceError."""
    path = tmp_path / "ws.toml"
    if isinstance(text, str):
        path.write_text(text, encoding="utf-8")
    else:
        path.write_bytes(text)
    with pytest.raises(WorkspaceError) as info:
        load_workspace(path)
    message = str(info.value)
    assert len(message.splitlines()) == 1, message
    assert "\n" not in message
    return info.value


# (text, line, key, part of the message)
BAD: dict[str, tuple[str, int | None, str, str]] = {
    # wrong types and nesting
    "session-string": ('session = "web"\n', 1, "session", "write [[session]]"),
    "session-plain-table": ('[session]\nname = "web"\n', 1, "session", "write [[session]]"),
    "session-of-strings": ('session = ["web"]\n', 1, "session[0]", "must be a table, got a string"),
    "session-of-ints": ("session = [1, 2]\n", 1, "session[0]", "must be a table, got an integer"),
    "agent-of-strings": (
        '[[session]]\nname = "s"\nagent = ["a", "b"]\n',
        3,
        "session[0].agent[0]",
        "must be a table, got a string",
    ),
    "agent-plain-table": (
        '[[session]]\nname = "s"\n[session.agent]\nname = "a"\n',
        3,
        "session[0].agent",
        "write [[session.agent]]",
    ),
    "command-string": (
        '[[session]]\nname = "s"\n[[session.agent]]\nname = "a"\ncommand = "ls"\n',
        5,
        "session[0].agent[0].command",
        "write [[session.agent.command]]",
    ),
    "argv-string": (HEAD + 'argv = "ls -l"\n', 6, f"{CMD}.argv", "must be an array of strings"),
    "argv-empty": (HEAD + "argv = []\n", 6, f"{CMD}.argv", "must not be empty"),
    "argv-empty-program": (HEAD + 'argv = ["", "x"]\n', 6, f"{CMD}.argv[0]", "must not be empty"),
    "argv-int": (HEAD + 'argv = ["echo", 1]\n', 6, f"{CMD}.argv[1]", "got an integer"),
    "argv-table": (HEAD + 'argv = ["echo", { a = 1 }]\n', 6, f"{CMD}.argv[1]", "got a table"),
    "argv-array": (HEAD + 'argv = ["echo", ["x"]]\n', 6, f"{CMD}.argv[1]", "got an array"),
    "argv-nul": (HEAD + 'argv = ["echo", "a\\u0000b"]\n', 6, f"{CMD}.argv[1]", "NUL"),
    "shell-nul": (HEAD + 'shell = "echo \\u0000"\n', 6, f"{CMD}.shell", "NUL"),
    "shell-blank": (HEAD + 'shell = "  "\n', 6, f"{CMD}.shell", "must not be empty"),
    "argv-and-shell": (HEAD + 'argv = ["true"]\nshell = "true"\n', 5, CMD, "exactly one of"),
    "neither-argv-nor-shell": (HEAD + 'tool = "x"\n', 5, CMD, "exactly one of"),
    "env-string": (HEAD + 'argv = ["true"]\nenv = "A=1"\n', 7, f"{CMD}.env", "a table"),
    "env-int-value": (
        HEAD + 'argv = ["true"]\nenv = { PORT = 3000 }\n',
        7,
        f"{CMD}.env.PORT",
        "got an integer",
    ),
    "env-nul-value": (
        HEAD + 'argv = ["true"]\nenv = { A = "x\\u0000" }\n',
        7,
        f"{CMD}.env.A",
        "NUL",
    ),
    "env-name-equals": (
        HEAD + 'argv = ["true"]\nenv = { "A=B" = "x" }\n',
        7,
        f'{CMD}.env."A=B"',
        "'='",
    ),
    "env-name-nul": (
        HEAD + 'argv = ["true"]\nenv = { "A\\u0000" = "x" }\n',
        7,
        f'{CMD}.env."A\\x00"',
        "NUL",
    ),
    "env-name-empty": (
        HEAD + 'argv = ["true"]\nenv = { "" = "x" }\n',
        7,
        f'{CMD}.env.""',
        "non-empty",
    ),
    "env-header-value": (
        HEAD + 'argv = ["true"]\n[session.agent.command.env]\nA = "1"\nB = 2\n',
        9,
        f"{CMD}.env.B",
        "got an integer",
    ),
    "cwd-int": (HEAD + 'argv = ["true"]\ncwd = 1\n', 7, f"{CMD}.cwd", "must be a string"),
    "cwd-missing": (
        HEAD + 'argv = ["true"]\ncwd = "nowhere"\n',
        7,
        f"{CMD}.cwd",
        "no such directory",
    ),
    "cwd-file": (HEAD + 'argv = ["true"]\ncwd = "ws.toml"\n', 7, f"{CMD}.cwd", "not a directory"),
    "cwd-nul": (HEAD + 'argv = ["true"]\ncwd = "a\\u0000"\n', 7, f"{CMD}.cwd", "NUL"),
    "tool-newline": (HEAD + 'argv = ["true"]\ntool = "a\\nb"\n', 7, f"{CMD}.tool", "single-line"),
    "tool-escape": (HEAD + 'argv = ["true"]\ntool = "a\\u001b[31m"\n', 7, f"{CMD}.tool", "control"),
    "tool-empty": (HEAD + 'argv = ["true"]\ntool = ""\n', 7, f"{CMD}.tool", "non-empty"),
    "tool-array": (HEAD + 'argv = ["true"]\ntool = ["x"]\n', 7, f"{CMD}.tool", "got an array"),
    "program-missing": (
        HEAD + 'argv = ["nmp", "install"]\n',
        6,
        f"{CMD}.argv",
        "command not found: 'nmp'",
    ),
    "program-relative-missing": (
        HEAD + 'argv = ["./run.sh"]\n',
        6,
        f"{CMD}.argv",
        "command not found",
    ),
    "program-directory": (HEAD + 'argv = ["/"]\n', 6, f"{CMD}.argv", "is a directory"),
    "name-int": ("name = 5\n", 1, "name", "must be a string"),
    "name-slash": ('name = "a/b"\n', 1, "name", "invalid server name"),
    "name-newline": ('name = "a\\nb"\n', 1, "name", "invalid server name 'a\\nb'"),
    "session-name-missing": ("[[session]]\n", 1, "session[0]", "needs a name"),
    "session-name-int": ("[[session]]\nname = 1\n", 2, "session[0].name", "must be a string"),
    "session-name-star": ('[[session]]\nname = "a*"\n', 2, "session[0].name", "'*'"),
    "session-name-space": ('[[session]]\nname = "a b"\n', 2, "session[0].name", "whitespace"),
    "session-name-escape": ('[[session]]\nname = "a\\u001b"\n', 2, "session[0].name", "control"),
    "session-name-del": ('[[session]]\nname = "a\\u007f"\n', 2, "session[0].name", "control"),
    "session-name-line-separator": (
        '[[session]]\nname = "a\\u2028"\n',
        2,
        "session[0].name",
        "control",
    ),
    "agent-name-escape": (
        '[[session]]\nname = "s"\n[[session.agent]]\nname = "a\\u0007"\n',
        4,
        "session[0].agent[0].name",
        "control",
    ),
    "agent-name-star": (
        '[[session]]\nname = "s"\n[[session.agent]]\nname = "*"\n',
        4,
        "session[0].agent[0].name",
        "'*'",
    ),
    "duplicate-session": (
        '[[session]]\nname = "s"\n[[session]]\nname = "t"\n[[session]]\nname = "s"\n',
        6,
        "session[2].name",
        "declared twice",
    ),
    "duplicate-agent": (
        '[[session]]\nname = "s"\n[[session.agent]]\nname = "a"\n[[session.agent]]\nname = "a"\n',
        6,
        "session[0].agent[1].name",
        "declared twice in 's'",
    ),
    # unknown keys at every level
    "unknown-top": ('nmae = "x"\n', 1, "nmae", "unknown key"),
    "unknown-session": (
        '[[session]]\nname = "s"\nagents = []\n',
        3,
        "session[0].agents",
        "unknown key",
    ),
    "unknown-agent": (
        '[[session]]\nname = "s"\n[[session.agent]]\nname = "a"\ncmd = 1\n',
        5,
        "session[0].agent[0].cmd",
        "unknown key",
    ),
    "unknown-command": (
        HEAD + 'argv = ["true"]\nenviron = {}\n',
        7,
        f"{CMD}.environ",
        "unknown key",
    ),
    "command-subtable": (
        HEAD + 'argv = ["true"]\n[session.agent.command.x]\ny = 1\n',
        7,
        f"{CMD}.x",
        "unknown key",
    ),
    "quoted-unknown-key-with-newline": ('"a\\nb" = 1\n', 1, '"a\\nb"', "unknown key"),
    # graceful_timeout
    "grace-nan": ("graceful_timeout = nan\n", 1, "graceful_timeout", "got nan"),
    "grace-inf": ("graceful_timeout = inf\n", 1, "graceful_timeout", "got inf"),
    "grace-negative": ("graceful_timeout = -1\n", 1, "graceful_timeout", "between 0 and"),
    "grace-huge": ("graceful_timeout = 1e300\n", 1, "graceful_timeout", "between 0 and"),
    "grace-huge-int": ("graceful_timeout = 0x" + "f" * 2000 + "\n", 1, "graceful_timeout", "huge"),
    "grace-string": ('graceful_timeout = "5"\n', 1, "graceful_timeout", "got a string"),
    "grace-bool": ("graceful_timeout = true\n", 1, "graceful_timeout", "got a boolean"),
    "grace-date": ("graceful_timeout = 1979-05-27\n", 1, "graceful_timeout", "got a date"),
    "command-grace-nan": (
        HEAD + 'argv = ["true"]\ngraceful_timeout = nan\n',
        7,
        f"{CMD}.graceful_timeout",
        "nan",
    ),
    "command-grace-inf": (
        HEAD + 'argv = ["true"]\ngraceful_timeout = -inf\n',
        7,
        f"{CMD}.graceful_timeout",
        "inf",
    ),
    "command-grace-large": (
        HEAD + f'argv = ["true"]\ngraceful_timeout = {MAX_GRACEFUL_TIMEOUT + 1}\n',
        7,
        f"{CMD}.graceful_timeout",
        "between 0 and",
    ),
    # inline layouts still find the line
    "inline-commands": (
        '[[session]]\nname = "s"\n[[session.agent]]\nname = "a"\ncommand = [\n'
        '  { argv = ["true"] },\n  { argv = ["true"], env = { A = 1 } },\n]\n',
        7,
        "session[0].agent[0].command[1].env.A",
        "got an integer",
    ),
    "inline-everything": (
        'session = [{ name = "s", agent = [{ name = "a", command = [{ shell = 1 }] }] }]\n',
        1,
        f"{CMD}.shell",
        "must be a string",
    ),
    "multiline-string-before": (
        HEAD + 'shell = """\n[[session]]\nname = 1\n"""\ntool = 7\n',
        10,
        f"{CMD}.tool",
        "must be a string",
    ),
    # TOML itself
    "invalid-toml": ('[[session]]\nname = "s\n', 2, "", "invalid TOML"),
    "deep-arrays": ("a = " + "[" * 10_000 + "]" * 10_000 + "\n", None, "", "nested too deeply"),
    "deep-inline-tables": (
        "a = " + "{b = " * 10_000 + "1" + "}" * 10_000 + "\n",
        None,
        "",
        "invalid TOML",
    ),
    "integer-too-long": ("graceful_timeout = " + "9" * 5000 + "\n", None, "", "too many digits"),
    "long-dotted-key": ("a" + ".a" * 5000 + " = 1\n", 1, "", f"more than {MAX_KEY_PARTS} parts"),
    "long-dotted-header": ("\n[" + ".".join(["a"] * 5000) + "]\n", 2, "", "more than"),
    "ready-http-not-a-url": (
        HEAD + 'shell = "true"\nready = { http = "localhost:8000/health" }\n',
        7,
        CMD + ".ready.http",
        "must be an http:// or https:// URL",
    ),
    # other tools' files, named as such
    "process-compose": (
        '[processes.db]\ncommand = "postgres"\n[processes.api]\ncommand = "uvicorn app:app"\n'
        'depends_on = { db = { condition = "process_healthy" } }\n',
        1,
        "processes",
        "reads like a process-compose file; a procwindow workspace lists its commands under"
        " [[session]]",
    ),
    "docker-compose": ('[services.web]\nimage = "nginx"\n', 1, "services", "Docker Compose"),
}


def test_a_yaml_file_is_read_as_process_compose(tmp_path):
    path = tmp_path / "process-compose.yaml"
    path.write_text('version: "0.5"\nprocesses:\n  db:\n    comand: postgres\n')
    with pytest.raises(WorkspaceError) as info:
        load_workspace(path)
    assert str(info.value) == (
        f"{path}:4: processes.db.comand: unknown key (did you mean 'command'?)"
    )


@pytest.mark.parametrize(("text", "line", "key", "fragment"), BAD.values(), ids=BAD.keys())
def test_bad_file_gives_one_line_error(tmp_path, text, line, key, fragment):
    exc = error_of(tmp_path, text)
    path = str(tmp_path / "ws.toml")
    where = f"{path}:{line}" if line else path
    prefix = f"{where}: {key}: " if key else f"{where}: "
    assert str(exc).startswith(prefix), str(exc)
    assert fragment in str(exc)[len(prefix) :], str(exc)
    assert (exc.path, exc.line) == (path, line)


def test_as_many_commands_as_allowed(tmp_path):
    text = (
        HEAD
        + 'argv = ["true"]\n'
        + '[[session.agent.command]]\nargv = ["true"]\n' * (MAX_COMMANDS - 1)
    )
    ws_file = tmp_path / "ws.toml"
    ws_file.write_text(text)
    assert len(load_workspace(ws_file).commands) == MAX_COMMANDS


def test_dotted_keys_up_to_the_limit_reach_the_parser():
    at_limit = ".".join(["a"] * MAX_KEY_PARTS) + " = 1\n"
    with pytest.raises(WorkspaceError, match=r"^x\.toml:1: a: unknown key"):
        parse_workspace(at_limit, "x.toml")
    with pytest.raises(WorkspaceError, match=r"^x\.toml:1: a dotted key has more than 16 parts$"):
        parse_workspace("a." + at_limit, "x.toml")
    # Dots in strings, comments and quoted parts are not key parts.
    many_dots = "a." * 100
    assert parse_workspace(f"# {many_dots}\n", "x.toml").commands == []
    with pytest.raises(WorkspaceError, match=r"^x\.toml:2: name: invalid server name"):
        parse_workspace(f'\nname = "{many_dots}"\n', "x.toml")
    with pytest.raises(WorkspaceError, match=r"^x\.toml:1: \"a\.a\..*: unknown key"):
        parse_workspace(f'"{many_dots}".b.c = 1\n', "x.toml")


def test_too_many_commands(tmp_path):
    commands = ", ".join(['{ argv = ["true"] }'] * (MAX_COMMANDS + 1))
    text = HEAD.replace("[[session.agent.command]]\n", "") + f"command = [{commands}]\n"
    exc = error_of(tmp_path, text)
    assert f"ws.toml:5: session[0].agent[0].command[{MAX_COMMANDS}]: too many commands" in str(exc)
    assert f"{MAX_COMMANDS:,}" in str(exc)


def test_a_million_commands_are_refused_quickly(tmp_path):
    text = HEAD + 'shell = "x"\n[[session.agent.command]]\n' * 1_000_000
    started = time.process_time()  # CPU work: its CPU time, whatever the load
    exc = error_of(tmp_path, text)
    assert "too large" in str(exc) and "1 MiB" in str(exc)
    with pytest.raises(WorkspaceError, match="too large"):
        parse_workspace(text, "big.toml")
    assert time.process_time() - started < 10


def test_a_50_MB_file_is_refused_without_reading_it(tmp_path):
    path = tmp_path / "big.toml"
    with open(path, "wb") as f:
        f.truncate(50 * 1024 * 1024)
    started = time.process_time()  # CPU work: its CPU time, whatever the load
    with pytest.raises(WorkspaceError) as info:
        load_workspace(path)
    assert (
        str(info.value)
        == f"{path}: too large (52,428,800 bytes): a workspace file may be at most 1 MiB"
    )
    assert time.process_time() - started < 5


def test_a_file_just_over_the_limit(tmp_path):
    text = "# " + "x" * (MAX_FILE_SIZE - 3) + "\n"
    assert len(text) == MAX_FILE_SIZE
    ws_file = tmp_path / "ws.toml"
    ws_file.write_text(text)
    assert load_workspace(ws_file).commands == []
    ws_file.write_text(text + "\n")
    with pytest.raises(WorkspaceError, match="too large"):
        load_workspace(ws_file)
    # A character of more than one byte counts for its bytes.
    with pytest.raises(WorkspaceError, match="too large"):
        parse_workspace("# " + "é" * (MAX_FILE_SIZE // 2), "x.toml")


@pytest.mark.parametrize(
    "builder",
    [
        pytest.param(
            lambda n: "".join(f"k{i}." + ".".join(["a"] * 15) + " = 1\n" for i in range(n // 48)),
            id="dotted-keys",
        ),
        pytest.param(
            lambda n: "".join(f"[k{i}." + ".".join(["a"] * 15) + "]\n" for i in range(n // 48)),
            id="dotted-headers",
        ),
        pytest.param(lambda n: "x = [" + "1," * (n // 2 - 10) + "]\n", id="long-array"),
        pytest.param(lambda n: '"\\' * (n // 2 - 1), id="unterminated-strings"),
        pytest.param(lambda n: "[" + " " * (n - 10) + "x", id="long-header"),
        pytest.param(lambda n: "a" * (n - 1), id="one-word"),
    ],
)
def test_a_file_of_the_largest_size_is_decided_in_bounded_time(tmp_path, builder):
    text = builder(MAX_FILE_SIZE)
    assert len(text.encode()) <= MAX_FILE_SIZE
    started = time.process_time()  # CPU work: its CPU time, whatever the load
    error_of(tmp_path, text)
    assert time.process_time() - started < 30


def test_not_utf8(tmp_path):
    exc = error_of(tmp_path, b'name = "ok"\n\n# caf\xe9\n')
    assert str(exc).endswith("ws.toml:3: not UTF-8 text (invalid continuation byte at byte 18)")
    with pytest.raises(
        WorkspaceError, match=r"^x\.toml:2: not UTF-8 text \(a lone surrogate '\\ud800'\)$"
    ):
        parse_workspace('name = "ok"\n# \ud800\n', "x.toml")


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(WorkspaceError) as info:
        load_workspace(tmp_path)
    assert str(info.value) == f"{tmp_path}: not a regular file (a directory)"


def test_a_fifo_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "ws.toml"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(WorkspaceError) as info:
        load_workspace(fifo)
    assert str(info.value) == f"{fifo}: not a regular file (a FIFO)"
    assert time.monotonic() - started < scaled(5)


def test_a_device_is_refused():
    with pytest.raises(
        WorkspaceError, match=r"^/dev/zero: not a regular file \(a character device\)$"
    ):
        load_workspace("/dev/zero")


def test_a_missing_file(tmp_path):
    with pytest.raises(WorkspaceError) as info:
        load_workspace(tmp_path / "nope.toml")
    assert str(info.value) == f"{tmp_path / 'nope.toml'}: cannot open: No such file or directory"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file(tmp_path):
    path = tmp_path / "ws.toml"
    path.write_text('name = "x"\n')
    path.chmod(0)
    with pytest.raises(WorkspaceError) as info:
        load_workspace(path)
    assert str(info.value) == f"{path}: cannot open: Permission denied"


def test_an_unreadable_file_even_as_root(tmp_path, monkeypatch):
    path = tmp_path / "ws.toml"
    path.write_text('name = "x"\n')
    real_open = os.open

    def deny(name: Any, *args: Any, **kwargs: Any) -> int:
        if os.fspath(name) == str(path):
            raise PermissionError(13, "Permission denied", name)
        return real_open(name, *args, **kwargs)

    monkeypatch.setattr(os, "open", deny)
    with pytest.raises(WorkspaceError) as info:
        load_workspace(path)
    assert str(info.value) == f"{path}: cannot open: Permission denied"


def test_odd_paths_stay_on_one_line(tmp_path):
    for name in ("new\nline.toml", "nul\0.toml", "esc\x1b.toml"):
        with pytest.raises(WorkspaceError) as info:
            load_workspace(tmp_path / name)
        assert "\n" not in str(info.value) and "\0" not in str(info.value)
        assert "\x1b" not in str(info.value)


def test_control_characters_in_argv_are_the_childs_business(tmp_path):
    text = HEAD + 'argv = ["echo", "a\\u001b[31mred\\nnext\\u007f", "tab\\there"]\n'
    ws_file = tmp_path / "ws.toml"
    ws_file.write_text(text)
    ws = load_workspace(ws_file)
    assert ws.commands[0].argv == ("echo", "a\x1b[31mred\nnext\x7f", "tab\there")


def test_a_valid_file_keeps_its_meaning(tmp_path):
    (tmp_path / "web").mkdir()
    ws_file = tmp_path / "ws.toml"
    ws_file.write_text(
        'name = "demo"\ngraceful_timeout = 5\n'
        '[[session]]\nname = "web"\n'
        '[[session.agent]]\nname = "frontend"\n'
        '[[session.agent.command]]\ntool = "dev"\nargv = ["sh", "-c", "true"]\ncwd = "web"\n'
        'env = { PORT = "3000" }\ngraceful_timeout = 2.0\n'
        '[[session.agent.command]]\nshell = "echo hi | cat"\n'
        '[[session.agent]]\nname = "idle"\n'
        '[[session]]\nname = "other"\n'
    )
    ws = load_workspace(ws_file)
    assert ws.name == "demo"
    assert ws.graceful_timeout == 5.0
    assert ws.sessions == {"web": ["frontend", "idle"], "other": []}
    first, second = ws.commands
    assert first.argv == ("sh", "-c", "true")
    assert first.tool == "dev"
    assert first.cwd == str(tmp_path / "web")
    assert first.env == {"PORT": "3000"}
    assert first.graceful_timeout == 2.0
    assert second.argv == ("/bin/sh", "-c", "echo hi | cat")
    assert second.cwd == str(tmp_path)
    assert second.tool == "frontend"  # unnamed: the agent's name, as its command's
    assert second.graceful_timeout is None


# -- through `procwindow serve`: nothing starts before the whole file is accepted --

FIRST = (
    '[[session]]\nname = "s"\n[[session.agent]]\nname = "a"\n'
    '[[session.agent.command]]\nargv = ["touch", "MARKER"]\n'
)  # lines 1-6

LAST_BAD = {
    "env-nul-value": (
        '[[session.agent.command]]\nargv = ["true"]\nenv = { A = "x\\u0000" }\n',
        9,
        "session[0].agent[0].command[1].env.A",
    ),
    "env-name-nul": (
        '[[session.agent.command]]\nargv = ["true"]\nenv = { "A\\u0000" = "x" }\n',
        9,
        'session[0].agent[0].command[1].env."A\\x00"',
    ),
    "grace-nan": (
        '[[session.agent.command]]\nargv = ["true"]\ngraceful_timeout = nan\n',
        9,
        "session[0].agent[0].command[1].graceful_timeout",
    ),
    "grace-too-long": (
        '[[session.agent.command]]\nargv = ["true"]\ngraceful_timeout = 1e9\n',
        9,
        "session[0].agent[0].command[1].graceful_timeout",
    ),
    "agent-name-control": (
        '[[session.agent]]\nname = "b\\u001b"\n[[session.agent.command]]\nargv = ["true"]\n',
        8,
        "session[0].agent[1].name",
    ),
    "program-missing": (
        '[[session.agent.command]]\nargv = ["nmp", "install"]\n',
        8,
        "session[0].agent[0].command[1].argv",
    ),
}


@pytest.mark.parametrize(("tail", "line", "key"), LAST_BAD.values(), ids=LAST_BAD.keys())
def test_serve_starts_nothing_when_the_last_command_is_bad(tmp_path, tail, line, key):
    marker = tmp_path / "MARKER"
    logs = tmp_path / "logs"
    env, runtime = isolated_env(tmp_path, "rt")
    ws_file = tmp_path / "ws.toml"
    ws_file.write_text(FIRST.replace("MARKER", str(marker)) + tail)
    done = subprocess.run(
        [sys.executable, "-m", "procwindow", "serve", str(ws_file), "--log-dir", str(logs)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith(f"procwindow serve: {ws_file}:{line}: {key}: "), done.stderr
    assert not logs.exists()  # created by the first spawn
    assert not marker.exists()
    assert not (runtime / "procwindow" / "default.sock").exists()


# -- any input: WorkspaceError or a Workspace, never anything else --

FRAGMENTS = [
    "[[session]]\n",
    "[[session.agent]]\n",
    "[[session.agent.command]]\n",
    "[session]\n",
    "[session.agent.command.x]\n",
    "name = ",
    "argv = ",
    "shell = ",
    "env = ",
    "cwd = ",
    "tool = ",
    "graceful_timeout = ",
    "session = ",
    "agent = ",
    "command = ",
    '"s"',
    '"a"',
    '"true"',
    '"sh"',
    '"/"',
    '"."',
    '"a.b"',
    '"\\u0000"',
    '"\\n"',
    '"\\u001b"',
    "'lit'",
    '"""\nml\n"""',
    "1",
    "-1",
    "1e9",
    "nan",
    "inf",
    "0xff",
    "true",
    "1979-05-27",
    "[",
    "]",
    "{",
    "}",
    "=",
    ".",
    ",",
    " ",
    "\n",
    "#",
    "\\",
    '"',
    "'",
    "\x00",
    "\x1b",
    "\u2028",
    "\ud800",
    "é",
    "\r\n",
]


def check_any(text: str) -> None:
    """``text`` gives a Workspace or one WorkspaceError of one line; nothing else escapes."""
    try:
        result: Workspace | WorkspaceError = parse_workspace(text, "<fuzz>")
    except WorkspaceError as exc:
        result = exc
    if isinstance(result, Workspace):
        return
    message = str(result)
    assert "\n" not in message
    assert len(message.splitlines()) == 1
    assert message.startswith("<fuzz>")
    assert result.line is None or 1 <= result.line <= text.count("\n") + 1


FUZZ = settings(
    max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@FUZZ
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=60).map("".join))
def test_fuzz_tomlish_text(text):
    check_any(text)


@FUZZ
@given(st.text(max_size=300))
def test_fuzz_any_text(text):
    check_any(text)


def toml_string(s: str) -> str:
    out = []
    for c in s:
        if c in '"\\':
            out.append("\\" + c)
        elif ord(c) < 0x20 or ord(c) == 0x7F:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def toml_key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else toml_string(k)


def toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v) if abs(v) < 10**100 else hex(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else repr(v)
    if isinstance(v, str):
        return toml_string(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return "{" + ", ".join(f"{toml_key(k)} = {toml_value(x)}" for k, x in v.items()) + "}"


def toml_document(doc: dict[str, Any], prefix: str = "") -> str:
    """Scalars and inline values first, then [tables] and [[arrays of tables]]."""
    lines: list[str] = []
    tables: list[str] = []
    for k, v in doc.items():
        name = f"{prefix}.{toml_key(k)}" if prefix else toml_key(k)
        if isinstance(v, dict) and v:
            tables.append(f"[{name}]\n" + toml_document(v, name))
        elif isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            tables.extend(f"[[{name}]]\n" + toml_document(x, name) for x in v)
        else:
            lines.append(f"{toml_key(k)} = {toml_value(v)}\n")
    return "".join(lines) + "".join(tables)


KEYS = st.sampled_from(
    [
        "name",
        "graceful_timeout",
        "session",
        "agent",
        "command",
        "argv",
        "shell",
        "cwd",
        "env",
        "tool",
        "PATH",
        "A=B",
        "x",
        "",
    ]
)
SCALARS = st.one_of(
    st.sampled_from(
        [
            "s",
            "a",
            "true",
            "sh",
            "/",
            ".",
            "",
            " ",
            "a.b",
            "*",
            "\x00",
            "\n",
            "\x1b",
            "nmp",
            "/bin/sh",
        ]
    ),
    st.text(max_size=8),
    st.integers(),
    st.integers(min_value=2**70, max_value=2**400),
    st.floats(),
    st.booleans(),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=20,
)


def mostly(good: st.SearchStrategy[Any], *bad: Any) -> st.SearchStrategy[Any]:
    """``good`` nine times in ten, else a bad value or anything: deep checks lie past
    shallow ones. (Hypothesis leans towards the first and last of a range, so the
    rare branch is one in the middle.)"""
    rare = st.one_of(st.sampled_from(bad), VALUES) if bad else VALUES
    return st.integers(0, 9).flatmap(lambda i: rare if i == 5 else good)


def pick(good: Sequence[Any], bad: Sequence[Any] = ()) -> st.SearchStrategy[Any]:
    return mostly(st.sampled_from(good), *bad)


ARGV = st.lists(
    st.sampled_from(["true", "sh", "-c", "x", "\x1b[1m", "a\nb"]), min_size=1, max_size=3
)
COMMANDS = st.fixed_dictionaries(
    {},
    optional={
        "argv": mostly(ARGV, [], [""], ["nmp"], ["/"], ["sh", "\x00"]),
        "shell": pick(["true", "echo hi | cat"], [" ", "\x00"]),
        "cwd": pick([".", "/", "~", ""], ["nowhere", "\x00", "/etc/passwd"]),
        "env": mostly(
            st.dictionaries(
                st.sampled_from(["A", "PATH"]),
                pick(["1", "", "/bin:/usr/bin"], ["\x00", "/nowhere"]),
                max_size=2,
            ),
            {"A=B": "1"},
            {"": "1"},
            {"\x00": "1"},
        ),
        "tool": pick(["shell", "dev"], ["", "a\nb", "\x1b", "\t"]),
        "graceful_timeout": pick([0, 1.5, 60], [61, -1, 10**30, math.inf, math.nan, True]),
    },
)
AGENTS = st.fixed_dictionaries(
    {"name": pick(["a", "b", "é"], ["a b", "", "a\x7f"])},
    optional={"command": mostly(st.lists(mostly(COMMANDS), min_size=1, max_size=3))},
)
SESSIONS = st.fixed_dictionaries(
    {"name": pick(["s", "t"], ["s.x", "\u2028"])},
    optional={"agent": mostly(st.lists(mostly(AGENTS), min_size=1, max_size=3))},
)
DOCUMENTS = st.fixed_dictionaries(
    {},
    optional={
        "name": pick(["demo"], ["a/b", "-x", "a" * 65]),
        "graceful_timeout": pick([0, 5, 2.5, -0.0], [1e9, math.nan]),
        "session": mostly(st.lists(mostly(SESSIONS), min_size=1, max_size=3)),
    },
)


@FUZZ
@given(DOCUMENTS)
def test_fuzz_structures(doc):
    text = toml_document(doc)
    check_any(text)
    check_any("x = " + toml_value(doc))
