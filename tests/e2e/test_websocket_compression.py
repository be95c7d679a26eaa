"""permessage-deflate (RFC 7692) with `--ws-compress` (issue 6 item 4).

- the `websockets` client library, whose permessage-deflate is on by default
  (`compression="deflate"`) and configurable with
  `ClientPerMessageDeflateFactory`: negotiation, round trips, fragmented and
  large messages, context takeover on and off, window sizes;
- a raw-socket client with Python's zlib for what a library hides: RSV1 on
  the wire (small messages go uncompressed), the server's context takeover,
  a decompression bomb (1009, and the server goes on serving), RSV1 where it
  is not allowed (1002), invalid DEFLATE data, offers that must be declined.
"""

from __future__ import annotations

import os
import zlib
from typing import TYPE_CHECKING

import pytest
from websockets.extensions.permessage_deflate import ClientPerMessageDeflateFactory
from websockets.sync.client import connect

pytest.register_assert_rewrite("websocket_support")
from websocket_support import (  # noqa: E402
    APP,
    BINARY,
    CONT,
    PING,
    TEXT,
    Frame,
    WebSocketConnection,
    assert_ws_still_serving,
    handshake,
)

pytest_plugins = ("websocket_support",)

if TYPE_CHECKING:
    from conftest import Server, ServerPool

TAIL = b"\x00\x00\xff\xff"
SMALL = 64  # MessageDeflater.minimumLength: shorter messages go out uncompressed


@pytest.fixture(scope="module")
def deflate_server(server_pool: ServerPool) -> Server:
    """ws_apps:app with --ws-compress."""
    return server_pool.get(APP, "--ws-compress")


@pytest.fixture(scope="module")
def small_limit_server(server_pool: ServerPool) -> Server:
    """--ws-compress with a 1 MiB message limit (the inflated size counts)."""
    return server_pool.get(APP, "--ws-compress", "--ws-max-message", "1m")


@pytest.fixture(scope="module")
def plain_server(server_pool: ServerPool) -> Server:
    """ws_apps:app without --ws-compress (the default)."""
    return server_pool.get(APP)


def url(server: Server, path: str = "/echo") -> str:
    """ws://127.0.0.1:PORT/path."""
    return f"ws://127.0.0.1:{server.port}{path}"


def deflate(data: bytes, wbits: int = 15) -> bytes:
    """One message compressed as RFC 7692 §7.2.1 says: sync flush, tail removed."""
    compressor = zlib.compressobj(wbits=-wbits)
    out = compressor.compress(data) + compressor.flush(zlib.Z_SYNC_FLUSH)
    assert out.endswith(TAIL)
    return out[:-4]


class Inflater:
    """The client's decompressor for the server's messages (context kept across messages)."""

    def __init__(self) -> None:
        self.decompressor = zlib.decompressobj(wbits=-15)

    def message(self, ws: WebSocketConnection) -> tuple[Frame, bytes]:
        """The next data message: its first frame, and its payload (inflated if RSV1)."""
        first = None
        payload = b""
        while True:
            f = ws.read_frame()
            if f.opcode == PING:
                continue
            if first is None:
                assert f.opcode in (TEXT, BINARY), f
                first = f
            else:
                assert f.opcode == CONT, f
                assert f.rsv == 0, f
            payload += f.payload
            if f.fin:
                break
        assert first.rsv in (0, 4), first  # only RSV1, and only on the first frame
        if first.rsv == 4:
            payload = self.decompressor.decompress(payload + TAIL)
        return first, payload


def compressed_handshake(server: Server, offer: str = "permessage-deflate") -> WebSocketConnection:
    """A raw upgrade offering `offer`."""
    return handshake(server, "/echo", [("Sec-WebSocket-Extensions", offer)])


# --- negotiation ------------------------------------------------------------------------------------------


def test_websockets_default_offer_is_accepted(deflate_server: Server) -> None:
    with connect(url(deflate_server), open_timeout=10) as ws:  # compression="deflate" is the default
        assert ws.response is not None
        assert ws.response.headers["Sec-WebSocket-Extensions"] == "permessage-deflate"
        ws.send("compressible " * 100)
        assert ws.recv(timeout=10) == "compressible " * 100


def test_not_negotiated_without_the_option(plain_server: Server) -> None:
    with connect(url(plain_server), open_timeout=10) as ws:
        assert ws.response is not None
        assert "Sec-WebSocket-Extensions" not in ws.response.headers
        ws.send("x" * 1000)
        assert ws.recv(timeout=10) == "x" * 1000
    with compressed_handshake(plain_server) as ws:
        assert ws.response.header("Sec-WebSocket-Extensions") is None


@pytest.mark.parametrize(
    ("offer", "answer"),
    [
        ("permessage-deflate; client_max_window_bits", "permessage-deflate"),
        (
            "permessage-deflate; server_no_context_takeover; client_no_context_takeover",
            "permessage-deflate; server_no_context_takeover; client_no_context_takeover",
        ),
        (
            "permessage-deflate; server_max_window_bits=10; client_max_window_bits=9",
            "permessage-deflate; server_max_window_bits=10; client_max_window_bits=9",
        ),
        ('permessage-deflate; server_max_window_bits="12"', "permessage-deflate; server_max_window_bits=12"),
        # Invalid offers are declined and the next one taken (RFC 7692 §5.1, §7).
        ("permessage-deflate; foo, permessage-deflate", "permessage-deflate"),
        (
            "permessage-deflate; server_no_context_takeover; server_no_context_takeover, permessage-deflate",
            "permessage-deflate",
        ),
        (
            "permessage-deflate; server_max_window_bits=16, permessage-deflate; client_no_context_takeover",
            "permessage-deflate; client_no_context_takeover",
        ),
        ("permessage-deflate; server_max_window_bits", None),
        ("permessage-deflate; client_max_window_bits=7", None),
        ("permessage-deflate; client_no_context_takeover=1", None),
        ("x-webkit-deflate-frame, permessage-deflate", "permessage-deflate"),
        ("x-webkit-deflate-frame", None),
        ("not a ; valid = list", None),
    ],
)
def test_offers(deflate_server: Server, offer: str, answer: str | None) -> None:
    with compressed_handshake(deflate_server, offer) as ws:
        assert ws.response.header("Sec-WebSocket-Extensions") == answer
        if answer is None:
            # Not negotiated: RSV1 is a protocol error.
            ws.send(TEXT, deflate(b"a" * 100), rsv=4)
            ws.expect_protocol_close(1002)
        else:
            ws.send(TEXT, deflate(b"hello " * 20), rsv=4)
            assert Inflater().message(ws)[1] == b"hello " * 20


# --- round trips with the websockets library ---------------------------------------------------------------


@pytest.mark.parametrize(
    "factory",
    [
        ClientPerMessageDeflateFactory(),
        ClientPerMessageDeflateFactory(server_no_context_takeover=True, client_no_context_takeover=True),
        ClientPerMessageDeflateFactory(server_max_window_bits=9, client_max_window_bits=9),
        ClientPerMessageDeflateFactory(server_max_window_bits=11, client_max_window_bits=True),
        ClientPerMessageDeflateFactory(client_no_context_takeover=True, server_max_window_bits=15),
    ],
    ids=["default", "no-context-takeover", "window-9", "window-11", "client-no-takeover"],
)
def test_websockets_round_trips(deflate_server: Server, factory: ClientPerMessageDeflateFactory) -> None:
    text = "".join(f"line {i % 311}: the quick brown fox ✓\n" for i in range(100_000))  # ~3.7 MB, compressible
    noise = os.urandom(300_000)  # incompressible: deflate makes it slightly bigger
    with connect(url(deflate_server), extensions=[factory], compression=None, open_timeout=10, max_size=None) as ws:
        assert ws.response is not None
        assert ws.response.headers["Sec-WebSocket-Extensions"].startswith("permessage-deflate")
        # Random 124 and 65530 bytes deflate to more than 125 / 65535: the frame header outgrows its guess.
        edges = [os.urandom(124), os.urandom(65_530)]
        for message in ["a", "short ✓", "x" * SMALL, text, noise, b"\x00\xff" * 5000, text[:1000], "", b"", *edges]:
            ws.send(message)
            assert ws.recv(timeout=30) == message
        # Fragmented messages: RSV1 on the first frame only, one DEFLATE stream across the frames.
        ws.send(["frag", "mented ", "compressed ✓ " * 50])
        assert ws.recv(timeout=10) == "fragmented compressed ✓ " + "compressed ✓ " * 49
        ws.send([noise[:70_000], noise[70_000:]])
        assert ws.recv(timeout=10) == noise
        for i in range(50):  # many messages over one context
            ws.send(f"message {i} " * 20)
            assert ws.recv(timeout=10) == f"message {i} " * 20


# --- on the wire ----------------------------------------------------------------------------------------------


def test_small_messages_are_sent_uncompressed(deflate_server: Server) -> None:
    inflater = Inflater()
    with compressed_handshake(deflate_server) as ws:
        for size in (0, 1, SMALL - 1):
            ws.send(TEXT, deflate(b"s" * size), rsv=4)
            first, payload = inflater.message(ws)
            assert (first.rsv, payload) == (0, b"s" * size)
        for size in (SMALL, 1000):
            ws.send(BINARY, b"u" * size)  # the client may send uncompressed too
            first, payload = inflater.message(ws)
            assert first.rsv == 4
            assert len(first.payload) < size // 2
            assert payload == b"u" * size


@pytest.mark.parametrize("takeover", [True, False])
def test_server_context_takeover(deflate_server: Server, takeover: bool) -> None:
    offer = "permessage-deflate" if takeover else "permessage-deflate; server_no_context_takeover"
    inflater = Inflater()
    message = b"The same hundred bytes, twice, to see whether the window is kept between messages...!!"
    with compressed_handshake(deflate_server, offer) as ws:
        sizes = []
        for _ in range(2):
            ws.send(TEXT, message)
            first, payload = inflater.message(ws)
            if not takeover:
                inflater = Inflater()  # the server reset: so may we
            assert (first.rsv, payload) == (4, message)
            sizes.append(len(first.payload))
    if takeover:
        assert sizes[1] < 10 < sizes[0], sizes  # one back-reference into the previous message
    else:
        assert sizes[1] == sizes[0], sizes


def test_client_context_takeover_is_followed(deflate_server: Server) -> None:
    # With takeover the client's second message refers back into the first.
    compressor = zlib.compressobj(wbits=-15)

    def send(ws: WebSocketConnection, data: bytes) -> None:
        out = compressor.compress(data) + compressor.flush(zlib.Z_SYNC_FLUSH)
        ws.send(TEXT, out[:-4], rsv=4)

    message = b"repeated message body " * 10
    with compressed_handshake(deflate_server) as ws:
        inflater = Inflater()
        send(ws, message)
        assert inflater.message(ws)[1] == message
        send(ws, message)
        assert inflater.message(ws)[1] == message
    # client_no_context_takeover answered: a back-reference into the last message cannot be resolved.
    compressor = zlib.compressobj(wbits=-15)
    with compressed_handshake(deflate_server, "permessage-deflate; client_no_context_takeover") as ws:
        send(ws, message)
        assert Inflater().message(ws)[1] == message
        send(ws, message)
        ws.expect_protocol_close(1002)


def test_fragmented_compressed_message_raw(deflate_server: Server) -> None:
    data = b"fragmented and compressed " * 200
    packed = deflate(data)
    third = len(packed) // 3
    with compressed_handshake(deflate_server) as ws:
        ws.send(BINARY, packed[:third], fin=False, rsv=4)
        ws.send(PING, b"between")  # a control frame in the middle, never compressed
        ws.send(CONT, packed[third : 2 * third], fin=False)
        ws.send(CONT, packed[2 * third :])
        f = ws.read_frame()
        assert (f.opcode, f.payload) == (0xA, b"between")
        assert Inflater().message(ws)[1] == data


# --- errors -------------------------------------------------------------------------------------------------


def test_decompression_bomb_is_1009_and_the_server_goes_on(small_limit_server: Server) -> None:
    bomb = deflate(b"\x00" * (64 << 20))  # 64 MiB of zeros: ~64 KB on the wire
    assert len(bomb) < 100_000
    with compressed_handshake(small_limit_server) as ws:
        ws.send(BINARY, bomb, rsv=4)
        ws.expect_protocol_close(1009)
    # Fragmented, the limit is still the inflated size.
    with compressed_handshake(small_limit_server) as ws:
        ws.send(BINARY, bomb[:1000], fin=False, rsv=4)
        ws.send(CONT, bomb[1000:])
        ws.expect_protocol_close(1009)
    # Just under the limit is fine.
    with compressed_handshake(small_limit_server) as ws:
        ws.send(BINARY, deflate(b"\x00" * ((1 << 20) - 1)), rsv=4)
        assert Inflater().message(ws)[1] == b"\x00" * ((1 << 20) - 1)
    assert_ws_still_serving(small_limit_server)


def test_rsv1_without_negotiation_is_1002(deflate_server: Server, plain_server: Server) -> None:
    for server in (deflate_server, plain_server):
        with handshake(server, "/echo") as ws:  # no offer
            ws.send(TEXT, deflate(b"x" * 100), rsv=4)
            ws.expect_protocol_close(1002)


@pytest.mark.parametrize("where", ["continuation", "ping", "close"])
def test_rsv1_where_not_allowed_is_1002(deflate_server: Server, where: str) -> None:
    with compressed_handshake(deflate_server) as ws:
        if where == "continuation":
            ws.send(TEXT, deflate(b"x" * 100), fin=False, rsv=4)
            ws.send(CONT, b"", rsv=4)
        elif where == "ping":
            ws.send(PING, b"p", rsv=4)
        else:
            ws.send(0x8, b"\x03\xe8", rsv=4)
        ws.expect_protocol_close(1002)


def test_invalid_deflate_data_is_1002(deflate_server: Server) -> None:
    with compressed_handshake(deflate_server) as ws:
        ws.send(BINARY, b"\xff\xff\xff\xff", rsv=4)  # BTYPE 11: reserved
        ws.expect_protocol_close(1002)
    assert_ws_still_serving(deflate_server)


def test_compressed_invalid_utf8_is_1007(deflate_server: Server) -> None:
    with compressed_handshake(deflate_server) as ws:
        ws.send(TEXT, deflate(b"valid " * 20 + b"\xc3\x28"), rsv=4)
        ws.expect_protocol_close(1007)
