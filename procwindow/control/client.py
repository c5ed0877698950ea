"""A blocking client for the control socket (what ``procwindow ctl`` uses)."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator, Mapping
from typing import Any

from ..core import ProcwindowError
from ._protocol import PROTOCOL_VERSION, encode, error_from_json

__all__ = ["CannotConnect", "Client", "ServerError"]


class CannotConnect(ProcwindowError):
    """No server answers at the socket path."""

    def __init__(self, path: str, why: str) -> None:
        super().__init__(
            f"cannot connect to {path}: {why} "
            "(is 'procwindow serve' or the procwindow window running?)"
        )
        self.path = path


class ServerError(ProcwindowError):
    """The server refused a request; ``type`` is the server-side error's name,
    ``code`` its code and ``error`` the whole error it sent. :meth:`local` gives
    the error as its own class (``ProcNotFound`` with its ``proc_id``…)."""

    def __init__(
        self,
        type_: str,
        message: str,
        code: str | None = None,
        error: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(f"{type_}: {message}")
        self.type = type_
        self.message = message
        self.code = code or "error"
        self.error = dict(error or {})

    def local(self) -> ProcwindowError:
        """The error the server raised, rebuilt from its code and details (this
        ServerError itself for a code unknown here)."""
        return error_from_json(self.error) or self


class Client:
    """One connection to a control server.

    >>> with Client(path) as c:  # doctest: +SKIP
    ...     print(c.call("idx")["text"])
    """

    def __init__(self, path: str, timeout: float | None = 30.0) -> None:
        self.path = path
        try:
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        except OSError as exc:
            raise CannotConnect(path, exc.strerror or str(exc)) from None
        self._sock.settimeout(timeout)
        try:
            self._sock.connect(path)
        except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
            self._sock.close()
            raise CannotConnect(path, getattr(exc, "strerror", None) or str(exc)) from None
        self._file = self._sock.makefile("rb")
        self._next_id = 1

    def close(self) -> None:
        """Close the connection."""
        self._file.close()
        self._sock.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _send(self, op: str, fields: dict[str, Any]) -> int:
        req_id = self._next_id
        self._next_id += 1
        body = {"v": PROTOCOL_VERSION, "op": op, "id": req_id}
        body.update({k: v for k, v in fields.items() if v is not None})
        try:
            self._sock.sendall(encode(body))
        except OSError as exc:
            raise ServerError(
                "ConnectionClosed", f"lost the connection to the server: {exc.strerror or exc}"
            ) from None
        return req_id

    def _receive(self) -> dict[str, Any]:
        try:
            line = self._file.readline()
        except OSError as exc:
            raise ServerError(
                "ConnectionClosed", f"lost the connection to the server: {exc.strerror or exc}"
            ) from None
        if not line:
            raise ServerError("ConnectionClosed", "the server closed the connection")
        if not line.endswith(b"\n"):
            raise ServerError(
                "ConnectionClosed", "the server closed the connection in the middle of a reply"
            )
        try:
            message = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise ServerError(
                "BadReply", f"the server sent something that is not JSON: {exc}"
            ) from None
        if not isinstance(message, dict):
            raise ServerError("BadReply", "the server sent something that is not a JSON object")
        return message

    def call(self, op: str, **fields: Any) -> Any:
        """Send one request and return its result; ServerError if it failed."""
        self._send(op, fields)
        return _result(self._receive())

    def stream(self, op: str, **fields: Any) -> Iterator[dict[str, Any]]:
        """Send a streaming request; yield each message until its final result.

        The final result is yielded too, as ``{"result": ...}``.
        """
        self._send(op, fields)
        while True:
            message = self._receive()
            if "ok" in message:
                result = _result(message)
                yield {"result": result}
                if op != "events":
                    return
                continue
            yield message


def _result(message: dict[str, Any]) -> Any:
    if message.get("ok") is True:
        return message.get("result")
    error = message.get("error")
    if message.get("ok") is not False or not isinstance(error, dict):
        raise ServerError("BadReply", "the server sent a reply without a result or an error")
    code = error.get("code")
    raise ServerError(
        str(error.get("type", "Error")),
        str(error.get("message", "")),
        code if isinstance(code, str) else None,
        error,
    )
