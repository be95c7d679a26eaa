"""Bounded memory under floods (issue 19 point 3): each row of RELIABILITY.md's table, measured.

Each test drives connections to the worst case its row derives from the configured limits — a request head just
under `--max-header-size`, HTTP/2 streams whose bodies fill every receive window while the application reads
nothing, WebSocket messages queued for an application that never receives plus one message in reassembly, TLS
connections mid-handshake and after it, HTTP/3 streams holding their windows — then checks that the worker's RSS
grew by at most N times the row's per-connection bound (N connections, so that one connection's worst case is not
lost in the allocator's noise), and that the worker serves a normal request afterwards.

The application (tests/apps/memory_apps.py) never reads a body or receives a message until `/release`, so what
the clients send is held by the server, as far as its limits let it.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import sys
import time
from typing import TYPE_CHECKING, Any

import h2.config
import h2.connection
import h2.events
import pytest
from rawhttp import RawConnection, request
from websocket_support import frame, new_key, upgrade_headers

if TYPE_CHECKING:
    import socket
    from collections.abc import Callable

    from tls_support import TLSFiles

    from conftest import Server

pytest_plugins = ("tls_support",)

KIB = 1024
MIB = 1024 * KIB


def stats(server: Server, context: ssl.SSLContext | None = None) -> dict[str, int]:
    sock = server.connect()
    if context is not None:
        sock = context.wrap_socket(sock, server_hostname="localhost")
    with RawConnection(sock) as connection:
        connection.send(request("GET", "/stats"))
        response = connection.read_response()
        assert response.status == 200
        result: dict[str, int] = json.loads(response.body)
        return result


def settled_rss(server: Server, context: ssl.SSLContext | None = None, timeout: float = 10.0) -> int:
    """The worker's RSS once two readings 300 ms apart agree within 64 KiB (the server has taken what it can)."""
    last = stats(server, context)["rss_kib"]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.3)
        current = stats(server, context)["rss_kib"]
        if abs(current - last) <= 64:
            return current
        last = current
    return last


def check_growth(name: str, before: int, after: int, count: int, bound_kib: int) -> None:
    growth = after - before
    sys.stderr.write(
        f"\n{name}: {count} connections, RSS {before} -> {after} KiB ({growth:+d}; "
        f"{growth / count:.1f} KiB each, bound {bound_kib} KiB each)\n"
    )
    assert growth <= count * bound_kib, (name, before, after)


def release(server: Server, context: ssl.SSLContext | None = None) -> None:
    sock = server.connect()
    if context is not None:
        sock = context.wrap_socket(sock, server_hostname="localhost")
    with RawConnection(sock) as connection:
        connection.send(request("GET", "/release"))
        assert connection.read_response().status == 200


def start(start_server: Callable[..., Server], *options: str) -> Server:
    return start_server("memory_apps:asgi", "--no-lifespan", "--workers", "1", *options)


# --- HTTP/1.1 ------------------------------------------------------------------------------------------------

#: RELIABILITY.md, HTTP/1.1 row: the head buffer (--max-header-size + 4 KiB, H1Connection.growInput), the
#: connection object and its descriptor's bookkeeping.
H1_HEAD_BOUND_KIB = 32 + 4 + 12


def test_http1_heads_just_under_the_limit(start_server: Callable[..., Server]) -> None:
    server = start(start_server)
    count = 200
    before = settled_rss(server)
    filler = "a" * 1015
    head = request("GET", "/hold", [(f"x-f{i}", filler) for i in range(31)])[:-2]  # no blank line yet
    assert 31 * KIB < len(head) < 32 * KIB
    held = []
    for _ in range(count):
        sock = server.connect()
        sock.sendall(head)
        held.append(sock)
    after = settled_rss(server)
    check_growth("HTTP/1.1 head", before, after, count, H1_HEAD_BOUND_KIB)
    for sock in held:
        sock.close()
    release(server)


# --- HTTP/2 --------------------------------------------------------------------------------------------------

#: RELIABILITY.md, HTTP/2 row, per connection: bodies up to the connection window (1 MiB), 100 streams each
#: with a header list of up to --max-header-size (32 KiB) held twice (decoded by the server, and copied into the
#: application's scope) and its request state and application task (~8 KiB), the HPACK tables (4 KiB each way)
#: and one header block being received (64 KiB), the output high-water mark (64 KiB) and the read buffer.
H2_BOUND_KIB = 1024 + 100 * (2 * 32 + 8) + 4 + 4 + 64 + 64 + 48


def h2_fill(server: Server) -> socket.socket:
    """One connection: 100 streams POST /hold, each with a 30 KB header field (under --max-header-size) and sent
    as much body as the windows allow."""
    sock = server.connect()
    connection = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
    # Plain literals (RFC 7541 §5.2, H = 0): hpack's pure-Python Huffman coder would take seconds per 3 MB.
    encode = connection.encoder.encode
    connection.encoder.encode = lambda headers, huffman=True: encode(headers, huffman=False)  # type: ignore[method-assign]
    connection.initiate_connection()
    sock.sendall(connection.data_to_send())
    sock.settimeout(10)
    # The server's SETTINGS (stream window) and connection WINDOW_UPDATE arrive first.
    deadline = time.monotonic() + 10
    while connection.remote_settings.initial_window_size == 65535 or connection.outbound_flow_control_window <= 65535:
        assert time.monotonic() < deadline
        for _ in connection.receive_data(sock.recv(65536)):
            pass
        sock.sendall(connection.data_to_send())
    for index in range(100):
        stream = 1 + 2 * index
        connection.send_headers(
            stream,
            [
                (":method", "POST"),
                (":scheme", "http"),
                (":authority", "localhost"),
                (":path", "/hold"),
                ("content-length", str(300 * KIB)),
                ("x-fill", f"{index:04d}" + "X" * 30_000),
            ],
        )
        sock.sendall(connection.data_to_send())
    chunk = b"h" * 16384
    for index in range(100):
        stream = 1 + 2 * index
        while (room := min(connection.local_flow_control_window(stream), 16384)) > 0:
            connection.send_data(stream, chunk[:room])
    connection.ping(b"12345678")
    sock.sendall(connection.data_to_send())
    # The PING's ACK: the server has read every frame before it.
    acked = False
    while not acked:
        events = connection.receive_data(sock.recv(65536))
        acked = any(isinstance(event, h2.events.PingAckReceived) for event in events)
        sock.sendall(connection.data_to_send())
    return sock


def test_http2_streams_fill_every_window(start_server: Callable[..., Server]) -> None:
    server = start(start_server)
    count = 4
    before = settled_rss(server)
    held = [h2_fill(server) for _ in range(count)]
    after = settled_rss(server)
    check_growth("HTTP/2 streams and windows", before, after, count, H2_BOUND_KIB)
    release(server)
    for sock in held:
        sock.close()


# --- WebSocket -----------------------------------------------------------------------------------------------

#: RELIABILITY.md, WebSocket row, per connection: the queue (--ws-max-queue-bytes, 1 MiB here) and one message
#: in reassembly (--ws-max-message, 1 MiB here; its buffer grows by doubling, so up to twice that is
#: allocated), the read buffer and the connection.
WS_QUEUE = 1 * MIB
WS_MESSAGE = 1 * MIB
WS_BOUND_KIB = (WS_QUEUE + 2 * WS_MESSAGE) // KIB + 64


def ws_fill(server: Server, *, compress: bool) -> socket.socket:
    """Messages of 64 KiB filling the queue to just under its byte limit, then a message of the largest size
    allowed whose last byte never comes: the queue and the reassembly both at their worst."""
    sock = server.connect()
    extra = [("Sec-WebSocket-Extensions", "permessage-deflate")] if compress else []
    sock.sendall(request("GET", "/ws", upgrade_headers(new_key(), extra=extra)))
    sock.settimeout(10)
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(4096)
    assert head.startswith(b"HTTP/1.1 101"), head
    sock.setblocking(False)
    payload = bytes(range(256)) * 256  # 64 KiB that deflate cannot shrink much
    frames = [frame(0x2, payload) for _ in range(WS_QUEUE // len(payload) - 1)]
    frames.append(frame(0x2, payload * (WS_MESSAGE // len(payload)))[:-1])
    data = b"".join(frames)
    sent = 0
    stalled_since = time.monotonic()
    while sent < len(data) and time.monotonic() - stalled_since < 1.0:
        try:
            n = sock.send(data[sent : sent + 65536])
        except BlockingIOError:
            time.sleep(0.01)
            continue
        sent += n
        stalled_since = time.monotonic()
    return sock


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "deflate"])
def test_websocket_queue_and_reassembly(start_server: Callable[..., Server], compress: bool) -> None:
    options = ["--ws-max-message", str(WS_MESSAGE), "--ws-max-queue-bytes", str(WS_QUEUE), "--ws-max-queue", "1000"]
    if compress:
        options.append("--ws-compress")
    server = start(start_server, *options)
    count = 8
    before = settled_rss(server)
    held = [ws_fill(server, compress=compress) for _ in range(count)]
    after = settled_rss(server)
    # Compressed frames are sent uncompressed here (RSV1 clear): the inflater's state (32 KiB window) and the
    # deflater's (256 KiB at memLevel 8) exist once negotiated.
    bound = WS_BOUND_KIB + (32 + 8 + 256 if compress else 0)
    check_growth(f"WebSocket queue ({'deflate' if compress else 'plain'})", before, after, count, bound)
    release(server)
    for sock in held:
        sock.close()


# --- TLS -----------------------------------------------------------------------------------------------------

#: RELIABILITY.md, TLS row: OpenSSL's SSL object, its record buffers (a 16 KiB record each way, with
#: overhead) and handshake state, plus the connection's own read buffer.
TLS_BOUND_KIB = 96


@pytest.mark.parametrize("phase", ["mid_handshake", "established"])
def test_tls_connections(start_server: Callable[..., Server], tls_files: TLSFiles, phase: str) -> None:
    from abrupt_support import client_hello  # noqa: PLC0415

    server = start_server("memory_apps:asgi", *tls_files.server_options("--no-lifespan", "--workers", "1"))
    context = ssl.create_default_context(cafile=str(tls_files.ca))
    count = 200
    before = settled_rss(server, context)
    held: list[socket.socket] = []
    for _ in range(count):
        sock = server.connect()
        if phase == "mid_handshake":
            sock.sendall(client_hello())
            sock.settimeout(10)
            assert sock.recv(1)  # the server's flight began: its handshake state exists
        else:
            sock = context.wrap_socket(sock, server_hostname="localhost")
        held.append(sock)
    after = settled_rss(server, context)
    check_growth(f"TLS {phase}", before, after, count, TLS_BOUND_KIB)
    for sock in held:
        sock.close()
    release(server, context)


# --- HTTP/3 --------------------------------------------------------------------------------------------------

H3_STREAMS = 10
H3_STREAM_WINDOW = 64 * KIB
#: RELIABILITY.md, HTTP/3 row, per connection: per stream, its window (held in QUIC's receive buffer) plus the
#: body waiting for its application (256 KiB, H3Stream.bodyHighWater, and the read that crossed it) and the
#: stream's request state; the QUIC connection's own state (1 MiB: keys, recovery, packet spaces, buffers) besides.
H3_BOUND_KIB = H3_STREAMS * (H3_STREAM_WINDOW // KIB + 256 + 16 + 8) + 1024


def test_http3_streams_fill_their_windows(start_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    from h3client import H3Client, _Protocol  # noqa: PLC0415

    server = start_server(
        "memory_apps:asgi",
        *tls_files.server_options(
            "--no-lifespan",
            "--workers",
            "1",
            "--http3",
            "--http3-max-streams",
            str(H3_STREAMS),
            "--quic-stream-window",
            str(H3_STREAM_WINDOW),
        ),
    )
    line = server.stderr.wait_for(lambda text: "HTTP/3 on UDP port" in text, 10.0)
    assert line is not None
    port = int(line.rsplit(" ", 1)[1])
    context = ssl.create_default_context(cafile=str(tls_files.ca))
    client = H3Client(port=port, ca=tls_files.ca, timeout=60)
    # Warm-up: the worker's QUIC machinery (datagram batches, send buffers) is made on first use.
    assert client.request("GET", "/stats").status == 200
    before = settled_rss(server, context)
    measured: dict[str, Any] = {}

    async def work(connection: _Protocol) -> None:
        body = b"q" * (H3_STREAM_WINDOW + 256 * KIB + 64 * KIB)  # more than the stream can hold
        for _ in range(H3_STREAMS):
            fields = connection.fields(b"POST", b"/hold", (b"content-length", str(len(body)).encode()))
            stream = connection.open(fields)
            connection.http.send_data(stream, body, end_stream=True)
        connection.transmit()
        measured["after"] = await asyncio.to_thread(settled_rss, server, context)
        await asyncio.to_thread(release, server, context)

    client.session(work)
    check_growth("HTTP/3 streams", before, measured["after"], 1, H3_BOUND_KIB)
