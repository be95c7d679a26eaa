"""WebSockets over HTTP/2 (RFC 8441) for the end-to-end tests: an extended CONNECT on an `H2Client` stream,
then WebSocket frames inside DATA.

Frames are built with `websocket_support.frame()` (so tests can send what no
correct client sends: unmasked frames, bad UTF-8) and the server's are parsed
byte by byte from the stream's data, checked as `WebSocketConnection` checks
them over HTTP/1.1 (unmasked, minimal lengths). With an `H2Client(...,
auto_ack=False)` the stream's data is acknowledged only as frames are read,
so a test can hold the server back with flow control.
"""

from __future__ import annotations

import contextlib
import struct
import time
from typing import TYPE_CHECKING, Any

import h2.errors
import h2.events
import h2.exceptions
import h2.settings
from h2client import H2Client, Response
from websocket_support import BINARY, CLOSE, CONT, PING, PONG, TEXT, Frame, close_payload, frame

if TYPE_CHECKING:
    import ssl

ENABLE_CONNECT_PROTOCOL = h2.settings.SettingCodes.ENABLE_CONNECT_PROTOCOL


def server_settings(client: H2Client, timeout: float = 10.0) -> dict[int, int]:
    """The server's SETTINGS, once its first SETTINGS frame has arrived."""
    limit = time.monotonic() + timeout
    while not any(isinstance(e, h2.events.RemoteSettingsChanged) for e in client.events):
        assert time.monotonic() < limit, "no SETTINGS from the server"
        assert client.read_once(), "the server closed the connection"
    return {int(k): v for k, v in client.conn.remote_settings.items()}


class H2WebSocket:
    """One WebSocket on an HTTP/2 stream."""

    def __init__(self, client: H2Client, sid: int) -> None:
        self.client = client
        self.sid = sid
        self.offset = 0  # how much of the stream's data is parsed
        self.acked = 0  # how much of it was acknowledged (auto_ack=False)

    @classmethod
    def open(
        cls,
        client: H2Client,
        path: str = "/echo",
        *,
        headers: list[tuple[str, str]] | None = None,
        version: str | None = "13",
        protocol: str = "websocket",
        scheme: str = "http",
        authority: str = "localhost",
        end_stream: bool = False,
    ) -> H2WebSocket:
        """Sends the extended CONNECT (does not wait for the answer)."""
        sid = client.conn.get_next_available_stream_id()
        fields = [
            (":method", "CONNECT"),
            (":protocol", protocol),
            (":scheme", scheme),
            (":path", path),
            (":authority", authority),
        ]
        if version is not None:
            fields.append(("sec-websocket-version", version))
        fields += headers or []
        client.responses[sid] = Response(sid)
        client.conn.send_headers(sid, fields, end_stream=end_stream)
        client.flush()
        return cls(client, sid)

    @property
    def response(self) -> Response:
        return self.client.responses[self.sid]

    def wait_response(self, timeout: float = 10.0) -> Response:
        """The response head (or the stream's end, for a reset)."""
        limit = time.monotonic() + timeout
        while not self.response.headers and not self.response.ended:
            assert time.monotonic() < limit, "no response to the extended CONNECT"
            assert self.client.read_once(), "the server closed the connection"
        return self.response

    def accepted(self, timeout: float = 10.0) -> H2WebSocket:
        """Waits for the acceptance: 200, no Sec-WebSocket-Accept; returns self."""
        r = self.wait_response(timeout)
        assert r.headers, f"stream reset ({r.reset_code}) instead of an answer"
        assert r.status == 200, (r.status, r.headers, bytes(r.body))
        assert r.header(b"sec-websocket-accept") is None, r.headers
        return self

    def denied(self, timeout: float = 10.0) -> Response:
        """The whole refusal response."""
        return self.client.collect(self.sid, timeout=timeout)[0]

    # Sending

    def send_raw(self, data: bytes, *, end_stream: bool = False, deadline: float = 10.0) -> None:
        """Bytes in DATA as the windows allow."""
        self.client.send_body(self.sid, data, end_stream=end_stream, deadline=deadline)

    def send(self, opcode: int, payload: bytes = b"", *, end_stream: bool = False, **options: Any) -> None:  # noqa: ANN401
        """One frame (masked unless `mask=False`)."""
        self.send_raw(frame(opcode, payload, **options), end_stream=end_stream)

    def send_text(self, text: str) -> None:
        self.send(TEXT, text.encode())

    def send_close(self, code: int | None = 1000, reason: bytes = b"", *, end_stream: bool = False) -> None:
        self.send(CLOSE, close_payload(code, reason), end_stream=end_stream)

    def end(self) -> None:
        """END_STREAM (the TCP FIN of RFC 8441 §5)."""
        self.client.conn.end_stream(self.sid)
        self.client.flush()

    def reset(self, code: int = h2.errors.ErrorCodes.CANCEL) -> None:
        """RST_STREAM (the TCP RST of RFC 8441 §5)."""
        self.client.conn.reset_stream(self.sid, code)
        self.client.flush()

    # Receiving

    def _available(self) -> int:
        return len(self.response.body) - self.offset

    def _acknowledge(self, upto: int) -> None:
        """Without auto_ack: the stream's data up to `upto` is read, its window goes back."""
        if not self.client.auto_ack and upto > self.acked:
            self.client.conn.acknowledge_received_data(upto - self.acked, self.sid)
            self.client.flush()
            self.acked = upto

    def _take(self, n: int, deadline: float) -> bytes:
        while self._available() < n:
            # Reading: what has arrived is taken in, so the server may send the rest.
            self._acknowledge(len(self.response.body))
            if self.response.ended:
                raise EOFError(f"stream ended (reset {self.response.reset_code}) with {self._available()} of {n} bytes")
            if time.monotonic() > deadline:
                raise TimeoutError(f"waited for {n} bytes, have {self._available()}")
            self.client.sock.settimeout(max(0.05, deadline - time.monotonic()))
            if not self.client.read_once():
                raise EOFError("the server closed the connection")
        data = bytes(self.response.body[self.offset : self.offset + n])
        self.offset += n
        self._acknowledge(self.offset)
        if self.offset > 1 << 20:
            # Keep the buffer small for long transfers.
            del self.response.body[: self.offset]
            self.acked -= self.offset
            self.offset = 0
        return data

    def read_frame(self, timeout: float = 10.0) -> Frame:
        """The next frame; checks the server did not mask it and used the minimal length."""
        deadline = time.monotonic() + timeout
        first, second = self._take(2, deadline)
        assert not second & 0x80, "the server masked a frame"
        length = second & 0x7F
        if length == 126:
            (length,) = struct.unpack("!H", self._take(2, deadline))
            assert length >= 126, f"non-minimal 16-bit length {length} from the server"
        elif length == 127:
            (length,) = struct.unpack("!Q", self._take(8, deadline))
            assert length > 0xFFFF, f"non-minimal 64-bit length {length} from the server"
        return Frame(bool(first & 0x80), (first >> 4) & 7, first & 0xF, self._take(length, deadline))

    def read_message(self, timeout: float = 10.0) -> tuple[int, bytes]:
        """The next data message, reassembled (pings and pongs in between are skipped)."""
        pieces: list[bytes] = []
        opcode = None
        while True:
            f = self.read_frame(timeout)
            if f.opcode in (PING, PONG):
                continue
            assert f.opcode != CLOSE, f"expected a message, got close {f.close_code} {f.payload[2:]!r}"
            if opcode is None:
                assert f.opcode in (TEXT, BINARY), f"message starts with opcode {f.opcode}"
                opcode = f.opcode
            else:
                assert f.opcode == CONT, f"opcode {f.opcode} inside a fragmented message"
            pieces.append(f.payload)
            if f.fin:
                return opcode, b"".join(pieces)

    def read_text(self, timeout: float = 10.0) -> str:
        opcode, payload = self.read_message(timeout)
        assert opcode == TEXT, (opcode, payload[:100])
        return payload.decode("utf-8")

    def expect_close(self, timeout: float = 10.0) -> Frame:
        """Reads until the server's close frame (skipping data and control frames)."""
        while True:
            f = self.read_frame(timeout)
            if f.opcode == CLOSE:
                f.close_reason  # noqa: B018 (the reason must be UTF-8)
                return f

    def expect_end(self, timeout: float = 10.0) -> Response:
        """Waits until the stream ends; nothing but what was already parsed may follow a close."""
        response = self.client.collect(self.sid, timeout=timeout)[0]
        assert self._available() == 0, f"data after the close frame: {bytes(response.body[self.offset :])[:50]!r}"
        return response

    def expect_protocol_close(self, code: int, timeout: float = 10.0) -> Frame:
        """The server closes with `code` and ends the stream (END_STREAM, not a reset) after our reply."""
        f = self.expect_close(timeout)
        assert f.close_code == code, (f.close_code, f.payload)
        with contextlib.suppress(h2.exceptions.StreamClosedError):
            self.send_close(code if code not in (1005, 1006) else 1000, end_stream=True)
        response = self.expect_end(timeout)
        assert response.reset_code is None, f"stream reset ({response.reset_code}) instead of END_STREAM"
        return f


def poll(client: H2Client, timeout: float) -> None:
    """Reads and handles what arrives within `timeout` (one batch at most)."""
    client.sock.settimeout(timeout)
    with contextlib.suppress(TimeoutError):
        client.read_once()


def h2_client(port: int, *, tls: ssl.SSLContext | None = None, **options: Any) -> H2Client:  # noqa: ANN401
    """An `H2Client` that has seen the server's SETTINGS."""
    client = H2Client(port, tls=tls, **options)
    server_settings(client)
    return client
