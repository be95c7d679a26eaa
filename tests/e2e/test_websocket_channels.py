"""A Django Channels project (tests/apps/channels_app.py) served by peregrine (issue 6 item 6).

Channels' AsyncWebsocketConsumer with the in-memory channel layer, driven by
the `websockets` client: connect, echo, a group broadcast between two
clients, close codes both ways, a refusal before accept; with and without
permessage-deflate.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

if TYPE_CHECKING:
    from conftest import Server, ServerPool

pytest.importorskip("channels")

TARGET = "channels_app:application"


@pytest.fixture(scope="module", params=[(), ("--ws-compress",)], ids=["plain", "deflate"])
def channels_server(request: pytest.FixtureRequest, server_pool: ServerPool) -> Server:
    """The Channels project, one worker (the in-memory layer is per process)."""
    return server_pool.get(TARGET, "--workers", "1", *request.param)


def url(server: Server, path: str) -> str:
    """ws://127.0.0.1:PORT/path."""
    return f"ws://127.0.0.1:{server.port}{path}"


def disconnect_code(server: Server, ident: str, timeout: float = 10.0) -> int:
    """The code the consumer's disconnect() got for connection `ident`."""
    deadline = time.monotonic() + timeout
    while True:
        found = httpx.get(f"{server.base_url}/disconnects", timeout=10).json()
        if ident in found:
            return int(found[ident])
        if time.monotonic() > deadline:
            pytest.fail(f"no disconnect recorded for {ident}: {json.dumps(found)}")
        time.sleep(0.05)


def test_echo(channels_server: Server) -> None:
    with connect(url(channels_server, "/ws/echo/"), open_timeout=10, max_size=None) as ws:
        assert ws.response is not None
        compressed = "--ws-compress" in channels_server.args
        assert ("Sec-WebSocket-Extensions" in ws.response.headers) == compressed
        ws.send("hello ✓")
        assert ws.recv(timeout=10) == "hello ✓"
        ws.send(b"\x00\x01\xff")
        assert ws.recv(timeout=10) == b"\x00\x01\xff"
        big = "channels " * 100_000
        ws.send(big)
        assert ws.recv(timeout=10) == big


def test_broadcast_between_two_clients(channels_server: Server) -> None:
    room = f"room{time.monotonic_ns()}"
    with (
        connect(url(channels_server, f"/ws/room/{room}/"), open_timeout=10) as alice,
        connect(url(channels_server, f"/ws/room/{room}/"), open_timeout=10) as bob,
    ):
        alice.send("hi from alice")
        assert alice.recv(timeout=10) == f"{room}: hi from alice"
        assert bob.recv(timeout=10) == f"{room}: hi from alice"
        bob.send("hi from bob")
        assert alice.recv(timeout=10) == f"{room}: hi from bob"
        assert bob.recv(timeout=10) == f"{room}: hi from bob"
    # Another room hears nothing of this one.
    with connect(url(channels_server, "/ws/room/elsewhere/"), open_timeout=10) as other:
        other.send("alone")
        assert other.recv(timeout=10) == "elsewhere: alone"


def test_consumer_closes_with_its_code(channels_server: Server) -> None:
    ident = f"server-close-{time.monotonic_ns()}"
    with connect(url(channels_server, f"/ws/echo/?id={ident}"), open_timeout=10) as ws:
        ws.send("close:4001")
        with pytest.raises(ConnectionClosed) as caught:
            ws.recv(timeout=10)
    assert caught.value.rcvd is not None
    assert caught.value.rcvd.code == 4001
    assert disconnect_code(channels_server, ident) == 4001


def test_client_close_code_reaches_the_consumer(channels_server: Server) -> None:
    ident = f"client-close-{time.monotonic_ns()}"
    with connect(url(channels_server, f"/ws/echo/?id={ident}"), open_timeout=10) as ws:
        ws.send("ping")
        assert ws.recv(timeout=10) == "ping"
        ws.close(code=4002, reason="bye")
    assert ws.close_code == 4002  # echoed by the server
    assert disconnect_code(channels_server, ident) == 4002


def test_refused_before_accept_is_403(channels_server: Server) -> None:
    with pytest.raises(InvalidStatus) as caught, connect(url(channels_server, "/ws/reject/"), open_timeout=10):
        pass
    assert caught.value.response.status_code == 403


def test_unrouted_path_and_plain_http(channels_server: Server) -> None:
    # URLRouter raises for an unknown path: the application fails before accepting (no 101).
    with pytest.raises(InvalidStatus), connect(url(channels_server, "/ws/nowhere/"), open_timeout=10):
        pass
    response = httpx.get(f"{channels_server.base_url}/hello", timeout=10)
    assert (response.status_code, response.text) == (200, "hello")
