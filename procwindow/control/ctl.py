"""``procwindow ctl``: talk to a running procwindow (window or ``serve``) from a shell.

Exit status: 0 ok; 1 the server refused or failed the request (it closed the
connection before its reply, or its reply made no sense), ``search`` found
nothing (as grep), ``wait-for`` saw the process end without a matching line, or
``ready`` saw it exit (or its check give up) before it was ready; 2 usage error
(also a pattern the server cannot compile); 3 no server to talk to (nothing
listens at the socket, or its directory is unsafe); 124 ``wait-for`` or
``ready`` ran out of its ``--timeout`` (as timeout(1)); the process is left alone.
"""

from __future__ import annotations

import argparse
import codecs
import datetime
import json
import os
import re
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

from ..core import (
    DEFAULT_TOOL,
    ExitReason,
    ProcwindowError,
    ScopeCounts,
    check_graceful_timeout,
    format_runtime,
    scope_pattern,
)
from ..core._agent import check_timeout
from ..core._orchestra import CommandState, commands_table
from ..core._text import escape_controls, format_size
from ..core.rules import SHELL
from ._sockdir import DEFAULT_SERVER_NAME, SocketDirError, check_name, default_socket_path
from .client import CannotConnect, Client, ServerError

__all__ = [
    "EXIT_CONNECT",
    "EXIT_SERVER",
    "EXIT_TIMEOUT",
    "EXIT_USAGE",
    "configure",
    "parse_ready",
    "run",
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
#: Text sent per ``write`` request: well under the request limit however it is escaped.
_WRITE_CHUNK = 128 * 1024

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


def run(args: argparse.Namespace) -> int:
    """Carry out one ctl verb; return the exit status.

    Whatever goes wrong ends in one line on stderr and an exit status, never a
    traceback: the server's errors, a server that goes away or answers nonsense,
    an unsafe socket directory.
    """
    command = getattr(args, "command", None)
    slot = _AFTER_DASHES.get(args.verb)
    if slot and command and getattr(args, slot) is None and len(command) == 1:
        setattr(args, slot, command[0])  # ctl search -- -PATTERN
        command = None
    if args.verb in ("search", "wait-for") and args.pattern is None:
        return _usage(f"{args.verb} needs a PATTERN")
    if args.verb == "run" and not command and not args.shell:
        return _usage("run needs a command after '--' (or --shell LINE)")
    if args.verb != "run" and command:
        return _usage(f"{args.verb} takes no command after '--'")
    problem = _check_args(args)
    if problem:
        return _usage(problem)
    if getattr(args, "since", None) is not None and args.verb in ("history", "search"):
        try:
            args.since = parse_since(args.since, time.time())
        except ValueError as exc:
            return _usage(str(exc))
    if args.verb == "bridge" and args.server:
        args.name = args.server
    path = args.socket or os.environ.get("PROCWINDOW_SOCKET")
    if not path:
        try:
            check_name(args.name)
        except SocketDirError as exc:
            return _usage(f"--name: {exc}")
        try:
            path = default_socket_path(args.name, create=False)
        except ProcwindowError as exc:
            print(f"procwindow ctl: {exc}", file=sys.stderr)
            return EXIT_CONNECT
    if args.verb == "bridge":
        from .bridge import pump

        return pump(path)
    try:
        with Client(path, timeout=None) as client:
            return _VERBS[args.verb](client, args)
    except CannotConnect as exc:
        print(f"procwindow ctl: {exc}", file=sys.stderr)
        return EXIT_CONNECT
    except ServerError as exc:
        print(f"procwindow ctl: {exc}", file=sys.stderr)
        if args.verb in ("search", "wait-for") and exc.type == "InvalidPattern":
            return EXIT_USAGE  # as grep's 2: told apart from "nothing matched"
        if args.verb in ("wait-for", "ready") and exc.type == "Timeout":
            return EXIT_TIMEOUT
        return EXIT_SERVER
    except _NotText as exc:
        return _usage(str(exc))
    except KeyboardInterrupt:
        return 128 + signal.SIGINT
    except BrokenPipeError:
        # our reader (e.g. `| head`) left: not an error of ours
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except (KeyError, TypeError, AttributeError, IndexError):
        # A reply that parsed but lacks what this verb needs.
        print(f"procwindow ctl: unexpected reply from the server at {path}", file=sys.stderr)
        return EXIT_SERVER
    except Exception as exc:
        print(f"procwindow ctl: {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_SERVER


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


def _emit(args: argparse.Namespace, data: Any, text: str) -> int:
    if args.json:
        print(json.dumps(data, ensure_ascii=False))
    else:
        sys.stdout.write(text)
    sys.stdout.flush()
    return 0


def _table(client: Client, args: argparse.Namespace) -> int:
    scope = {"session": args.session, "agent": args.agent}
    text = client.call(args.verb, **scope)["text"]
    if args.json:
        return _emit(args, client.call("procs", **scope), "")
    return _emit(args, None, text)


def _out(client: Client, args: argparse.Namespace) -> int:
    fields = {"proc": args.proc, "since": args.since, "stream": args.stream}
    if args.partial:
        fields["partial"] = True
    gaps = _Gaps()
    if not args.follow:
        batch = client.call("out", **fields)
        _print_lines(args, batch, gaps)
        gaps.finish(args, batch)
        return 0
    batch = {}
    for message in client.stream("out", follow=True, **fields):
        if "result" in message:
            gaps.finish(args, batch)
            if args.json:
                print(json.dumps({"end": message["result"]}), flush=True)
            return 0
        if "partial" in message:
            _print_lines(args, {"lines": [message["partial"]]}, gaps)
            continue
        batch = message
        _print_lines(args, batch, gaps)
    return 0


@dataclass
class _Gaps:
    """Where lines of ``out`` are missing: a marker line on stderr in their place.

    Each gap is marked on the line after it (``cut``); lines missing after the
    last line printed are only in a reply's ``dropped``, and marked at the end.
    """

    dropped: int = 0
    marked: int = 0

    def mark(self, lines: int, cut_bytes: int) -> None:
        self.marked += lines
        sys.stdout.flush()
        # Without bytes cut, they were not cut but lost (writing the log failed).
        what = f"({format_size(cut_bytes)}) cut" if cut_bytes else "missing"
        print(f"[… {lines:,} lines {what} …]", file=sys.stderr, flush=True)

    def finish(self, args: argparse.Namespace, batch: dict[str, Any]) -> None:
        owed = self.dropped - self.marked
        if owed > 0 and not args.json:
            self.mark(owed, batch.get("cut_bytes", 0))


def _print_lines(args: argparse.Namespace, batch: dict[str, Any], gaps: _Gaps) -> None:
    gaps.dropped += batch.get("dropped", 0)
    if args.json:
        if batch.get("dropped"):
            print(json.dumps({"dropped": batch["dropped"]}))
        for line in batch["lines"]:
            print(json.dumps(line, ensure_ascii=False))
        sys.stdout.flush()
        return
    for line in batch["lines"]:
        if line.get("cut"):
            gaps.mark(line["cut"], batch.get("cut_bytes", 0))
        out: TextIO = sys.stderr if line["stream"] == "stderr" else sys.stdout
        out.write(line["text"] + ("" if line.get("split") else "\n"))
    sys.stdout.flush()
    sys.stderr.flush()


def _describe_exit(proc: int, info: dict[str, Any]) -> str:
    return f"{proc}: exited {info['code']} ({info['reason']}) after {info['runtime']:.1f}s\n"


def _stop(client: Client, args: argparse.Namespace) -> int:
    info = client.call(args.verb, proc=args.proc)
    return _emit(args, info, _describe_exit(args.proc, info))


def _interrupt(client: Client, args: argparse.Namespace) -> int:
    result = client.call("interrupt", proc=args.proc)
    text = (
        f"{args.proc}: SIGINT sent\n" if result["delivered"] else f"{args.proc}: already exited\n"
    )
    return _emit(args, result, text)


def _dismiss(client: Client, args: argparse.Namespace) -> int:
    result = client.call("dismiss", proc=args.proc)
    return _emit(args, result, f"{args.proc}: dismissed\n")


def _forget(client: Client, args: argparse.Namespace) -> int:
    result = client.call("forget", proc=args.proc)
    return _emit(args, result, f"{args.proc}: forgotten\n")


def _restart(client: Client, args: argparse.Namespace) -> int:
    result = client.call("restart", proc=args.proc)
    return _emit(args, result, f"{result['id']}\n")


def _run(client: Client, args: argparse.Namespace) -> int:
    env: dict[str, str] = {}
    for item in args.env:
        name, eq, value = item.partition("=")
        if not eq or not name:
            return _usage(f"--env wants NAME=VALUE, got {item!r}")
        env[name] = value
    result = client.call(
        "run",
        session=args.session,
        agent=args.agent,
        tool=args.tool,
        cwd=os.path.abspath(args.cwd) if args.cwd else None,
        env=env or None,
        argv=None if args.shell else list(args.command),
        shell=args.shell,
        graceful_timeout=args.graceful_timeout,
        timeout=args.timeout,
        merge_stderr=args.merge_stderr or None,
        stdin=args.stdin or None,
        ready=args.ready,
        reuse=args.reuse or None,
    )
    return _emit(args, result, f"{result['id']}\n")


def _wait_for(client: Client, args: argparse.Namespace) -> int:
    result = client.call(
        "wait_for",
        proc=args.proc,
        pattern=args.pattern,
        regex=False if args.fixed else None,
        stream=args.stream,
        since=args.since,
        timeout=args.timeout,
    )
    return _emit(args, result, result["line"]["text"] + "\n")


def _ready(client: Client, args: argparse.Namespace) -> int:
    result = client.call("ready", proc=args.proc, timeout=args.timeout)
    return _emit(args, result, f"{args.proc}: ready\n")


def _excerpt(client: Client, args: argparse.Namespace) -> int:
    result = client.call(
        "excerpt",
        proc=args.proc,
        head=args.head,
        tail=args.tail,
        max_bytes=args.max_bytes,
        since=args.since,
    )
    return _emit(args, result, result["text"])


def _write(client: Client, args: argparse.Namespace) -> int:
    written = 0
    closed = None
    pieces = _write_pieces(args)
    piece = next(pieces, "")
    while True:
        after = next(pieces, None)
        last = after is None
        result = client.call(
            "write", proc=args.proc, data=piece, close=True if last and args.close else None
        )
        written += result["written"]
        if last:
            closed = result.get("closed")
            break
        piece = after
    text = f"{args.proc}: {written} bytes written" + (", stdin closed" if args.close else "")
    summary: dict[str, Any] = {"written": written}
    if closed is not None:
        summary["closed"] = closed
    return _emit(args, summary, text + "\n")


def _write_pieces(args: argparse.Namespace) -> Any:
    """What ``write`` sends, in pieces that each fit in a request: DATA (and a
    newline unless -n), or ctl's stdin read to its end (UTF-8, checked)."""
    if args.data is not None:
        data = args.data if args.no_newline else args.data + "\n"
        for start in range(0, len(data), _WRITE_CHUNK):
            yield data[start : start + _WRITE_CHUNK]
        return
    decoder = codecs.getincrementaldecoder("utf-8")()
    while True:
        chunk = sys.stdin.buffer.read(_WRITE_CHUNK)
        try:
            text = decoder.decode(chunk, final=not chunk)
        except UnicodeDecodeError as exc:
            raise _NotText(f"write: stdin is not UTF-8 text ({exc.reason})") from None
        if text:
            yield text
        if not chunk:
            return


class _NotText(Exception):
    """ctl write's input cannot be sent as text."""


def _events(client: Client, args: argparse.Namespace) -> int:
    for message in client.stream("events", pattern=args.pattern, proc=args.proc):
        if "result" in message:
            continue  # the subscription's acknowledgement
        ev = message["event"]
        if args.json:
            print(json.dumps(ev, ensure_ascii=False), flush=True)
            continue
        skip = {"topic", "kind", "session", "agent", "time"}
        fields = " ".join(
            f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in ev.items() if k not in skip
        )
        print(f"{ev['topic']} {fields}", flush=True)
    return 0


def _sessions(client: Client, args: argparse.Namespace) -> int:
    tree = client.call("sessions")
    lines = []
    for session in tree:
        agents = {a["agent"]: ScopeCounts(a["running"], a["total"]) for a in session["agents"]}
        lines.append(_count_line(session["session"], sum(agents.values(), ScopeCounts())))
        lines += [_count_line(f"  {agent}", counts) for agent, counts in agents.items()]
    return _emit(args, tree, "".join(lines))


def _history(client: Client, args: argparse.Namespace) -> int:
    procs = client.call(
        "history",
        session=args.session,
        agent=args.agent,
        tool=args.tool,
        reason=args.reason,
        since=args.since,
        limit=args.limit,
    )
    return _emit(args, procs, history_table(procs))


def history_table(procs: list[dict[str, Any]]) -> str:
    """Procs as ``top`` shows them, with when each started; names and commands escaped."""
    head = ("ID", "SCOPE", "TOOL", "STATUS", "EXIT", "STARTED", "RUNTIME", "COMMAND")
    rows = [head]
    for p in procs:
        info = p["exit"]
        rows.append(
            (
                str(p["id"]),
                escape_controls(f"{p['session']}/{p['agent']}"),
                escape_controls(p["tool"]),
                p["state"],
                f"{info['code']} {info['reason']}" if info is not None else "-",
                time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(p["started_at"])),
                format_runtime(p["runtime"]),
                escape_controls(p["cmd"]),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(head) - 1)]
    return "".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1] + "\n"
        for r in rows
    )


def _search(client: Client, args: argparse.Namespace) -> int:
    found = 0
    messages = client.stream(
        "search",
        pattern=args.pattern,
        regex=args.regex or None,
        case_sensitive=args.case_sensitive or None,
        session=args.session,
        agent=args.agent,
        proc=args.proc,
        since=args.since,
        limit=args.limit,
    )
    for message in messages:
        if "result" in message:
            if args.json:
                print(json.dumps({"end": message["result"]}), flush=True)
            break
        hit = message["hit"]
        found += 1
        if args.json:
            print(json.dumps(hit, ensure_ascii=False), flush=True)
        else:
            print(f"{hit['proc']}:{hit['seq']}: {hit['text']}", flush=True)
    return 0 if found else EXIT_SERVER


def _up(client: Client, args: argparse.Namespace) -> int:
    # The server reads the file: give it the path as this shell means it.
    run = client.call("up", path=os.path.abspath(args.file))
    return _emit(args, run, _states_text([run]))


def _down(client: Client, args: argparse.Namespace) -> int:
    result = client.call("down", workspace=args.workspace, commands=args.commands or None)
    if not args.json and not result["workspaces"]:
        print("procwindow ctl: down: no workspace is up", file=sys.stderr)
    names: dict[str, list[str]] = {}
    for workspace, command in result["stopped"]:
        names.setdefault(workspace, []).append(command)
    lines = []
    for ws in result["workspaces"]:
        stopped = ", ".join(names.get(ws, [])) or "nothing"
        lines.append(f"{escape_controls(ws)}: stopped {escape_controls(stopped)}\n")
    text = "".join(lines)
    return _emit(args, result, text)


def _workspaces(client: Client, args: argparse.Namespace) -> int:
    runs = client.call("workspaces")
    return _emit(args, runs, _states_text(runs))


def _states_text(runs: list[dict[str, Any]]) -> str:
    """The commands of running workspaces (as the server lists them), as a table."""
    states = [CommandState.from_json(c) for run in runs for c in run["commands"]]
    return commands_table(states, time.time())


def _count_line(name: str, counts: ScopeCounts) -> str:
    """``name  running/total``; unlike ScopeCounts.label, an empty scope shows ``0/0``."""
    return f"{name}  {counts.running}/{counts.total}\n"


_VERBS = {
    "top": _table,
    "idx": _table,
    "out": _out,
    "term": _stop,
    "kill": _stop,
    "interrupt": _interrupt,
    "dismiss": _dismiss,
    "forget": _forget,
    "restart": _restart,
    "run": _run,
    "events": _events,
    "sessions": _sessions,
    "history": _history,
    "search": _search,
    "wait-for": _wait_for,
    "ready": _ready,
    "excerpt": _excerpt,
    "write": _write,
    "up": _up,
    "down": _down,
    "workspaces": _workspaces,
}
