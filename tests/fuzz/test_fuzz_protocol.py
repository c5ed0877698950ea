"""Property tests for the control protocol: no input crashes the parser or the server."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from procwindow.control._protocol import ProtocolError, decode_request

from ..control.conftest import read_message, start_server, stop_server
from ..tiers import examples

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
ops = st.sampled_from(
    ["run", "idx", "top", "out", "term", "kill", "dismiss", "events", "hello", "nope"]
)
requests = st.fixed_dictionaries(
    {"op": ops},
    optional={
        "proc": json_values,
        "since": json_values,
        "session": json_values,
        "agent": json_values,
        "argv": json_values,
        "pattern": json_values,
        "v": json_values,
        "extra": json_values,
    },
)


@given(st.binary(max_size=200))
def test_decode_request_takes_any_bytes(raw):
    try:
        req = decode_request(raw)
    except ProtocolError as exc:
        code = exc.code
    else:
        code = None
        assert isinstance(req, dict)
        assert isinstance(req["op"], str)
    assert code in {None, "malformed", "unknown-op", "bad-field", "version"}


@pytest.fixture(scope="module")
def live_server(tmp_path_factory):
    srv = start_server(tmp_path_factory.mktemp("fuzz-server"))
    yield srv
    assert stop_server(srv) == 0


@pytest.mark.no_leak_check  # the module's server lives across the examples
@settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.one_of(requests.map(lambda r: json.dumps(r).encode()), st.binary(max_size=120)))
def test_server_answers_any_request_and_carries_on(live_server, line):
    if b"\n" in line or not line.strip():
        line = line.replace(b"\n", b" ") + b" x"
    if b'"op": "events"' in line or b'"op": "run"' in line:
        return  # a valid events stream never ends; runs would start processes
    with live_server.connect() as sock:
        sock.sendall(line + b"\n")
        reply = read_message(sock)
        assert isinstance(reply.get("ok"), bool)
        if not reply["ok"]:
            assert reply["error"]["message"]
        sock.sendall(b'{"op": "hello", "id": "after"}\n')
        while (after := read_message(sock)).get("id") != "after":
            pass  # a streamed 'out' may send more before
        assert after["ok"] is True
