"""``procwindow ctl``: talk to a running procwindow (window or ``serve``) from a shell.

Exit status: 0 ok; 1 the server refused or failed the request (it closed the
connection before its reply, or its reply made no sense); 2 usage error; 3 no
server to talk to (nothing listens at the socket, or its directory is unsafe).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from typing import Any, TextIO

from ..core import DEFAULT_TOOL, ProcwindowError, ScopeCounts, check_graceful_timeout, scope_pattern
from ..core.rules import SHELL
from ._sockdir import DEFAULT_SERVER_NAME, SocketDirError, check_name, default_socket_path
from .client import CannotConnect, Client, ServerError

__all__ = ["EXIT_CONNECT", "EXIT_SERVER", "EXIT_USAGE", "configure", "run"]

EXIT_SERVER = 1
EXIT_USAGE = 2
EXIT_CONNECT = 3

VERBS = (
    "top",
    "idx",
    "out",
    "term",
    "kill",
    "interrupt",
    "dismiss",
    "restart",
    "run",
    "events",
    "sessions",
)


def configure(parser: argparse.ArgumentParser) -> None:
    """Add ctl's options and verbs to ``parser``."""
    parser.add_argument(
        "--socket",
        metavar="PATH",
        help="the server's socket (default: $PROCWINDOW_SOCKET, else the socket of --name)",
    )
    parser.add_argument(
        "--name", default=DEFAULT_SERVER_NAME, help="the server's name (default: %(default)s)"
    )
    parser.add_argument("--json", action="store_true", help="print JSON for programs")
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", required=True)
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
    for name, text in (
        ("term", "SIGTERM, then SIGKILL after the graceful timeout; waits for the exit"),
        ("kill", "SIGKILL now; waits for the exit"),
        ("interrupt", "SIGINT, as Ctrl-C"),
        ("dismiss", "forget an exited process and delete its logs"),
        ("restart", "run a process's command again as a new process"),
    ):
        p = verbs.add_parser(name, help=text, description=text)
        p.add_argument("proc", type=int, metavar="ID")
        if name == "dismiss":
            p.add_argument("--keep-logs", action="store_true")
    p = verbs.add_parser(
        "run",
        help="start a command: ctl run --session S --agent A [--tool T] -- CMD ARGS...",
        description="Start CMD ARGS... (after '--') and print the new process's id.",
    )
    p.add_argument("--session", required=True)
    p.add_argument("--agent", required=True)
    p.add_argument("--tool", default=DEFAULT_TOOL)
    p.add_argument("--cwd")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--shell", metavar="LINE", help=f"run LINE with {SHELL} -c instead of a command")
    p.add_argument("--graceful-timeout", type=float, metavar="SECONDS")
    p = verbs.add_parser("events", help="print events whose topic matches PATTERN")
    p.add_argument("pattern", nargs="?", default=scope_pattern())
    verbs.add_parser("sessions", help="sessions and agents with running/total counts")


def run(args: argparse.Namespace) -> int:
    """Carry out one ctl verb; return the exit status.

    Whatever goes wrong ends in one line on stderr and an exit status, never a
    traceback: the server's errors, a server that goes away or answers nonsense,
    an unsafe socket directory.
    """
    command = getattr(args, "command", None)
    if args.verb == "run" and not command and not args.shell:
        return _usage("run needs a command after '--' (or --shell LINE)")
    if args.verb != "run" and command:
        return _usage(f"{args.verb} takes no command after '--'")
    if args.verb == "run" and args.graceful_timeout is not None:
        try:
            check_graceful_timeout(args.graceful_timeout, "--graceful-timeout")
        except ValueError as exc:
            return _usage(str(exc))
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
    try:
        with Client(path, timeout=None) as client:
            return _VERBS[args.verb](client, args)
    except CannotConnect as exc:
        print(f"procwindow ctl: {exc}", file=sys.stderr)
        return EXIT_CONNECT
    except ServerError as exc:
        print(f"procwindow ctl: {exc}", file=sys.stderr)
        return EXIT_SERVER
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
    if not args.follow:
        batch = client.call("out", **fields)
        _print_lines(args, batch)
        return 0
    for message in client.stream("out", follow=True, **fields):
        if "result" in message:
            if args.json:
                print(json.dumps({"end": message["result"]}), flush=True)
            return 0
        _print_lines(args, message)
    return 0


def _print_lines(args: argparse.Namespace, batch: dict[str, Any]) -> None:
    if args.json:
        if batch.get("dropped"):
            print(json.dumps({"dropped": batch["dropped"]}))
        for line in batch["lines"]:
            print(json.dumps(line, ensure_ascii=False))
        sys.stdout.flush()
        return
    if batch.get("dropped"):
        print(f"[{batch['dropped']} earlier lines are only in the log file]", file=sys.stderr)
    for line in batch["lines"]:
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
    result = client.call("dismiss", proc=args.proc, keep_logs=args.keep_logs or None)
    return _emit(args, result, f"{args.proc}: dismissed\n")


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
    )
    return _emit(args, result, f"{result['id']}\n")


def _events(client: Client, args: argparse.Namespace) -> int:
    for message in client.stream("events", pattern=args.pattern):
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
    "restart": _restart,
    "run": _run,
    "events": _events,
    "sessions": _sessions,
}
