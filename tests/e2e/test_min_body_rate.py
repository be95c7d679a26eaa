"""--min-body-rate (RELIABILITY.md, "The minimum body rate"): a body that averages less than the rate over the
time the application waited for it, past --request-timeout of such waiting, fails as a stall does.

Each dribbling client sends one byte well inside the stall timeout, so the stall timeout alone would never cut
it; the rate rule does, soon after the grace period. A client that is slow but above the rate, and a slow
application (whose own slowness holds the client back), are not cut; `0` turns the rule off.
"""

from __future__ import annotations

import json
import socket
import time
from typing import TYPE_CHECKING

import h2.config
import h2.connection
import h2.events
import pytest

if TYPE_CHECKING:
    from collections.abc import Callable

    from conftest import Server

GRACE_MS = 1000
TARGETS = ["abrupt_apps:asgi", "abrupt_apps:wsgi"]


def dribble_h1(server: Server, *, every: float, size: int = 200, step: int = 1, ident: str = "x") -> tuple[int, float]:
    """POST a `size`-byte body `step` bytes every `every` seconds; the status and when it came."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    sock.sendall(b"POST /upload?id=%s HTTP/1.1\r\nHost: t\r\nContent-Length: %d\r\n\r\n" % (ident.encode(), size))
    began = time.monotonic()
    sock.settimeout(every)
    sent = 0
    answer = b""
    while sent < size:
        try:
            sock.sendall(b"x" * min(step, size - sent))
        except (BrokenPipeError, ConnectionResetError):
            break
        sent += step
        try:
            answer = sock.recv(4096)
        except TimeoutError:
            continue
        break
    sock.settimeout(30)
    while b"\r\n" not in answer:
        more = sock.recv(4096)
        if not more:
            break
        answer += more
    sock.close()
    return int(answer.split(b" ", 2)[1]), time.monotonic() - began


@pytest.mark.parametrize("target", TARGETS)
def test_a_dribbling_http1_body_fails_after_the_grace(start_server: Callable[..., Server], target: str) -> None:
    """ASGI: `http.disconnect`, and the client gets 408. WSGI: the `wsgi.input` read raises (PEP 3333 leaves
    the response to the application; this one answers anyway)."""
    server = start_server(target, "--request-timeout", str(GRACE_MS), "--min-body-rate", "1000")
    status, took = dribble_h1(server, every=0.3, ident="dribble")
    seen = json.loads(get(server, "/log?id=dribble"))
    if target.endswith("asgi"):
        assert status == 408
        assert seen[-1] == "http.disconnect", seen
    else:
        assert any(entry.startswith("read-raised") for entry in seen), seen
    # Cut after about a second of waiting (the grace), long before the 200 bytes would have come (60 s).
    assert GRACE_MS / 1000 <= took < 10, took
    # The worker serves the next client.
    assert get(server, "/hello")


def get(server: Server, target: str) -> bytes:
    """The body of a 200 answer to GET `target` on a new connection."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(b"GET %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n" % target.encode())
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head
    return body


@pytest.mark.parametrize("target", TARGETS)
def test_a_slow_body_above_the_rate_is_served(start_server: Callable[..., Server], target: str) -> None:
    """1,000 bytes a second against a minimum of 100: served, although it takes longer than the grace."""
    server = start_server(target, "--request-timeout", str(GRACE_MS), "--min-body-rate", "100")
    status, took = dribble_h1(server, every=0.1, size=2500, step=100)
    assert status == 200
    assert took >= 2


@pytest.mark.parametrize("target", TARGETS)
def test_zero_turns_the_rule_off(start_server: Callable[..., Server], target: str) -> None:
    server = start_server(target, "--request-timeout", str(GRACE_MS), "--min-body-rate", "0")
    status, took = dribble_h1(server, every=0.3, size=10)
    assert status == 200
    assert took >= 2.5


def test_a_dribbling_http2_body_gets_408(start_server: Callable[..., Server]) -> None:
    server = start_server("abrupt_apps:asgi", "--request-timeout", str(GRACE_MS), "--min-body-rate", "1000")
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
    conn.initiate_connection()
    conn.send_headers(1, [(":method", "POST"), (":scheme", "http"), (":authority", "t"), (":path", "/upload"),
                          ("content-length", "200")])  # fmt: skip
    sock.sendall(conn.data_to_send())
    sock.settimeout(0.3)
    began = time.monotonic()
    status = None
    for _ in range(200):
        conn.send_data(1, b"x")
        sock.sendall(conn.data_to_send())
        try:
            data = sock.recv(65536)
        except TimeoutError:
            continue
        for event in conn.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived):
                status = int(dict(event.headers)[":status"])
        sock.sendall(conn.data_to_send())
        if status is not None:
            break
    took = time.monotonic() - began
    sock.close()
    assert status == 408
    assert GRACE_MS / 1000 <= took < 10, took
