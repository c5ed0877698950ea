"""Protocol versions meet: a server answers the older version it still speaks as that
version did, and a client facing a server it cannot speak with says so once, naming
both sides' versions (``VersionMismatch``, a LinkError)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from procwindow.control._links import LinkError, LocalLink, VersionMismatch
from procwindow.control._protocol import OLDEST_PROTOCOL, PROTOCOL_VERSION
from procwindow.control.remote import RemoteSupervisor

from .conftest import Server, read_message

#: Requests as a client of version 4 wrote them (procwindow 0.1.0's ctl and window),
#: and what each reply must hold for that client.
RECORDED_V4 = [
    (b'{"v":4,"op":"hello","id":1}', lambda r: r["ok"] and r["result"]["protocol"] >= 4),
    (
        b'{"v":4,"op":"run","id":2,"session":"s","agent":"a","argv":["sh","-c","echo hi"]}',
        lambda r: r["ok"] and r["result"]["id"] >= 1,
    ),
    (b'{"v":4,"op":"idx","id":3}', lambda r: r["result"]["text"].startswith("pid\t")),
    (b'{"v":4,"op":"procs","id":4,"session":"s"}', lambda r: len(r["result"]) == 1),
    (
        # Version 4 named a wrong field's error ProtocolError, with code bad-field.
        b'{"v":4,"op":"out","id":5,"proc":1,"since":-1}',
        lambda r: (r["error"]["type"], r["error"]["code"]) == ("ProtocolError", "bad-field"),
    ),
    (
        b'{"v":4,"op":"term","id":6,"proc":99999}',
        lambda r: (
            (r["error"]["type"], r["error"]["message"]) == ("ProcNotFound", "no such proc: 99999")
        ),
    ),
]


def test_a_recorded_version_4_client_is_answered_as_version_4_answered(server: Server) -> None:
    assert OLDEST_PROTOCOL <= 4 < PROTOCOL_VERSION
    with server.connect() as sock:
        for line, holds in RECORDED_V4:
            sock.sendall(line + b"\n")
            reply = read_message(sock)
            assert reply["id"] == json.loads(line)["id"]
            assert holds(reply), (line, reply)


@pytest.mark.parametrize("version", [1, 3, PROTOCOL_VERSION + 1])
def test_a_version_the_server_does_not_speak_is_refused_naming_those_it_does(
    server: Server, version: int
) -> None:
    reply = server.request({"v": version, "op": "idx", "id": 1})
    assert reply["error"]["code"] == "version"
    assert reply["error"]["message"] == (
        f"protocol version {version} is not supported"
        f" (this server speaks {OLDEST_PROTOCOL} to {PROTOCOL_VERSION})"
    )


def test_hello_says_which_versions_the_server_speaks(server: Server) -> None:
    result = server.request({"op": "hello"})["result"]
    assert result["protocol"] == PROTOCOL_VERSION
    assert result["protocols"] == list(range(OLDEST_PROTOCOL, PROTOCOL_VERSION + 1))


async def _fake_server(path: Path, hello: Any) -> asyncio.AbstractServer:
    """A server that answers ``hello`` with ``hello`` as its result, and anything
    else with a version error, as a server of another version would."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                req = json.loads(line)
                if req.get("op") == "hello":
                    reply = {"id": req.get("id"), "ok": True, "result": hello}
                else:
                    error = {"type": "ProtocolError", "code": "version", "message": "no"}
                    reply = {"id": None, "ok": False, "error": error}
                writer.write(json.dumps(reply).encode() + b"\n")
                await writer.drain()
        finally:
            writer.close()

    return await asyncio.start_unix_server(answer, path=str(path))


@pytest.mark.parametrize(
    ("hello", "spoken"),
    [
        (
            {"protocol": PROTOCOL_VERSION + 1, "protocols": [PROTOCOL_VERSION + 1]},
            str(PROTOCOL_VERSION + 1),
        ),
        ({"protocol": 4, "server": "procwindow 0.1.0"}, "4"),  # before hello listed them
    ],
)
def test_a_client_facing_a_server_it_cannot_speak_with_says_so_once(
    tmp_path: Path, hello: dict[str, Any], spoken: str
) -> None:
    path = tmp_path / "other.sock"

    async def main() -> None:
        server = await _fake_server(path, hello)
        try:
            with pytest.raises(VersionMismatch) as info:
                await LocalLink(str(path)).open()
            assert str(info.value) == (
                f"{path}: this client speaks protocol {PROTOCOL_VERSION}, the server speaks"
                f" {spoken}: use the same procwindow on both sides"
            )
            assert info.value.client == PROTOCOL_VERSION
            with pytest.raises(LinkError, match="this client speaks protocol"):
                await RemoteSupervisor.connect(str(path))
        finally:
            server.close()
            await server.wait_closed()

    asyncio.run(main())


@pytest.mark.parametrize("hello", ["a string", {"protocols": "5"}, {"protocol": True}])
def test_a_server_that_does_not_answer_hello_as_procwindow_is_refused(
    tmp_path: Path, hello: Any
) -> None:
    path = tmp_path / "other.sock"

    async def main() -> None:
        server = await _fake_server(path, hello)
        try:
            with pytest.raises(LinkError, match="does not answer as procwindow does"):
                await LocalLink(str(path)).open()
        finally:
            server.close()
            await server.wait_closed()

    asyncio.run(main())
