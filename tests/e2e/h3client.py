"""An HTTP/3 client for the end-to-end tests, on aioquic (an independent QUIC and HTTP/3 stack).

The tests are synchronous; each call here runs its own event loop. One
`H3Client` call is one QUIC connection: `request()` sends one request on a new
stream, `gather()` sends many at once on one connection, and `session()`
runs a coroutine of the test's own against the connection (the `_Protocol`),
which can send what a well-behaved client never would: raw frames, bad
field sections, resets, key updates. What the tests want to see of the
connection (the TLS facts, whether it resumed, the cipher suite, the QUIC
version) is read from aioquic's connection object after the exchange.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

aioquic = pytest.importorskip("aioquic")

from aioquic.asyncio.client import connect  # noqa: E402
from aioquic.asyncio.protocol import QuicConnectionProtocol  # noqa: E402
from aioquic.buffer import Buffer, BufferReadError, encode_uint_var  # noqa: E402
from aioquic.h3.connection import H3_ALPN, H3Connection, encode_frame  # noqa: E402
from aioquic.h3.events import DataReceived, H3Event, HeadersReceived  # noqa: E402
from aioquic.quic.configuration import QuicConfiguration  # noqa: E402
from aioquic.quic.events import (  # noqa: E402
    ConnectionTerminated,
    QuicEvent,
    StopSendingReceived,
    StreamDataReceived,
    StreamReset,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
    from pathlib import Path

    from aioquic.quic.connection import QuicConnection

T = TypeVar("T")

Headers = list[tuple[bytes, bytes]]

#: RFC 9114 §7.2.6.
GOAWAY_FRAME = 0x7
#: RFC 9114 §8.1: the request was not processed (safe to retry, §4.1.1).
H3_REQUEST_REJECTED = 0x10B


class ConnectionClosedError(Exception):
    """The QUIC connection ended while a request waited for its response."""

    def __init__(self, error_code: int, reason: str) -> None:
        super().__init__(f"connection closed (error 0x{error_code:x}: {reason})")
        self.error_code = error_code


class _ControlStreamReader:
    """The server's unidirectional streams read beside aioquic, which skips GOAWAY frames without telling: the
    control stream (type 0x00, RFC 9114 §6.2.1) is parsed frame by frame for the GOAWAY identifiers (§5.2)."""

    def __init__(self) -> None:
        self.goaways: list[int] = []
        self._pending: dict[int, bytearray] = {}
        self._control: int | None = None
        self._ignored: set[int] = set()

    def feed(self, stream_id: int, data: bytes) -> None:
        if stream_id in self._ignored or not data:
            return
        pending = self._pending.setdefault(stream_id, bytearray())
        pending += data
        buffer = Buffer(data=bytes(pending))
        try:
            if self._control != stream_id:
                if buffer.pull_uint_var() != 0x00:
                    self._ignored.add(stream_id)
                    del self._pending[stream_id]
                    return
                self._control = stream_id
                del pending[: buffer.tell()]
                buffer = Buffer(data=bytes(pending))
            while True:
                frame_type = buffer.pull_uint_var()
                payload = buffer.pull_bytes(buffer.pull_uint_var())
                if frame_type == GOAWAY_FRAME:
                    self.goaways.append(Buffer(data=payload).pull_uint_var())
                del pending[: buffer.tell()]
                buffer = Buffer(data=bytes(pending))
        except BufferReadError:
            return  # a frame not complete yet


@dataclass
class H3Response:
    status: int = 0
    headers: Headers = field(default_factory=list)
    body: bytes = b""
    trailers: Headers = field(default_factory=list)
    #: Interim (1xx) heads, in arrival order, with their pseudo-header fields.
    informational: list[Headers] = field(default_factory=list)
    reset_code: int | None = None

    def header(self, name: bytes) -> bytes | None:
        for k, v in self.headers:
            if k == name:
                return v
        return None


class _Protocol(QuicConnectionProtocol):
    def __init__(self, quic: QuicConnection, stream_handler: Any = None) -> None:  # noqa: ANN401  (aioquic's type)
        super().__init__(quic, stream_handler)
        self.http = H3Connection(self._quic)
        self._control = _ControlStreamReader()
        #: How the connection ended, once it did (the peer's CONNECTION_CLOSE, an idle timeout, or ours).
        self.terminated: ConnectionTerminated | None = None
        self._terminated = asyncio.Event()
        #: When the server's CONNECTION_CLOSE arrived (aioquic reports the end only after its draining period,
        #: three of its probe timeouts later, RFC 9000 §10.2.2), and its error code.
        self.close_received: tuple[float, int] | None = None
        self._close_received = asyncio.Event()
        self._responses: dict[int, H3Response] = {}
        self._done: dict[int, asyncio.Future[H3Response]] = {}
        # Bodies grow in place (bytes concatenation would copy the whole
        # body per DATA frame).
        self._bodies: dict[int, bytearray] = {}
        #: RESET_STREAM and STOP_SENDING codes the server sent, by stream.
        self.resets: dict[int, int] = {}
        self.stops: dict[int, int] = {}
        #: The bytes of each request stream as received (frames unparsed).
        self.raw: dict[int, bytearray] = {}
        #: How the connection ended, once it has (the server's CONNECTION_CLOSE).
        self.terminated: ConnectionTerminated | None = None
        #: The :authority the requests carry (set by `H3Client`).
        self.authority = b"localhost"
        # aioquic's client checks a response's Content-Length against its DATA
        # even for HEAD, whose Content-Length is the GET's (RFC 9110 §9.3.2):
        # HEAD streams are exempt.
        self._head_streams: set[int] = set()
        check = self.http._check_content_length

        def check_unless_head(stream: Any) -> None:  # noqa: ANN401 (aioquic's private stream type)
            if stream.stream_id not in self._head_streams:
                check(stream)

        self.http._check_content_length = check_unless_head  # type: ignore[method-assign]

    def datagram_received(self, data: bytes | str, addr: Any) -> None:  # noqa: ANN401  (aioquic's address type)
        super().datagram_received(data, addr)
        # aioquic keeps the peer's close in a private field until its draining period ends.
        close = self._quic._close_event
        if close is not None and self.close_received is None:
            self.close_received = (time.monotonic(), close.error_code)
            self._close_received.set()

    async def wait_close_received(self) -> tuple[float, int]:
        """Wait for the server's CONNECTION_CLOSE; when it came (monotonic) and its error code."""
        await self._close_received.wait()
        assert self.close_received is not None
        return self.close_received

    @property
    def goaways(self) -> list[int]:
        """The GOAWAY identifiers received so far, in order."""
        return self._control.goaways

    def quic_event_received(self, event: QuicEvent) -> None:
        if isinstance(event, StreamDataReceived) and event.stream_id % 4 == 0:
            self.raw.setdefault(event.stream_id, bytearray()).extend(event.data)
        if isinstance(event, StreamDataReceived) and event.stream_id % 4 == 3:  # server-initiated unidirectional
            self._control.feed(event.stream_id, event.data)
        if isinstance(event, StopSendingReceived):
            self.stops[event.stream_id] = event.error_code
        if isinstance(event, StreamReset):
            self.resets[event.stream_id] = event.error_code
            if event.stream_id in self._done:
                self._responses[event.stream_id].reset_code = event.error_code
                self._finish(event.stream_id)
        if isinstance(event, ConnectionTerminated):
            # Waiters finish with what arrived; `request` turns an unfinished
            # response into ConnectionClosedError.
            self.terminated = event
            self._terminated.set()
            for stream_id in list(self._done):
                self._finish(stream_id)
        for h3_event in self.http.handle_event(event):
            self._h3_event(h3_event)

    def _h3_event(self, event: H3Event) -> None:
        if not isinstance(event, HeadersReceived | DataReceived) or event.stream_id not in self._responses:
            return
        response = self._responses[event.stream_id]
        if isinstance(event, HeadersReceived):
            if response.status == 0:
                status = dict(event.headers).get(b":status", b"0")
                if int(status) >= 200:
                    response.status = int(status)
                    response.headers = [(k, v) for k, v in event.headers if not k.startswith(b":")]
                else:
                    response.informational.append(list(event.headers))
            else:
                response.trailers = list(event.headers)
        else:
            self._bodies.setdefault(event.stream_id, bytearray()).extend(event.data)
        if event.stream_ended:
            self._finish(event.stream_id)

    def _finish(self, stream_id: int) -> None:
        self._responses[stream_id].body = bytes(self._bodies.pop(stream_id, b""))
        waiter = self._done.pop(stream_id, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(self._responses[stream_id])

    async def wait_terminated(self) -> ConnectionTerminated:
        """Wait until the connection ends; how it ended."""
        await self._terminated.wait()
        assert self.terminated is not None
        return self.terminated

    async def request(self, method: str, path: str, authority: str, headers: Headers, body: bytes | None) -> H3Response:
        """One request on a new stream; the response, or `reset_code` when the server reset the stream.
        Raises ConnectionClosedError when the connection ends before the response does."""
        fields = [
            (b":method", method.encode()),
            (b":scheme", b"https"),
            (b":authority", authority.encode()),
            (b":path", path.encode()),
            *headers,
        ]
        if body and not any(k == b"content-length" for k, _ in headers):
            fields.append((b"content-length", str(len(body)).encode()))
        stream_id = self.open(fields, end_stream=not body)
        if body:
            self.http.send_data(stream_id, body, end_stream=True)
        self.transmit()
        response = await self.response(stream_id)
        if self.terminated is not None and response.status == 0 and response.reset_code is None:
            raise ConnectionClosedError(self.terminated.error_code, self.terminated.reason_phrase)
        return response

    # MARK: what a test drives by hand

    def fields(self, method: bytes = b"GET", path: bytes = b"/hello", *extra: tuple[bytes, bytes]) -> Headers:
        """A well-formed request head (pseudo-header fields first), then `extra`."""
        return [(b":method", method), (b":scheme", b"https"), (b":authority", self.authority), (b":path", path), *extra]

    def track(self, stream_id: int) -> None:
        """Collects the response on `stream_id` (await it with `response`)."""
        self._responses[stream_id] = H3Response()
        self._done[stream_id] = asyncio.get_running_loop().create_future()

    def open(self, fields: Headers, *, end_stream: bool = False) -> int:
        """A new request stream whose HEADERS carry `fields` exactly as given
        (aioquic's client does not validate what it sends); the response is
        tracked. Not transmitted yet."""
        stream_id = self._quic.get_next_available_stream_id()
        self.track(stream_id)
        if (b":method", b"HEAD") in fields:
            self._head_streams.add(stream_id)
        self.http.send_headers(stream_id, fields, end_stream=end_stream)
        return stream_id

    def headers_payload(self, stream_id: int, fields: Headers) -> bytes:
        """A HEADERS frame payload for `stream_id` (encoder-stream bytes, if
        any, are queued on our QPACK encoder stream)."""
        return self.http._encode_headers(stream_id, fields)

    def send_frame(self, stream_id: int, frame_type: int, payload: bytes, *, end_stream: bool = False) -> None:
        """One frame as raw stream bytes, whatever the HTTP/3 state (not transmitted yet)."""
        self._quic.send_stream_data(stream_id, encode_frame(frame_type, payload), end_stream)

    def send_raw(self, stream_id: int, data: bytes, *, end_stream: bool = False) -> None:
        """Raw bytes on a stream (not transmitted yet)."""
        self._quic.send_stream_data(stream_id, data, end_stream)

    def open_uni(self, stream_type: int) -> int:
        """A new unidirectional stream starting with its type (not transmitted yet)."""
        stream_id = self._quic.get_next_available_stream_id(is_unidirectional=True)
        self._quic.send_stream_data(stream_id, encode_uint_var(stream_type))
        return stream_id

    @property
    def control_stream(self) -> int:
        """Our control stream (aioquic sent SETTINGS and MAX_PUSH_ID on it)."""
        stream_id = self.http._local_control_stream_id
        assert stream_id is not None
        return stream_id

    @property
    def encoder_stream(self) -> int:
        """Our QPACK encoder stream."""
        stream_id = self.http._local_encoder_stream_id
        assert stream_id is not None
        return stream_id

    async def response(self, stream_id: int, timeout: float = 10.0) -> H3Response:
        """The response on a tracked stream, once it ended (FIN, reset, or the connection closed)."""
        waiter = self._done.get(stream_id)
        if waiter is not None:
            await asyncio.wait_for(asyncio.shield(waiter), timeout)
        return self._responses[stream_id]

    async def until(self, predicate: Callable[[], bool], timeout: float = 10.0) -> bool:
        """Whether `predicate` became true within `timeout` seconds (the connection runs meanwhile)."""
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.01)
        return True

    async def closed_by_server(self, timeout: float = 10.0) -> ConnectionTerminated | None:
        """The server's CONNECTION_CLOSE, if one arrives within `timeout`."""
        await self.until(lambda: self.terminated is not None, timeout)
        return self.terminated


#: One open connection of an `H3Client` (see `H3Client.open`).
H3ClientConnection = _Protocol


@dataclass
class H3Client:
    """Settings for one or more HTTP/3 connections to the server under test."""

    port: int
    ca: Path | None = None
    host: str = "127.0.0.1"
    server_name: str = "localhost"
    cipher_suites: Sequence[Any] | None = None
    session_ticket: Any = None
    tickets: list[Any] = field(default_factory=list)
    #: An address-validation token for the Initial (RFC 9000 §8.1.3, from an earlier connection's NEW_TOKEN).
    token: bytes = b""
    #: NEW_TOKEN tokens the server sent, in order.
    new_tokens: list[bytes] = field(default_factory=list)
    timeout: float = 20.0
    #: Adjusts aioquic's settings (QUIC versions, idle timeout, windows) before connecting.
    configure: Callable[[QuicConfiguration], None] | None = None
    connection_facts: dict[str, Any] = field(default_factory=dict)

    def _configuration(self) -> QuicConfiguration:
        configuration = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, server_name=self.server_name)
        if self.ca is not None:
            configuration.load_verify_locations(str(self.ca))
        else:
            configuration.verify_mode = ssl.CERT_NONE
        if self.cipher_suites is not None:
            configuration.cipher_suites = list(self.cipher_suites)
        configuration.session_ticket = self.session_ticket
        configuration.token = self.token
        if self.configure is not None:
            self.configure(configuration)
        return configuration

    @contextlib.asynccontextmanager
    async def open(self) -> AsyncIterator[_Protocol]:
        """One connection, for tests that run their own event loop: `async with client.open() as connection`
        (an `H3ClientConnection`: `await connection.request(...)`, `connection.goaways`)."""
        async with connect(
            self.host,
            self.port,
            configuration=self._configuration(),
            create_protocol=_Protocol,
            session_ticket_handler=self.tickets.append,
            token_handler=self.new_tokens.append,
            wait_connected=True,
        ) as client:
            assert isinstance(client, _Protocol)
            client.authority = f"{self.server_name}:{self.port}".encode()
            yield client

    async def _run(self, work: Callable[[_Protocol], Awaitable[T]]) -> T:
        async with self.open() as client:
            result = await work(client)
            quic = client._quic
            tls = quic.tls
            self.connection_facts = {
                "alpn": tls.alpn_negotiated,
                "resumed": tls.session_resumed,
                "cipher_suite": tls.key_schedule.cipher_suite if tls.key_schedule else None,
                "version": quic._version,
                # aioquic followed a Retry (and checked retry_source_connection_id, RFC 9000 §7.3).
                "retried": quic._retry_count > 0,
                # The server's connection ID in use and its stateless reset token (RFC 9000 §10.3).
                "peer_cid": quic._peer_cid.cid,
                "stateless_reset_token": quic._peer_cid.stateless_reset_token,
            }
            return result

    def request(
        self, method: str = "GET", path: str = "/", headers: Headers | None = None, body: bytes | None = None
    ) -> H3Response:
        async def work(client: _Protocol) -> H3Response:
            return await client.request(method, path, f"localhost:{self.port}", headers or [], body)

        return asyncio.run(asyncio.wait_for(self._run(work), self.timeout))

    def gather(self, requests: Sequence[tuple[str, str, bytes | None]]) -> list[H3Response]:
        """Sends every (method, path, body) at once on one connection."""

        async def work(client: _Protocol) -> list[H3Response]:
            authority = f"localhost:{self.port}"
            return list(await asyncio.gather(*(client.request(m, p, authority, [], b) for m, p, b in requests)))

        return asyncio.run(asyncio.wait_for(self._run(work), self.timeout))

    def session(self, work: Callable[[_Protocol], Awaitable[T]]) -> T:
        """Runs `work(connection)` on one new connection; its result."""
        return asyncio.run(asyncio.wait_for(self._run(work), self.timeout))


def frame_types(stream: bytes) -> list[int]:
    """The types of the HTTP/3 frames in a stream's bytes, in order (RFC 9114 §7.1)."""
    types = []
    offset = 0
    while offset < len(stream):
        frame_type, offset = _varint(stream, offset)
        length, offset = _varint(stream, offset)
        types.append(frame_type)
        offset += length
    return types


def _varint(data: bytes, offset: int) -> tuple[int, int]:
    """RFC 9000 §16: a variable-length integer at `offset`; the value and the offset after it."""
    size = 1 << (data[offset] >> 6)
    value = data[offset] & 0x3F
    for byte in data[offset + 1 : offset + size]:
        value = (value << 8) | byte
    return value, offset + size
