"""An HTTP/3 client for the end-to-end tests, on aioquic (an independent QUIC and HTTP/3 stack).

The tests are synchronous; each call here runs its own event loop. One
`H3Client` is one QUIC connection: `request()` sends one request on a new
stream, `gather()` sends many at once on one connection. What the tests want
to see of the connection (the TLS facts, whether it resumed, the cipher
suite) is read from aioquic's connection object after the exchange.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

aioquic = pytest.importorskip("aioquic")

from aioquic.asyncio.client import connect  # noqa: E402
from aioquic.asyncio.protocol import QuicConnectionProtocol  # noqa: E402
from aioquic.buffer import Buffer, BufferReadError  # noqa: E402
from aioquic.h3.connection import H3_ALPN, H3Connection  # noqa: E402
from aioquic.h3.events import DataReceived, H3Event, HeadersReceived  # noqa: E402
from aioquic.quic.configuration import QuicConfiguration  # noqa: E402
from aioquic.quic.events import ConnectionTerminated, QuicEvent, StreamDataReceived, StreamReset  # noqa: E402

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
    from pathlib import Path

    from aioquic.quic.connection import QuicConnection

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
        if isinstance(event, ConnectionTerminated):
            self.terminated = event
            self._terminated.set()
            for waiter in self._done.values():
                if not waiter.done():
                    waiter.set_exception(ConnectionClosedError(event.error_code, event.reason_phrase))
            self._done.clear()
        if isinstance(event, StreamDataReceived) and event.stream_id % 4 == 3:  # server-initiated unidirectional
            self._control.feed(event.stream_id, event.data)
        if isinstance(event, StreamReset) and event.stream_id in self._done:
            response = self._responses[event.stream_id]
            response.reset_code = event.error_code
            self._finish(event.stream_id)
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
        """One request on a new stream; the response, or `reset_code` when the server reset the stream."""
        stream_id = self._quic.get_next_available_stream_id()
        self._responses[stream_id] = H3Response()
        waiter: asyncio.Future[H3Response] = asyncio.get_running_loop().create_future()
        self._done[stream_id] = waiter
        fields = [
            (b":method", method.encode()),
            (b":scheme", b"https"),
            (b":authority", authority.encode()),
            (b":path", path.encode()),
            *headers,
        ]
        if body and not any(k == b"content-length" for k, _ in headers):
            fields.append((b"content-length", str(len(body)).encode()))
        self.http.send_headers(stream_id, fields, end_stream=not body)
        if body:
            self.http.send_data(stream_id, body, end_stream=True)
        self.transmit()
        return await waiter


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
    timeout: float = 20.0
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
            wait_connected=True,
        ) as client:
            assert isinstance(client, _Protocol)
            yield client

    async def _run(self, work: Callable[[_Protocol], Awaitable[Any]]) -> Any:  # noqa: ANN401  (what `work` returns)
        async with self.open() as client:
            result = await work(client)
            quic = client._quic
            tls = quic.tls
            self.connection_facts = {
                "alpn": tls.alpn_negotiated,
                "resumed": tls.session_resumed,
                "cipher_suite": tls.key_schedule.cipher_suite if tls.key_schedule else None,
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
