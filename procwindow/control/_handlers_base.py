"""What the request handlers of every verb family share: ``_Verbs``, their base
(the supervisor, the sessions declared), ``_Replied``, and the readers of a
request's fields, which refuse a wrong one with ``bad-field``.

The handlers are cut by verb family, each a base class of
:class:`~procwindow.control._handlers.Handlers` in a module of its own
(``_handlers_streams``, ``_handlers_agent``, ``_handlers_workspaces``), so that
every handler stays a method that reaches the supervisor as ``self.sup``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ..core import Proc, Ready, Stream, Supervisor
from ..core._agent import check_timeout
from ._protocol import ProtocolError


class _Replied(Exception):
    """A handler already wrote its answer."""


class _Verbs:
    """The base of every verb family: what a handler may use besides its request."""

    sup: Supervisor
    declared: Mapping[str, Sequence[str]]

    def _runtime(self, p: Proc) -> float:
        """Seconds ``p`` ran. A proc of the history knows its own (from wall-clock
        times); asking the supervisor would look it up in the database again."""
        return self.sup.runtime(p.id) if p.live else p.runtime(time.monotonic())


# -- request fields --------------------------------------------------------------


def _str(req: dict[str, Any], key: str, default: str | None = None) -> str:
    value = req.get(key, default)
    if not isinstance(value, str):
        raise ProtocolError("bad-field", f"{req['op']}: '{key}' must be a string")
    return value


def _opt_str(req: dict[str, Any], key: str) -> str | None:
    value = req.get(key)
    if value is not None and not isinstance(value, str):
        raise ProtocolError("bad-field", f"{req['op']}: '{key}' must be a string")
    return value


def _opt_int(req: dict[str, Any], key: str, *, minimum: int | None = None) -> int | None:
    return None if req.get(key) is None else _int(req, key, minimum=minimum)


def _opt_number(req: dict[str, Any], key: str) -> float | None:
    value = req.get(key)
    if value is None:
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        with contextlib.suppress(OverflowError):  # an int of 400 digits
            return float(value)
    raise ProtocolError("bad-field", f"{req['op']}: '{key}' must be a number")


def _int(
    req: dict[str, Any], key: str, default: int | None = None, *, minimum: int | None = None
) -> int:
    value = req.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool):
        raise ProtocolError("bad-field", f"{req['op']}: '{key}' must be an integer")
    if minimum is not None and value < minimum:
        raise ProtocolError("bad-field", f"{req['op']}: '{key}' must be at least {minimum}")
    return value


def _bool(req: dict[str, Any], key: str, default: bool = False) -> bool:
    value = req.get(key, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ProtocolError("bad-field", f"{req['op']}: '{key}' must be true or false")
    return value


def _stream(req: dict[str, Any]) -> Stream | None:
    """The optional ``stream`` field."""
    stream = _opt_str(req, "stream")
    if stream is not None and stream not in ("stdout", "stderr"):
        raise ProtocolError("bad-field", f"{req['op']}: 'stream' is 'stdout' or 'stderr'")
    return Stream(stream) if stream is not None else None


def _opt_seconds(req: dict[str, Any], key: str) -> float | None:
    """An optional positive, finite number of seconds."""
    try:
        return check_timeout(req.get(key), key)
    except (ValueError, OverflowError):
        raise ProtocolError(
            "bad-field", f"{req['op']}: '{key}' must be a positive number of seconds"
        ) from None


#: The fields of each kind of readiness check; ``interval`` and ``timeout`` go with any.
_READY_KINDS: dict[str, frozenset[str]] = {
    "line": frozenset({"line", "regex", "stream"}),
    "port": frozenset({"port", "host"}),
    "command": frozenset({"command"}),
    "shell": frozenset({"shell"}),
}
_READY_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "line": ((str,), "a string"),
    "regex": ((bool,), "true or false"),
    "stream": ((str,), "'stdout' or 'stderr'"),
    "port": ((int,), "an integer"),
    "host": ((str,), "a string"),
    "command": ((list,), "a list of strings"),
    "shell": ((str,), "a string"),
    "interval": ((int, float), "a number of seconds"),
    "timeout": ((int, float), "a number of seconds"),
}


def _ready_check(req: dict[str, Any]) -> Ready | None:
    """``run``'s ``ready`` field as a Ready (None if absent); bad-field otherwise."""
    spec = req.get("ready")
    if spec is None:
        return None
    try:
        if not isinstance(spec, dict):
            raise ValueError(
                'an object with one of "line", "port", "command" or "shell" is expected'
            )
        kinds = [kind for kind in _READY_KINDS if kind in spec]
        if len(kinds) != 1:
            raise ValueError('give exactly one of "line", "port", "command" or "shell"')
        extra = set(spec) - _READY_KINDS[kinds[0]] - {"interval", "timeout"}
        if extra:
            raise ValueError(f"a {kinds[0]} check takes no {sorted(extra)[0]!r}")
        for key, value in spec.items():
            types, what = _READY_TYPES[key]
            if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
                raise ValueError(f"{key!r} must be {what}")
        if spec.get("stream") not in (None, "stdout", "stderr"):
            raise ValueError("'stream' is 'stdout' or 'stderr'")
        if spec.get("host") == "":
            raise ValueError("'host' is empty")
        return Ready.of(spec)
    except (ValueError, TypeError, OverflowError) as exc:  # InvalidArgv, InvalidPattern too
        raise ProtocolError("bad-field", f"run: 'ready': {exc}") from None
