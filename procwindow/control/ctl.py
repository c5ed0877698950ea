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
import os
import signal
import sys

from ..core import ProcwindowError
from ._ctl_args import (
    _AFTER_DASHES,
    EXIT_CONNECT,
    EXIT_SERVER,
    EXIT_TIMEOUT,
    EXIT_USAGE,
    OPERATIONS,
    _usage,
    configure,
    parse_ready,
    parse_since,
    request,
)
from ._ctl_args import EXIT_HELP as EXIT_HELP
from ._ctl_args import VERBS as VERBS
from ._ctl_format import history_table as history_table
from ._ctl_verbs import _VERBS, _NotText
from ._sockdir import DEFAULT_SERVER_NAME, SocketDirError, check_name, default_socket_path
from .client import CannotConnect, Client, ServerError
from .workspace import load_workspace

__all__ = [
    "EXIT_CONNECT",
    "EXIT_SERVER",
    "EXIT_TIMEOUT",
    "EXIT_USAGE",
    "configure",
    "parse_ready",
    "parse_since",
    "run",
]


def run(args: argparse.Namespace) -> int:
    """Carry out one ctl verb; return the exit status.

    Whatever goes wrong ends in one line on stderr and an exit status, never a
    traceback: the server's errors, a server that goes away or answers nonsense,
    an unsafe socket directory.
    """
    command = getattr(args, "argv", None)
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
    fields: dict[str, object] = {}
    if args.verb in OPERATIONS:
        try:
            fields = request(args)
        except ValueError as exc:  # InvalidField and the shared rules' errors
            return _usage(str(exc))
    if args.verb == "bridge":
        from . import bridge

        return bridge.main(args.server or args.name, args.socket)
    path = args.socket or os.environ.get("PROCWINDOW_SOCKET")
    if not path:
        if args.name is None and args.verb == "up":
            # The workspace's own server, as 'procwindow serve FILE' names it.
            try:
                args.name = load_workspace(fields["path"]).name  # type: ignore[arg-type]
            except ProcwindowError as exc:
                print(f"procwindow ctl: {exc}", file=sys.stderr)
                return EXIT_SERVER
        if args.name is None:
            args.name = DEFAULT_SERVER_NAME
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
            return _VERBS[args.verb](client, args, fields)
    except CannotConnect as exc:
        print(f"procwindow ctl: {exc}", file=sys.stderr)
        return EXIT_CONNECT
    except ServerError as exc:
        print(f"procwindow ctl: {exc}", file=sys.stderr)
        if args.verb in ("search", "wait-for") and exc.code == "invalid-pattern":
            return EXIT_USAGE  # as grep's 2: told apart from "nothing matched"
        if args.verb in ("wait-for", "ready", "wait") and exc.code == "timeout":
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
