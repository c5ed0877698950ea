"""process-compose's probes as readiness and liveness checks: ``ready_log_line``,
``readiness_probe`` and ``liveness_probe`` (``exec`` or ``http_get``), with
process-compose's defaults, into a workspace's ``ready`` and ``liveness``."""

from __future__ import annotations

from typing import Any

from ._compose_yaml import Node, ValueReader
from ._toml_lines import Key

__all__ = ["probe", "readiness"]

_PROBE = {
    "exec",
    "http_get",
    "initial_delay_seconds",
    "period_seconds",
    "timeout_seconds",
    "success_threshold",
    "failure_threshold",
}
_EXEC = {"command"}
_EXEC_REFUSED = {"working_dir": "a probe runs in its process's working_dir"}
_HTTP = {"host", "scheme", "path", "port", "num_port", "status_code"}
_HTTP_REFUSED = {"headers": "an http check sends no headers"}


def readiness(
    r: ValueReader,
    shell: tuple[str, str],
    table: dict[str, Node],
    key: Key,
    where: Key,
    data: dict[str, Any],
) -> None:
    """``ready_log_line`` or ``readiness_probe`` into ``data``'s ``ready``."""
    if "readiness_probe" in table and "ready_log_line" in table:
        raise r.fail(
            table["ready_log_line"],
            (*key, "ready_log_line"),
            "give a readiness_probe or a ready_log_line, not both",
        )
    if "ready_log_line" in table:
        sub = (*key, "ready_log_line")
        r.place((*where, "ready"), table["ready_log_line"], sub)
        data["ready"] = {"line": r.string(table["ready_log_line"], sub)}
    elif "readiness_probe" in table:
        data["ready"] = probe(
            r, shell, table["readiness_probe"], (*key, "readiness_probe"), where, True
        )


def probe(
    r: ValueReader,
    shell: tuple[str, str],
    node: Node,
    key: Key,
    where: Key,
    ready: bool = False,
) -> dict[str, Any]:
    """A readiness or liveness probe, with process-compose's defaults."""
    field = "ready" if ready else "liveness"
    r.place((*where, field), node, key)
    table = r.mapping(node, key, _PROBE)
    numbers = {}
    for name in sorted(_PROBE - {"exec", "http_get"}):
        if name in table:
            numbers[name] = r.integer(table[name], (*key, name))
    # process-compose's defaults for values it reads as unset (below its minimum).
    period = numbers.get("period_seconds", 0)
    period = period if period >= 1 else 10
    timeout = numbers.get("timeout_seconds", 0)
    timeout = timeout if timeout >= 1 else 1
    failures = numbers.get("failure_threshold", 0)
    failures = failures if failures >= 1 else 3
    delay = max(numbers.get("initial_delay_seconds", 0), 0)
    if ("exec" in table) == ("http_get" in table):
        raise r.fail(node, key, "give one of exec or http_get")
    out: dict[str, Any] = {}
    if "exec" in table:
        sub = (*key, "exec")
        exec_ = r.mapping(table["exec"], sub, _EXEC, _EXEC_REFUSED)
        if "command" not in exec_:
            raise r.fail(table["exec"], sub, "needs a command")
        r.place((*where, field, "command"), exec_["command"], (*sub, "command"))
        line = r.rendered(exec_["command"], (*sub, "command"))
        out["command"] = [*shell, line]
    else:
        out["http"], status = _url(r, table["http_get"], (*key, "http_get"), (*where, field))
        if status is not None:
            out["status"] = status
    for name, value in (
        ("period_seconds", "period" if not ready else "interval"),
        ("timeout_seconds", "timeout"),
        ("failure_threshold", "failures"),
        ("initial_delay_seconds", "delay"),
    ):
        if name in table:
            r.place((*where, field, value), table[name], (*key, name))
    if ready:
        # Polled until it passes, every period (an attempt may take that long).
        out["interval"] = period
        return out
    out.update(period=period, timeout=timeout, failures=failures, delay=delay)
    return out


def _url(r: ValueReader, node: Node, key: Key, data_key: Key) -> tuple[str, int | None]:
    """An ``http_get``'s URL, and its ``status_code`` (None: any 2xx or 3xx)."""
    table = r.mapping(node, key, _HTTP, _HTTP_REFUSED)
    r.place((*data_key, "http"), node, key)
    parts = {}
    for name, default in (("scheme", "http"), ("host", "127.0.0.1"), ("path", "/")):
        parts[name] = r.rendered(table[name], (*key, name)) if name in table else default
        parts[name] = parts[name].strip() or default
    port = ""
    for name in ("port", "num_port"):
        if name in table:
            sub = (*key, name)
            text = r.rendered(table[name], sub).strip()
            if not text.isdigit() or not 0 < int(text) < 65536:
                raise r.fail(table[name], sub, f"must be a port (1-65535), got {text[:20]!r}")
            port = f":{int(text)}"
    status = None
    if "status_code" in table:
        sub = (*key, "status_code")
        r.place((*data_key, "status"), table["status_code"], sub)
        status = r.integer(table["status_code"], sub)
    return f"{parts['scheme']}://{parts['host']}{port}{parts['path']}", status
