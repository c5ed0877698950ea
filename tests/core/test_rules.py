"""The shared rules: one definition of each check, pattern and count, used by every layer."""

from __future__ import annotations

import asyncio

import pytest

from procwindow import InvalidArgv, InvalidScope, Supervisor, WrongLoop
from procwindow.core import Pattern
from procwindow.core._topics import topic_for
from procwindow.core.rules import (
    MAX_GRACEFUL_TIMEOUT,
    SHELL,
    CommandError,
    ScopeCounts,
    check_argv,
    check_graceful_timeout,
    check_scope_name,
    check_tool,
    command_argv,
    count_scopes,
    scope_pattern,
    topic_token,
)

from .helpers import py


def test_command_argv_takes_exactly_one_of_argv_and_shell() -> None:
    assert command_argv(argv=["make", "-j4"]) == ("make", "-j4")
    assert command_argv(shell="make | tee log") == (SHELL, "-c", "make | tee log")
    for both_or_neither in ({}, {"argv": ["ls"], "shell": "ls"}):
        with pytest.raises(CommandError, match="exactly one") as info:
            command_argv(**both_or_neither)
        assert info.value.field == ""


@pytest.mark.parametrize(
    ("kwargs", "field", "index", "fact"),
    [
        ({"argv": []}, "argv", None, "argv must not be empty"),
        ({"argv": [""]}, "argv", 0, "argv[0] must not be empty"),
        ({"argv": ["echo", 3]}, "argv", 1, "argv[1] is an int"),
        ({"argv": ["echo", "a\0b"]}, "argv", 1, "NUL"),
        ({"argv": "echo hi"}, "argv", None, "sequence of strings"),
        ({"argv": {"a": "b"}}, "argv", None, "sequence of strings"),
        ({"shell": "   "}, "shell", None, "shell must not be empty"),
        ({"shell": 3}, "shell", None, "shell must be a string"),
        ({"shell": "echo \0"}, "shell", None, "NUL"),
    ],
)
def test_a_bad_command_names_the_field_and_position(kwargs, field, index, fact) -> None:
    with pytest.raises(CommandError) as info:
        command_argv(**kwargs)
    err = info.value
    assert isinstance(err, InvalidArgv)
    assert (err.field, err.index) == (field, index)
    assert fact in str(err)
    assert "\n" not in str(err)
    assert err.reason in str(err)


def test_check_argv_is_the_spawn_rule() -> None:
    assert check_argv(iter(["a", "b"])) == ("a", "b")
    with pytest.raises(InvalidArgv):
        check_argv(None)


@pytest.mark.parametrize("bad", ["", "two\nlines", "bell\a", 3, None])
def test_tool_must_be_one_printable_line(bad: object) -> None:
    with pytest.raises(InvalidArgv, match="tool"):
        check_tool(bad)


def test_errors_show_any_value_in_one_short_line() -> None:
    huge = 10**5000  # its repr() raises ValueError
    for check in (
        lambda: command_argv(argv=["x", huge]),
        lambda: check_tool(huge),
        lambda: check_scope_name("session", huge),
        lambda: check_graceful_timeout(huge),
        lambda: command_argv(argv=["x" * 10_000, 1]),
    ):
        with pytest.raises(ValueError, match=r"must|contains|not a str") as info:
            check()
        message = str(info.value)
        assert "\n" not in message and len(message) < 300, message


def test_tool_and_scope_names_that_are_fine_pass_through() -> None:
    assert check_tool("web fetch") == "web fetch"
    assert check_scope_name("session", "build-2") == "build-2"


@pytest.mark.parametrize("bad", ["", "a*", ">", "*", "a b", "tab\t", "nul\0", "esc\x1b"])
def test_scope_names_hold_no_wildcard_or_whitespace(bad: str) -> None:
    with pytest.raises(InvalidScope):
        check_scope_name("agent", bad)


@pytest.mark.parametrize("name", ["gpt-4.1", "2026-12-01T10:00:00.123", "a%2Eb", "v1.2.3"])
def test_names_with_dots_are_one_escaped_topic_token(name: str) -> None:
    assert check_scope_name("agent", name) == name
    token = topic_token(name)
    assert "." not in token
    # The escape is reversible, so two names never share a token.
    assert token.replace("%2E", ".").replace("%25", "%") == name
    assert topic_token("a.b") != topic_token("a%2Eb")
    pattern = Pattern(scope_pattern("s", name))
    assert pattern.matches(topic_for("s", name, "exit"))
    assert not pattern.matches(topic_for("s", name + "x", "exit"))


def test_graceful_timeout_bounds() -> None:
    assert check_graceful_timeout(0) == 0.0
    assert check_graceful_timeout(MAX_GRACEFUL_TIMEOUT) == MAX_GRACEFUL_TIMEOUT
    for bad in (-1, MAX_GRACEFUL_TIMEOUT + 1, float("nan"), float("inf"), True, "5", 10**400):
        with pytest.raises(ValueError, match="graceful_timeout"):
            check_graceful_timeout(bad)


def test_scope_pattern_matches_exactly_its_scope() -> None:
    everything = Pattern(scope_pattern())
    session = Pattern(scope_pattern("s1"))
    agent = Pattern(scope_pattern("s1", "a1"))
    topic = "session.s1.agent.a1.proc.exit"
    other = "session.s1.agent.a2.proc.start"
    assert everything.matches(topic) and everything.matches(other)
    assert session.matches(topic) and session.matches(other)
    assert agent.matches(topic) and not agent.matches(other)
    assert not session.matches("session.s2.agent.a1.proc.exit")


class _P:
    def __init__(self, session: str, agent: str, running: bool) -> None:
        self.session, self.agent, self.running = session, agent, running


def test_count_scopes_counts_running_and_total_and_keeps_declared_scopes() -> None:
    procs = [_P("b", "x", True), _P("b", "x", False), _P("a", "y", False), _P("b", "w", True)]
    counts = count_scopes(procs, declared={"c": ["idle"], "b": ["x"]})
    assert list(counts) == ["a", "b", "c"]
    assert list(counts["b"]) == ["w", "x"]
    assert counts["b"]["x"] == ScopeCounts(1, 2)
    assert counts["b"]["w"] == ScopeCounts(1, 1)
    assert counts["a"]["y"] == ScopeCounts(0, 1)
    assert counts["c"]["idle"] == ScopeCounts(0, 0)
    session_b = sum(counts["b"].values(), ScopeCounts())
    assert session_b == ScopeCounts(2, 3)
    assert session_b.label("b") == "b  2/3"
    assert ScopeCounts().label("c") == "c"


def test_a_supervisor_refuses_a_second_event_loop(tmp_path) -> None:
    sup = Supervisor(log_dir=tmp_path)

    async def first() -> None:
        p = await sup.spawn(py("pass"), session="s", agent="a")
        await sup.wait(p.id)

    async def second() -> None:
        with pytest.raises(WrongLoop, match="event loop"):
            await sup.spawn(py("pass"), session="s", agent="a")

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(first())
        asyncio.run(second())
    finally:
        loop.run_until_complete(sup.close())
        loop.close()
