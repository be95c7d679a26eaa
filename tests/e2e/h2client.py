"""A small blocking HTTP/2 client over `h2` for the end-to-end tests (h2c by prior knowledge or TLS with ALPN h2).

`H2Client.request()` sends one request and waits for its whole response;
`send()`/`collect()` let a test keep several streams in flight. Received data
is acknowledged as it arrives (so windows reopen) unless `auto_ack=False`.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import h2.config
import h2.connection
import h2.events
import h2.settings

if TYPE_CHECKING:
    import ssl


@dataclass
class Response:
    """One stream's response as received."""

    stream_id: int
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    informational: list[list[tuple[bytes, bytes]]] = field(default_factory=list)
    body: bytearray = field(default_factory=bytearray)
    trailers: list[tuple[bytes, bytes]] = field(default_factory=list)
    ended: bool = False
    reset_code: int | None = None

    @property
    def status(self) -> int:
        return int(dict(self.headers)[b":status"])

    def header(self, name: bytes) -> bytes | None:
        return dict(self.headers).get(name)


class H2Client:
    """One HTTP/2 connection to a server under test."""

    def __init__(
        self,
        port: int,
        *,
        host: str = "127.0.0.1",
        tls: ssl.SSLContext | None = None,
        server_hostname: str = "localhost",
        settings: dict[int, int] | None = None,
        auto_ack: bool = True,
        timeout: float = 10.0,
        preamble: bytes = b"",
    ) -> None:
        raw = socket.create_connection((host, port), timeout=timeout)
        if preamble:  # bytes before TLS and HTTP/2, e.g. a PROXY protocol header
            raw.sendall(preamble)
        if tls is not None:
            raw = tls.wrap_socket(raw, server_hostname=server_hostname)
            assert raw.selected_alpn_protocol() == "h2"
        self.sock = raw
        self.conn = h2.connection.H2Connection(
            config=h2.config.H2Configuration(client_side=True, header_encoding=None, validate_inbound_headers=False)
        )
        self.conn.initiate_connection()
        if settings:
            self.conn.update_settings(settings)
        self.auto_ack = auto_ack
        self.responses: dict[int, Response] = {}
        self.events: list[Any] = []
        self.terminated: h2.events.ConnectionTerminated | None = None
        self.closed = False
        self.flush()

    def flush(self) -> None:
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def send(
        self,
        method: str,
        path: str,
        *,
        body: bytes | None = None,
        headers: list[tuple[str, str]] | None = None,
        authority: str = "localhost",
        scheme: str = "http",
        end_stream: bool = True,
        trailers: list[tuple[str, str]] | None = None,
    ) -> int:
        """Starts a request; returns its stream id."""
        sid = self.conn.get_next_available_stream_id()
        fields = [(":method", method), (":scheme", scheme), (":authority", authority), (":path", path)]
        fields += headers or []
        self.responses[sid] = Response(sid)
        no_body = body is None and trailers is None
        self.conn.send_headers(sid, fields, end_stream=no_body and end_stream)
        self.flush()
        if body is not None:
            self.send_body(sid, body, end_stream=end_stream and trailers is None)
        if trailers is not None:
            self.conn.send_headers(sid, trailers, end_stream=True)
            self.flush()
        return sid

    def send_body(self, sid: int, body: bytes, *, end_stream: bool = True, deadline: float = 10.0) -> None:
        """Sends `body` as the windows allow (reading the server's frames meanwhile)."""
        view = memoryview(body)
        limit = time.monotonic() + deadline
        while view:
            window = min(self.conn.local_flow_control_window(sid), self.conn.max_outbound_frame_size)
            if window <= 0:
                if time.monotonic() > limit:
                    raise TimeoutError("the server never opened its window")
                self.read_once()
                continue
            chunk, view = view[:window], view[window:]
            self.conn.send_data(sid, bytes(chunk))
            self.flush()
        if end_stream:
            self.conn.end_stream(sid)
            self.flush()

    def read_once(self) -> bool:
        """Reads and handles one batch of frames; False when the server closed the connection."""
        data = self.sock.recv(65536)
        if not data:
            self.closed = True
            return False
        for event in self.conn.receive_data(data):
            self.events.append(event)
            self._handle(event)
        self.flush()
        return True

    def _handle(self, event: Any) -> None:  # noqa: ANN401 (h2's event types)
        if isinstance(event, h2.events.ResponseReceived):
            self.responses[event.stream_id].headers = list(event.headers)
        elif isinstance(event, h2.events.InformationalResponseReceived):
            self.responses[event.stream_id].informational.append(list(event.headers))
        elif isinstance(event, h2.events.DataReceived):
            self.responses[event.stream_id].body += event.data
            if self.auto_ack:
                self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.TrailersReceived):
            self.responses[event.stream_id].trailers = list(event.headers)
        elif isinstance(event, h2.events.StreamEnded):
            self.responses[event.stream_id].ended = True
        elif isinstance(event, h2.events.StreamReset):
            if event.stream_id in self.responses:
                self.responses[event.stream_id].reset_code = int(event.error_code)
                self.responses[event.stream_id].ended = True
        elif isinstance(event, h2.events.ConnectionTerminated):
            self.terminated = event

    def collect(self, *sids: int, timeout: float = 10.0) -> list[Response]:
        """Waits until every stream in `sids` has ended (or was reset)."""
        limit = time.monotonic() + timeout
        while not all(self.responses[s].ended for s in sids):
            if time.monotonic() > limit:
                raise TimeoutError(f"streams {[s for s in sids if not self.responses[s].ended]} did not end")
            if not self.read_once():
                break
        return [self.responses[s] for s in sids]

    def request(self, method: str, path: str, **kwargs: Any) -> Response:  # noqa: ANN401
        return self.collect(self.send(method, path, **kwargs))[0]

    def close(self) -> None:
        try:
            self.conn.close_connection()
            self.flush()
        except OSError:
            pass
        self.sock.close()

    def __enter__(self) -> H2Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


INITIAL_WINDOW = h2.settings.SettingCodes.INITIAL_WINDOW_SIZE
