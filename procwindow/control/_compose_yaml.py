"""The YAML of a process-compose file, read into a small tree of values and lines.

PyYAML's parser gives events; the tree is built from them here, without
PyYAML's own composer or constructors, so that:

- anchors, aliases and merge keys are refused where they appear: a YAML "billion
  laughs" is one anchor and is refused at it, before anything is expanded;
- the tree is bounded (``MAX_NODES`` values, ``MAX_DEPTH`` levels) and built
  without recursion, so any text of at most 1 MiB is read or refused in bounded
  time and memory;
- every value keeps its line, for errors;
- scalars stay text until the key that reads them says what it wants (a string,
  an integer, a boolean), as process-compose's Go decoder does: ``restart: no``
  is the string ``no``, not YAML 1.1's false.

:class:`ValueReader` reads the tree's values as the Go types process-compose
decodes them into, ``$NAME`` expanded, each failure placed on its key and line.

PyYAML is optional (the ``compose`` extra): without it, a YAML file is refused
in one line that says how to install it.
"""

from __future__ import annotations

import difflib
import importlib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from ._toml_lines import Key, key_text
from ._workspace_checks import WorkspaceError

__all__ = [
    "MAX_DEPTH",
    "MAX_NODES",
    "Node",
    "Places",
    "Scalar",
    "ValueReader",
    "as_bool",
    "as_int",
    "expand",
    "kind",
    "locate",
    "read_tree",
]

#: The most values (scalars, mappings, lists) a file may hold. A real file holds
#: a few dozen per process: this leaves room for 10,000 processes.
MAX_NODES = 500_000
#: The deepest nesting read; a process-compose file needs five levels.
MAX_DEPTH = 32

_CORE = "tag:yaml.org,2002:"
#: Explicit tags that only say what a plain value already is.
_TAGS = {f"{_CORE}{t}" for t in ("str", "int", "float", "bool", "null", "map", "seq")}
_INSTALL = "reading YAML needs PyYAML: pip install 'procwindow[compose]'"


@dataclass(slots=True)
class Scalar:
    """A scalar as written: its text, and whether it was plain (unquoted)."""

    text: str
    plain: bool
    tag: str | None = None

    @property
    def is_null(self) -> bool:
        if self.tag == f"{_CORE}null":
            return True
        return self.plain and self.tag is None and self.text in ("", "~", "null", "Null", "NULL")


@dataclass(slots=True)
class Node:
    """A value of the file and its line. A mapping entry's line is its key's,
    so that an error about the whole value points at the key that names it."""

    value: Scalar | dict[str, Node] | list[Node]
    line: int
    #: A mapping's keys, each with the line it is written on.
    key_lines: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class _Open:
    """A mapping or list being read: its key in its parent, and the key read last."""

    node: Node
    name: str | int | None = None
    key: str | None = None
    key_line: int = 0


def _yaml(path: str) -> ModuleType:
    try:
        return importlib.import_module("yaml")
    except ImportError:
        raise WorkspaceError(path, None, "", _INSTALL) from None


def read_tree(text: str, path: str) -> Node | None:
    """The tree of the file's single YAML document (None: the file is empty)."""
    yaml = _yaml(path)
    loader = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader
    builder = _Builder(yaml, path)
    try:
        for event in yaml.parse(text, Loader=loader):
            builder.take(event)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        context = getattr(exc, "context", None)
        why = f"{context}: {problem}" if context else problem
        line = mark.line + 1 if mark is not None else None
        raise WorkspaceError(path, line, "", f"invalid YAML: {why}") from None
    return builder.root


class _Builder:
    """Builds the tree from the parser's events, one at a time (no recursion)."""

    def __init__(self, yaml: ModuleType, path: str) -> None:
        self.yaml = yaml
        self.path = path
        self.stack: list[_Open] = []
        self.root: Node | None = None
        self.count = self.documents = 0

    def fail(self, line: int | None, message: str) -> WorkspaceError:
        return WorkspaceError(self.path, line, key_text(self.here()), message)

    def here(self) -> Key:
        """The key of the value being read."""
        key = [frame.name for frame in self.stack[1:] if frame.name is not None]
        if self.stack and isinstance(self.stack[-1].node.value, list):
            key.append(len(self.stack[-1].node.value))
        elif self.stack and self.stack[-1].key is not None:
            key.append(self.stack[-1].key)
        return tuple(key)

    def take(self, event: Any) -> None:
        yaml = self.yaml
        line = event.start_mark.line + 1 if event.start_mark is not None else None
        if isinstance(event, yaml.DocumentStartEvent):
            self.documents += 1
            if self.documents > 1:
                raise self.fail(line, "holds more than one YAML document")
            return
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise self.fail(
                line,
                "anchors and aliases (&, *) are not read (not supported: write each value out)",
            )
        if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            self.stack.pop()
            return
        if not isinstance(
            event, (yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent)
        ):
            return
        assert line is not None
        self.count += 1
        if self.count > MAX_NODES:
            raise self.fail(line, f"too many values: a file may hold at most {MAX_NODES:,}")
        tag = event.tag if event.tag not in (None, "!") else None
        if tag is not None and tag not in _TAGS:
            raise self.fail(line, f"the tag {tag!r} is not read (not supported: plain values only)")
        if isinstance(event, yaml.ScalarEvent):
            plain = bool(event.implicit[0]) if tag is None else False
            key = event.value if tag is None else None
            self.attach(Node(Scalar(event.value, plain, tag), line), key)
            return
        top = self.stack[-1] if self.stack else None
        if top is not None and isinstance(top.node.value, dict) and top.key is None:
            raise self.fail(line, "a mapping's key must be a plain string")
        container: dict[str, Node] | list[Node] = (
            {} if isinstance(event, yaml.MappingStartEvent) else []
        )
        node = Node(container, line)
        name = self.here()[-1] if self.stack else None
        self.attach(node, None)
        self.stack.append(_Open(node, name))
        if len(self.stack) > MAX_DEPTH:
            raise self.fail(line, f"nested more than {MAX_DEPTH} levels deep")

    def attach(self, node: Node, key_text: str | None) -> None:
        """Put a value in its place: the root, a list's next item, a mapping's
        next key, or the value of the key read last."""
        if not self.stack:
            self.root = node
            return
        top = self.stack[-1]
        if isinstance(top.node.value, list):
            top.node.value.append(node)
            return
        assert isinstance(top.node.value, dict)
        if top.key is None:
            if key_text is None:
                raise self.fail(node.line, "a mapping's key must be a plain string")
            if key_text == "<<":
                raise self.fail(
                    node.line, "merge keys (<<) are not read (not supported: write it out)"
                )
            if key_text in top.node.key_lines or key_text in top.node.value:
                raise self.fail(node.line, f"the key {key_text!r} is given twice")
            top.key, top.key_line = key_text, node.line
            top.node.key_lines[key_text] = node.line
            return
        node.line = top.key_line
        top.node.value[top.key] = node
        top.key = None


# -- values: what a key reads a scalar as -------------------------------------

_INT = re.compile(r"[-+]?(?:0|[1-9][0-9_]*)")
# A Go bool field takes YAML 1.1's words too (go-yaml does, for compatibility).
_TRUE = ("true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON", "y", "Y")
_FALSE = ("false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF", "n", "N")


def as_int(scalar: Scalar) -> int | None:
    """A plain (or ``!!int``) decimal integer, else None."""
    if scalar.tag not in (None, f"{_CORE}int") or (scalar.tag is None and not scalar.plain):
        return None
    text = scalar.text.strip()
    if not _INT.fullmatch(text) or len(text) > 20:
        return None
    return int(text.replace("_", ""))


def as_bool(scalar: Scalar) -> bool | None:
    """A plain (or ``!!bool``) true or false (or yes, no, on, off), else None."""
    if scalar.tag not in (None, f"{_CORE}bool") or (scalar.tag is None and not scalar.plain):
        return None
    if scalar.text in _TRUE:
        return True
    if scalar.text in _FALSE:
        return False
    return None


# -- $VAR expansion, as process-compose does before it reads the file ---------

_VAR = re.compile(r"\$(?:(\$)|\{([^}]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def expand(text: str, lookup: Callable[[str], str]) -> str:
    """``$NAME`` and ``${NAME}`` replaced by ``lookup(NAME)``, ``$$`` by ``$``."""
    if "$" not in text:
        return text

    def one(match: re.Match[str]) -> str:
        if match.group(1):
            return "$"
        return lookup(match.group(2) if match.group(2) is not None else match.group(3))

    return _VAR.sub(one, text)


def kind(node: Node) -> str:
    """A value's type, as YAML names it."""
    value: Any = node.value
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value.is_null:
        return "null"
    if as_bool(value) is not None:
        return "a boolean"
    if as_int(value) is not None:
        return "an integer"
    return "a string"


# -- reading typed values, placed on their lines --------------------------------

#: For each key of the mapped data, the YAML key it came from and its line.
Places = dict[Key, tuple[Key, int | None]]


def locate(places: Places, key: Key) -> tuple[Key, int | None]:
    """The YAML key and line of a key of the data, else of its nearest parent."""
    for n in range(len(key), -1, -1):
        found = places.get(key[:n])
        if found is not None:
            return found
    return ((), None)


class ValueReader:
    """Reads the tree's values as process-compose's Go types, expanding
    ``$NAME``; every failure names the YAML key and its line."""

    def __init__(self, path: str, places: Places) -> None:
        self.path = path
        self.places = places
        self.dotenv: dict[str, str] = {}
        self.expanding = True

    def fail(self, node: Node | None, key: Key, message: str) -> WorkspaceError:
        return WorkspaceError(self.path, node.line if node else None, key_text(key), message)

    def place(self, data_key: Key, node: Node, key: Key) -> None:
        self.places[data_key] = (key, node.line)

    def mapping(
        self, node: Node, key: Key, allowed: set[str] | None, refused: Mapping[str, str] = {}
    ) -> dict[str, Node]:
        """A mapping's entries, every key known (``allowed`` None: any key). An
        entry set to null is left out, as Go leaves a field it sets to null unset."""
        if not isinstance(node.value, dict):
            raise self.fail(node, key, f"must be a mapping, got {kind(node)}")
        if allowed is None:
            return dict(node.value)
        out: dict[str, Node] = {}
        for name, value in node.value.items():
            if isinstance(value.value, Scalar) and value.value.is_null:
                continue
            if name in refused:
                raise self.fail(
                    value, (*key, name), f"is not read (not supported: {refused[name]})"
                )
            if name not in allowed:
                close = difflib.get_close_matches(name, sorted(allowed), n=1)
                hint = f"did you mean {close[0]!r}?" if close else "expected one of: "
                hint += "" if close else ", ".join(sorted(allowed))
                raise self.fail(value, (*key, name), f"unknown key ({hint})")
            out[name] = value
        return out

    def scalar(self, node: Node, key: Key, what: str) -> Scalar:
        if not isinstance(node.value, Scalar):
            raise self.fail(node, key, f"must be {what}, got {kind(node)}")
        scalar = node.value
        if self.expanding and "$" in scalar.text:
            scalar = Scalar(expand(scalar.text, self.lookup), scalar.plain, scalar.tag)
        return scalar

    def lookup(self, name: str) -> str:
        # process-compose loads .env without overriding its own environment.
        return os.environ.get(name, self.dotenv.get(name, ""))

    def string(self, node: Node, key: Key) -> str:
        return self.scalar(node, key, "a string").text

    def integer(self, node: Node, key: Key) -> int:
        value = as_int(self.scalar(node, key, "an integer"))
        if value is None:
            raise self.fail(node, key, f"must be an integer, got {kind(node)}")
        return value

    def boolean(self, node: Node, key: Key) -> bool:
        value = as_bool(self.scalar(node, key, "true or false"))
        if value is None:
            raise self.fail(node, key, f"must be true or false, got {kind(node)}")
        return value

    def rendered(self, node: Node, key: Key) -> str:
        """A string process-compose renders as a Go template: refused if it is one."""
        value = self.string(node, key)
        if "{{" in value:
            raise self.fail(
                node, key, "holds a Go template (not supported: templates are not rendered)"
            )
        return value

    def environment(self, node: Node, key: Key) -> list[tuple[str, str, Node, Key]]:
        """``- NAME=value`` items: each name, value, node and key."""
        if not isinstance(node.value, list):
            raise self.fail(node, key, f"must be a list of NAME=value strings, got {kind(node)}")
        out = []
        for i, item in enumerate(node.value):
            value = self.string(item, (*key, i))
            name, eq, rest = value.partition("=")
            if not eq:
                raise self.fail(item, (*key, i), f"must be NAME=value, got {value[:60]!r}")
            out.append((name, rest, item, (*key, i)))
        return out
