"""WebSocket flow control and liveness over HTTP/1.1 for ASGI (issue 6 item 3).

- receive backpressure: a slow application's queue fills, the server stops
  reading, the client's sends stall and the server's memory stays bounded;
- send backpressure: a client that does not read makes the application's
  `send()` wait rather than the server buffering without end;
- a peer that vanishes without a close frame is `websocket.disconnect` 1006;
- a message is never lost by a `receive()` cancelled after it was ready
  (asyncio.timeout / wait_for on 3.12+, anyio cancel scopes).

Served application: tests/apps/ws_apps.py (/slow, /flood, /echo, /receive-race).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from typing import TYPE_CHECKING

import pytest
from rawhttp import RawConnection, request

pytest.register_assert_rewrite("websocket_support")
from websocket_support import (  # noqa: E402
    APP,
    BINARY,
    CONT,
    TEXT,
    WebSocketConnection,
    accept_for,
    assert_ws_still_serving,
    frame,
    handshake,
    new_key,
    records,
    unique,
    upgrade_headers,
    wait_record,
)

pytest_plugins = ("websocket_support",)

if TYPE_CHECKING:
    from collections.abc import Callable

    from conftest import Server, ServerPool

MESSAGE = 64 * 1024


def rss_kib(server: Server) -> int:
    """VmRSS of the (single-process) server."""
    return server.vm_kib("VmRSS")


def small_buffer_handshake(server: Server, path: str, rcvbuf: int | None = None) -> WebSocketConnection:
    """A WebSocket on a socket with a small receive buffer (set before connecting)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.settimeout(10)
    sock.connect(("127.0.0.1", server.port))
    raw = RawConnection(sock)
    key = new_key()
    raw.send(request("GET", path, upgrade_headers(key)))
    response = raw.read_head()
    assert response.status == 101
    assert response.header("Sec-WebSocket-Accept") == accept_for(key)
    return WebSocketConnection(raw, response)


class Blaster:
    """Send the same masked 64 KiB binary frame in a loop from a thread, counting bytes the kernel took."""

    def __init__(self, sock: socket.socket, total: int) -> None:
        self.sock = sock
        self.total = total
        self.sent = 0
        self.frame = frame(BINARY, b"m" * MESSAGE)
        self.stop = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self) -> None:
        view = memoryview(self.frame * 4)
        try:
            while self.sent < self.total and not self.stop:
                # Whole frames only: sendall of a block of four.
                self.sock.sendall(view)
                self.sent += len(view)
        except OSError:
            pass


@pytest.mark.timeout(60)
def test_slow_consumer_stops_the_reading_and_memory_stays_bounded(start_server: Callable[..., Server]) -> None:
    server = start_server(APP)
    assert_ws_still_serving(server)
    before = rss_kib(server)
    ident = unique("slow")
    total = 512 << 20
    ws = small_buffer_handshake(server, f"/slow?id={ident}")
    with ws:
        ws.raw.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 256 * 1024)
        blaster = Blaster(ws.raw.sock, total)
        # The application takes 10 messages (640 KiB) a second; an unbounded reader would take hundreds of MiB.
        time.sleep(3.0)
        sent = blaster.sent
        consumed = records(server, ident)["bytes"]
        assert sent < 64 << 20, f"the server read {sent >> 20} MiB for an application that took {consumed >> 10} KiB"
        assert sent - consumed < 32 << 20, (sent, consumed)
        grown = rss_kib(server) - before
        assert grown < 48 * 1024, f"server RSS grew by {grown} KiB while the application was not reading"
        # The application keeps receiving, one message at a time.
        assert 5 <= records(server, ident)["received"] < 128
        blaster.stop = True
    assert wait_record(server, ident, "disconnect")["code"] == 1006
    assert_ws_still_serving(server)


@pytest.mark.timeout(60)
def test_send_backpressure_stalls_the_app_when_the_client_does_not_read(start_server: Callable[..., Server]) -> None:
    server = start_server(APP)
    ident = unique("flood")
    before = rss_kib(server)
    ws = small_buffer_handshake(server, f"/flood?id={ident}", rcvbuf=64 * 1024)
    with ws:
        deadline = time.monotonic() + 20
        last = -1
        while True:
            count = records(server, ident).get("sent", 0)
            if count == last and count > 0:
                break
            assert time.monotonic() < deadline, f"the application's sends never stalled: {count} messages"
            last = count
            time.sleep(0.5)
        time.sleep(1.0)
        stalled = records(server, ident)["sent"]
        assert stalled == count, f"sends went on while the client read nothing: {count} -> {stalled}"
        assert stalled * MESSAGE < 64 << 20, f"{stalled} messages of 64 KiB were buffered for a client not reading"
        grown = rss_kib(server) - before
        assert grown < 48 * 1024, f"server RSS grew by {grown} KiB"
        # Reading resumes the application's sends.
        for _ in range(stalled + 8):
            opcode, payload = ws.read_message(timeout=10)
            assert (opcode, len(payload)) == (BINARY, MESSAGE)
        assert records(server, ident)["sent"] > stalled
    # An abrupt close makes the pending send() raise (an OSError per the ASGI spec).
    error = wait_record(server, ident, "error")
    assert error["oserror"], error
    assert_ws_still_serving(server)


def test_disconnect_without_close_is_1006(ws_server: Server) -> None:
    ident = unique("vanish")
    ws = small_buffer_handshake(ws_server, f"/echo?id={ident}")
    ws.send_raw(frame(BINARY, b"one"))
    assert ws.read_message() == (BINARY, b"one")
    ws.raw.close()
    assert wait_record(ws_server, ident, "disconnect")["code"] == 1006


def test_reset_without_close_is_1006(ws_server: Server) -> None:
    import struct  # noqa: PLC0415

    ident = unique("reset")
    ws = small_buffer_handshake(ws_server, f"/echo?id={ident}")
    ws.send_raw(frame(BINARY, b"one"))
    assert ws.read_message() == (BINARY, b"one")
    ws.raw.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    ws.raw.close()
    assert wait_record(ws_server, ident, "disconnect")["code"] == 1006


def test_disconnect_mid_message_is_1006(ws_server: Server) -> None:
    ident = unique("midmessage")
    ws = small_buffer_handshake(ws_server, f"/echo?id={ident}")
    ws.send_raw(frame(BINARY, b"part", fin=False) + frame(CONT, b"x" * 1000)[:200])
    time.sleep(0.1)
    ws.raw.close()
    assert wait_record(ws_server, ident, "disconnect")["code"] == 1006
    assert records(ws_server, ident)["received"] == 0


def test_many_connections_at_once(ws_server: Server) -> None:
    connections = [handshake(ws_server, "/echo") for _ in range(50)]
    try:
        for index, ws in enumerate(connections):
            ws.send_raw(frame(BINARY, b"n%d" % index))
        for index, ws in enumerate(connections):
            assert ws.read_message() == (BINARY, b"n%d" % index)
    finally:
        for ws in connections:
            ws.raw.close()


# --- a receive() cancelled after its message was ready (ASGI: no message is lost) -----------------


@pytest.mark.parametrize("options", [(), ("--no-uvloop",)], ids=["uvloop", "asyncio"])
def test_message_of_a_receive_cancelled_once_it_was_ready_goes_to_the_next_receive(
    server_pool: ServerPool, options: tuple[str, ...]
) -> None:
    """The asyncio.timeout()/wait_for (3.12+) and anyio race, made certain (tests/apps/receive_race.py)."""
    server = server_pool.get(APP, *options)
    ident = unique("receive-race")
    with handshake(server, f"/receive-race?id={ident}") as ws:
        wait_record(server, ident, "waiting")
        ws.send_text("the one message")
        result = json.loads(ws.read_text())
        assert "error" not in result, result
        assert result["cancelled"] is True, f"the race was not hit: {result}"
        assert result["next"] == {"type": "websocket.receive", "text": "the one message"}, result
        ws.send_text("and after")
        assert ws.read_text() == "and after"
        ws.send_close(1000)
        assert ws.expect_close().close_code == 1000


@pytest.mark.timeout(60)
@pytest.mark.parametrize("bound", [["--ws-max-queue-bytes", "4096"], ["--ws-max-queue", "2"]])
def test_queued_non_ascii_text_leaves_the_queue_bounds_as_it_entered(
    start_server: Callable[..., Server], bound: list[str]
) -> None:
    """A text message is counted by its UTF-8 bytes when queued and must be taken off by the same count: counting
    its characters on the way out (1,000 for these 2,000 bytes) left the queue looking fuller after every message,
    until reading paused for good and the connection stalled."""
    server = start_server(APP, *bound)
    text = "é" * 1000
    ws = small_buffer_handshake(server, f"/echo?id={unique('utf8')}")
    with ws:
        for _ in range(3):
            # Sent together, so that most wait in the queue (and reading pauses) while the application echoes.
            ws.send_raw(b"".join(frame(TEXT, text.encode()) for _ in range(40)))
            for index in range(40):
                assert ws.read_message(timeout=10) == (TEXT, text.encode()), f"echo {index} did not come"
    assert_ws_still_serving(server)
