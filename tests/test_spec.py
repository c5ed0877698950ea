"""Every surface agrees with the spec (``procwindow.core.spec``): the library's
signatures (the Supervisor, the interface, the remote client), the protocol's
handlers, ``procwindow ctl``'s options, the MCP tools' input schemas, workspace
files' keys and docs/protocol.md. A field one of them gains, loses or words
otherwise than the spec fails a test here."""

from __future__ import annotations

import argparse
import asyncio
import inspect
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from procwindow import cli
from procwindow.control._handlers import Handlers
from procwindow.control.remote import RemoteSupervisor
from procwindow.control.workspace import _COMMAND_KEYS, WORKSPACE_ONLY
from procwindow.core import Supervisor, SupervisorAPI, error_class
from procwindow.core._errors import error_codes
from procwindow.core.spec import OPS, VERBS, Field, Kind, Verb

ROOT = Path(__file__).resolve().parent.parent

#: Parameters a library method takes besides its operation's fields.
LIBRARY_ONLY = {"subscribe": {"maxsize"}}
#: Arguments a ctl verb takes besides its operation's fields.
CTL_ONLY = {
    "help",
    "json",
    "command",  # run: the command after '--'
    "ready_timeout",  # run: --ready-timeout, into --ready's check
    "fixed",  # wait-for: -F, regex false
    "no_newline",  # write: -n
}


def _library_verbs() -> list[Verb]:
    return [verb for verb in VERBS.values() if verb.library]


@pytest.mark.parametrize("owner", [Supervisor, RemoteSupervisor], ids=lambda c: c.__name__)
def test_both_supervisors_keep_the_interface_and_its_words(owner: type) -> None:
    """Both subclass SupervisorAPI, take each operation as it does, and every
    public member has a docstring (its own, or the interface's inherited)."""
    assert SupervisorAPI in owner.__mro__
    for name, member in inspect.getmembers(SupervisorAPI):
        if name.startswith("_"):
            continue
        mine = getattr(owner, name)
        assert type(mine) is type(member), (owner.__name__, name)
        if callable(member):
            theirs, ours = inspect.signature(member), inspect.signature(mine)
            assert list(ours.parameters) == list(theirs.parameters), (owner.__name__, name)
    undocumented = [
        name
        for name, member in inspect.getmembers(owner)
        if not name.startswith("_") and not inspect.getdoc(member)
    ]
    assert not undocumented, f"{owner.__name__}: no docstring for {undocumented}"


def test_every_operation_of_the_protocol_has_a_handler() -> None:
    handlers = Handlers(Any, {})  # type: ignore[arg-type]
    assert set(handlers._verbs) == OPS


@pytest.mark.parametrize("owner", [Supervisor, SupervisorAPI, RemoteSupervisor])
@pytest.mark.parametrize("verb", _library_verbs(), ids=lambda v: v.name)
def test_the_library_takes_each_field_with_its_default(owner: type, verb: Verb) -> None:
    method = getattr(owner, verb.library or "", None)
    if method is None:
        assert owner is not Supervisor, f"Supervisor has no {verb.library}"
        return  # the interface and the remote client offer what the window needs
    params = list(inspect.signature(method).parameters.values())[1:]  # self
    by_name = {p.name: p for p in params}
    fields = [f for f in verb.fields if f.library]
    for f in fields:
        if f.name == "proc" and f.required:
            first = params[0]
            assert first.name == "proc_id", (verb.library, first)
            assert first.default is inspect.Parameter.empty
            continue
        assert f.name in by_name, f"{owner.__name__}.{verb.library} lacks {f.name}"
        default = by_name[f.name].default
        if f.required:
            assert default is inspect.Parameter.empty or default is None, (verb.name, f.name)
        else:
            assert default == f.default, (owner.__name__, verb.library, f.name, default)
    known = {f.name for f in fields} | {"proc_id"} | LIBRARY_ONLY.get(verb.library or "", set())
    extra = set(by_name) - known
    assert not extra, f"{owner.__name__}.{verb.library} takes {extra}, which {verb.name} lacks"


def _ctl_parsers() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    ctl = _subparsers(parser)["ctl"]
    return _subparsers(ctl)


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError(f"{parser.prog} has no subcommands")


@pytest.mark.parametrize("verb", [v for v in VERBS.values() if v.ctl], ids=lambda v: v.name)
def test_ctl_offers_each_field_as_the_spec_spells_it(verb: Verb) -> None:
    parser = _ctl_parsers()[verb.ctl or ""]
    actions = {a.dest: a for a in parser._actions}
    for f in verb.fields:
        if f.cli is None:
            assert f.name not in actions, f"ctl {verb.ctl} offers {f.name}, the spec says not"
            continue
        action = actions.get(f.name)
        assert action is not None, f"ctl {verb.ctl} lacks {f.name}"
        assert (action.help or "").startswith(f.help), (verb.ctl, f.name, action.help)
        if f.option is None:
            assert not action.option_strings and action.metavar == f.cli, (verb.ctl, f.name)
        else:
            assert f.option in action.option_strings, (verb.ctl, f.name, action.option_strings)
        if f.choices:
            assert tuple(action.choices or ()) == f.choices
    extra = set(actions) - set(verb.names) - CTL_ONLY
    assert not extra, f"ctl {verb.ctl} has {extra}: not fields of {verb.name}"


def _mcp_tools() -> dict[str, dict[str, Any]]:
    pytest.importorskip("mcp")
    from procwindow.mcp import Backend, Scope, build_app

    app = build_app(Backend("/nowhere"), Scope("s", None))
    tools = asyncio.run(app.list_tools())
    return {tool.name: tool.input_schema for tool in tools}


def _schema_of(prop: dict[str, Any]) -> dict[str, Any]:
    """A property's own schema (an optional one is ``anyOf`` it and null)."""
    for option in prop.get("anyOf", ()):
        if option.get("type") != "null":
            return {**option, **{k: v for k, v in prop.items() if k != "anyOf"}}
    return prop


def test_the_mcp_tools_take_the_fields_of_their_operations() -> None:
    from procwindow.mcp._args import TOOL_ONLY, TOOLS, tool_fields

    schemas = _mcp_tools()
    assert set(TOOLS) | set(TOOL_ONLY) <= set(schemas)
    for tool, schema in schemas.items():
        fields = tool_fields(tool)
        props = schema.get("properties", {})
        assert set(props) == set(fields), (tool, sorted(props), sorted(fields))
        required = {name for name, f in fields.items() if f.required}
        assert set(schema.get("required", ())) == required, tool
        for name, f in fields.items():
            prop = _schema_of(props[name])
            assert prop.get("description") == f.help, (tool, name)
            if f.kind in (Kind.COUNT, Kind.ID):
                low, high = f.bounds()
                assert prop.get("minimum") == low, (tool, name, prop)
                if f.kind is Kind.COUNT:
                    assert prop.get("maximum") == high, (tool, name, prop)
            if not f.required:
                assert prop.get("default") == f.default, (tool, name, prop)
            if f.choices:
                assert tuple(prop.get("enum", ())) == f.choices, (tool, name, prop)


def test_the_mcp_bounds_are_never_looser_than_the_protocols() -> None:
    for verb in VERBS.values():
        for f in verb.fields:
            if f.mcp is None or f.mcp.maximum is None:
                continue
            if f.maximum is not None:
                assert f.mcp.maximum <= f.maximum, (verb.name, f.name)


def test_a_workspace_command_takes_the_run_fields_the_spec_names() -> None:
    run = VERBS["run"]
    workspace_fields = {f.name for f in run.fields if f.workspace}
    assert workspace_fields <= set(run.names)
    assert not WORKSPACE_ONLY & set(run.names), "a workspace key shadows a field of run"
    assert workspace_fields | WORKSPACE_ONLY == _COMMAND_KEYS


def test_docs_protocol_md_has_the_fields_of_the_spec() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "protocol_docs.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_field_of_a_readiness_check_is_typed_documented_and_a_library_field() -> None:
    """A key a kind of check gains (``status`` of ``http``) is in the protocol's
    type table, the ``Ready`` dataclass and docs/protocol.md's table of checks."""
    from procwindow.core import Ready
    from procwindow.core._fields import _READY_TYPES
    from procwindow.core.spec import READY_KINDS

    docs = (ROOT / "docs" / "protocol.md").read_text()
    table = docs[docs.index("| check | fields | ready when |") :]
    table = table[: table.index("\n\n")]
    for kind, keys in READY_KINDS.items():
        row = next(line for line in table.splitlines() if line.strip().startswith(f"| {kind} |"))
        for key in keys:
            assert key in _READY_TYPES, (kind, key)
            assert key in Ready.__dataclass_fields__, (kind, key)
            assert f'`"{key}"' in row, (kind, key, row)


def test_every_error_code_names_one_class() -> None:
    for code, cls in error_codes().items():
        assert error_class(code) is cls
        assert code == cls.code or code in cls.codes
        for name in cls.details:
            assert name not in ("type", "code", "message"), (cls, name)


@pytest.mark.parametrize(
    ("f", "value", "message"),
    [
        (VERBS["out"].field("since"), -1, "since must be an integer of at least 0, got -1"),
        (VERBS["out"].field("limit"), True, "limit must be an integer of at least 1, got True"),
        (VERBS["out"].field("proc"), 1.0, "proc must be an integer of at least 1, got 1.0"),
        (VERBS["excerpt"].field("max_bytes"), 0, "max_bytes must be an integer of at least 256"),
        (VERBS["excerpt"].field("max_bytes"), 2**20 + 1, "max_bytes must be an integer of at most"),
        (VERBS["run"].field("merge_stderr"), 1, "merge_stderr must be true or false, got 1"),
        (VERBS["run"].field("timeout"), float("nan"), "timeout must be a positive number of"),
        (VERBS["out"].field("stream"), "both", "stream must be one of stdout, stderr, got 'both'"),
        (VERBS["run"].field("ready"), True, "ready must be a line pattern, a port or an object"),
    ],
)
def test_a_field_refuses_with_one_line_naming_it(f: Field, value: Any, message: str) -> None:
    from procwindow.core import InvalidField

    with pytest.raises(InvalidField) as info:
        f.check(value)
    assert str(info.value).startswith(message)
    assert "\n" not in str(info.value)
    assert info.value.field == f.name


def test_a_verb_refuses_unknown_and_missing_fields_and_fills_defaults() -> None:
    from procwindow.core import InvalidField

    excerpt = VERBS["excerpt"]
    assert excerpt.check({"proc": 2}) == {
        "proc": 2,
        "head": 20,
        "tail": 40,
        "max_bytes": 8000,
        "since": 0,
    }
    with pytest.raises(InvalidField, match=r"^proc is required$"):
        excerpt.check({})
    with pytest.raises(InvalidField, match=r"^unknown field 'heads': excerpt takes proc, head"):
        excerpt.check({"proc": 2, "heads": 3})
    with pytest.raises(InvalidField, match="head and tail together must be at most 10000"):
        excerpt.check({"proc": 2, "head": 6000, "tail": 6000})


def test_every_error_the_library_raises_is_exported_from_procwindow() -> None:
    import procwindow
    import procwindow.core

    errors = {
        name
        for name in procwindow.core.__all__
        if isinstance(getattr(procwindow.core, name), type)
        and issubclass(getattr(procwindow.core, name), Exception)
    }
    assert {"Timeout", "CommandError", "InvalidField"} <= errors
    assert errors - set(procwindow.__all__) == set()
