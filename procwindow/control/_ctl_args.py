"""``procwindow ctl``'s command line: its verbs and options, the checks ctl makes
itself before it asks the server (``--ready``, ``--since``, timeouts), and its
exit statuses.

Apart from :mod:`.ctl` (which carries a verb out) and :mod:`._ctl_verbs` (what
each verb asks and prints) because argparse's setup is long and asks nothing of
a server.
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import sys
import time
from collections.abc import Callable, Mapping
from typing import Any

from ..core import InvalidArgv, InvalidPattern, Regex, http_target, spec
from ..core.spec import Field, Kind, Verb
from ._sockdir import DEFAULT_SERVER_NAME

__all__ = [
    "EXIT_CONNECT",
    "EXIT_HELP",
    "EXIT_SERVER",
    "EXIT_TIMEOUT",
    "EXIT_USAGE",
    "SINCE_FORMS",
    "VERBS",
    "configure",
    "parse_ready",
    "parse_since",
    "request",
]

EXIT_SERVER = 1
EXIT_USAGE = 2
EXIT_CONNECT = 3
#: ``wait-for``/``ready`` ran out of time, as timeout(1) exits.
EXIT_TIMEOUT = 124

EXIT_HELP = """\
exit status:
  0    ok
  1    the server refused or failed the request; search: nothing matched;
       wait-for: the process ended without a matching line; ready: it exited
       (or its check gave up) before it was ready
  2    usage error (also a pattern that does not compile)
  3    no server to talk to
  124  wait-for, ready, wait: --timeout ran out (the process keeps running)
'wait' exits with the process's own exit status once it exited.
Errors are one line on stderr (a mistyped option also shows the usage).
"""

VERBS = (
    "top",
    "idx",
    "out",
    "term",
    "kill",
    "interrupt",
    "signal",
    "dismiss",
    "forget",
    "restart",
    "show",
    "ports",
    "tree",
    "wait",
    "run",
    "events",
    "sessions",
    "history",
    "search",
    "wait-for",
    "ready",
    "excerpt",
    "write",
    "resize",
    "screen",
    "up",
    "down",
    "workspaces",
    "bridge",
)
#: Verbs whose one positional argument may come after '--' (when it starts with '-').
_AFTER_DASHES = {"search": "pattern", "wait-for": "pattern", "write": "data"}

#: ``--since`` units: seconds each.
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"(?:\d+(?:\.\d+)?[smhdw])+")
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
#: What ``--ready SPEC`` takes ('ctl ready' waits for it to pass).
READY_FORMS = (
    "port:PORT (or port:HOST:PORT) accepts connections, an http:// URL answers 2xx or 3xx,"
    " line:REGEX matches a line of its"
    " output, or cmd:SHELL-LINE exits 0 ('ctl ready' waits for it)"
)
#: What ``--since WHEN`` takes, besides a field's own help.
SINCE_FORMS = (
    "a duration ago (90s, 30m, 2h, 1d, 1h30m), a date or time, local unless it has an"
    " offset (2024-05-01, 2024-05-01T14:30, 2024-05-01T14:30+02:00), or @EPOCH seconds"
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ctl's options and verbs to ``parser``.

    A verb's arguments that are fields of its operation come from the operation's
    spec (:data:`procwindow.core.spec.VERBS`: name, help, type, choices) through
    :func:`add_fields`; what is ctl's own (``--json``, ``--follow``'s ``-f``,
    ``--env NAME=VALUE``, ``--ready SPEC``, a command after ``--``) is added here.
    """
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = EXIT_HELP
    parser.add_argument(
        "--socket",
        metavar="PATH",
        help="the server's socket (default: $PROCWINDOW_SOCKET, else the socket of --name)",
    )
    parser.add_argument(
        "--name",
        help=f"the server's name (default: {DEFAULT_SERVER_NAME!r}; for 'up FILE', the"
        " workspace's name)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON for programs")
    verbs = parser.add_subparsers(
        dest="verb", metavar="VERB", required=True, parser_class=_VerbParser
    )
    add_fields(_verb_parser(verbs, "top"), "top")
    text = OPERATIONS["idx"].help
    p = _verb_parser(
        verbs,
        "idx",
        text,
        text + ": pid status exit_code tool cmd start_unix runtime_sec. Its pid column is"
        " procwindow's id of the process (the ID other verbs take), as the index format"
        " has it; the kernel's pid is os_pid in 'ctl --json top' and in the protocol.",
    )
    add_fields(p, "idx")
    p = _verb_parser(verbs, "out", "print a process's output")
    add_fields(p, "out", short={"follow": "-f"})
    for name in ("term", "kill", "interrupt", "dismiss", "forget", "restart"):
        add_fields(_verb_parser(verbs, name), name)
    p = _verb_parser(verbs, "signal")
    add_fields(p, "signal", metavars={"os_pid": "PID"})
    _json_option(p)
    for name in ("show", "ports", "tree"):
        p = _verb_parser(verbs, name)
        add_fields(p, name)
        _json_option(p)
    text = "wait until a process exits, and exit with its exit status"
    p = _verb_parser(
        verbs, "wait", text, text + " (124 after --timeout: the process keeps running)."
    )
    add_fields(p, "wait")
    _json_option(p)
    p = _verb_parser(
        verbs,
        "run",
        "start a command: ctl run --session S --agent A [--tool T] -- CMD ARGS...",
        "Start CMD ARGS... (after '--') and print the new process's id.",
    )
    add_fields(
        p,
        "run",
        metavars={"shell": "LINE", "env": "NAME=VALUE", "ready": "SPEC"},
        notes={"ready": READY_FORMS},
    )
    p.add_argument(
        "--ready-timeout", type=float, metavar="SECONDS", help="give the --ready check up then"
    )
    add_fields(_verb_parser(verbs, "events", "print events whose topic matches PATTERN"), "events")
    _verb_parser(verbs, "sessions")
    _configure_history(verbs)
    _configure_agent_verbs(verbs)
    _configure_workspace_verbs(verbs)
    text = "pipe stdin and stdout to the server's socket (what 'procwindow attach ssh://…' runs)"
    p = verbs.add_parser("bridge", help=text, description=text + "; ends when either side closes.")
    p.add_argument("server", nargs="?", metavar="NAME", help="the server's name (default: --name)")


#: ctl's verbs that carry out an operation of the protocol, by ctl's name.
OPERATIONS: dict[str, Verb] = {verb.ctl: verb for verb in spec.VERBS.values() if verb.ctl}


def _verb_parser(
    verbs: Any, name: str, text: str | None = None, description: str | None = None
) -> argparse.ArgumentParser:
    """A verb's parser; its help is the operation's, unless ``text`` says more."""
    text = text or OPERATIONS[name].help
    parser: argparse.ArgumentParser = verbs.add_parser(
        name, help=text, description=description or text
    )
    return parser


def add_fields(
    parser: argparse.ArgumentParser,
    ctl_verb: str,
    *,
    short: Mapping[str, str] | None = None,
    metavars: Mapping[str, str] | None = None,
    notes: Mapping[str, str] | None = None,
    skip: tuple[str, ...] = (),
) -> None:
    """Add the fields of ``ctl_verb``'s operation that ctl offers (``Field.cli``) as
    arguments: a positional one for a metavar, else ``--name``; named by the field
    (its ``dest``), with the field's help. Values are checked by the spec, after
    parsing, so ctl refuses a bad one as the server would (:func:`request`).
    ``notes`` add what ctl takes besides (``--since``'s forms of a time)."""
    for f in OPERATIONS[ctl_verb].fields:
        if f.cli is None or f.name in skip:
            continue
        kwargs: dict[str, Any] = {"help": _field_help(f)}
        if notes and f.name in notes:
            kwargs["help"] += ": " + notes[f.name]
        if f.kind is Kind.FLAG:
            kwargs["action"] = "store_true"
            kwargs["default"] = None
        else:
            kwargs["type"] = _ARG_TYPES.get(f.kind, str)
            if f.choices:
                kwargs["choices"] = f.choices
        if f.kind is Kind.ENV:
            kwargs.update(action="append", type=str)
        option = f.option
        if option is None:  # a positional argument
            kwargs["metavar"] = f.cli
            if f.kind is Kind.STRINGS:
                kwargs["nargs"] = "*"
            elif f.kind not in (Kind.ID, Kind.SIGNAL):
                # A PATTERN or DATA may also come after '--' (when it starts with '-').
                kwargs["nargs"] = "?"
            parser.add_argument(f.name, **kwargs)
            continue
        if f.kind is not Kind.FLAG and not f.choices:
            kwargs["metavar"] = (metavars or {}).get(f.name, _METAVARS.get(f.kind))
        flags = [option, *([short[f.name]] if short and f.name in short else [])]
        parser.add_argument(*flags, dest=f.name, required=f.required, **kwargs)


def _field_help(f: Field) -> str:
    if f.default is None or f.default is False or f.kind is Kind.FLAG:
        return f.help
    return f"{f.help} (default: {f.default})"


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


def _number(text: str) -> float:
    try:
        return int(text)  # as JSON would carry it: 2, not 2.0
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None


#: How ctl reads a field of each kind from its command line (a string otherwise).
_ARG_TYPES: dict[Kind, Callable[[str], Any]] = {
    Kind.ID: _integer,
    Kind.COUNT: _integer,
    Kind.SECONDS: _number,
    Kind.GRACE: _number,
}
_METAVARS = {
    Kind.ID: "ID",
    Kind.COUNT: "N",
    Kind.SECONDS: "SECONDS",
    Kind.GRACE: "SECONDS",
    Kind.SIGNAL: "SIGNAL",
}


def _configure_workspace_verbs(verbs: Any) -> None:
    text = "load a workspace FILE (checked whole first) and start it on the server"
    p = _verb_parser(
        verbs,
        "up",
        text,
        text + ": its commands start as their dependencies allow; with COMMANDs, only those"
        " and what they depend on (--no-deps: only those). Prints what each command does.",
    )
    add_fields(p, "up")
    _json_option(p)
    text = "stop a running workspace (every one without NAME), dependents first"
    p = _verb_parser(
        verbs,
        "down",
        text,
        text + "; with COMMANDs, only those and the commands that depend on"
        " them. Waits until they stopped.",
    )
    add_fields(p, "down")
    _json_option(p)
    text = "the running workspaces and what each command does (waiting, restarting…)"
    _json_option(_verb_parser(verbs, "workspaces", text, text + "."))


def _configure_history(verbs: Any) -> None:
    text = "a table of every recorded process, newest first (earlier runs and dismissed too)"
    p = _verb_parser(verbs, "history", text)
    add_fields(p, "history", metavars={"since": "WHEN"}, notes={"since": SINCE_FORMS})
    _json_option(p)
    text = (
        "print the output lines that contain PATTERN, as ID:SEQ: TEXT, newest processes"
        " first (live and recorded ones); exit 1 if none matched"
    )
    p = _verb_parser(
        verbs, "search", text, text + ". A PATTERN that starts with '-' goes after '--'."
    )
    add_fields(
        p,
        "search",
        short={"regex": "-E", "case_sensitive": "-s"},
        metavars={"since": "WHEN"},
        notes={"since": SINCE_FORMS},
    )
    _json_option(p)


class _VerbParser(argparse.ArgumentParser):
    """A verb's parser. With ``intermixed`` set, options may come before an
    optional positional that follows a required one (``write ID -n DATA``,
    ``wait-for ID --timeout 5 PATTERN``); plain argparse would have taken the
    optional one as absent at the first option and refused it after."""

    intermixed = False
    _inside = False

    def parse_known_args(  # type: ignore[override]
        self, args: Any = None, namespace: Any = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if not self.intermixed or self._inside:
            return super().parse_known_args(args, namespace)
        self._inside = True  # parse_known_intermixed_args calls back here
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._inside = False


def _configure_agent_verbs(verbs: Any) -> None:
    text = "wait for a line of a process's output that matches PATTERN, and print it"
    p = _verb_parser(
        verbs,
        "wait-for",
        text,
        text + ". Lines already written (after --since) count too. A PATTERN"
        " that starts with '-' goes after '--'. Exit 0 with the line printed; 1 if the"
        " process ended without such a line; 124 after --timeout (the process keeps"
        " running); 2 for a pattern that does not compile.",
    )
    p.intermixed = True  # type: ignore[attr-defined]
    add_fields(p, "wait-for")
    p.add_argument("--fixed", "-F", action="store_true", help="PATTERN is plain text")
    _json_option(p)

    text = "wait until a process's readiness check ('ctl run --ready') passes"
    p = _verb_parser(
        verbs,
        "ready",
        text,
        text + ". Exit 0 once ready (at once for a process without a check);"
        " 1 if it exited or its check gave up first; 124 after --timeout.",
    )
    add_fields(p, "ready")
    _json_option(p)

    text = (
        "print the first and last lines of a process's output, with what is left out"
        " between them counted"
    )
    p = _verb_parser(verbs, "excerpt", text, text + ".")
    add_fields(p, "excerpt", metavars={"max_bytes": "B"})
    _json_option(p)

    text = "write to the stdin of a process started with 'ctl run --stdin'"
    p = _verb_parser(
        verbs,
        "write",
        text,
        text + ". DATA is written with a newline after it (none with -n);"
        " without DATA, ctl's own stdin is read to its end and written as it is (so"
        " 'ctl write ID --close </dev/null' only closes). DATA that starts with '-' goes"
        " after '--'. Text is sent as UTF-8.",
    )
    p.intermixed = True  # type: ignore[attr-defined]
    add_fields(p, "write")
    p.add_argument("-n", dest="no_newline", action="store_true", help="no newline after DATA")
    _json_option(p)

    add_fields(_verb_parser(verbs, "resize"), "resize")
    text = OPERATIONS["screen"].help
    p = _verb_parser(
        verbs,
        "screen",
        text,
        text + ": its rows as the terminal shows them now (a full-screen program's"
        " screen, a prompt), without colours; --json adds the cursor and the mode.",
    )
    add_fields(p, "screen")
    _json_option(p)


def _json_option(p: argparse.ArgumentParser) -> None:
    """``--json`` after the verb too (SUPPRESS: it never resets one given before it)."""
    p.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="print JSON for programs"
    )


def parse_ready(spec: str) -> dict[str, Any]:
    """``--ready SPEC`` as the protocol's ``ready`` object: ``port:PORT``,
    ``port:HOST:PORT``, ``line:REGEX``, ``cmd:SHELL LINE`` or a URL
    (``http://…``, ``https://…``). ValueError otherwise.

    >>> parse_ready("port:8080")
    {'port': 8080}
    >>> parse_ready("cmd:curl -sf localhost:8080/health")
    {'shell': 'curl -sf localhost:8080/health'}
    >>> parse_ready("http://127.0.0.1:8080/health")
    {'http': 'http://127.0.0.1:8080/health'}
    """
    if spec.startswith(("http://", "https://")):
        try:
            http_target(spec)
        except InvalidArgv as exc:
            raise ValueError(f"--ready: {exc}") from None
        return {"http": spec}
    kind, colon, rest = spec.partition(":")
    if colon and kind == "port":
        host, sep, port = rest.rpartition(":")
        if port.isdigit() and 0 < int(port) < 65536 and bool(host) == bool(sep):
            return {"port": int(port), "host": host} if host else {"port": int(port)}
        raise ValueError(
            f"--ready: cannot read {spec!r}; give port:PORT or port:HOST:PORT, PORT 1-65535"
        )
    if colon and kind == "line" and rest:
        try:
            Regex(rest)
        except InvalidPattern as exc:
            raise ValueError(f"--ready: {rest!r} is not a regex: {exc.why}") from None
        return {"line": rest}
    if colon and kind == "cmd" and rest:
        return {"shell": rest}
    raise ValueError(
        f"--ready: cannot read {spec!r}; give port:PORT, port:HOST:PORT, line:REGEX,"
        " cmd:SHELL-LINE or an http:// URL"
    )


def parse_since(text: str, now: float) -> float:
    """``--since`` as epoch seconds: ``90s``/``30m``/``2h``/``1d``/``1w`` (or a sum,
    ``1h30m``) before ``now``; an ISO date or time (local unless it has an
    offset); ``@EPOCH``. ValueError with what is accepted otherwise."""
    text = text.strip()
    if _DURATION.fullmatch(text):
        ago = sum(float(n) * _UNITS[unit] for n, unit in _DURATION_PART.findall(text))
        return now - ago
    if text.startswith("@"):
        try:
            return float(text[1:])
        except ValueError:
            pass
    else:
        try:
            return datetime.datetime.fromisoformat(text).timestamp()
        except ValueError:
            pass
    raise ValueError(
        f"--since: cannot read {text!r}; give a duration ago (30m, 2h, 3d, 1h30m),"
        " a date or time (2024-05-01, 2024-05-01T14:30) or @EPOCH"
    )


def request(args: argparse.Namespace) -> dict[str, Any]:
    """The fields of the request a ctl verb sends: each field of its operation that
    ctl offers, from the argument of its name (absent: left out, the server's
    default), as ctl's own options shape them (``--env NAME=VALUE``, ``--ready
    SPEC``, a path made absolute, ``--since WHEN``, ``--fixed``, ``-- CMD...``).

    They are checked as the server checks them (the operation's spec), so a bad
    value is refused here, before any server is asked, with the server's message:
    ValueError (InvalidField and the shared rules' errors are ValueErrors).
    """
    verb = OPERATIONS[args.verb]
    fields = {f.name: getattr(args, f.name, None) for f in verb.fields if f.cli is not None}
    shape = _SHAPES.get(args.verb)
    if shape is not None:
        shape(args, fields)
    verb.check(fields)
    return {name: value for name, value in fields.items() if value is not None}


def _shape_run(args: argparse.Namespace, fields: dict[str, Any]) -> None:
    env: dict[str, str] = {}
    for item in args.env or ():
        name, eq, value = item.partition("=")
        if not eq or not name:
            raise ValueError(f"--env wants NAME=VALUE, got {item!r}")
        env[name] = value
    fields["env"] = env or None
    fields["cwd"] = os.path.abspath(args.cwd) if args.cwd else None
    fields["argv"] = None if args.shell else list(args.argv or ())
    if args.ready_timeout is not None and args.ready is None:
        raise ValueError("--ready-timeout needs --ready")
    if args.ready is not None:
        ready = parse_ready(args.ready)
        if args.ready_timeout is not None:
            ready["timeout"] = args.ready_timeout
        fields["ready"] = ready


def _shape_since(args: argparse.Namespace, fields: dict[str, Any]) -> None:
    if args.since is not None:
        fields["since"] = parse_since(args.since, time.time())


def _shape_wait_for(args: argparse.Namespace, fields: dict[str, Any]) -> None:
    fields["regex"] = False if args.fixed else None


def _shape_up(args: argparse.Namespace, fields: dict[str, Any]) -> None:
    # The server reads the file: give it the path as this shell means it.
    fields["path"] = os.path.abspath(args.path) if args.path else args.path
    fields["commands"] = args.commands or None


def _shape_down(args: argparse.Namespace, fields: dict[str, Any]) -> None:
    fields["commands"] = args.commands or None


_SHAPES: dict[str, Callable[[argparse.Namespace, dict[str, Any]], None]] = {
    "run": _shape_run,
    "history": _shape_since,
    "search": _shape_since,
    "wait-for": _shape_wait_for,
    "up": _shape_up,
    "down": _shape_down,
}


def _usage(message: str) -> int:
    print(f"procwindow ctl: {message}", file=sys.stderr)
    return EXIT_USAGE
