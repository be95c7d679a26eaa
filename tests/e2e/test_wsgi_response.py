"""The response side of WSGI (PEP 3333): streaming, wsgi.file_wrapper/sendfile, write(), close(), headers."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING
from urllib.parse import quote

import pytest
from rawhttp import RawConnection, assert_still_serving, request

if TYPE_CHECKING:
    from pathlib import Path

    from conftest import Server


@pytest.fixture(scope="module")
def big_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes]:
    """A 5 MiB file of random bytes (plus an odd tail)."""
    data = os.urandom(5 * 1024 * 1024 + 12345)
    path = tmp_path_factory.mktemp("files") / "big.bin"
    path.write_bytes(data)
    return path, data


# --- streaming ----------------------------------------------------------------------------------


def test_first_block_of_a_generator_arrives_before_the_generator_finishes(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        started = time.monotonic()
        connection.send(request("GET", "/stream?delay=1000"))
        head = connection.read_head()
        assert (head.header("Transfer-Encoding") or "").lower() == "chunked"
        first_size = connection.read_line()
        first = connection.read_exactly(int(first_size, 16))
        first_at = time.monotonic() - started
        assert first == b"first"
        assert first_at < 0.7, f"first block arrived after {first_at:.2f}s: output was buffered"
        connection.read_exactly(2)
        second = connection.read_exactly(int(connection.read_line(), 16))
        second_at = time.monotonic() - started
        assert second == b"second"
        assert second_at >= 0.9
        assert connection.read_exactly(2) == b"\r\n"
        assert connection.read_line() == b"0\r\n"
        assert connection.read_line() == b"\r\n"


def test_streamed_http10_response_arrives_progressively(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        started = time.monotonic()
        connection.send(request("GET", "/stream?delay=800", version="HTTP/1.0", host=None))
        connection.read_head()
        while b"first" not in connection.buffer:
            assert connection._fill()
        assert time.monotonic() - started < 0.6
        assert connection.read_until_close() == b"firstsecond"


def test_many_chunks_arrive_intact(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("GET", "/chunks?n=500&size=1000"))
        response = connection.read_response()
    assert len(response.chunks) == 500
    assert response.body == b"".join(bytes([65 + i % 26]) * 1000 for i in range(500))


# --- wsgi.file_wrapper --------------------------------------------------------------------------


def test_file_wrapper_sends_a_real_file_exactly(wsgi_server: Server, big_file: tuple[Path, bytes]) -> None:
    path, data = big_file
    with RawConnection.to(wsgi_server, timeout=30) as connection:
        connection.send(request("GET", f"/file?path={quote(str(path))}") + request("GET", "/hello"))
        response = connection.read_response()
        assert response.header("Content-Length") == str(len(data))
        assert response.body == data
        assert connection.read_response().body == b"hello"


def test_file_wrapper_respects_the_file_position(wsgi_server: Server, big_file: tuple[Path, bytes]) -> None:
    path, data = big_file
    offset = 1_000_003
    with RawConnection.to(wsgi_server, timeout=30) as connection:
        connection.send(request("GET", f"/file?path={quote(str(path))}&offset={offset}"))
        response = connection.read_response()
    assert response.body == data[offset:]


def test_file_wrapper_stops_at_the_declared_content_length(wsgi_server: Server, big_file: tuple[Path, bytes]) -> None:
    path, data = big_file
    with RawConnection.to(wsgi_server, timeout=30) as connection:
        connection.send(
            request("GET", f"/file?path={quote(str(path))}&offset=10&length=1000") + request("GET", "/hello")
        )
        response = connection.read_response()
        assert response.body == data[10:1010]
        assert connection.read_response().body == b"hello", "file bytes past Content-Length leaked"


def test_file_wrapper_without_content_length_is_framed(wsgi_server: Server, big_file: tuple[Path, bytes]) -> None:
    """No declared length: chunked, or a Content-Length the server took from the file."""
    path, data = big_file
    with RawConnection.to(wsgi_server, timeout=30) as connection:
        connection.send(request("GET", f"/file?path={quote(str(path))}&no-length=1") + request("GET", "/hello"))
        response = connection.read_response()
        assert response.framing in ("chunked", "length")
        assert response.body == data
        assert connection.read_response().body == b"hello"


def test_file_wrapper_over_http10_without_length(wsgi_server: Server, big_file: tuple[Path, bytes]) -> None:
    path, data = big_file
    with RawConnection.to(wsgi_server, timeout=30) as connection:
        connection.send(request("GET", f"/file?path={quote(str(path))}&no-length=1", version="HTTP/1.0", host=None))
        response = connection.read_response()
    assert response.framing in ("close", "length")
    assert response.body == data


def test_head_of_a_file_response_sends_no_body(wsgi_server: Server, big_file: tuple[Path, bytes]) -> None:
    path, data = big_file
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("HEAD", f"/file?path={quote(str(path))}") + request("GET", "/hello"))
        response = connection.read_response("HEAD")
        assert response.header("Content-Length") == str(len(data))
        assert connection.read_response().body == b"hello"


def test_file_wrapper_through_the_validator_is_iterated(wsgi_server: Server, big_file: tuple[Path, bytes]) -> None:
    path, data = big_file
    with RawConnection.to(wsgi_server, timeout=30) as connection:
        connection.send(request("GET", f"/file-validated?path={quote(str(path))}"))
        assert connection.read_response().body == data


@pytest.mark.parametrize("route", ["/bytesio", "/bytesio-raw"])
def test_file_wrapper_over_a_non_file_object_is_iterated(wsgi_server: Server, route: str) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("GET", route) + request("GET", "/hello"))
        assert connection.read_response().body == bytes(range(256)) * 1000
        assert connection.read_response().body == b"hello"


# --- write(), late start_response, close() -------------------------------------------------------


def test_write_callable_then_iterable(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("GET", "/write") + request("GET", "/write-only"))
        assert connection.read_response().body == b"write1write2iter1iter2"
        response = connection.read_response()
        assert (response.header("Content-Length"), response.body) == ("11", b"hello world")


def test_start_response_called_during_the_first_iteration(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("GET", "/start-in-iteration"))
        response = connection.read_response()
    assert (response.status, response.header("X-Late"), response.body) == (201, "yes", b"late start")


def test_iterable_close_is_called_after_the_response(wsgi_server: Server) -> None:
    name = f"normal-{time.monotonic_ns()}"
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("GET", f"/close-recorded?id={name}&n=3&size=4"))
        assert connection.read_response().body == b"x" * 12
    assert wsgi_server.wait_for_event(f"closed {name}")


def test_iterable_close_is_called_for_head(wsgi_server: Server) -> None:
    name = f"head-{time.monotonic_ns()}"
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("HEAD", f"/close-recorded?id={name}"))
        assert connection.read_response("HEAD").status == 200
    assert wsgi_server.wait_for_event(f"closed {name}")


def test_iterable_close_is_called_when_the_client_disconnects_mid_response(wsgi_server: Server) -> None:
    name = f"disconnect-{time.monotonic_ns()}"
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("GET", f"/close-recorded?id={name}&n=4000&size=65536"))
        connection.read_head()
        connection.read_exactly(100_000)
    # Closed with unread data: the server's next writes fail.
    assert wsgi_server.wait_for_event(f"closed {name}", timeout=20), "close() not called after a disconnect"
    assert_still_serving(wsgi_server)


# --- response headers the server must refuse ---------------------------------------------------


@pytest.mark.parametrize("kind", ["cr", "lf", "nul", "crlf", "name-crlf", "name-colon"])
def test_response_header_with_control_characters_is_refused_500(wsgi_server: Server, kind: str) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("GET", f"/bad-header/{kind}"))
        response = connection.read_response()
        raw_tail = connection.buffer
    assert response.status == 500
    assert response.header("X-Bad") is None
    assert response.header("Set-Cookie") is None
    assert response.header("Injected") is None
    assert b"must not be sent" not in response.body + raw_tail
    assert_still_serving(wsgi_server)


@pytest.mark.parametrize("kind", ["not-a-tuple", "crlf", "not-str", "cleared", "grown"])
def test_headers_changed_after_start_response_are_sent_as_checked(wsgi_server: Server, kind: str) -> None:
    # The server sends the headers start_response checked: a list the application changes afterwards can neither
    # crash the worker nor inject fields.
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("GET", f"/mutated-headers/{kind}"))
        response = connection.read_response()
    assert response.status == 200
    assert response.body == b"body"
    assert response.header("X-Checked") == "yes"
    assert response.header("X-Bad") is None
    assert response.header("Set-Cookie") is None
    assert response.header("X-Many") is None
    assert_still_serving(wsgi_server)


def test_the_same_headers_list_changed_in_place_is_checked_each_time(wsgi_server: Server) -> None:
    # The server skips checking pairs it checked for the previous call when they are the very same (immutable)
    # objects; a list changed in place between calls holds other pairs, and those are checked (PEP 3333: the
    # server must not send what the application may not send).
    with RawConnection.to(wsgi_server) as connection:
        rounds = []
        for value in ("1", "2", "2", "crlf", "3", "grown", "4"):
            connection.send(request("GET", f"/shared-headers/{value}"))
            rounds.append(connection.read_response())
    seen = [(r.status, r.header("X-Round"), r.header("X-Grown")) for r in rounds]
    assert seen[:3] == [(200, "1", None), (200, "2", None), (200, "2", None)]
    assert seen[3][0] == 500
    assert rounds[3].header("Set-Cookie") is None
    assert seen[4:] == [(200, "3", None), (200, "grown", "yes"), (200, "4", None)]
    assert all(r.body == b"shared" for i, r in enumerate(rounds) if i != 3)
    assert_still_serving(wsgi_server)


def test_response_bytes_are_exact_for_a_simple_response(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("GET", "/hello"))
        response = connection.read_response()
    assert (response.version, response.status, response.reason) == ("HTTP/1.1", 200, "OK")
    names = [name.lower() for name, _ in response.headers]
    assert names.count("content-length") == 1
    assert names.count("date") == 1
    assert response.header("Content-Type") == "text/plain"
