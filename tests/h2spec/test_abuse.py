"""Abusive HTTP/2 clients (RFC 9113 §10.5 denial-of-service considerations; RFC 7541 §7.3 HPACK memory):
each must end with a GOAWAY ENHANCE_YOUR_CALM (or, for the write stall, the stream or connection given up),
without the server's memory growing, and the server must go on serving new connections.

- rapid reset (CVE-2023-44487): streams opened and at once reset, in a loop;
- CONTINUATION flood (CVE-2024-27316 family): a field block that never ends, growing or in empty frames;
- PING and SETTINGS floods from a client that does not read (CVE-2019-9512, CVE-2019-9515): every frame asks
  for an answer that cannot be delivered;
- zero-length DATA flood (CVE-2019-9518);
- HPACK bomb (RFC 7541 §7.3): a small block indexing one large entry thousands of times;
- a client that never opens its flow-control window: the server must not buffer the response body and must
  give up on the write after its timeout (peregrine --request-timeout).

The RFC names no code for floods; ENHANCE_YOUR_CALM is the code RFC 9113 §7 defines for "excessive load".
$H2SPEC_STALL_WAIT (seconds, default 6) is how long the stalled-window case waits for the server to give up.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

import pytest

pytest.register_assert_rewrite("h2wire", "h2support")
from h2support import TIMEOUT  # noqa: E402
from h2wire import (  # noqa: E402
    E,
    F,
    FrameConn,
    ServerClosedError,
    T,
    assert_still_serving,
    code_name,
    encode,
    expect_connection_error,
    frame,
    hp_indexed,
    hp_literal,
    request_headers,
    rst_payload,
)

pytest_plugins = ("h2support",)
pytestmark = pytest.mark.timeout(90)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from h2support import Target, Variant

#: The code a flood must be answered with.
CALM = E.ENHANCE_YOUR_CALM
#: Memory a flood may cost the server (KiB).
MEMORY_SLACK_KIB = 64 * 1024


def drain(conn: FrameConn) -> bool:
    """Read the frames already available; False once the server has closed."""
    try:
        while conn.read(0.001) is not None:
            pass
    except ServerClosedError:
        return False
    return True


def flood(conn: FrameConn, batches: Iterator[bytes], *, read_between: bool = True) -> int:
    """Send batches until they run out, a send stalls, or the server closes or sends GOAWAY; return batches sent."""
    sent = 0
    for batch in batches:
        conn.send(batch)
        if conn.send_failed:
            break
        sent += 1
        if read_between and (not drain(conn) or conn.goaway is not None):
            break
    return sent


def expect_calm(conn: FrameConn) -> None:
    """GOAWAY ENHANCE_YOUR_CALM, the connection closed, a new connection served."""
    expect_connection_error(conn, CALM)


def unread_flood(target: Target, unit: bytes, count: int, answer: Callable[[object], bool]) -> None:
    """Send `count` copies of `unit` from a client that does not read, then read: the server must have given up
    with GOAWAY ENHANCE_YOUR_CALM (or closed before answering everything), its memory bounded."""
    baseline = target.rss_kib()
    conn = FrameConn.open(target, receive_buffer=4096)
    conn.send_timeout = 3.0
    batch = 5000
    sent = flood(conn, (unit * batch for _ in range(count // batch)), read_between=False) * batch
    grown = target.rss_kib() - baseline
    answers = 0
    closed = False
    try:
        while True:
            got = conn.read(TIMEOUT)
            if got is None:
                break
            if answer(got.frame):
                answers += 1
            if got.kind == T.GOAWAY:
                break
    except ServerClosedError:
        closed = True
    summary = f"sent {sent} (send stalled: {conn.send_failed}), {answers} answered, closed: {closed}"
    assert grown < MEMORY_SLACK_KIB, f"the server grew by {grown} KiB during the flood; {summary}"
    if conn.goaway is not None:
        assert conn.goaway.error_code == CALM, f"GOAWAY {code_name(conn.goaway.error_code)}; {summary}"
        assert conn.closes(), "no close after GOAWAY"
    else:
        # The GOAWAY cannot always reach a client that does not read; the server must still have dropped it.
        assert closed, f"the server neither sent GOAWAY {code_name(CALM)} nor closed the connection; {summary}"
        assert answers < sent, f"the server answered every frame and then closed; {summary}"
    conn.close()
    assert_still_serving(target)


def test_rapid_reset_gets_enhance_your_calm(target: Target) -> None:
    """RFC 9113 §10.5 (CVE-2023-44487): HEADERS + RST_STREAM pairs in a loop end in GOAWAY ENHANCE_YOUR_CALM."""
    with FrameConn.open(target) as conn:
        block = encode(request_headers(target, "/hello"))

        def batches() -> Iterator[bytes]:
            stream_id = 1
            for _ in range(40):
                pairs = []
                for _ in range(250):
                    pairs.append(frame(T.HEADERS, F.END_STREAM | F.END_HEADERS, stream_id, block))
                    pairs.append(frame(T.RST_STREAM, 0, stream_id, rst_payload(E.CANCEL)))
                    stream_id += 2
                yield b"".join(pairs)

        flood(conn, batches())
        expect_calm(conn)


def test_continuation_flood_gets_enhance_your_calm(target: Target) -> None:
    """RFC 9113 §10.5 (CONTINUATION flood): a field block growing through endless CONTINUATION frames is cut off
    with GOAWAY ENHANCE_YOUR_CALM, not buffered."""
    with FrameConn.open(target) as conn:
        conn.headers(1, encode(request_headers(target, "/hello")), end_headers=False)

        def batches() -> Iterator[bytes]:
            for number in range(100):
                yield b"".join(
                    frame(T.CONTINUATION, 0, 1, hp_literal(f"x-flood-{number}-{i}", "v" * 100)) for i in range(300)
                )

        baseline = target.rss_kib()
        flood(conn, batches())
        assert target.rss_kib() - baseline < MEMORY_SLACK_KIB
        expect_calm(conn)


def test_empty_continuation_flood_gets_enhance_your_calm(target: Target) -> None:
    """RFC 9113 §10.5 (CONTINUATION flood, CPU variant): endless empty CONTINUATION frames are cut off with
    GOAWAY ENHANCE_YOUR_CALM."""
    with FrameConn.open(target) as conn:
        conn.headers(1, encode(request_headers(target, "/hello")), end_headers=False)
        unit = frame(T.CONTINUATION, 0, 1, b"")
        flood(conn, (unit * 10000 for _ in range(20)))
        expect_calm(conn)


def test_ping_flood_while_not_reading_gets_enhance_your_calm(target: Target) -> None:
    """RFC 9113 §10.5 (CVE-2019-9512): PINGs from a client that never reads the ACKs end in GOAWAY
    ENHANCE_YOUR_CALM; the server does not queue ACKs without bound."""
    unread_flood(target, frame(T.PING, 0, 0, b"floodpng"), 100000, lambda f: type(f).__name__ == "PingFrame")


def test_settings_flood_while_not_reading_gets_enhance_your_calm(target: Target) -> None:
    """RFC 9113 §10.5 (CVE-2019-9515): SETTINGS frames (each owed an ACK) from a client that never reads end in
    GOAWAY ENHANCE_YOUR_CALM."""
    unread_flood(target, frame(T.SETTINGS, 0, 0, b""), 100000, lambda f: type(f).__name__ == "SettingsFrame")


def test_zero_length_data_flood_gets_enhance_your_calm(target: Target) -> None:
    """RFC 9113 §10.5 (CVE-2019-9518): endless empty DATA frames on an open stream end in GOAWAY
    ENHANCE_YOUR_CALM."""
    with FrameConn.open(target) as conn:
        stream_id = conn.request("/echo", "POST", end_stream=False)
        unit = frame(T.DATA, 0, stream_id, b"")
        flood(conn, (unit * 10000 for _ in range(20)))
        expect_calm(conn)


def test_hpack_bomb_gets_enhance_your_calm(target: Target) -> None:
    """RFC 7541 §7.3, RFC 9113 §10.5.1: one 4000-octet entry indexed 4000 times (a 9 kB block decoding to 16 MB)
    is a connection error ENHANCE_YOUR_CALM, not a 16 MB header list."""
    with FrameConn.open(target) as conn:
        baseline = target.rss_kib()
        block = (
            encode(request_headers(target, "/headers/bomb"))
            + hp_literal("x-bomb", "b" * 4000, mode="incremental")
            + hp_indexed(62) * 4000
        )
        conn.headers(1, block)
        expect_calm(conn)
        assert target.rss_kib() - baseline < MEMORY_SLACK_KIB
    assert not [event for event in target.events() if event.endswith("/headers/bomb")], "the bomb reached the app"


def test_client_that_never_opens_its_window(variant: Variant, fresh_target: Callable[..., Target]) -> None:
    """RFC 9113 §6.9, §10.5: a client that reads but never sends WINDOW_UPDATE for two 64 MiB responses: the
    server keeps at most a bounded amount buffered (no memory growth) and gives up on the stalled write after its
    timeout (peregrine --request-timeout 1000): RST_STREAM or GOAWAY, or the connection closed."""
    target = fresh_target(variant, peregrine_options=("--request-timeout", "1000"))
    assert_still_serving(target)
    baseline = target.rss_kib()
    size = 64 << 20
    with FrameConn.open(target) as conn:
        conn.auto_window = False
        streams = [conn.request(f"/large?size={size}&chunk=1048576") for _ in range(2)]
        started = time.monotonic()
        peak = baseline
        given_up = False
        while time.monotonic() - started < float(os.environ.get("H2SPEC_STALL_WAIT", "6")):
            try:
                conn.read(0.2)
            except ServerClosedError:
                given_up = True
                break
            peak = max(peak, target.rss_kib())
            if conn.goaway is not None or all(conn.stream_state(s).reset is not None for s in streams):
                given_up = True
                break
        elapsed = time.monotonic() - started
        sent = sum(len(conn.stream_state(s).data) for s in streams)
    assert sent <= 65535, f"the server sent {sent} octets beyond the connection window"
    assert peak - baseline < MEMORY_SLACK_KIB, f"the server grew by {peak - baseline} KiB for a stalled client"
    assert given_up, f"the server still held the stalled streams after {elapsed:.1f}s; {conn.log()}"
    assert_still_serving(target)
