"""Connection reuse (RFC 9112 §9): keep-alive, pipelining in order, HTTP/1.0 and Connection: close."""

from __future__ import annotations

import http.client
import threading
import time
from typing import TYPE_CHECKING

import httpx
from rawhttp import RawConnection, assert_still_serving, chunked, request

if TYPE_CHECKING:
    from collections.abc import Callable

    from conftest import Server


def test_http_client_reuses_one_connection_for_several_requests(wsgi_server: Server) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", wsgi_server.port, timeout=10)
    try:
        ports = set()
        for i in range(5):
            connection.request("POST", f"/echo/keepalive-{i}", body=f"body {i}".encode())
            response = connection.getresponse()
            assert (response.status, response.read()) == (200, f"body {i}".encode())
            assert response.getheader("Connection", "").lower() != "close"
            assert connection.sock is not None
            ports.add(connection.sock.getsockname()[1])
        assert len(ports) == 1, "http.client had to reconnect"
    finally:
        connection.close()


def test_httpx_client_keeps_the_connection_across_methods(wsgi_server: Server) -> None:
    with httpx.Client(base_url=wsgi_server.base_url, timeout=10) as client:
        assert client.get("/hello").text == "hello"
        assert client.post("/echo/x", content=b"abc").content == b"abc"
        assert client.head("/hello").headers["content-length"] == "5"
        assert client.get("/chunks?n=3&size=2").content == b"AABBCC"
        assert client.put("/echo/y", content=b"").content == b""


def test_three_pipelined_requests_are_answered_in_order(wsgi_server: Server) -> None:
    data = (
        request("GET", "/sleep?ms=200")
        + request("POST", "/echo/second", body=b"second body")
        + request("GET", "/chunks?n=2&size=3")
    )
    with RawConnection.to(wsgi_server) as connection:
        connection.send(data)
        first, second, third = (connection.read_response() for _ in range(3))
        assert (first.status, first.body) == (200, b"slept")
        assert (second.status, second.body) == (200, b"second body")
        assert (third.status, third.body, third.framing) == (200, b"AAABBB", "chunked")
        assert connection.still_open_after(0.3), "keep-alive connection closed after pipelined requests"
        connection.send(request("GET", "/hello"))
        assert connection.read_response().body == b"hello"


def test_pipelined_requests_sent_byte_by_byte_are_answered_in_order(wsgi_server: Server) -> None:
    data = request("POST", "/echo/a", body=b"AAAA") + request("POST", "/echo/b", body=b"BB")
    with RawConnection.to(wsgi_server) as connection:
        for byte in data:
            connection.send(bytes([byte]))
        assert connection.read_response().body == b"AAAA"
        assert connection.read_response().body == b"BB"


def test_many_pipelined_requests_in_one_packet(wsgi_server: Server) -> None:
    data = b"".join(request("GET", f"/echo/p{i}", [("Content-Length", "1")]) + bytes([48 + i % 10]) for i in range(50))
    with RawConnection.to(wsgi_server) as connection:
        connection.send(data)
        bodies = [connection.read_response().body for _ in range(50)]
    assert bodies == [bytes([48 + i % 10]) for i in range(50)]


def test_pipelined_request_after_an_unread_body_is_answered(wsgi_server: Server) -> None:
    """The application ignores the body: the server discards it and the next request is parsed right."""
    data = (
        request("POST", "/ignore-body/1", body=b"x" * 5000)
        + request("POST", "/ignore-body/2", [("Transfer-Encoding", "chunked")])
        + chunked(b"y" * 3000, b"z")
        + request("GET", "/hello")
    )
    with RawConnection.to(wsgi_server) as connection:
        connection.send(data)
        assert connection.read_response().body == b"ignored"
        assert connection.read_response().body == b"ignored"
        assert connection.read_response().body == b"hello"
    assert not [call for call in wsgi_server.calls() if "xxxx" in call]


def test_http10_request_is_answered_and_closed(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("GET", "/hello", version="HTTP/1.0", host=None))
        response = connection.read_response()
        assert (response.status, response.body) == (200, b"hello")
        assert response.version in ("HTTP/1.1", "HTTP/1.0")
        assert connection.closed_by_server()


def test_http10_keep_alive_request_keeps_the_connection(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        for _ in range(3):
            connection.send(request("GET", "/hello", [("Connection", "keep-alive")], version="HTTP/1.0", host=None))
            response = connection.read_response()
            assert (response.status, response.body) == (200, b"hello")
            assert (response.header("Connection") or "").lower() == "keep-alive"
        assert connection.still_open_after(0.3)
        connection.send(request("GET", "/hello", version="HTTP/1.0", host=None))
        assert connection.read_response().body == b"hello"
        assert connection.closed_by_server()


def test_http10_keep_alive_with_unknown_length_closes(wsgi_server: Server) -> None:
    """HTTP/1.0 has no chunked coding: a body of unknown length is close-delimited even when asked to keep alive."""
    with RawConnection.to(wsgi_server) as connection:
        connection.send(
            request("GET", "/chunks?n=3&size=4", [("Connection", "keep-alive")], version="HTTP/1.0", host=None)
        )
        response = connection.read_response()
        assert response.framing == "close"
        assert response.body == b"AAAABBBBCCCC"
        assert response.header("Transfer-Encoding") is None


def test_http10_response_of_unknown_length_is_close_delimited(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("GET", "/chunks?n=4&size=3", version="HTTP/1.0", host=None))
        response = connection.read_response()
    assert response.header("Transfer-Encoding") is None
    assert response.header("Content-Length") is None
    assert (response.framing, response.body) == ("close", b"AAABBBCCCDDD")


def test_connection_close_on_http11_is_honoured(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("GET", "/hello", [("Connection", "close")]) + request("GET", "/echo/after-close"))
        response = connection.read_response()
        assert response.body == b"hello"
        assert (response.header("Connection") or "").lower() == "close"
        assert connection.closed_by_server()
        assert connection.buffer == b""
    assert not [call for call in wsgi_server.calls() if "after-close" in call]


def test_connection_header_with_several_options_including_close(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("GET", "/hello", [("Connection", "TE, Close")]))
        assert connection.read_response().body == b"hello"
        assert connection.closed_by_server()


def test_leading_empty_line_before_a_request_is_tolerated(wsgi_server: Server) -> None:
    """RFC 9112 §2.2: a server SHOULD ignore at least one empty line before the request line."""
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("POST", "/echo/1", body=b"one") + b"\r\n" + request("GET", "/hello"))
        assert connection.read_response().body == b"one"
        assert connection.read_response().body == b"hello"


def test_client_closing_mid_head_does_not_disturb_the_server(wsgi_server: Server) -> None:
    for cut in (1, 10, 30):
        with RawConnection.to(wsgi_server) as connection:
            connection.send(request("GET", "/hello/cut")[:cut])
    assert_still_serving(wsgi_server)


def test_concurrent_keep_alive_clients_each_get_their_own_answers(wsgi_server: Server) -> None:
    failures: list[str] = []

    def client(number: int) -> None:
        try:
            with RawConnection.to(wsgi_server, timeout=30) as connection:
                for i in range(20):
                    body = f"client {number} request {i}".encode() * (1 + i)
                    connection.send(request("POST", f"/echo/c{number}", body=body))
                    response = connection.read_response()
                    if response.body != body:
                        failures.append(f"client {number} request {i}: {response.body[:60]!r}")
        except Exception as error:  # noqa: BLE001 (collected and reported below)
            failures.append(f"client {number}: {error!r}")

    threads = [threading.Thread(target=client, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(45)
    assert failures == []


def test_hundreds_of_short_connections_reuse_slots_cleanly(wsgi_server: Server) -> None:
    for i in range(300):
        with RawConnection.to(wsgi_server) as connection:
            if i % 3 == 0:
                continue  # connect and close without a request
            connection.send(request("GET", "/hello"))
            if i % 3 == 1:
                assert connection.read_response().body == b"hello"
            # i % 3 == 2: close without reading the response
    assert_still_serving(wsgi_server)


def test_slow_reader_gets_a_large_streamed_response_intact(start_server: Callable[..., Server]) -> None:
    """The server's writes hit EAGAIN and partial writes; a reader that keeps making progress gets every
    byte in order even though the whole response takes longer than --request-timeout (a stall limit)."""
    server = start_server("wsgi_apps:app", "--request-timeout", "2000")
    count, size = 128, 65536
    with RawConnection.to(server, timeout=30) as connection:
        connection.send(request("GET", f"/chunks?n={count}&size={size}") + request("GET", "/hello"))
        started = time.monotonic()
        time.sleep(0.5)
        head = connection.read_head()
        assert head.status == 200
        received = bytearray()
        while True:
            chunk_size = int(connection.read_line(), 16)
            if chunk_size == 0:
                assert connection.read_line() == b"\r\n"
                break
            received += connection.read_exactly(chunk_size)
            assert connection.read_exactly(2) == b"\r\n"
            if len(received) % (1 << 20) == 0:
                time.sleep(0.4)
        assert bytes(received) == b"".join(bytes([65 + i % 26]) * size for i in range(count))
        assert connection.read_response().body == b"hello"
        assert time.monotonic() - started > 2.5


def test_partly_read_body_is_discarded_before_the_next_pipelined_request(wsgi_server: Server) -> None:
    body = b"0123456789" * 500
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("POST", "/read-some?n=7", body=body) + request("POST", "/echo/after", body=b"next"))
        assert connection.read_response().body == b"0123456"
        assert connection.read_response().body == b"next"


def test_a_thousand_pipelined_requests_are_answered_in_order(wsgi_server: Server) -> None:
    data = b"".join(request("GET", f"/status/{200 + i % 7}") for i in range(1000))
    with RawConnection.to(wsgi_server, timeout=30) as connection:
        connection.send(data)
        statuses = [connection.read_response().status for _ in range(1000)]
    assert statuses == [200 + i % 7 for i in range(1000)]
