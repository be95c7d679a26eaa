"""HTTP/2 on the wire for the conformance suite: hand-made frames, a frame-level connection, and an h2 client.

- `frame()` and the payload builders make any frame, including deliberately
  wrong ones (hyperframe refuses to serialize those), and the `hp_*`
  functions make HPACK representations byte by byte (RFC 7541 §5, §6);
- `FrameConn` is one raw connection: it sends bytes and reads the server's
  frames with hyperframe, decodes every header block the server sends (one
  hpack.Decoder per connection, so its dynamic table stays in step), keeps
  per-stream state, and answers the server's SETTINGS and PING;
- `expect_connection_error`, `expect_stream_error`,
  `expect_stream_or_connection_error` and `expect_malformed` check the error
  handling of RFC 9113 §5.4 and, after every error case, that the server
  still serves a new connection;
- `H2Client` drives the `h2` package for ordinary exchanges (bodies under
  flow control, trailers, concurrent streams).
"""

from __future__ import annotations

import contextlib
import ssl
import struct
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import TYPE_CHECKING

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import hpack
from h2.errors import ErrorCodes
from h2support import TIMEOUT
from hpack.huffman import HuffmanEncoder
from hpack.huffman_constants import REQUEST_CODES, REQUEST_CODES_LENGTH
from hpack.table import HeaderTable
from hyperframe.frame import (
    ContinuationFrame,
    DataFrame,
    Frame,
    GoAwayFrame,
    HeadersFrame,
    PingFrame,
    PushPromiseFrame,
    RstStreamFrame,
    SettingsFrame,
)

if TYPE_CHECKING:
    import socket

    from h2support import Target

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#: Default SETTINGS_MAX_FRAME_SIZE and SETTINGS_INITIAL_WINDOW_SIZE (RFC 9113 §6.5.2).
DEFAULT_MAX_FRAME = 16384
DEFAULT_WINDOW = 65535
MAX_WINDOW = 2**31 - 1


class T(IntEnum):
    """Frame types (RFC 9113 §6)."""

    DATA = 0x0
    HEADERS = 0x1
    PRIORITY = 0x2
    RST_STREAM = 0x3
    SETTINGS = 0x4
    PUSH_PROMISE = 0x5
    PING = 0x6
    GOAWAY = 0x7
    WINDOW_UPDATE = 0x8
    CONTINUATION = 0x9


class F:
    """Frame flags."""

    END_STREAM = 0x1
    ACK = 0x1
    END_HEADERS = 0x4
    PADDED = 0x8
    PRIORITY = 0x20


class S(IntEnum):
    """SETTINGS identifiers (RFC 9113 §6.5.2, RFC 8441 §3)."""

    HEADER_TABLE_SIZE = 0x1
    ENABLE_PUSH = 0x2
    MAX_CONCURRENT_STREAMS = 0x3
    INITIAL_WINDOW_SIZE = 0x4
    MAX_FRAME_SIZE = 0x5
    MAX_HEADER_LIST_SIZE = 0x6
    ENABLE_CONNECT_PROTOCOL = 0x8


E = ErrorCodes


def code_name(code: int) -> str:
    """PROTOCOL_ERROR for 1, and so on."""
    try:
        return ErrorCodes(code).name
    except ValueError:
        return f"0x{code:x}"


# --- frames ----------------------------------------------------------------------------------------


def frame(kind: int, flags: int, stream_id: int, payload: bytes = b"", *, length: int | None = None) -> bytes:
    """One frame (RFC 9113 §4.1); `length` overrides the length field; stream_id may carry the R bit."""
    size = len(payload) if length is None else length
    return struct.pack(">I", size)[1:] + struct.pack(">BBI", kind, flags, stream_id) + payload


def settings_payload(*pairs: tuple[int, int]) -> bytes:
    """SETTINGS parameters (§6.5.1)."""
    return b"".join(struct.pack(">HI", ident, value) for ident, value in pairs)


def settings_frame(*pairs: tuple[int, int]) -> bytes:
    """A SETTINGS frame."""
    return frame(T.SETTINGS, 0, 0, settings_payload(*pairs))


def rst_payload(code: int) -> bytes:
    """RST_STREAM payload (§6.4)."""
    return struct.pack(">I", code)


def goaway_payload(last_stream_id: int, code: int, debug: bytes = b"") -> bytes:
    """GOAWAY payload (§6.8)."""
    return struct.pack(">II", last_stream_id, code) + debug


def window_payload(increment: int) -> bytes:
    """WINDOW_UPDATE payload (§6.9)."""
    return struct.pack(">I", increment)


def priority_payload(depends_on: int, weight: int = 16, *, exclusive: bool = False) -> bytes:
    """The 5 priority octets of PRIORITY and HEADERS (§6.3; weight 1..256)."""
    return struct.pack(">IB", depends_on | (0x80000000 if exclusive else 0), weight - 1)


def padded(payload: bytes, pad_length: int, *, declared: int | None = None) -> bytes:
    """Pad Length octet + payload + padding (§6.1); `declared` lies about the Pad Length."""
    return bytes([pad_length if declared is None else declared]) + payload + b"\0" * pad_length


# --- HPACK (RFC 7541) ------------------------------------------------------------------------------

STATIC_TABLE: tuple[tuple[bytes, bytes], ...] = tuple(HeaderTable.STATIC_TABLE)
HeaderList = Sequence[tuple[str | bytes, str | bytes]]


def as_text(value: str | bytes) -> str:
    """Latin-1 text of bytes (str unchanged)."""
    return value.decode("latin-1") if isinstance(value, bytes) else value


def as_bytes(value: str | bytes) -> bytes:
    """UTF-8 bytes of a str (bytes unchanged)."""
    return value.encode() if isinstance(value, str) else value


def hp_integer(value: int, prefix_bits: int, first: int = 0) -> bytes:
    """An integer with an N-bit prefix (RFC 7541 §5.1); `first` holds the bits above the prefix."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = bytearray([first | limit])
    value -= limit
    while value >= 128:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def huffman(data: bytes) -> bytes:
    """The Huffman code of `data` (RFC 7541 Appendix B), padded with EOS bits."""
    encoded: bytes = HuffmanEncoder(REQUEST_CODES, REQUEST_CODES_LENGTH).encode(data)
    return encoded


def hp_string(value: str | bytes, *, huffman_coded: bool = False) -> bytes:
    """A string literal (§5.2)."""
    data = as_bytes(value)
    if huffman_coded:
        coded = huffman(data)
        return hp_integer(len(coded), 7, 0x80) + coded
    return hp_integer(len(data), 7) + data


def hp_raw_string(coded: bytes, *, huffman_flag: bool = True) -> bytes:
    """A string literal of exactly these (already coded) octets."""
    return hp_integer(len(coded), 7, 0x80 if huffman_flag else 0) + coded


def hp_indexed(index: int) -> bytes:
    """Indexed header field (§6.1)."""
    return hp_integer(index, 7, 0x80)


#: Literal representations (§6.2): first-byte pattern and prefix size.
LITERAL_MODES = {"incremental": (0x40, 6), "without": (0x00, 4), "never": (0x10, 4)}


def hp_literal(
    name: str | bytes | int, value: str | bytes, *, mode: str = "without", huffman_coded: bool = False
) -> bytes:
    """Literal header field (§6.2): `name` is a string (new name) or an index (indexed name)."""
    first, prefix = LITERAL_MODES[mode]
    if isinstance(name, int):
        head = hp_integer(name, prefix, first)
    else:
        head = hp_integer(0, prefix, first) + hp_string(name, huffman_coded=huffman_coded)
    return head + hp_string(value, huffman_coded=huffman_coded)


def hp_size_update(size: int) -> bytes:
    """Dynamic table size update (§6.3)."""
    return hp_integer(size, 5, 0x20)


def static_index(name: bytes, value: bytes | None = None) -> int:
    """Static table index of (name, value), or of the first entry called `name` when value is None; 0 if none."""
    for position, (entry_name, entry_value) in enumerate(STATIC_TABLE, start=1):
        if entry_name == name and (value is None or entry_value == value):
            return position
    return 0


def encode(headers: HeaderList) -> bytes:
    """A header block that leaves both dynamic tables alone: static indexes, else literals without indexing.

    Names and values go as given (no lower-casing, no validation), so the
    block can carry exactly the malformation a case needs.
    """
    out = bytearray()
    for raw_name, raw_value in headers:
        name, value = as_bytes(raw_name), as_bytes(raw_value)
        full = static_index(name, value)
        if full:
            out += hp_indexed(full)
            continue
        name_index = static_index(name)
        out += hp_literal(name_index if name_index else name, value)
    return bytes(out)


def sized_block(headers: HeaderList, size: int) -> bytes:
    """`encode(headers)` plus an `x-filler` field, exactly `size` octets long."""
    base = encode(headers)
    for value_length in range(max(size - len(base) - 16, 0), size - len(base) + 1):
        block = base + hp_literal("x-filler", "f" * value_length)
        if len(block) == size:
            return block
    raise ValueError(f"cannot make a block of {size} octets")


def request_headers(
    target: Target, path: str = "/hello", method: str = "GET", extra: HeaderList = ()
) -> list[tuple[str | bytes, str | bytes]]:
    """A well-formed request's fields: the four pseudo-header fields (§8.3.1), then `extra`."""
    return [(":method", method), (":scheme", target.scheme), (":authority", target.authority), (":path", path), *extra]


# --- a raw connection ------------------------------------------------------------------------------


class ServerClosedError(AssertionError):
    """The server closed the connection while a frame was expected."""


@dataclass
class Received:
    """One frame from the server; `headers` is set on the frame that completed a header block."""

    frame: Frame
    headers: list[tuple[bytes, bytes]] | None = None
    block: bytes = b""

    @property
    def kind(self) -> int:
        """The frame type."""
        kind = self.frame.type
        assert kind is not None
        return kind

    @property
    def stream_id(self) -> int:
        """The stream identifier."""
        stream_id: int = self.frame.stream_id
        return stream_id

    def has(self, flag: str) -> bool:
        """Whether the frame has the named flag (hyperframe names: END_STREAM, ACK, ...)."""
        return flag in self.frame.flags


@dataclass
class StreamState:
    """What the server sent on one stream."""

    blocks: list[list[tuple[bytes, bytes]]] = field(default_factory=list)
    data: bytearray = field(default_factory=bytearray)
    data_frames: list[int] = field(default_factory=list)
    ended: bool = False
    reset: int | None = None

    @property
    def final_index(self) -> int | None:
        """Index in `blocks` of the final (non-1xx) response head."""
        for position, block in enumerate(self.blocks):
            status = dict(block).get(b":status", b"")
            if not status.startswith(b"1"):
                return position
        return None


@dataclass
class Response:
    """A response read from a raw connection."""

    stream_id: int
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    trailers: list[tuple[str, str]]
    data_frames: list[int]
    informational: list[list[tuple[str, str]]]

    def header(self, name: str) -> str | None:
        """The last value of header `name`."""
        found = None
        for key, value in self.headers:
            if key == name:
                found = value
        return found


def text_pairs(block: list[tuple[bytes, bytes]]) -> list[tuple[str, str]]:
    """A decoded block as latin-1 text pairs."""
    return [(name.decode("latin-1"), value.decode("latin-1")) for name, value in block]


def describe(frame: Frame) -> str:
    """A one-line description of a frame for failure messages."""
    flags = ",".join(sorted(frame.flags))
    kind = type(frame).__name__.removesuffix("Frame").upper()
    detail = ""
    if isinstance(frame, GoAwayFrame):
        detail = f" last={frame.last_stream_id} {code_name(frame.error_code)} {frame.additional_data[:80]!r}"
    elif isinstance(frame, RstStreamFrame):
        detail = f" {code_name(frame.error_code)}"
    elif isinstance(frame, SettingsFrame):
        detail = f" {dict(frame.settings)}"
    elif isinstance(frame, DataFrame):
        detail = f" {len(frame.data)}B"
    return f"{kind}(stream={frame.stream_id}{' ' + flags if flags else ''}{detail})"


class FrameConn:
    """A raw HTTP/2 client connection to a target."""

    def __init__(self, target: Target, sock: socket.socket) -> None:
        self.target = target
        self.sock = sock
        self.buffer = bytearray()
        self.eof = False
        self.close_error: str | None = None
        self.send_failed = False
        self.decoder = hpack.Decoder()
        self.pending_block: tuple[int, bytearray] | None = None
        self.server_settings: dict[int, int] = {}
        self.streams: dict[int, StreamState] = {}
        self.seen: list[str] = []
        self.next_stream_id = 1
        self.auto_window = True
        self.auto_answer = True
        #: How long one send may block before the connection counts as stalled by the server.
        self.send_timeout = 10.0
        self.goaway: GoAwayFrame | None = None
        #: The largest frame payload the server sent, by frame type.
        self.largest: dict[int, int] = {}

    # -- opening

    @classmethod
    def open(
        cls,
        target: Target,
        settings: Sequence[tuple[int, int]] = (),
        *,
        handshake: bool = True,
        receive_buffer: int | None = None,
    ) -> FrameConn:
        """Connect; unless told otherwise send the preface with `settings` and complete the SETTINGS exchange."""
        conn = cls(target, target.connect(receive_buffer=receive_buffer))
        if handshake:
            conn.handshake(settings)
        return conn

    def __enter__(self) -> FrameConn:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the socket."""
        with contextlib.suppress(OSError):
            self.sock.close()

    def handshake(self, settings: Sequence[tuple[int, int]] = ()) -> None:
        """§3.4: preface + SETTINGS; the server's first frame must be SETTINGS; ACK it; wait for our ACK."""
        self.send(PREFACE + settings_frame(*settings))
        first = self.read()
        assert first is not None, "no server connection preface (SETTINGS) within the timeout"
        assert first.kind == T.SETTINGS, f"the server's first frame is {describe(first.frame)}, not SETTINGS (§3.4)"
        assert not first.has("ACK"), "the server's preface SETTINGS has the ACK flag"
        for pair in settings:
            if pair[0] == S.HEADER_TABLE_SIZE:
                self.decoder.max_allowed_table_size = pair[1]
        self.wait_for(lambda r: r.kind == T.SETTINGS and r.has("ACK"), "SETTINGS ACK for the client's SETTINGS")

    # -- sending

    def send(self, data: bytes) -> None:
        """Send bytes; a server that already closed is noted, not raised (the reading side reports it)."""
        try:
            self.sock.settimeout(self.send_timeout)
            self.sock.sendall(data)
        except OSError as error:
            self.send_failed = True
            self.close_error = self.close_error or f"send: {error!r}"

    def send_frame(self, kind: int, flags: int, stream_id: int, payload: bytes = b"", **kw: int) -> None:
        """Send one frame (see `frame`)."""
        self.send(frame(kind, flags, stream_id, payload, **kw))

    def new_stream(self) -> int:
        """The next client stream identifier (odd, increasing)."""
        stream_id = self.next_stream_id
        self.next_stream_id += 2
        return stream_id

    def headers(
        self,
        stream_id: int,
        headers: HeaderList | bytes,
        *,
        end_stream: bool = True,
        end_headers: bool = True,
        pad: int | None = None,
        priority: bytes | None = None,
    ) -> None:
        """Send a HEADERS frame with `headers` (encoded with `encode`) or a ready header block."""
        block = headers if isinstance(headers, bytes) else encode(headers)
        plain_id = stream_id & 0x7FFFFFFF
        if plain_id % 2 == 1 and plain_id >= self.next_stream_id:
            self.next_stream_id = plain_id + 2
        flags = (F.END_STREAM if end_stream else 0) | (F.END_HEADERS if end_headers else 0)
        payload = block
        if priority is not None:
            flags |= F.PRIORITY
            payload = priority + payload
        if pad is not None:
            flags |= F.PADDED
            payload = padded(payload, pad)
        self.send_frame(T.HEADERS, flags, stream_id, payload)

    def continuation(self, stream_id: int, block: HeaderList | bytes, *, end_headers: bool = True) -> None:
        """Send a CONTINUATION frame."""
        data = block if isinstance(block, bytes) else encode(block)
        self.send_frame(T.CONTINUATION, F.END_HEADERS if end_headers else 0, stream_id, data)

    def data(self, stream_id: int, payload: bytes, *, end_stream: bool = False, pad: int | None = None) -> None:
        """Send a DATA frame."""
        flags = F.END_STREAM if end_stream else 0
        if pad is not None:
            flags |= F.PADDED
            payload = padded(payload, pad)
        self.send_frame(T.DATA, flags, stream_id, payload)

    def settings(self, *pairs: tuple[int, int]) -> None:
        """Send SETTINGS (a larger SETTINGS_HEADER_TABLE_SIZE is allowed to our decoder at once; a smaller one
        only binds the server after its ACK, so the caller lowers `decoder.max_allowed_table_size` then)."""
        for ident, value in pairs:
            if ident == S.HEADER_TABLE_SIZE and value > self.decoder.max_allowed_table_size:
                self.decoder.max_allowed_table_size = value
        self.send(settings_frame(*pairs))

    def window_update(self, stream_id: int, increment: int) -> None:
        """Send WINDOW_UPDATE."""
        self.send_frame(T.WINDOW_UPDATE, 0, stream_id, window_payload(increment))

    def rst(self, stream_id: int, code: int = E.CANCEL) -> None:
        """Send RST_STREAM."""
        self.send_frame(T.RST_STREAM, 0, stream_id, rst_payload(code))

    def priority(self, stream_id: int, depends_on: int = 0, weight: int = 16, *, exclusive: bool = False) -> None:
        """Send PRIORITY."""
        self.send_frame(T.PRIORITY, 0, stream_id, priority_payload(depends_on, weight, exclusive=exclusive))

    def request(
        self,
        path: str = "/hello",
        method: str = "GET",
        extra: HeaderList = (),
        body: bytes | None = None,
        *,
        end_stream: bool | None = None,
    ) -> int:
        """Open a stream with a well-formed request (and a body in one DATA frame); return its id."""
        stream_id = self.new_stream()
        headers_end = body is None if end_stream is None else (end_stream and body is None)
        self.headers(stream_id, request_headers(self.target, path, method, extra), end_stream=headers_end)
        if body is not None:
            self.data(stream_id, body, end_stream=True if end_stream is None else end_stream)
        return stream_id

    # -- reading

    def _fill(self, timeout: float) -> bool:
        """Receive into the buffer; False on timeout. Sets `eof` on close or reset."""
        if self.eof:
            return False
        self.sock.settimeout(max(timeout, 0.001))
        try:
            data = self.sock.recv(262144)
        except TimeoutError:
            return False
        except ssl.SSLWantReadError:
            return False
        except OSError as error:
            self.close_error = self.close_error or f"recv: {error!r}"
            data = b""
        if not data:
            self.eof = True
            return False
        self.buffer += data
        return True

    def _take_frame(self) -> Received | None:
        if len(self.buffer) < 9:
            return None
        length = int.from_bytes(self.buffer[:3], "big")
        if len(self.buffer) < 9 + length:
            return None
        header = bytes(self.buffer[:9])
        body = bytes(self.buffer[9 : 9 + length])
        del self.buffer[: 9 + length]
        parsed, _ = Frame.parse_frame_header(memoryview(header), strict=False)
        parsed.parse_body(memoryview(body))
        kind = parsed.type
        assert kind is not None
        self.largest[kind] = max(self.largest.get(kind, 0), length)
        received = Received(parsed)
        self._process(received)
        return received

    def read(self, timeout: float = TIMEOUT) -> Received | None:
        """The next frame, or None when nothing arrives within `timeout`; ServerClosedError at EOF."""
        deadline = time.monotonic() + timeout
        while True:
            received = self._take_frame()
            if received is not None:
                return received
            if self.eof:
                raise ServerClosedError(f"the server closed the connection ({self.close_error or 'EOF'}); {self.log()}")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            self._fill(remaining)

    def wait_for(self, predicate: object, what: str, timeout: float = TIMEOUT) -> Received:
        """Read until a frame satisfies `predicate`; fail on timeout or close."""
        assert callable(predicate)
        deadline = time.monotonic() + timeout
        while True:
            received = self.read(max(deadline - time.monotonic(), 0))
            if received is None:
                raise AssertionError(f"no {what} within {timeout:.1f}s; {self.log()}")
            if predicate(received):
                return received

    def log(self) -> str:
        """The frames received so far (the last 12), for failure messages."""
        shown = self.seen[-12:]
        more = f"... {len(self.seen) - 12} earlier, " if len(self.seen) > 12 else ""
        return f"received: [{more}{', '.join(shown)}]"

    def stream_state(self, stream_id: int) -> StreamState:
        """What the server sent on a stream (created empty on first use)."""
        return self.streams.setdefault(stream_id, StreamState())

    def _decode(self, received: Received, stream_id: int, block: bytes, *, end_stream: bool) -> None:
        try:
            decoded = [(bytes(name), bytes(value)) for name, value in self.decoder.decode(block, raw=True)]
        except hpack.HPACKError as error:
            raise AssertionError(f"the server sent a header block we cannot decode: {error!r}") from error
        received.headers = decoded
        received.block = block
        state = self.stream_state(stream_id)
        state.blocks.append(decoded)
        if end_stream:
            state.ended = True

    def _process(self, received: Received) -> None:  # noqa: PLR0912 (one branch per frame type)
        frame_ = received.frame
        self.seen.append(describe(frame_))
        if isinstance(frame_, HeadersFrame | PushPromiseFrame):
            end_stream = isinstance(frame_, HeadersFrame) and "END_STREAM" in frame_.flags
            if "END_HEADERS" in frame_.flags:
                self._decode(received, frame_.stream_id, frame_.data, end_stream=end_stream)
            else:
                self.pending_block = (frame_.stream_id, bytearray(frame_.data))
                if end_stream:
                    self.stream_state(frame_.stream_id).ended = True
        elif isinstance(frame_, ContinuationFrame):
            assert self.pending_block is not None, "the server sent CONTINUATION outside a header block"
            stream_id, block = self.pending_block
            assert frame_.stream_id == stream_id, "the server's CONTINUATION is on another stream"
            block += frame_.data
            if "END_HEADERS" in frame_.flags:
                self.pending_block = None
                ended = self.stream_state(stream_id).ended
                self._decode(received, stream_id, bytes(block), end_stream=ended)
        elif isinstance(frame_, DataFrame):
            state = self.stream_state(frame_.stream_id)
            state.data += frame_.data
            state.data_frames.append(len(frame_.data))
            if "END_STREAM" in frame_.flags:
                state.ended = True
            if self.auto_window and frame_.flow_controlled_length:
                self.window_update(0, frame_.flow_controlled_length)
                if not state.ended:
                    self.window_update(frame_.stream_id, frame_.flow_controlled_length)
        elif isinstance(frame_, RstStreamFrame):
            self.stream_state(frame_.stream_id).reset = frame_.error_code
        elif isinstance(frame_, SettingsFrame):
            if "ACK" not in frame_.flags:
                self.server_settings.update(frame_.settings)
                if self.auto_answer:
                    self.send_frame(T.SETTINGS, F.ACK, 0)
        elif isinstance(frame_, PingFrame):
            if "ACK" not in frame_.flags and self.auto_answer:
                self.send_frame(T.PING, F.ACK, 0, bytes(frame_.opaque_data))
        elif isinstance(frame_, GoAwayFrame):
            self.goaway = frame_

    def ping(self, payload: bytes = b"h2spec!!", timeout: float = TIMEOUT) -> None:
        """A PING round trip: the server processed everything sent before it and the connection is up."""
        self.send_frame(T.PING, 0, 0, payload)
        self.wait_for(
            lambda r: r.kind == T.PING and r.has("ACK") and bytes(r.frame.opaque_data) == payload,
            f"PING ACK for {payload!r}",
            timeout,
        )

    def response(self, stream_id: int, timeout: float = TIMEOUT) -> Response:
        """Read until the stream ends; fail if it is reset or the connection goes away."""
        deadline = time.monotonic() + timeout
        state = self.stream_state(stream_id)
        while not state.ended:
            if state.reset is not None:
                raise AssertionError(f"stream {stream_id} was reset with {code_name(state.reset)}; {self.log()}")
            graceful = self.goaway is not None and self.goaway.error_code == E.NO_ERROR
            if self.goaway is not None and not (graceful and stream_id <= self.goaway.last_stream_id):
                raise AssertionError(f"GOAWAY while waiting for stream {stream_id}; {self.log()}")
            received = self.read(max(deadline - time.monotonic(), 0))
            if received is None:
                raise AssertionError(f"stream {stream_id} did not end within {timeout:.1f}s; {self.log()}")
        return self.response_of(stream_id)

    def response_of(self, stream_id: int) -> Response:
        """The response received so far on a stream."""
        state = self.stream_state(stream_id)
        final = state.final_index
        assert final is not None, f"no final response head on stream {stream_id}; {self.log()}"
        head = text_pairs(state.blocks[final])
        pseudo = dict(pair for pair in head if pair[0].startswith(":"))
        assert ":status" in pseudo, f"response without :status: {head}"
        trailers = text_pairs(state.blocks[final + 1]) if len(state.blocks) > final + 1 else []
        return Response(
            stream_id=stream_id,
            status=int(pseudo[":status"]),
            headers=[pair for pair in head if not pair[0].startswith(":")],
            body=bytes(state.data),
            trailers=trailers,
            data_frames=list(state.data_frames),
            informational=[text_pairs(block) for block in state.blocks[:final]],
        )

    def closes(self, timeout: float = TIMEOUT) -> bool:
        """Whether the server closes the connection within `timeout` (frames before the close are read)."""
        deadline = time.monotonic() + timeout
        try:
            while time.monotonic() < deadline:
                self.read(max(deadline - time.monotonic(), 0))
        except ServerClosedError:
            return True
        return False

    def quiet_for(self, seconds: float, stream_id: int | None = None) -> list[Received]:
        """Frames received in `seconds` (on `stream_id` only, if given); the connection must stay open."""
        deadline = time.monotonic() + seconds
        got: list[Received] = []
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return got
            received = self.read(remaining)
            if received is not None and (stream_id is None or received.stream_id == stream_id):
                got.append(received)


# --- expectations ----------------------------------------------------------------------------------


def codes_text(codes: Sequence[int]) -> str:
    """`PROTOCOL_ERROR or STREAM_CLOSED`."""
    return " or ".join(code_name(code) for code in codes)


def get_hello(target: Target) -> Response:
    """GET /hello on a new connection."""
    with FrameConn.open(target) as conn:
        return conn.response(conn.request("/hello"))


def assert_still_serving(target: Target) -> None:
    """The server answers GET /hello on a new connection."""
    response = get_hello(target)
    assert (response.status, response.body) == (200, b"hello"), "the server no longer serves a new connection"


def expect_connection_error(conn: FrameConn, *codes: int, timeout: float = TIMEOUT) -> GoAwayFrame:
    """RFC 9113 §5.4.1: a GOAWAY with one of `codes`, then the server closes the connection."""
    goaway = conn.goaway
    if goaway is None:
        try:
            got = conn.wait_for(lambda r: r.kind == T.GOAWAY, f"GOAWAY {codes_text(codes)}", timeout)
        except ServerClosedError as closed:
            raise AssertionError(f"connection closed without GOAWAY {codes_text(codes)} ({closed})") from None
        frame_ = got.frame
        assert isinstance(frame_, GoAwayFrame)
        goaway = frame_
    assert goaway.error_code in codes, f"GOAWAY {code_name(goaway.error_code)}, expected {codes_text(codes)}"
    assert conn.closes(timeout), f"the server did not close the connection after GOAWAY (§5.4.1); {conn.log()}"
    conn.close()
    assert_still_serving(conn.target)
    return goaway


def _stream_outcome(conn: FrameConn, stream_id: int, codes: Sequence[int], timeout: float) -> GoAwayFrame | None:
    """Read until RST_STREAM on `stream_id` (None returned) or GOAWAY (returned); check the code."""
    state = conn.stream_state(stream_id)
    deadline = time.monotonic() + timeout

    def settled() -> bool:
        # A RST_STREAM NO_ERROR after a complete response (§8.1) is not an error outcome unless one is expected.
        reset = state.reset is not None and (state.reset != E.NO_ERROR or E.NO_ERROR in codes)
        return reset or conn.goaway is not None

    while not settled():
        try:
            received = conn.read(max(deadline - time.monotonic(), 0))
        except ServerClosedError as closed:
            raise AssertionError(f"connection closed without RST_STREAM/GOAWAY {codes_text(codes)}: {closed}") from None
        if received is None:
            raise AssertionError(f"no RST_STREAM or GOAWAY {codes_text(codes)} for stream {stream_id}; {conn.log()}")
    if conn.goaway is not None:
        return conn.goaway
    assert state.reset is not None
    assert state.reset in codes, f"RST_STREAM {code_name(state.reset)}, expected {codes_text(codes)}"
    return None


def expect_stream_error(conn: FrameConn, stream_id: int, *codes: int, timeout: float = TIMEOUT) -> None:
    """RFC 9113 §5.4.2: RST_STREAM with one of `codes` on the stream; the connection stays usable."""
    goaway = _stream_outcome(conn, stream_id, codes, timeout)
    assert goaway is None, (
        f"connection error GOAWAY {code_name(goaway.error_code)} where a stream error "
        f"(RST_STREAM {codes_text(codes)}) was expected; {conn.log()}"
    )
    conn.ping(b"afterrst")
    conn.close()
    assert_still_serving(conn.target)


def expect_stream_or_connection_error(conn: FrameConn, stream_id: int, *codes: int, timeout: float = TIMEOUT) -> None:
    """Where the RFC allows either: RST_STREAM or GOAWAY with one of `codes`."""
    goaway = _stream_outcome(conn, stream_id, codes, timeout)
    if goaway is None:
        conn.ping(b"afterrst")
    else:
        assert goaway.error_code in codes, f"GOAWAY {code_name(goaway.error_code)}, expected {codes_text(codes)}"
        assert conn.closes(timeout), f"the server did not close the connection after GOAWAY; {conn.log()}"
    conn.close()
    assert_still_serving(conn.target)


def expect_malformed(conn: FrameConn, stream_id: int, path: str | None = None, timeout: float = TIMEOUT) -> None:
    """RFC 9113 §8.1.1: a malformed request is a stream error PROTOCOL_ERROR (RST_STREAM; a 4xx may come first).

    §5.4.1 lets a server end the whole connection instead, so GOAWAY
    PROTOCOL_ERROR is accepted too. A 2xx response means the request was
    served. When `path` is given, the application must not have been called
    for it (an intermediary "MUST NOT forward a malformed request").
    """
    state = conn.stream_state(stream_id)
    try:
        _stream_outcome(conn, stream_id, [E.PROTOCOL_ERROR], timeout)
    finally:
        final = state.final_index
        if final is not None:
            status = dict(state.blocks[final]).get(b":status", b"?").decode()
            assert status.startswith("4"), f"malformed request answered {status}, not reset; {conn.log()}"
    if conn.goaway is None:
        conn.ping(b"aftermal")
    else:
        assert conn.closes(timeout), f"the server did not close the connection after GOAWAY; {conn.log()}"
    conn.close()
    if path is not None:
        calls = [event for event in conn.target.events() if event.endswith(" " + path)]
        assert not calls, f"the application was called for the malformed request: {calls}"
    assert_still_serving(conn.target)


def expect_ignored(conn: FrameConn) -> None:
    """The frames sent were ignored: no GOAWAY or RST_STREAM, and a PING is still answered."""
    conn.ping(b"ignored?")
    assert conn.goaway is None, f"GOAWAY after a frame the server must ignore; {conn.log()}"
    resets = {sid: code_name(s.reset) for sid, s in conn.streams.items() if s.reset not in (None, E.NO_ERROR)}
    assert not resets, f"streams reset after a frame the server must ignore: {resets}"


# --- an h2 client ----------------------------------------------------------------------------------


@dataclass
class H2Response:
    """A response read with the h2 package."""

    status: int = 0
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytearray = field(default_factory=bytearray)
    trailers: list[tuple[str, str]] = field(default_factory=list)
    ended: bool = False
    reset: int | None = None
    data_sizes: list[int] = field(default_factory=list)

    def header(self, name: str) -> str | None:
        """The last value of header `name`."""
        found = None
        for key, value in self.headers:
            if key == name:
                found = value
        return found


@dataclass
class Outgoing:
    """A request body still to send under flow control."""

    body: bytes
    trailers: list[tuple[str, str]] | None
    offset: int = 0


class H2Client:
    """A client connection driven by the h2 package (RFC-conformant framing, flow control both ways)."""

    def __init__(self, target: Target, settings: dict[int, int] | None = None, *, auto_window: bool = True) -> None:
        self.target = target
        self.sock = target.connect()
        config = h2.config.H2Configuration(client_side=True, header_encoding="utf-8")
        self.conn = h2.connection.H2Connection(config=config)
        self.conn.initiate_connection()
        if settings:
            self.conn.update_settings(settings)
        self.responses: dict[int, H2Response] = {}
        self.outgoing: dict[int, Outgoing] = {}
        self.auto_window = auto_window
        self.terminated: h2.events.ConnectionTerminated | None = None
        self.flush()

    def __enter__(self) -> H2Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Send GOAWAY and close."""
        try:
            self.conn.close_connection()
            self.flush()
        except (OSError, h2.exceptions.ProtocolError):
            pass
        self.sock.close()

    def flush(self) -> None:
        """Send what h2 has queued."""
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def start(
        self,
        method: str,
        path: str,
        headers: Sequence[tuple[str, str]] = (),
        body: bytes = b"",
        trailers: list[tuple[str, str]] | None = None,
    ) -> int:
        """Open a stream with a request; the body (and trailers) follow under flow control."""
        stream_id: int = self.conn.get_next_available_stream_id()
        fields = [
            (":method", method),
            (":scheme", self.target.scheme),
            (":authority", self.target.authority),
            (":path", path),
            *headers,
        ]
        end = not body and not trailers
        self.conn.send_headers(stream_id, fields, end_stream=end)
        self.responses[stream_id] = H2Response()
        if not end:
            self.outgoing[stream_id] = Outgoing(body, trailers)
        self._pump()
        self.flush()
        return stream_id

    def _pump(self) -> None:
        for stream_id, out in list(self.outgoing.items()):
            while out.offset < len(out.body):
                window = min(self.conn.local_flow_control_window(stream_id), self.conn.max_outbound_frame_size)
                if window <= 0:
                    break
                chunk = out.body[out.offset : out.offset + window]
                self.conn.send_data(stream_id, chunk)
                out.offset += len(chunk)
            if out.offset >= len(out.body):
                if out.trailers:
                    self.conn.send_headers(stream_id, out.trailers, end_stream=True)
                else:
                    self.conn.end_stream(stream_id)
                del self.outgoing[stream_id]

    def _handle(self, event: h2.events.Event) -> None:
        if isinstance(event, h2.events.ResponseReceived):
            response = self.responses.setdefault(event.stream_id, H2Response())
            for name, value in event.headers:
                key, text = as_text(name), as_text(value)
                if key == ":status":
                    response.status = int(text)
                else:
                    response.headers.append((key, text))
        elif isinstance(event, h2.events.DataReceived):
            response = self.responses.setdefault(event.stream_id, H2Response())
            response.body += event.data
            response.data_sizes.append(len(event.data))
            if self.auto_window and event.flow_controlled_length:
                self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.TrailersReceived):
            self.responses.setdefault(event.stream_id, H2Response()).trailers = [
                (as_text(name), as_text(value)) for name, value in event.headers
            ]
        elif isinstance(event, h2.events.StreamEnded):
            self.responses.setdefault(event.stream_id, H2Response()).ended = True
        elif isinstance(event, h2.events.StreamReset):
            self.responses.setdefault(event.stream_id, H2Response()).reset = int(event.error_code)
            self.outgoing.pop(event.stream_id, None)
        elif isinstance(event, h2.events.ConnectionTerminated):
            self.terminated = event

    def wait(self, *stream_ids: int, timeout: float = TIMEOUT * 3) -> list[H2Response]:
        """Exchange frames until every stream ended or was reset."""
        deadline = time.monotonic() + timeout
        while not all(self.responses[s].ended or self.responses[s].reset is not None for s in stream_ids):
            assert self.terminated is None, f"connection terminated: {self.terminated}"
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"streams {stream_ids} unfinished after {timeout:.0f}s"
            self.sock.settimeout(remaining)
            try:
                data = self.sock.recv(262144)
            except TimeoutError:
                continue
            assert data, "the server closed the connection"
            for event in self.conn.receive_data(data):
                self._handle(event)
            self._pump()
            self.flush()
        return [self.responses[s] for s in stream_ids]

    def request(
        self,
        method: str,
        path: str,
        headers: Sequence[tuple[str, str]] = (),
        body: bytes = b"",
        trailers: list[tuple[str, str]] | None = None,
    ) -> H2Response:
        """One whole exchange."""
        stream_id = self.start(method, path, headers, body, trailers)
        (response,) = self.wait(stream_id)
        return response
