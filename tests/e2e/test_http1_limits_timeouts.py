"""Limits and timeouts over real sockets (issue 2 items 3 and 5).

--max-header-size and the 100-field cap (431), --max-body (413, from the
declared Content-Length before the application runs, and for a chunked body
the application is reading), --request-timeout for a slow head (408, and the
slot is freed), --keep-alive idle close, --max-connections queueing.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

import pytest
from rawhttp import RawConnection, assert_still_serving, chunked, request

if TYPE_CHECKING:
    from collections.abc import Callable

    from conftest import Server, ServerPool


@pytest.fixture(scope="module")
def small_limits(server_pool: ServerPool) -> Server:
    """Head limit 4 KiB, body limit 1 KiB."""
    return server_pool.get("wsgi_apps:app", "--max-header-size", "4k", "--max-body", "1024")


def hold_every_slot_but_one(server: Server) -> list[RawConnection]:
    """Under `--max-connections 1` with several worker threads: a served keep-alive connection on all but one.

    A thread whose one slot is taken leaves further connections to the
    others, so each holder lands on a thread of its own and the next
    connection on the one left. The caller closes them.
    """
    holders = []
    for index in range(server.worker_threads - 1):
        holder = RawConnection.to(server)
        holder.send(request("GET", f"/hello/holder-{index}"))
        assert holder.read_response().status == 200
        holders.append(holder)
    return holders


def _fields(count: int, size: int = 10) -> list[tuple[str, str]]:
    return [(f"X-Field-{i}", "v" * size) for i in range(count)]


def _rejected(server: Server, data: bytes, status: int, marker: str) -> None:
    with RawConnection.to(server) as connection:
        connection.send(data)
        response = connection.read_response()
        assert response.status == status
        assert connection.closed_by_server()
    assert not [call for call in server.calls() if marker in call], "the application was called"
    assert_still_serving(server)


# --- head size and field count (RFC 6585 §5) ----------------------------------------------------


def test_head_over_max_header_size_is_refused_431(small_limits: Server) -> None:
    _rejected(small_limits, request("GET", "/hello/big-head", _fields(1, 5000)), 431, "/hello/big-head")


def test_head_made_of_many_small_fields_over_max_header_size_is_refused_431(small_limits: Server) -> None:
    _rejected(small_limits, request("GET", "/hello/many-small", _fields(90, 40)), 431, "/hello/many-small")


def test_head_just_under_max_header_size_is_served(small_limits: Server) -> None:
    data = request("GET", "/hello/under", _fields(1, 3500))
    assert len(data) < 4096
    with RawConnection.to(small_limits) as connection:
        connection.send(data)
        response = connection.read_response()
    assert (response.status, response.body) == (200, b"hello")


def test_head_over_default_32_kib_is_refused_431(wsgi_server: Server) -> None:
    _rejected(wsgi_server, request("GET", "/hello/over-32k", _fields(4, 9000)), 431, "/hello/over-32k")


def test_head_of_30_kib_is_served_by_default(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("GET", "/hello/30k", _fields(3, 10000)))
        response = connection.read_response()
    assert (response.status, response.body) == (200, b"hello")


def test_101_header_fields_are_refused_431(wsgi_server: Server) -> None:
    # Host plus 100 more: 101 field lines.
    _rejected(wsgi_server, request("GET", "/hello/101-fields", _fields(100)), 431, "/hello/101-fields")


def test_100_header_fields_are_served(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("GET", "/hello/100-fields", _fields(99)))
        response = connection.read_response()
    assert (response.status, response.body) == (200, b"hello")


# --- body size ----------------------------------------------------------------------------------


def test_declared_body_over_max_body_is_refused_413_before_the_application_runs(small_limits: Server) -> None:
    """Only the head is sent: the 413 must come from Content-Length alone."""
    with RawConnection.to(small_limits) as connection:
        connection.send(request("POST", "/echo/too-big-declared", [("Content-Length", "1025")]))
        response = connection.read_response()
        assert response.status == 413
        assert connection.closed_by_server()
    assert not [call for call in small_limits.calls() if "too-big-declared" in call]
    assert_still_serving(small_limits)


def test_declared_body_over_max_body_with_expect_100_gets_413_and_no_100(small_limits: Server) -> None:
    with RawConnection.to(small_limits) as connection:
        connection.send(
            request("POST", "/echo/too-big-expect", [("Content-Length", "5000"), ("Expect", "100-continue")])
        )
        response = connection.read_head()
        assert response.status == 413
    assert not [call for call in small_limits.calls() if "too-big-expect" in call]


def test_body_of_exactly_max_body_is_served(small_limits: Server) -> None:
    body = bytes(range(256)) * 4
    with RawConnection.to(small_limits) as connection:
        connection.send(request("POST", "/echo/exact", body=body))
        response = connection.read_response()
    assert (response.status, response.body) == (200, body)


def test_chunked_body_over_max_body_is_answered_413(small_limits: Server) -> None:
    """The application is reading when the limit is crossed: it gets an error and the answer is 413."""
    pieces = [b"a" * 300] * 4  # 1200 bytes > 1024
    data = request("POST", "/input-error/chunked-too-big", [("Transfer-Encoding", "chunked")]) + chunked(*pieces)
    with RawConnection.to(small_limits) as connection:
        connection.send(data)
        response = connection.read_response()
        assert response.status == 413
        assert connection.closed_by_server()
    events = small_limits.events()
    assert "input-error none" not in events, "the application read past --max-body without an error"
    assert_still_serving(small_limits)


def test_chunked_body_within_max_body_is_served(small_limits: Server) -> None:
    pieces = [b"b" * 300] * 3
    data = request("POST", "/echo/chunked-ok", [("Transfer-Encoding", "chunked")]) + chunked(*pieces)
    with RawConnection.to(small_limits) as connection:
        connection.send(data)
        response = connection.read_response()
    assert (response.status, response.body) == (200, b"b" * 900)


# --- timeouts -----------------------------------------------------------------------------------


@pytest.mark.timeout(40)
def test_slow_head_gets_408_at_the_request_timeout_and_frees_its_slot(
    start_server: Callable[..., Server],
) -> None:
    """Slowloris: one byte every 0.5 s; 408 near 2 s; a second client (queued: one slot) is served after.

    With several worker threads (one slot each), keep-alive clients that made
    a request first hold the other threads' slots, so the slowloris takes the
    last free one.
    """
    server = start_server(
        "wsgi_apps:app", "--request-timeout", "2000", "--max-connections", "1", "--keep-alive", "20000"
    )
    holders = hold_every_slot_but_one(server)
    data = request("GET", "/hello/slowloris", [("X-Padding", "p" * 200)])
    outcome: dict[str, object] = {}

    def slowloris() -> None:
        with RawConnection.to(server, timeout=15) as connection:
            started = time.monotonic()
            try:
                for byte in data:
                    connection.send(bytes([byte]))
                    time.sleep(0.5)
                    if time.monotonic() - started > 10:
                        break
            except (BrokenPipeError, ConnectionResetError):
                pass
            try:
                response = connection.read_response()
                outcome["status"] = response.status
            except Exception as error:  # noqa: BLE001 (report whatever happened)
                outcome["status"] = repr(error)
            outcome["elapsed"] = time.monotonic() - started
            outcome["closed"] = connection.closed_by_server()

    # Send in a thread: the 408 arrives while we are still dribbling bytes.
    sender = threading.Thread(target=slowloris)
    started = time.monotonic()
    sender.start()
    time.sleep(0.5)
    with RawConnection.to(server, timeout=15) as second:
        second.send(request("GET", "/hello/second-client"))
        response = second.read_response()
        second_elapsed = time.monotonic() - started
    sender.join(20)
    assert outcome.get("status") == 408, outcome
    elapsed = outcome["elapsed"]
    assert isinstance(elapsed, float)
    # The 408 is read once the dribbling stops; the connection closed around 2 s, so the
    # second (queued) client got its answer near then too.
    assert outcome["closed"] is True
    assert (response.status, response.body) == (200, b"hello")
    assert 1.5 <= second_elapsed <= 6.0, f"second client answered after {second_elapsed:.2f}s"
    assert not [call for call in server.calls() if "slowloris" in call]
    for holder in holders:
        holder.close()


@pytest.mark.timeout(30)
def test_slow_head_408_arrives_at_the_timeout(start_server: Callable[..., Server]) -> None:
    server = start_server("wsgi_apps:app", "--request-timeout", "2000")
    with RawConnection.to(server, timeout=10) as connection:
        connection.send(b"GET /hello/partial HTTP/1.1\r\nHost: loc")
        started = time.monotonic()
        response = connection.read_response()
        elapsed = time.monotonic() - started
        assert response.status == 408
        assert connection.closed_by_server()
    assert 1.5 <= elapsed <= 4.0, f"408 after {elapsed:.2f}s"
    assert_still_serving(server)


@pytest.mark.timeout(30)
def test_idle_keep_alive_connection_is_closed_after_the_keep_alive_timeout(
    start_server: Callable[..., Server],
) -> None:
    server = start_server("wsgi_apps:app", "--keep-alive", "1000")
    with RawConnection.to(server, timeout=10) as connection:
        connection.send(request("GET", "/hello"))
        assert connection.read_response().status == 200
        started = time.monotonic()
        assert connection.closed_by_server(timeout=8)
        elapsed = time.monotonic() - started
    assert connection.buffer == b"", "an idle close must not send a response"
    assert 0.7 <= elapsed <= 3.0, f"idle connection closed after {elapsed:.2f}s"


@pytest.mark.timeout(30)
def test_keep_alive_connection_used_before_the_timeout_stays_open(start_server: Callable[..., Server]) -> None:
    server = start_server("wsgi_apps:app", "--keep-alive", "1000")
    with RawConnection.to(server, timeout=10) as connection:
        for _ in range(4):
            connection.send(request("GET", "/hello"))
            assert connection.read_response().body == b"hello"
            time.sleep(0.5)


@pytest.mark.timeout(30)
def test_stalled_request_body_times_out_and_the_server_goes_on(start_server: Callable[..., Server]) -> None:
    server = start_server("wsgi_apps:app", "--request-timeout", "2000")
    with RawConnection.to(server, timeout=10) as connection:
        connection.send(request("POST", "/input-error/stalled", [("Content-Length", "100")]) + b"x" * 10)
        started = time.monotonic()
        assert connection.closed_by_server(timeout=8)
        elapsed = time.monotonic() - started
        if connection.buffer:
            assert connection.buffer.startswith(b"HTTP/1.1 408 "), connection.buffer[:100]
    assert 1.5 <= elapsed <= 5.0, f"stalled body ended after {elapsed:.2f}s"
    assert server.wait_for_event("input-error", timeout=1) or any(
        event.startswith("input-error ") for event in server.events()
    )
    assert "input-error none" not in server.events()
    assert_still_serving(server)


@pytest.mark.timeout(30)
def test_max_connections_queues_a_second_connection_until_the_first_closes(
    start_server: Callable[..., Server],
) -> None:
    server = start_server("wsgi_apps:app", "--max-connections", "1", "--keep-alive", "20000")
    holders = hold_every_slot_but_one(server)
    with RawConnection.to(server) as first:
        first.send(request("GET", "/hello/first"))
        assert first.read_response().status == 200
        second = RawConnection.to(server)  # accepted by the kernel's backlog: not refused
        second.send(request("GET", "/hello/second"))
        assert second.still_open_after(1.0), (
            "the second connection was served (or dropped) while the first held the slot"
        )
        first.send(request("GET", "/hello/first-again"))
        assert first.read_response().status == 200
    started = time.monotonic()
    with second:
        response = second.read_response()
    assert (response.status, response.body) == (200, b"hello")
    assert time.monotonic() - started < 3.0
    for holder in holders:
        holder.close()


def test_chunked_body_crossing_max_body_in_a_later_packet_is_answered_413(small_limits: Server) -> None:
    marker = f"/input-error/late-too-big-{time.monotonic_ns()}"
    with RawConnection.to(small_limits) as connection:
        connection.send(request("POST", marker, [("Transfer-Encoding", "chunked")]) + b"200\r\n" + b"a" * 512 + b"\r\n")
        assert small_limits.wait_for_event(f"call POST {marker}")
        try:
            for _ in range(4):
                connection.send(b"200\r\n" + b"b" * 512 + b"\r\n")
                time.sleep(0.05)
        except (BrokenPipeError, ConnectionResetError):
            pass
        response = connection.read_response()
        assert response.status == 413
        assert connection.closed_by_server()
    assert_still_serving(small_limits)


def test_trailer_section_too_large_is_refused(small_limits: Server) -> None:
    data = request("POST", "/echo/big-trailers", [("Transfer-Encoding", "chunked")]) + chunked(
        b"abc", trailers=[(f"X-T{i}", "t" * 100) for i in range(100)]
    )
    with RawConnection.to(small_limits) as connection:
        connection.send(data)
        response = connection.read_response()
        assert response.status in (400, 431)
        assert connection.closed_by_server()
    assert_still_serving(small_limits)
