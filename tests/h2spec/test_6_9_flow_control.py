"""RFC 9113 §6.9 WINDOW_UPDATE and flow control: the frame (§6.9), the window (§6.9.1), the initial window
size (§6.9.2); and the server honouring the client's windows when it sends."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

pytest.register_assert_rewrite("h2wire", "h2support")
from h2wire import (  # noqa: E402
    DEFAULT_WINDOW,
    MAX_WINDOW,
    E,
    FrameConn,
    S,
    T,
    expect_connection_error,
    expect_ignored,
    expect_stream_error,
    window_payload,
)

pytest_plugins = ("h2support",)
pytestmark = pytest.mark.timeout(60)

if TYPE_CHECKING:
    from h2support import Target

QUIET = 0.15


def received(conn: FrameConn, stream_id: int) -> int:
    """DATA octets received on a stream so far."""
    state = conn.streams.get(stream_id)
    return 0 if state is None else len(state.data)


def settle(conn: FrameConn) -> None:
    """Let the server send what its windows allow (a PING round trip, then a short quiet period)."""
    conn.ping(b"settle!!")
    conn.quiet_for(QUIET)


def expect_received(conn: FrameConn, amount: int, *stream_ids: int) -> None:
    """Read until the streams together got `amount` DATA octets, then check that no more comes for a while."""
    conn.wait_for(
        lambda _: sum(received(conn, s) for s in stream_ids) >= amount,
        f"{amount} octets of DATA on streams {stream_ids}",
    )
    settle(conn)
    total = sum(received(conn, s) for s in stream_ids)
    assert total == amount, f"{total} octets received where the windows allow {amount}; {conn.log()}"


# --- §6.9 the frame --------------------------------------------------------------------------------


def test_window_update_of_zero_on_the_connection_is_a_connection_error(target: Target) -> None:
    """RFC 9113 §6.9: an increment of 0 for the connection window is a connection error PROTOCOL_ERROR."""
    with FrameConn.open(target) as conn:
        conn.window_update(0, 0)
        expect_connection_error(conn, E.PROTOCOL_ERROR)


def test_window_update_of_zero_on_a_stream_is_a_stream_error(target: Target) -> None:
    """RFC 9113 §6.9: an increment of 0 for a stream window is a stream error PROTOCOL_ERROR."""
    with FrameConn.open(target) as conn:
        stream_id = conn.request("/echo", "POST", end_stream=False)
        conn.window_update(stream_id, 0)
        expect_stream_error(conn, stream_id, E.PROTOCOL_ERROR)


def test_window_update_of_wrong_length_is_a_frame_size_error(target: Target) -> None:
    """RFC 9113 §6.9: a WINDOW_UPDATE whose length is not 4 is a connection error FRAME_SIZE_ERROR."""
    with FrameConn.open(target) as conn:
        conn.send_frame(T.WINDOW_UPDATE, 0, 0, window_payload(1) + b"\0")
        expect_connection_error(conn, E.FRAME_SIZE_ERROR)


def test_window_update_of_wrong_length_on_a_stream_is_a_frame_size_error(target: Target) -> None:
    """RFC 9113 §6.9: the same on a stream (still a connection error)."""
    with FrameConn.open(target) as conn:
        stream_id = conn.request("/echo", "POST", end_stream=False)
        conn.send_frame(T.WINDOW_UPDATE, 0, stream_id, window_payload(1)[:3])
        expect_connection_error(conn, E.FRAME_SIZE_ERROR)


# --- §6.9.1 the window -----------------------------------------------------------------------------


def test_initial_window_of_one_gets_one_octet(target: Target) -> None:
    """RFC 9113 §6.9.1: with SETTINGS_INITIAL_WINDOW_SIZE 1 the server sends a DATA frame of 1 octet, then waits."""
    with FrameConn.open(target, [(S.INITIAL_WINDOW_SIZE, 1)]) as conn:
        conn.auto_window = False
        stream_id = conn.request("/large?size=1000")
        conn.wait_for(lambda r: r.kind == T.DATA and r.stream_id == stream_id, "DATA")
        settle(conn)
        assert conn.streams[stream_id].data_frames == [1], conn.log()


def test_connection_window_up_to_the_maximum_is_accepted(target: Target) -> None:
    """RFC 9113 §6.9.1: the window may reach exactly 2^31-1."""
    with FrameConn.open(target) as conn:
        conn.window_update(0, MAX_WINDOW - DEFAULT_WINDOW)
        expect_ignored(conn)


def test_connection_window_over_the_maximum_is_a_flow_control_error(target: Target) -> None:
    """RFC 9113 §6.9.1: a WINDOW_UPDATE making the connection window exceed 2^31-1 is a connection error
    FLOW_CONTROL_ERROR."""
    with FrameConn.open(target) as conn:
        conn.window_update(0, MAX_WINDOW - DEFAULT_WINDOW)
        conn.window_update(0, 1)
        expect_connection_error(conn, E.FLOW_CONTROL_ERROR)


def test_connection_window_overflow_in_one_update_is_a_flow_control_error(target: Target) -> None:
    """RFC 9113 §6.9.1: one increment of 2^31-1 on top of the initial 65535 overflows: FLOW_CONTROL_ERROR."""
    with FrameConn.open(target) as conn:
        conn.window_update(0, MAX_WINDOW)
        expect_connection_error(conn, E.FLOW_CONTROL_ERROR)


def test_stream_window_over_the_maximum_is_a_stream_error(target: Target) -> None:
    """RFC 9113 §6.9.1: a WINDOW_UPDATE making a stream window exceed 2^31-1 is a stream error
    FLOW_CONTROL_ERROR."""
    with FrameConn.open(target) as conn:
        stream_id = conn.request("/echo", "POST", end_stream=False)
        conn.window_update(stream_id, MAX_WINDOW - DEFAULT_WINDOW)
        conn.window_update(stream_id, 1)
        expect_stream_error(conn, stream_id, E.FLOW_CONTROL_ERROR)


def test_server_respects_the_stream_window(target: Target) -> None:
    """RFC 9113 §6.9.1: the server sends no more than the stream window, and goes on as it is opened."""
    with FrameConn.open(target, [(S.INITIAL_WINDOW_SIZE, 1000)]) as conn:
        conn.auto_window = False
        stream_id = conn.request("/large?size=5000")
        expect_received(conn, 1000, stream_id)
        conn.window_update(stream_id, 1500)
        expect_received(conn, 2500, stream_id)
        conn.window_update(stream_id, 10000)
        response = conn.response(stream_id)
    assert len(response.body) == 5000


def test_server_respects_the_connection_window(target: Target) -> None:
    """RFC 9113 §6.9.1: however large the stream windows, all streams together get no more than the connection
    window (65535 until the client raises it)."""
    with FrameConn.open(target, [(S.INITIAL_WINDOW_SIZE, 1 << 20)]) as conn:
        conn.auto_window = False
        first = conn.request("/large?size=50000")
        second = conn.request("/large?size=50000")
        expect_received(conn, DEFAULT_WINDOW, first, second)
        conn.window_update(0, 100000)
        assert len(conn.response(first).body) == 50000
        assert len(conn.response(second).body) == 50000


# --- §6.9.2 initial window size --------------------------------------------------------------------


def test_initial_window_size_raised_after_the_request_applies_to_it(target: Target) -> None:
    """RFC 9113 §6.9.2: a new SETTINGS_INITIAL_WINDOW_SIZE adjusts the windows of open streams (0 → 1)."""
    with FrameConn.open(target, [(S.INITIAL_WINDOW_SIZE, 0)]) as conn:
        conn.auto_window = False
        stream_id = conn.request("/large?size=1000")
        conn.wait_for(lambda r: r.kind == T.HEADERS and r.stream_id == stream_id, "the response HEADERS")
        settle(conn)
        assert received(conn, stream_id) == 0, conn.log()
        conn.settings((S.INITIAL_WINDOW_SIZE, 1))
        conn.wait_for(lambda r: r.kind == T.DATA and r.stream_id == stream_id, "DATA after the window opened")
        settle(conn)
        assert conn.streams[stream_id].data_frames == [1], conn.log()


def test_initial_window_size_can_make_a_window_negative(target: Target) -> None:
    """RFC 9113 §6.9.2: lowering SETTINGS_INITIAL_WINDOW_SIZE can make a stream window negative; the server then
    waits until WINDOW_UPDATEs make it positive again (100 sent, window 50 → -50, +60 → 10 more octets)."""
    with FrameConn.open(target, [(S.INITIAL_WINDOW_SIZE, 100)]) as conn:
        conn.auto_window = False
        stream_id = conn.request("/large?size=1000")
        expect_received(conn, 100, stream_id)
        conn.settings((S.INITIAL_WINDOW_SIZE, 50))
        conn.window_update(stream_id, 30)
        settle(conn)
        assert received(conn, stream_id) == 100, f"sent on a negative window; {conn.log()}"
        conn.window_update(stream_id, 30)
        expect_received(conn, 110, stream_id)


def test_initial_window_size_over_the_maximum_is_a_flow_control_error(target: Target) -> None:
    """RFC 9113 §6.9.2: SETTINGS_INITIAL_WINDOW_SIZE above 2^31-1 is a connection error FLOW_CONTROL_ERROR."""
    with FrameConn.open(target) as conn:
        conn.settings((S.INITIAL_WINDOW_SIZE, 1 << 31))
        expect_connection_error(conn, E.FLOW_CONTROL_ERROR)


def test_initial_window_size_change_overflowing_a_stream_window_is_a_flow_control_error(target: Target) -> None:
    """RFC 9113 §6.9.2: a SETTINGS_INITIAL_WINDOW_SIZE change that makes an open stream's window exceed 2^31-1 is a
    connection error FLOW_CONTROL_ERROR."""
    with FrameConn.open(target) as conn:
        stream_id = conn.request("/echo", "POST", end_stream=False)
        conn.window_update(stream_id, MAX_WINDOW - DEFAULT_WINDOW)
        conn.settings((S.INITIAL_WINDOW_SIZE, DEFAULT_WINDOW + 1))
        expect_connection_error(conn, E.FLOW_CONTROL_ERROR)


def test_initial_window_size_does_not_change_the_connection_window(target: Target) -> None:
    """RFC 9113 §6.9.2: SETTINGS_INITIAL_WINDOW_SIZE affects stream windows only; the connection window stays
    65535."""
    with FrameConn.open(target, [(S.INITIAL_WINDOW_SIZE, 200000)]) as conn:
        conn.auto_window = False
        stream_id = conn.request("/large?size=150000")
        expect_received(conn, DEFAULT_WINDOW, stream_id)
        conn.window_update(0, 200000)
        assert len(conn.response(stream_id).body) == 150000
