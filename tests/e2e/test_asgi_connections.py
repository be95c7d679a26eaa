"""ASGI connections: concurrency on one thread, keep-alive and its timeout, limits, access log.

Issue 3 items 1, 3 and 4.

Every test runs on uvloop and on plain asyncio (the `loop` fixture).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import TYPE_CHECKING

import httpx
import pytest
from rawhttp import RawConnection, chunked, request

# Rewritten asserts in the shared helpers, which are also loaded as a plugin below.
pytest.register_assert_rewrite("asgi_support")
from asgi_support import (  # noqa: E402
    assert_raw_still_serving,
    raw_on,
    records,
    rss_kib,
    unique,
    wait_records,
)

#: The shared ASGI fixtures (`loop`, `raw_server`) live in asgi_support.
pytest_plugins = ("asgi_support",)

if TYPE_CHECKING:
    from conftest import Server, ServerPool


@pytest.fixture(scope="module")
def short_timeouts(server_pool: ServerPool, loop: str) -> Server:
    """asgi_raw:app with a 300 ms keep-alive, a 1 s request timeout, 1 KiB bodies and the access log."""
    return raw_on(
        server_pool, loop, "--keep-alive", "300", "--request-timeout", "1000", "--max-body", "1k", "--access-log"
    )


def test_requests_run_concurrently_on_the_one_thread(raw_server: Server) -> None:
    """50 requests that each wait until all 50 are inside the application: served concurrently, or never."""
    ident = unique("barrier")
    count = 50

    async def main() -> list[str]:
        limits = httpx.Limits(max_connections=count)
        async with httpx.AsyncClient(base_url=raw_server.base_url, timeout=20, limits=limits) as client:
            responses = await asyncio.gather(
                *(client.post(f"/barrier?id={ident}&n={count}", content=b"x" * index) for index in range(count))
            )
        return [response.text for response in responses]

    assert asyncio.run(main()) == [f"through {index}" for index in range(count)]


def test_100_pipelined_requests_are_answered_in_order(raw_server: Server) -> None:
    data = b"".join(
        request("POST", f"/echo/{index}", body=b"p" * index)
        if index % 2
        else request("GET", f"/status?code={200 + index % 7}")
        for index in range(100)
    )
    with RawConnection.to(raw_server) as connection:
        connection.send(data)
        for index in range(100):
            response = connection.read_response()
            if index % 2:
                assert json.loads(response.body)["size"] == index
            else:
                assert response.status == 200 + index % 7


def _sized_body(size: int, n: int) -> bytes:
    start = n % 251
    pattern = bytes(range(251))
    return ((pattern[start:] + pattern[:start]) * (size // len(pattern) + 1))[:size]


@pytest.mark.parametrize("size", [13, 20_000, 32_700, 40_000])
def test_pipelined_responses_stay_whole_and_in_order_when_the_client_reads_late(raw_server: Server, size: int) -> None:
    """200 pipelined requests for `size`-byte responses, read only after all are sent.

    Small final responses are held for the end of the loop iteration and
    written together (CoalescedOutput); a client that does not read fills the
    socket, so held writes go out in part and the rest waits as pending
    output. Every response must arrive whole and in request order, on either
    side of the 32 KiB holding limit.
    """
    count = 200
    data = b"".join(request("GET", f"/sized?size={size}&n={index}") for index in range(count))
    with RawConnection.to(raw_server) as connection:
        connection.send(data)
        time.sleep(0.5)
        for index in range(count):
            response = connection.read_response()
            assert response.status == 200
            assert response.body == _sized_body(size, index), f"response {index} of {count}"
    assert_raw_still_serving(raw_server)


def test_many_connections_answered_in_one_iteration_each_get_their_own_response(raw_server: Server) -> None:
    """64 connections send at once, so their responses are held and written together: none is mixed up."""
    connections = [RawConnection.to(raw_server) for _ in range(64)]
    try:
        for round_ in range(5):
            for index, connection in enumerate(connections):
                connection.send(request("GET", f"/sized?size={100 + index}&n={index + round_}"))
            for index, connection in enumerate(connections):
                response = connection.read_response()
                assert response.body == _sized_body(100 + index, index + round_)
    finally:
        for connection in connections:
            connection.close()


def test_connection_close_from_the_client_is_honoured(raw_server: Server) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", "/hello", [("Connection", "close")]))
        response = connection.read_response()
        assert response.body == b"hello"
        assert (response.header("Connection") or "").lower() == "close"
        assert connection.closed_by_server(timeout=2)


def test_http10_request_is_closed_after_the_response(raw_server: Server) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", "/hello", version="HTTP/1.0", host=None))
        assert connection.read_response().body == b"hello"
        assert connection.closed_by_server(timeout=2)


def test_keep_alive_timeout_closes_an_idle_connection_after_a_response(short_timeouts: Server) -> None:
    for _ in range(3):
        with RawConnection.to(short_timeouts) as connection:
            connection.send(request("GET", "/hello"))
            assert connection.read_response().body == b"hello"
            started = time.monotonic()
            assert connection.closed_by_server(timeout=3), "an idle keep-alive connection outlived --keep-alive 300"
            assert time.monotonic() - started < 2


def test_keep_alive_timeout_after_a_streamed_response(short_timeouts: Server) -> None:
    with RawConnection.to(short_timeouts) as connection:
        connection.send(request("GET", "/head-stream"))
        assert connection.read_response().body == b"streamed body"
        assert connection.closed_by_server(timeout=3), "an idle keep-alive connection outlived --keep-alive 300"


def test_request_timeout_answers_408_to_an_incomplete_head(short_timeouts: Server) -> None:
    with RawConnection.to(short_timeouts) as connection:
        connection.send(b"GET /hello HTTP/1.1\r\nHost: loc")
        response = connection.read_response()
        assert response.status == 408


def test_request_timeout_while_the_application_waits_for_the_body(short_timeouts: Server) -> None:
    ident = unique("stalled-body")
    with RawConnection.to(short_timeouts) as connection:
        connection.send(request("POST", f"/disconnect-wait?id={ident}", [("Content-Length", "100")]) + b"12345")
        response = connection.read_response()
        assert response.status == 408
    found = wait_records(short_timeouts, ident, lambda found: len(found) >= 1)
    assert found == [{"type": "http.disconnect", "received": 5}]


def test_declared_body_over_max_body_is_413_without_calling_the_application(short_timeouts: Server) -> None:
    ident = unique("too-large")
    with RawConnection.to(short_timeouts) as connection:
        connection.send(request("POST", f"/disconnect-wait?id={ident}", body=b"a" * 5000))
        response = connection.read_response()
        assert response.status == 413
    time.sleep(0.2)
    assert records(short_timeouts, ident) == []


def test_chunked_body_crossing_max_body_while_the_application_reads(short_timeouts: Server) -> None:
    ident = unique("crossing")
    body = chunked(*([b"c" * 256] * 20))
    with RawConnection.to(short_timeouts) as connection:
        connection.send(request("POST", f"/disconnect-wait?id={ident}", [("Transfer-Encoding", "chunked")]) + body)
        response = connection.read_response()
        assert response.status == 413
        assert connection.closed_by_server(timeout=2)
    found = wait_records(short_timeouts, ident, lambda found: len(found) >= 1)
    assert found == [{"type": "http.disconnect", "received": 1024}]
    assert_raw_still_serving(short_timeouts)


def test_access_log_has_one_line_per_request(short_timeouts: Server) -> None:
    marker = unique("logged")
    with RawConnection.to(short_timeouts) as connection:
        connection.send(request("GET", f"/status?code=418&m={marker}"))
        assert connection.read_response().status == 418
    line = short_timeouts.stdout.wait_for(lambda text: marker in text, 5)
    assert line is not None, short_timeouts.stdout.text()
    assert f'"GET /status?code=418&m={marker} HTTP/1.1" 418 11' in line


def _requests_with_headers(server: Server, first: int, count: int, names: str) -> None:
    """`count` pipelined GET /hello, each with 30 header fields named per `names` ('same' or 'unique')."""
    with RawConnection.to(server, timeout=30) as connection:
        for batch in range(first, first + count, 100):
            data = b""
            for index in range(batch, batch + 100):
                fields = [(f"x-{names}-{index if names == 'unique' else 0}-{j}", "v") for j in range(30)]
                data += request("GET", "/hello", fields)
            connection.send(data)
            for _ in range(100):
                assert connection.read_response().status == 200


@pytest.mark.timeout(60)
def test_header_name_cache_is_bounded(raw_server: Server) -> None:
    """Issue 3 item 7: 90 000 distinct header names do not grow the worker's memory."""
    _requests_with_headers(raw_server, 0, 3000, "same")
    baseline_kib = rss_kib(raw_server)
    _requests_with_headers(raw_server, 0, 3000, "unique")
    grown_mib = (rss_kib(raw_server) - baseline_kib) / 1024
    assert grown_mib < 4, f"worker RSS grew by {grown_mib:.1f} MiB for 90 000 distinct header names"
