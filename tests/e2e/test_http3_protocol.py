"""HTTP/3 protocol robustness against aioquic (RFC 9114, RFC 9204, RFC 9000; TRANSPORT.md "HTTP/3").

aioquic's client sends what the tests build by hand: malformed field
sections, frames in the wrong order or on the wrong stream, extra critical
streams, resets and STOP_SENDING mid-exchange, key updates, garbage
datagrams. Each test names the rule it checks and asserts the server's exact
verdict (RESET_STREAM / STOP_SENDING or CONNECTION_CLOSE code), that the
application never saw a request it must not see, and that the server keeps
serving: the same connection after a stream error, a new connection after a
connection error. The applications are tests/apps/h3_apps.py.

Servers: the malformed-request and connection-error sweeps share one server
per interface (every later test proves the earlier ones left it healthy);
tests that need options of their own start a fresh server.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import socket
import time
from typing import TYPE_CHECKING

import pytest

pytest.importorskip("aioquic")

from aioquic.buffer import encode_uint_var
from aioquic.h3.connection import (
    ErrorCode,
    FrameType,
    H3Connection,
    StreamType,
    encode_frame,
    encode_settings,
)
from aioquic.quic.packet import QuicProtocolVersion
from aioquic.tls import Epoch
from h3client import H3Client, H3Response, _Protocol, frame_types

if TYPE_CHECKING:
    from collections.abc import Callable

    from tls_support import TLSFiles

    from conftest import Server, ServerPool

pytest_plugins = ("tls_support",)

TARGETS = ["h3_apps:wsgi", "h3_apps:asgi"]
#: SETTINGS_MAX_FIELD_SECTION_SIZE (RFC 9114 §7.2.4.1).
MAX_FIELD_SECTION_SIZE = 0x06
Headers = list[tuple[bytes, bytes]]


def client(server: Server, files: TLSFiles, **settings: object) -> H3Client:
    return H3Client(port=server.port, ca=files.ca, **settings)  # type: ignore[arg-type]


@pytest.fixture(params=TARGETS)
def shared(request: pytest.FixtureRequest, server_pool: ServerPool, tls_files: TLSFiles) -> Server:
    """The shared HTTP/3 server of one interface."""
    return server_pool.get(request.param, *tls_files.server_options("--http3"))


@pytest.fixture
def h3_server(tls_server: Callable[..., Server]) -> Callable[..., Server]:
    def starter(target: str, *options: str) -> Server:
        return tls_server(target, "--http3", *options)

    return starter


def new_events(server: Server, before: int) -> list[str]:
    return server.events()[before:]


def calls_since(server: Server, before: int) -> list[str]:
    return [e for e in new_events(server, before) if e.startswith("call ")]


def wait_for_events(server: Server, before: int, wanted: Callable[[list[str]], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if wanted(new_events(server, before)):
            return True
        time.sleep(0.02)
    return wanted(new_events(server, before))


async def hello(c: _Protocol) -> H3Response:
    """A normal request on the same connection."""
    stream_id = c.open(c.fields(), end_stream=True)
    c.transmit()
    return await c.response(stream_id)


# MARK: - Malformed requests: stream errors (RFC 9114 §4.1.2)


def _drop(fields: Headers, name: bytes) -> Headers:
    return [(k, v) for k, v in fields if k != name]


def _replace(fields: Headers, name: bytes, value: bytes) -> Headers:
    return [(k, value if k == name else v) for k, v in fields]


#: Requests §4.1.2 calls malformed, each built from a well-formed head:
#: "treated as a stream error of type H3_MESSAGE_ERROR".
MALFORMED: dict[str, Callable[[Headers], Headers]] = {
    # §4.3.1: "All HTTP/3 requests MUST include exactly one value for the
    # :method, :scheme, and :path pseudo-header fields, unless the request
    # is a CONNECT request".
    "missing :method": lambda f: _drop(f, b":method"),
    "missing :scheme": lambda f: _drop(f, b":scheme"),
    "missing :path": lambda f: _drop(f, b":path"),
    "duplicate :method": lambda f: [f[0], *f],
    "duplicate :path": lambda f: [*f, (b":path", b"/other")],
    # §4.3.1: ":path ... MUST NOT be empty for "http" or "https" URIs".
    "empty :path": lambda f: _replace(f, b":path", b""),
    # §4.3: "All pseudo-header fields MUST appear in the header section before
    # regular header fields."
    "pseudo-header after a field": lambda f: [*_drop(f, b":path"), (b"x-a", b"1"), (b":path", b"/hello")],
    # §4.3: undefined pseudo-header fields, and response ones in a request.
    "unknown pseudo-header": lambda f: [*f, (b":foo", b"bar")],
    "response pseudo-header": lambda f: [*f, (b":status", b"200")],
    # §4.2: "A request or response containing uppercase characters in field
    # names MUST be treated as malformed."
    "uppercase field name": lambda f: [*f, (b"X-Upper", b"1")],
    # §4.2: connection-specific fields.
    "connection": lambda f: [*f, (b"connection", b"keep-alive")],
    "keep-alive": lambda f: [*f, (b"keep-alive", b"timeout=5")],
    "proxy-connection": lambda f: [*f, (b"proxy-connection", b"keep-alive")],
    "transfer-encoding": lambda f: [*f, (b"transfer-encoding", b"chunked")],
    "upgrade": lambda f: [*f, (b"upgrade", b"websocket")],
    # §4.2: "TE ... MUST NOT contain any value other than "trailers"".
    "te other than trailers": lambda f: [*f, (b"te", b"gzip")],
    # RFC 9220 §3: :protocol only where SETTINGS_ENABLE_CONNECT_PROTOCOL was sent (we do not).
    ":protocol": lambda f: [*f, (b":protocol", b"websocket")],
    # §4.4: CONNECT omits :scheme and :path.
    "CONNECT with :path": lambda f: _replace(f, b":method", b"CONNECT"),
    # RFC 9110 §5.5: CR, LF and NUL are never valid in a field value (§4.2 of 9114 defers to it).
    "CR LF in a value": lambda f: [*f, (b"x-split", b"a\r\nx-injected: 1")],
    "NUL in a value": lambda f: [*f, (b"x-nul", b"a\x00b")],
    "space in a name": lambda f: [*f, (b"x bad", b"1")],
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_request_is_a_stream_error(shared: Server, tls_files: TLSFiles, case: str) -> None:
    """§4.1.2: H3_MESSAGE_ERROR on that stream (RESET_STREAM); the application never sees
    it, and the connection serves the next request."""
    before = len(shared.events())

    async def work(c: _Protocol) -> tuple[H3Response, H3Response, int | None]:
        bad = c.open(MALFORMED[case](c.fields()), end_stream=True)
        c.transmit()
        response = await c.response(bad)
        return response, await hello(c), c.terminated

    bad, good, terminated = client(shared, tls_files).session(work)
    assert bad.status == 0, f"{case}: answered {bad.status} instead of a stream error"
    assert bad.reset_code == ErrorCode.H3_MESSAGE_ERROR
    assert terminated is None
    assert good.status == 200
    assert good.body == b"hello"
    assert calls_since(shared, before) == ["call GET /hello"]


def test_malformed_request_mid_body_stops_the_upload(shared: Server, tls_files: TLSFiles) -> None:
    """A malformed head on a stream the client has not finished: RESET_STREAM and STOP_SENDING
    (RFC 9000 §3.5), both H3_MESSAGE_ERROR."""

    async def work(c: _Protocol) -> tuple[int | None, int | None, H3Response]:
        bad = c.open([*c.fields(b"POST", b"/echo"), (b"connection", b"close")])
        c.http.send_data(bad, b"x" * 1000, end_stream=False)
        c.transmit()
        await c.until(lambda: bad in c.resets and bad in c.stops, 5)
        return c.resets.get(bad), c.stops.get(bad), await hello(c)

    reset, stop, good = client(shared, tls_files).session(work)
    assert reset == ErrorCode.H3_MESSAGE_ERROR
    assert stop == ErrorCode.H3_MESSAGE_ERROR
    assert good.status == 200


@pytest.mark.parametrize(("declared", "sent"), [(10, 5), (3, 5), (5, 0)])
def test_content_length_mismatch_is_a_stream_error(
    shared: Server, tls_files: TLSFiles, declared: int, sent: int
) -> None:
    """§4.1.2: "malformed if the value of the Content-Length header field does not equal the
    sum of the DATA frame lengths received"."""

    async def work(c: _Protocol) -> tuple[H3Response, H3Response]:
        bad = c.open([*c.fields(b"POST", b"/echo"), (b"content-length", b"%d" % declared)], end_stream=sent == 0)
        if sent:
            c.http.send_data(bad, b"y" * sent, end_stream=True)
        c.transmit()
        return await c.response(bad), await hello(c)

    bad, good = client(shared, tls_files).session(work)
    assert bad.status == 0
    assert bad.reset_code == ErrorCode.H3_MESSAGE_ERROR
    assert good.status == 200


def test_second_head_is_malformed_trailers(shared: Server, tls_files: TLSFiles) -> None:
    """§4.1: a HEADERS frame after the head is the trailer section, and §4.3: "Pseudo-header
    fields MUST NOT appear in trailer sections" — a second request head is H3_MESSAGE_ERROR."""

    async def work(c: _Protocol) -> tuple[H3Response, H3Response]:
        bad = c.open(c.fields(b"POST", b"/echo"))
        c.http.send_data(bad, b"body", end_stream=False)
        c.send_frame(bad, FrameType.HEADERS, c.headers_payload(bad, c.fields(b"GET", b"/hello")), end_stream=True)
        c.transmit()
        return await c.response(bad), await hello(c)

    bad, good = client(shared, tls_files).session(work)
    assert bad.status == 0
    assert bad.reset_code == ErrorCode.H3_MESSAGE_ERROR
    assert good.status == 200


def test_unknown_frame_types_on_a_request_stream_are_ignored(shared: Server, tls_files: TLSFiles) -> None:
    """§9: "Implementations MUST ignore unknown or unsupported values in all extensible protocol
    elements"; reserved types 0x1f * N + 0x21 (§7.2.8) before, between and after the frames."""

    async def work(c: _Protocol) -> H3Response:
        stream_id = c.open([*c.fields(b"POST", b"/echo"), (b"content-length", b"6")])
        c.send_frame(stream_id, 0x21, b"grease")
        c.http.send_data(stream_id, b"abc", end_stream=False)
        c.send_frame(stream_id, 0x1F * 7 + 0x21, b"")
        c.http.send_data(stream_id, b"def", end_stream=False)
        c.send_frame(stream_id, 0x1F * 1000 + 0x21, b"z" * 100, end_stream=True)
        c.transmit()
        return await c.response(stream_id)

    response = client(shared, tls_files).session(work)
    assert response.status == 200
    assert json.loads(response.body)["length"] == 6


# MARK: - Invalid frame sequences: connection errors (RFC 9114 §4.1, §7.2)


def _data_first(c: _Protocol, s: int) -> None:
    c.send_frame(s, FrameType.DATA, b"early")
    c.send_frame(s, FrameType.HEADERS, c.headers_payload(s, c.fields()), end_stream=True)


def _data_after_trailers(c: _Protocol, s: int) -> None:
    c.send_frame(s, FrameType.HEADERS, c.headers_payload(s, c.fields(b"POST", b"/echo")))
    c.send_frame(s, FrameType.HEADERS, c.headers_payload(s, [(b"x-trailer", b"1")]))
    c.send_frame(s, FrameType.DATA, b"late", end_stream=True)


def _headers_after_trailers(c: _Protocol, s: int) -> None:
    c.send_frame(s, FrameType.HEADERS, c.headers_payload(s, c.fields(b"POST", b"/echo")))
    c.send_frame(s, FrameType.HEADERS, c.headers_payload(s, [(b"x-trailer", b"1")]))
    c.send_frame(s, FrameType.HEADERS, c.headers_payload(s, [(b"x-trailer", b"2")]), end_stream=True)


def _frame_on_request(frame_type: int, payload: bytes) -> Callable[[_Protocol, int], None]:
    def send(c: _Protocol, s: int) -> None:
        c.send_frame(s, FrameType.HEADERS, c.headers_payload(s, c.fields(b"POST", b"/echo")))
        c.send_frame(s, frame_type, payload, end_stream=True)

    return send


#: Request-stream frame sequences that are connection errors.
SEQUENCES: dict[str, tuple[Callable[[_Protocol, int], None], int]] = {
    # §4.1: "a DATA frame before any HEADERS frame, or a HEADERS or DATA frame
    # after the trailing HEADERS frame, is considered invalid" → H3_FRAME_UNEXPECTED.
    "DATA before HEADERS": (_data_first, ErrorCode.H3_FRAME_UNEXPECTED),
    "DATA after trailers": (_data_after_trailers, ErrorCode.H3_FRAME_UNEXPECTED),
    "HEADERS after trailers": (_headers_after_trailers, ErrorCode.H3_FRAME_UNEXPECTED),
    # §7.2.3, §7.2.4, §7.2.6, §7.2.7: control frames on a request stream.
    "SETTINGS": (_frame_on_request(FrameType.SETTINGS, b""), ErrorCode.H3_FRAME_UNEXPECTED),
    "GOAWAY": (_frame_on_request(FrameType.GOAWAY, encode_uint_var(0)), ErrorCode.H3_FRAME_UNEXPECTED),
    "MAX_PUSH_ID": (_frame_on_request(FrameType.MAX_PUSH_ID, encode_uint_var(9)), ErrorCode.H3_FRAME_UNEXPECTED),
    "CANCEL_PUSH": (_frame_on_request(FrameType.CANCEL_PUSH, encode_uint_var(0)), ErrorCode.H3_FRAME_UNEXPECTED),
    # §7.2.5: "A client MUST NOT send a PUSH_PROMISE frame."
    "PUSH_PROMISE": (_frame_on_request(FrameType.PUSH_PROMISE, encode_uint_var(0)), ErrorCode.H3_FRAME_UNEXPECTED),
    # §7.2.8: HTTP/2 frame types (PRIORITY, PING, WINDOW_UPDATE, CONTINUATION).
    "HTTP/2 PRIORITY": (_frame_on_request(0x02, b"\x00" * 5), ErrorCode.H3_FRAME_UNEXPECTED),
    "HTTP/2 PING": (_frame_on_request(0x06, b"\x00" * 8), ErrorCode.H3_FRAME_UNEXPECTED),
    "HTTP/2 WINDOW_UPDATE": (_frame_on_request(0x08, b"\x00" * 4), ErrorCode.H3_FRAME_UNEXPECTED),
    "HTTP/2 CONTINUATION": (_frame_on_request(0x09, b""), ErrorCode.H3_FRAME_UNEXPECTED),
    # §7.1: "if the last frame on the stream was truncated, this MUST be
    # treated as a connection error of type H3_FRAME_ERROR".
    "truncated frame at FIN": (_frame_on_request(FrameType.DATA, b""), ErrorCode.H3_FRAME_ERROR),
    # RFC 9204 §3.1 (§2.2.3): "an invalid static table index in a field line
    # representation MUST be treated as a connection error of type
    # QPACK_DECOMPRESSION_FAILED" (the static table has 99 entries).
    "QPACK static index 100": (
        lambda c, s: c.send_frame(s, FrameType.HEADERS, b"\x00\x00\xff\x25", end_stream=True),
        ErrorCode.QPACK_DECOMPRESSION_FAILED,
    ),
}


def _truncate(sequence: Callable[[_Protocol, int], None]) -> Callable[[_Protocol, int], None]:
    """The frame header says 10 bytes, the stream ends after 2."""

    def send(c: _Protocol, s: int) -> None:
        c.send_frame(s, FrameType.HEADERS, c.headers_payload(s, c.fields(b"POST", b"/echo")))
        c.send_raw(s, encode_uint_var(FrameType.DATA) + encode_uint_var(10) + b"ab", end_stream=True)

    return send


SEQUENCES["truncated frame at FIN"] = (_truncate(_data_first), ErrorCode.H3_FRAME_ERROR)


@pytest.mark.parametrize("case", list(SEQUENCES))
def test_invalid_request_frame_sequence_closes_the_connection(shared: Server, tls_files: TLSFiles, case: str) -> None:
    """The connection error's code in CONNECTION_CLOSE; the worker serves a new connection."""
    send, code = SEQUENCES[case]
    before = len(shared.events())

    async def work(c: _Protocol) -> int | None:
        stream_id = c._quic.get_next_available_stream_id()
        c.track(stream_id)
        send(c, stream_id)
        c.transmit()
        closed = await c.closed_by_server()
        return None if closed is None else closed.error_code

    assert client(shared, tls_files).session(work) == code, case
    assert client(shared, tls_files).request("GET", "/hello").status == 200
    assert [e for e in calls_since(shared, before) if e != "call POST /echo"] == ["call GET /hello"]


# MARK: - Control and critical streams: connection errors (RFC 9114 §6.2, §7.2; RFC 9204 §4.2)


def _on_control(frame_type: int, payload: bytes) -> Callable[[_Protocol], None]:
    def send(c: _Protocol) -> None:
        c.send_frame(c.control_stream, frame_type, payload)

    return send


def _second_control(c: _Protocol) -> None:
    s = c.open_uni(StreamType.CONTROL)
    c.send_frame(s, FrameType.SETTINGS, encode_settings({}))


def _second_encoder(c: _Protocol) -> None:
    c.open_uni(StreamType.QPACK_ENCODER)


def _second_decoder(c: _Protocol) -> None:
    c.open_uni(StreamType.QPACK_DECODER)


def _push_stream(c: _Protocol) -> None:
    s = c.open_uni(StreamType.PUSH)
    c.send_raw(s, encode_uint_var(0))


def _close_control(c: _Protocol) -> None:
    c.send_raw(c.control_stream, b"", end_stream=True)


def _reset_control(c: _Protocol) -> None:
    c._quic.reset_stream(c.control_stream, ErrorCode.H3_NO_ERROR)


def _close_encoder(c: _Protocol) -> None:
    c.send_raw(c.encoder_stream, b"", end_stream=True)


def _stop_server_control(c: _Protocol) -> None:
    # The server's control stream is its first unidirectional stream (3).
    c._quic.stop_stream(3, ErrorCode.H3_NO_ERROR)


def _goaway_up(c: _Protocol) -> None:
    c.send_frame(c.control_stream, FrameType.GOAWAY, encode_uint_var(4))
    c.send_frame(c.control_stream, FrameType.GOAWAY, encode_uint_var(8))


def _capacity_too_large(c: _Protocol) -> None:
    # RFC 9204 §4.3.1 Set Dynamic Table Capacity (001 + 5-bit prefix) of 8192,
    # above the 4096 the server advertised.
    c.send_raw(c.encoder_stream, bytes([0x3F, 0xE1, 0x3F]))


#: What the client does on its control or critical streams, and the code it earns.
CONTROL: dict[str, tuple[Callable[[_Protocol], None], int]] = {
    # §7.2.1, §7.2.2: DATA and HEADERS are not allowed on the control stream.
    "DATA on the control stream": (_on_control(FrameType.DATA, b"x"), ErrorCode.H3_FRAME_UNEXPECTED),
    "HEADERS on the control stream": (_on_control(FrameType.HEADERS, b"\x00\x00"), ErrorCode.H3_FRAME_UNEXPECTED),
    # §7.2.4: "If an endpoint receives a second SETTINGS frame on the control
    # stream, the endpoint MUST respond with a connection error of type H3_FRAME_UNEXPECTED."
    "second SETTINGS": (_on_control(FrameType.SETTINGS, encode_settings({})), ErrorCode.H3_FRAME_UNEXPECTED),
    "PUSH_PROMISE on the control stream": (
        _on_control(FrameType.PUSH_PROMISE, encode_uint_var(0)),
        ErrorCode.H3_FRAME_UNEXPECTED,
    ),
    "HTTP/2 frame type on the control stream": (_on_control(0x06, b"\x00" * 8), ErrorCode.H3_FRAME_UNEXPECTED),
    # §7.2.6: GOAWAY identifiers never increase.
    "GOAWAY identifier increased": (_goaway_up, ErrorCode.H3_ID_ERROR),
    # §7.2.7: "cannot reduce the maximum push ID" (aioquic sent 8).
    "MAX_PUSH_ID decreased": (_on_control(FrameType.MAX_PUSH_ID, encode_uint_var(2)), ErrorCode.H3_ID_ERROR),
    # §6.2.1: "Only one control stream per peer is permitted; receipt of a
    # second stream claiming to be a control stream MUST be treated as a
    # connection error of type H3_STREAM_CREATION_ERROR."
    "second control stream": (_second_control, ErrorCode.H3_STREAM_CREATION_ERROR),
    # RFC 9204 §4.2: "Receipt of a second instance of either stream type MUST
    # be treated as a connection error of type H3_STREAM_CREATION_ERROR."
    "second QPACK encoder stream": (_second_encoder, ErrorCode.H3_STREAM_CREATION_ERROR),
    "second QPACK decoder stream": (_second_decoder, ErrorCode.H3_STREAM_CREATION_ERROR),
    # §6.2.2: "Only servers can push; if a server receives a client-initiated
    # push stream, this MUST be treated as a connection error of type H3_STREAM_CREATION_ERROR."
    "client push stream": (_push_stream, ErrorCode.H3_STREAM_CREATION_ERROR),
    # §6.2.1: "If either control stream is closed at any point, this MUST be
    # treated as a connection error of type H3_CLOSED_CRITICAL_STREAM."
    "control stream closed": (_close_control, ErrorCode.H3_CLOSED_CRITICAL_STREAM),
    "control stream reset": (_reset_control, ErrorCode.H3_CLOSED_CRITICAL_STREAM),
    # RFC 9204 §4.2: "Closure of either unidirectional stream type MUST be
    # treated as a connection error of type H3_CLOSED_CRITICAL_STREAM."
    "QPACK encoder stream closed": (_close_encoder, ErrorCode.H3_CLOSED_CRITICAL_STREAM),
    # §6.2.1 / RFC 9204 §4.2: the receiver "MUST NOT request that the sender
    # close" a critical stream; STOP_SENDING for it closes the connection.
    "STOP_SENDING for the server's control stream": (_stop_server_control, ErrorCode.H3_CLOSED_CRITICAL_STREAM),
    # RFC 9204 §4.3.1: "The decoder MUST treat a new dynamic table capacity
    # value that exceeds this limit as a connection error of type QPACK_ENCODER_STREAM_ERROR."
    "QPACK capacity above the limit": (_capacity_too_large, ErrorCode.QPACK_ENCODER_STREAM_ERROR),
}


@pytest.mark.parametrize("case", list(CONTROL))
def test_control_stream_violation_closes_the_connection(shared: Server, tls_files: TLSFiles, case: str) -> None:
    send, code = CONTROL[case]

    async def work(c: _Protocol) -> int | None:
        # The server's SETTINGS first: the connection is fully up.
        assert await c.until(lambda: c.http.received_settings is not None, 5)
        send(c)
        c.transmit()
        closed = await c.closed_by_server()
        return None if closed is None else closed.error_code

    assert client(shared, tls_files).session(work) == code, case
    assert client(shared, tls_files).request("GET", "/hello").status == 200


def test_settings_with_an_http2_identifier(
    shared: Server, tls_files: TLSFiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    """§7.2.4.1: HTTP/2 setting identifiers (here 0x02, SETTINGS_ENABLE_PUSH) "MUST be treated
    as a connection error of type H3_SETTINGS_ERROR"."""
    original = H3Connection._get_local_settings

    def with_http2_setting(self: H3Connection) -> dict[int, int]:
        return {**original(self), 0x02: 0}

    monkeypatch.setattr(H3Connection, "_get_local_settings", with_http2_setting)

    async def work(c: _Protocol) -> int | None:
        closed = await c.closed_by_server()
        return None if closed is None else closed.error_code

    assert client(shared, tls_files).session(work) == ErrorCode.H3_SETTINGS_ERROR
    monkeypatch.undo()
    assert client(shared, tls_files).request("GET", "/hello").status == 200


def test_control_stream_must_start_with_settings(
    shared: Server, tls_files: TLSFiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    """§6.2.1: "If the first frame of the control stream is any other frame type, this MUST be
    treated as a connection error of type H3_MISSING_SETTINGS.\""""

    def init_without_settings(self: H3Connection) -> None:
        self._local_control_stream_id = self._create_uni_stream(StreamType.CONTROL)
        self._quic.send_stream_data(
            self._local_control_stream_id, encode_frame(FrameType.MAX_PUSH_ID, encode_uint_var(8))
        )
        self._local_encoder_stream_id = self._create_uni_stream(StreamType.QPACK_ENCODER)
        self._local_decoder_stream_id = self._create_uni_stream(StreamType.QPACK_DECODER)

    monkeypatch.setattr(H3Connection, "_init_connection", init_without_settings)

    async def work(c: _Protocol) -> int | None:
        closed = await c.closed_by_server()
        return None if closed is None else closed.error_code

    assert client(shared, tls_files).session(work) == ErrorCode.H3_MISSING_SETTINGS
    monkeypatch.undo()
    assert client(shared, tls_files).request("GET", "/hello").status == 200


def test_unknown_unidirectional_stream_is_stopped_not_fatal(shared: Server, tls_files: TLSFiles) -> None:
    """§6.2: "Recipients of unknown stream types MUST either abort reading of the stream or
    discard incoming data without further processing. If reading is aborted, the recipient
    SHOULD use the H3_STREAM_CREATION_ERROR error code" — and the connection goes on."""

    async def work(c: _Protocol) -> tuple[int | None, H3Response, object]:
        s = c.open_uni(0x21 + 0x1F * 3)
        c.send_raw(s, b"whatever follows")
        c.transmit()
        await c.until(lambda: s in c.stops, 5)
        return c.stops.get(s), await hello(c), c.terminated

    stop, good, terminated = client(shared, tls_files).session(work)
    assert stop == ErrorCode.H3_STREAM_CREATION_ERROR
    assert good.status == 200
    assert terminated is None


# MARK: - Helpers used by the sections below


def udp_send(port: int, datagrams: list[bytes]) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for d in datagrams:
            sock.sendto(d, ("127.0.0.1", port))


# MARK: - The client gives up: RESET_STREAM and STOP_SENDING (RFC 9114 §4.1.1, RFC 9000 §3.5)


def _ident(name: str) -> str:
    return f"{name}-{os.getpid()}-{time.monotonic_ns()}"


def _logged(server: Server, before: int, *prefixes: str) -> Callable[[], str | None]:
    def find() -> str | None:
        for e in new_events(server, before):
            if e.startswith(prefixes):
                return e
        return None

    return find


def test_client_reset_mid_body(shared: Server, tls_files: TLSFiles) -> None:
    """The client resets its request stream halfway through the body: ASGI's receive() says
    http.disconnect, WSGI's wsgi.input read raises; the server cancels its side
    (H3_REQUEST_CANCELLED) and the connection goes on serving."""
    ident = _ident("reset-body")
    before = len(shared.events())
    ended = _logged(
        shared, before, f"disconnect {ident} ", f"read-error {ident} ", f"complete {ident} ", f"read-short {ident} "
    )

    async def work(c: _Protocol) -> tuple[int | None, H3Response]:
        s = c.open([*c.fields(b"POST", f"/reader?id={ident}".encode()), (b"content-length", b"1000000")])
        c.http.send_data(s, b"a" * 100_000, end_stream=False)
        c.transmit()
        assert await c.until(lambda: f"body {ident}" in new_events(shared, before), 10), "no body reached the app"
        c._quic.reset_stream(s, ErrorCode.H3_REQUEST_CANCELLED)
        c.transmit()
        assert await c.until(lambda: ended() is not None, 10), "the application never learned of the reset"
        await c.until(lambda: s in c.resets, 5)
        return c.resets.get(s), await hello(c)

    reset, good = client(shared, tls_files).session(work)
    outcome = ended()
    assert outcome is not None
    if shared.args[-1].endswith("asgi"):
        assert outcome.startswith(f"disconnect {ident} ")
        assert 0 < int(outcome.split()[-1]) < 1_000_000
    else:
        assert outcome.startswith(f"read-error {ident} ")
    assert reset == ErrorCode.H3_REQUEST_CANCELLED
    assert good.status == 200


@pytest.mark.parametrize("how", ["reset", "stop-sending"])
def test_client_abandons_the_response(shared: Server, tls_files: TLSFiles, how: str) -> None:
    """Mid-response, the client sends RESET_STREAM and STOP_SENDING (its request unfinished), or
    only STOP_SENDING (request complete). RFC 9000 §3.5: the server answers STOP_SENDING with
    RESET_STREAM; the application stops (ASGI: http.disconnect; WSGI: the iterable is closed
    early) and the connection serves the next request."""
    ident = _ident(how)
    before = len(shared.events())
    count = 20_000
    path = f"/drip?id={ident}&chunk=16384&count={count}".encode()
    ended = _logged(shared, before, f"disconnect {ident}", f"closed {ident} ", f"send-error {ident} ")

    async def work(c: _Protocol) -> tuple[int | None, H3Response]:
        s = c.open(c.fields(b"GET", path), end_stream=how == "stop-sending")
        c.transmit()
        assert await c.until(lambda: len(c.raw.get(s, b"")) > 40_000, 10), "no response body arrived"
        if how == "reset":
            c._quic.reset_stream(s, ErrorCode.H3_REQUEST_CANCELLED)
        c._quic.stop_stream(s, ErrorCode.H3_REQUEST_CANCELLED)
        c.transmit()
        assert await c.until(lambda: s in c.resets, 10), "the server did not reset its response"
        assert await c.until(lambda: ended() is not None, 10), "the application never learned of it"
        return c.resets.get(s), await hello(c)

    reset, good = client(shared, tls_files, timeout=60.0).session(work)
    outcome = ended()
    assert outcome is not None
    if shared.args[-1].endswith("asgi"):
        assert wait_for_events(shared, before, lambda e: f"disconnect {ident}" in e)
    else:
        assert outcome.startswith(f"closed {ident} after ")
        assert int(outcome.split()[-1]) < count
    assert reset == ErrorCode.H3_REQUEST_CANCELLED
    assert good.status == 200


# MARK: - Message shape: trailers, interim responses, bodiless responses (RFC 9114 §4.1)


def http_frames(raw: bytes) -> list[int]:
    """The DATA and HEADERS frames of a stream, in order (reserved types, §7.2.8, left out)."""
    return [t for t in frame_types(raw) if t in (FrameType.DATA, FrameType.HEADERS)]


def collapse(types: list[int]) -> list[int]:
    """Runs of DATA frames as one."""
    out: list[int] = []
    for t in types:
        if not (out and t == out[-1] == FrameType.DATA):
            out.append(t)
    return out


def test_request_trailers_end_the_body(shared: Server, tls_files: TLSFiles) -> None:
    """§4.1: a HEADERS frame after the DATA is the trailer section and completes the request.
    Neither WSGI nor ASGI hands request trailers to the application: it sees the whole body
    and its end."""
    body = os.urandom(50_000)

    async def work(c: _Protocol) -> H3Response:
        s = c.open([*c.fields(b"POST", b"/echo"), (b"content-length", b"%d" % len(body)), (b"trailer", b"x-sum")])
        c.http.send_data(s, body, end_stream=False)
        c.http.send_headers(s, [(b"x-sum", b"abc")], end_stream=True)
        c.transmit()
        return await c.response(s)

    response = client(shared, tls_files).session(work)
    assert response.status == 200
    assert json.loads(response.body)["length"] == len(body)


def test_request_trailers_without_fin(shared: Server, tls_files: TLSFiles) -> None:
    """The trailers end the request even before the client's FIN arrives."""

    async def work(c: _Protocol) -> H3Response:
        s = c.open(c.fields(b"POST", b"/echo"))
        c.http.send_data(s, b"12345", end_stream=False)
        c.send_frame(s, FrameType.HEADERS, c.headers_payload(s, [(b"x-sum", b"abc")]))
        c.transmit()
        return await c.response(s)

    response = client(shared, tls_files).session(work)
    assert response.status == 200
    assert json.loads(response.body)["length"] == 5


def test_response_trailers_are_a_trailing_headers_frame(server_pool: ServerPool, tls_files: TLSFiles) -> None:
    """ASGI http.response.trailers: HEADERS, DATA, then a HEADERS frame with the trailer fields
    (§4.1), which carries no pseudo-header field (§4.3)."""
    server = server_pool.get("h3_apps:asgi", *tls_files.server_options("--http3"))

    async def work(c: _Protocol) -> tuple[H3Response, bytes]:
        s = c.open(c.fields(b"GET", b"/trailers"), end_stream=True)
        c.transmit()
        return await c.response(s), bytes(c.raw[s])

    response, raw = client(server, tls_files).session(work)
    assert response.status == 200
    assert response.body == b"part one,part two"
    assert response.trailers == [(b"x-checksum", b"sha256-of-body")]
    assert collapse(http_frames(raw)) == [FrameType.HEADERS, FrameType.DATA, FrameType.HEADERS]


def test_early_hints_precede_the_final_head(server_pool: ServerPool, tls_files: TLSFiles) -> None:
    """ASGI http.response.early_hint: a 103 HEADERS frame before the final response's (§4.1:
    "zero or more interim responses ... precede a final HTTP response")."""
    server = server_pool.get("h3_apps:asgi", *tls_files.server_options("--http3"))

    async def work(c: _Protocol) -> tuple[H3Response, bytes]:
        s = c.open(c.fields(b"GET", b"/early-hint"), end_stream=True)
        c.transmit()
        return await c.response(s), bytes(c.raw[s])

    response, raw = client(server, tls_files).session(work)
    assert response.status == 200
    assert response.body == b"final"
    assert [dict(h)[b":status"] for h in response.informational] == [b"103"]
    assert (b"link", b"</style.css>; rel=preload; as=style") in response.informational[0]
    assert collapse(http_frames(raw)) == [FrameType.HEADERS, FrameType.HEADERS, FrameType.DATA]


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("HEAD", "/head", 200),
        ("GET", "/status?code=204", 204),
        ("GET", "/status?code=304", 304),
        ("HEAD", "/status?code=404", 404),
    ],
)
def test_bodiless_responses_carry_no_data(
    shared: Server, tls_files: TLSFiles, method: str, path: str, status: int
) -> None:
    """RFC 9110 §9.3.2, §15.3.5, §15.4.5: HEAD, 204 and 304 have no content, so the stream
    carries the HEADERS frame and no DATA frame; HEAD keeps the Content-Length of the GET."""

    async def work(c: _Protocol) -> tuple[H3Response, bytes]:
        s = c.open(c.fields(method.encode(), path.encode()), end_stream=True)
        c.transmit()
        return await c.response(s), bytes(c.raw[s])

    response, raw = client(shared, tls_files).session(work)
    assert response.status == status
    assert response.body == b""
    assert http_frames(raw) == [FrameType.HEADERS]
    if path == "/head":
        assert response.header(b"content-length") == b"10"


# MARK: - Limits


@pytest.mark.parametrize("target", TARGETS)
def test_streams_beyond_the_limit_wait_for_max_streams(
    h3_server: Callable[..., Server], tls_files: TLSFiles, target: str
) -> None:
    """--http3-max-streams 2 is initial_max_streams_bidi (RFC 9000 §4.6): the client's third
    concurrent request waits, blocked, until a finished stream brings MAX_STREAMS (§19.11) —
    every request succeeds, and never more than two run at once."""
    server = h3_server(target, "--http3-max-streams", "2")

    async def work(c: _Protocol) -> tuple[list[H3Response], int]:
        streams = [c.open(c.fields(b"GET", b"/slow?ms=300"), end_stream=True) for _ in range(6)]
        c.transmit()
        blocked = len(c._quic._streams_blocked_bidi)
        return [await c.response(s, timeout=20) for s in streams], blocked

    responses, blocked = client(server, tls_files, timeout=40.0).session(work)
    assert blocked == 4, "aioquic should hold the streams beyond the server's limit"
    assert [r.status for r in responses] == [200] * 6
    assert [r.body for r in responses] == [b"slept"] * 6
    peaks = [int(e.split()[1]) for e in server.events() if e.startswith("active ")]
    assert len(peaks) == 6
    assert max(peaks) == (2 if target.endswith("asgi") else 1)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("declared", [True, False])
def test_max_body(h3_server: Callable[..., Server], tls_files: TLSFiles, target: str, declared: bool) -> None:
    """--max-body over HTTP/3: a body over the limit is answered 413, whether its Content-Length
    announced it or the DATA frames crossed it; the connection serves the next request."""
    server = h3_server(target, "--max-body", "1k")
    body = b"z" * 5000

    async def work(c: _Protocol) -> tuple[H3Response, H3Response, H3Response]:
        fields = c.fields(b"POST", b"/echo")
        if declared:
            fields.append((b"content-length", b"%d" % len(body)))
        s = c.open(fields)
        c.http.send_data(s, body, end_stream=True)
        small = c.open([*c.fields(b"POST", b"/echo"), (b"content-length", b"1000")])
        c.http.send_data(small, b"s" * 1000, end_stream=True)
        c.transmit()
        return await c.response(s), await c.response(small), await hello(c)

    big, small, good = client(server, tls_files).session(work)
    assert big.status == 413
    assert small.status == 200
    assert json.loads(small.body)["length"] == 1000
    assert good.status == 200


def test_head_over_the_field_section_limit_is_431(shared: Server, tls_files: TLSFiles) -> None:
    """§4.2.2: over our SETTINGS_MAX_FIELD_SECTION_SIZE (--max-header-size; name + value + 32 per
    field) the server answers 431 itself — the application never sees the request."""
    before = len(shared.events())

    async def work(c: _Protocol) -> tuple[int, H3Response, H3Response]:
        assert await c.until(lambda: c.http.received_settings is not None, 5)
        limit = (c.http.received_settings or {})[MAX_FIELD_SECTION_SIZE]
        s = c.open([*c.fields(b"GET", b"/hello"), (b"x-big", b"b" * limit)], end_stream=True)
        c.transmit()
        return limit, await c.response(s), await hello(c)

    limit, big, good = client(shared, tls_files).session(work)
    assert limit == 32768  # --max-header-size's default
    assert big.status == 431
    assert good.status == 200
    assert calls_since(shared, before) == ["call GET /hello"]


def test_trailers_over_the_field_section_limit(shared: Server, tls_files: TLSFiles) -> None:
    """A trailer section over the limit cannot be answered with 431 any more (the request is
    already with the application): a stream error H3_MESSAGE_ERROR (H3Limits)."""

    async def work(c: _Protocol) -> tuple[H3Response, H3Response]:
        assert await c.until(lambda: c.http.received_settings is not None, 5)
        limit = (c.http.received_settings or {})[MAX_FIELD_SECTION_SIZE]
        s = c.open(c.fields(b"POST", b"/echo"))
        c.http.send_data(s, b"body", end_stream=False)
        c.http.send_headers(s, [(b"x-big", b"b" * limit)], end_stream=True)
        c.transmit()
        return await c.response(s), await hello(c)

    bad, good = client(shared, tls_files).session(work)
    assert bad.status == 0
    assert bad.reset_code == ErrorCode.H3_MESSAGE_ERROR
    assert good.status == 200


def test_headers_frame_over_the_buffer_limit(shared: Server, tls_files: TLSFiles) -> None:
    """A HEADERS frame longer than the session buffers (64 KiB): H3_EXCESSIVE_LOAD on that
    stream before the buffer grows (H3Limits.maxHeadersFrameBytes, §10.5)."""

    async def work(c: _Protocol) -> tuple[H3Response, H3Response]:
        s = c._quic.get_next_available_stream_id()
        c.track(s)
        c.send_frame(s, FrameType.HEADERS, b"\x00\x00" + b"\x20" * 70_000, end_stream=True)
        c.transmit()
        return await c.response(s), await hello(c)

    bad, good = client(shared, tls_files).session(work)
    assert bad.status == 0
    assert bad.reset_code == ErrorCode.H3_EXCESSIVE_LOAD
    assert good.status == 200


def _keep_client_alive(c: _Protocol) -> None:
    """aioquic closes an idle connection by itself (after the smaller of both idle timeouts):
    switched off, so only the server's timer can end it."""
    quic = c._quic
    quic._idle_timeout = lambda: 3600.0  # type: ignore[method-assign]
    quic._close_at = c._loop.time() + 3600.0


@pytest.mark.parametrize(("timeout_ms", "survives"), [(1000, False), (30000, True)])
def test_idle_timeout(h3_server: Callable[..., Server], tls_files: TLSFiles, timeout_ms: int, survives: bool) -> None:
    """--quic-idle-timeout (max_idle_timeout, RFC 9000 §10.1): a connection silent longer than it
    is discarded by the server (silently: no CONNECTION_CLOSE, §10.1), so a request on it after
    2.5 s gets no answer; under the default 30 s the same pause is harmless."""
    server = h3_server("h3_apps:asgi", "--quic-idle-timeout", str(timeout_ms))

    async def work(c: _Protocol) -> tuple[H3Response, H3Response | None]:
        first = await hello(c)
        _keep_client_alive(c)
        await asyncio.sleep(2.5)
        s = c.open(c.fields(), end_stream=True)
        c.transmit()
        try:
            return first, await c.response(s, timeout=3)
        except TimeoutError:
            return first, None

    first, later = client(server, tls_files).session(work)
    assert first.status == 200
    if survives:
        assert later is not None
        assert later.status == 200
    else:
        assert later is None or later.status == 0
    assert client(server, tls_files).request("GET", "/hello").status == 200


@pytest.mark.parametrize("target", TARGETS)
def test_uploads_larger_than_the_flow_control_windows(
    h3_server: Callable[..., Server], tls_files: TLSFiles, target: str
) -> None:
    """--quic-stream-window 64k and --quic-connection-window 128k: four concurrent uploads of
    1 MiB each (far beyond both windows) complete, because the server returns credit
    (MAX_STREAM_DATA, MAX_DATA; RFC 9000 §4.2) as the body is consumed."""
    server = h3_server(target, "--quic-stream-window", "64k", "--quic-connection-window", "128k")
    bodies = [os.urandom(1 << 20) for _ in range(4)]
    responses = client(server, tls_files, timeout=60.0).gather([("POST", "/echo", b) for b in bodies])
    assert [r.status for r in responses] == [200] * 4
    assert [json.loads(r.body) for r in responses] == [
        {"length": len(b), "sha256": hashlib.sha256(b).hexdigest()} for b in bodies
    ]


# MARK: - QUIC: key updates, versions, stray datagrams (RFC 9001 §6, RFC 9369, RFC 9000 §5.2, §6)


def test_client_initiated_key_updates(shared: Server, tls_files: TLSFiles) -> None:
    """RFC 9001 §6: the client flips the key phase three times, a request after each; the server
    follows each update (§6.2: it answers in the new phase, with keys it derived itself) and
    every request is served."""

    async def work(c: _Protocol) -> tuple[list[int], list[int]]:
        statuses = [(await hello(c)).status]
        phases = []
        for _ in range(3):
            c._quic.request_key_update()
            statuses.append((await hello(c)).status)
            # §6.5: the next update only after a packet of this phase was acknowledged.
            await asyncio.sleep(0.2)
            phases.append(c._quic._cryptos[Epoch.ONE_RTT].recv.key_phase)
        return statuses, phases

    statuses, phases = client(shared, tls_files).session(work)
    assert statuses == [200] * 4
    assert phases == [1, 0, 1]


@pytest.mark.parametrize("versions", [["VERSION_2"], ["VERSION_2", "VERSION_1"]])
def test_quic_version_2(shared: Server, tls_files: TLSFiles, versions: list[str]) -> None:
    """RFC 9369: a client that starts with QUIC version 2 is served over version 2."""
    wanted = [QuicProtocolVersion[v] for v in versions]

    def configure(configuration: object) -> None:
        configuration.supported_versions = wanted  # type: ignore[attr-defined]

    c = client(shared, tls_files, configure=configure)
    assert c.request("GET", "/hello").body == b"hello"
    assert c.connection_facts["version"] == QuicProtocolVersion.VERSION_2


def test_client_preferring_version_1_stays_on_it(shared: Server, tls_files: TLSFiles) -> None:
    """A client preferring version 1 stays on version 1 (RFC 9368 §2.1: the server may switch
    only to a compatible version the client listed first)."""

    def configure(configuration: object) -> None:
        configuration.supported_versions = [QuicProtocolVersion.VERSION_1, QuicProtocolVersion.VERSION_2]  # type: ignore[attr-defined]

    c = client(shared, tls_files, configure=configure)
    assert c.request("GET", "/hello").status == 200
    assert c.connection_facts["version"] == QuicProtocolVersion.VERSION_1


def _version_negotiation_probe() -> tuple[bytes, bytes, bytes]:
    """A long header of the reserved version 0x?a?a?a?a (RFC 9000 §15) in a 1200-byte datagram."""
    dcid, scid = os.urandom(8), os.urandom(8)
    header = bytes([0xC0]) + bytes.fromhex("1a2a3a4a") + bytes([len(dcid)]) + dcid + bytes([len(scid)]) + scid
    return header + os.urandom(1200 - len(header)), dcid, scid


def test_unknown_version_gets_version_negotiation(shared: Server) -> None:
    """RFC 9000 §6.1: a first datagram of an unsupported version, at least 1200 bytes, is answered
    with Version Negotiation: version 0, the connection IDs swapped (§17.2.1), and the versions
    we speak (1 and 2)."""
    probe, dcid, scid = _version_negotiation_probe()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(5)
        sock.sendto(probe, ("127.0.0.1", shared.port))
        answer = sock.recv(2048)
    assert answer[0] & 0x80
    assert answer[1:5] == b"\x00\x00\x00\x00"
    assert answer[5] == len(scid)
    assert answer[6 : 6 + len(scid)] == scid
    offset = 6 + len(scid)
    assert answer[offset] == len(dcid)
    assert answer[offset + 1 : offset + 1 + len(dcid)] == dcid
    listed = answer[offset + 1 + len(dcid) :]
    versions = {int.from_bytes(listed[i : i + 4], "big") for i in range(0, len(listed), 4)}
    assert {0x00000001, 0x6B3343CF} <= versions


def _garbage() -> list[bytes]:
    """Datagrams no QUIC endpoint could accept: runts, random bytes, an Initial whose payload fails
    to decrypt, short headers for connections that do not exist, a short unknown-version probe
    (§14.1: too small to answer)."""
    initial = bytes([0xC0]) + (1).to_bytes(4, "big") + bytes([8]) + os.urandom(8) + bytes([8]) + os.urandom(8)
    initial += bytes([0x00]) + encode_uint_var(1200) + os.urandom(1200)
    probe, _, _ = _version_negotiation_probe()
    return [
        b"",
        b"\x00",
        os.urandom(7),
        os.urandom(100),
        os.urandom(1500),
        initial,
        bytes([0x40]) + os.urandom(60),
        bytes([0x40]) + os.urandom(1300),
        probe[:300],
    ]


def test_garbage_datagrams_between_requests(shared: Server, tls_files: TLSFiles) -> None:
    """RFC 9000 §5.2, RFC 9001 §5.5: datagrams that match no connection or fail to decrypt are
    dropped — from other sockets and on the connection's own path, with its connection ID —
    and the connection serves the next request."""

    async def work(c: _Protocol) -> list[int]:
        statuses = [(await hello(c)).status]
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            for d in _garbage():
                sock.sendto(d, ("127.0.0.1", shared.port))
        statuses.append((await hello(c)).status)
        # On this connection's path: a short header with the server's connection ID, then noise.
        transport = c._transport
        assert transport is not None
        server_cid = c._quic._peer_cid.cid
        address = c._quic._network_paths[0].addr
        for size in (1, 20, 200, 1200):
            transport.sendto(bytes([0x40]) + server_cid + os.urandom(size), address)  # type: ignore[attr-defined]
        # And a long-header Initial on it, whose keys are long gone.
        initial = bytes([0xC0]) + (1).to_bytes(4, "big") + bytes([len(server_cid)]) + server_cid + bytes([0, 0])
        transport.sendto(initial + encode_uint_var(1200) + os.urandom(1200), address)  # type: ignore[attr-defined]
        statuses.append((await hello(c)).status)
        return statuses

    assert client(shared, tls_files).session(work) == [200, 200, 200]


def test_forged_initial_leaves_no_connection_behind(h3_server: Callable[..., Server]) -> None:
    """A datagram shaped like a client's first Initial (version 1, 1200 bytes, an 8-byte connection
    ID) whose packet fails authentication (RFC 9001 §5.2) leaves no state: a worker told to stop
    right after has no connection to wait for. (It used to hold one until the graceful timeout.)"""
    server = h3_server("h3_apps:asgi")
    initial = bytes([0xC0]) + (1).to_bytes(4, "big") + bytes([8]) + os.urandom(8) + bytes([8]) + os.urandom(8)
    udp_send(server.port, [initial + bytes([0x00]) + encode_uint_var(1200) + os.urandom(1200)])
    time.sleep(0.3)
    started = time.monotonic()
    assert server.stop() == 0
    assert time.monotonic() - started < 3.0
