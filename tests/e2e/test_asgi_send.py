"""ASGI send(): response start, streamed bodies, trailers, pathsend, early hints, framing (issue 3 item 4).

Every test runs on uvloop and on plain asyncio (the `loop` fixture).
"""

from __future__ import annotations

import os
import socket
import time
from http import HTTPStatus
from typing import TYPE_CHECKING
from urllib.parse import quote

import pytest
from rawhttp import ConnectionClosedError, RawConnection, request

# Rewritten asserts in the shared helpers, which are also loaded as a plugin below.
pytest.register_assert_rewrite("asgi_support")
from asgi_support import (  # noqa: E402
    assert_raw_still_serving,
    logged,
    release,
    unique,
    wait_records,
)

#: The shared ASGI fixtures (`loop`, `raw_server`) live in asgi_support.
pytest_plugins = ("asgi_support",)

if TYPE_CHECKING:
    from pathlib import Path

    from conftest import Server


def test_first_part_of_a_streamed_body_arrives_before_the_application_finishes(raw_server: Server) -> None:
    ident = unique("stream")
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", f"/stream?id={ident}"))
        head = connection.read_head()
        assert head.status == 200
        assert (head.header("Transfer-Encoding") or "").lower() == "chunked"
        assert head.header("Content-Length") is None
        assert connection.read_line() == b"6\r\n"
        assert connection.read_exactly(8) == b"first;\r\n"
        assert wait_records(raw_server, ident, lambda found: found == ["sent first"])
        release(raw_server, ident)
        rest = b""
        while not rest.endswith(b"0\r\n\r\n"):
            line = connection.read_line()
            rest += line
            if line not in (b"0\r\n", b"\r\n"):
                size = int(line.strip(), 16)
                rest += connection.read_exactly(size + 2)
        # The empty more_body part in between must not have produced a terminating 0-size chunk.
        assert rest == b"7\r\nsecond;\r\n5\r\nthird\r\n0\r\n\r\n"
        wait_records(raw_server, ident, lambda found: found == ["sent first", "finished"])
        connection.send(request("GET", "/hello"))
        assert connection.read_response().body == b"hello"


def test_streamed_body_to_an_http10_client_is_close_delimited(raw_server: Server) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", "/head-stream/ten", version="HTTP/1.0", host=None))
        response = connection.read_response()
        assert response.framing == "close"
        assert response.header("Transfer-Encoding") is None
        assert response.body == b"streamed body"


def test_a_whole_body_gets_its_content_length(raw_server: Server) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", "/hello"))
        response = connection.read_response()
    assert (response.status, response.framing, response.header("Content-Length")) == (200, "length", "5")
    assert response.body == b"hello"


def test_headers_as_a_tuple_of_bytes_bytearray_and_str_pairs(raw_server: Server) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", "/header-forms"))
        response = connection.read_response()
    assert response.status == 201
    assert response.header("x-bytes") == "b"
    assert response.header("x-bytearray") == "ba"
    assert response.header("x-str") == "s"
    assert response.header("x-mixed") == "m"
    assert response.header_all("x-repeat") == ["1", "2"]
    assert response.body == b"bytearray body"


def test_body_message_without_body_or_more_body_ends_an_empty_response(raw_server: Server) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", "/no-body-message") + request("GET", "/hello"))
        response = connection.read_response()
        assert (response.status, response.body) == (200, b"")
        assert connection.read_response().body == b"hello"


@pytest.mark.parametrize("code", [201, 202, 301, 404, 418, 503, 599])
def test_status_passes_through(raw_server: Server, code: int) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", f"/status?code={code}"))
        response = connection.read_response()
    assert (response.status, response.body) == (code, b"status body")


@pytest.mark.parametrize("code", [204, 304])
def test_204_and_304_have_no_body_or_framing(raw_server: Server, code: int) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", f"/status?code={code}") + request("GET", "/hello"))
        response = connection.read_response()
        assert response.status == code
        assert response.header("Transfer-Encoding") is None
        if code == 204:
            assert response.header("Content-Length") is None
        assert connection.read_response().body == b"hello"


# --- HEAD -----------------------------------------------------------------------------------------


def test_head_has_the_headers_of_get_and_no_body(raw_server: Server) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("HEAD", "/hello") + request("GET", "/hello"))
        head = connection.read_response("HEAD")
        assert (head.status, head.header("Content-Length")) == (200, "5")
        assert head.body == b""
        following = connection.read_response()
        assert following.body == b"hello", "the HEAD response carried a body"


def test_head_of_a_streamed_response_sends_no_body(raw_server: Server) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("HEAD", "/head-stream") + request("GET", "/hello"))
        head = connection.read_response("HEAD")
        assert (head.status, head.header("x-method")) == (200, "HEAD")
        following = connection.read_response()
        assert (following.status, following.body) == (200, b"hello"), "the HEAD response carried chunks"


# --- declared Content-Length ----------------------------------------------------------------------


def test_excess_over_declared_content_length_is_dropped(raw_server: Server) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", "/content-length-excess") + request("GET", "/hello"))
        response = connection.read_response()
        assert (response.header("Content-Length"), response.body) == ("5", b"hello")
        following = connection.read_response()
        assert (following.status, following.body) == (200, b"hello")


def test_short_body_for_declared_content_length_closes_the_connection(raw_server: Server) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", "/content-length-short") + request("GET", "/hello"))
        head = connection.read_head()
        assert head.header("Content-Length") == "100"
        with pytest.raises(ConnectionClosedError) as closed:
            connection.read_exactly(100)
        assert closed.value.partial == b"ten bytes!"
    assert_raw_still_serving(raw_server)


# --- trailers -------------------------------------------------------------------------------------


@pytest.mark.parametrize("split", ["0", "1"])
def test_trailers_follow_a_chunked_body(raw_server: Server, split: str) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", f"/trailers?split={split}", [("TE", "trailers")]) + request("GET", "/hello"))
        response = connection.read_response()
        assert response.status == 200
        assert response.framing == "chunked"
        assert response.body == b"part one,part two"
        assert [(name.lower(), value) for name, value in response.trailers] == [
            ("x-checksum", "abc123"),
            ("x-count", "2"),
        ]
        assert connection.read_response().body == b"hello"


def test_trailers_to_an_http10_client_are_dropped_and_the_body_kept(raw_server: Server) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", "/trailers?split=0", version="HTTP/1.0", host=None))
        response = connection.read_response()
    assert response.status == 200
    assert response.header("Transfer-Encoding") is None
    assert response.body == b"part one,part two"


# --- pathsend -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sendable_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 300 KiB file of random bytes."""
    path = tmp_path_factory.mktemp("pathsend") / "payload.bin"
    path.write_bytes(os.urandom(300 * 1024 + 17))
    return path


def test_pathsend_sends_the_file_with_content_length(raw_server: Server, sendable_file: Path) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", f"/pathsend?path={quote(str(sendable_file))}") + request("GET", "/hello"))
        response = connection.read_response()
        assert response.status == 200
        assert response.framing == "length"
        assert response.header("Content-Length") == str(sendable_file.stat().st_size)
        assert response.header("Content-Type") == "application/x-file"
        assert response.body == sendable_file.read_bytes()
        assert connection.read_response().body == b"hello"


def test_pathsend_of_an_empty_file(raw_server: Server, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", f"/pathsend?path={quote(str(empty))}") + request("GET", "/hello"))
        response = connection.read_response()
        assert (response.status, response.header("Content-Length"), response.body) == (200, "0", b"")
        assert connection.read_response().body == b"hello"


def test_head_of_a_pathsend_response_has_no_body(raw_server: Server, sendable_file: Path) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("HEAD", f"/pathsend?path={quote(str(sendable_file))}") + request("GET", "/hello"))
        head = connection.read_response("HEAD")
        assert head.header("Content-Length") == str(sendable_file.stat().st_size)
        assert connection.read_response().body == b"hello"


@pytest.mark.parametrize("reader", ["prompt", "slow"])
def test_pathsend_with_trailers_sends_the_file_as_a_chunk_then_the_trailers(
    raw_server: Server, sendable_file: Path, reader: str
) -> None:
    """Announced trailers make the body chunked (RFC 9112 §7.1): the file is
    one chunk, and the trailers follow it even when the client reads slowly
    (the trailers are produced while the file is still going out)."""
    with RawConnection.to(raw_server) as connection:
        if reader == "slow":
            connection.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        target = f"/pathsend-trailers?path={quote(str(sendable_file))}"
        connection.send(request("GET", target, [("TE", "trailers")]) + request("GET", "/hello"))
        if reader == "slow":
            time.sleep(0.5)
        response = connection.read_response()
        assert response.status == 200
        assert response.framing == "chunked"
        assert response.header("Content-Length") is None
        assert response.body == sendable_file.read_bytes()
        assert [(name.lower(), value) for name, value in response.trailers] == [("x-file-end", "yes")]
        assert connection.read_response().body == b"hello"


def test_pathsend_with_trailers_to_an_http10_client_sends_the_file_alone(
    raw_server: Server, sendable_file: Path
) -> None:
    with RawConnection.to(raw_server) as connection:
        target = f"/pathsend-trailers?path={quote(str(sendable_file))}"
        connection.send(request("GET", target, version="HTTP/1.0", host=None))
        response = connection.read_response()
    assert response.status == 200
    assert response.header("Transfer-Encoding") is None
    assert response.body == sendable_file.read_bytes()


# --- early hints ----------------------------------------------------------------------------------


def test_early_hints_come_as_103_responses_before_the_final_one(raw_server: Server) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", "/early-hint") + request("GET", "/hello"))
        first = connection.read_head()
        assert (first.version, first.status) == ("HTTP/1.1", 103)
        assert first.header_all("link") == [
            "</style.css>; rel=preload; as=style",
            "</app.js>; rel=preload; as=script",
        ]
        assert first.header("Content-Length") is None
        second = connection.read_head()
        assert second.status == 103
        assert second.header_all("link") == ["</font.woff2>; rel=preload; as=font"]
        final = connection.read_response(skip_informational=False)
        assert (final.status, final.body) == (200, b"final")
        assert final.header("link") is None
        assert connection.read_response().body == b"hello"


def test_no_early_hints_to_an_http10_client(raw_server: Server) -> None:
    """RFC 9110 §15.2: a server must not send a 1xx response to an HTTP/1.0 client."""
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", "/early-hint/ten", version="HTTP/1.0", host=None))
        response = connection.read_response(skip_informational=False)
    assert (response.status, response.body) == (200, b"final")


def test_content_length_mismatches_are_logged(raw_server: Server) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", "/content-length-excess/logged"))
        connection.read_response()
    assert logged(raw_server, "more than its Content-Length of 5 bytes; the excess was dropped"), raw_server.excerpt()
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", "/content-length-short/logged"))
        connection.read_until_close()
    assert logged(raw_server, "ended short (10 bytes) of its Content-Length of 100 bytes"), raw_server.excerpt()


@pytest.mark.parametrize("code", [200, 201, 202, 204, 301, 304, 400, 404, 503])
def test_status_line_has_the_standard_reason_phrase(raw_server: Server, code: int) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", f"/status?code={code}"))
        response = connection.read_response()
    assert (response.version, response.status) == ("HTTP/1.1", code)
    assert response.reason == HTTPStatus(code).phrase, f"status line 'HTTP/1.1 {code} {response.reason}'"


def test_connection_close_from_the_application_closes_after_the_response(raw_server: Server) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", "/app-connection-close") + request("GET", "/hello"))
        response = connection.read_response()
        assert (response.status, response.body) == (200, b"closing")
        assert (response.header("Connection") or "").lower() == "close"
        assert connection.closed_by_server(timeout=2)
        assert connection.buffer == b"", "a response followed one that said Connection: close"


def test_one_large_body_message_arrives_intact(raw_server: Server) -> None:
    size = 8 * 1024 * 1024 + 3
    pattern = bytes(range(251))
    with RawConnection.to(raw_server, timeout=30) as connection:
        connection.send(request("GET", f"/big-send?size={size}") + request("GET", "/hello"))
        response = connection.read_response()
        assert len(response.body) == size
        assert response.body == (pattern * (size // 251 + 1))[:size]
        assert connection.read_response().body == b"hello"


@pytest.mark.parametrize("route", ["hint-after-start", "hint-after-body"])
def test_early_hint_after_the_response_started_never_follows_the_final_head(raw_server: Server, route: str) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", f"/{route}") + request("GET", "/hello"))
        heads = [connection.read_head()]
        while heads[-1].status == 103:
            heads.append(connection.read_head())
        final = heads[-1]
        assert final.status == 200
        if (final.header("Transfer-Encoding") or "").lower() == "chunked":
            connection._read_chunked(final)
        else:
            final.body = connection.read_exactly(int(final.header("Content-Length") or "0"))
        assert b"HTTP/1.1 103" not in final.body, "a 103 was written inside the final response"
        following = connection.read_response(skip_informational=False)
        assert (following.status, following.body) == (200, b"hello"), "an interim response came after the final one"


def test_head_with_declared_length_and_no_body_keeps_the_connection(raw_server: Server) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("HEAD", "/head-declared") + request("GET", "/head-declared") + request("GET", "/hello"))
        head = connection.read_response("HEAD")
        assert (head.status, head.header("Content-Length")) == (200, "1000")
        full = connection.read_response()
        assert full.body == b"d" * 1000
        assert connection.read_response().body == b"hello"


def test_pipelined_request_waits_for_the_streamed_response_before_it(raw_server: Server) -> None:
    ident = unique("pipelined-stream")
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", f"/stream?id={ident}") + request("GET", "/hello"))
        head = connection.read_head()
        assert head.status == 200
        assert connection.read_line() == b"6\r\n"
        assert connection.read_exactly(8) == b"first;\r\n"
        assert connection.still_open_after(0.3), "something was sent while the application was paused"
        release(raw_server, ident)
        connection._read_chunked(head)
        assert head.body == b"second;third"
        assert connection.read_response().body == b"hello"
