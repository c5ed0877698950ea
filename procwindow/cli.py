"""The ``procwindow`` command line.

``procwindow`` opens the window; ``procwindow -- CMD ARGS...`` opens it and runs
CMD in it. Subcommands are listed in :data:`SUBCOMMANDS`; without one, the
window is the default.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from procwindow import PROG

# Distributions the window needs beyond the supervisor, by top-level module name.
_WINDOW_MODULES = frozenset({"PySide6", "shiboken6", "qasync"})


@dataclass(frozen=True, slots=True)
class Subcommand:
    """One ``procwindow NAME ...`` subcommand."""

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def _ctl_configure(parser: argparse.ArgumentParser) -> None:
    from procwindow.control import ctl

    ctl.configure(parser)


def _ctl_run(args: argparse.Namespace) -> int:
    from procwindow.control import ctl

    return ctl.run(args)


def _serve_configure(parser: argparse.ArgumentParser) -> None:
    from procwindow.control import serve

    serve.configure(parser)


def _serve_run(args: argparse.Namespace) -> int:
    from procwindow.control import serve

    return serve.run(args)


def _mcp_configure(parser: argparse.ArgumentParser) -> None:
    from procwindow import mcp

    mcp.configure(parser)


def _mcp_run(args: argparse.Namespace) -> int:
    from procwindow import mcp

    return mcp.run(args)


def _attach_configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "targets",
        nargs="*",
        metavar="NAME|ssh://[user@]host[:port][/NAME]",
        help="the servers: a name (default 'default') or socket path here, or one on"
        " another machine through ssh; several show side by side",
    )
    parser.add_argument(
        "--ssh",
        metavar="COMMAND",
        help="the ssh command and options to use (default: $PROCWINDOW_SSH, else ssh)",
    )
    parser.add_argument(
        "--remote-procwindow",
        metavar="COMMAND",
        help="procwindow on the remote host (default: $PROCWINDOW_REMOTE, else procwindow)",
    )
    parser.add_argument(
        "--no-notify",
        action="store_true",
        help="no desktop notification when a process fails while the window is in the background",
    )


def _up_configure(parser: argparse.ArgumentParser) -> None:
    from procwindow.control.serve import (
        add_exit_code_option,
        add_selection_options,
        add_workspace_argument,
    )

    add_workspace_argument(parser, optional=False)
    add_selection_options(parser)
    add_exit_code_option(parser)
    add_window_options(parser)


SUBCOMMANDS: tuple[Subcommand, ...] = (
    Subcommand(
        "up",
        "open the window on a workspace FILE and start its commands",
        _up_configure,
        lambda args: run_window(args),
    ),
    Subcommand(
        "attach",
        "open the window on a running server (serve, a window, mcp), here or over ssh",
        _attach_configure,
        lambda args: run_window(args),
    ),
    Subcommand(
        "ctl",
        "control a running procwindow: top, idx, out, term, kill, run, events …",
        _ctl_configure,
        _ctl_run,
    ),
    Subcommand(
        "serve",
        "run the supervisor and its control socket headless (optionally a workspace FILE)",
        _serve_configure,
        _serve_run,
    ),
    Subcommand(
        "mcp",
        "serve the Model Context Protocol on stdio: agents run and watch commands here",
        _mcp_configure,
        _mcp_run,
    ),
)


def run_window(args: argparse.Namespace) -> int:
    """Open the window: ``procwindow.app.run(args) -> int`` does the work.

    ``procwindow.app`` is imported here, not at the top, so that the rest of the
    command line works without loading Qt.
    """
    try:
        app = importlib.import_module("procwindow.app")
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").partition(".")[0]
        if exc.name == "procwindow.app":
            print(
                f"{PROG}: this installation has no window (module procwindow.app is missing)",
                file=sys.stderr,
            )
            return 2
        if missing in _WINDOW_MODULES:
            print(f"{PROG}: the window needs {missing}, which is not installed", file=sys.stderr)
            return 2
        raise
    return int(app.run(args))


def add_window_options(parser: argparse.ArgumentParser) -> None:
    """Where the window serves its control socket, and whether it notifies."""
    group = parser.add_argument_group("control socket")
    group.add_argument(
        "--name", help="serve as this name (default: the workspace's, else 'default')"
    )
    group.add_argument("--socket", metavar="PATH", help="serve on this socket path")
    group.add_argument("--no-serve", action="store_true", help="do not serve the control socket")
    parser.add_argument(
        "--attach",
        action="append",
        metavar="TARGET",
        help="also show the server TARGET (a name, a socket path, ssh://[user@]host[:port][/NAME])"
        " beside this window's own processes; repeat for several",
    )
    parser.add_argument(
        "--no-notify",
        action="store_true",
        help="no desktop notification when a process fails while the window is in the background",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Supervise processes for sessions and agents, and watch them in a window.",
        epilog=f"'{PROG} -- CMD [ARG ...]' opens the window and runs CMD in it; "
        f"'{PROG}' alone opens the demo workspace.",
    )
    from procwindow import __version__  # read from the installed metadata: only here

    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    add_window_options(parser)
    parser.set_defaults(subcommand=None)
    if SUBCOMMANDS:
        subparsers = parser.add_subparsers(dest="subcommand", metavar="COMMAND")
        for sub in SUBCOMMANDS:
            sub.configure(subparsers.add_parser(sub.name, help=sub.help, description=sub.help))
    return parser


def split_command(argv: Sequence[str]) -> tuple[list[str], list[str] | None]:
    """Split ``argv`` at the first ``--``: options before it, a command after it.

    >>> split_command(["--", "make", "-j4"])
    ([], ['make', '-j4'])
    >>> split_command(["--version"])
    (['--version'], None)
    """
    argv = list(argv)
    if "--" not in argv:
        return argv, None
    cut = argv.index("--")
    return argv[:cut], argv[cut + 1 :]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse a command line; ``args.argv`` is the command after ``--`` (a list), or None."""
    options, command = split_command(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(options)
    if command is not None and not command:
        parser.error("expected a command after '--'")
    args.argv = command
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit status."""
    words = list(sys.argv[1:] if argv is None else argv)
    if (
        words[:2] == ["ctl", "bridge"]
        and len(words) <= 3
        and not any(w.startswith("-") for w in words[2:])
    ):
        # The far side of an attach, three per attach: nothing else to import.
        from procwindow.control import bridge

        return bridge.main(words[2] if len(words) == 3 else None)
    try:
        args = parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors
        return exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    handlers = {sub.name: sub.run for sub in SUBCOMMANDS}
    return handlers.get(args.subcommand, run_window)(args)
