"""RFC 9113 §4: frame format (§4.1), frame size (§4.2), field section compression and decompression (§4.3)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

pytest.register_assert_rewrite("h2wire", "h2support")
from h2wire import (  # noqa: E402
    DEFAULT_MAX_FRAME,
    E,
    F,
    FrameConn,
    S,
    T,
    encode,
    expect_connection_error,
    expect_ignored,
    expect_stream_or_connection_error,
    hp_literal,
    priority_payload,
    request_headers,
    settings_payload,
    sized_block,
    window_payload,
)

pytest_plugins = ("h2support",)
pytestmark = pytest.mark.timeout(60)

if TYPE_CHECKING:
    from h2support import Target

R_BIT = 0x80000000


# --- §4.1 frame format -----------------------------------------------------------------------------


def test_unknown_frame_type_is_ignored(target: Target) -> None:
    """RFC 9113 §4.1: "Implementations MUST ignore and discard frames of unknown types"."""
    with FrameConn.open(target) as conn:
        conn.send_frame(0x16, 0, 0, b"unknown frame")
        expect_ignored(conn)


def test_undefined_flags_are_ignored(target: Target) -> None:
    """RFC 9113 §4.1: flags with no defined semantics "MUST be ignored on receipt" (a PING with them is answered)."""
    with FrameConn.open(target) as conn:
        conn.send_frame(T.PING, 0xFE, 0, b"flagged!")
        conn.wait_for(
            lambda r: r.kind == T.PING and r.has("ACK") and bytes(r.frame.opaque_data) == b"flagged!",
            "PING ACK for the PING with undefined flags",
        )


def test_undefined_flags_on_headers_are_ignored(target: Target) -> None:
    """RFC 9113 §4.1: undefined flags on HEADERS (0x2, 0x10, 0x40, 0x80) do not change its meaning."""
    with FrameConn.open(target) as conn:
        block = encode(request_headers(target, "/hello"))
        conn.send_frame(T.HEADERS, F.END_STREAM | F.END_HEADERS | 0xD2, 1, block)
        response = conn.response(1)
    assert (response.status, response.body) == (200, b"hello")


def test_reserved_bit_of_stream_identifier_is_ignored(target: Target) -> None:
    """RFC 9113 §4.1: the reserved bit "MUST be ignored when receiving" (HEADERS on stream 1 with R set)."""
    with FrameConn.open(target) as conn:
        block = encode(request_headers(target, "/hello"))
        conn.send_frame(T.HEADERS, F.END_STREAM | F.END_HEADERS, 1 | R_BIT, block)
        response = conn.response(1)
    assert (response.status, response.body) == (200, b"hello")


def test_reserved_bit_of_window_increment_is_ignored(target: Target) -> None:
    """RFC 9113 §6.9: the WINDOW_UPDATE reserved bit is ignored (an increment of 1 with R set is no error)."""
    with FrameConn.open(target) as conn:
        conn.send_frame(T.WINDOW_UPDATE, 0, 0, window_payload(R_BIT | 1))
        expect_ignored(conn)


# --- §4.2 frame size -------------------------------------------------------------------------------


def test_data_frame_of_16384_octets_is_accepted(target: Target) -> None:
    """RFC 9113 §4.2: every implementation must accept frames up to 2^14 octets."""
    body = bytes(range(256)) * 64
    assert len(body) == DEFAULT_MAX_FRAME
    with FrameConn.open(target) as conn:
        stream_id = conn.request("/echo", "POST", body=body)
        response = conn.response(stream_id)
    assert response.status == 200
    assert response.body == body


def test_data_frame_over_max_frame_size_is_a_frame_size_error(target: Target) -> None:
    """RFC 9113 §4.2: a DATA frame over SETTINGS_MAX_FRAME_SIZE is FRAME_SIZE_ERROR (stream or connection)."""
    with FrameConn.open(target) as conn:
        limit = conn.server_settings.get(S.MAX_FRAME_SIZE, DEFAULT_MAX_FRAME)
        stream_id = conn.request("/echo", "POST", end_stream=False)
        conn.data(stream_id, b"x" * (limit + 1), end_stream=True)
        expect_stream_or_connection_error(conn, stream_id, E.FRAME_SIZE_ERROR)


def test_headers_frame_over_max_frame_size_is_a_connection_error(target: Target) -> None:
    """RFC 9113 §4.2: a frame carrying a field block over the limit is a connection error FRAME_SIZE_ERROR."""
    with FrameConn.open(target) as conn:
        limit = conn.server_settings.get(S.MAX_FRAME_SIZE, DEFAULT_MAX_FRAME)
        block = sized_block(request_headers(target, "/hello"), limit + 1)
        conn.headers(1, block)
        expect_connection_error(conn, E.FRAME_SIZE_ERROR)


def test_settings_frame_over_max_frame_size_is_a_connection_error(target: Target) -> None:
    """RFC 9113 §4.2: a SETTINGS frame over the limit is a connection error FRAME_SIZE_ERROR."""
    with FrameConn.open(target) as conn:
        limit = conn.server_settings.get(S.MAX_FRAME_SIZE, DEFAULT_MAX_FRAME)
        count = limit // 6 + 1
        conn.send_frame(T.SETTINGS, 0, 0, settings_payload(*[(0x7F00, 1)] * count))
        expect_connection_error(conn, E.FRAME_SIZE_ERROR)


def test_server_frames_respect_the_default_max_frame_size(target: Target) -> None:
    """RFC 9113 §4.2: the server sends no frame larger than our SETTINGS_MAX_FRAME_SIZE (default 16384)."""
    with FrameConn.open(target) as conn:
        response = conn.response(conn.request("/large?size=200000"))
        assert len(response.body) == 200000
        assert max(conn.largest.values()) <= DEFAULT_MAX_FRAME, conn.largest


def test_server_frames_respect_a_larger_max_frame_size(target: Target) -> None:
    """RFC 9113 §4.2, §6.5.2: with SETTINGS_MAX_FRAME_SIZE 32768 no server frame is larger than that."""
    limit = 32768
    with FrameConn.open(target, [(S.MAX_FRAME_SIZE, limit), (S.INITIAL_WINDOW_SIZE, 1 << 20)]) as conn:
        conn.window_update(0, 1 << 20)
        response = conn.response(conn.request("/large?size=300000"))
        assert len(response.body) == 300000
        assert max(conn.largest.values()) <= limit, conn.largest


def test_large_response_header_is_split_into_continuation(target: Target) -> None:
    """RFC 9113 §4.2, §6.10: a 20000-octet response field comes as HEADERS + CONTINUATION, each within the limit."""
    with FrameConn.open(target) as conn:
        response = conn.response(conn.request("/big-header?size=20000"))
        assert response.status == 200
        assert response.header("x-big") == "b" * 20000
        assert conn.largest.get(T.HEADERS, 0) <= DEFAULT_MAX_FRAME
        assert conn.largest.get(T.CONTINUATION, 0) <= DEFAULT_MAX_FRAME


# --- §4.3 field section compression ----------------------------------------------------------------


def test_invalid_field_block_is_a_compression_error(target: Target) -> None:
    """RFC 9113 §4.3: a field block that cannot be decompressed is a connection error COMPRESSION_ERROR."""
    with FrameConn.open(target) as conn:
        # A literal with a new name whose announced 10-octet name is cut off.
        conn.headers(1, encode(request_headers(target, "/hello")) + b"\x40\x0a\x61")
        expect_connection_error(conn, E.COMPRESSION_ERROR)


def test_priority_inside_a_field_block_is_a_protocol_error(target: Target) -> None:
    """RFC 9113 §4.3: a field block is a contiguous sequence of frames; a PRIORITY in between is PROTOCOL_ERROR."""
    with FrameConn.open(target) as conn:
        block = encode(request_headers(target, "/hello"))
        conn.headers(1, block[:5], end_headers=False)
        conn.send_frame(T.PRIORITY, 0, 1, priority_payload(0))
        conn.continuation(1, block[5:])
        expect_connection_error(conn, E.PROTOCOL_ERROR)


def test_headers_of_another_stream_inside_a_field_block_is_a_protocol_error(target: Target) -> None:
    """RFC 9113 §4.3: frames of another stream may not interleave a field block (PROTOCOL_ERROR)."""
    with FrameConn.open(target) as conn:
        block = encode(request_headers(target, "/hello"))
        conn.headers(1, block[:5], end_headers=False)
        conn.headers(3, block)
        expect_connection_error(conn, E.PROTOCOL_ERROR)


def test_field_block_split_mid_representation_is_reassembled(target: Target) -> None:
    """RFC 9113 §4.3: a field block is decoded as one whole, whatever the frame boundaries."""
    with FrameConn.open(target) as conn:
        block = encode(request_headers(target, "/headers", extra=[("x-split", "value-across-frames")]))
        conn.headers(1, block[:3], end_headers=False)
        for start in range(3, len(block), 7):
            conn.continuation(1, block[start : start + 7], end_headers=start + 7 >= len(block))
        response = conn.response(1)
    assert response.status == 200
    assert ["x-split", "value-across-frames"] in json.loads(response.body)["headers"]


def test_dynamic_table_is_updated_even_for_a_refused_stream(target: Target) -> None:
    """RFC 9113 §4.3: a field block of a stream that is reset is still decoded; the dynamic table stays in step."""
    with FrameConn.open(target) as conn:
        # Stream 1 is malformed (upper-case name) but indexes "x-kept: kept-value" (dynamic index 62).
        bad = encode(request_headers(target, "/headers")) + hp_literal("x-kept", "kept-value", mode="incremental")
        conn.headers(1, bad + hp_literal("X-Upper", "1"))
        conn.wait_for(lambda r: r.kind in (T.RST_STREAM, T.GOAWAY), "the refusal of stream 1")
        assert conn.goaway is None, conn.log()
        conn.headers(3, encode(request_headers(target, "/headers")) + bytes([0x80 | 62]))
        response = conn.response(3)
    assert response.status == 200
    assert ["x-kept", "kept-value"] in json.loads(response.body)["headers"]
