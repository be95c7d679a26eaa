"""WebSocket over HTTP/2 (RFC 8441) for ASGI applications, driven by the `h2` client with hand-made frames.

- SETTINGS_ENABLE_CONNECT_PROTOCOL: advertised for an ASGI application, not
  with --no-websockets or for WSGI (an extended CONNECT is then malformed);
- the opening: :status 200 (never 101, no Sec-WebSocket-Accept), the same
  `websocket` scope as over HTTP/1.1 with http_version "2", subprotocols,
  extra headers, the denials (403, the websocket.http.response extension),
  refusals the server makes itself (version → 400 naming 13, other
  :protocol → 501);
- the conversation: echo, fragments, ping, close codes both ways, protocol
  errors (1002 for an unmasked frame, 1007, 1009) ending the stream with
  END_STREAM after the close frame, a client RST_STREAM or END_STREAM
  without close → 1006;
- flow control: messages of several MiB both ways through small windows, a
  slow application holding the client back with the stream window (bounded
  memory), a client that does not read stalling the application's send();
- --ws-compress, TLS (ALPN h2, scheme wss), several WebSockets and plain
  requests on one connection, 1001 on shutdown.

Served application: tests/apps/ws_apps.py.
"""

from __future__ import annotations

import json
import os
import threading
import time
import zlib
from typing import TYPE_CHECKING

import h2.errors
import h2.exceptions
import pytest
from h2client import INITIAL_WINDOW, H2Client, Response

pytest.register_assert_rewrite("websocket_support", "h2websocket")
from h2websocket import ENABLE_CONNECT_PROTOCOL, H2WebSocket, h2_client, poll, server_settings  # noqa: E402
from tls_support import TLSFiles, client_context  # noqa: E402
from websocket_support import (  # noqa: E402
    APP,
    BINARY,
    CONT,
    PING,
    PONG,
    TEXT,
    assert_ws_still_serving,
    records,
    unique,
    wait_record,
)

pytest_plugins = ("websocket_support", "tls_support")

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from conftest import Server, ServerPool

MESSAGE = 64 * 1024
TAIL = b"\x00\x00\xff\xff"


@pytest.fixture(scope="module")
def server(server_pool: ServerPool) -> Server:
    """ws_apps:app with default options (shared)."""
    return server_pool.get(APP)


@pytest.fixture
def client(server: Server) -> Iterator[H2Client]:
    with h2_client(server.port) as c:
        yield c


def echo_once(ws: H2WebSocket, text: str = "ping?") -> None:
    ws.send_text(text)
    assert ws.read_text() == text


def assert_h2_still_serving(server: Server) -> None:
    """A new HTTP/2 connection serves a WebSocket and a plain request."""
    with h2_client(server.port) as c:
        ws = H2WebSocket.open(c, "/echo").accepted()
        echo_once(ws, "still here")
        ws.send_close(1000, end_stream=True)
        assert ws.expect_close().close_code == 1000
        ws.expect_end()
        r = c.request("GET", "/hello")
        assert (r.status, bytes(r.body)) == (200, b"hello")


# --- SETTINGS_ENABLE_CONNECT_PROTOCOL -------------------------------------------------------------------


def test_settings_advertise_extended_connect(client: H2Client) -> None:
    assert server_settings(client).get(ENABLE_CONNECT_PROTOCOL) == 1


@pytest.mark.parametrize(("target", "options"), [(APP, ("--no-websockets",)), ("wsgi_apps:app", ())])
def test_not_advertised_without_websockets(server_pool: ServerPool, target: str, options: tuple[str, ...]) -> None:
    server = server_pool.get(target, *options)
    with h2_client(server.port) as c:
        assert server_settings(c).get(ENABLE_CONNECT_PROTOCOL, 0) == 0
        # :protocol without the setting makes the request malformed (RFC 8441 §4): a stream error.
        ws = H2WebSocket.open(c, "/echo")
        r = ws.wait_response()
        assert r.reset_code == h2.errors.ErrorCodes.PROTOCOL_ERROR, (r.reset_code, r.headers)
        # A plain CONNECT is still a 501, and the connection goes on.
        sid = c.conn.get_next_available_stream_id()
        c.responses[sid] = Response(sid)
        c.conn.send_headers(sid, [(":method", "CONNECT"), (":authority", "example.test:443")], end_stream=True)
        c.flush()
        assert c.collect(sid)[0].status == 501
        assert c.request("GET", "/hello").status < 500


# --- the opening ------------------------------------------------------------------------------------------


def test_scope(client: H2Client) -> None:
    offers = [("sec-websocket-protocol", "chat, superchat")]
    ws = H2WebSocket.open(client, "/scope?x=1&y=%20", authority="example.test:8443", headers=offers).accepted()
    scope = json.loads(ws.read_text())
    assert scope["type"] == "websocket"
    assert scope["http_version"] == "2"
    assert scope["scheme"] == "ws"
    assert scope["path"] == "/scope"
    assert scope["raw_path"] == "/scope"
    assert scope["query_string"] == "x=1&y=%20"
    assert "method" not in scope
    assert scope["subprotocols"] == ["chat", "superchat"]
    headers = scope["headers"]
    assert headers[0] == ["host", "example.test:8443"]
    assert ["sec-websocket-version", "13"] in headers
    assert "websocket.http.response" in scope["extensions"]
    assert scope["state"] == {"name": "ws_apps"}
    ws.send_close(1000, end_stream=True)
    assert ws.expect_close().close_code == 1000
    ws.expect_end()


def test_accept_is_200_with_subprotocol_and_no_accept_key(client: H2Client) -> None:
    ws = H2WebSocket.open(client, "/subprotocol", headers=[("sec-websocket-protocol", "chat, superchat")]).accepted()
    assert ws.response.header(b"sec-websocket-protocol") == b"superchat"
    assert ws.response.header(b"sec-websocket-extensions") is None
    assert ws.read_text() == "superchat"
    ws = H2WebSocket.open(client, "/subprotocol?choose=chat", headers=[("sec-websocket-protocol", "chat")]).accepted()
    assert ws.response.header(b"sec-websocket-protocol") == b"chat"
    ws = H2WebSocket.open(client, "/subprotocol").accepted()
    assert ws.response.header(b"sec-websocket-protocol") is None
    assert ws.read_text() == ""


def test_extra_headers(client: H2Client) -> None:
    ws = H2WebSocket.open(client, "/headers").accepted()
    assert ws.response.header(b"x-extra") == b"yes"
    assert [v for k, v in ws.response.headers if k == b"set-cookie"] == [b"session=abc", b"theme=dark"]
    echo_once(ws)


def test_close_before_accept_is_403(client: H2Client) -> None:
    r = H2WebSocket.open(client, "/deny").denied()
    assert r.status == 403
    assert r.reset_code in (None, h2.errors.ErrorCodes.NO_ERROR)


def test_denial_response(client: H2Client) -> None:
    r = H2WebSocket.open(client, "/deny-response").denied()
    assert r.status == 418
    assert r.header(b"x-denied") == b"teapot"
    assert bytes(r.body) == b"no websocket for you"


@pytest.mark.parametrize(("path", "status"), [("/return-early", 403), ("/raise-early", 500)])
def test_application_ending_before_answering(client: H2Client, path: str, status: int) -> None:
    assert H2WebSocket.open(client, path).denied().status == status


@pytest.mark.parametrize("version", [None, "8", "14"])
def test_bad_version_is_400_naming_13(client: H2Client, version: str | None) -> None:
    r = H2WebSocket.open(client, "/echo", version=version).denied()
    assert r.status == 400, (r.status, r.headers)
    assert r.header(b"sec-websocket-version") == b"13"


def test_repeated_version_is_400(client: H2Client) -> None:
    r = H2WebSocket.open(client, "/echo", headers=[("sec-websocket-version", "13")]).denied()
    assert r.status == 400


def test_other_protocol_is_501(client: H2Client) -> None:
    r = H2WebSocket.open(client, "/echo", protocol="connect-udp").denied()
    assert r.status == 501
    # The connection is fine.
    echo_once(H2WebSocket.open(client, "/echo").accepted())


def test_key_is_not_needed_but_tolerated(client: H2Client) -> None:
    ws = H2WebSocket.open(client, "/echo", headers=[("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")]).accepted()
    echo_once(ws)


# --- messages -------------------------------------------------------------------------------------------


def test_echo_text_and_binary(client: H2Client) -> None:
    ws = H2WebSocket.open(client, "/echo").accepted()
    for text in ["", "hello", "é€😀" * 100]:
        echo_once(ws, text)
    for size in (0, 1, 125, 126, 65535, 65536, 200_000):
        payload = os.urandom(size)
        ws.send(BINARY, payload)
        assert ws.read_message() == (BINARY, payload)


def test_frames_right_behind_the_connect(server: Server) -> None:
    with h2_client(server.port) as c:
        ws = H2WebSocket.open(c, "/echo")
        ws.send(TEXT, b"early")  # before the 200 arrives
        ws.accepted()
        assert ws.read_text() == "early"


def test_fragmented_message_and_control_frames_in_between(client: H2Client) -> None:
    ws = H2WebSocket.open(client, "/echo").accepted()
    ws.send(TEXT, b"frag", fin=False)
    ws.send(PING, b"in between")
    ws.send(CONT, b"men", fin=False)
    ws.send(CONT, "ted é".encode())
    f = ws.read_frame()
    assert (f.opcode, f.payload) == (PONG, b"in between")
    assert ws.read_text() == "fragmented é"
    # One frame split over many DATA frames, and many frames in one DATA frame.
    from websocket_support import frame  # noqa: PLC0415

    data = frame(BINARY, b"x" * 5000)
    for i in range(0, len(data), 7):
        ws.send_raw(data[i : i + 7])
    assert ws.read_message() == (BINARY, b"x" * 5000)
    ws.send_raw(b"".join(frame(TEXT, b"m%d" % i) for i in range(50)))
    assert [ws.read_text() for _ in range(50)] == [f"m{i}" for i in range(50)]


def test_ping_is_answered(client: H2Client) -> None:
    ws = H2WebSocket.open(client, "/echo").accepted()
    ws.send(PING, b"are you there")
    f = ws.read_frame()
    assert (f.opcode, f.payload, f.fin) == (PONG, b"are you there", True)


# --- closing ----------------------------------------------------------------------------------------------


def test_client_close_is_echoed_then_end_stream(server: Server, client: H2Client) -> None:
    ident = unique("h2close")
    ws = H2WebSocket.open(client, f"/echo?id={ident}").accepted()
    echo_once(ws)
    ws.send_close(4001, "bye é".encode())  # END_STREAM only after the server's answer
    f = ws.expect_close()
    assert f.close_code == 4001
    r = client.collect(ws.sid)[0]
    assert r.reset_code is None
    ws.end()
    assert wait_record(server, ident, "disconnect") == {"code": 4001, "reason": "bye é"}
    # The connection goes on.
    echo_once(H2WebSocket.open(client, "/echo").accepted())


def test_client_close_with_end_stream(server: Server, client: H2Client) -> None:
    ident = unique("h2close-end")
    ws = H2WebSocket.open(client, f"/echo?id={ident}").accepted()
    ws.send_close(None, end_stream=True)
    assert ws.expect_close().close_code is None
    assert ws.expect_end().reset_code is None
    assert wait_record(server, ident, "disconnect")["code"] == 1005


@pytest.mark.parametrize(("code", "reason"), [(1000, ""), (4000, "custom"), (1001, "going")])
def test_server_close(server: Server, client: H2Client, code: int, reason: str) -> None:
    ident = unique("h2srvclose")
    ws = H2WebSocket.open(client, f"/close?id={ident}&code={code}&reason={reason}").accepted()
    assert ws.read_text() == "closing"
    f = ws.expect_close()
    assert (f.close_code, f.close_reason) == (code, reason)
    ws.send_close(code, end_stream=True)
    assert ws.expect_end().reset_code is None
    assert wait_record(server, ident, "after_close")["type"] == "websocket.disconnect"


def test_server_close_unanswered_is_a_cancel(server: Server, client: H2Client) -> None:
    ident = unique("h2unanswered")
    ws = H2WebSocket.open(client, f"/close?id={ident}&code=4002").accepted()
    assert ws.read_text() == "closing"
    assert ws.expect_close().close_code == 4002
    # No answer: after min(--request-timeout, 5 s) the stream is cut (RST_STREAM is the TCP RST, RFC 8441 §5).
    r = client.collect(ws.sid, timeout=15)[0]
    assert r.reset_code == h2.errors.ErrorCodes.CANCEL
    assert wait_record(server, ident, "after_close") == {"type": "websocket.disconnect", "code": 1006}


def test_application_error_after_accept_is_1011(client: H2Client) -> None:
    ws = H2WebSocket.open(client, "/raise-after").accepted()
    assert ws.expect_close().close_code == 1011


def test_client_reset_is_1006(server: Server, client: H2Client) -> None:
    ident = unique("h2reset")
    ws = H2WebSocket.open(client, f"/echo?id={ident}").accepted()
    echo_once(ws)
    ws.reset()
    assert wait_record(server, ident, "disconnect")["code"] == 1006
    echo_once(H2WebSocket.open(client, "/echo").accepted())


def test_end_stream_without_close_is_1006_and_a_reset(server: Server, client: H2Client) -> None:
    ident = unique("h2fin")
    ws = H2WebSocket.open(client, f"/echo?id={ident}").accepted()
    echo_once(ws)
    ws.send(BINARY, b"half", fin=False, end_stream=True)  # a message cut by the FIN
    assert wait_record(server, ident, "disconnect")["code"] == 1006
    assert records(server, ident)["received"] == 1
    assert client.collect(ws.sid)[0].reset_code == h2.errors.ErrorCodes.CANCEL


def test_connection_closed_is_1006(server: Server) -> None:
    ident = unique("h2gone")
    c = h2_client(server.port)
    ws = H2WebSocket.open(c, f"/echo?id={ident}").accepted()
    echo_once(ws)
    c.sock.close()
    assert wait_record(server, ident, "disconnect")["code"] == 1006


# --- protocol errors --------------------------------------------------------------------------------------


def test_unmasked_frame_is_1002(client: H2Client) -> None:
    # RFC 8441 keeps RFC 6455's masking (§5: "frames ... are the same").
    ws = H2WebSocket.open(client, "/echo").accepted()
    ws.send(TEXT, b"naked", mask=False)
    ws.expect_protocol_close(1002)


def test_invalid_utf8_is_1007(client: H2Client) -> None:
    ws = H2WebSocket.open(client, "/echo").accepted()
    ws.send(TEXT, b"ok \xc3\x28")
    ws.expect_protocol_close(1007)


def test_message_over_the_limit_is_1009(server_pool: ServerPool) -> None:
    server = server_pool.get(APP, "--ws-max-message", "100000")
    with h2_client(server.port) as c:
        ws = H2WebSocket.open(c, "/echo").accepted()
        ws.send(BINARY, b"x" * 100_000)
        assert ws.read_message() == (BINARY, b"x" * 100_000)
        ws.send(BINARY, b"x" * 60_000, fin=False)
        ws.send(CONT, b"x" * 60_000)
        ws.expect_protocol_close(1009)
        # Only that stream ended.
        echo_once(H2WebSocket.open(c, "/echo").accepted())


def test_protocol_error_ends_the_stream_even_if_the_client_never_answers(client: H2Client) -> None:
    ws = H2WebSocket.open(client, "/echo").accepted()
    ws.send(0x3, b"")  # reserved opcode
    assert ws.expect_close().close_code == 1002
    assert client.collect(ws.sid)[0].reset_code is None  # END_STREAM behind the close frame
    # No close reply, no END_STREAM: the server resets once it stops waiting (NO_ERROR: its side was complete).
    limit = time.monotonic() + 15
    while ws.response.reset_code is None:
        assert time.monotonic() < limit, "the server never let the stream go"
        poll(client, 1.0)
    assert ws.response.reset_code == h2.errors.ErrorCodes.NO_ERROR


# --- flow control ---------------------------------------------------------------------------------------


def test_large_messages_both_ways_through_small_windows(server: Server) -> None:
    with h2_client(server.port, settings={INITIAL_WINDOW: 1000}) as c:
        size = 5 * 1024 * 1024
        ws = H2WebSocket.open(c, f"/big?size={size}").accepted()
        assert ws.read_message(timeout=60) == (BINARY, bytes(i % 251 for i in range(size)))
        payload = os.urandom(size)
        ws.send(BINARY, payload)  # through the server's stream window (256 KiB)
        assert ws.read_message(timeout=60) == (BINARY, payload)
        # Fragmented too, with text.
        text = "é" * (1 << 20)
        data = text.encode()
        ws.send(TEXT, data[:1000001], fin=False)
        ws.send(CONT, data[1000001:])
        assert ws.read_text(timeout=60) == text


@pytest.mark.timeout(60)
def test_slow_application_holds_the_client_back_with_the_window(start_server: Callable[..., Server]) -> None:
    server = start_server(APP)
    assert_h2_still_serving(server)
    before = server.vm_kib("VmRSS")
    ident = unique("h2slow")
    with h2_client(server.port) as c:
        ws = H2WebSocket.open(c, f"/slow?id={ident}").accepted()
        from websocket_support import frame  # noqa: PLC0415

        message = frame(BINARY, b"m" * MESSAGE)
        pending = b""
        sent = 0
        started = time.monotonic()
        stalled = False
        # The application takes 10 messages (640 KiB) a second: the window must close long before 3 s of sending.
        while time.monotonic() - started < 3.0:
            pending = pending or message
            window = min(c.conn.local_flow_control_window(ws.sid), c.conn.max_outbound_frame_size)
            if window <= 0:
                stalled = True
                poll(c, 0.1)
                continue
            chunk, pending = pending[:window], pending[window:]
            c.conn.send_data(ws.sid, chunk)
            c.flush()
            sent += len(chunk)
        consumed = records(server, ident)["bytes"]
        assert stalled, f"the client's window never closed ({sent >> 10} KiB sent)"
        # In flight: the application's queue (at most 4 MiB / 32 messages) and one stream window (256 KiB).
        assert sent - consumed < 6 << 20, (sent, consumed)
        grown = server.vm_kib("VmRSS") - before
        assert grown < 32 * 1024, f"server RSS grew by {grown} KiB while the application was slow"
        assert 5 <= records(server, ident)["received"] < 128
        ws.reset()
    assert wait_record(server, ident, "disconnect")["code"] == 1006
    assert_h2_still_serving(server)


@pytest.mark.timeout(60)
def test_client_not_reading_stalls_the_application(start_server: Callable[..., Server]) -> None:
    server = start_server(APP)
    ident = unique("h2flood")
    before = server.vm_kib("VmRSS")
    with h2_client(server.port, auto_ack=False) as c:
        ws = H2WebSocket.open(c, f"/flood?id={ident}").accepted()
        deadline = time.monotonic() + 20
        last = -1
        while True:
            poll(c, 0.2)  # the frames arrive, but no WINDOW_UPDATE goes back
            count = records(server, ident).get("sent", 0)
            if count == last and count > 0:
                break
            assert time.monotonic() < deadline, f"the application's sends never stalled: {count} messages"
            last = count
            time.sleep(0.3)
        time.sleep(1.0)
        stalled = records(server, ident)["sent"]
        assert stalled == count, f"sends went on while the client gave no window: {count} -> {stalled}"
        assert stalled * MESSAGE < 8 << 20, f"{stalled} messages of 64 KiB were buffered"
        grown = server.vm_kib("VmRSS") - before
        assert grown < 32 * 1024, f"server RSS grew by {grown} KiB"
        # Reading (and so giving window) resumes the application's sends.
        for _ in range(stalled + 8):
            opcode, payload = ws.read_message(timeout=10)
            assert (opcode, len(payload)) == (BINARY, MESSAGE)
        assert records(server, ident)["sent"] > stalled
        ws.reset()
    error = wait_record(server, ident, "error")
    assert error["oserror"], error


# --- permessage-deflate ----------------------------------------------------------------------------------


def test_compression(server_pool: ServerPool) -> None:
    server = server_pool.get(APP, "--ws-compress")
    with h2_client(server.port) as c:
        ws = H2WebSocket.open(c, "/echo", headers=[("sec-websocket-extensions", "permessage-deflate")]).accepted()
        assert ws.response.header(b"sec-websocket-extensions") == b"permessage-deflate"
        compressor = zlib.compressobj(wbits=-15)
        decompressor = zlib.decompressobj(wbits=-15)
        for message in [b"compressible " * 500, os.urandom(3000), b"short"]:
            packed = compressor.compress(message) + compressor.flush(zlib.Z_SYNC_FLUSH)
            assert packed.endswith(TAIL)
            ws.send(BINARY, packed[:-4], rsv=4)
            f = ws.read_frame()
            assert (f.opcode, f.fin) == (BINARY, True)
            payload = decompressor.decompress(f.payload + TAIL) if f.rsv == 4 else f.payload
            assert payload == message
            assert (f.rsv == 4) == (len(message) >= 64)
        # Not offered: not used.
        plain = H2WebSocket.open(c, "/echo").accepted()
        assert plain.response.header(b"sec-websocket-extensions") is None
        plain.send(TEXT, b"x" * 1000)
        f = plain.read_frame()
        assert (f.rsv, f.payload) == (0, b"x" * 1000)
    # Without --ws-compress, an offer is declined.
    with h2_client(server_pool.get(APP).port) as c:
        ws = H2WebSocket.open(c, "/echo", headers=[("sec-websocket-extensions", "permessage-deflate")]).accepted()
        assert ws.response.header(b"sec-websocket-extensions") is None


# --- TLS, multiplexing, shutdown ------------------------------------------------------------------------


def test_over_tls(tls_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    server = tls_server(APP)
    context = client_context(tls_files, alpn=["h2"])
    with h2_client(server.port, tls=context) as c:
        assert server_settings(c).get(ENABLE_CONNECT_PROTOCOL) == 1
        ws = H2WebSocket.open(c, "/scope", scheme="https").accepted()
        scope = json.loads(ws.read_text())
        assert (scope["scheme"], scope["http_version"]) == ("wss", "2")
        assert "tls" in scope["extensions"]
        for size in (10, 70_000, 3 * 1024 * 1024):
            payload = os.urandom(size)
            ws.send(BINARY, payload)
            assert ws.read_message(timeout=30) == (BINARY, payload)
        ws.send_close(1000, end_stream=True)
        assert ws.expect_close().close_code == 1000
        ws.expect_end()


def test_many_websockets_and_requests_on_one_connection(server: Server, client: H2Client) -> None:
    sockets = [H2WebSocket.open(client, "/echo") for _ in range(20)]
    sids = [client.send("GET", "/hello") for _ in range(5)]
    for ws in sockets:
        ws.accepted()
    # Interleaved sends, each answered on its own stream.
    for round_ in range(3):
        for index, ws in enumerate(sockets):
            ws.send(BINARY, b"%d/%d" % (index, round_) * (1 + index * 500))
        for index, ws in enumerate(sockets):
            assert ws.read_message() == (BINARY, b"%d/%d" % (index, round_) * (1 + index * 500))
    for r in client.collect(*sids):
        assert (r.status, bytes(r.body)) == (200, b"hello")
    # Close half of them; the rest go on, and new requests are served meanwhile.
    for ws in sockets[::2]:
        ws.send_close(1000, end_stream=True)
        assert ws.expect_close().close_code == 1000
        ws.expect_end()
    assert client.request("GET", "/hello").status == 200
    for ws in sockets[1::2]:
        echo_once(ws, "still open")


def test_shutdown_closes_with_1001(start_server: Callable[..., Server]) -> None:
    server = start_server(APP)
    stopper = threading.Thread(target=server.stop)
    try:
        with h2_client(server.port) as c:
            ws = H2WebSocket.open(c, "/echo").accepted()
            echo_once(ws)
            stopper.start()
            f = ws.expect_close(timeout=10)
            assert f.close_code == 1001
            # A GOAWAY comes with it (after it h2 sends nothing more, so the client cannot answer the close).
            limit = time.monotonic() + 10
            while c.terminated is None:
                assert time.monotonic() < limit, "no GOAWAY"
                assert c.read_once()
            assert c.terminated.error_code == h2.errors.ErrorCodes.NO_ERROR
    finally:
        if stopper.is_alive():
            stopper.join(timeout=30)


def test_keepalive_ping(server_pool: ServerPool) -> None:
    server = server_pool.get(APP, "--ws-ping-interval", "300", "--ws-ping-timeout", "600")
    with h2_client(server.port) as c:
        ws = H2WebSocket.open(c, "/echo").accepted()
        f = ws.read_frame(timeout=5)
        assert f.opcode == PING
        ws.send(PONG, f.payload)
        f = ws.read_frame(timeout=5)
        assert f.opcode == PING  # the next one, after another interval
        # No pong this time: closed with 1011.
        assert ws.expect_close(timeout=5).close_code == 1011


def test_still_serving_after_everything(server: Server) -> None:
    assert_h2_still_serving(server)
    assert_ws_still_serving(server)


# --- a receive() cancelled after its message was ready (ASGI: no message is lost) -----------------


@pytest.mark.parametrize("options", [(), ("--no-uvloop",)], ids=["uvloop", "asyncio"])
def test_message_of_a_receive_cancelled_once_it_was_ready_goes_to_the_next_receive(
    server_pool: ServerPool, options: tuple[str, ...]
) -> None:
    """The asyncio.timeout()/wait_for (3.12+) and anyio race, made certain (tests/apps/receive_race.py)."""
    server = server_pool.get(APP, *options)
    ident = unique("h2-receive-race")
    with h2_client(server.port) as c:
        ws = H2WebSocket.open(c, f"/receive-race?id={ident}").accepted()
        wait_record(server, ident, "waiting")
        ws.send_text("the one message")
        result = json.loads(ws.read_text())
        assert "error" not in result, result
        assert result["cancelled"] is True, f"the race was not hit: {result}"
        assert result["next"] == {"type": "websocket.receive", "text": "the one message"}, result
        echo_once(ws, "and after")
        ws.send_close(1000, end_stream=True)
        assert ws.expect_close().close_code == 1000
        ws.expect_end()
