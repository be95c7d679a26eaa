"""A WebTransport client (draft-ietf-webtrans-http3-02) for the end-to-end tests, on aioquic.

aioquic's `H3Connection(enable_webtransport=True)` speaks draft-02: the
SETTINGS_ENABLE_WEBTRANSPORT codepoint 0x2b603742, the `webtransport` upgrade
token, the WEBTRANSPORT_STREAM signal 0x41 on bidirectional streams and stream
type 0x54 on unidirectional ones, datagrams prefixed by the quarter stream ID
(RFC 9297 §2.1). What it leaves to its user, this module does: the CONNECT
request (draft-02 §3.2), the CLOSE_WEBTRANSPORT_SESSION capsule (0x2843, §5) in
DATA frames on the CONNECT stream both ways, and the mapping of stream reset
codes between WebTransport's 8-bit codes and HTTP/3's error space (§4.3).

The tests are synchronous; one `WebTransportClient.run()` is one QUIC connection
and one session, running a coroutine of the test's own against a `WTSession`::

    async def scenario(session: WTSession) -> bytes:
        stream = await session.open_stream()
        session.send(stream, b"ping", end=True)
        data = await session.read(stream)
        session.close_session(0, "done")
        return data

    assert WebTransportClient(port).run("/wt", scenario) == b"ping"

`echo_scenario()` is the common scenario of the three WebTransport clients
(this one, wtclient_pywebtransport.py, wt_chromium.py): JSON in, JSON out.
"""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

aioquic = pytest.importorskip("aioquic")

from aioquic.asyncio.client import connect  # noqa: E402
from aioquic.asyncio.protocol import QuicConnectionProtocol  # noqa: E402
from aioquic.buffer import Buffer, BufferReadError, encode_uint_var  # noqa: E402
from aioquic.h3.connection import H3_ALPN, FrameType, H3Connection  # noqa: E402
from aioquic.h3.events import (  # noqa: E402
    DatagramReceived,
    DataReceived,
    H3Event,
    HeadersReceived,
    WebTransportStreamDataReceived,
)
from aioquic.quic.configuration import QuicConfiguration  # noqa: E402
from aioquic.quic.events import ConnectionTerminated, QuicEvent, StopSendingReceived, StreamReset  # noqa: E402

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from aioquic.quic.connection import QuicConnection

T = TypeVar("T")
Headers = list[tuple[bytes, bytes]]

#: draft-02 §5 (also the current draft's WT_CLOSE_SESSION).
CLOSE_WEBTRANSPORT_SESSION = 0x2843
#: draft-02 §4.3: the HTTP/3 error codes 0x52e4a40fa8db..0x52e4a40fa9e2 carry WebTransport codes 0x00..0xff.
FIRST_WT_ERROR = 0x52E4A40FA8DB
LAST_WT_ERROR = 0x52E4A40FA9E2
#: draft-02 §5: the longest Application Error Message.
MAX_CLOSE_REASON = 1024


def webtransport_code_to_http3(code: int) -> int:
    """draft-02 §4.3: skip the reserved codepoints 0x1f * N + 0x21 inside the range."""
    if not 0 <= code <= 0xFF:
        raise ValueError(f"a draft-02 WebTransport stream error code is 8 bits, not {code}")
    return FIRST_WT_ERROR + code + code // 0x1E


def http3_code_to_webtransport(code: int) -> int | None:
    """draft-02 §4.3, the inverse; None for a code outside the range or on a reserved codepoint."""
    if not FIRST_WT_ERROR <= code <= LAST_WT_ERROR or (code - 0x21) % 0x1F == 0:
        return None
    shifted = code - FIRST_WT_ERROR
    return shifted - shifted // 0x1F


def encode_close_capsule(code: int, reason: str) -> bytes:
    """CLOSE_WEBTRANSPORT_SESSION {Type (i), Length (i), Application Error Code (32), Message (..)}."""
    message = reason.encode()
    if len(message) > MAX_CLOSE_REASON:
        raise ValueError("a close reason is at most 1024 bytes")
    payload = code.to_bytes(4, "big") + message
    return encode_uint_var(CLOSE_WEBTRANSPORT_SESSION) + encode_uint_var(len(payload)) + payload


class SessionRefusedError(Exception):
    """The server answered the CONNECT with a status other than 2xx."""

    def __init__(self, status: int, headers: Headers) -> None:
        super().__init__(f"WebTransport session refused with {status}")
        self.status = status
        self.headers = headers


@dataclass
class _Stream:
    data: bytearray = field(default_factory=bytearray)
    ended: bool = False
    #: The server's RESET_STREAM, as a WebTransport code (None for a code outside the range).
    reset: int | None = None
    was_reset: bool = False
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def wake(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()


class WTSession(QuicConnectionProtocol):
    """One QUIC connection carrying one WebTransport session (made by `WebTransportClient.run`)."""

    def __init__(self, quic: QuicConnection, stream_handler: Any = None) -> None:  # noqa: ANN401 (aioquic's type)
        super().__init__(quic, stream_handler)
        self.http = H3Connection(self._quic, enable_webtransport=True)
        self.session_id = -1
        self.status = 0
        self.response_headers: Headers = []
        self._response = asyncio.get_event_loop().create_future()
        self._streams: dict[int, _Stream] = {}
        self._incoming: asyncio.Queue[tuple[int, bool]] = asyncio.Queue()
        self._datagrams: asyncio.Queue[bytes] = asyncio.Queue()
        self._capsules = bytearray()
        #: The server's STOP_SENDING, by stream, as WebTransport codes.
        self.stops: dict[int, int | None] = {}
        #: (code, reason) from the server's close capsule, or (0, "") for a FIN without one (draft-02 §5).
        self.close_info: tuple[int, str] | None = None
        self._closed = asyncio.Event()
        self.terminated: ConnectionTerminated | None = None
        #: Other sessions on this connection (`open_another_session`) and plain requests (`get`), by stream.
        self._others: dict[int, asyncio.Future[tuple[int, Headers]]] = {}
        self._bodies: dict[int, bytearray] = {}
        self._ended: dict[int, asyncio.Future[None]] = {}

    # -- what a scenario calls ------------------------------------------------------------------------

    async def open_session(self, authority: str, path: str, headers: Headers) -> None:
        """Send the extended CONNECT (draft-02 §3.2) and wait for the response; raises on a refusal."""
        self.session_id = self._quic.get_next_available_stream_id()
        self.http.send_headers(
            self.session_id,
            [
                (b":method", b"CONNECT"),
                (b":protocol", b"webtransport"),
                (b":scheme", b"https"),
                (b":authority", authority.encode()),
                (b":path", path.encode()),
                (b"sec-webtransport-http3-draft02", b"1"),
                *headers,
            ],
        )
        self.transmit()
        await self._response
        if not 200 <= self.status <= 299:
            raise SessionRefusedError(self.status, self.response_headers)

    async def open_another_session(self, path: str, headers: Headers | None = None) -> int:
        """A second session on this connection (draft-02 §3.4 allows several); its CONNECT stream ID. Its
        streams are opened with `open_stream(session_id=...)`; its close is not tracked."""
        stream_id = self._quic.get_next_available_stream_id()
        self._others[stream_id] = asyncio.get_event_loop().create_future()
        authority = self._quic.configuration.server_name or "localhost"
        self.http.send_headers(
            stream_id,
            [(b":method", b"CONNECT"), (b":protocol", b"webtransport"), (b":scheme", b"https"),
             (b":authority", authority.encode()), (b":path", path.encode()),
             (b"sec-webtransport-http3-draft02", b"1"), *(headers or [])],
        )  # fmt: skip
        self.transmit()
        status, _ = await self._others[stream_id]
        if not 200 <= status <= 299:
            raise SessionRefusedError(status, [])
        return stream_id

    async def get(self, path: str) -> tuple[int, bytes]:
        """A plain HTTP/3 GET on this connection, beside the session: (status, body)."""
        stream_id = self._quic.get_next_available_stream_id()
        self._others[stream_id] = asyncio.get_event_loop().create_future()
        self._ended[stream_id] = asyncio.get_event_loop().create_future()
        self._bodies[stream_id] = bytearray()
        authority = self._quic.configuration.server_name or "localhost"
        self.http.send_headers(
            stream_id,
            [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", authority.encode()),
             (b":path", path.encode())],
            end_stream=True,
        )  # fmt: skip
        self.transmit()
        status, _ = await self._others[stream_id]
        await self._ended[stream_id]
        return status, bytes(self._bodies[stream_id])

    async def open_stream(self, *, unidirectional: bool = False, session_id: int | None = None) -> int:
        """A new client stream of the session (its header goes out with the first `send`)."""
        session = self.session_id if session_id is None else session_id
        stream_id = self.http.create_webtransport_stream(session, is_unidirectional=unidirectional)
        if not unidirectional:
            # The server's side of our bidirectional stream carries no WEBTRANSPORT_STREAM header (draft-02 §4.2,
            # only the opener sends it), but aioquic would parse it as HTTP/3 frames: mark it as already past one.
            with self.http._get_or_create_stream(stream_id) as h3_stream:
                h3_stream.frame_type = FrameType.WEBTRANSPORT_STREAM
                h3_stream.session_id = session
        self._streams.setdefault(stream_id, _Stream())
        return stream_id

    def send(self, stream_id: int, data: bytes, *, end: bool = False) -> None:
        self._quic.send_stream_data(stream_id, data, end_stream=end)
        self.transmit()

    def reset(self, stream_id: int, code: int) -> None:
        """RESET_STREAM with a WebTransport code (mapped, draft-02 §4.3)."""
        self._quic.reset_stream(stream_id, webtransport_code_to_http3(code))
        self.transmit()

    def stop(self, stream_id: int, code: int) -> None:
        """STOP_SENDING with a WebTransport code (mapped, draft-02 §4.3)."""
        self._quic.stop_stream(stream_id, webtransport_code_to_http3(code))
        self.transmit()

    async def read(self, stream_id: int, *, size: int | None = None) -> bytes:
        """The stream's bytes until its FIN (or until `size` bytes, for servers that never end streams).
        Raises `ConnectionResetError` if the server reset it first."""
        stream = self._streams.setdefault(stream_id, _Stream())
        while not (stream.ended or stream.was_reset or (size is not None and len(stream.data) >= size)):
            if self.terminated is not None:
                raise ConnectionError(f"connection ended while reading stream {stream_id}: {self.terminated}")
            await stream.changed.wait()
        if stream.was_reset and not stream.ended:
            raise ConnectionResetError(f"stream {stream_id} reset with WebTransport code {stream.reset}")
        return bytes(stream.data)

    def reset_code(self, stream_id: int) -> int | None:
        """The WebTransport code of the server's RESET_STREAM on the stream, if it reset it."""
        stream = self._streams.get(stream_id)
        return None if stream is None else stream.reset

    async def accept_stream(self) -> tuple[int, bool]:
        """The next stream the server opened: (stream ID, unidirectional)."""
        return await self._incoming.get()

    def send_datagram(self, data: bytes) -> None:
        self.http.send_datagram(self.session_id, data)
        self.transmit()

    async def receive_datagram(self) -> bytes:
        return await self._datagrams.get()

    def close_session(self, code: int = 0, reason: str = "") -> None:
        """Send CLOSE_WEBTRANSPORT_SESSION and FIN the CONNECT stream (draft-02 §5)."""
        self.http.send_data(self.session_id, encode_close_capsule(code, reason), end_stream=True)
        self.transmit()

    def finish_session(self) -> None:
        """FIN the CONNECT stream without a capsule (the same as close_session(0, ""), draft-02 §5)."""
        self.http.send_data(self.session_id, b"", end_stream=True)
        self.transmit()

    async def wait_closed(self) -> tuple[int, str]:
        """Wait for the server to end the session; its (code, reason)."""
        await self._closed.wait()
        assert self.close_info is not None
        return self.close_info

    # -- events -------------------------------------------------------------------------------------

    def quic_event_received(self, event: QuicEvent) -> None:
        if isinstance(event, StreamReset) and event.stream_id != self.session_id:
            stream = self._streams.setdefault(event.stream_id, _Stream())
            stream.reset, stream.was_reset = http3_code_to_webtransport(event.error_code), True
            stream.wake()
        elif isinstance(event, StreamReset):
            self._session_ended(0, "")
        if isinstance(event, StopSendingReceived):
            self.stops[event.stream_id] = http3_code_to_webtransport(event.error_code)
        if isinstance(event, ConnectionTerminated):
            self.terminated = event
            if not self._response.done():
                self._response.set_exception(ConnectionError(f"connection closed: {event.reason_phrase}"))
            for stream in self._streams.values():
                stream.wake()
            self._session_ended(0, "")
        for h3_event in self.http.handle_event(event):
            self._h3_event(h3_event)

    def _h3_event(self, event: H3Event) -> None:
        if isinstance(event, HeadersReceived | DataReceived) and event.stream_id in self._others:
            self._other_event(event)
            return
        if isinstance(event, HeadersReceived) and event.stream_id == self.session_id:
            if self.status == 0:
                self.status = int(dict(event.headers).get(b":status", b"0"))
                self.response_headers = [(k, v) for k, v in event.headers if not k.startswith(b":")]
                if not self._response.done():
                    self._response.set_result(None)
            if event.stream_ended:
                self._session_ended(0, "")
        elif isinstance(event, DataReceived) and event.stream_id == self.session_id:
            self._capsules += event.data
            self._parse_capsules()
            if event.stream_ended:
                self._session_ended(0, "")
        elif isinstance(event, WebTransportStreamDataReceived):
            new = event.stream_id not in self._streams
            stream = self._streams.setdefault(event.stream_id, _Stream())
            if new and event.stream_id % 2 == 1:  # server-initiated (RFC 9000 §2.1)
                self._incoming.put_nowait((event.stream_id, event.stream_id % 4 == 3))
            stream.data += event.data
            stream.ended = stream.ended or event.stream_ended
            stream.wake()
        elif isinstance(event, DatagramReceived) and event.stream_id == self.session_id:
            self._datagrams.put_nowait(event.data)

    def _other_event(self, event: HeadersReceived | DataReceived) -> None:
        waiter = self._others[event.stream_id]
        if isinstance(event, HeadersReceived) and not waiter.done():
            status = int(dict(event.headers).get(b":status", b"0"))
            waiter.set_result((status, [(k, v) for k, v in event.headers if not k.startswith(b":")]))
        if isinstance(event, DataReceived) and event.stream_id in self._bodies:
            self._bodies[event.stream_id] += event.data
        ended = self._ended.get(event.stream_id)
        if event.stream_ended and ended is not None and not ended.done():
            ended.set_result(None)

    def _parse_capsules(self) -> None:
        # RFC 9297 §3.2: the CONNECT stream's DATA is a sequence of capsules; unknown types are skipped.
        while True:
            buffer = Buffer(data=bytes(self._capsules))
            try:
                kind = buffer.pull_uint_var()
                value = buffer.pull_bytes(buffer.pull_uint_var())
            except BufferReadError:
                return
            del self._capsules[: buffer.tell()]
            if kind == CLOSE_WEBTRANSPORT_SESSION and len(value) >= 4:
                self._session_ended(int.from_bytes(value[:4], "big"), value[4:].decode(errors="replace"))

    def _session_ended(self, code: int, reason: str) -> None:
        if self.close_info is None:
            self.close_info = (code, reason)
        self._closed.set()


class WebTransportClient:
    """Opens one connection and one session per `run()` to 127.0.0.1:`port` (certificate not verified)."""

    def __init__(self, port: int, host: str = "127.0.0.1", *, server_name: str = "localhost") -> None:
        self.port = port
        self.host = host
        self.server_name = server_name

    def configuration(self) -> QuicConfiguration:
        configuration = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, max_datagram_frame_size=65536)
        configuration.verify_mode = ssl.CERT_NONE
        configuration.server_name = self.server_name
        return configuration

    def run(
        self,
        path: str,
        scenario: Callable[[WTSession], Awaitable[T]],
        *,
        headers: Headers | None = None,
        timeout: float = 20.0,
        protocol_class: type[WTSession] | None = None,
    ) -> T:
        """Open the session at `path`, run `scenario` on it, close the connection; its result. `protocol_class`:
        a `WTSession` subclass to use instead (a test that extends the client)."""

        async def session() -> T:
            async with connect(
                self.host, self.port, configuration=self.configuration(), create_protocol=protocol_class or WTSession
            ) as protocol:
                assert isinstance(protocol, WTSession)
                await protocol.open_session(f"{self.server_name}:{self.port}", path, headers or [])
                return await scenario(protocol)

        async def bounded() -> T:
            return await asyncio.wait_for(session(), timeout)

        return asyncio.run(bounded())

    def echo(self, path: str, spec: dict[str, Any], *, timeout: float = 20.0) -> dict[str, Any]:
        """Run `echo_scenario(spec)` against the session at `path`."""
        try:
            return self.run(path, lambda session: echo_scenario(session, spec), timeout=timeout)
        except SessionRefusedError as refused:
            return {"status": refused.status}


async def echo_scenario(session: WTSession, spec: dict[str, Any]) -> dict[str, Any]:
    """The scenario every WebTransport client harness runs (JSON in, JSON out; str payloads as UTF-8).

    spec: {"bidi": [str], "uni": [str], "datagrams": [str], "fin": bool (default True: the server ends the
    echo streams; False: read as many bytes as were sent, for servers that never end a stream),
    "close": {"code": int, "reason": str} | None (close from the client), "await_close": bool (wait for the
    server to end the session)}. Result: {"status", "bidi": [str], "uni": [str], "datagrams": [str],
    "closed": {"code", "reason"} | None}. Bidirectional streams are echoed on themselves; unidirectional
    ones on a stream the server opens (in the order they arrive: compare as sorted lists).
    """
    fin = bool(spec.get("fin", True))
    result: dict[str, Any] = {"status": session.status, "bidi": [], "uni": [], "datagrams": [], "closed": None}
    for text in spec.get("bidi", []):
        stream = await session.open_stream()
        session.send(stream, text.encode(), end=True)
        echoed = await session.read(stream, size=None if fin else len(text.encode()))
        result["bidi"].append(echoed.decode())
    for text in spec.get("uni", []):
        stream = await session.open_stream(unidirectional=True)
        session.send(stream, text.encode(), end=True)
    for _ in spec.get("uni", []):
        reply, _unidirectional = await session.accept_stream()
        result["uni"].append((await session.read(reply)).decode())
    for text in spec.get("datagrams", []):
        # Datagrams may be lost (RFC 9221 §5) even on loopback: resend until the echo arrives.
        for _attempt in range(20):
            session.send_datagram(text.encode())
            try:
                result["datagrams"].append((await asyncio.wait_for(session.receive_datagram(), 0.5)).decode())
                break
            except TimeoutError:
                continue
    close = spec.get("close")
    if close is not None:
        session.close_session(int(close.get("code", 0)), str(close.get("reason", "")))
    if close is not None or spec.get("await_close"):
        code, reason = await session.wait_closed()
        result["closed"] = {"code": code, "reason": reason}
    return result
