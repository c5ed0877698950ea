"""The verbs of ``procwindow ctl``: one function a verb, which asks the server
through a :class:`~procwindow.control.client.Client` and prints its answer
(with :mod:`._ctl_format`); ``_VERBS`` maps a verb's name to it.

Apart from the command line (:mod:`._ctl_args`) and from :mod:`.ctl`, which
checks the arguments, finds the server and turns every failure into an exit
status.
"""

from __future__ import annotations

import argparse
import codecs
import json
import sys
from typing import Any

from ..core import ScopeCounts, escape_controls
from ..core.rules import signal_name
from ._ctl_args import EXIT_SERVER
from ._ctl_format import (
    _count_line,
    _describe_exit,
    _emit,
    _exit_text,
    _Gaps,
    _print_lines,
    _states_text,
    history_table,
    tree_table,
)
from ._protocol import WRITE_CHUNK
from .client import Client

#: The checked fields of a verb's request (``_ctl_args.request``).
Fields = dict[str, Any]


def _table(client: Client, args: argparse.Namespace, fields: Fields) -> int:
    text = client.call(args.verb, **fields)["text"]
    if args.json:
        return _emit(args, client.call("procs", **fields), "")
    return _emit(args, None, text)


def _out(client: Client, args: argparse.Namespace, fields: Fields) -> int:
    fields = dict(fields)
    follow = fields.pop("follow", False)
    gaps = _Gaps()
    if not follow:
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


def _stop(client: Client, args: argparse.Namespace, fields: Fields) -> int:
    info = client.call(args.verb, proc=args.proc)
    return _emit(args, info, _describe_exit(args.proc, info))


def _interrupt(client: Client, args: argparse.Namespace, fields: Fields) -> int:
    result = client.call("interrupt", proc=args.proc)
    text = (
        f"{args.proc}: SIGINT sent\n" if result["delivered"] else f"{args.proc}: already exited\n"
    )
    return _emit(args, result, text)


def _signal(client: Client, args: argparse.Namespace, fields: Fields) -> int:
    result = client.call("signal", **fields)
    name = signal_name(fields["signal"])
    target = "its process group" if args.os_pid is None else f"pid {args.os_pid}"
    if result["sent"]:
        return _emit(args, result, f"{args.proc}: {name} sent to {target}\n")
    why = "it has exited" if args.os_pid is None else f"pid {args.os_pid} is not in its tree"
    _emit(args, result, f"{args.proc}: {name} not sent: {why}\n")
    return 1


def _dismiss(client: Client, args: argparse.Namespace, fields: Fields) -> int:
    result = client.call("dismiss", proc=args.proc)
    return _emit(args, result, f"{args.proc}: dismissed\n")


def _forget(client: Client, args: argparse.Namespace, fields: Fields) -> int:
    result = client.call("forget", proc=args.proc)
    return _emit(args, result, f"{args.proc}: forgotten\n")


def _restart(client: Client, args: argparse.Namespace, fields: Fields) -> int:
    result = client.call("restart", proc=args.proc)
    return _emit(args, result, f"{result['id']}\n")


def _show(client: Client, args: argparse.Namespace, fields: Fields) -> int:
    p = client.call("get", **fields)
    rows = {
        "id": p["id"],
        "pid": p["os_pid"],
        "scope": f"{p['session']}/{p['agent']} ({p['tool']})",
        "command": p["cmd"],
        "cwd": p["cwd"],
        "state": p["state"] if p["live"] else p["state"] + " (not in the live view)",
        "exit": _exit_text(p["exit"]) if p["exit"] else "-",
        "lines": p["last_seq"],
    }
    text = "".join(f"{k:<8} {escape_controls(str(v))}\n" for k, v in rows.items())
    return _emit(args, p, text)


def _ports(client: Client, args: argparse.Namespace, fields: Fields) -> int:
    ports = client.call("ports", **fields)["ports"]
    text = "".join(f"{p['port']}\t{p['host']}\t{p['os_pid']}\n" for p in ports)
    return _emit(args, ports, text)


def _tree(client: Client, args: argparse.Namespace, fields: Fields) -> int:
    tree = client.call("tree", **fields)["tree"]
    return _emit(args, tree, tree_table(tree) if tree else f"{args.proc}: no process left\n")


def _wait(client: Client, args: argparse.Namespace, fields: Fields) -> int:
    info = client.call("wait", **fields)
    _emit(args, info, _describe_exit(args.proc, info))
    return info["code"] if 0 <= info["code"] <= 255 else EXIT_SERVER


def _run(client: Client, args: argparse.Namespace, fields: Fields) -> int:
    result = client.call("run", **fields)
    return _emit(args, result, f"{result['id']}\n")


def _wait_for(client: Client, args: argparse.Namespace, fields: Fields) -> int:
    result = client.call("wait_for", **fields)
    return _emit(args, result, result["line"]["text"] + "\n")


def _ready(client: Client, args: argparse.Namespace, fields: Fields) -> int:
    result = client.call("ready", **fields)
    return _emit(args, result, f"{args.proc}: ready\n")


def _excerpt(client: Client, args: argparse.Namespace, fields: Fields) -> int:
    result = client.call("excerpt", **fields)
    return _emit(args, result, result["text"])


def _write(client: Client, args: argparse.Namespace, fields: Fields) -> int:
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


def _resize(client: Client, args: argparse.Namespace, fields: Fields) -> int:
    result = client.call("resize", **fields)
    return _emit(args, result, "")


def _screen(client: Client, args: argparse.Namespace, fields: Fields) -> int:
    result = client.call("screen", **fields)
    text = "\n".join(escape_controls(line) for line in result["lines"]).rstrip("\n")
    return _emit(args, result, text + "\n")


def _write_pieces(args: argparse.Namespace) -> Any:
    """What ``write`` sends, in pieces that each fit in a request: DATA (and a
    newline unless -n), or ctl's stdin read to its end (UTF-8, checked)."""
    if args.data is not None:
        data = args.data if args.no_newline else args.data + "\n"
        for start in range(0, len(data), WRITE_CHUNK):
            yield data[start : start + WRITE_CHUNK]
        return
    decoder = codecs.getincrementaldecoder("utf-8")()
    while True:
        chunk = sys.stdin.buffer.read(WRITE_CHUNK)
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


def _events(client: Client, args: argparse.Namespace, fields: Fields) -> int:
    for message in client.stream("events", **fields):
        if "result" in message:
            continue  # the subscription's acknowledgement
        ev = message["event"]
        if args.json:
            print(json.dumps(ev, ensure_ascii=False), flush=True)
            continue
        skip = {"topic", "kind", "session", "agent", "time"}
        shown = " ".join(
            f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in ev.items() if k not in skip
        )
        print(f"{ev['topic']} {shown}", flush=True)
    return 0


def _sessions(client: Client, args: argparse.Namespace, fields: Fields) -> int:
    tree = client.call("sessions")
    lines = []
    for session in tree:
        agents = {a["agent"]: ScopeCounts(a["running"], a["total"]) for a in session["agents"]}
        lines.append(_count_line(session["session"], sum(agents.values(), ScopeCounts())))
        lines += [_count_line(f"  {agent}", counts) for agent, counts in agents.items()]
    return _emit(args, tree, "".join(lines))


def _history(client: Client, args: argparse.Namespace, fields: Fields) -> int:
    procs = client.call("history", **fields)
    return _emit(args, procs, history_table(procs))


def _search(client: Client, args: argparse.Namespace, fields: Fields) -> int:
    found = 0
    messages = client.stream("search", **fields)
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


def _up(client: Client, args: argparse.Namespace, fields: Fields) -> int:
    run = client.call("up", **fields)
    return _emit(args, run, _states_text([run]))


def _down(client: Client, args: argparse.Namespace, fields: Fields) -> int:
    result = client.call("down", **fields)
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


def _workspaces(client: Client, args: argparse.Namespace, fields: Fields) -> int:
    runs = client.call("workspaces")
    return _emit(args, runs, _states_text(runs))


_VERBS = {
    "top": _table,
    "idx": _table,
    "out": _out,
    "term": _stop,
    "kill": _stop,
    "interrupt": _interrupt,
    "signal": _signal,
    "dismiss": _dismiss,
    "forget": _forget,
    "restart": _restart,
    "show": _show,
    "ports": _ports,
    "tree": _tree,
    "wait": _wait,
    "run": _run,
    "events": _events,
    "sessions": _sessions,
    "history": _history,
    "search": _search,
    "wait-for": _wait_for,
    "ready": _ready,
    "excerpt": _excerpt,
    "write": _write,
    "resize": _resize,
    "screen": _screen,
    "up": _up,
    "down": _down,
    "workspaces": _workspaces,
}
