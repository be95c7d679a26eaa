"""WebSocket framing over HTTP/1.1 for ASGI (issue 6 item 2): RFC 6455 §5-§8 with hand-built frames.

Every protocol error must be answered by a close frame with its code (1002,
1007, 1009), then the TCP connection closes, and the server keeps serving.
Served application: tests/apps/ws_apps.py (echo unless the path says otherwise).
"""

from __future__ import annotations

import struct
import threading
from typing import TYPE_CHECKING

import pytest

pytest.register_assert_rewrite("websocket_support")
from websocket_support import (  # noqa: E402
    APP,
    BINARY,
    CLOSE,
    CONT,
    PING,
    PONG,
    TEXT,
    assert_ws_still_serving,
    close_payload,
    frame,
    handshake,
    unique,
    wait_record,
)

pytest_plugins = ("websocket_support",)

if TYPE_CHECKING:
    from websocket_support import WebSocketConnection

    from conftest import Server


# --- messages ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [0, 1, 125, 126, 65535, 65536, 1 << 20])
def test_binary_echo_of_every_length_form(ws_server: Server, size: int) -> None:
    payload = bytes(i % 256 for i in range(size))
    with handshake(ws_server) as ws:
        ws.send(BINARY, payload)
        assert ws.read_message() == (BINARY, payload)


def test_text_echo_with_multibyte_utf8(ws_server: Server) -> None:
    text = "héllo wörld — κόσμε 🌍"
    with handshake(ws_server) as ws:
        ws.send_text(text)
        assert ws.read_text() == text
        ws.send_text("")
        assert ws.read_text() == ""


def test_client_fragments_arrive_whole_at_the_app(ws_server: Server) -> None:
    ident = unique("frag")
    with handshake(ws_server, f"/echo?id={ident}") as ws:
        ws.send(TEXT, b"one ", fin=False)
        ws.send(CONT, b"two ", fin=False)
        ws.send(CONT, b"", fin=False)
        ws.send(CONT, b"three", fin=True)
        assert ws.read_text() == "one two three"
        ws.send(BINARY, b"\x00\x01", fin=False)
        ws.send(CONT, b"\x02", fin=True)
        assert ws.read_message() == (BINARY, b"\x00\x01\x02")
        ws.send_close(1000)
        assert ws.expect_close().close_code == 1000
    # Two messages reached the application, not six fragments.
    assert wait_record(ws_server, ident, "disconnect")["code"] == 1000
    assert wait_record(ws_server, ident, "received") == 2


def test_utf8_character_split_across_fragments_is_valid(ws_server: Server) -> None:
    encoded = "κόσμε🌍".encode()
    with handshake(ws_server) as ws:
        # Cut inside the two-byte "κ" and inside the four-byte emoji.
        ws.send(TEXT, encoded[:1], fin=False)
        ws.send(CONT, encoded[1:-2], fin=False)
        ws.send(CONT, encoded[-2:], fin=True)
        assert ws.read_text() == "κόσμε🌍"


def test_ping_between_fragments_is_answered_and_the_message_survives(ws_server: Server) -> None:
    with handshake(ws_server) as ws:
        ws.send(TEXT, b"before ", fin=False)
        ws.send(PING, b"mid")
        pong = ws.read_frame()
        assert (pong.opcode, pong.payload, pong.fin) == (PONG, b"mid", True)
        ws.send(CONT, b"after", fin=True)
        assert ws.read_text() == "before after"


@pytest.mark.parametrize("kind", ["bytes", "bytearray"])
def test_server_message_arrives_whole(ws_server: Server, kind: str) -> None:
    size = 3 << 20
    with handshake(ws_server, f"/big?size={size}" + ("&bytearray=1" if kind == "bytearray" else "")) as ws:
        opcode, payload = ws.read_message(timeout=20)
        assert opcode == BINARY
        assert payload == bytes(i % 251 for i in range(size))


@pytest.mark.parametrize("payload", [b"", b"ping!", bytes(range(125))])
def test_ping_is_answered_by_a_pong_with_the_same_payload(ws_server: Server, payload: bytes) -> None:
    with handshake(ws_server) as ws:
        ws.send(PING, payload)
        pong = ws.read_frame()
        assert (pong.fin, pong.rsv, pong.opcode, pong.payload) == (True, 0, PONG, payload)
        ws.send_text("then a message")
        assert ws.read_text() == "then a message"


def test_unsolicited_pong_is_ignored(ws_server: Server) -> None:
    with handshake(ws_server) as ws:
        ws.send(PONG, b"heartbeat")
        ws.send_text("after pong")
        assert ws.read_text() == "after pong"


# --- closing handshake --------------------------------------------------------------------------------


def test_app_closes_with_code_and_reason(ws_server: Server) -> None:
    ident = unique("appclose")
    with handshake(ws_server, f"/close?code=4001&reason=bye&id={ident}") as ws:
        assert ws.read_text() == "closing"
        close = ws.expect_close()
        assert (close.close_code, close.close_reason) == (4001, "bye")
        ws.send_close(4001)
        assert ws.tcp_closed(), "the server kept the TCP connection after the closing handshake"
    after = wait_record(ws_server, ident, "after_close")
    assert after["type"] == "websocket.disconnect"


def test_client_close_is_echoed_and_reaches_the_app(ws_server: Server) -> None:
    ident = unique("clientclose")
    with handshake(ws_server, f"/echo?id={ident}") as ws:
        ws.send_text("hi")
        assert ws.read_text() == "hi"
        ws.send_close(1000, b"done")
        close = ws.expect_close()
        assert close.close_code == 1000
        assert ws.tcp_closed()
    assert wait_record(ws_server, ident, "disconnect") == {"code": 1000, "reason": "done"}


def test_client_close_with_application_code(ws_server: Server) -> None:
    ident = unique("clientclose4k")
    with handshake(ws_server, f"/echo?id={ident}") as ws:
        ws.send_close(4321, "custom ✓".encode())
        assert ws.expect_close().close_code == 4321
        assert ws.tcp_closed()
    assert wait_record(ws_server, ident, "disconnect") == {"code": 4321, "reason": "custom ✓"}


def test_empty_client_close_is_1005_for_the_app(ws_server: Server) -> None:
    ident = unique("emptyclose")
    with handshake(ws_server, f"/echo?id={ident}") as ws:
        ws.send_close(None)
        close = ws.expect_close()
        assert close.close_code in (None, 1000)
        assert ws.tcp_closed()
    assert wait_record(ws_server, ident, "disconnect")["code"] == 1005


def test_app_returning_without_close_closes_with_1000(ws_server: Server) -> None:
    # /scope's handler echoes; /return-early is before accept. Use /raise-after for the error path below.
    with handshake(ws_server, "/close?code=1000") as ws:
        assert ws.read_text() == "closing"
        assert ws.expect_close().close_code == 1000


def test_app_raising_after_accept_closes_with_1011(ws_server: Server) -> None:
    with handshake(ws_server, "/raise-after") as ws:
        assert ws.expect_close().close_code == 1011
        ws.send_close(1000)
        assert ws.tcp_closed()
    assert_ws_still_serving(ws_server)


def test_nothing_is_read_after_the_peers_close(ws_server: Server) -> None:
    with handshake(ws_server) as ws:
        ws.send_raw(frame(CLOSE, close_payload(1000)) + frame(TEXT, b"after close"))
        assert ws.expect_close().close_code == 1000
        assert ws.tcp_closed()


# --- protocol errors ----------------------------------------------------------------------------------


def fails(server: Server, code: int, *frames: bytes, path: str = "/echo") -> None:
    """Send `frames` on a new WebSocket; the server closes with `code`; the server still serves."""
    with handshake(server, path) as ws:
        ws.send_raw(b"".join(frames))
        ws.expect_protocol_close(code)
    assert_ws_still_serving(server)


def test_unmasked_client_frame_is_1002(ws_server: Server) -> None:
    fails(ws_server, 1002, frame(TEXT, b"naked", mask=False))


def test_unmasked_control_frame_is_1002(ws_server: Server) -> None:
    fails(ws_server, 1002, frame(PING, b"naked", mask=False))


@pytest.mark.parametrize("rsv", [1, 2, 4, 7])
def test_reserved_bits_are_1002(ws_server: Server, rsv: int) -> None:
    fails(ws_server, 1002, frame(TEXT, b"rsv", rsv=rsv))


def test_reserved_bit_on_a_ping_is_1002(ws_server: Server) -> None:
    fails(ws_server, 1002, frame(PING, b"rsv", rsv=4))


@pytest.mark.parametrize("opcode", [3, 7, 0xB, 0xF])
def test_unknown_opcode_is_1002(ws_server: Server, opcode: int) -> None:
    fails(ws_server, 1002, frame(opcode, b"what"))


@pytest.mark.parametrize("opcode", [PING, PONG, CLOSE])
def test_fragmented_control_frame_is_1002(ws_server: Server, opcode: int) -> None:
    payload = close_payload(1000) if opcode == CLOSE else b"frag"
    fails(ws_server, 1002, frame(opcode, payload, fin=False))


@pytest.mark.parametrize("opcode", [PING, PONG, CLOSE])
def test_oversized_control_frame_is_1002(ws_server: Server, opcode: int) -> None:
    payload = close_payload(1000, b"r" * 124) if opcode == CLOSE else b"p" * 126
    fails(ws_server, 1002, frame(opcode, payload))


def test_continuation_without_a_start_is_1002(ws_server: Server) -> None:
    fails(ws_server, 1002, frame(CONT, b"orphan"))


def test_new_message_inside_a_fragmented_one_is_1002(ws_server: Server) -> None:
    fails(ws_server, 1002, frame(TEXT, b"first", fin=False), frame(TEXT, b"second"))


@pytest.mark.parametrize(
    ("length", "form"),
    [(0, "16"), (5, "16"), (125, "16"), (5, "64"), (65535, "64")],
    ids=["0-in-16", "5-in-16", "125-in-16", "5-in-64", "65535-in-64"],
)
def test_non_minimal_length_is_1002(ws_server: Server, length: int, form: str) -> None:
    fails(ws_server, 1002, frame(BINARY, b"x" * length, length_form=form))


def test_64_bit_length_with_the_top_bit_set_is_refused(ws_server: Server) -> None:
    head = struct.pack("!BBQ", 0x82, 0x80 | 127, 1 << 63) + b"\x00\x00\x00\x00"
    with handshake(ws_server) as ws:
        ws.send_raw(head)
        close = ws.expect_close()
        assert close.close_code in (1002, 1009), close
        assert ws.tcp_closed()
    assert_ws_still_serving(ws_server)


@pytest.mark.parametrize(
    "payload",
    [
        b"\xff",
        b"\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5\xed\xa0\x80edited",  # a UTF-16 surrogate
        b"\xf4\x90\x80\x80",  # above U+10FFFF
        b"\xc0\xaf",  # overlong "/"
        b"ok\xe2\x82",  # truncated at the end of the message
    ],
    ids=["ff", "surrogate", "above-max", "overlong", "truncated"],
)
def test_invalid_utf8_text_is_1007(ws_server: Server, payload: bytes) -> None:
    fails(ws_server, 1007, frame(TEXT, payload))


def test_invalid_utf8_split_across_fragments_is_1007(ws_server: Server) -> None:
    # First fragment: the lead byte of a 3-byte character; the second continues it with an ASCII byte.
    fails(ws_server, 1007, frame(TEXT, b"abc\xe2", fin=False), frame(CONT, b"\x28\xa1", fin=True))


def test_invalid_utf8_is_refused_before_the_message_ends(ws_server: Server) -> None:
    # RFC 6455 §8.1 fails the connection as soon as the text is known invalid; the message never ends here.
    with handshake(ws_server) as ws:
        ws.send(TEXT, b"valid start ", fin=False)
        ws.send(CONT, b"\xff\xfe", fin=False)
        ws.expect_protocol_close(1007)
    assert_ws_still_serving(ws_server)


def test_invalid_utf8_close_reason_is_1007(ws_server: Server) -> None:
    fails(ws_server, 1007, frame(CLOSE, close_payload(1000, b"\xff\xfe")))


def test_one_byte_close_body_is_1002(ws_server: Server) -> None:
    fails(ws_server, 1002, frame(CLOSE, b"\x03"))


@pytest.mark.parametrize("code", [0, 999, 1004, 1005, 1006, 1015, 1016, 2999, 5000, 65535])
def test_invalid_close_code_is_1002(ws_server: Server, code: int) -> None:
    fails(ws_server, 1002, frame(CLOSE, close_payload(code)))


# --- message size limit -------------------------------------------------------------------------------


def oversized(ws: WebSocketConnection, declared: int, first_chunk: int = 65536) -> threading.Thread:
    """Announce a binary frame of `declared` bytes; the payload goes out from a thread (errors ignored)."""
    key = b"\x01\x02\x03\x04"
    head = struct.pack("!BBQ", 0x82, 0x80 | 127, declared) + key

    def pump() -> None:
        chunk = b"\x00" * first_chunk
        sent = 0
        try:
            ws.raw.sock.sendall(head)
            while sent < declared:
                piece = chunk[: min(len(chunk), declared - sent)]
                ws.raw.sock.sendall(piece)
                sent += len(piece)
        except OSError:
            pass

    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    return thread


def test_message_over_the_default_16_mib_is_1009(ws_server: Server) -> None:
    with handshake(ws_server) as ws:
        oversized(ws, (16 << 20) + 1)
        close = ws.expect_close(timeout=30)
        assert close.close_code == 1009, close
    assert_ws_still_serving(ws_server)


def test_fragmented_message_over_the_default_is_1009(ws_server: Server) -> None:
    piece = b"\x00" * (4 << 20)
    with handshake(ws_server) as ws:

        def pump() -> None:
            try:
                ws.send(BINARY, piece, fin=False)
                for _ in range(4):
                    ws.send(CONT, piece, fin=False)
                ws.send(CONT, b"end", fin=True)
            except OSError:
                pass

        thread = threading.Thread(target=pump, daemon=True)
        thread.start()
        close = ws.expect_close(timeout=30)
        assert close.close_code == 1009, close
        thread.join(10)
    assert_ws_still_serving(ws_server)


@pytest.fixture(scope="module")
def small_limit_server(server_pool: object) -> Server:
    """ws_apps:app with --ws-max-message 1k."""
    return server_pool.get(APP, "--ws-max-message", "1k")  # type: ignore[attr-defined,no-any-return]


def test_message_at_the_limit_passes(small_limit_server: Server) -> None:
    with handshake(small_limit_server) as ws:
        ws.send(BINARY, b"a" * 1024)
        assert ws.read_message() == (BINARY, b"a" * 1024)
        ws.send(TEXT, b"b" * 600, fin=False)
        ws.send(CONT, b"b" * 424)
        assert ws.read_text() == "b" * 1024


def test_single_frame_over_the_limit_is_1009(small_limit_server: Server) -> None:
    fails(small_limit_server, 1009, frame(BINARY, b"a" * 1025))


def test_fragments_adding_up_over_the_limit_are_1009(small_limit_server: Server) -> None:
    fails(small_limit_server, 1009, frame(TEXT, b"b" * 600, fin=False), frame(CONT, b"b" * 600))


def test_limit_does_not_apply_to_what_the_app_sends(small_limit_server: Server) -> None:
    with handshake(small_limit_server, "/big?size=100000") as ws:
        opcode, payload = ws.read_message()
        assert (opcode, len(payload)) == (BINARY, 100000)


def test_protocol_error_leaves_other_connections_alone(ws_server: Server) -> None:
    with handshake(ws_server) as healthy:
        fails(ws_server, 1002, frame(TEXT, b"x", mask=False))
        healthy.send_text("unaffected")
        assert healthy.read_text() == "unaffected"


def test_app_close_reason_is_cut_on_a_character_boundary(ws_server: Server) -> None:
    # 122 ASCII bytes then a 2-byte character: 124 bytes, over the 123 a close frame can carry.
    # Whatever the server does (cut or refuse), what it sends must be valid UTF-8 (RFC 6455 §5.5.1).
    reason = "a" * 122 + "é"
    with handshake(ws_server, "/close?code=4000&reason=" + reason.replace("é", "%C3%A9")) as ws:
        assert ws.read_text() == "closing"
        close = ws.expect_close()
        assert close.close_code in (4000, 1011), close
        assert len(close.payload) <= 125
        try:
            sent = close.payload[2:].decode("utf-8")
        except UnicodeDecodeError:
            pytest.fail(f"the server sent a close reason that is not UTF-8: {close.payload[-4:]!r}")
        assert reason.startswith(sent), close.payload


def test_message_of_exactly_the_default_limit_passes(ws_server: Server) -> None:
    payload = b"L" * (16 << 20)
    with handshake(ws_server) as ws:
        sender = threading.Thread(target=ws.send, args=(BINARY, payload), daemon=True)
        sender.start()
        opcode, echoed = ws.read_message(timeout=30)
        sender.join(10)
    assert opcode == BINARY
    assert echoed == payload
