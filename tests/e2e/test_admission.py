"""Admission control: `--limit-concurrency` and `--max-connection-age` (issue 17 item 5).

Beyond N requests in flight per worker a new request gets `503` with
`Retry-After` at once (HTTP/2: on its stream) while the N complete, and a
long burst leaves memory flat: nothing queues. A connection older than
`--max-connection-age` (plus up to 10%) gets `Connection: close` on its next
response, HTTP/2 a GOAWAY, so clients reconnect.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import TYPE_CHECKING

import h2.events as h2_events
import pytest
from asgi_support import rss_kib
from h2client import H2Client
from h2client import Response as H2Response
from rawhttp import ConnectionClosedError, RawConnection, Response, request

pytest.register_assert_rewrite("tls_support")
from tls_support import client_context, exchange, tls_connect  # noqa: E402

pytest_plugins = ("tls_support",)

if TYPE_CHECKING:
    from collections.abc import Callable

    from tls_support import TLSFiles

    from conftest import Server

ASGI = "fleet_apps:asgi"
WSGI = "fleet_apps:wsgi"


def get(server: Server, path: str) -> Response:
    with RawConnection.to(server, timeout=30) as connection:
        connection.send(request("GET", path))
        return connection.read_response()


class Slow:
    """`count` requests for /slow?ms=`ms` on connections of their own, in threads."""

    def __init__(self, server: Server, count: int, ms: int) -> None:
        self.responses: list[Response] = []
        self.threads = [threading.Thread(target=self._one, args=(server, ms)) for _ in range(count)]
        for thread in self.threads:
            thread.start()

    def _one(self, server: Server, ms: int) -> None:
        # A request cut short (the server stopped under it) is missing from `responses`.
        with contextlib.suppress(OSError, ConnectionClosedError):
            self.responses.append(get(server, f"/slow?ms={ms}"))

    def join(self) -> list[Response]:
        for thread in self.threads:
            thread.join(30)
        return self.responses


def wait_started(server: Server, count: int) -> None:
    deadline = time.monotonic() + 10
    while server.events().count("slow started") < count:
        assert time.monotonic() < deadline, server.events()
        time.sleep(0.02)


def refused_fast(response: Response, started: float) -> None:
    assert response.status == 503
    assert response.header("retry-after") == "1"
    assert response.body == b"Service Unavailable"
    assert time.monotonic() - started < 1.0


# --- --limit-concurrency --------------------------------------------------------------------------------------


def test_a_burst_above_the_limit_gets_fast_503s_while_the_limit_completes(start_server: Callable[..., Server]) -> None:
    server = start_server(ASGI, "--limit-concurrency", "4")
    slow = Slow(server, 4, 2000)
    wait_started(server, 4)
    with RawConnection.to(server) as connection:
        for _ in range(20):
            started = time.monotonic()
            connection.send(request("GET", "/over"))
            refused_fast(connection.read_response(), started)  # and the connection lives on
    responses = slow.join()
    assert [(r.status, r.body) for r in responses] == [(200, b"slow done")] * 4
    assert "call /over" not in server.events()
    # The slots are free again.
    assert get(server, "/after").status == 200


def test_wsgi_application_threads_are_limited(start_server: Callable[..., Server]) -> None:
    server = start_server(WSGI, "--wsgi-threads", "4", "--limit-concurrency", "2")
    slow = Slow(server, 2, 1500)
    wait_started(server, 2)
    started = time.monotonic()
    refused_fast(get(server, "/over"), started)
    assert [r.status for r in slow.join()] == [200, 200]
    assert get(server, "/after").status == 200


@pytest.mark.parametrize("target", [ASGI, WSGI])
def test_http2_streams_beyond_the_limit_get_503(start_server: Callable[..., Server], target: str) -> None:
    # WSGI without threads runs one request at a time: the other streams wait their turn, and count.
    server = start_server(target, "--limit-concurrency", "2")
    with H2Client(server.port) as client:
        # All five HEADERS in one write, so the server sees them in one read, before any is answered.
        sids = []
        for _ in range(5):
            sid = client.conn.get_next_available_stream_id()
            client.responses[sid] = H2Response(sid)
            fields = [(":method", "GET"), (":scheme", "http"), (":authority", "localhost"), (":path", "/slow?ms=800")]
            client.conn.send_headers(sid, fields, end_stream=True)
            sids.append(sid)
        client.flush()
        responses = client.collect(*sids, timeout=20)
    statuses = [r.status for r in responses]
    assert statuses.count(200) == 2
    assert statuses.count(503) == 3
    for r in responses:
        if r.status == 503:
            assert r.header(b"retry-after") == b"1"
    # The connection and the worker serve on.
    with H2Client(server.port) as client:
        assert client.request("GET", "/after").status == 200


def test_the_limit_over_tls(start_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    server = start_server(ASGI, "--limit-concurrency", "1", *tls_files.server_options())
    holder = threading.Thread(target=lambda: tls_get(server, tls_files, "/slow?ms=1500"))
    holder.start()
    wait_started(server, 1)
    assert tls_get(server, tls_files, "/over") == 503
    holder.join(30)
    assert tls_get(server, tls_files, "/after") == 200


def tls_get(server: Server, tls_files: TLSFiles, path: str) -> int:
    with tls_connect(server, client_context(tls_files)) as sock:
        return exchange(sock, "GET", path).status


def test_health_checks_are_answered_at_the_limit(start_server: Callable[..., Server]) -> None:
    server = start_server(ASGI, "--limit-concurrency", "1", "--health-path", "/healthz")
    slow = Slow(server, 1, 1500)
    wait_started(server, 1)
    assert get(server, "/healthz").status == 200
    assert get(server, "/over").status == 503
    slow.join()


def test_a_long_burst_of_refusals_leaves_memory_flat(start_server: Callable[..., Server]) -> None:
    server = start_server(ASGI, "--limit-concurrency", "1", "--access-log")
    slow = Slow(server, 1, 20000)
    wait_started(server, 1)
    burst = request("GET", "/over") * 50

    def blast(rounds: int) -> None:
        with RawConnection.to(server) as connection:
            for _ in range(rounds):
                connection.send(burst)
                for _ in range(50):
                    assert connection.read_response().status == 503

    blast(20)  # warm up: buffers, caches
    before = rss_kib(server)
    blast(100)  # 5000 refused requests
    after = rss_kib(server)
    assert after - before < 2048, f"RSS grew by {after - before} KiB over 5000 refusals"
    server.stop()
    slow.join()


# --- --max-connection-age -------------------------------------------------------------------------------------


@pytest.mark.parametrize("target", [ASGI, WSGI])
def test_an_old_connection_closes_after_its_next_response(start_server: Callable[..., Server], target: str) -> None:
    server = start_server(target, "--max-connection-age", "600")
    with RawConnection.to(server) as connection:
        connection.send(request("GET", "/young"))
        assert connection.read_response().header("connection") is None
        time.sleep(0.75)  # past 600 ms plus at most 10%
        connection.send(request("GET", "/old"))
        response = connection.read_response()
        assert response.status == 200
        assert response.header("connection") == "close"
        assert connection.read_until_close() == b""


@pytest.mark.parametrize("target", [ASGI, WSGI])
def test_an_old_http2_connection_gets_a_goaway_after_its_response(
    start_server: Callable[..., Server], target: str
) -> None:
    server = start_server(target, "--max-connection-age", "600")
    with H2Client(server.port) as client:
        assert client.request("GET", "/young").status == 200
        assert client.terminated is None
        time.sleep(0.75)
        response = client.request("GET", "/old")
        assert response.status == 200
        deadline = time.monotonic() + 5
        while client.terminated is None and time.monotonic() < deadline:
            if not client.read_once():
                break
        assert isinstance(client.terminated, h2_events.ConnectionTerminated)
        assert client.terminated.error_code == 0


def test_the_age_over_tls(start_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    server = start_server(WSGI, "--max-connection-age", "600", *tls_files.server_options())
    with tls_connect(server, client_context(tls_files)) as sock:
        assert exchange(sock, "GET", "/young").getheader("connection") is None
        time.sleep(0.75)
        assert exchange(sock, "GET", "/old").getheader("connection") == "close"


def test_connections_younger_than_the_age_are_kept(start_server: Callable[..., Server]) -> None:
    server = start_server(ASGI, "--max-connection-age", "60000")
    with RawConnection.to(server) as connection:
        for _ in range(20):
            connection.send(request("GET", "/x"))
            assert connection.read_response().header("connection") is None
