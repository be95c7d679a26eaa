"""Message bodies both ways (RFC 9112 §6-7, RFC 9110 §9.3.2, §10.1.1, §15.3.5, §15.4.5).

Request bodies by Content-Length and chunked (with trailers), Expect:
100-continue, response framing (Content-Length, chunked, HEAD, 204/304), and
an application-declared Content-Length enforced in both directions.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import pytest
from rawhttp import ConnectionClosedError, RawConnection, assert_still_serving, chunked, request

if TYPE_CHECKING:
    from conftest import Server


# --- request bodies -----------------------------------------------------------------------------


def test_content_length_body_is_echoed(wsgi_server: Server) -> None:
    body = bytes(range(256)) * 300
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("POST", "/echo/cl", body=body))
        response = connection.read_response()
    assert (response.status, response.body, response.header("X-Body-Length")) == (200, body, str(len(body)))


def test_chunked_body_with_trailers_is_echoed_and_the_connection_stays_in_sync(wsgi_server: Server) -> None:
    pieces = [b"first piece\n", b"x" * 70000, b"\r\n0\r\n\r\n-looks-like-framing", b"end"]
    data = request("POST", "/echo/trailers", [("Transfer-Encoding", "chunked"), ("Trailer", "X-Checksum")]) + chunked(
        *pieces, trailers=[("X-Checksum", "abc123"), ("X-Other", "value")]
    )
    with RawConnection.to(wsgi_server) as connection:
        connection.send(data + request("GET", "/hello"))
        response = connection.read_response()
        assert response.status == 200
        assert response.body == b"".join(pieces)
        assert connection.read_response().body == b"hello"


def test_chunked_body_sent_in_pieces_is_echoed(wsgi_server: Server) -> None:
    data = request("POST", "/echo/slow-chunks", [("Transfer-Encoding", "chunked")]) + chunked(
        b"abc", b"defgh", trailers=[("X-T", "1")]
    )
    with RawConnection.to(wsgi_server) as connection:
        for start in range(0, len(data), 7):
            connection.send(data[start : start + 7])
            time.sleep(0.005)
        assert connection.read_response().body == b"abcdefgh"


def test_chunk_sizes_in_upper_and_lower_case_hex_with_leading_zeros(wsgi_server: Server) -> None:
    body = b"0000A\r\n0123456789\r\n00b\r\nabcdefghijk\r\n000\r\n\r\n"
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("POST", "/echo/hex", [("Transfer-Encoding", "chunked")]) + body)
        assert connection.read_response().body == b"0123456789abcdefghijk"


def test_empty_chunked_body(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("POST", "/echo/empty", [("Transfer-Encoding", "chunked")]) + b"0\r\n\r\n")
        response = connection.read_response()
    assert (response.status, response.body) == (200, b"")


def test_content_length_zero_body(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("POST", "/echo/zero", [("Content-Length", "0")]))
        assert connection.read_response().body == b""


# --- Expect: 100-continue -----------------------------------------------------------------------


def test_100_continue_is_sent_when_the_application_reads_the_body(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("POST", "/echo/continue", [("Content-Length", "11"), ("Expect", "100-continue")]))
        interim = connection.read_head()
        assert (interim.version, interim.status) == ("HTTP/1.1", 100)
        assert interim.headers == [] or all(name.lower() != "content-length" for name, _ in interim.headers)
        connection.send(b"hello world")
        response = connection.read_response()
        assert (response.status, response.body) == (200, b"hello world")
        connection.send(request("GET", "/hello"))
        assert connection.read_response().body == b"hello"


def test_100_continue_with_chunked_body(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(
            request("POST", "/echo/continue-chunked", [("Transfer-Encoding", "chunked"), ("Expect", "100-Continue")])
        )
        assert connection.read_head().status == 100
        connection.send(chunked(b"abc", b"def"))
        assert connection.read_response().body == b"abcdef"


def test_no_100_continue_when_the_application_does_not_read_the_body(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(
            request("POST", "/ignore-body/no-continue", [("Content-Length", "5000"), ("Expect", "100-continue")])
        )
        response = connection.read_head()
        assert response.status == 200, "a 100 Continue was sent although the body was never read"
        assert connection.read_exactly(int(response.header("Content-Length") or "0")) == b"ignored"
        # Either the server closes (it cannot tell whether the body will follow) or, if it
        # stays open, it must then cope with the body arriving and a next request after it.
        if not connection.closed_by_server(timeout=1.0):
            connection.send(b"z" * 5000 + request("GET", "/hello"))
            assert connection.read_response().body == b"hello"
    assert_still_serving(wsgi_server)


def test_100_continue_is_not_sent_to_http10_clients(wsgi_server: Server) -> None:
    """RFC 9110 §10.1.1: a server MUST NOT send 100 to an HTTP/1.0 client."""
    with RawConnection.to(wsgi_server) as connection:
        connection.send(
            request(
                "POST",
                "/echo/continue-10",
                [("Content-Length", "3"), ("Expect", "100-continue")],
                version="HTTP/1.0",
                host=None,
            )
        )
        assert connection.still_open_after(0.5)
        connection.send(b"abc")
        response = connection.read_response(skip_informational=False)
        assert (response.status, response.body) == (200, b"abc")


def test_body_sent_with_the_head_despite_expect_gets_a_response(wsgi_server: Server) -> None:
    data = request("POST", "/echo/eager", [("Content-Length", "5"), ("Expect", "100-continue")]) + b"eager"
    with RawConnection.to(wsgi_server) as connection:
        connection.send(data + request("GET", "/hello"))
        assert connection.read_response().body == b"eager"
        assert connection.read_response().body == b"hello"


# --- response framing ---------------------------------------------------------------------------


def test_http11_response_of_unknown_length_is_chunked(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("GET", "/chunks?n=3&size=4"))
        response = connection.read_response()
        assert (response.header("Transfer-Encoding") or "").lower() == "chunked"
        assert response.header("Content-Length") is None
        assert response.chunks == [b"AAAA", b"BBBB", b"CCCC"]
        assert response.trailers == []
        connection.send(request("GET", "/hello"))
        assert connection.read_response().body == b"hello"


def test_empty_blocks_do_not_end_a_chunked_response(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("GET", "/empty-blocks") + request("GET", "/hello"))
        response = connection.read_response()
        assert (response.framing, response.body) == ("chunked", b"abcd")
        assert connection.read_response().body == b"hello"


def test_known_length_response_has_content_length(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("GET", "/hello"))
        response = connection.read_response()
    assert response.header("Content-Length") == "5"
    assert response.header("Transfer-Encoding") is None
    assert response.header("Date") is not None


def test_head_has_the_headers_of_get_and_no_body(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("GET", "/hello"))
        got = connection.read_response()
        connection.send(request("HEAD", "/hello") + request("GET", "/echo/after-head", body=b"next"))
        headed = connection.read_response("HEAD")
        assert headed.status == 200
        assert headed.header("Content-Length") == got.header("Content-Length") == "5"
        assert headed.header("Content-Type") == got.header("Content-Type")
        following = connection.read_response()
        assert (following.status, following.body) == (200, b"next"), "HEAD response carried a body"


def test_head_of_a_streamed_response_sends_no_body(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("HEAD", "/chunks?n=3&size=4") + request("GET", "/hello"))
        headed = connection.read_response("HEAD")
        assert headed.status == 200
        assert connection.read_response().body == b"hello"


def test_204_and_304_have_no_body(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("GET", "/status/204") + request("GET", "/status/304") + request("GET", "/hello"))
        for code in (204, 304):
            response = connection.read_response()
            assert response.status == code
            assert response.header("Transfer-Encoding") is None
            assert response.header("X-Code") == str(code)
        assert connection.read_response().body == b"hello", "204/304 carried body bytes"


def test_204_never_gets_content_length_or_chunked(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("GET", "/status/204"))
        response = connection.read_head()
    assert response.header("Content-Length") is None
    assert response.header("Transfer-Encoding") is None


def test_other_statuses_pass_through(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        for code in (201, 404, 418, 500, 599):
            connection.send(request("GET", f"/status/{code}"))
            response = connection.read_response()
            assert (response.status, response.body) == (code, f"status {code}".encode())


# --- Content-Length declared by the application -------------------------------------------------


def test_excess_over_declared_content_length_is_dropped_and_the_connection_stays_in_sync(
    wsgi_server: Server,
) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("GET", "/cl-excess") + request("GET", "/hello"))
        response = connection.read_response()
        assert (response.header("Content-Length"), response.body) == ("10", b"0123456789")
        following = connection.read_response()
        assert (following.status, following.body) == (200, b"hello")
    assert wsgi_server.stderr.wait_for(lambda line: "Content-Length" in line and "excess" in line, 5) is not None


def test_short_body_for_declared_content_length_closes_the_connection(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("GET", "/cl-short") + request("GET", "/hello"))
        head = connection.read_head()
        assert head.header("Content-Length") == "100"
        with pytest.raises(ConnectionClosedError) as closed:
            connection.read_exactly(100)
        assert closed.value.partial == b"0123456789"
    assert wsgi_server.stderr.wait_for(lambda line: "ended short" in line and "Content-Length" in line, 5) is not None
    assert_still_serving(wsgi_server)


def test_body_arriving_after_the_head_is_waited_for(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("POST", "/echo/late-body", [("Content-Length", "10")]))
        time.sleep(0.3)
        connection.send(b"01234")
        time.sleep(0.3)
        connection.send(b"56789")
        assert connection.read_response().body == b"0123456789"


def test_content_length_with_leading_zeros_is_accepted(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(
            request("POST", "/echo/zeros", [("Content-Length", "005")]) + b"abcde" + request("GET", "/hello")
        )
        assert connection.read_response().body == b"abcde"
        assert connection.read_response().body == b"hello"


def test_transfer_coding_names_are_case_insensitive(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("POST", "/echo/case", [("transfer-encoding", "Chunked")]) + chunked(b"abc"))
        assert connection.read_response().body == b"abc"


def test_transfer_encoding_in_http10_request_closes_the_connection(wsgi_server: Server) -> None:
    """RFC 9112 §6.1: treat the framing as faulty and close after processing (or refuse with 400)."""
    data = request("POST", "/echo/te-10", [("Transfer-Encoding", "chunked")], version="HTTP/1.0", host=None)
    with RawConnection.to(wsgi_server) as connection:
        connection.send(data + chunked(b"abc") + request("GET", "/hello"))
        response = connection.read_response()
        assert response.status in (200, 400)
        assert connection.closed_by_server()
        assert b"hello" not in connection.buffer


def test_client_disconnecting_mid_body_does_not_disturb_the_server(wsgi_server: Server) -> None:
    name = f"/input-error/disconnect-{time.monotonic_ns()}"
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("POST", name, [("Content-Length", "100000")]) + b"x" * 1000)
        time.sleep(0.2)
    assert wsgi_server.wait_for_event(f"call POST {name}")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not any(e.startswith("input-error ") for e in wsgi_server.events()[-5:]):
        time.sleep(0.05)
    assert "input-error none" not in wsgi_server.events()[-5:], "a truncated body read as complete"
    assert_still_serving(wsgi_server)


def test_framing_header_names_are_case_insensitive_and_values_trimmed(wsgi_server: Server) -> None:
    data = b"POST /echo/ows HTTP/1.1\r\nhost: localhost\r\ncontent-LENGTH: \t 5 \t\r\n\r\nabcde" + request(
        "GET", "/hello"
    )
    with RawConnection.to(wsgi_server) as connection:
        connection.send(data)
        assert connection.read_response().body == b"abcde"
        assert connection.read_response().body == b"hello"


def test_empty_host_is_accepted_for_origin_form(wsgi_server: Server) -> None:
    """RFC 9112 §3.2: a client MUST send an empty Host when the target URI has no authority."""
    with RawConnection.to(wsgi_server) as connection:
        connection.send(b"GET /hello HTTP/1.1\r\nHost:\r\n\r\n")
        response = connection.read_response()
    assert (response.status, response.body) == (200, b"hello")
