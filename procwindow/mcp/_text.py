"""Bounded text for the MCP tools' results: nothing an agent reads is unbounded.

Sizes are UTF-8 bytes. :func:`clip` cuts a string and counts what it cut,
:func:`format_lines` renders output lines as text within a budget,
:func:`clip_field` cuts one field of a result and says so in it, and
:func:`proc_row` is the compact line of ``list`` for one proc.
"""

from __future__ import annotations

from typing import Any

from ..core.spec import MCP_TEXT_CAP

__all__ = [
    "CMD_CAP",
    "HIT_CAP",
    "TEXT_CAP",
    "byte_size",
    "clip",
    "clip_field",
    "clip_tree",
    "format_lines",
    "proc_row",
]

#: The most text (UTF-8 bytes) one tool result carries.
TEXT_CAP = MCP_TEXT_CAP
#: The most bytes of one search hit's line shown.
HIT_CAP = 1000
#: The most characters of a command shown in ``list``.
CMD_CAP = 200


def byte_size(text: str) -> int:
    """The size of ``text`` in UTF-8 bytes (lone surrogates included)."""
    return len(text.encode("utf-8", "surrogatepass"))


def clip(text: str, limit: int) -> tuple[str, int]:
    """``text`` cut to at most ``limit`` UTF-8 bytes, and how many bytes were cut."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text, 0
    kept = data[: max(limit, 0)].decode("utf-8", "ignore")
    return kept, len(data) - byte_size(kept)


def format_lines(elements: list[Any], budget: int = TEXT_CAP) -> tuple[str, int, int | None]:
    """The lines of an ``out`` reply asked for with ``runs`` (its ``lines``: runs
    ``[first, stream, time, [texts]]`` and line objects) as text within ``budget``
    bytes: ``(text, lines shown, seq of the last one shown)``.

    Stderr lines start with ``[stderr] ``, unterminated ones (a prompt, a
    progress bar) with ``[partial] ``; lines missing before a line (cut by the
    disk cap) are marked on a line of their own. The first line is shown
    even when it alone is too long (cut, and said so), so that a reader always
    moves on.
    """
    parts: list[str] = []
    used = shown = 0
    last: int | None = None
    for element in elements:
        if type(element) is list:
            first, stream, _, texts = element
            if stream == "stderr":
                texts = ["[stderr] " + text for text in texts]
            whole = "\n".join(texts)
            size = (len(whole) if whole.isascii() else byte_size(whole)) + 1
            if used + size <= budget:  # the whole run fits: no line by line
                parts.append(whole)
                used += size
                shown += len(texts)
                last = first + len(texts) - 1
                continue
            entries = [(text, first + i, False) for i, text in enumerate(texts)]
        else:
            entries = [_entry(element)]
        for entry, seq, partial in entries:
            size = (len(entry) if entry.isascii() else byte_size(entry)) + 1
            if used + size > budget:
                if parts:
                    return "\n".join(parts), shown, last
                entry, lost = clip(entry, budget - 64)
                entry += f" [… {lost} more bytes of this line]"
                size = byte_size(entry) + 1
            parts.append(entry)
            used += size
            shown += 1
            # An unterminated line comes again, complete: the cursor stays before it.
            last = seq - 1 if partial and isinstance(seq, int) else seq
    return "\n".join(parts), shown, last


def _entry(line: dict[str, Any]) -> tuple[str, Any, bool]:
    """A line object as its text, its seq and whether it is unterminated."""
    entry = str(line.get("text", ""))
    if line.get("stream") == "stderr":
        entry = "[stderr] " + entry
    partial = bool(line.get("partial"))
    if partial:
        entry = "[partial] " + entry
    cut = line.get("cut")
    if cut:
        entry = f"[… {cut} lines missing …]\n{entry}"
    return entry, line.get("seq"), partial


def clip_field(result: dict[str, Any], key: str, limit: int = TEXT_CAP) -> None:
    """Cut ``result[key]`` (a string) to ``limit`` bytes and say so in the result."""
    value = result.get(key)
    if isinstance(value, str):
        kept, lost = clip(value, limit)
        if lost:
            result[key] = kept
            result[f"{key}_cut_bytes"] = lost


def _short(cmd: str) -> str:
    return cmd if len(cmd) <= CMD_CAP else cmd[: CMD_CAP - 1] + "…"


def clip_tree(tree: list[dict[str, Any]]) -> dict[str, Any]:
    """``{"tree": ...}`` with each command cut to CMD_CAP characters and as many
    processes as fit in TEXT_CAP (parents first: a cut keeps the top of the tree),
    ``note`` saying how many were left out."""
    kept: list[dict[str, Any]] = []
    size = 0
    for p in tree:
        row = p | {"command": _short(str(p["command"]))}
        size += byte_size(str(row)) + 2
        if size > TEXT_CAP:
            break
        kept.append(row)
    out: dict[str, Any] = {"tree": kept}
    if len(kept) < len(tree):
        out["note"] = f"{len(tree) - len(kept)} more processes left out (the result is capped)"
    return out


def proc_row(p: dict[str, Any], with_scope: bool) -> dict[str, Any]:
    """A compact line of ``list`` for one proc."""
    cmd = _short(str(p.get("cmd") or " ".join(map(str, p.get("argv") or ()))))
    row: dict[str, Any] = {"id": p.get("id"), "os_pid": p.get("os_pid"), "state": p.get("state")}
    exit_ = p.get("exit")
    if isinstance(exit_, dict):
        row["code"] = exit_.get("code")
        row["reason"] = exit_.get("reason")
    row["runtime"] = p.get("runtime")
    if with_scope:
        row["session"] = p.get("session")
        row["agent"] = p.get("agent")
    row["cmd"] = cmd
    run = p.get("command_run")
    if isinstance(run, dict):  # a run of a workspace's command, linked to the one before
        row["command_run"] = run
    return row
