"""A wrong HTTP/2 client preface is a connection error (RFC 9113 §3.4), not an HTTP/1.1 505.

§3.4: "Clients and servers MUST treat an invalid connection preface as a
connection error (Section 5.4.1) of type PROTOCOL_ERROR." Under
--http2-only nothing but HTTP/2 is spoken, so any other first bytes are an
invalid preface; on the shared port the request line `PRI * HTTP/2.0`
(which only HTTP/2 sends) followed by anything but the rest of the preface
is one as well. Either way the server sends its SETTINGS (§3.4: "the
server connection preface ... MUST be the first frame the server sends"),
then GOAWAY with last-stream-id 0 and PROTOCOL_ERROR (0x1, §7), and closes;
the same worker then serves the next client. Raw sockets, frame bytes
checked.
"""

from __future__ import annotations

import socket
import struct
import time
from typing import TYPE_CHECKING

import pytest
from h2client import H2Client
from rawhttp import RawConnection, request
from tls_support import client_context, tls_connect

if TYPE_CHECKING:
    from collections.abc import Callable

    from tls_support import TLSFiles

    from conftest import Server, ServerPool

pytest_plugins = ("tls_support",)

TARGETS = {"wsgi": "process_apps:wsgi", "asgi": "process_apps:asgi"}
SETTINGS, GOAWAY, WINDOW_UPDATE = 0x4, 0x7, 0x8
PROTOCOL_ERROR = 0x1


def frames_until_close(sock: socket.socket, timeout: float = 10.0) -> list[tuple[int, int, int, bytes]]:
    """Every frame the server sends before it closes: (type, flags, stream id, payload)."""
    sock.settimeout(timeout)
    data = b""
    while chunk := _recv(sock):
        data += chunk
    frames = []
    while data:
        assert len(data) >= 9, f"a partial frame header at the end: {data!r}"
        length = int.from_bytes(data[:3], "big")
        kind, flags, stream = data[3], data[4], int.from_bytes(data[5:9], "big") & 0x7FFF_FFFF
        assert len(data) >= 9 + length, f"a partial frame at the end: {data!r}"
        frames.append((kind, flags, stream, data[9 : 9 + length]))
        data = data[9 + length :]
    return frames


def _recv(sock: socket.socket) -> bytes:
    try:
        return sock.recv(65536)
    except ConnectionResetError:
        return b""


def assert_protocol_error_goaway(sock: socket.socket) -> None:
    """The server's preface (SETTINGS, and the WINDOW_UPDATE that opens its connection window), then
    GOAWAY(last stream 0, PROTOCOL_ERROR), then the close; no HTTP/1.1 response."""
    frames = frames_until_close(sock)
    kinds = [kind for kind, *_ in frames]
    assert kinds in ([SETTINGS, GOAWAY], [SETTINGS, WINDOW_UPDATE, GOAWAY]), frames
    assert frames[0][1:3] == (0, 0)  # SETTINGS without ACK, on stream 0
    assert len(frames[0][3]) % 6 == 0
    assert all(stream == 0 for _, _, stream, _ in frames)
    _, flags, _, payload = frames[-1]
    assert flags == 0
    # §6.8: Reserved (1) | Last-Stream-ID (31), Error Code (32), Additional Debug Data.
    assert payload == struct.pack(">II", 0, PROTOCOL_ERROR) + b"client connection preface mismatch", payload


def assert_serves_next_client(server: Server) -> None:
    """The worker serves HTTP/2 and (unless --http2-only) HTTP/1.1 after the error."""
    with H2Client(server.port) as client:
        assert bytes(client.request("GET", "/hello").body) == b"hello"
    if "--http2-only" not in server.args:
        with RawConnection.to(server) as connection:
            connection.send(request("GET", "/hello"))
            response = connection.read_response()
        assert (response.status, response.body) == (200, b"hello")


def send_and_expect_goaway(server: Server, *pieces: bytes) -> None:
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        for piece in pieces:
            sock.sendall(piece)
            time.sleep(0.05)
        assert_protocol_error_goaway(sock)


@pytest.fixture(params=sorted(TARGETS))
def http2_only(request: pytest.FixtureRequest, server_pool: ServerPool) -> Server:
    return server_pool.get(TARGETS[request.param], "--http2-only")


@pytest.fixture(params=sorted(TARGETS))
def shared_port(request: pytest.FixtureRequest, server_pool: ServerPool) -> Server:
    return server_pool.get(TARGETS[request.param])


@pytest.mark.parametrize(
    "opening",
    [
        pytest.param(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n", id="http1-request"),
        pytest.param(b"G", id="one-byte"),  # decided at the first wrong byte, no waiting for a line
        pytest.param(b"\x16\x03\x01\x00\x05hello", id="tls-record"),
        pytest.param(b"PRI * HTTP/1.1\r\n\r\nSM\r\n\r\n", id="http1.1-pri"),
        pytest.param(b"PRI * HTTP/2.0\r\n\r\nXY\r\n\r\n", id="wrong-preface-tail"),
    ],
)
def test_http2_only_answers_anything_but_the_preface_with_goaway_protocol_error(
    http2_only: Server, opening: bytes
) -> None:
    send_and_expect_goaway(http2_only, opening)
    assert_serves_next_client(http2_only)


@pytest.mark.parametrize(
    "after",
    [
        pytest.param(b"\r\nXY\r\n\r\n", id="wrong-SM"),
        pytest.param(b"Host: x\r\n\r\n", id="header-field"),
        pytest.param(b"\r\nSM\r\n\rX", id="last-byte-wrong"),
    ],
)
def test_pri_request_line_with_a_wrong_preface_is_an_http2_attempt(shared_port: Server, after: bytes) -> None:
    send_and_expect_goaway(shared_port, b"PRI * HTTP/2.0\r\n" + after)
    assert_serves_next_client(shared_port)


@pytest.mark.parametrize("split", [1, 15, 16, 17, 20])
def test_the_decision_waits_for_the_first_wrong_byte(shared_port: Server, split: int) -> None:
    """Sent in two writes, split anywhere: the request line alone decides nothing."""
    wrong = b"PRI * HTTP/2.0\r\n\r\nSX\r\n\r\n"
    send_and_expect_goaway(shared_port, wrong[:split], wrong[split:])
    assert_serves_next_client(shared_port)


def test_pri_with_another_version_stays_http1_on_the_shared_port(shared_port: Server) -> None:
    """Not an HTTP/2 attempt: HTTP/1.1's own verdict (asterisk-form is for OPTIONS only: 400)."""
    with RawConnection.to(shared_port) as connection:
        connection.send(b"PRI * HTTP/1.1\r\nHost: x\r\n\r\n")
        assert connection.read_response().status == 400
    assert_serves_next_client(shared_port)


def test_the_right_preface_is_served_on_both(http2_only: Server, shared_port: Server) -> None:
    for server in (http2_only, shared_port):
        assert_serves_next_client(server)


def test_http2_only_over_tls_without_alpn_answers_http1_with_goaway(
    start_server: Callable[..., Server], tls_files: TLSFiles
) -> None:
    """A TLS client that offers no ALPN gets no protocol chosen; its HTTP/1.1 request is an invalid preface too."""
    server = start_server(TARGETS["asgi"], "--http2-only", *tls_files.server_options())
    with tls_connect(server, client_context(tls_files)) as sock:
        assert sock.selected_alpn_protocol() is None
        sock.sendall(request("GET", "/hello"))
        assert_protocol_error_goaway(sock)
    with tls_connect(server, client_context(tls_files, alpn=["h2"])) as sock:
        assert sock.selected_alpn_protocol() == "h2"
