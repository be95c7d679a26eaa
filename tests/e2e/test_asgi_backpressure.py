"""Write backpressure of ASGI send() (issue 3 items 4 and 8).

/flood?id=ID&total=N streams N bytes (1 GiB by default) in 64 KiB
http.response.body messages and records how many send() calls completed; if
a send raises, it records that exception and what one more send raises.
A client that does not read must make send() wait: the count stops growing
after a bounded amount and the server's RSS stays flat.

Every test runs on uvloop and on plain asyncio (the `loop` fixture).
"""

from __future__ import annotations

import socket
import time
from typing import TYPE_CHECKING, Any

import pytest
from rawhttp import RawConnection, request

# Rewritten asserts in the shared helpers, which are also loaded as a plugin below.
pytest.register_assert_rewrite("asgi_support")
from asgi_support import (  # noqa: E402
    assert_raw_still_serving,
    records,
    release,
    rss_kib,
    unique,
    wait_records,
)

#: The shared ASGI fixtures (`loop`, `raw_server`) live in asgi_support.
pytest_plugins = ("asgi_support",)

if TYPE_CHECKING:
    from conftest import Server

CHUNK = 65536


def sends_completed(server: Server, ident: str) -> int:
    """How many 64 KiB sends of request `ident` completed so far."""
    found = records(server, ident)
    count: int = found[0]["sent"] if found else 0
    return count


def stalled_count(server: Server, ident: str, quiet: float = 1.0, timeout: float = 20.0) -> int:
    """The send count once it stays the same for `quiet` seconds; fails if it keeps growing."""
    deadline = time.monotonic() + timeout
    last = sends_completed(server, ident)
    stable_since = time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.1)
        current = sends_completed(server, ident)
        if current != last:
            last, stable_since = current, time.monotonic()
        elif current > 0 and time.monotonic() - stable_since >= quiet:
            return current
    pytest.fail(f"send() never waited: {last * CHUNK / 2**20:.0f} MiB sent to a client that reads nothing")


def flood_connection(server: Server, target: str) -> RawConnection:
    """A connection with a small receive buffer that has sent `target` and reads nothing."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    sock.settimeout(10)
    sock.connect(("127.0.0.1", server.port))
    connection = RawConnection(sock)
    connection.send(request("GET", target))
    return connection


@pytest.mark.timeout(60)
def test_send_waits_for_a_client_that_does_not_read_and_memory_stays_flat(raw_server: Server) -> None:
    assert_raw_still_serving(raw_server)
    baseline_kib = rss_kib(raw_server)
    ident = unique("flood")
    connection = flood_connection(raw_server, f"/flood?id={ident}")
    try:
        count = stalled_count(raw_server, ident)
        sent_mib = count * CHUNK / 2**20
        grown_mib = (rss_kib(raw_server) - baseline_kib) / 1024
        assert sent_mib < 48, f"{sent_mib:.0f} MiB accepted by send() for a client that reads nothing"
        assert grown_mib < 32, f"server RSS grew by {grown_mib:.1f} MiB while the application streamed 1 GiB"
        # Other clients are still served while the flood is stuck.
        assert_raw_still_serving(raw_server)
    finally:
        connection.close()
    found = wait_records(raw_server, ident, lambda found: len(found) >= 3)
    first: dict[str, Any] = found[1]["first"]
    later: dict[str, Any] = found[2]["later"]
    assert first["oserror"], f"the pending send raised a non-OSError: {first}"
    assert first["type"] == "ClientDisconnected", first
    assert later is not None, "a send after the disconnect completed"
    assert later["oserror"], later
    assert found[0]["sent"] < 1 << 14, "the flood completed although the client never read"
    grown_mib = (rss_kib(raw_server) - baseline_kib) / 1024
    assert grown_mib < 32, f"server RSS grew by {grown_mib:.1f} MiB after the disconnect"
    assert_raw_still_serving(raw_server)


@pytest.mark.timeout(60)
def test_a_stalled_stream_completes_once_the_client_reads(raw_server: Server) -> None:
    total = 64 * 1024 * 1024
    ident = unique("drain")
    connection = flood_connection(raw_server, f"/flood?id={ident}&total={total}")
    try:
        count = stalled_count(raw_server, ident, quiet=0.5)
        assert count * CHUNK < total, "the whole stream was accepted without the client reading"
        connection.sock.settimeout(30)
        head = connection.read_head()
        assert head.header("Content-Length") == str(total)
        received = 0
        while received < total:
            piece = connection.read_exactly(min(1 << 20, total - received))
            assert piece == b"\xab" * len(piece)
            received += len(piece)
    finally:
        connection.close()
    found = wait_records(raw_server, ident, lambda found: "completed" in found)
    assert found[0]["sent"] == total // CHUNK


def test_send_after_the_client_went_away_raises_an_oserror(raw_server: Server) -> None:
    ident = unique("drip")
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", f"/drip?id={ident}"))
        assert connection.read_head().status == 200
        assert connection.read_line() == b"5\r\n"
    found = wait_records(raw_server, ident, lambda found: len(found) >= 1, timeout=10)
    assert "failed" in found[0], f"the application streamed on to a closed connection: {found}"
    failure: dict[str, Any] = found[0]["failed"]
    assert failure["oserror"], failure
    assert failure["type"] == "ClientDisconnected", failure


@pytest.mark.timeout(60)
def test_a_cancelled_waiting_send_leaves_send_usable(raw_server: Server) -> None:
    """asyncio.wait_for(send(...), t) cancels a send() waiting on backpressure; later sends must still work."""
    ident = unique("send-cancelled")
    connection = flood_connection(raw_server, f"/send-cancelled?id={ident}&after=8")
    try:
        found = wait_records(raw_server, ident, lambda found: len(found) >= 1, timeout=20)
        sent_before = found[0]["timed_out_after"]
        release(raw_server, ident)
        connection.sock.settimeout(30)
        response = connection.read_response()
    finally:
        connection.close()
    found = wait_records(raw_server, ident, lambda found: len(found) >= 2)
    assert found[1] == "completed", f"send() after a cancelled send() failed: {found[1]}"
    assert response.framing == "chunked"
    assert set(response.body) == {0xCD}
    # The cancelled part may or may not have gone out; every other part must have.
    assert len(response.body) in ((sent_before + 8) * CHUNK, (sent_before + 9) * CHUNK)
