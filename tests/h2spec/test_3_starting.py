"""RFC 9113 §3: starting HTTP/2 — TLS with ALPN (§3.2), prior knowledge (§3.3), the connection preface (§3.4).

Also the server's own switches: h2c shares the HTTP/1.1 port (the server
tells the two apart by the preface), `--no-http2` turns HTTP/2 off and
`--http2-only` refuses HTTP/1.1.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pytest

pytest.register_assert_rewrite("h2wire", "h2support")
from h2support import Variant, peregrine_only  # noqa: E402
from h2wire import (  # noqa: E402
    PREFACE,
    E,
    FrameConn,
    S,
    T,
    assert_still_serving,
    expect_connection_error,
    frame,
    settings_frame,
)

pytest_plugins = ("h2support",)
pytestmark = pytest.mark.timeout(60)

if TYPE_CHECKING:
    import socket
    from collections.abc import Callable

    from h2support import Target

HTTP11_GET = b"GET /hello HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"


def http11_exchange(sock: socket.socket, request: bytes = HTTP11_GET, timeout: float = 5.0) -> bytes:
    """Send an HTTP/1.1 request and read until the server closes."""
    sock.settimeout(timeout)
    sock.sendall(request)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except (TimeoutError, ConnectionResetError):
        pass
    return data


def closed_or_refused(conn: FrameConn) -> None:
    """§3.4: "a connection error of type PROTOCOL_ERROR ... A GOAWAY frame MAY be omitted" — close, GOAWAY optional."""
    assert conn.closes(), f"the server kept the connection open; {conn.log()}"
    if conn.goaway is not None:
        assert conn.goaway.error_code == E.PROTOCOL_ERROR, conn.log()
    conn.close()
    assert_still_serving(conn.target)


def test_preface_gets_settings_first_and_an_ack(target: Target) -> None:
    """RFC 9113 §3.4: the server's preface is a SETTINGS frame, and it acknowledges the client's SETTINGS."""
    with FrameConn.open(target, [(S.ENABLE_PUSH, 0), (S.INITIAL_WINDOW_SIZE, 65535)]) as conn:
        conn.ping()


def test_preface_with_empty_settings(target: Target) -> None:
    """RFC 9113 §3.4: the client preface is the magic octets and a SETTINGS frame, which may be empty."""
    with FrameConn.open(target) as conn:
        response = conn.response(conn.request("/hello"))
    assert (response.status, response.body) == (200, b"hello")


def test_preface_sent_in_small_pieces(target: Target) -> None:
    """RFC 9113 §3.4: the preface may arrive in several TCP segments."""
    with FrameConn.open(target, handshake=False) as conn:
        data = PREFACE + settings_frame()
        for start in range(0, len(data), 5):
            conn.send(data[start : start + 5])
            time.sleep(0.01)
        first = conn.wait_for(lambda r: r.kind == T.SETTINGS, "the server's SETTINGS")
        assert not first.has("ACK")
        conn.send_frame(T.SETTINGS, 0x1, 0)
        response = conn.response(conn.request("/hello"))
    assert response.status == 200


def test_invalid_preface_is_a_connection_error(target: Target) -> None:
    """RFC 9113 §3.4: an invalid connection preface is a connection error PROTOCOL_ERROR (GOAWAY may be omitted)."""
    conn = FrameConn.open(target, handshake=False)
    conn.send(b"PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n" + settings_frame())
    closed_or_refused(conn)


def test_preface_not_followed_by_settings_is_a_connection_error(target: Target) -> None:
    """RFC 9113 §3.4: the preface "MUST be followed by a SETTINGS frame"; anything else is PROTOCOL_ERROR."""
    conn = FrameConn.open(target, handshake=False)
    conn.send(PREFACE + frame(T.PING, 0, 0, b"notfirst"))
    closed_or_refused(conn)


def test_connection_error_after_the_preface_sends_goaway(target: Target) -> None:
    """RFC 9113 §3.4, §5.4.1: once the preface was valid, a protocol error gets GOAWAY then close."""
    conn = FrameConn.open(target)
    conn.send_frame(T.PING, 0, 1, b"onstream")
    expect_connection_error(conn, E.PROTOCOL_ERROR)


# --- §3.3 prior knowledge shares the HTTP/1.1 port -------------------------------------------------


def test_http11_still_served_on_the_h2c_port(h2c_target: Target) -> None:
    """RFC 9113 §3.3: prior knowledge is detected by the preface; HTTP/1.1 on the same port still works."""
    with h2c_target.tcp() as sock:
        data = http11_exchange(sock)
    assert data.startswith(b"HTTP/1.1 200"), data[:200]
    assert data.endswith(b"hello"), data[-200:]


def test_h2c_upgrade_is_not_required(h2c_target: Target) -> None:
    """RFC 9113 §3.1: the h2c Upgrade is deprecated; a server may ignore it and answer in HTTP/1.1 (or switch)."""
    request = (
        b"GET /hello HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade, HTTP2-Settings, close\r\n"
        b"Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n"
    )
    with h2c_target.tcp() as sock:
        data = http11_exchange(sock, request)
    assert data.startswith((b"HTTP/1.1 200", b"HTTP/1.1 101")), data[:200]


# --- §3.2 TLS and ALPN -----------------------------------------------------------------------------


def test_alpn_selects_h2(tls_target: Target) -> None:
    """RFC 9113 §3.2: a client offering "h2" and "http/1.1" over TLS gets "h2"."""
    sock = tls_target.connect(alpn=["h2", "http/1.1"])
    try:
        assert getattr(sock, "selected_alpn_protocol", lambda: None)() == "h2"
    finally:
        sock.close()


def test_tls_version_is_at_least_1_2(tls_target: Target) -> None:
    """RFC 9113 §9.2: HTTP/2 over TLS uses TLS 1.2 or higher."""
    sock = tls_target.connect()
    try:
        assert getattr(sock, "version", lambda: None)() in ("TLSv1.2", "TLSv1.3")
    finally:
        sock.close()


def test_alpn_http11_gets_http11(tls_target: Target) -> None:
    """RFC 9113 §3.2 / RFC 7301: a client offering only "http/1.1" is served HTTP/1.1 on the TLS port."""
    sock = tls_target.connect(alpn=["http/1.1"])
    try:
        assert getattr(sock, "selected_alpn_protocol", lambda: None)() in ("http/1.1", None)
        data = http11_exchange(sock)
    finally:
        sock.close()
    assert data.startswith(b"HTTP/1.1 200"), data[:200]


def test_no_alpn_gets_http11(tls_target: Target) -> None:
    """RFC 9113 §3.3: HTTP/2 over TLS must be negotiated with ALPN; a client offering none is served HTTP/1.1."""
    sock = tls_target.connect(alpn=[])
    try:
        data = http11_exchange(sock)
    finally:
        sock.close()
    assert data.startswith(b"HTTP/1.1 200"), data[:200]


# --- peregrine's switches --------------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["h2c", "tls"])
def test_no_http2_switch_turns_http2_off(transport: str, fresh_target: Callable[..., Target]) -> None:
    """peregrine --no-http2 (RFC 9113 §3.2, §3.3): no HTTP/2 by prior knowledge nor ALPN; HTTP/1.1 still works."""
    target = fresh_target(Variant(transport, "asgi"), peregrine_options=("--no-http2",))
    peregrine_only(target, "--no-http2")
    if target.tls:
        sock = target.connect(alpn=["h2", "http/1.1"])
        try:
            assert getattr(sock, "selected_alpn_protocol", lambda: None)() in ("http/1.1", None)
            assert http11_exchange(sock).startswith(b"HTTP/1.1 200")
        finally:
            sock.close()
        return
    with target.tcp() as sock:
        sock.sendall(PREFACE + settings_frame())
        reply = http11_exchange(sock, b"")
    assert reply[3:4] != bytes([T.SETTINGS]), "the server answered the preface with HTTP/2 SETTINGS"
    assert reply == b"" or reply.startswith((b"HTTP/1.1 4", b"HTTP/1.1 505")), reply[:200]
    with target.tcp() as sock:
        assert http11_exchange(sock).startswith(b"HTTP/1.1 200")


@pytest.mark.parametrize("transport", ["h2c", "tls"])
def test_http2_only_switch_refuses_http11(transport: str, fresh_target: Callable[..., Target]) -> None:
    """peregrine --http2-only: HTTP/1.1 requests are not served; HTTP/2 is."""
    target = fresh_target(Variant(transport, "asgi"), peregrine_options=("--http2-only",))
    peregrine_only(target, "--http2-only")
    if target.tls:
        sock: socket.socket | None
        try:
            sock = target.connect(alpn=["http/1.1"])
        except OSError:  # refusing the handshake (no_application_protocol alert) is a refusal too
            sock = None
        if sock is not None:
            try:
                reply = http11_exchange(sock)
            finally:
                sock.close()
            assert not reply.startswith(b"HTTP/1.1 200"), reply[:200]
    else:
        with target.tcp() as sock:
            reply = http11_exchange(sock)
        assert not reply.startswith(b"HTTP/1.1 200"), reply[:200]
    assert_still_serving(target)
