"""A reference WebTransport (draft-02) echo server on aioquic, to validate the client harnesses without peregrine.

It runs in a thread of its own (the tests and their clients are synchronous and
run their own event loops) and answers extended CONNECTs (draft-02 §3.2) with
`:protocol` webtransport:

- `/echo`: 200 with `sec-webtransport-http3-draft: draft02`; each client
  bidirectional stream is echoed on itself when it ends (FIN back), each client
  unidirectional stream on a new server unidirectional stream, each datagram as
  a datagram; the client's CLOSE_WEBTRANSPORT_SESSION (or FIN) is recorded in
  `closes` and answered with a FIN (draft-02 §5: "The recipient MUST close the
  stream upon receiving a FIN");
- `/close?code=C&reason=R`: 200, then at once a close capsule with C and R and
  a FIN;
- anything else: 404.

aioquic's own example server (examples/http3_server.py with demo.py's `wt`
handler, only in its sdist) echoes bidirectional data and datagrams too, but
never ends a stream, cannot answer unidirectional streams and never closes;
this one exercises the whole client side.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

import pytest

aioquic = pytest.importorskip("aioquic")

from aioquic.asyncio import QuicConnectionProtocol, serve  # noqa: E402
from aioquic.h3.connection import H3_ALPN, H3Connection  # noqa: E402
from aioquic.h3.events import (  # noqa: E402
    DatagramReceived,
    DataReceived,
    H3Event,
    HeadersReceived,
    WebTransportStreamDataReceived,
)
from aioquic.quic.configuration import QuicConfiguration  # noqa: E402
from aioquic.quic.events import ProtocolNegotiated, QuicEvent, StreamReset  # noqa: E402
from wtclient_aioquic import CLOSE_WEBTRANSPORT_SESSION, encode_close_capsule, http3_code_to_webtransport  # noqa: E402

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from aioquic.quic.connection import QuicConnection


class EchoServerState:
    """What the server saw, for the tests: the client's closes (code, reason) and stream resets."""

    def __init__(self) -> None:
        self.closes: list[tuple[int, str]] = []
        self.resets: list[tuple[int, int | None]] = []
        self.paths: list[str] = []
        self.headers: list[dict[bytes, bytes]] = []


class _EchoProtocol(QuicConnectionProtocol):
    state: EchoServerState

    def __init__(self, quic: QuicConnection, stream_handler: Any = None) -> None:  # noqa: ANN401 (aioquic's type)
        super().__init__(quic, stream_handler)
        self.http: H3Connection | None = None
        self.sessions: set[int] = set()
        self.buffers: dict[int, bytearray] = {}
        self.capsules: dict[int, bytearray] = {}
        self.ended: set[int] = set()

    def quic_event_received(self, event: QuicEvent) -> None:
        if isinstance(event, ProtocolNegotiated) and event.alpn_protocol in H3_ALPN:
            self.http = H3Connection(self._quic, enable_webtransport=True)
        if isinstance(event, StreamReset) and event.stream_id not in self.sessions:
            self.state.resets.append((event.stream_id, http3_code_to_webtransport(event.error_code)))
        if self.http is not None:
            for h3_event in self.http.handle_event(event):
                self._h3_event(h3_event)
        self.transmit()

    def _h3_event(self, event: H3Event) -> None:
        assert self.http is not None
        if isinstance(event, HeadersReceived):
            self._connect(event)
        elif isinstance(event, DataReceived) and event.stream_id in self.sessions:
            self._session_data(event.stream_id, event.data, event.stream_ended)
        elif isinstance(event, DatagramReceived) and event.stream_id in self.sessions:
            self.http.send_datagram(event.stream_id, event.data)
        elif isinstance(event, WebTransportStreamDataReceived) and event.session_id in self.sessions:
            buffer = self.buffers.setdefault(event.stream_id, bytearray())
            buffer += event.data
            if event.stream_ended:
                data = bytes(self.buffers.pop(event.stream_id))
                if event.stream_id % 4 == 2:  # client unidirectional: answer on a server one (RFC 9000 §2.1)
                    reply = self.http.create_webtransport_stream(event.session_id, is_unidirectional=True)
                    self._quic.send_stream_data(reply, data, end_stream=True)
                else:
                    self._quic.send_stream_data(event.stream_id, data, end_stream=True)

    def _connect(self, event: HeadersReceived) -> None:
        assert self.http is not None
        fields = dict(event.headers)
        if fields.get(b":method") != b"CONNECT" or fields.get(b":protocol") != b"webtransport":
            self.http.send_headers(event.stream_id, [(b":status", b"400")], end_stream=True)
            return
        target = urlsplit(fields.get(b":path", b"/").decode())
        self.state.paths.append(target.path)
        self.state.headers.append(fields)
        if target.path not in ("/echo", "/close"):
            self.http.send_headers(event.stream_id, [(b":status", b"404")], end_stream=True)
            return
        self.sessions.add(event.stream_id)
        self.http.send_headers(event.stream_id, [(b":status", b"200"), (b"sec-webtransport-http3-draft", b"draft02")])
        if target.path == "/close":
            query = parse_qs(target.query)
            capsule = encode_close_capsule(int(query.get("code", ["0"])[0]), query.get("reason", [""])[0])
            self.http.send_data(event.stream_id, capsule, end_stream=True)
            self.ended.add(event.stream_id)

    def _session_data(self, session_id: int, data: bytes, ended: bool) -> None:
        assert self.http is not None
        pending = self.capsules.setdefault(session_id, bytearray())
        pending += data
        closed = None
        while len(pending) >= 2:
            from aioquic.buffer import Buffer, BufferReadError  # noqa: PLC0415 (only here)

            buffer = Buffer(data=bytes(pending))
            try:
                kind, value = buffer.pull_uint_var(), buffer.pull_bytes(buffer.pull_uint_var())
            except BufferReadError:
                break
            del pending[: buffer.tell()]
            if kind == CLOSE_WEBTRANSPORT_SESSION:
                closed = (int.from_bytes(value[:4], "big"), value[4:].decode())
        if closed is None and ended:
            closed = (0, "")  # draft-02 §5: a FIN alone is close(0, "")
        if closed is not None:
            self.state.closes.append(closed)
        if ended and session_id not in self.ended:
            self.ended.add(session_id)
            self.http.send_data(session_id, b"", end_stream=True)


@contextlib.contextmanager
def echo_server(certificate: Path, key: Path) -> Iterator[tuple[int, EchoServerState]]:
    """Run the echo server on 127.0.0.1 (an ephemeral UDP port) in a thread; yields (port, state)."""
    state = EchoServerState()
    protocol = type("EchoProtocol", (_EchoProtocol,), {"state": state})
    configuration = QuicConfiguration(is_client=False, alpn_protocols=H3_ALPN, max_datagram_frame_size=65536)
    configuration.load_cert_chain(str(certificate), str(key))
    loop = asyncio.new_event_loop()
    started: list[Any] = []
    ready = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)
        server = loop.run_until_complete(serve("127.0.0.1", 0, configuration=configuration, create_protocol=protocol))
        started.append(server)
        ready.set()
        loop.run_forever()
        server.close()
        loop.run_until_complete(asyncio.sleep(0))
        loop.close()

    thread = threading.Thread(target=run, name="wt-echo-server", daemon=True)
    thread.start()
    assert ready.wait(10), "the echo server did not start"
    port = int(started[0]._transport.get_extra_info("sockname")[1])
    try:
        yield port, state
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
