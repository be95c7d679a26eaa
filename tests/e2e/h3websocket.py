"""WebSockets over HTTP/3 (RFC 9220) for the end-to-end tests: an extended CONNECT on a request stream of an
aioquic connection (`h3client.H3ClientConnection`), then WebSocket frames inside DATA frames.

aioquic's example client (examples/http3_client.py, not part of the installed package) does the same with
wsproto; here frames are built with `websocket_support.frame()` so tests can send what no correct client
sends (unmasked frames), and the server's frames are parsed byte by byte and checked as over HTTP/1.1 and
HTTP/2 (unmasked, minimal lengths). Everything is async: it runs inside `H3Client.session`.
"""

from __future__ import annotations

import asyncio
import json
import struct
import time
from typing import TYPE_CHECKING, Any

from websocket_support import BINARY, CLOSE, CONT, PING, PONG, TEXT, Frame, close_payload, frame

if TYPE_CHECKING:
    from h3client import H3ClientConnection, H3Response

#: RFC 9220 §3 / RFC 8441 §3: SETTINGS_ENABLE_CONNECT_PROTOCOL.
ENABLE_CONNECT_PROTOCOL = 0x08
#: RFC 9114 §8.1.
H3_MESSAGE_ERROR = 0x10E
H3_REQUEST_CANCELLED = 0x10C
H3_NO_ERROR = 0x100


async def server_settings(conn: H3ClientConnection, timeout: float = 10.0) -> dict[int, int]:
    """The server's SETTINGS once they arrived (aioquic keeps them as received)."""
    assert await conn.until(lambda: conn.http.received_settings is not None, timeout), "no SETTINGS"
    settings = conn.http.received_settings
    assert settings is not None
    return {int(k): v for k, v in settings.items()}


class H3WebSocket:
    """One WebSocket on an HTTP/3 request stream."""

    def __init__(self, conn: H3ClientConnection, stream_id: int) -> None:
        self.conn = conn
        self.stream_id = stream_id
        self.offset = 0  # how much of the stream's data is parsed

    @classmethod
    def open(
        cls,
        conn: H3ClientConnection,
        path: str = "/echo",
        *,
        headers: list[tuple[bytes, bytes]] | None = None,
        version: bytes | None = b"13",
        protocol: bytes = b"websocket",
    ) -> H3WebSocket:
        """Sends the extended CONNECT (RFC 9220 §3; does not wait for the answer)."""
        fields = [
            (b":method", b"CONNECT"),
            (b":protocol", protocol),
            (b":scheme", b"https"),
            (b":path", path.encode()),
            (b":authority", conn.authority),
        ]
        if version is not None:
            fields.append((b"sec-websocket-version", version))
        fields += headers or []
        stream_id = conn.open(fields)
        conn.transmit()
        return cls(conn, stream_id)

    @property
    def response(self) -> H3Response:
        return self.conn._responses[self.stream_id]

    @property
    def ended(self) -> bool:
        """The stream ended (FIN or reset) or the connection did."""
        return self.stream_id not in self.conn._done

    @property
    def reset_code(self) -> int | None:
        return self.conn.resets.get(self.stream_id)

    async def wait_response(self, timeout: float = 10.0) -> H3Response:
        """The response head (or the stream's end)."""
        assert await self.conn.until(lambda: self.response.status != 0 or self.ended, timeout), "no answer"
        return self.response

    async def accepted(self, timeout: float = 10.0) -> H3WebSocket:
        """Waits for the acceptance: 200, no Sec-WebSocket-Accept; returns self."""
        r = await self.wait_response(timeout)
        assert r.status == 200, (r.status, r.headers, r.reset_code, r.body)
        assert r.header(b"sec-websocket-accept") is None, r.headers
        return self

    async def denied(self, timeout: float = 10.0) -> H3Response:
        """The whole refusal response."""
        return await self.conn.response(self.stream_id, timeout)

    # Sending

    def send_raw(self, data: bytes, *, end_stream: bool = False) -> None:
        """Bytes in one DATA frame (aioquic sends them as flow control allows)."""
        self.conn.http.send_data(self.stream_id, data, end_stream=end_stream)
        self.conn.transmit()

    def send(self, opcode: int, payload: bytes = b"", *, end_stream: bool = False, **options: Any) -> None:  # noqa: ANN401
        """One frame (masked unless `mask=False`)."""
        self.send_raw(frame(opcode, payload, **options), end_stream=end_stream)

    def send_text(self, text: str) -> None:
        self.send(TEXT, text.encode())

    def send_close(self, code: int | None = 1000, reason: bytes = b"", *, end_stream: bool = False) -> None:
        self.send(CLOSE, close_payload(code, reason), end_stream=end_stream)

    def end(self) -> None:
        """FIN (the TCP FIN of RFC 9220 §3)."""
        self.send_raw(b"", end_stream=True)

    def reset(self, code: int = H3_REQUEST_CANCELLED) -> None:
        """RESET_STREAM (the TCP RST of RFC 9220 §3)."""
        self.conn._quic.reset_stream(self.stream_id, code)
        self.conn.transmit()

    # Receiving

    def _data(self) -> bytes | bytearray:
        body = self.conn._bodies.get(self.stream_id)
        return body if body is not None else self.response.body

    def _available(self) -> int:
        return len(self._data()) - self.offset

    async def _take(self, n: int, deadline: float) -> bytes:
        while self._available() < n:
            if self.ended:
                raise EOFError(f"stream ended (reset {self.reset_code}) with {self._available()} of {n} bytes")
            if time.monotonic() > deadline:
                raise TimeoutError(f"waited for {n} bytes, have {self._available()}")
            await asyncio.sleep(0.005)
        data = bytes(self._data()[self.offset : self.offset + n])
        self.offset += n
        return data

    async def read_frame(self, timeout: float = 10.0) -> Frame:
        """The next frame; checks the server did not mask it and used the minimal length."""
        deadline = time.monotonic() + timeout
        first, second = await self._take(2, deadline)
        assert not second & 0x80, "the server masked a frame"
        length = second & 0x7F
        if length == 126:
            (length,) = struct.unpack("!H", await self._take(2, deadline))
            assert length >= 126, f"non-minimal 16-bit length {length} from the server"
        elif length == 127:
            (length,) = struct.unpack("!Q", await self._take(8, deadline))
            assert length > 0xFFFF, f"non-minimal 64-bit length {length} from the server"
        return Frame(bool(first & 0x80), (first >> 4) & 7, first & 0xF, await self._take(length, deadline))

    async def read_message(self, timeout: float = 10.0) -> tuple[int, bytes]:
        """The next data message, reassembled (pings and pongs in between are skipped)."""
        pieces: list[bytes] = []
        opcode = None
        while True:
            f = await self.read_frame(timeout)
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

    async def read_text(self, timeout: float = 10.0) -> str:
        opcode, payload = await self.read_message(timeout)
        assert opcode == TEXT, (opcode, payload[:100])
        return payload.decode("utf-8")

    async def expect_close(self, timeout: float = 10.0) -> Frame:
        """Reads until the server's close frame (skipping data and control frames)."""
        while True:
            f = await self.read_frame(timeout)
            if f.opcode == CLOSE:
                f.close_reason  # noqa: B018 (the reason must be UTF-8)
                return f

    async def expect_end(self, timeout: float = 10.0) -> H3Response:
        """Waits until the stream ends with FIN; nothing may follow the close frame."""
        response = await self.conn.response(self.stream_id, timeout)
        assert self._available() == 0, f"data after the close frame: {bytes(self._data()[self.offset :])[:50]!r}"
        return response

    async def expect_protocol_close(self, code: int, timeout: float = 10.0) -> Frame:
        """The server closes with `code` and ends the stream (FIN, not a reset) after our reply."""
        f = await self.expect_close(timeout)
        assert f.close_code == code, (f.close_code, f.payload)
        if not self.ended:
            self.send_close(1000, end_stream=True)
        response = await self.expect_end(timeout)
        assert response.reset_code is None, f"stream reset ({response.reset_code}) instead of FIN"
        return f


async def records(conn: H3ClientConnection, ident: str) -> dict[str, Any]:
    """What connection `ident` recorded on ws_apps, asked over HTTP/3 on `conn`."""
    response = await conn.request("GET", f"/records?id={ident}", conn.authority.decode(), [], None)
    assert response.status == 200, response
    found: dict[str, Any] = json.loads(response.body)
    return found


async def wait_record(conn: H3ClientConnection, ident: str, key: str, timeout: float = 10.0) -> Any:  # noqa: ANN401
    """Polls until record `ident` has `key`; its value."""
    deadline = time.monotonic() + timeout
    while True:
        found = await records(conn, ident)
        if key in found:
            return found[key]
        assert time.monotonic() < deadline, f"record {ident} never got {key!r}: {found!r}"
        await asyncio.sleep(0.05)
