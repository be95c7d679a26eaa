"""Health and draining: `--health-path` and `--drain-delay` (issue 17 item 4).

The health path is answered by the worker itself (200 while serving, 503 once
draining) over HTTP/1.1, HTTP/2 and TLS, for WSGI and ASGI, without the
application. After SIGTERM with `--drain-delay MS` the server keeps accepting
and serving for MS, the health path answering 503, responses closing their
connections and HTTP/2 connections getting a GOAWAY; then it stops as usual.
The Kubernetes `preStop` pattern: the load balancer sees 503 and stops
sending before the pod stops accepting.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from typing import TYPE_CHECKING

import h2.events as h2_events
import pytest
from h2client import H2Client
from rawhttp import RawConnection, request

from conftest import APPS
from installed import peregrine_command

pytest.register_assert_rewrite("tls_support")
from tls_support import client_context, exchange, tls_connect  # noqa: E402

pytest_plugins = ("tls_support",)

if TYPE_CHECKING:
    from collections.abc import Callable

    from tls_support import TLSFiles

    from conftest import Server, ServerPool

ASGI = "fleet_apps:asgi"
WSGI = "fleet_apps:wsgi"
INTERFACES = ["asgi", "wsgi"]


def target(interface: str) -> str:
    return ASGI if interface == "asgi" else WSGI


def h1(server: Server, path: str, method: str = "GET") -> tuple[int, bytes, str | None]:
    with RawConnection.to(server) as connection:
        connection.send(request(method, path))
        response = connection.read_response(method)
    return response.status, response.body, response.header("connection")


def h2(server: Server, path: str) -> tuple[int, bytes]:
    with H2Client(server.port) as client:
        response = client.request("GET", path)
    return response.status, bytes(response.body)


# --- --health-path --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("interface", INTERFACES)
def test_the_health_path_is_answered_without_the_application(server_pool: ServerPool, interface: str) -> None:
    server = server_pool.get(target(interface), "--health-path", "/healthz")
    assert h1(server, "/healthz") == (200, b"OK", None)
    assert h1(server, "/healthz?probe=1") == (200, b"OK", None)  # the path decides, not the query
    assert h1(server, "/healthz", "HEAD") == (200, b"", None)
    assert h2(server, "/healthz") == (200, b"OK")
    assert not [e for e in server.events() if "healthz" in e]
    # Only that exact path: others reach the application.
    assert h1(server, "/healthz/")[0] == 200
    assert h1(server, "/Healthz")[0] == 200
    assert server.calls() == ["call /healthz/", "call /Healthz"]


def test_the_health_path_keeps_the_connection_alive_and_pipelines(server_pool: ServerPool) -> None:
    server = server_pool.get(ASGI, "--health-path", "/healthz")
    with RawConnection.to(server) as connection:
        connection.send(request("GET", "/healthz") + request("GET", "/x") + request("GET", "/healthz"))
        answers = [connection.read_response() for _ in range(3)]
    assert [(r.status, r.body[:2]) for r in answers] == [(200, b"OK"), (200, b"ok"), (200, b"OK")]


@pytest.mark.parametrize("interface", INTERFACES)
def test_the_health_path_over_tls_and_http2(
    start_server: Callable[..., Server], tls_files: TLSFiles, interface: str
) -> None:
    server = start_server(target(interface), "--health-path", "/healthz", *tls_files.server_options())
    with tls_connect(server, client_context(tls_files)) as sock:
        response = exchange(sock, "GET", "/healthz")
        assert (response.status, response.body) == (200, b"OK")  # type: ignore[attr-defined]
    with H2Client(server.port, tls=client_context(tls_files, alpn=["h2"])) as client:
        answer = client.request("GET", "/healthz")
        assert (answer.status, bytes(answer.body)) == (200, b"OK")
    assert server.calls() == []


def test_health_checks_do_not_count_towards_max_requests(start_server: Callable[..., Server]) -> None:
    server = start_server(WSGI, "--health-path", "/healthz", "--max-requests", "2")
    for _ in range(10):
        assert h1(server, "/healthz")[0] == 200
    time.sleep(0.5)
    assert "max-requests" not in server.stderr.text()


@pytest.mark.parametrize("bad", ["healthz", "/a?b", "/a b", "/a#b", ""])
def test_a_health_path_that_is_not_a_path_is_a_usage_error(bad: str) -> None:
    result = subprocess.run(
        [*peregrine_command(), "--python-path", str(APPS), "--health-path", bad, ASGI],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 2
    assert "peregrine: error: --health-path must be a path starting with '/'" in result.stderr


# --- --drain-delay --------------------------------------------------------------------------------------------


def refused(server: Server) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", server.port), timeout=2) as sock:
            sock.sendall(request("GET", "/x"))
            return sock.recv(100) == b""
    except (ConnectionRefusedError, ConnectionResetError):
        return True


@pytest.mark.parametrize("interface", INTERFACES)
def test_after_sigterm_the_drain_delay_serves_with_the_health_path_at_503(
    start_server: Callable[..., Server], interface: str
) -> None:
    server = start_server(target(interface), "--health-path", "/healthz", "--drain-delay", "3000")
    kept = RawConnection.to(server)
    kept.send(request("GET", "/before"))
    assert kept.read_response().header("connection") is None  # kept alive
    http2 = H2Client(server.port)
    assert http2.request("GET", "/before").status == 200

    server.process.send_signal(signal.SIGTERM)
    started = time.monotonic()
    assert server.stderr.wait_for(lambda line: "--drain-delay" in line and "draining" in line, 5) is not None
    # The load balancer's probe fails; requests that still come are served, on new connections too.
    assert h1(server, "/healthz") == (503, b"Service Unavailable", "close")
    assert h2(server, "/healthz") == (503, b"Service Unavailable")
    # A new HTTP/2 connection is served, then told to go elsewhere (GOAWAY after its first response).
    with H2Client(server.port) as fresh:
        assert fresh.request("GET", "/during-h2").status == 200
        deadline = time.monotonic() + 5
        while fresh.terminated is None and time.monotonic() < deadline and fresh.read_once():
            pass
        assert isinstance(fresh.terminated, h2_events.ConnectionTerminated)
    status, body, connection = h1(server, "/during")
    assert (status, connection) == (200, "close")
    assert body.startswith(b"ok ")
    # A connection kept alive from before gets `Connection: close` on its next response.
    kept.send(request("GET", "/kept"))
    assert kept.read_response().header("connection") == "close"
    kept.close()
    # An HTTP/2 connection from before got a GOAWAY; a stream it still had is served.
    deadline = time.monotonic() + 5
    while http2.terminated is None and time.monotonic() < deadline:
        http2.read_once()
    assert isinstance(http2.terminated, h2_events.ConnectionTerminated)
    assert http2.terminated.error_code == 0
    http2.close()
    assert time.monotonic() - started < 2.8, "the checks above ran inside the delay"
    # After the delay: no longer accepting, and the process ends by itself.
    assert server.process.wait(timeout=15) == 0
    assert time.monotonic() - started >= 2.9
    assert refused(server)
    assert {"call /before", "call /during", "call /during-h2", "call /kept"} <= set(server.calls())


def test_a_request_in_flight_at_the_end_of_the_delay_completes(start_server: Callable[..., Server]) -> None:
    server = start_server(ASGI, "--drain-delay", "500")
    connection = RawConnection.to(server)
    server.process.send_signal(signal.SIGTERM)
    time.sleep(0.2)
    connection.send(request("GET", "/slow?ms=1500"))
    response = connection.read_response()
    assert (response.status, response.body) == (200, b"slow done")
    assert server.process.wait(timeout=15) == 0


def test_a_second_signal_ends_the_delay(start_server: Callable[..., Server]) -> None:
    server = start_server(WSGI, "--health-path", "/healthz", "--drain-delay", "60000")
    server.process.send_signal(signal.SIGTERM)
    assert server.stderr.wait_for(lambda line: "draining" in line, 5) is not None
    assert h1(server, "/healthz")[0] == 503
    started = time.monotonic()
    server.process.send_signal(signal.SIGTERM)
    server.process.wait(timeout=15)
    assert time.monotonic() - started < 10


def test_without_a_delay_the_stop_is_immediate(start_server: Callable[..., Server]) -> None:
    server = start_server(ASGI, "--health-path", "/healthz")
    assert h1(server, "/healthz")[0] == 200
    started = time.monotonic()
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(timeout=15) == 0
    assert time.monotonic() - started < 5


def test_the_drain_delay_over_tls(start_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    server = start_server(ASGI, "--health-path", "/healthz", "--drain-delay", "1500", *tls_files.server_options())
    server.process.send_signal(signal.SIGTERM)
    assert server.stderr.wait_for(lambda line: "draining" in line, 5) is not None
    with tls_connect(server, client_context(tls_files)) as sock:
        response = exchange(sock, "GET", "/healthz")
        assert response.status == 503
        assert response.getheader("connection") == "close"
    assert server.process.wait(timeout=15) == 0


def test_worker_threads_drain_together(start_server: Callable[..., Server]) -> None:
    """With several worker contexts in one process, each enters the delay (health 503 from every one)."""
    os.environ["PEREGRINE_WORKER_CONTEXTS"] = "3"
    try:
        server = start_server(ASGI, "--health-path", "/healthz", "--drain-delay", "1500")
    finally:
        del os.environ["PEREGRINE_WORKER_CONTEXTS"]
    server.process.send_signal(signal.SIGTERM)
    assert server.stderr.wait_for(lambda line: "draining" in line, 5) is not None
    time.sleep(0.1)
    assert {h1(server, "/healthz")[0] for _ in range(12)} == {503}
    assert server.process.wait(timeout=15) == 0
