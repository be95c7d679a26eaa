"""WebSocket opening handshake over HTTP/1.1 for ASGI (issue 6 item 1): RFC 6455 §4 and the ASGI WebSocket scope.

Served application: tests/apps/ws_apps.py. Requests are built by hand so that
broken upgrades (bad version, bad key, wrong method) can be sent.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest
from rawhttp import RawConnection, request

pytest.register_assert_rewrite("websocket_support")
from websocket_support import (  # noqa: E402
    APP,
    accept_for,
    assert_ws_still_serving,
    handshake,
    new_key,
    refused,
    upgrade_headers,
)

pytest_plugins = ("websocket_support",)

if TYPE_CHECKING:
    from collections.abc import Callable

    from conftest import Server


def test_upgrade_answers_101_with_the_accept_hash(ws_server: Server) -> None:
    key = "dGhlIHNhbXBsZSBub25jZQ=="  # RFC 6455 §1.3's example
    with RawConnection.to(ws_server) as raw:
        raw.send(request("GET", "/echo", upgrade_headers(key)))
        response = raw.read_head()
        assert response.status == 101
        assert response.header("Sec-WebSocket-Accept") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" == accept_for(key)
        assert (response.header("Upgrade") or "").lower() == "websocket"
        assert "upgrade" in (response.header("Connection") or "").lower()
        assert response.header("Content-Length") is None
        assert response.header("Transfer-Encoding") is None
        assert response.header("Sec-WebSocket-Protocol") is None
        assert response.header("Sec-WebSocket-Extensions") is None


def test_scope_of_a_websocket(ws_server: Server) -> None:
    headers = [
        ("Sec-WebSocket-Protocol", "chat, superchat"),
        ("X-Custom", "Value One"),
        ("Origin", "http://example.com"),
    ]
    with handshake(ws_server, "/scope/a%20b?x=1&y=%20", headers) as ws:
        scope = json.loads(ws.read_text())
        local = ws.raw.sock.getsockname()
    assert scope["type"] == "websocket"
    assert scope["asgi"]["version"] == "3.0"
    assert scope["asgi"]["spec_version"] in ("2.3", "2.4")
    assert scope["http_version"] == "1.1"
    assert scope["scheme"] == "ws"
    assert scope["path"] == "/scope/a b"
    assert scope["raw_path"] == "/scope/a%20b"
    assert scope["types"]["raw_path"] == "bytes"
    assert scope["query_string"] == "x=1&y=%20"
    assert scope["types"]["query_string"] == "bytes"
    assert scope["root_path"] == ""
    assert scope["subprotocols"] == ["chat", "superchat"]
    assert scope["types"]["headers"] in ("list", "tuple")
    names = [name for name, _ in scope["headers"]]
    assert names == [name.lower() for name in names], "header names must be lower-case"
    assert ["x-custom", "Value One"] in scope["headers"]
    assert ["origin", "http://example.com"] in scope["headers"]
    assert ["sec-websocket-protocol", "chat, superchat"] in scope["headers"]
    assert ["upgrade", "websocket"] in scope["headers"]
    assert scope["client"] == [local[0], local[1]]
    assert scope["server"] == ["127.0.0.1", ws_server.port]
    assert scope["state"] == {"name": "ws_apps"}
    assert "websocket.http.response" in scope["extensions"]


def test_no_subprotocol_offered_is_an_empty_list(ws_server: Server) -> None:
    with handshake(ws_server, "/scope") as ws:
        scope = json.loads(ws.read_text())
    assert scope["subprotocols"] == []


def test_subprotocol_chosen_by_the_app_is_echoed(ws_server: Server) -> None:
    with handshake(ws_server, "/subprotocol?choose=superchat", [("Sec-WebSocket-Protocol", "chat, superchat")]) as ws:
        assert ws.response.header_all("Sec-WebSocket-Protocol") == ["superchat"]
        assert ws.read_text() == "superchat"


def test_subprotocols_over_several_header_lines(ws_server: Server) -> None:
    headers = [("Sec-WebSocket-Protocol", "v1.chat"), ("Sec-WebSocket-Protocol", "v2.chat")]
    with handshake(ws_server, "/scope", headers) as ws:
        scope = json.loads(ws.read_text())
    assert scope["subprotocols"] == ["v1.chat", "v2.chat"]


def test_accept_with_extra_headers(ws_server: Server) -> None:
    with handshake(ws_server, "/headers") as ws:
        assert ws.response.header("x-extra") == "yes"
        assert ws.response.header_all("set-cookie") == ["session=abc", "theme=dark"]
        ws.send_text("after headers")
        assert ws.read_text() == "after headers"


def test_close_before_accept_is_403(ws_server: Server) -> None:
    response = refused(ws_server, "GET", "/deny", upgrade_headers())
    assert response.status == 403
    assert response.header("Sec-WebSocket-Accept") is None
    assert_ws_still_serving(ws_server)


def test_return_before_accept_is_403(ws_server: Server) -> None:
    assert refused(ws_server, "GET", "/return-early", upgrade_headers()).status == 403


def test_raise_before_accept_is_500(ws_server: Server) -> None:
    assert refused(ws_server, "GET", "/raise-early", upgrade_headers()).status == 500
    assert_ws_still_serving(ws_server)


def test_denial_extension_sends_the_apps_response(ws_server: Server) -> None:
    response = refused(ws_server, "GET", "/deny-response", upgrade_headers())
    assert response.status == 418
    assert response.header("x-denied") == "teapot"
    assert response.header("content-type") == "text/plain"
    assert response.body == b"no websocket for you"
    assert response.header("Sec-WebSocket-Accept") is None
    assert_ws_still_serving(ws_server)


@pytest.mark.parametrize("version", ["8", "12", "14", "", "thirteen"])
def test_unsupported_version_is_426_naming_13(ws_server: Server, version: str) -> None:
    response = refused(ws_server, "GET", "/echo", upgrade_headers(version=version))
    assert response.status == 426
    assert response.header("Sec-WebSocket-Version") == "13"


def test_missing_version_is_refused(ws_server: Server) -> None:
    headers = [h for h in upgrade_headers() if h[0] != "Sec-WebSocket-Version"]
    response = refused(ws_server, "GET", "/echo", headers)
    assert response.status in (400, 426)
    if response.status == 426:
        assert response.header("Sec-WebSocket-Version") == "13"


def test_missing_key_is_400(ws_server: Server) -> None:
    headers = [h for h in upgrade_headers() if h[0] != "Sec-WebSocket-Key"]
    assert refused(ws_server, "GET", "/echo", headers).status == 400


@pytest.mark.parametrize(
    "key",
    [
        "not base64 at all!",
        "dGhlIHNhbXBsZQ==",  # 10 bytes
        "dGhlIHNhbXBsZSBub25jZSEh",  # 18 bytes
        "",
    ],
)
def test_invalid_key_is_400(ws_server: Server, key: str) -> None:
    headers = [h for h in upgrade_headers() if h[0] != "Sec-WebSocket-Key"] + [("Sec-WebSocket-Key", key)]
    assert refused(ws_server, "GET", "/echo", headers).status == 400


def test_two_keys_is_400(ws_server: Server) -> None:
    headers = [*upgrade_headers(), ("Sec-WebSocket-Key", new_key())]
    assert refused(ws_server, "GET", "/echo", headers).status == 400


@pytest.mark.parametrize("method", ["POST", "PUT", "HEAD"])
def test_non_get_upgrade_is_400(ws_server: Server, method: str) -> None:
    response = refused(ws_server, method, "/echo", upgrade_headers())
    assert response.status == 400
    assert_ws_still_serving(ws_server)


def test_plain_request_is_served_as_http(ws_server: Server) -> None:
    with RawConnection.to(ws_server) as raw:
        raw.send(request("GET", "/hello"))
        response = raw.read_response()
        assert (response.status, response.body) == (200, b"hello")
        # Keep-alive works as usual on the same connection.
        raw.send(request("GET", "/hello"))
        assert raw.read_response().status == 200


def test_upgrade_to_another_protocol_is_served_as_http(ws_server: Server) -> None:
    response = refused(ws_server, "GET", "/hello", [("Upgrade", "h2c"), ("Connection", "Upgrade")])
    assert (response.status, response.body) == (200, b"hello")


def test_frames_right_behind_the_handshake_are_not_lost(ws_server: Server) -> None:
    from websocket_support import TEXT, WebSocketConnection, frame  # noqa: PLC0415

    key = new_key()
    with RawConnection.to(ws_server) as raw:
        raw.send(request("GET", "/echo", upgrade_headers(key)) + frame(TEXT, b"eager"))
        response = raw.read_head()
        assert response.status == 101
        ws = WebSocketConnection(raw, response)
        assert ws.read_text() == "eager"


@pytest.mark.timeout(30)
def test_no_websockets_option_answers_501(start_server: Callable[..., Server]) -> None:
    server = start_server(APP, "--no-websockets")
    response = refused(server, "GET", "/echo", upgrade_headers())
    assert response.status == 501
    with RawConnection.to(server) as raw:
        raw.send(request("GET", "/hello"))
        assert raw.read_response().status == 200


@pytest.mark.timeout(30)
def test_wsgi_app_gets_an_upgrade_as_a_plain_request(start_server: Callable[..., Server]) -> None:
    # TRANSPORT.md: "requests (WebSocket) are served as plain requests to a WSGI application".
    server = start_server("wsgi_apps:app")
    response = refused(server, "GET", "/hello", upgrade_headers())
    assert response.status == 200
    assert response.header("Sec-WebSocket-Accept") is None


@pytest.mark.parametrize(
    ("upgrade", "connection"),
    [("WebSocket", "keep-alive, Upgrade"), ("websocket", "upgrade"), ("websocket", "Upgrade, HTTP2-Settings")],
)
def test_upgrade_and_connection_tokens_are_case_insensitive_lists(
    ws_server: Server, upgrade: str, connection: str
) -> None:
    key = new_key()
    headers = [("Upgrade", upgrade), ("Connection", connection)]
    headers += [("Sec-WebSocket-Key", key), ("Sec-WebSocket-Version", "13")]
    with RawConnection.to(ws_server) as raw:
        raw.send(request("GET", "/echo", headers))
        response = raw.read_head()
    assert response.status == 101
    assert response.header("Sec-WebSocket-Accept") == accept_for(key)


def test_upgrade_after_a_keep_alive_request_on_the_same_connection(ws_server: Server) -> None:
    from websocket_support import WebSocketConnection  # noqa: PLC0415

    key = new_key()
    with RawConnection.to(ws_server) as raw:
        raw.send(request("GET", "/hello"))
        assert raw.read_response().body == b"hello"
        raw.send(request("GET", "/echo", upgrade_headers(key)))
        response = raw.read_head()
        assert response.status == 101
        assert response.header("Sec-WebSocket-Accept") == accept_for(key)
        ws = WebSocketConnection(raw, response)
        ws.send_text("second request upgraded")
        assert ws.read_text() == "second request upgraded"


def test_http10_upgrade_is_not_switched(ws_server: Server) -> None:
    # RFC 6455 §4.1: the handshake is an HTTP/1.1 (or later) GET.
    with RawConnection.to(ws_server) as raw:
        raw.send(request("GET", "/echo", upgrade_headers(), version="HTTP/1.0"))
        response = raw.read_head()
    assert response.status != 101
