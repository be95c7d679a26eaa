"""WebSocket over HTTP/3 (RFC 9220) for ASGI applications, driven by aioquic's HTTP/3 client with hand-made frames.

- SETTINGS_ENABLE_CONNECT_PROTOCOL (RFC 9220 §3): advertised for an ASGI application, and for a WSGI one
  while WebTransport is offered (a WebSocket then gets 501); not with --no-websockets --no-webtransport, nor
  for WSGI with --no-webtransport (an extended CONNECT is then malformed, H3_MESSAGE_ERROR);
- the opening: :status 200 (never 101, no Sec-WebSocket-Accept), the `websocket` scope with http_version
  "3" and scheme wss, refusals (version → 400 naming 13, other :protocol → 501, 403 before accept);
- the conversation: echo, fragments, large messages both ways, ping, close codes both ways, protocol
  errors (1002 unmasked, 1009 over --ws-max-message) ending the stream with FIN after the close frame
  while the connection's other streams go on, the client's FIN without close or its RESET_STREAM → 1006;
- flow control (a slow application holds the client back with the stream window; a client that grants
  no window stalls the application's send()), --ws-compress, keepalive pings, several WebSockets and
  plain requests on one QUIC connection.

Served application: tests/apps/ws_apps.py.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import zlib
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import pytest
from h3client import H3Client, H3ClientConnection
from wsproto.connection import Connection, ConnectionType
from wsproto.events import BytesMessage, CloseConnection, Ping, Pong, TextMessage
from wsproto.extensions import PerMessageDeflate

pytest.register_assert_rewrite("h3websocket")
from h3websocket import (  # noqa: E402
    ENABLE_CONNECT_PROTOCOL,
    H3_MESSAGE_ERROR,
    H3_NO_ERROR,
    H3_REQUEST_CANCELLED,
    H3WebSocket,
    records,
    server_settings,
    wait_record,
)
from websocket_support import APP, BINARY, CONT, PING, PONG, TEXT, unique  # noqa: E402

pytest_plugins = ("tls_support",)

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from tls_support import TLSFiles

    from conftest import Server

TAIL = b"\x00\x00\xff\xff"


@pytest.fixture
def h3_server(tls_server: Callable[..., Server]) -> Callable[..., Server]:
    def starter(*options: str, target: str = APP) -> Server:
        return tls_server(target, "--http3", *options)

    return starter


@pytest.fixture
def server(h3_server: Callable[..., Server]) -> Server:
    return h3_server()


def run(
    server: Server, files: TLSFiles, work: Callable[[H3ClientConnection], Awaitable[None]], **settings: object
) -> None:
    H3Client(port=server.port, ca=files.ca, timeout=60.0, **settings).session(work)  # type: ignore[arg-type]


async def echo_once(ws: H3WebSocket, text: str = "ping?") -> None:
    ws.send_text(text)
    assert await ws.read_text() == text


# --- SETTINGS_ENABLE_CONNECT_PROTOCOL -------------------------------------------------------------------


def test_settings_advertise_extended_connect(server: Server, tls_files: TLSFiles) -> None:
    async def work(conn: H3ClientConnection) -> None:
        assert (await server_settings(conn)).get(ENABLE_CONNECT_PROTOCOL) == 1

    run(server, tls_files, work)


@pytest.mark.parametrize(
    ("target", "options"),
    [(APP, ("--no-websockets", "--no-webtransport")), ("wsgi_apps:app", ("--no-webtransport",))],
)
def test_not_advertised_without_websockets(
    h3_server: Callable[..., Server], tls_files: TLSFiles, target: str, options: tuple[str, ...]
) -> None:
    async def work(conn: H3ClientConnection) -> None:
        assert (await server_settings(conn)).get(ENABLE_CONNECT_PROTOCOL, 0) == 0
        # :protocol without the setting makes the request malformed (RFC 9220 §3, RFC 9114 §4.1.2).
        ws = H3WebSocket.open(conn)
        await ws.wait_response()
        assert ws.reset_code == H3_MESSAGE_ERROR, (ws.reset_code, ws.response)
        # A plain CONNECT is a 501, and the connection goes on.
        sid = conn.open([(b":method", b"CONNECT"), (b":authority", conn.authority)], end_stream=True)
        conn.transmit()
        assert (await conn.response(sid)).status == 501
        r = await conn.request("GET", "/hello", conn.authority.decode(), [], None)
        assert r.status < 500

    run(h3_server(*options, target=target), tls_files, work)


def test_no_websockets_with_webtransport(h3_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    # WebTransport (on for ASGI) needs extended CONNECT too: it stays advertised, and a WebSocket gets 501.
    async def work(conn: H3ClientConnection) -> None:
        assert (await server_settings(conn)).get(ENABLE_CONNECT_PROTOCOL) == 1
        ws = H3WebSocket.open(conn)
        assert (await ws.wait_response()).status == 501

    run(h3_server("--no-websockets"), tls_files, work)


def test_wsgi_gets_501_for_a_websocket(h3_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    # WebTransport is offered to a WSGI application too (its sessions refused with 501), so extended CONNECT is
    # advertised; a WebSocket, which WSGI cannot serve either, gets 501, and the connection goes on.
    async def work(conn: H3ClientConnection) -> None:
        assert (await server_settings(conn)).get(ENABLE_CONNECT_PROTOCOL) == 1
        ws = H3WebSocket.open(conn)
        assert (await ws.wait_response()).status == 501
        r = await conn.request("GET", "/hello", conn.authority.decode(), [], None)
        assert r.status < 500

    run(h3_server(target="wsgi_apps:app"), tls_files, work)


# --- the opening ------------------------------------------------------------------------------------------


def test_scope_and_accept(server: Server, tls_files: TLSFiles) -> None:
    async def work(conn: H3ClientConnection) -> None:
        ws = await H3WebSocket.open(conn, "/scope?x=1", headers=[(b"sec-websocket-protocol", b"chat")]).accepted()
        scope = json.loads(await ws.read_text())
        assert scope["type"] == "websocket"
        assert scope["http_version"] == "3"
        assert scope["scheme"] == "wss"
        assert (scope["path"], scope["query_string"]) == ("/scope", "x=1")
        assert scope["subprotocols"] == ["chat"]
        assert ["host", conn.authority.decode()] in scope["headers"]
        ws.send_close(1000, end_stream=True)
        assert (await ws.expect_close()).close_code == 1000
        await ws.expect_end()

    run(server, tls_files, work)


@pytest.mark.parametrize(
    ("path", "options", "status"),
    [
        ("/echo", {"version": b"8"}, 400),
        ("/echo", {"version": None}, 400),
        ("/echo", {"protocol": b"other"}, 501),
        ("/deny", {}, 403),
    ],
)
def test_refusals(server: Server, tls_files: TLSFiles, path: str, options: dict[str, object], status: int) -> None:
    async def work(conn: H3ClientConnection) -> None:
        r = await H3WebSocket.open(conn, path, **options).denied()  # type: ignore[arg-type]
        assert r.status == status, r
        if status == 400:
            assert r.header(b"sec-websocket-version") == b"13"
        assert (await conn.request("GET", "/hello", conn.authority.decode(), [], None)).body == b"hello"

    run(server, tls_files, work)


# --- the conversation -------------------------------------------------------------------------------------


def test_echo_text_binary_fragments_and_ping(server: Server, tls_files: TLSFiles) -> None:
    async def work(conn: H3ClientConnection) -> None:
        ws = await H3WebSocket.open(conn).accepted()
        await echo_once(ws, "héllo")
        ws.send(BINARY, b"\x00\x01\xff")
        assert await ws.read_message() == (BINARY, b"\x00\x01\xff")
        # A fragmented message with a ping between its fragments (RFC 6455 §5.4).
        ws.send(TEXT, b"frag", fin=False)
        ws.send(PING, b"hi")
        ws.send(CONT, b"ment", fin=False)
        ws.send(CONT, b"ed")
        f = await ws.read_frame()
        assert (f.opcode, f.payload) == (PONG, b"hi")
        assert await ws.read_text() == "fragmented"
        ws.send_close(1000, b"bye")
        f = await ws.expect_close()
        assert f.close_code == 1000
        ws.end()
        r = await ws.expect_end()
        assert r.reset_code is None

    run(server, tls_files, work)


def test_large_messages_both_ways(h3_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    # Small stream windows: several MiB cross them many times both ways.
    server = h3_server("--quic-stream-window", "64k")
    size = 3 * 1024 * 1024

    async def work(conn: H3ClientConnection) -> None:
        ws = await H3WebSocket.open(conn, f"/big?size={size}").accepted()
        opcode, payload = await ws.read_message(timeout=30)
        assert (opcode, payload) == (BINARY, bytes(i % 251 for i in range(size)))
        data = os.urandom(size)
        ws.send(BINARY, data)
        assert await ws.read_message(timeout=30) == (BINARY, data)
        ws.send_close(1000, end_stream=True)
        assert (await ws.expect_close()).close_code == 1000

    run(server, tls_files, work)


@pytest.mark.parametrize(("code", "reason"), [(1000, ""), (4001, "custom reason")])
def test_server_close_with_code_and_reason(server: Server, tls_files: TLSFiles, code: int, reason: str) -> None:
    ident = unique("h3-close")

    async def work(conn: H3ClientConnection) -> None:
        ws = await H3WebSocket.open(conn, f"/close?code={code}&reason={quote(reason)}&id={ident}").accepted()
        assert await ws.read_text() == "closing"
        f = await ws.expect_close()
        assert (f.close_code, f.close_reason) == (code, reason)
        ws.send_close(code, end_stream=True)
        r = await ws.expect_end()
        assert r.reset_code is None
        assert await wait_record(conn, ident, "after_close") == {"type": "websocket.disconnect", "code": code}

    run(server, tls_files, work)


def test_client_close_with_code_and_reason_reaches_the_application(server: Server, tls_files: TLSFiles) -> None:
    ident = unique("h3-client-close")

    async def work(conn: H3ClientConnection) -> None:
        ws = await H3WebSocket.open(conn, f"/echo?id={ident}").accepted()
        await echo_once(ws)
        ws.send_close(4002, b"going")
        assert (await ws.expect_close()).close_code == 4002
        # The server's FIN follows its close; ours ends the stream cleanly.
        ws.end()
        await ws.expect_end()
        assert await wait_record(conn, ident, "disconnect") == {"code": 4002, "reason": "going"}

    run(server, tls_files, work)


def test_client_fin_without_close_is_1006(server: Server, tls_files: TLSFiles) -> None:
    ident = unique("h3-fin")

    async def work(conn: H3ClientConnection) -> None:
        ws = await H3WebSocket.open(conn, f"/echo?id={ident}").accepted()
        await echo_once(ws)
        ws.end()
        assert (await wait_record(conn, ident, "disconnect"))["code"] == 1006

    run(server, tls_files, work)


def test_client_reset_is_1006(server: Server, tls_files: TLSFiles) -> None:
    ident = unique("h3-reset")

    async def work(conn: H3ClientConnection) -> None:
        ws = await H3WebSocket.open(conn, f"/echo?id={ident}").accepted()
        await echo_once(ws)
        ws.reset()
        assert (await wait_record(conn, ident, "disconnect"))["code"] == 1006

    run(server, tls_files, work)


def test_client_vanishing_is_1006(server: Server, tls_files: TLSFiles) -> None:
    ident = unique("h3-vanish")

    async def work(conn: H3ClientConnection) -> None:
        ws = await H3WebSocket.open(conn, f"/echo?id={ident}").accepted()
        await echo_once(ws)
        conn._quic.close(error_code=0x100)
        conn.transmit()

    run(server, tls_files, work)

    async def check(conn: H3ClientConnection) -> None:
        assert (await wait_record(conn, ident, "disconnect"))["code"] == 1006

    run(server, tls_files, check)


def test_malformed_frame_is_1002_and_other_streams_go_on(server: Server, tls_files: TLSFiles) -> None:
    async def work(conn: H3ClientConnection) -> None:
        other = await H3WebSocket.open(conn).accepted()
        ws = await H3WebSocket.open(conn).accepted()
        ws.send(TEXT, b"unmasked", mask=False)  # RFC 6455 §5.1: a server closes with 1002
        await ws.expect_protocol_close(1002)
        await echo_once(other, "unaffected")
        r = await conn.request("GET", "/hello", conn.authority.decode(), [], None)
        assert r.body == b"hello"
        other.send_close(1000, end_stream=True)
        assert (await other.expect_close()).close_code == 1000

    run(server, tls_files, work)


def test_message_over_the_limit_is_1009(h3_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    server = h3_server("--ws-max-message", "1000")

    async def work(conn: H3ClientConnection) -> None:
        ws = await H3WebSocket.open(conn).accepted()
        ws.send(BINARY, b"x" * 1000)
        assert await ws.read_message() == (BINARY, b"x" * 1000)
        ws.send(BINARY, b"x" * 1001)
        await ws.expect_protocol_close(1009)

    run(server, tls_files, work)


def test_application_error_after_accept_is_1011(server: Server, tls_files: TLSFiles) -> None:
    async def work(conn: H3ClientConnection) -> None:
        ws = await H3WebSocket.open(conn, "/raise-after").accepted()
        await ws.expect_protocol_close(1011)

    run(server, tls_files, work)


def test_compression(h3_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    server = h3_server("--ws-compress")

    async def work(conn: H3ClientConnection) -> None:
        offer = [(b"sec-websocket-extensions", b"permessage-deflate; client_max_window_bits")]
        ws = await H3WebSocket.open(conn, headers=offer).accepted()
        agreed = ws.response.header(b"sec-websocket-extensions")
        assert agreed is not None, ws.response.headers
        assert agreed.startswith(b"permessage-deflate"), agreed
        text = "compress me " * 100
        deflater = zlib.compressobj(wbits=-15)
        payload = deflater.compress(text.encode()) + deflater.flush(zlib.Z_SYNC_FLUSH)
        assert payload.endswith(TAIL)
        ws.send(TEXT, payload[: -len(TAIL)], rsv=4)  # RSV1: compressed (RFC 7692 §6)
        f = await ws.read_frame()
        assert (f.opcode, f.rsv) == (TEXT, 4)
        assert zlib.decompressobj(wbits=-15).decompress(f.payload + TAIL).decode() == text
        ws.send_close(1000, end_stream=True)
        assert (await ws.expect_close()).close_code == 1000

    run(server, tls_files, work)


def test_keepalive_ping(h3_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    server = h3_server("--ws-ping-interval", "200", "--ws-ping-timeout", "300")

    async def work(conn: H3ClientConnection) -> None:
        ws = await H3WebSocket.open(conn).accepted()
        f = await ws.read_frame(timeout=5)
        assert f.opcode == PING
        ws.send(PONG, f.payload)
        f = await ws.read_frame(timeout=5)
        assert f.opcode == PING  # the next one, after the silence again
        # No pong this time: closed with 1011 (RFC 6455 §7.4.1), then the stream's FIN.
        assert (await ws.expect_close(timeout=5)).close_code == 1011
        assert (await ws.expect_end()).reset_code is None

    run(server, tls_files, work)


def test_slow_application_holds_the_client_back(h3_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    window = 64 * 1024
    server = h3_server("--quic-stream-window", "64k")
    ident = unique("h3-slow")
    message = b"s" * 16 * 1024
    count = 400  # 6.4 MiB: far more than the server may buffer for this stream

    async def work(conn: H3ClientConnection) -> None:
        ws = await H3WebSocket.open(conn, f"/slow?id={ident}").accepted()
        for _ in range(count):
            ws.send(BINARY, message)
        await asyncio.sleep(2.0)
        # What left the client and the application has not taken is bounded: the application's queue
        # (--ws-max-queue 32 messages), 256 KiB of frames buffered for it, the 64 KiB stream window, and a
        # frame cut at the buffer's edge — not the 6.4 MiB the client wants to send.
        sent = conn._quic._streams[ws.stream_id].sender.highest_offset
        got = (await records(conn, ident))["bytes"]
        held = sent - got
        assert held <= 32 * len(message) + 256 * 1024 + window + 2 * len(message), (sent, got)
        assert sent < count * len(message) // 4, sent
        ws.reset()

    run(server, tls_files, work)


def test_client_granting_no_window_stalls_the_application(
    h3_server: Callable[..., Server], tls_files: TLSFiles
) -> None:
    server = h3_server()
    ident = unique("h3-flood")

    def configure(c: object) -> None:
        c.max_stream_data = 128 * 1024  # type: ignore[attr-defined]

    async def work(conn: H3ClientConnection) -> None:
        quic = conn._quic
        # The client stops granting flow-control credit (as if it read nothing).
        quic._write_stream_limits = lambda *args, **kwargs: None  # type: ignore[method-assign]
        ws = await H3WebSocket.open(conn, f"/flood?id={ident}").accepted()
        await asyncio.sleep(1.5)
        first = (await records(conn, ident))["sent"]
        await asyncio.sleep(1.0)
        second = (await records(conn, ident))["sent"]
        # 64 KiB messages: the window, QUIC's send buffer and the 256 KiB high-water mark, then send() waits.
        assert first == second, (first, second)
        assert second < 64, second
        ws.reset()

    run(server, tls_files, work, configure=configure)


def test_several_websockets_and_requests_on_one_connection(server: Server, tls_files: TLSFiles) -> None:
    async def work(conn: H3ClientConnection) -> None:
        sockets = [await H3WebSocket.open(conn).accepted() for _ in range(5)]
        for round_ in range(3):
            for i, ws in enumerate(sockets):
                ws.send_text(f"{i}:{round_}")
            responses = await asyncio.gather(
                *(conn.request("GET", "/hello", conn.authority.decode(), [], None) for _ in range(3))
            )
            assert [r.body for r in responses] == [b"hello"] * 3
            for i, ws in enumerate(sockets):
                assert await ws.read_text() == f"{i}:{round_}"
        for ws in sockets:
            ws.send_close(1000, end_stream=True)
            assert (await ws.expect_close()).close_code == 1000
            await ws.expect_end()

    run(server, tls_files, work)


def test_denial_response_with_body(server: Server, tls_files: TLSFiles) -> None:
    async def work(conn: H3ClientConnection) -> None:
        r = await H3WebSocket.open(conn, "/deny-response").denied()
        assert r.status == 418, r
        assert r.body, r

    run(server, tls_files, work)


def test_server_close_unanswered_is_a_reset(h3_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    server = h3_server("--request-timeout", "1000")
    ident = unique("h3-unanswered")

    async def work(conn: H3ClientConnection) -> None:
        ws = await H3WebSocket.open(conn, f"/close?id={ident}&code=4002").accepted()
        assert await ws.read_text() == "closing"
        assert (await ws.expect_close()).close_code == 4002
        # No answer: after min(--request-timeout, 5 s) the stream is cut (RESET_STREAM is the TCP RST, RFC 9220 §3).
        assert await conn.until(lambda: ws.reset_code is not None, 5)
        assert ws.reset_code == H3_REQUEST_CANCELLED
        assert await wait_record(conn, ident, "after_close") == {"type": "websocket.disconnect", "code": 1006}

    run(server, tls_files, work)


def test_client_never_ending_its_side_gets_stop_sending(h3_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    server = h3_server("--request-timeout", "1000")

    async def work(conn: H3ClientConnection) -> None:
        ws = await H3WebSocket.open(conn, "/close?code=1000").accepted()
        assert await ws.read_text() == "closing"
        assert (await ws.expect_close()).close_code == 1000
        ws.send_close(1000)  # answered, but the stream is never ended
        assert (await ws.expect_end()).reset_code is None  # the server's FIN
        # The server waits min(--request-timeout, 5 s) for ours, then asks us to stop (RFC 9114 §4.1).
        assert await conn.until(lambda: ws.stream_id in conn.stops, 5)
        assert conn.stops[ws.stream_id] == H3_NO_ERROR
        assert (await conn.request("GET", "/hello", conn.authority.decode(), [], None)).body == b"hello"

    run(server, tls_files, work)


def test_shutdown_closes_with_1001(h3_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    server = h3_server()
    stopper = threading.Thread(target=server.stop)

    async def work(conn: H3ClientConnection) -> None:
        ws = await H3WebSocket.open(conn).accepted()
        await echo_once(ws)
        stopper.start()
        assert (await ws.expect_close(timeout=10)).close_code == 1001
        ws.send_close(1001, end_stream=True)
        assert (await ws.expect_end()).reset_code is None
        assert conn.goaways, "no GOAWAY"

    try:
        run(server, tls_files, work)
    finally:
        if stopper.is_alive():
            stopper.join(timeout=30)


# --- another implementation's frames -------------------------------------------------------------------


class WsprotoWebSocket:
    """A WebSocket as aioquic's example HTTP/3 client makes one (examples/http3_client.py, not installed with
    the package): the extended CONNECT with `:protocol websocket`, then wsproto's client-side frames in DATA."""

    def __init__(self, ws: H3WebSocket, extensions: list[Any]) -> None:
        self.ws = ws
        self.connection = Connection(ConnectionType.CLIENT, extensions=extensions)

    def send(self, event: Any) -> None:  # noqa: ANN401 (a wsproto event)
        self.ws.send_raw(self.connection.send(event), end_stream=isinstance(event, CloseConnection))

    async def next_event(self, timeout: float = 10.0) -> Any:  # noqa: ANN401 (a wsproto event)
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            for event in self.connection.events():
                return event
            available = self.ws._available()
            if available:
                self.connection.receive_data(await self.ws._take(available, deadline))
                continue
            assert not self.ws.ended, "the stream ended"
            assert asyncio.get_running_loop().time() < deadline, "no frame from the server"
            await asyncio.sleep(0.005)

    async def message(self) -> str | bytes:
        """The next message, reassembled from wsproto's pieces."""
        pieces: list[Any] = []
        while True:
            event = await self.next_event()
            assert isinstance(event, TextMessage | BytesMessage), event
            pieces.append(event.data)
            if event.message_finished:
                return "".join(pieces) if isinstance(event, TextMessage) else b"".join(pieces)


@pytest.mark.parametrize("compress", [False, True])
def test_wsproto_client_as_aioquic_example(
    h3_server: Callable[..., Server], tls_files: TLSFiles, compress: bool
) -> None:
    server = h3_server("--ws-compress") if compress else h3_server()

    async def work(conn: H3ClientConnection) -> None:
        deflate = PerMessageDeflate()
        headers = [(b"user-agent", b"aioquic"), (b"sec-websocket-protocol", b"chat")]
        if compress:
            headers.append((b"sec-websocket-extensions", f"{deflate.name}; {deflate.offer()}".encode()))
        ws = await H3WebSocket.open(conn, "/subprotocol", headers=headers).accepted()
        agreed = ws.response.header(b"sec-websocket-extensions")
        extensions: list[Any] = []
        if compress:
            assert agreed is not None, ws.response.headers
            deflate.finalize(agreed.decode())
            extensions.append(deflate)
        else:
            assert agreed is None, agreed
        assert ws.response.header(b"sec-websocket-protocol") == b"chat"
        client = WsprotoWebSocket(ws, extensions)
        assert await client.message() == "chat"
        large = b"".join(i.to_bytes(4, "big") for i in range(256 * 1024))  # 1 MiB
        for message in ("hello over h3", "é" * 5000):
            client.send(TextMessage(data=message))
            assert await client.message() == message
        client.send(BytesMessage(data=large))
        assert await client.message() == large
        client.send(Ping(payload=b"p"))
        event = await client.next_event()
        assert isinstance(event, Pong), event
        assert event.payload == b"p"
        client.send(CloseConnection(code=4003, reason="done"))
        event = await client.next_event()
        assert isinstance(event, CloseConnection), event
        assert event.code == 4003  # echoed without the reason
        assert (await ws.expect_end()).reset_code is None

    run(server, tls_files, work)


def test_slow_application_gets_everything_once_it_catches_up(
    h3_server: Callable[..., Server], tls_files: TLSFiles
) -> None:
    # A queue of two messages: reading pauses at once, the stream is parked past 256 KiB, and is read again
    # as the application takes its messages (each 0.1 s).
    server = h3_server("--quic-stream-window", "64k", "--ws-max-queue", "2")
    ident = unique("h3-catch-up")
    message = os.urandom(64 * 1024)
    count = 24

    async def work(conn: H3ClientConnection) -> None:
        ws = await H3WebSocket.open(conn, f"/slow?id={ident}").accepted()
        for _ in range(count):
            ws.send(BINARY, message)
        deadline = asyncio.get_running_loop().time() + 20
        while (await records(conn, ident))["received"] < count:
            assert asyncio.get_running_loop().time() < deadline, await records(conn, ident)
            await asyncio.sleep(0.2)
        assert (await records(conn, ident))["bytes"] == count * len(message)
        ws.send_close(1000, end_stream=True)
        assert (await ws.expect_close()).close_code == 1000

    run(server, tls_files, work)


def test_client_vanishing_silently_is_1006_after_the_idle_timeout(
    h3_server: Callable[..., Server], tls_files: TLSFiles
) -> None:
    # No CONNECTION_CLOSE: the client's packets just stop, and QUIC's idle timeout (RFC 9000 §10.1) ends it.
    server = h3_server("--quic-idle-timeout", "1000")
    ident = unique("h3-silent")

    async def work(conn: H3ClientConnection) -> None:
        ws = await H3WebSocket.open(conn, f"/echo?id={ident}").accepted()
        await echo_once(ws)
        conn._transport.close()  # type: ignore[union-attr]

    run(server, tls_files, work)

    async def check(conn: H3ClientConnection) -> None:
        assert (await wait_record(conn, ident, "disconnect"))["code"] == 1006

    run(server, tls_files, check)
