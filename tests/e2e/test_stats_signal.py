"""The stats signal (issue 18 point 7): SIGUSR2 to the supervisor is relayed to every worker, and each worker (each
worker thread) writes one JSON line of stats to standard error: its connections by protocol and state, requests in
flight, buffer pool use and RSS. SIGUSR2 sent to a worker directly does the same for that worker alone. It never
stops, drains or replaces anything: the server serves on."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import threading
import time
from typing import TYPE_CHECKING, Any

import pytest
from h2client import H2Client
from h2websocket import H2WebSocket
from h3client import H3Client
from process_support import wait_for_workers, workers
from rawhttp import RawConnection, request
from websocket_support import handshake

if TYPE_CHECKING:
    from collections.abc import Callable

    from h3client import H3ClientConnection
    from tls_support import TLSFiles

    from conftest import Server

pytest_plugins = ("tls_support",)

TARGETS = ["stats_apps:wsgi", "stats_apps:asgi"]
CONNECTION_KEYS = {
    "http1_idle",
    "http1_active",
    "h2",
    "h2_streams",
    "h3",
    "h3_tls_held",
    "quic_handshaking",
    "websocket",
    "tls_handshaking",
    "closing",
}


def stats_lines(server: Server, start: int, count: int, timeout: float = 10.0) -> list[dict[str, Any]]:
    """The first `count` stats lines the server wrote after stderr line `start` (fails if fewer come in time)."""
    found: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    index = start
    while len(found) < count:
        line = server.stderr.wait_for(
            lambda text: text.startswith('{"event": "stats"'), deadline - time.monotonic(), index
        )
        assert line is not None, f"{len(found)} of {count} stats lines; stderr:\n{server.excerpt()}"
        index = server.stderr.lines.index(line, index) + 1
        found.append(json.loads(line))
    return found


def check_shape(stats: dict[str, Any]) -> None:
    assert set(stats) == {
        "event",
        "time",
        "pid",
        "worker",
        "thread",
        "connections",
        "requests_in_flight",
        "buffer_pool",
        "rss_bytes",
    }
    assert set(stats["connections"]) == CONNECTION_KEYS
    assert set(stats["buffer_pool"]) == {"block_size", "in_use", "free", "bytes"}
    pool = stats["buffer_pool"]
    assert pool["bytes"] == (pool["in_use"] + pool["free"]) * pool["block_size"]
    assert stats["rss_bytes"] > 1 << 20


def total(lines: list[dict[str, Any]], key: str) -> int:
    return sum(line["connections"][key] for line in lines)


def ask(server: Server, pid: int | None = None) -> int:
    """Send SIGUSR2 (to the supervisor by default); the stderr index to read stats lines from."""
    start = len(server.stderr.lines)
    os.kill(pid or server.pid, signal.SIGUSR2)
    return start


def get(server: Server, path: str = "/") -> RawConnection:
    """A kept-alive connection that completed one request."""
    raw = RawConnection.to(server)
    raw.send(request("GET", path))
    assert raw.read_response().status == 200
    return raw


@pytest.mark.parametrize("target", TARGETS)
def test_sigusr2_to_the_supervisor_gives_one_line_per_worker_counting_what_the_test_holds(
    start_server: Callable[..., Server], target: str
) -> None:
    server = start_server(target, "--workers", "2")
    pids = wait_for_workers(server, 2)
    with contextlib.ExitStack() as held:
        for _ in range(3):
            held.enter_context(get(server))
        partial = held.enter_context(RawConnection.to(server))
        partial.send(b"GET / HTTP/1.1\r\nHost: x\r\n")
        for _ in range(2):
            client = held.enter_context(H2Client(server.port))
            assert client.request("GET", "/").status == 200
        time.sleep(0.3)  # the partial head has been read
        lines = stats_lines(server, ask(server), 2)
        for line in lines:
            check_shape(line)
        assert {line["pid"] for line in lines} == pids
        assert sorted(line["worker"] for line in lines) == [0, 1]
        assert total(lines, "http1_idle") == 3
        assert total(lines, "http1_active") == 1
        assert total(lines, "h2") == 2
        for key in CONNECTION_KEYS - {"http1_idle", "http1_active", "h2"}:
            assert total(lines, key) == 0, key
        assert sum(line["requests_in_flight"] for line in lines) == 0
        assert sum(line["buffer_pool"]["in_use"] for line in lines) >= 1  # the partial head's block
    # Nothing stopped or was replaced: the same workers serve on, and ask again.
    with get(server):
        pass
    assert workers(server) == pids
    assert len(stats_lines(server, ask(server), 2)) == 2
    assert workers(server) == pids
    assert server.stderr.wait_for(lambda text: "stopping" in text or "draining" in text, 0.5) is None


def test_sigusr2_to_a_worker_gives_its_line_alone(start_server: Callable[..., Server]) -> None:
    server = start_server("stats_apps:asgi", "--workers", "2")
    pids = wait_for_workers(server, 2)
    pid = min(pids)
    start = ask(server, pid)
    [line] = stats_lines(server, start, 1)
    assert line["pid"] == pid
    time.sleep(1)
    assert [text for text in server.stderr.lines[start:] if text.startswith("{")] == [json.dumps(line)]
    with get(server):
        pass
    assert workers(server) == pids


@pytest.mark.parametrize("target", TARGETS)
def test_every_worker_thread_gives_a_line(two_worker_threads: Callable[..., Server], target: str) -> None:
    server = two_worker_threads(target)
    lines = stats_lines(server, ask(server), 2)
    assert len({line["pid"] for line in lines}) == 1
    assert sorted(line["thread"] for line in lines) == [0, 1]
    with get(server):
        pass


def test_websockets_and_a_request_in_flight(start_server: Callable[..., Server]) -> None:
    server = start_server("stats_apps:asgi", "--workers", "1")
    with handshake(server, "/ws"), RawConnection.to(server) as slow, H2Client(server.port) as client:
        H2WebSocket.open(client, "/ws").accepted()
        slow.send(request("GET", "/slow"))
        time.sleep(0.3)
        [line] = stats_lines(server, ask(server), 1)
        assert line["connections"]["websocket"] == 2  # one over HTTP/1.1, one on an HTTP/2 stream
        assert line["connections"]["h2"] == 1
        assert line["connections"]["h2_streams"] == 1
        assert line["connections"]["http1_active"] == 1
        assert line["requests_in_flight"] == 1
        (server.state / "release").touch()
        assert slow.read_response().status == 200
    with get(server):
        pass


def test_tls_handshakes_and_http3_connections(tls_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    server = tls_server("stats_apps:asgi", "--http3", "--workers", "1")
    with socket.create_connection(("127.0.0.1", server.port)):  # no ClientHello: the handshake waits
        time.sleep(0.3)
        [line] = stats_lines(server, ask(server), 1)
    assert line["connections"]["tls_handshaking"] == 1
    assert line["connections"]["h3"] == 0

    async def hold(connection: H3ClientConnection) -> dict[str, Any]:
        response = await connection.request("GET", "/", f"localhost:{server.port}", [], None)
        assert response.status == 200
        start = ask(server)
        [stats] = await asyncio.to_thread(stats_lines, server, start, 1)
        return stats

    line = H3Client(port=server.port, ca=tls_files.ca).session(hold)
    assert line["connections"]["h3"] == 1
    # The TLS state is freed once the handshake is confirmed (RFC 9001
    # §4.1.2): an open HTTP/3 connection holds none.
    assert line["connections"]["h3_tls_held"] == 0
    assert line["connections"]["tls_handshaking"] == 0


def test_many_signals_at_once_never_stop_the_server(start_server: Callable[..., Server]) -> None:
    server = start_server("stats_apps:wsgi", "--workers", "2")
    pids = wait_for_workers(server, 2)
    stop = threading.Event()

    def signals() -> None:
        while not stop.is_set():
            os.kill(server.pid, signal.SIGUSR2)
            time.sleep(0.01)

    sender = threading.Thread(target=signals)
    sender.start()
    try:
        for _ in range(50):
            with get(server):
                pass
    finally:
        stop.set()
        sender.join()
    assert workers(server) == pids
    server.check_alive()
