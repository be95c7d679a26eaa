"""RFC 9113 §6.5 SETTINGS: the frame (§6.5), defined parameters (§6.5.2), synchronization (§6.5.3)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

pytest.register_assert_rewrite("h2wire", "h2support")
from h2wire import (  # noqa: E402
    DEFAULT_MAX_FRAME,
    MAX_WINDOW,
    E,
    F,
    FrameConn,
    S,
    T,
    encode,
    expect_connection_error,
    expect_ignored,
    hp_literal,
    request_headers,
    settings_payload,
)

pytest_plugins = ("h2support",)
pytestmark = pytest.mark.timeout(60)

if TYPE_CHECKING:
    from h2support import Target


def settings_acked(conn: FrameConn, *pairs: tuple[int, int]) -> None:
    """Send SETTINGS and wait for the server's ACK (§6.5.3)."""
    conn.settings(*pairs)
    conn.wait_for(lambda r: r.kind == T.SETTINGS and r.has("ACK"), "SETTINGS ACK")


# --- §6.5 the frame --------------------------------------------------------------------------------


def test_settings_ack_with_payload_is_a_frame_size_error(target: Target) -> None:
    """RFC 9113 §6.5: a SETTINGS ACK with a non-empty payload is a connection error FRAME_SIZE_ERROR."""
    with FrameConn.open(target) as conn:
        conn.send_frame(T.SETTINGS, F.ACK, 0, settings_payload((S.ENABLE_PUSH, 0)))
        expect_connection_error(conn, E.FRAME_SIZE_ERROR)


def test_settings_on_a_stream_is_a_protocol_error(target: Target) -> None:
    """RFC 9113 §6.5: SETTINGS with a stream identifier other than 0 is a connection error PROTOCOL_ERROR."""
    with FrameConn.open(target) as conn:
        conn.send_frame(T.SETTINGS, 0, 1, settings_payload((S.ENABLE_PUSH, 0)))
        expect_connection_error(conn, E.PROTOCOL_ERROR)


def test_settings_length_not_a_multiple_of_six_is_a_frame_size_error(target: Target) -> None:
    """RFC 9113 §6.5: a SETTINGS length that is not a multiple of 6 is a connection error FRAME_SIZE_ERROR."""
    with FrameConn.open(target) as conn:
        conn.send_frame(T.SETTINGS, 0, 0, settings_payload((S.ENABLE_PUSH, 0))[:5])
        expect_connection_error(conn, E.FRAME_SIZE_ERROR)


def test_unexpected_settings_ack_is_tolerated(target: Target) -> None:
    """RFC 9113 §6.5: an ACK for nothing outstanding is not a listed error; the connection stays up (h2spec has no
    case; servers ignore it)."""
    with FrameConn.open(target) as conn:
        conn.send_frame(T.SETTINGS, F.ACK, 0)
        conn.ping()


# --- §6.5.2 defined parameters ---------------------------------------------------------------------


def test_enable_push_other_than_0_or_1_is_a_protocol_error(target: Target) -> None:
    """RFC 9113 §6.5.2: SETTINGS_ENABLE_PUSH other than 0 or 1 is a connection error PROTOCOL_ERROR."""
    with FrameConn.open(target) as conn:
        conn.settings((S.ENABLE_PUSH, 2))
        expect_connection_error(conn, E.PROTOCOL_ERROR)


def test_initial_window_size_over_the_maximum_is_a_flow_control_error(target: Target) -> None:
    """RFC 9113 §6.5.2: SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1 is a connection error FLOW_CONTROL_ERROR."""
    with FrameConn.open(target) as conn:
        conn.settings((S.INITIAL_WINDOW_SIZE, MAX_WINDOW + 1))
        expect_connection_error(conn, E.FLOW_CONTROL_ERROR)


def test_max_frame_size_below_the_initial_value_is_a_protocol_error(target: Target) -> None:
    """RFC 9113 §6.5.2: SETTINGS_MAX_FRAME_SIZE below 16384 is a connection error PROTOCOL_ERROR."""
    with FrameConn.open(target) as conn:
        conn.settings((S.MAX_FRAME_SIZE, DEFAULT_MAX_FRAME - 1))
        expect_connection_error(conn, E.PROTOCOL_ERROR)


def test_max_frame_size_above_the_maximum_is_a_protocol_error(target: Target) -> None:
    """RFC 9113 §6.5.2: SETTINGS_MAX_FRAME_SIZE above 2^24-1 is a connection error PROTOCOL_ERROR."""
    with FrameConn.open(target) as conn:
        conn.settings((S.MAX_FRAME_SIZE, 1 << 24))
        expect_connection_error(conn, E.PROTOCOL_ERROR)


def test_unknown_setting_is_ignored(target: Target) -> None:
    """RFC 9113 §6.5.2: "An endpoint that receives a SETTINGS frame with any unknown or unsupported identifier
    MUST ignore that setting" (and still acknowledges the frame)."""
    with FrameConn.open(target) as conn:
        settings_acked(conn, (0xFF, 1), (0x7A7A, 0xFFFFFFFF))
        expect_ignored(conn)


@pytest.mark.parametrize(
    ("name", "pairs"),
    [
        ("header_table_size", [(S.HEADER_TABLE_SIZE, 8192)]),
        ("enable_push", [(S.ENABLE_PUSH, 1)]),
        ("max_concurrent_streams", [(S.MAX_CONCURRENT_STREAMS, 10)]),
        ("initial_window_size", [(S.INITIAL_WINDOW_SIZE, 1 << 20)]),
        ("max_frame_size", [(S.MAX_FRAME_SIZE, (1 << 24) - 1)]),
        ("max_header_list_size", [(S.MAX_HEADER_LIST_SIZE, 1 << 20)]),
        ("all_at_once", [(S.ENABLE_PUSH, 0), (S.MAX_CONCURRENT_STREAMS, 0), (S.INITIAL_WINDOW_SIZE, 0)]),
    ],
)
def test_valid_setting_values_are_acknowledged(target: Target, name: str, pairs: list[tuple[int, int]]) -> None:
    """RFC 9113 §6.5.2, §6.5.3: each defined parameter with a valid value is acknowledged; requests go on."""
    with FrameConn.open(target) as conn:
        settings_acked(conn, *pairs)
        if (S.INITIAL_WINDOW_SIZE, 0) in pairs:
            conn.settings((S.INITIAL_WINDOW_SIZE, 65535))
        response = conn.response(conn.request("/hello"))
        assert response.body == b"hello", name


def test_header_table_size_zero_stops_dynamic_indexing(target: Target) -> None:
    """RFC 9113 §6.5.2, RFC 7541 §4.2: after SETTINGS_HEADER_TABLE_SIZE 0 the server's encoder signals a size
    update to 0 and uses no dynamic entry (the decoder limited to 0 would fail otherwise)."""
    with FrameConn.open(target, [(S.HEADER_TABLE_SIZE, 0)]) as conn:
        for _ in range(3):
            response = conn.response(conn.request("/hello"))
            assert response.body == b"hello"


def test_header_table_size_lowered_later_is_honoured(target: Target) -> None:
    """RFC 7541 §4.2: a lower SETTINGS_HEADER_TABLE_SIZE after responses were encoded is honoured by a size update."""
    with FrameConn.open(target) as conn:
        conn.response(conn.request("/hello"))
        settings_acked(conn, (S.HEADER_TABLE_SIZE, 0))
        conn.decoder.max_allowed_table_size = 0
        response = conn.response(conn.request("/hello"))
        assert response.body == b"hello"


def test_header_list_over_the_advertised_limit_is_refused_for_the_stream(target: Target) -> None:
    """RFC 9113 §6.5.2, §10.5.1: a field section over SETTINGS_MAX_HEADER_LIST_SIZE gets 431 or RST_STREAM; the
    connection survives (the dynamic table stays in step)."""
    with FrameConn.open(target) as conn:
        limit = conn.server_settings.get(S.MAX_HEADER_LIST_SIZE)
        if limit is None or limit > 1 << 20:
            pytest.skip(f"no usable SETTINGS_MAX_HEADER_LIST_SIZE advertised ({limit})")
        filler = [hp_literal(f"x-filler-{i}", "v" * 1000) for i in range(limit // 1000 + 2)]
        block = encode(request_headers(target, "/hello/too-large")) + b"".join(filler)
        frames = [block[i : i + DEFAULT_MAX_FRAME] for i in range(0, len(block), DEFAULT_MAX_FRAME)]
        conn.headers(1, frames[0], end_headers=len(frames) == 1)
        for index, piece in enumerate(frames[1:], start=2):
            conn.continuation(1, piece, end_headers=index == len(frames))
        conn.wait_for(
            lambda r: (
                (r.kind == T.RST_STREAM and r.stream_id == 1)
                or (r.kind == T.HEADERS and r.stream_id == 1)
                or r.kind == T.GOAWAY
            ),
            "431 or RST_STREAM for stream 1",
        )
        assert conn.goaway is None, f"the whole connection was dropped for one large field section; {conn.log()}"
        state = conn.streams[1]
        if state.blocks:
            assert dict(state.blocks[0]).get(b":status") == b"431", conn.log()
        after = conn.response(conn.request("/hello"))
        assert (after.status, after.body) == (200, b"hello"), conn.log()


# --- §6.5.3 synchronization ------------------------------------------------------------------------


def test_settings_are_acknowledged(target: Target) -> None:
    """RFC 9113 §6.5.3: the server acknowledges each SETTINGS frame."""
    with FrameConn.open(target) as conn:
        for value in (100, 200, 300):
            settings_acked(conn, (S.MAX_CONCURRENT_STREAMS, value))


def test_last_of_several_values_in_one_frame_wins(target: Target) -> None:
    """RFC 9113 §6.5.3: values are processed in order; with INITIAL_WINDOW_SIZE 100 then 1 the first DATA of a
    response carries 1 octet."""
    with FrameConn.open(target) as conn:
        conn.auto_window = False
        settings_acked(conn, (S.INITIAL_WINDOW_SIZE, 100), (S.INITIAL_WINDOW_SIZE, 1))
        stream_id = conn.request("/large?size=1000")
        conn.wait_for(lambda r: r.kind == T.DATA and r.stream_id == stream_id, "DATA")
        conn.quiet_for(0.2)
        assert conn.streams[stream_id].data_frames == [1], conn.log()
