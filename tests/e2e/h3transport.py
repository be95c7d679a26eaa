"""An httpx transport that speaks HTTP/3 (RFC 9114) with aioquic, so that tests written for `httpx.Client` run
over QUIC unchanged: `httpx.Client(base_url="https://127.0.0.1:PORT", transport=H3Transport(ca=...))`.

One transport is one QUIC connection, opened on the first request and reused for every later one, each request
on a new bidirectional stream (as a browser does). aioquic is asynchronous and httpx's client here is not, so
the connection lives on an event loop in a thread of its own; `handle_request` hands a request to that loop and
returns as soon as the response's header section has arrived, with a body stream the loop fills as DATA frames
come in: a streamed response reaches the caller chunk by chunk, not once it is complete.

Responses say `http_version` "HTTP/3" (httpx reads `extensions["http_version"]`). Errors come back as httpx's:
a connection that cannot be made or is closed under a request raises `httpx.ConnectError`/`httpx.ReadError`, a
stream the server resets raises `httpx.RemoteProtocolError` naming the HTTP/3 error code, and a wait past the
timeout `httpx.ReadTimeout`.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import httpx
import pytest

aioquic = pytest.importorskip("aioquic")

from aioquic.asyncio.client import connect  # noqa: E402
from aioquic.asyncio.protocol import QuicConnectionProtocol, QuicStreamHandler  # noqa: E402
from aioquic.h3.connection import H3_ALPN, H3Connection  # noqa: E402
from aioquic.h3.events import DataReceived, H3Event, HeadersReceived  # noqa: E402
from aioquic.quic.configuration import QuicConfiguration  # noqa: E402
from aioquic.quic.events import ConnectionTerminated, QuicEvent, StreamReset  # noqa: E402

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from aioquic.quic.connection import QuicConnection

#: Fields HTTP/3 forbids in a request (RFC 9114 §4.2: connection-specific fields are malformed; `host` becomes
#: `:authority`, §4.3.1), all of which httpx adds for HTTP/1.1.
CONNECTION_SPECIFIC = frozenset({b"host", b"connection", b"keep-alive", b"proxy-connection", b"transfer-encoding",
                                 b"upgrade", b"te"})  # fmt: skip


class _End:
    """The body's end marker in a stream's queue."""


END = _End()


@dataclass
class _Exchange:
    """One request's stream, as the loop thread fills it and the caller's thread drains it."""

    head: Future[tuple[int, list[tuple[bytes, bytes]]]] = field(default_factory=Future)
    body: queue.Queue[bytes | _End | Exception] = field(default_factory=queue.Queue)

    def fail(self, error: Exception) -> None:
        if not self.head.done():
            self.head.set_exception(error)
        self.body.put(error)


class _Protocol(QuicConnectionProtocol):
    def __init__(self, quic: QuicConnection, stream_handler: QuicStreamHandler | None = None) -> None:
        super().__init__(quic, stream_handler)
        self.http = H3Connection(self._quic)
        self.exchanges: dict[int, _Exchange] = {}
        self.closed: Exception | None = None

    def quic_event_received(self, event: QuicEvent) -> None:
        if isinstance(event, StreamReset):
            exchange = self.exchanges.pop(event.stream_id, None)
            if exchange is not None:
                exchange.fail(httpx.RemoteProtocolError(f"stream reset by the server (code {event.error_code:#x})"))
        elif isinstance(event, ConnectionTerminated):
            self.closed = httpx.ReadError(f"connection closed (code {event.error_code:#x}: {event.reason_phrase})")
            for exchange in self.exchanges.values():
                exchange.fail(self.closed)
            self.exchanges.clear()
        for h3_event in self.http.handle_event(event):
            self._h3_event(h3_event)

    def _h3_event(self, event: H3Event) -> None:
        if not isinstance(event, HeadersReceived | DataReceived):
            return
        exchange = self.exchanges.get(event.stream_id)
        if exchange is None:
            return
        if isinstance(event, HeadersReceived):
            status = int(dict(event.headers).get(b":status", b"0"))
            if not exchange.head.done() and status >= 200:  # 1xx are interim (RFC 9114 §4.1); later: trailers
                fields = [(name, value) for name, value in event.headers if not name.startswith(b":")]
                exchange.head.set_result((status, fields))
        elif event.data:
            exchange.body.put(event.data)
        if event.stream_ended:
            del self.exchanges[event.stream_id]
            if not exchange.head.done():
                exchange.head.set_exception(httpx.RemoteProtocolError("stream ended without a final response"))
            exchange.body.put(END)

    def start(self, fields: list[tuple[bytes, bytes]], body: bytes) -> _Exchange:
        """Send one request on a new stream (on the loop's thread)."""
        if self.closed is not None:
            raise self.closed
        stream_id = self._quic.get_next_available_stream_id()
        exchange = _Exchange()
        self.exchanges[stream_id] = exchange
        self.http.send_headers(stream_id, fields, end_stream=not body)
        if body:
            self.http.send_data(stream_id, body, end_stream=True)
        self.transmit()
        return exchange


class _Body(httpx.SyncByteStream):
    def __init__(self, exchange: _Exchange, timeout: float) -> None:
        self.exchange = exchange
        self.timeout = timeout

    def __iter__(self) -> Iterator[bytes]:
        while True:
            try:
                chunk = self.exchange.body.get(timeout=self.timeout)
            except queue.Empty:
                raise httpx.ReadTimeout("no response data in time") from None
            if isinstance(chunk, _End):
                return
            if isinstance(chunk, Exception):
                raise chunk
            yield chunk


class H3Transport(httpx.BaseTransport):
    """HTTP/3 to one server for an `httpx.Client` (its `base_url` names the host and port)."""

    def __init__(self, ca: Path | None = None, timeout: float = 20.0) -> None:
        self.ca = ca
        self.timeout = timeout
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="h3-transport", daemon=True)
        self._thread.start()
        self._protocol: _Protocol | None = None
        self._origin: tuple[str, int] | None = None
        self._stop: asyncio.Event | None = None
        self._connection: Future[None] | None = None

    def _configuration(self, host: str) -> QuicConfiguration:
        configuration = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, server_name=host)
        if self.ca is not None:
            configuration.load_verify_locations(str(self.ca))
        return configuration

    def _open(self, host: str, port: int) -> _Protocol:
        """Connect (once) and keep the connection open on the loop until `close`."""
        if self._protocol is not None:
            if self._origin != (host, port):
                raise httpx.UnsupportedProtocol("one H3Transport talks to one origin")
            return self._protocol
        ready: Future[_Protocol] = Future()

        async def hold() -> None:
            self._stop = asyncio.Event()
            try:
                async with connect(host, port, configuration=self._configuration(host), create_protocol=_Protocol,
                                   wait_connected=True) as client:  # fmt: skip
                    assert isinstance(client, _Protocol)
                    ready.set_result(client)
                    await self._stop.wait()
            except Exception as error:  # noqa: BLE001 - handed to the caller's thread, which raises it
                if not ready.done():
                    ready.set_exception(error)

        self._connection = asyncio.run_coroutine_threadsafe(hold(), self._loop)
        try:
            self._protocol = ready.result(timeout=self.timeout)
        except FutureTimeout:
            raise httpx.ConnectTimeout(f"no QUIC handshake with {host}:{port}") from None
        except (ConnectionError, OSError) as error:
            raise httpx.ConnectError(str(error)) from error
        self._origin = (host, port)
        return self._protocol

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        host, port = url.host, url.port or 443
        protocol = self._open(host, port)
        body = request.read()
        authority = f"{host}:{port}".encode()
        fields = [(b":method", request.method.encode()), (b":scheme", url.scheme.encode()),
                  (b":authority", authority), (b":path", url.raw_path)]  # fmt: skip
        fields += [(name.lower(), value) for name, value in request.headers.raw
                   if name.lower() not in CONNECTION_SPECIFIC]  # fmt: skip
        if body and not any(name == b"content-length" for name, _ in fields):
            fields.append((b"content-length", str(len(body)).encode()))
        started: Future[_Exchange] = Future()

        def start() -> None:
            try:
                started.set_result(protocol.start(fields, body))
            except Exception as error:  # noqa: BLE001 - raised in the caller's thread
                started.set_exception(error)

        self._loop.call_soon_threadsafe(start)
        exchange = started.result(timeout=self.timeout)
        try:
            status, headers = exchange.head.result(timeout=self.timeout)
        except FutureTimeout:
            raise httpx.ReadTimeout("no response head in time") from None
        return httpx.Response(
            status, headers=headers, stream=_Body(exchange, self.timeout), extensions={"http_version": b"HTTP/3"}
        )

    def close(self) -> None:
        """Close the connection (CONNECTION_CLOSE, H3_NO_ERROR) and stop the loop's thread."""
        if self._stop is not None and self._connection is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
            # A connection already gone (closed by the server, failed) is closed too.
            with contextlib.suppress(FutureTimeout, Exception):
                self._connection.result(timeout=5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self._loop.close()
