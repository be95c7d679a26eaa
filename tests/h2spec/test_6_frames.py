"""RFC 9113 §6 frame definitions: DATA (§6.1), HEADERS (§6.2), PRIORITY (§6.3), RST_STREAM (§6.4),
PUSH_PROMISE (§6.6), PING (§6.7), GOAWAY (§6.8), CONTINUATION (§6.10), and error codes (§7).
SETTINGS (§6.5) and WINDOW_UPDATE (§6.9) have their own modules."""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING

import pytest

pytest.register_assert_rewrite("h2wire", "h2support")
from h2wire import (  # noqa: E402
    E,
    F,
    FrameConn,
    T,
    encode,
    expect_connection_error,
    expect_ignored,
    expect_stream_error,
    expect_stream_or_connection_error,
    goaway_payload,
    priority_payload,
    request_headers,
    rst_payload,
)

pytest_plugins = ("h2support",)
pytestmark = pytest.mark.timeout(60)

if TYPE_CHECKING:
    from collections.abc import Callable

    from h2support import Target, Variant

SLOW = "/wait?ms=300"


def hello_block(target: Target, path: str = "/hello") -> bytes:
    """The field block of GET `path`."""
    return encode(request_headers(target, path))


def post_block(target: Target, path: str = "/echo") -> bytes:
    """The field block of POST `path`."""
    return encode(request_headers(target, path, "POST"))


# --- §6.1 DATA -------------------------------------------------------------------------------------


def test_data_on_stream_zero_is_a_connection_error(target: Target) -> None:
    """RFC 9113 §6.1: DATA with stream identifier 0 is a connection error PROTOCOL_ERROR."""
    with FrameConn.open(target) as conn:
        conn.send_frame(T.DATA, F.END_STREAM, 0, b"test")
        expect_connection_error(conn, E.PROTOCOL_ERROR)


def test_data_on_a_stream_not_open_is_stream_closed(target: Target) -> None:
    """RFC 9113 §6.1: DATA on a stream that is not "open" or "half-closed (local)" is an error STREAM_CLOSED."""
    with FrameConn.open(target) as conn:
        stream_id = conn.request(SLOW)
        conn.data(stream_id, b"test", end_stream=True)
        expect_stream_or_connection_error(conn, stream_id, E.STREAM_CLOSED)


def test_data_with_pad_length_equal_to_payload_is_a_connection_error(target: Target) -> None:
    """RFC 9113 §6.1: padding as long as the payload or longer is a connection error PROTOCOL_ERROR."""
    with FrameConn.open(target) as conn:
        conn.headers(1, post_block(target), end_stream=False)
        # Payload: Pad Length (1) + 4 octets of data; Pad Length says 5.
        conn.send_frame(T.DATA, F.PADDED | F.END_STREAM, 1, bytes([5]) + b"test")
        expect_connection_error(conn, E.PROTOCOL_ERROR)


def test_data_with_pad_length_over_payload_is_a_connection_error(target: Target) -> None:
    """RFC 9113 §6.1: a Pad Length far beyond the frame is a connection error PROTOCOL_ERROR."""
    with FrameConn.open(target) as conn:
        conn.headers(1, post_block(target), end_stream=False)
        conn.send_frame(T.DATA, F.PADDED | F.END_STREAM, 1, bytes([200]) + b"test")
        expect_connection_error(conn, E.PROTOCOL_ERROR)


def test_padded_data_without_pad_length_octet_is_a_frame_size_error(target: Target) -> None:
    """RFC 9113 §4.2: a PADDED DATA frame too short for its Pad Length field is FRAME_SIZE_ERROR."""
    with FrameConn.open(target) as conn:
        conn.headers(1, post_block(target), end_stream=False)
        conn.send_frame(T.DATA, F.PADDED, 1, b"")
        expect_stream_or_connection_error(conn, 1, E.FRAME_SIZE_ERROR, E.PROTOCOL_ERROR)


def test_padded_data_is_delivered_without_padding(target: Target) -> None:
    """RFC 9113 §6.1: padding is discarded; the application gets the data only."""
    with FrameConn.open(target) as conn:
        conn.headers(1, post_block(target), end_stream=False)
        conn.data(1, b"abc", pad=10)
        conn.data(1, b"", pad=0)
        conn.data(1, b"def", end_stream=True, pad=255)
        assert conn.response(1).body == b"abcdef"


def test_data_with_only_padding_is_accepted(target: Target) -> None:
    """RFC 9113 §6.1: Pad Length = payload length - 1 (no data at all) is valid."""
    with FrameConn.open(target) as conn:
        conn.headers(1, post_block(target), end_stream=False)
        conn.send_frame(T.DATA, F.PADDED, 1, bytes([4]) + b"\0" * 4)
        conn.data(1, b"x", end_stream=True)
        assert conn.response(1).body == b"x"


def test_empty_data_with_end_stream_ends_the_request(target: Target) -> None:
    """RFC 9113 §6.1: a zero-length DATA frame may carry END_STREAM."""
    with FrameConn.open(target) as conn:
        conn.headers(1, post_block(target), end_stream=False)
        conn.data(1, b"body")
        conn.data(1, b"", end_stream=True)
        assert conn.response(1).body == b"body"


# --- §6.2 HEADERS ----------------------------------------------------------------------------------


def test_headers_on_stream_zero_is_a_connection_error(target: Target) -> None:
    """RFC 9113 §6.2: HEADERS with stream identifier 0 is a connection error PROTOCOL_ERROR."""
    with FrameConn.open(target) as conn:
        conn.headers(0, hello_block(target))
        expect_connection_error(conn, E.PROTOCOL_ERROR)


def test_headers_with_invalid_pad_length_is_a_connection_error(target: Target) -> None:
    """RFC 9113 §6.2: padding at least as long as the payload is a connection error PROTOCOL_ERROR."""
    with FrameConn.open(target) as conn:
        block = hello_block(target)
        conn.send_frame(T.HEADERS, F.PADDED | F.END_HEADERS | F.END_STREAM, 1, bytes([len(block) + 1]) + block)
        expect_connection_error(conn, E.PROTOCOL_ERROR)


def test_headers_with_priority_flag_too_short_is_a_frame_size_error(target: Target) -> None:
    """RFC 9113 §4.2, §6.2: a HEADERS frame too short for its priority fields is a connection FRAME_SIZE_ERROR."""
    with FrameConn.open(target) as conn:
        conn.send_frame(T.HEADERS, F.PRIORITY | F.END_HEADERS | F.END_STREAM, 1, b"\x00\x00\x00")
        expect_connection_error(conn, E.FRAME_SIZE_ERROR, E.PROTOCOL_ERROR)


def test_padded_headers_is_served(target: Target) -> None:
    """RFC 9113 §6.2: a padded HEADERS frame is served."""
    with FrameConn.open(target) as conn:
        conn.headers(1, hello_block(target), pad=32)
        assert conn.response(1).body == b"hello"


def test_padded_headers_with_priority_is_served(target: Target) -> None:
    """RFC 9113 §6.2: PADDED and PRIORITY together (Pad Length, priority octets, block, padding)."""
    with FrameConn.open(target) as conn:
        conn.headers(1, hello_block(target), pad=7, priority=priority_payload(0, 42))
        assert conn.response(1).body == b"hello"


def test_headers_without_end_headers_then_priority_is_a_protocol_error(target: Target) -> None:
    """RFC 9113 §6.2, §6.10: after HEADERS without END_HEADERS only CONTINUATION may follow (PRIORITY: error)."""
    with FrameConn.open(target) as conn:
        conn.headers(1, hello_block(target), end_headers=False)
        conn.send_frame(T.PRIORITY, 0, 1, priority_payload(0))
        expect_connection_error(conn, E.PROTOCOL_ERROR)


def test_headers_of_another_stream_during_a_field_block_is_a_protocol_error(target: Target) -> None:
    """RFC 9113 §6.2, §6.10: HEADERS of another stream while a field block is open is PROTOCOL_ERROR."""
    with FrameConn.open(target) as conn:
        conn.headers(1, hello_block(target), end_headers=False)
        conn.headers(3, hello_block(target))
        expect_connection_error(conn, E.PROTOCOL_ERROR)


# --- §6.3 PRIORITY ---------------------------------------------------------------------------------


def test_priority_on_stream_zero_is_a_connection_error(target: Target) -> None:
    """RFC 9113 §6.3: PRIORITY with stream identifier 0 is a connection error PROTOCOL_ERROR."""
    with FrameConn.open(target) as conn:
        conn.send_frame(T.PRIORITY, 0, 0, priority_payload(1))
        expect_connection_error(conn, E.PROTOCOL_ERROR)


def test_priority_of_wrong_length_is_a_stream_frame_size_error(target: Target) -> None:
    """RFC 9113 §6.3: a PRIORITY frame whose length is not 5 is a stream error FRAME_SIZE_ERROR."""
    with FrameConn.open(target) as conn:
        stream_id = conn.request("/echo", "POST", end_stream=False)
        conn.send_frame(T.PRIORITY, 0, stream_id, priority_payload(0)[:4])
        expect_stream_error(conn, stream_id, E.FRAME_SIZE_ERROR)


def test_priority_of_six_octets_is_a_stream_frame_size_error(target: Target) -> None:
    """RFC 9113 §6.3: the same with one octet too many."""
    with FrameConn.open(target) as conn:
        stream_id = conn.request("/echo", "POST", end_stream=False)
        conn.send_frame(T.PRIORITY, 0, stream_id, priority_payload(0) + b"\0")
        expect_stream_error(conn, stream_id, E.FRAME_SIZE_ERROR)


# --- §6.4 RST_STREAM -------------------------------------------------------------------------------


def test_rst_stream_on_stream_zero_is_a_connection_error(target: Target) -> None:
    """RFC 9113 §6.4: RST_STREAM with stream identifier 0 is a connection error PROTOCOL_ERROR."""
    with FrameConn.open(target) as conn:
        conn.send_frame(T.RST_STREAM, 0, 0, rst_payload(E.CANCEL))
        expect_connection_error(conn, E.PROTOCOL_ERROR)


def test_rst_stream_on_an_idle_stream_is_a_connection_error(target: Target) -> None:
    """RFC 9113 §6.4: RST_STREAM on an idle stream is a connection error PROTOCOL_ERROR."""
    with FrameConn.open(target) as conn:
        conn.response(conn.request("/hello"))
        conn.send_frame(T.RST_STREAM, 0, 5, rst_payload(E.CANCEL))
        expect_connection_error(conn, E.PROTOCOL_ERROR)


def test_rst_stream_of_wrong_length_is_a_connection_error(target: Target) -> None:
    """RFC 9113 §6.4: RST_STREAM whose length is not 4 is a connection error FRAME_SIZE_ERROR."""
    with FrameConn.open(target) as conn:
        stream_id = conn.request("/echo", "POST", end_stream=False)
        conn.send_frame(T.RST_STREAM, 0, stream_id, b"\x00\x00\x08")
        expect_connection_error(conn, E.FRAME_SIZE_ERROR)


def test_rst_stream_stops_the_response(target: Target) -> None:
    """RFC 9113 §6.4: after RST_STREAM the stream is closed; the server ends sending on it."""
    with FrameConn.open(target, [(0x4, 1 << 20)]) as conn:
        conn.auto_window = False
        conn.window_update(0, 1 << 24)
        stream_id = conn.request("/large?size=4000000")
        conn.wait_for(lambda r: r.kind == T.DATA and r.stream_id == stream_id, "the first DATA")
        conn.rst(stream_id, E.CANCEL)
        conn.ping()
        late = conn.quiet_for(0.3, stream_id)
        received = len(conn.streams[stream_id].data)
        assert received < 4000000, "the whole body came despite RST_STREAM"
        assert not any(r.kind == T.HEADERS for r in late), conn.log()
        assert conn.response(conn.request("/hello")).status == 200


# --- §6.6 PUSH_PROMISE, §8.4 server push -----------------------------------------------------------


def test_push_promise_from_a_client_is_a_connection_error(target: Target) -> None:
    """RFC 9113 §6.6, §8.4: "servers MUST treat the receipt of a PUSH_PROMISE frame as a connection error of
    type PROTOCOL_ERROR"."""
    with FrameConn.open(target) as conn:
        stream_id = conn.request("/echo", "POST", end_stream=False)
        promised = (2).to_bytes(4, "big") + hello_block(target)
        conn.send_frame(T.PUSH_PROMISE, F.END_HEADERS, stream_id, promised)
        expect_connection_error(conn, E.PROTOCOL_ERROR)


# --- §6.7 PING -------------------------------------------------------------------------------------


def test_ping_is_answered_with_the_same_payload(target: Target) -> None:
    """RFC 9113 §6.7: a PING is answered by a PING with ACK and an identical payload."""
    with FrameConn.open(target) as conn:
        conn.ping(b"\x00\x01\x02\x03\xfc\xfd\xfe\xff")


def test_ping_ack_is_not_answered(target: Target) -> None:
    """RFC 9113 §6.7: "An endpoint MUST NOT respond to PING frames containing this flag"."""
    with FrameConn.open(target) as conn:
        conn.send_frame(T.PING, F.ACK, 0, b"unsolici")
        conn.ping(b"solicitd")
        acks = [line for line in conn.seen if line.startswith("PING")]
        assert len(acks) == 1, conn.log()


def test_ping_on_a_stream_is_a_connection_error(target: Target) -> None:
    """RFC 9113 §6.7: a PING with a stream identifier other than 0 is a connection error PROTOCOL_ERROR."""
    with FrameConn.open(target) as conn:
        conn.send_frame(T.PING, 0, 1, b"onstream")
        expect_connection_error(conn, E.PROTOCOL_ERROR)


def test_ping_of_wrong_length_is_a_connection_error(target: Target) -> None:
    """RFC 9113 §6.7: a PING whose length is not 8 is a connection error FRAME_SIZE_ERROR."""
    with FrameConn.open(target) as conn:
        conn.send_frame(T.PING, 0, 0, b"123456789")
        expect_connection_error(conn, E.FRAME_SIZE_ERROR)


# --- §6.8 GOAWAY -----------------------------------------------------------------------------------


def test_goaway_on_a_stream_is_a_connection_error(target: Target) -> None:
    """RFC 9113 §6.8: a GOAWAY with a stream identifier other than 0 is a connection error PROTOCOL_ERROR."""
    with FrameConn.open(target) as conn:
        conn.send_frame(T.GOAWAY, 0, 1, goaway_payload(0, E.NO_ERROR))
        expect_connection_error(conn, E.PROTOCOL_ERROR)


def test_goaway_too_short_is_a_frame_size_error(target: Target) -> None:
    """RFC 9113 §4.2, §6.8: a GOAWAY shorter than its 8 mandatory octets is FRAME_SIZE_ERROR."""
    with FrameConn.open(target) as conn:
        conn.send_frame(T.GOAWAY, 0, 0, b"\x00\x00\x00")
        expect_connection_error(conn, E.FRAME_SIZE_ERROR, E.PROTOCOL_ERROR)


def test_client_goaway_lets_open_streams_finish(target: Target) -> None:
    """RFC 9113 §6.8: a client's GOAWAY concerns server-initiated streams; the client's open stream completes
    ("Activity on streams numbered lower than or equal to the last stream identifier might still complete")."""
    with FrameConn.open(target) as conn:
        stream_id = conn.request(SLOW)
        conn.send_frame(T.GOAWAY, 0, 0, goaway_payload(0, E.NO_ERROR, b"client leaving"))
        assert conn.response(stream_id).body == b"waited"


def test_server_shutdown_sends_goaway_and_finishes_streams(
    variant: Variant, fresh_target: Callable[..., Target]
) -> None:
    """RFC 9113 §6.8: a server stopping gracefully (SIGTERM) sends GOAWAY NO_ERROR naming the last stream it
    processes, lets that in-flight stream complete, then closes."""
    target = fresh_target(variant)
    with FrameConn.open(target) as conn:
        stream_id = conn.request("/wait?ms=500")
        conn.ping()
        target.server.process.send_signal(signal.SIGTERM)
        goaway = conn.wait_for(lambda r: r.kind == T.GOAWAY, "GOAWAY on shutdown").frame
        assert conn.goaway is not None
        assert conn.goaway.error_code == E.NO_ERROR, conn.log()
        assert conn.goaway.last_stream_id >= stream_id, conn.log()
        assert goaway is conn.goaway
        assert conn.response(stream_id).body == b"waited"
        assert conn.closes(), f"the connection stayed open after the last stream; {conn.log()}"
    assert target.server.process.wait(timeout=15) == 0


# --- §6.10 CONTINUATION ----------------------------------------------------------------------------


def test_headers_with_several_continuations_is_served(target: Target) -> None:
    """RFC 9113 §6.10: a field block in HEADERS plus several CONTINUATION frames."""
    with FrameConn.open(target) as conn:
        block = hello_block(target)
        conn.headers(1, block[:2], end_headers=False)
        conn.continuation(1, block[2:4], end_headers=False)
        conn.continuation(1, block[4:6], end_headers=False)
        conn.continuation(1, block[6:])
        assert conn.response(1).body == b"hello"


def test_empty_continuation_frames_are_accepted(target: Target) -> None:
    """RFC 9113 §6.10: a CONTINUATION may carry an empty fragment."""
    with FrameConn.open(target) as conn:
        conn.headers(1, hello_block(target), end_headers=False)
        conn.continuation(1, b"", end_headers=False)
        conn.continuation(1, b"")
        assert conn.response(1).body == b"hello"


def test_continuation_followed_by_another_frame_is_a_protocol_error(target: Target) -> None:
    """RFC 9113 §6.10: a CONTINUATION without END_HEADERS followed by a DATA frame is PROTOCOL_ERROR."""
    with FrameConn.open(target) as conn:
        block = post_block(target)
        conn.headers(1, block[:3], end_headers=False, end_stream=False)
        conn.continuation(1, block[3:], end_headers=False)
        conn.data(1, b"test", end_stream=True)
        expect_connection_error(conn, E.PROTOCOL_ERROR)


def test_continuation_on_stream_zero_is_a_connection_error(target: Target) -> None:
    """RFC 9113 §6.10: a CONTINUATION with stream identifier 0 is a connection error PROTOCOL_ERROR."""
    with FrameConn.open(target) as conn:
        block = hello_block(target)
        conn.headers(1, block[:3], end_headers=False)
        conn.continuation(0, block[3:])
        expect_connection_error(conn, E.PROTOCOL_ERROR)


def test_continuation_after_headers_with_end_headers_is_a_protocol_error(target: Target) -> None:
    """RFC 9113 §6.10: CONTINUATION after a HEADERS that had END_HEADERS is PROTOCOL_ERROR."""
    with FrameConn.open(target) as conn:
        conn.headers(1, post_block(target), end_stream=False)
        conn.continuation(1, [("x-more", "1")])
        expect_stream_or_connection_error(conn, 1, E.PROTOCOL_ERROR)


def test_continuation_after_continuation_with_end_headers_is_a_protocol_error(target: Target) -> None:
    """RFC 9113 §6.10: CONTINUATION after a CONTINUATION that had END_HEADERS is PROTOCOL_ERROR."""
    with FrameConn.open(target) as conn:
        block = post_block(target)
        conn.headers(1, block[:3], end_headers=False, end_stream=False)
        conn.continuation(1, block[3:])
        conn.continuation(1, [("x-more", "1")])
        expect_stream_or_connection_error(conn, 1, E.PROTOCOL_ERROR)


def test_continuation_after_data_is_a_protocol_error(target: Target) -> None:
    """RFC 9113 §6.10: CONTINUATION preceded by a DATA frame is PROTOCOL_ERROR."""
    with FrameConn.open(target) as conn:
        conn.headers(1, post_block(target), end_stream=False)
        conn.data(1, b"test")
        conn.continuation(1, [("x-more", "1")])
        expect_stream_or_connection_error(conn, 1, E.PROTOCOL_ERROR)


def test_continuation_of_another_stream_is_a_protocol_error(target: Target) -> None:
    """RFC 9113 §6.10: the CONTINUATION must be on the stream of the HEADERS it continues."""
    with FrameConn.open(target) as conn:
        block = hello_block(target)
        conn.headers(1, block[:3], end_headers=False)
        conn.continuation(3, block[3:])
        expect_connection_error(conn, E.PROTOCOL_ERROR)


# --- §7 error codes --------------------------------------------------------------------------------


def test_goaway_with_an_unknown_error_code_triggers_nothing_special(target: Target) -> None:
    """RFC 9113 §7: unknown error codes "MUST NOT trigger any special behavior" (the server may still close)."""
    with FrameConn.open(target) as conn:
        conn.send_frame(T.GOAWAY, 0, 0, goaway_payload(0, 0xFF))
        conn.send_frame(T.PING, 0, 0, b"afterga!")
        try:
            conn.wait_for(lambda r: r.kind == T.PING and r.has("ACK"), "PING ACK", 2.0)
        except AssertionError:
            assert conn.eof, conn.log()
        assert conn.goaway is None or conn.goaway.error_code == E.NO_ERROR, conn.log()


def test_rst_stream_with_an_unknown_error_code_triggers_nothing_special(target: Target) -> None:
    """RFC 9113 §7: RST_STREAM with an unknown error code just closes the stream."""
    with FrameConn.open(target) as conn:
        stream_id = conn.request("/echo", "POST", end_stream=False)
        conn.rst(stream_id, 0xFF)
        expect_ignored(conn)
        assert conn.response(conn.request("/hello")).status == 200
