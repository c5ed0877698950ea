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
import re
import sys
from collections.abc import Callable
from typing import Any

from ..core import DEFAULT_TOOL, ExitReason, check_graceful_timeout, scope_pattern
from ..core._agent import check_timeout
from ..core.rules import SHELL
from ._sockdir import DEFAULT_SERVER_NAME

__all__ = [
    "EXIT_CONNECT",
    "EXIT_HELP",
    "EXIT_SERVER",
    "EXIT_TIMEOUT",
    "EXIT_USAGE",
    "SINCE_HELP",
    "VERBS",
    "configure",
    "parse_ready",
    "parse_since",
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
  124  wait-for, ready: --timeout ran out (the process keeps running)
Errors are one line on stderr (a mistyped option also shows the usage).
"""

VERBS = (
    "top",
    "idx",
    "out",
    "term",
    "kill",
    "interrupt",
    "dismiss",
    "forget",
    "restart",
    "run",
    "events",
    "sessions",
    "history",
    "search",
    "wait-for",
    "ready",
    "excerpt",
    "write",
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
SINCE_HELP = (
    "only processes started since then: a duration ago (90s, 30m, 2h, 1d, 1h30m),"
    " a date or time, local unless it has an offset (2024-05-01, 2024-05-01T14:30,"
    " 2024-05-01T14:30+02:00), or @EPOCH seconds"
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ctl's options and verbs to ``parser``."""
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = EXIT_HELP
    parser.add_argument(
        "--socket",
        metavar="PATH",
        help="the server's socket (default: $PROCWINDOW_SOCKET, else the socket of --name)",
    )
    parser.add_argument(
        "--name", default=DEFAULT_SERVER_NAME, help="the server's name (default: %(default)s)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON for programs")
    verbs = parser.add_subparsers(
        dest="verb", metavar="VERB", required=True, parser_class=_VerbParser
    )
    for name, text in (("top", "a table of processes"), ("idx", "the index as TSV")):
        p = verbs.add_parser(name, help=text, description=text)
        p.add_argument("--session")
        p.add_argument("--agent")
    p = verbs.add_parser(
        "out", help="print a process's output", description="print a process's output"
    )
    p.add_argument("proc", type=int, metavar="ID")
    p.add_argument(
        "--follow", "-f", action="store_true", help="keep printing until its output ends"
    )
    p.add_argument("--stream", choices=("stdout", "stderr"))
    p.add_argument("--since", type=int, default=0, metavar="SEQ", help="only lines after this seq")
    p.add_argument(
        "--partial",
        action="store_true",
        help="also print an unterminated last line (a prompt, a progress bar) as a line;"
        " with --follow, each new state of it when it appears",
    )
    for name, text in (
        ("term", "SIGTERM, then SIGKILL after the graceful timeout; waits for the exit"),
        ("kill", "SIGKILL now; waits for the exit"),
        ("interrupt", "SIGINT, as Ctrl-C"),
        (
            "dismiss",
            "hide an exited process from the live view; its history and logs are kept"
            " ('forget' deletes them)",
        ),
        ("forget", "delete an exited process for good: its history record and its logs"),
        ("restart", "run a process's command again as a new process"),
    ):
        p = verbs.add_parser(name, help=text, description=text)
        p.add_argument("proc", type=int, metavar="ID")
    p = verbs.add_parser(
        "run",
        help="start a command: ctl run --session S --agent A [--tool T] -- CMD ARGS...",
        description="Start CMD ARGS... (after '--') and print the new process's id.",
    )
    p.add_argument("--session", required=True)
    p.add_argument("--agent", required=True)
    p.add_argument("--tool", default=DEFAULT_TOOL)
    p.add_argument("--cwd", help="its working directory (default: the server's, not this shell's)")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--shell", metavar="LINE", help=f"run LINE with {SHELL} -c instead of a command")
    p.add_argument("--graceful-timeout", type=float, metavar="SECONDS")
    p.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="terminate it after SECONDS (its exit reason is then 'timeout')",
    )
    p.add_argument(
        "--merge-stderr",
        action="store_true",
        help="one pipe for stdout and stderr: their lines keep the exact order (all stdout)",
    )
    p.add_argument("--stdin", action="store_true", help="keep a pipe to its stdin, for 'ctl write'")
    p.add_argument(
        "--ready",
        metavar="SPEC",
        help="how it shows it is ready ('ctl ready' waits for it): port:PORT (or"
        " port:HOST:PORT) accepts connections, line:REGEX matches a line of its output,"
        " or cmd:SHELL-LINE exits 0",
    )
    p.add_argument(
        "--ready-timeout", type=float, metavar="SECONDS", help="give the --ready check up then"
    )
    p.add_argument(
        "--reuse",
        action="store_true",
        help="if the same command (argv, cwd, session and agent) runs already, print its id"
        " instead of starting another",
    )
    p = verbs.add_parser("events", help="print events whose topic matches PATTERN")
    p.add_argument("pattern", nargs="?", default=scope_pattern())
    p.add_argument("--proc", type=_positive, metavar="ID", help="this process's events only")
    verbs.add_parser("sessions", help="sessions and agents with running/total counts")
    _configure_history(verbs)
    _configure_search(verbs)
    _configure_agent_verbs(verbs)
    _configure_workspace_verbs(verbs)
    text = "pipe stdin and stdout to the server's socket (what 'procwindow attach ssh://…' runs)"
    p = verbs.add_parser("bridge", help=text, description=text + "; ends when either side closes.")
    p.add_argument("server", nargs="?", metavar="NAME", help="the server's name (default: --name)")


def _configure_workspace_verbs(verbs: Any) -> None:
    text = "load a workspace FILE (checked whole first) and start it on the server"
    p = verbs.add_parser(
        "up",
        help=text,
        description=text + ": its commands start as their dependencies allow. Prints"
        " what each command does.",
    )
    p.add_argument("file", metavar="FILE")
    _json_option(p)
    text = "stop a running workspace (every one without NAME), dependents first"
    p = verbs.add_parser(
        "down",
        help=text,
        description=text + "; with COMMANDs, only those and the commands that depend on"
        " them. Waits until they stopped.",
    )
    p.add_argument("workspace", nargs="?", metavar="NAME")
    p.add_argument("commands", nargs="*", metavar="COMMAND")
    _json_option(p)
    text = "the running workspaces and what each command does (waiting, restarting…)"
    p = verbs.add_parser("workspaces", help=text, description=text + ".")
    _json_option(p)


def _configure_history(verbs: Any) -> None:
    text = "a table of every recorded process, newest first (earlier runs and dismissed too)"
    p = verbs.add_parser("history", help=text, description=text)
    p.add_argument("--session")
    p.add_argument("--agent")
    p.add_argument("--tool")
    p.add_argument("--reason", choices=[r.value for r in ExitReason], help="how it ended")
    p.add_argument("--since", metavar="WHEN", help=SINCE_HELP)
    p.add_argument("--limit", type=_positive, metavar="N", help="the newest N only")
    _json_option(p)


def _configure_search(verbs: Any) -> None:
    text = (
        "print the output lines that contain PATTERN, as ID:SEQ: TEXT, newest processes"
        " first (live and recorded ones); exit 1 if none matched"
    )
    p = verbs.add_parser(
        "search",
        help=text,
        description=text + ". A PATTERN that starts with '-' goes after '--'.",
    )
    p.add_argument("pattern", nargs="?", metavar="PATTERN")
    p.add_argument("--regex", "-E", action="store_true", help="PATTERN is a Python regex")
    p.add_argument("--case-sensitive", "-s", action="store_true")
    p.add_argument("--session")
    p.add_argument("--agent")
    p.add_argument("--proc", type=_positive, metavar="ID", help="search this process only")
    p.add_argument("--since", metavar="WHEN", help=SINCE_HELP)
    p.add_argument("--limit", type=_positive, metavar="N", help="stop after N matching lines")
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
    p = verbs.add_parser(
        "wait-for",
        help=text,
        description=text + ". Lines already written (after --since) count too. A PATTERN"
        " that starts with '-' goes after '--'. Exit 0 with the line printed; 1 if the"
        " process ended without such a line; 124 after --timeout (the process keeps"
        " running); 2 for a pattern that does not compile.",
    )
    p.intermixed = True
    p.add_argument("proc", type=int, metavar="ID")
    p.add_argument("pattern", nargs="?", metavar="PATTERN", help="a Python regex (re.search)")
    p.add_argument("--fixed", "-F", action="store_true", help="PATTERN is plain text")
    p.add_argument("--stream", choices=("stdout", "stderr"), help="only lines of this stream")
    p.add_argument("--since", type=int, default=0, metavar="SEQ", help="only lines after this seq")
    p.add_argument("--timeout", type=float, metavar="SECONDS", help="give up after SECONDS")
    _json_option(p)

    text = "wait until a process's readiness check ('ctl run --ready') passes"
    p = verbs.add_parser(
        "ready",
        help=text,
        description=text + ". Exit 0 once ready (at once for a process without a check);"
        " 1 if it exited or its check gave up first; 124 after --timeout.",
    )
    p.add_argument("proc", type=int, metavar="ID")
    p.add_argument("--timeout", type=float, metavar="SECONDS", help="give up after SECONDS")
    _json_option(p)

    text = (
        "print the first and last lines of a process's output, with what is left out"
        " between them counted"
    )
    p = verbs.add_parser("excerpt", help=text, description=text + ".")
    p.add_argument("proc", type=int, metavar="ID")
    p.add_argument("--head", type=_count, default=20, metavar="N", help="lines from the start")
    p.add_argument("--tail", type=_count, default=40, metavar="N", help="lines from the end")
    p.add_argument(
        "--max-bytes", type=_positive, default=8000, metavar="B", help="at most B bytes of text"
    )
    p.add_argument(
        "--since", type=_count, default=0, metavar="SEQ", help="only lines after this seq"
    )
    _json_option(p)

    text = "write to the stdin of a process started with 'ctl run --stdin'"
    p = verbs.add_parser(
        "write",
        help=text,
        description=text + ". DATA is written with a newline after it (none with -n);"
        " without DATA, ctl's own stdin is read to its end and written as it is (so"
        " 'ctl write ID --close </dev/null' only closes). DATA that starts with '-' goes"
        " after '--'. Text is sent as UTF-8.",
    )
    p.intermixed = True
    p.add_argument("proc", type=int, metavar="ID")
    p.add_argument("data", nargs="?", metavar="DATA")
    p.add_argument("-n", dest="no_newline", action="store_true", help="no newline after DATA")
    p.add_argument(
        "--close", action="store_true", help="then close its stdin (it reads end-of-file)"
    )
    _json_option(p)


def _json_option(p: argparse.ArgumentParser) -> None:
    """``--json`` after the verb too (SUPPRESS: it never resets one given before it)."""
    p.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="print JSON for programs"
    )


def _int_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: an int of at least ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


_count = _int_at_least(0)
_positive = _int_at_least(1)


def parse_ready(spec: str) -> dict[str, Any]:
    """``--ready SPEC`` as the protocol's ``ready`` object: ``port:PORT``,
    ``port:HOST:PORT``, ``line:REGEX`` or ``cmd:SHELL LINE``. ValueError otherwise.

    >>> parse_ready("port:8080")
    {'port': 8080}
    >>> parse_ready("cmd:curl -sf localhost:8080/health")
    {'shell': 'curl -sf localhost:8080/health'}
    """
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
            re.compile(rest)
        except re.error as exc:
            raise ValueError(f"--ready: {rest!r} is not a regex: {exc}") from None
        return {"line": rest}
    if colon and kind == "cmd" and rest:
        return {"shell": rest}
    raise ValueError(
        f"--ready: cannot read {spec!r}; give port:PORT, port:HOST:PORT, line:REGEX"
        " or cmd:SHELL-LINE"
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


def _check_args(args: argparse.Namespace) -> str | None:
    """What is wrong with the options ctl can check itself (one line), or None."""
    checks: list[tuple[str, float | None]] = []
    if args.verb == "run":
        if args.graceful_timeout is not None:
            try:
                check_graceful_timeout(args.graceful_timeout, "--graceful-timeout")
            except ValueError as exc:
                return str(exc)
        checks += [("--timeout", args.timeout), ("--ready-timeout", args.ready_timeout)]
        if args.ready_timeout is not None and args.ready is None:
            return "--ready-timeout needs --ready"
        if args.ready is not None:
            try:
                args.ready = parse_ready(args.ready)
            except ValueError as exc:
                return str(exc)
            if args.ready_timeout is not None:
                args.ready["timeout"] = args.ready_timeout
    if args.verb in ("wait-for", "ready"):
        checks.append(("--timeout", args.timeout))
    for option, value in checks:
        try:
            check_timeout(value, option)
        except ValueError as exc:
            return str(exc)
    if args.verb in ("wait-for", "out") and args.since < 0:
        return "--since: a seq is at least 0"
    return None


def _usage(message: str) -> int:
    print(f"procwindow ctl: {message}", file=sys.stderr)
    return EXIT_USAGE
