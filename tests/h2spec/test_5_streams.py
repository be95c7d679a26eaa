"""RFC 9113 §5: stream states (§5.1), identifiers (§5.1.1), concurrency (§5.1.2), priority (§5.3),
error handling (§5.4) and extensions (§5.5)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

pytest.register_assert_rewrite("h2wire", "h2support")
from h2support import Variant, peregrine_only  # noqa: E402
from h2wire import (  # noqa: E402
    E,
    F,
    FrameConn,
    S,
    T,
    encode,
    expect_connection_error,
    expect_ignored,
    expect_malformed,
    expect_stream_error,
    expect_stream_or_connection_error,
    frame,
    priority_payload,
    request_headers,
    rst_payload,
    window_payload,
)

pytest_plugins = ("h2support",)
pytestmark = pytest.mark.timeout(60)

if TYPE_CHECKING:
    from collections.abc import Callable

    from h2support import Target

#: A response slow enough that the stream is still half-closed (remote) when the next frame arrives.
SLOW = "/wait?ms=300"


def hello_block(target: Target) -> bytes:
    """The field block of GET /hello."""
    return encode(request_headers(target, "/hello"))


# --- §5.1 idle -------------------------------------------------------------------------------------


def test_idle_data_is_a_connection_error(target: Target) -> None:
    """RFC 9113 §5.1 idle: any frame but HEADERS or PRIORITY is a connection error PROTOCOL_ERROR (DATA)."""
    with FrameConn.open(target) as conn:
        conn.data(1, b"test", end_stream=True)
        expect_connection_error(conn, E.PROTOCOL_ERROR)


def test_idle_rst_stream_is_a_connection_error(target: Target) -> None:
    """RFC 9113 §5.1 idle, §6.4: RST_STREAM on an idle stream is a connection error PROTOCOL_ERROR."""
    with FrameConn.open(target) as conn:
        conn.rst(1, E.CANCEL)
        expect_connection_error(conn, E.PROTOCOL_ERROR)


def test_idle_window_update_is_a_connection_error(target: Target) -> None:
    """RFC 9113 §5.1 idle: WINDOW_UPDATE on an idle stream is a connection error PROTOCOL_ERROR."""
    with FrameConn.open(target) as conn:
        conn.window_update(1, 100)
        expect_connection_error(conn, E.PROTOCOL_ERROR)


def test_idle_continuation_is_a_connection_error(target: Target) -> None:
    """RFC 9113 §5.1 idle, §6.10: CONTINUATION on an idle stream is a connection error PROTOCOL_ERROR."""
    with FrameConn.open(target) as conn:
        conn.continuation(1, hello_block(target))
        expect_connection_error(conn, E.PROTOCOL_ERROR)


def test_idle_priority_is_allowed_and_the_stream_can_then_open(target: Target) -> None:
    """RFC 9113 §5.1 idle: PRIORITY is allowed on an idle stream; HEADERS then opens it."""
    with FrameConn.open(target) as conn:
        conn.priority(1, 0, 200)
        conn.ping()
        conn.headers(1, hello_block(target))
        assert conn.response(1).status == 200


def test_priority_for_a_higher_idle_stream_does_not_close_lower_ones(target: Target) -> None:
    """RFC 9113 §5.1.1: PRIORITY does not open a stream, so lower identifiers stay usable."""
    with FrameConn.open(target) as conn:
        conn.priority(9, 0, 16)
        conn.headers(1, hello_block(target))
        assert conn.response(1).status == 200


# --- §5.1 half-closed (remote) ---------------------------------------------------------------------


def test_half_closed_remote_data_is_stream_closed(target: Target) -> None:
    """RFC 9113 §5.1 half-closed (remote), §6.1: DATA after END_STREAM is an error STREAM_CLOSED."""
    with FrameConn.open(target) as conn:
        stream_id = conn.request(SLOW)
        conn.data(stream_id, b"late", end_stream=True)
        expect_stream_or_connection_error(conn, stream_id, E.STREAM_CLOSED)


def test_half_closed_remote_headers_is_stream_closed(target: Target) -> None:
    """RFC 9113 §5.1 half-closed (remote): HEADERS after END_STREAM is an error STREAM_CLOSED."""
    with FrameConn.open(target) as conn:
        stream_id = conn.request(SLOW)
        conn.headers(stream_id, [("x-late", "trailer")])
        expect_stream_or_connection_error(conn, stream_id, E.STREAM_CLOSED)


def test_half_closed_remote_continuation_is_an_error(target: Target) -> None:
    """RFC 9113 §5.1, §6.10: CONTINUATION after a complete block is STREAM_CLOSED or PROTOCOL_ERROR."""
    with FrameConn.open(target) as conn:
        stream_id = conn.request(SLOW)
        conn.continuation(stream_id, [("x-late", "1")])
        expect_stream_or_connection_error(conn, stream_id, E.STREAM_CLOSED, E.PROTOCOL_ERROR)


def test_half_closed_remote_window_update_is_allowed(target: Target) -> None:
    """RFC 9113 §5.1 half-closed (remote): WINDOW_UPDATE may still be sent; the response completes."""
    with FrameConn.open(target) as conn:
        stream_id = conn.request(SLOW)
        conn.window_update(stream_id, 1000)
        assert conn.response(stream_id).body == b"waited"


def test_half_closed_remote_priority_is_allowed(target: Target) -> None:
    """RFC 9113 §5.1 half-closed (remote): PRIORITY may still be sent; the response completes."""
    with FrameConn.open(target) as conn:
        stream_id = conn.request(SLOW)
        conn.priority(stream_id, 0, 100)
        assert conn.response(stream_id).body == b"waited"


def test_half_closed_remote_rst_stream_cancels_without_error(target: Target) -> None:
    """RFC 9113 §5.1 half-closed (remote): RST_STREAM closes the stream; the connection goes on."""
    with FrameConn.open(target) as conn:
        stream_id = conn.request(SLOW)
        conn.rst(stream_id, E.CANCEL)
        expect_ignored(conn)
        assert conn.response(conn.request("/hello")).status == 200


# --- §5.1 closed -----------------------------------------------------------------------------------


def reset_stream(conn: FrameConn, target: Target) -> int:
    """Open a stream (a request still sending its body) and reset it from the client side."""
    stream_id = conn.request("/echo", "POST", end_stream=False)
    conn.rst(stream_id, E.CANCEL)
    return stream_id


def finished_stream(conn: FrameConn) -> int:
    """A stream whose exchange completed (END_STREAM both ways)."""
    stream_id = conn.request("/hello")
    conn.response(stream_id)
    return stream_id


def test_closed_by_rst_data_is_stream_closed(target: Target) -> None:
    """RFC 9113 §5.1 closed, §6.1: DATA after the client reset the stream is an error STREAM_CLOSED."""
    with FrameConn.open(target) as conn:
        stream_id = reset_stream(conn, target)
        conn.data(stream_id, b"after reset", end_stream=True)
        expect_stream_or_connection_error(conn, stream_id, E.STREAM_CLOSED)


def test_closed_by_rst_headers_is_an_error(target: Target) -> None:
    """RFC 9113 §5.1 closed: HEADERS after RST_STREAM is STREAM_CLOSED (or PROTOCOL_ERROR, §5.1.1 reuse)."""
    with FrameConn.open(target) as conn:
        stream_id = reset_stream(conn, target)
        conn.headers(stream_id, request_headers(target, "/hello"))
        expect_stream_or_connection_error(conn, stream_id, E.STREAM_CLOSED, E.PROTOCOL_ERROR)


def test_closed_by_rst_continuation_is_an_error(target: Target) -> None:
    """RFC 9113 §5.1 closed, §6.10: CONTINUATION after RST_STREAM is STREAM_CLOSED or PROTOCOL_ERROR."""
    with FrameConn.open(target) as conn:
        stream_id = reset_stream(conn, target)
        conn.continuation(stream_id, [("x-late", "1")])
        expect_stream_or_connection_error(conn, stream_id, E.STREAM_CLOSED, E.PROTOCOL_ERROR)


def test_closed_data_is_stream_closed(target: Target) -> None:
    """RFC 9113 §5.1 closed, §6.1: DATA on a finished stream is STREAM_CLOSED (stream or connection error)."""
    with FrameConn.open(target) as conn:
        stream_id = finished_stream(conn)
        conn.data(stream_id, b"too late", end_stream=True)
        expect_stream_or_connection_error(conn, stream_id, E.STREAM_CLOSED, E.PROTOCOL_ERROR)


def test_closed_headers_is_an_error(target: Target) -> None:
    """RFC 9113 §5.1 closed, §5.1.1: HEADERS on a finished stream is STREAM_CLOSED or PROTOCOL_ERROR."""
    with FrameConn.open(target) as conn:
        stream_id = finished_stream(conn)
        conn.headers(stream_id, request_headers(target, "/hello"))
        expect_stream_or_connection_error(conn, stream_id, E.STREAM_CLOSED, E.PROTOCOL_ERROR)


def test_closed_continuation_is_an_error(target: Target) -> None:
    """RFC 9113 §5.1 closed, §6.10: CONTINUATION on a finished stream is STREAM_CLOSED or PROTOCOL_ERROR."""
    with FrameConn.open(target) as conn:
        stream_id = finished_stream(conn)
        conn.continuation(stream_id, [("x-late", "1")])
        expect_stream_or_connection_error(conn, stream_id, E.STREAM_CLOSED, E.PROTOCOL_ERROR)


def test_closed_priority_is_allowed(target: Target) -> None:
    """RFC 9113 §5.1 closed: PRIORITY may be sent on a closed stream and is ignored."""
    with FrameConn.open(target) as conn:
        stream_id = finished_stream(conn)
        conn.priority(stream_id, 0, 32)
        expect_ignored(conn)


def test_closed_window_update_right_after_end_is_tolerated(target: Target) -> None:
    """RFC 9113 §5.1 closed: WINDOW_UPDATE may arrive for a stream that just ended; no error results."""
    with FrameConn.open(target) as conn:
        stream_id = finished_stream(conn)
        conn.window_update(stream_id, 100)
        conn.ping()
        assert conn.goaway is None or conn.goaway.error_code == E.NO_ERROR, conn.log()


def test_server_does_not_answer_rst_stream_with_rst_stream(target: Target) -> None:
    """RFC 9113 §5.4.2: "an endpoint MUST NOT send a RST_STREAM in response to a RST_STREAM frame"."""
    with FrameConn.open(target) as conn:
        stream_id = reset_stream(conn, target)
        conn.ping()
        conn.quiet_for(0.2)
        assert conn.streams.get(stream_id) is None or conn.streams[stream_id].reset is None, conn.log()


# --- §5.1.1 stream identifiers ---------------------------------------------------------------------


def test_even_stream_identifier_is_a_connection_error(target: Target) -> None:
    """RFC 9113 §5.1.1: client streams use odd identifiers; an even one is a connection error PROTOCOL_ERROR."""
    with FrameConn.open(target) as conn:
        conn.headers(2, hello_block(target))
        expect_connection_error(conn, E.PROTOCOL_ERROR)


def test_decreasing_stream_identifier_is_a_connection_error(target: Target) -> None:
    """RFC 9113 §5.1.1: a new stream identifier lower than one used before is a connection error PROTOCOL_ERROR."""
    with FrameConn.open(target) as conn:
        conn.headers(5, hello_block(target))
        conn.response(5)
        conn.headers(3, hello_block(target))
        expect_connection_error(conn, E.PROTOCOL_ERROR)


def test_skipped_stream_identifiers_are_allowed(target: Target) -> None:
    """RFC 9113 §5.1.1: identifiers must increase but need not be consecutive."""
    with FrameConn.open(target) as conn:
        conn.headers(1, hello_block(target))
        conn.headers(101, hello_block(target))
        assert conn.response(1).status == 200
        assert conn.response(101).status == 200


def test_server_pushes_nothing_when_push_is_disabled(target: Target) -> None:
    """RFC 9113 §6.5.2, §8.4: with SETTINGS_ENABLE_PUSH 0 the server sends no PUSH_PROMISE."""
    with FrameConn.open(target, [(S.ENABLE_PUSH, 0)]) as conn:
        conn.response(conn.request("/hello"))
        conn.ping()
        assert not any(line.startswith("PUSHPROMISE") for line in conn.seen), conn.log()


# --- §5.1.2 stream concurrency ---------------------------------------------------------------------


def test_max_concurrent_streams_is_advertised(target: Target) -> None:
    """RFC 9113 §5.1.2, §6.5.2: the server limits concurrent streams (peregrine: 100)."""
    with FrameConn.open(target) as conn:
        limit = conn.server_settings.get(S.MAX_CONCURRENT_STREAMS)
    assert limit is not None, "no SETTINGS_MAX_CONCURRENT_STREAMS: a client could open unlimited streams"
    if target.kind == "peregrine":
        assert limit == 100


def test_streams_over_the_limit_are_refused(target: Target) -> None:
    """RFC 9113 §5.1.2: a HEADERS over SETTINGS_MAX_CONCURRENT_STREAMS is a stream error REFUSED_STREAM (or
    PROTOCOL_ERROR); after a stream closes another can open."""
    with FrameConn.open(target) as conn:
        limit = conn.server_settings.get(S.MAX_CONCURRENT_STREAMS)
        if limit is None or limit > 1000:
            pytest.skip(f"the server advertises no usable limit ({limit})")
        check_refusal_over(conn, limit)


@pytest.mark.parametrize("transport", ["h2c", "tls"])
def test_max_streams_option_sets_the_limit(transport: str, fresh_target: Callable[..., Target]) -> None:
    """peregrine --http2-max-streams (RFC 9113 §5.1.2): the advertised SETTINGS_MAX_CONCURRENT_STREAMS, enforced."""
    target = fresh_target(Variant(transport, "asgi"), peregrine_options=("--http2-max-streams", "5"))
    peregrine_only(target, "--http2-max-streams")
    with FrameConn.open(target) as conn:
        assert conn.server_settings.get(S.MAX_CONCURRENT_STREAMS) == 5
        check_refusal_over(conn, 5)


def check_refusal_over(conn: FrameConn, limit: int) -> None:
    """Open `limit` streams, check the next is refused, then that freed slots can be used again."""
    opened = [conn.request("/echo", "POST", end_stream=False) for _ in range(limit)]
    conn.ping()
    extra = conn.request("/echo", "POST", end_stream=False)
    conn.wait_for(lambda r: r.kind in (T.RST_STREAM, T.GOAWAY) and r.stream_id in (extra, 0), "the refusal")
    assert conn.goaway is None, conn.log()
    assert conn.streams[extra].reset in (E.REFUSED_STREAM, E.PROTOCOL_ERROR), conn.log()
    assert all(conn.streams.get(s) is None or conn.streams[s].reset is None for s in opened), conn.log()
    conn.data(opened[0], b"first", end_stream=True)
    assert conn.response(opened[0]).body == b"first"
    for stream_id in opened[1:]:
        conn.rst(stream_id, E.CANCEL)
    again = conn.request("/echo", "POST", body=b"again")
    assert conn.response(again).body == b"again"


def test_client_max_concurrent_streams_zero_does_not_limit_requests(target: Target) -> None:
    """RFC 9113 §5.1.2: our SETTINGS_MAX_CONCURRENT_STREAMS limits the server's streams, not our requests."""
    with FrameConn.open(target, [(S.MAX_CONCURRENT_STREAMS, 0)]) as conn:
        assert conn.response(conn.request("/hello")).status == 200


# --- §5.3 priority ---------------------------------------------------------------------------------


def test_headers_depending_on_itself_is_a_stream_error(target: Target) -> None:
    """RFC 9113 §5.3.1: "A stream cannot depend on itself" — stream error PROTOCOL_ERROR (HEADERS)."""
    with FrameConn.open(target) as conn:
        conn.headers(1, hello_block(target), priority=priority_payload(1, 16))
        expect_stream_error(conn, 1, E.PROTOCOL_ERROR)


def test_priority_depending_on_itself_is_a_stream_error(target: Target) -> None:
    """RFC 9113 §5.3.1: a PRIORITY frame making an open stream depend on itself is a stream error PROTOCOL_ERROR."""
    with FrameConn.open(target) as conn:
        stream_id = conn.request("/echo", "POST", end_stream=False)
        conn.priority(stream_id, stream_id, 16)
        expect_stream_error(conn, stream_id, E.PROTOCOL_ERROR)


def test_priority_on_an_idle_stream_depending_on_itself_is_an_error(target: Target) -> None:
    """RFC 9113 §5.3.1: the same on an idle stream (RST_STREAM or, as §6.4 forbids RST on idle, GOAWAY)."""
    with FrameConn.open(target) as conn:
        conn.priority(3, 3, 16)
        expect_stream_or_connection_error(conn, 3, E.PROTOCOL_ERROR)


def test_headers_with_priority_is_served(target: Target) -> None:
    """RFC 9113 §5.3.2, §6.2: priority signals in HEADERS are accepted (and may be ignored)."""
    with FrameConn.open(target) as conn:
        conn.headers(1, hello_block(target), priority=priority_payload(0, 256, exclusive=True))
        conn.headers(3, hello_block(target), priority=priority_payload(1, 1))
        assert conn.response(1).status == 200
        assert conn.response(3).status == 200


def test_priority_on_an_open_stream_is_ignored(target: Target) -> None:
    """RFC 9113 §5.3.2: reprioritising an open stream is harmless; the exchange completes."""
    with FrameConn.open(target) as conn:
        stream_id = conn.request("/echo", "POST", end_stream=False)
        conn.priority(stream_id, 0, 255, exclusive=True)
        conn.data(stream_id, b"body", end_stream=True)
        assert conn.response(stream_id).body == b"body"


def test_priority_depending_on_an_unknown_stream_is_ignored(target: Target) -> None:
    """RFC 9113 §5.3: a dependency on a stream that does not exist is no error."""
    with FrameConn.open(target) as conn:
        conn.headers(1, hello_block(target), priority=priority_payload(99, 16))
        assert conn.response(1).status == 200


def test_no_rfc7540_priorities_setting_is_accepted(target: Target) -> None:
    """RFC 9218 §2.1 (RFC 9113 §5.3.2): SETTINGS_NO_RFC7540_PRIORITIES = 1 is acknowledged."""
    with FrameConn.open(target, [(0x9, 1)]) as conn:
        assert conn.response(conn.request("/hello")).status == 200


# --- §5.4 error handling ---------------------------------------------------------------------------


def test_connection_error_sends_goaway_and_closes(target: Target) -> None:
    """RFC 9113 §5.4.1: after a connection error (an 8-octet PING with 6 octets) GOAWAY, then the close."""
    with FrameConn.open(target) as conn:
        conn.send_frame(T.PING, 0, 0, b"123456")
        expect_connection_error(conn, E.FRAME_SIZE_ERROR)


def test_goaway_names_the_last_processed_stream(target: Target) -> None:
    """RFC 9113 §5.4.1, §6.8: the GOAWAY of a connection error carries the last stream the server processed."""
    with FrameConn.open(target) as conn:
        conn.response(conn.request("/hello"))
        conn.send_frame(T.PING, 0, 3, b"onstream")
        goaway = expect_connection_error(conn, E.PROTOCOL_ERROR)
    assert goaway.last_stream_id == 1


def test_stream_error_leaves_other_streams_alone(target: Target) -> None:
    """RFC 9113 §5.4.2: a stream error ends that stream only; a concurrent stream completes."""
    with FrameConn.open(target) as conn:
        slow = conn.request(SLOW)
        conn.headers(3, request_headers(target, "/hello", extra=[(":bogus", "x")]))
        conn.wait_for(lambda r: r.kind in (T.RST_STREAM, T.GOAWAY) and r.stream_id in (3, 0), "the reset of stream 3")
        assert conn.goaway is None, conn.log()
        assert conn.response(slow).body == b"waited"


def test_malformed_request_is_a_stream_error(target: Target) -> None:
    """RFC 9113 §5.4.2, §8.1.1: a malformed request is reset with PROTOCOL_ERROR; the connection goes on."""
    with FrameConn.open(target) as conn:
        conn.headers(1, request_headers(target, "/hello/malformed", extra=[(":bogus", "x")]))
        expect_malformed(conn, 1, "/hello/malformed")


# --- §5.5 extensions -------------------------------------------------------------------------------


def test_unknown_extension_frame_is_ignored(target: Target) -> None:
    """RFC 9113 §5.5: "Implementations MUST discard frames that have unknown or unsupported types"."""
    with FrameConn.open(target) as conn:
        conn.send_frame(0xFA, 0xFF, 0, b"\x00" * 32)
        conn.send_frame(0xFB, 0, 1, b"extension on an idle stream")
        expect_ignored(conn)
        assert conn.response(conn.request("/hello")).status == 200


def test_unknown_extension_frame_inside_a_field_block_is_a_protocol_error(target: Target) -> None:
    """RFC 9113 §5.5, §6.10: no frame of another type, even unknown, may interrupt a field block."""
    with FrameConn.open(target) as conn:
        block = hello_block(target)
        conn.headers(1, block[:4], end_headers=False)
        conn.send_frame(0xFA, 0, 1, b"in the middle")
        conn.continuation(1, block[4:])
        expect_connection_error(conn, E.PROTOCOL_ERROR)


def test_unknown_frame_with_extra_flags_and_reserved_bit_is_ignored(target: Target) -> None:
    """RFC 9113 §4.1, §5.5: unknown type, any flags, reserved bit set — still discarded."""
    with FrameConn.open(target) as conn:
        conn.send(frame(0xEE, 0xFF, 0x80000000, b"x" * 100))
        expect_ignored(conn)


def test_window_update_then_rst_stream_on_an_open_stream_are_accepted(target: Target) -> None:
    """RFC 9113 §6.4, §6.9: a well-formed RST_STREAM and WINDOW_UPDATE on an open stream are accepted."""
    with FrameConn.open(target) as conn:
        stream_id = conn.request("/echo", "POST", end_stream=False)
        conn.send_frame(T.WINDOW_UPDATE, 0, stream_id, window_payload(10))
        conn.send_frame(T.RST_STREAM, 0, stream_id, rst_payload(E.CANCEL))
        expect_ignored(conn)


def test_end_stream_flag_on_headers_with_continuation(target: Target) -> None:
    """RFC 9113 §5.1, §6.2: END_STREAM on HEADERS takes effect once CONTINUATION ends the block."""
    with FrameConn.open(target) as conn:
        block = hello_block(target)
        conn.send_frame(T.HEADERS, F.END_STREAM, 1, block[:3])
        conn.continuation(1, block[3:])
        assert conn.response(1).body == b"hello"
