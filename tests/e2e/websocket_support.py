"""Hand-built WebSocket frames over a raw socket, and fixtures, for the WebSocket end-to-end modules.

Protocol-error tests need frames no correct client library sends (unmasked,
reserved bits, non-minimal lengths), so `frame()` builds any frame byte by
byte and `WebSocketConnection` reads the server's frames exactly as they came
(checking what RFC 6455 demands of a server: unmasked, minimal lengths).

Modules load the fixtures with `pytest_plugins = ("websocket_support",)`.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import struct
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import pytest
from rawhttp import ConnectionClosedError, RawConnection, Response, request

if TYPE_CHECKING:
    from conftest import Server, ServerPool

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
APP = "ws_apps:app"
CONT, TEXT, BINARY, CLOSE, PING, PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA


def accept_for(key: str) -> str:
    """Sec-WebSocket-Accept for `key` (RFC 6455 §4.2.2)."""
    return base64.b64encode(hashlib.sha1((key + GUID).encode(), usedforsecurity=False).digest()).decode()


def new_key() -> str:
    """A fresh Sec-WebSocket-Key."""
    return base64.b64encode(os.urandom(16)).decode()


def upgrade_headers(
    key: str | None = None, version: str = "13", extra: list[tuple[str, str]] | None = None
) -> list[tuple[str, str]]:
    """The header fields of a valid upgrade request (with `key`, or a fresh one)."""
    return [
        ("Upgrade", "websocket"),
        ("Connection", "Upgrade"),
        ("Sec-WebSocket-Key", key or new_key()),
        ("Sec-WebSocket-Version", version),
        *(extra or []),
    ]


def frame(
    opcode: int,
    payload: bytes = b"",
    *,
    fin: bool = True,
    rsv: int = 0,
    mask: bool = True,
    length_form: str = "minimal",
    declared_length: int | None = None,
) -> bytes:
    """One frame. `length_form`: "minimal", "16" or "64" (forced extended length); `declared_length` lies."""
    first = (0x80 if fin else 0) | (rsv << 4) | opcode
    length = len(payload) if declared_length is None else declared_length
    mask_bit = 0x80 if mask else 0
    if length_form == "16" or (length_form == "minimal" and 126 <= length <= 0xFFFF):
        head = struct.pack("!BBH", first, mask_bit | 126, length)
    elif length_form == "64" or (length_form == "minimal" and length > 0xFFFF):
        head = struct.pack("!BBQ", first, mask_bit | 127, length)
    else:
        head = struct.pack("!BB", first, mask_bit | length)
    if not mask:
        return head + payload
    key = os.urandom(4)
    return head + key + masked(payload, key)


def masked(payload: bytes, key: bytes) -> bytes:
    """`payload` XOR the repeated 4-byte `key`."""
    if not payload:
        return b""
    repeated = (key * (len(payload) // 4 + 1))[: len(payload)]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(repeated, "big")).to_bytes(len(payload), "big")


def close_payload(code: int | None, reason: bytes = b"") -> bytes:
    """The body of a close frame."""
    return b"" if code is None else struct.pack("!H", code) + reason


@dataclass
class Frame:
    """A frame the server sent."""

    fin: bool
    rsv: int
    opcode: int
    payload: bytes

    @property
    def close_code(self) -> int | None:
        """The code of a close frame (None if it has no body)."""
        assert self.opcode == CLOSE, self
        return struct.unpack("!H", self.payload[:2])[0] if len(self.payload) >= 2 else None

    @property
    def close_reason(self) -> str:
        """The reason of a close frame."""
        return self.payload[2:].decode("utf-8")


class WebSocketConnection:
    """An upgraded connection: send raw bytes or frames, read the server's frames."""

    def __init__(self, raw: RawConnection, response: Response) -> None:
        self.raw = raw
        self.response = response

    def __enter__(self) -> WebSocketConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.raw.close()

    def send_raw(self, data: bytes) -> None:
        """Send bytes as they are."""
        self.raw.send(data)

    def send(self, opcode: int, payload: bytes = b"", **options: Any) -> None:  # noqa: ANN401 (frame() options)
        """Send one frame."""
        self.raw.send(frame(opcode, payload, **options))

    def send_text(self, text: str) -> None:
        """One masked text frame."""
        self.send(TEXT, text.encode())

    def send_close(self, code: int | None = 1000, reason: bytes = b"") -> None:
        """One masked close frame."""
        self.send(CLOSE, close_payload(code, reason))

    def read_frame(self, timeout: float = 10.0) -> Frame:
        """The next frame; checks the server did not mask it and used the minimal length."""
        self.raw.sock.settimeout(timeout)
        first, second = self.raw.read_exactly(2)
        assert not second & 0x80, "the server masked a frame"
        length = second & 0x7F
        if length == 126:
            (length,) = struct.unpack("!H", self.raw.read_exactly(2))
            assert length >= 126, f"non-minimal 16-bit length {length} from the server"
        elif length == 127:
            (length,) = struct.unpack("!Q", self.raw.read_exactly(8))
            assert length > 0xFFFF, f"non-minimal 64-bit length {length} from the server"
        return Frame(bool(first & 0x80), (first >> 4) & 7, first & 0xF, self.raw.read_exactly(length))

    def read_message(self, timeout: float = 10.0) -> tuple[int, bytes]:
        """The next data message (opcode, whole payload), reassembled; control frames in between must be pongs."""
        pieces: list[bytes] = []
        opcode = None
        while True:
            f = self.read_frame(timeout)
            assert f.rsv == 0, f
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
        """The next message, which must be text."""
        opcode, payload = self.read_message(timeout)
        assert opcode == TEXT, (opcode, payload[:100])
        return payload.decode("utf-8")

    def expect_close(self, timeout: float = 10.0) -> Frame:
        """Read until the server's close frame (skipping data and pongs); returns it."""
        while True:
            try:
                f = self.read_frame(timeout)
            except ConnectionClosedError as exc:
                pytest.fail(f"the connection ended without a close frame (got {exc.partial[:50]!r})")
            if f.opcode == CLOSE:
                return f

    def expect_protocol_close(self, code: int, timeout: float = 10.0) -> Frame:
        """The server closes with `code`, then closes the TCP connection after our close reply."""
        f = self.expect_close(timeout)
        assert f.close_code == code, (f.close_code, f.payload)
        f.close_reason  # noqa: B018 (the reason must be UTF-8)
        with contextlib.suppress(OSError):  # it may already have closed: allowed after a protocol error
            self.send_close(code if code not in (1005, 1006) else 1000)
        assert self.tcp_closed(), "the server kept the TCP connection open after the closing handshake"
        return f

    def tcp_closed(self, timeout: float = 5.0) -> bool:
        """Whether the server closes the TCP connection (no more data first) within `timeout`."""
        self.raw.sock.settimeout(timeout)
        try:
            while True:
                data = self.raw.sock.recv(65536)
                if not data:
                    return True
                assert not data, f"data after the close frame: {data[:50]!r}"
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False


def handshake(server: Server, path: str = "/echo", headers: list[tuple[str, str]] | None = None) -> WebSocketConnection:
    """Upgrade a new connection on `path`; asserts 101 with the right accept."""
    key = new_key()
    raw = RawConnection.to(server)
    raw.send(request("GET", path, upgrade_headers(key, extra=headers)))
    response = raw.read_head()
    assert response.status == 101, (response.status, response.headers, raw.buffer[:300])
    assert response.header("Sec-WebSocket-Accept") == accept_for(key), response.headers
    return WebSocketConnection(raw, response)


def refused(server: Server, method: str, path: str, headers: list[tuple[str, str]]) -> Response:
    """Send an upgrade request and read the (non-101) response."""
    with RawConnection.to(server) as raw:
        raw.send(request(method, path, headers))
        return raw.read_response(method)


def records(server: Server, ident: str) -> dict[str, Any]:
    """What connection `ident` recorded on ws_apps so far."""
    with RawConnection.to(server) as raw:
        raw.send(request("GET", f"/records?id={quote(ident)}"))
        response = raw.read_response()
    assert response.status == 200, response
    found: dict[str, Any] = json.loads(response.body)
    return found


def wait_record(server: Server, ident: str, key: str, timeout: float = 10.0) -> Any:  # noqa: ANN401 (JSON)
    """Poll until record `ident` has `key`; its value."""
    deadline = time.monotonic() + timeout
    while True:
        found = records(server, ident)
        if key in found:
            return found[key]
        if time.monotonic() > deadline:
            pytest.fail(f"record {ident} never got {key!r}: {found!r}")
        time.sleep(0.05)


def unique(prefix: str) -> str:
    """An id no other test uses."""
    return f"{prefix}-{time.monotonic_ns()}"


def assert_ws_still_serving(server: Server) -> None:
    """A new WebSocket echoes, and a plain request is answered."""
    with handshake(server, "/echo") as ws:
        ws.send_text("still here")
        assert ws.read_text() == "still here"
        ws.send_close(1000)
        assert ws.expect_close().close_code == 1000
    with RawConnection.to(server) as raw:
        raw.send(request("GET", "/hello"))
        response = raw.read_response()
    assert (response.status, response.body) == (200, b"hello")


@pytest.fixture(scope="module")
def ws_server(server_pool: ServerPool) -> Server:
    """ws_apps:app with default options (shared)."""
    return server_pool.get(APP)
