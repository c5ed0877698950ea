"""Ready: how a proc shows it is ready (a line, a port or a command), as data.
Checking it is the agent layer's job (``_agent.run_check``, ``_waiting``)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple
from urllib.parse import urlsplit

from ._errors import InvalidArgv
from ._match import line_matcher
from ._types import Stream
from .rules import command_argv, shown

__all__ = ["HttpTarget", "Ready", "check_timeout", "http_status", "http_target"]


class HttpTarget(NamedTuple):
    """Where an ``http`` check connects, and what it asks for."""

    https: bool
    host: str
    port: int
    path: str  # with its query


def http_target(url: object) -> HttpTarget:
    """An ``http`` check's URL, taken apart; InvalidArgv (one line) if it is not one."""
    if not isinstance(url, str) or not url.isprintable() or " " in url:
        raise InvalidArgv(f"ready http must be a URL without spaces, got {shown(url)}")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidArgv(f"ready http must be an http:// or https:// URL, got {shown(url)}")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise InvalidArgv(f"ready http has a bad port: {shown(url)}") from None
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return HttpTarget(parts.scheme == "https", parts.hostname, port, path)


def http_status(value: object) -> int:
    """An ``http`` check's expected status; InvalidArgv (one line) if it is not one."""
    if isinstance(value, bool) or not isinstance(value, int) or not 100 <= value <= 599:
        raise InvalidArgv(f"ready status must be an HTTP status (100-599), got {shown(value)}")
    return value


def check_timeout(value: object, what: str = "timeout") -> float | None:
    """``value`` as a positive finite number of seconds, or None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{what} must be a number of seconds, got {shown(value)}")
    seconds = float(value)
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"{what} must be a positive number of seconds, got {shown(value)}")
    return seconds


@dataclass(frozen=True, slots=True)
class Ready:
    """How a proc shows it is ready; give exactly one of:

    - ``line``: a line of its output matches (an RE2 regex, or a substring
      with ``regex=False``; ``stream`` limits it to one stream);
    - ``port``: a TCP connection to ``host:port`` is accepted (``host`` is
      127.0.0.1 unless given);
    - ``command`` (an argv) or ``shell`` (a ``/bin/sh -c`` line): it exits 0;
    - ``http``: a GET of this ``http://`` or ``https://`` URL answers with a
      status from 200 to 399, or with ``status`` when it is given.

    Ports, URLs and commands are polled every ``interval`` seconds. ``timeout``: give
    up that many seconds after the start (the proc keeps running, ``ready``
    stays False, ``wait_ready`` raises NotReady). A command runs in ``cwd``
    (None: the supervisor's working directory). A str is short for
    ``Ready(line=...)`` and an int for ``Ready(port=...)``.
    """

    line: str | None = None
    regex: bool = True
    stream: Stream | None = None
    port: int | None = None
    host: str = "127.0.0.1"
    command: tuple[str, ...] | None = None
    shell: str | None = None
    http: str | None = None
    status: int | None = None
    interval: float = 0.25
    timeout: float | None = None
    cwd: str | None = None

    def __post_init__(self) -> None:
        given = [self.line is not None, self.port is not None, self.command is not None]
        given += [self.shell is not None, self.http is not None]
        if sum(given) != 1:
            raise InvalidArgv("ready needs exactly one of line, port, command, shell or http")
        if self.http is not None:
            http_target(self.http)
        if self.status is not None:
            if self.http is None:
                raise InvalidArgv("ready status goes with an http check only")
            http_status(self.status)
        if self.line is not None:
            line_matcher(self.line, regex=self.regex)
        if self.stream is not None:
            object.__setattr__(self, "stream", Stream(self.stream))
        port = self.port
        if port is not None and (
            isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536
        ):
            raise InvalidArgv(f"ready port must be 1-65535, got {shown(self.port)}")
        if self.command is not None or self.shell is not None:
            argv = command_argv(self.command, self.shell)
            object.__setattr__(self, "command", argv)
            object.__setattr__(self, "shell", None)
        interval = check_timeout(self.interval, "ready interval")
        object.__setattr__(self, "interval", max(0.01, interval or 0.25))
        object.__setattr__(self, "timeout", check_timeout(self.timeout, "ready timeout"))

    @classmethod
    def of(cls, value: Ready | str | int | Mapping[str, object]) -> Ready:
        """A Ready from itself, a line pattern (str), a port (int) or a mapping of its fields."""
        if isinstance(value, Ready):
            return value
        if isinstance(value, str):
            return cls(line=value)
        if isinstance(value, int) and not isinstance(value, bool):
            return cls(port=value)
        if isinstance(value, Mapping):
            known = {f for f in cls.__dataclass_fields__}
            unknown = set(value) - known
            if unknown:
                raise InvalidArgv(f"ready has no field {sorted(unknown)[0]!r}")
            fields = dict(value)
            if isinstance(fields.get("command"), list):
                fields["command"] = tuple(fields["command"])  # type: ignore[arg-type]
            return cls(**fields)  # type: ignore[arg-type]
        raise InvalidArgv(f"ready must be a Ready, a pattern, a port or a mapping: {shown(value)}")

    def describe(self) -> str:
        """One line for people: ``line /listening/``, ``port 127.0.0.1:8080``…"""
        if self.line is not None:
            return f"line /{self.line}/" if self.regex else f"line {self.line!r}"
        if self.port is not None:
            return f"port {self.host}:{self.port}"
        if self.http is not None:
            return f"http {self.http}" + (f" (status {self.status})" if self.status else "")
        assert self.command is not None
        return f"command {' '.join(self.command)}"

    def to_json(self) -> dict[str, object]:
        """The fields that are set, as JSON values."""
        out: dict[str, object] = {}
        if self.line is not None:
            out["line"] = self.line
            out["regex"] = self.regex
            if self.stream is not None:
                out["stream"] = self.stream.value
        elif self.port is not None:
            out["port"] = self.port
            out["host"] = self.host
        elif self.http is not None:
            out["http"] = self.http
            if self.status is not None:
                out["status"] = self.status
        else:
            out["command"] = list(self.command or ())
        out["interval"] = self.interval
        if self.timeout is not None:
            out["timeout"] = self.timeout
        if self.cwd is not None and self.command is not None:
            out["cwd"] = self.cwd
        return out
