"""Real WebSocket clients and a real framework against peregrine (issue 6 item 6).

- the `websockets` library (sync client) for each feature that a correct
  client can exercise: messages, fragmentation, ping, subprotocols, extra
  headers, denial, close codes, no compression negotiated by default;
- `wsproto`, an independent sans-I/O implementation, for handshake, echo
  and the closing handshake;
- a FastAPI (Starlette) application, tests/apps/ws_frameworks.py, unchanged.
"""

from __future__ import annotations

import json
import socket
import time
from typing import TYPE_CHECKING

import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, BytesMessage, CloseConnection, Message, Request, TextMessage

pytest.register_assert_rewrite("websocket_support")
from websocket_support import unique, wait_record  # noqa: E402

pytest_plugins = ("websocket_support",)

if TYPE_CHECKING:
    from conftest import Server, ServerPool


def url(server: Server, path: str) -> str:
    """ws://127.0.0.1:PORT/path."""
    return f"ws://127.0.0.1:{server.port}{path}"


# --- websockets -----------------------------------------------------------------------------------------


def test_websockets_echo_text_and_binary(ws_server: Server) -> None:
    with connect(url(ws_server, "/echo"), compression=None, open_timeout=10, max_size=None) as ws:
        ws.send("hello ✓")
        assert ws.recv(timeout=10) == "hello ✓"
        ws.send(b"\x00\xff")
        assert ws.recv(timeout=10) == b"\x00\xff"
        big = bytes(range(256)) * 8192  # 2 MiB
        ws.send(big)
        assert ws.recv(timeout=10) == big


def test_websockets_fragmented_send_is_one_message(ws_server: Server) -> None:
    with connect(url(ws_server, "/echo"), compression=None, open_timeout=10) as ws:
        ws.send(["frag", "men", "ted ✓"])
        assert ws.recv(timeout=10) == "fragmented ✓"
        ws.send([b"a", b"b", b"c"])
        assert ws.recv(timeout=10) == b"abc"


def test_websockets_receives_a_large_server_message(ws_server: Server) -> None:
    with connect(url(ws_server, "/big?size=5000000"), compression=None, open_timeout=10, max_size=None) as ws:
        data = ws.recv(timeout=20)
        assert isinstance(data, bytes)
        assert data == bytes(i % 251 for i in range(5000000))


def test_websockets_ping_gets_pong(ws_server: Server) -> None:
    with connect(url(ws_server, "/echo"), compression=None, open_timeout=10) as ws:
        latency = ws.ping(b"are you there").wait(10)
        assert latency
        ws.send("after ping")
        assert ws.recv(timeout=10) == "after ping"


def test_websockets_subprotocol_negotiation(ws_server: Server) -> None:
    with connect(url(ws_server, "/subprotocol"), subprotocols=["chat.v1", "chat.v2"], compression=None) as ws:  # type: ignore[list-item]
        assert ws.subprotocol == "chat.v2"
        assert ws.recv(timeout=10) == "chat.v2"


def test_websockets_extra_accept_headers(ws_server: Server) -> None:
    with connect(url(ws_server, "/headers"), compression=None) as ws:
        assert ws.response is not None
        assert ws.response.headers["x-extra"] == "yes"
        assert ws.response.headers.get_all("set-cookie") == ["session=abc", "theme=dark"]


def test_websockets_compression_is_not_negotiated(ws_server: Server) -> None:
    # The client offers permessage-deflate; without --ws-compress (the default) the server must decline.
    # With it: test_websocket_compression.py.
    with connect(url(ws_server, "/echo")) as ws:
        assert ws.response is not None
        assert "Sec-WebSocket-Extensions" not in ws.response.headers
        ws.send("x" * 10000)
        assert ws.recv(timeout=10) == "x" * 10000


def test_websockets_denied_with_403(ws_server: Server) -> None:
    with pytest.raises(InvalidStatus) as caught, connect(url(ws_server, "/deny"), compression=None):
        pass
    assert caught.value.response.status_code == 403


def test_websockets_denial_response(ws_server: Server) -> None:
    with pytest.raises(InvalidStatus) as caught, connect(url(ws_server, "/deny-response"), compression=None):
        pass
    response = caught.value.response
    assert response.status_code == 418
    assert response.headers["x-denied"] == "teapot"
    assert response.body == b"no websocket for you"


def test_websockets_sees_the_apps_close_code(ws_server: Server) -> None:
    with connect(url(ws_server, "/close?code=4001&reason=bye"), compression=None) as ws:
        assert ws.recv(timeout=10) == "closing"
        with pytest.raises(ConnectionClosed) as caught:
            ws.recv(timeout=10)
    assert caught.value.rcvd is not None
    assert (caught.value.rcvd.code, caught.value.rcvd.reason) == (4001, "bye")


def test_websockets_client_close_reaches_the_app(ws_server: Server) -> None:
    ident = unique("wsclose")
    with connect(url(ws_server, f"/echo?id={ident}"), compression=None) as ws:
        ws.send("one")
        assert ws.recv(timeout=10) == "one"
        ws.close(code=4002, reason="client done")
        assert ws.close_code == 4002
    assert wait_record(ws_server, ident, "disconnect") == {"code": 4002, "reason": "client done"}


def test_websockets_scope_query_and_subprotocols(ws_server: Server) -> None:
    with connect(url(ws_server, "/scope?room=7"), subprotocols=["a", "b"], compression=None) as ws:  # type: ignore[list-item]
        scope = json.loads(ws.recv(timeout=10))  # type: ignore[arg-type]
    assert (scope["path"], scope["query_string"], scope["subprotocols"]) == ("/scope", "room=7", ["a", "b"])


def test_websockets_many_round_trips(ws_server: Server) -> None:
    with connect(url(ws_server, "/echo"), compression=None) as ws:
        for index in range(500):
            ws.send(f"m{index}")
        for index in range(500):
            assert ws.recv(timeout=10) == f"m{index}"


# --- wsproto --------------------------------------------------------------------------------------------


def test_wsproto_handshake_echo_and_close(ws_server: Server) -> None:
    ident = unique("wsproto")
    connection = WSConnection(ConnectionType.CLIENT)
    sock = socket.create_connection(("127.0.0.1", ws_server.port), timeout=10)
    events: list[object] = []

    def pump(until: type) -> object:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            for event in connection.events():
                events.append(event)
                if isinstance(event, until):
                    return event
            data = sock.recv(65536)
            connection.receive_data(data or None)
        pytest.fail(f"no {until.__name__}: {events!r}")

    with sock:
        sock.sendall(connection.send(Request(host="localhost", target=f"/echo?id={ident}", subprotocols=["x"])))
        accepted = pump(AcceptConnection)
        assert isinstance(accepted, AcceptConnection)
        assert accepted.subprotocol is None
        sock.sendall(connection.send(TextMessage(data="part one ", message_finished=False)))
        sock.sendall(connection.send(TextMessage(data="part two", message_finished=True)))
        text = pump(TextMessage)
        assert isinstance(text, Message)
        assert text.data == "part one part two"
        assert text.message_finished
        sock.sendall(connection.send(BytesMessage(data=b"\x01" * 70000)))
        data = b""
        while True:
            piece = pump(BytesMessage)
            assert isinstance(piece, BytesMessage)
            data += piece.data
            if piece.message_finished:
                break
        assert data == b"\x01" * 70000
        sock.sendall(connection.send(CloseConnection(code=1000, reason="bye")))
        closed = pump(CloseConnection)
        assert isinstance(closed, CloseConnection)
        assert closed.code == 1000
    assert wait_record(ws_server, ident, "disconnect") == {"code": 1000, "reason": "bye"}


# --- FastAPI --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fastapi_server(server_pool: ServerPool) -> Server:
    """ws_frameworks:app (FastAPI)."""
    return server_pool.get("ws_frameworks:app")


def test_fastapi_iter_text_echo(fastapi_server: Server) -> None:
    with connect(url(fastapi_server, "/ws/echo"), compression=None) as ws:
        for word in ("alpha", "βeta", ""):
            ws.send(word)
            assert ws.recv(timeout=10) == "echo: " + word


def test_fastapi_json_and_disconnect_code(fastapi_server: Server) -> None:
    with connect(url(fastapi_server, "/ws/json"), compression=None) as ws:
        ws.send(json.dumps({"n": 1}))
        assert json.loads(ws.recv(timeout=10)) == {"n": 1, "seen": True}
        ws.close(code=4100)
    deadline = time.monotonic() + 10
    while True:
        codes = httpx.get(f"{fastapi_server.base_url}/disconnects", timeout=10).json()
        if 4100 in codes or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert 4100 in codes


def test_fastapi_close_with_code_and_reason(fastapi_server: Server) -> None:
    with connect(url(fastapi_server, "/ws/close"), compression=None) as ws:
        assert ws.recv(timeout=10) == b"\x00\x01bye"
        with pytest.raises(ConnectionClosed) as caught:
            ws.recv(timeout=10)
    assert caught.value.rcvd is not None
    assert (caught.value.rcvd.code, caught.value.rcvd.reason) == (4003, "go away")


def test_fastapi_path_query_and_subprotocol(fastapi_server: Server) -> None:
    with connect(url(fastapi_server, "/ws/query/lobby?user=ann"), subprotocols=["v9"], compression=None) as ws:  # type: ignore[list-item]
        assert ws.subprotocol == "v9"
        assert json.loads(ws.recv(timeout=10)) == {"room": "lobby", "user": "ann", "subprotocols": ["v9"]}  # type: ignore[arg-type]


def test_fastapi_http_route_beside_websockets(fastapi_server: Server) -> None:
    response = httpx.get(f"{fastapi_server.base_url}/hello", timeout=10)
    assert (response.status_code, response.text) == (200, "hello")


def test_fastapi_unknown_websocket_route_is_refused(fastapi_server: Server) -> None:
    with pytest.raises(InvalidStatus) as caught, connect(url(fastapi_server, "/ws/nowhere"), compression=None):
        pass
    assert caught.value.response.status_code == 403
