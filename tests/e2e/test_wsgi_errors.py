"""Application errors (PEP 3333 "Error Handling", issue 2 item 6).

Before the head is sent an exception becomes a 500 and the worker goes on;
after it, the connection is aborted so the client sees a truncated body;
both are logged with the traceback. start_response's exc_info rules.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

import pytest
from rawhttp import ConnectionClosedError, RawConnection, assert_still_serving, request

if TYPE_CHECKING:
    from conftest import Server


def _logged(server: Server, text: str) -> bool:
    return server.stderr.wait_for(lambda line: text in line, 5) is not None


def test_exception_before_start_response_is_answered_500(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("GET", "/raise-before"))
        response = connection.read_response()
    assert response.status == 500
    assert b"boom" not in response.body, "the traceback leaked to the client"
    assert _logged(wsgi_server, "raise-before: boom before start_response")
    assert _logged(wsgi_server, "Traceback")
    assert_still_serving(wsgi_server)


def test_many_exceptions_in_a_row_on_one_connection(wsgi_server: Server) -> None:
    connection = RawConnection.to(wsgi_server)
    try:
        for _ in range(20):
            connection.send(request("GET", "/raise-before"))
            response = connection.read_response()
            assert response.status == 500
            if (response.header("Connection") or "").lower() == "close":
                connection.close()
                connection = RawConnection.to(wsgi_server)
    finally:
        connection.close()
    assert_still_serving(wsgi_server)


def test_returning_without_calling_start_response_is_answered_500(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("GET", "/no-start-response"))
        assert connection.read_response().status == 500
    assert_still_serving(wsgi_server)


def test_exception_after_the_head_aborts_a_chunked_response(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("GET", "/raise-after") + request("GET", "/hello"))
        head = connection.read_head()
        assert head.status == 200
        assert (head.header("Transfer-Encoding") or "").lower() == "chunked"
        rest = connection.read_until_close()
    assert rest.startswith(b"7\r\npartial\r\n")
    assert b"0\r\n\r\n" not in rest, "an aborted response was terminated as if complete"
    assert b"HTTP/1.1" not in rest, "the pipelined request was answered on an aborted connection"
    assert _logged(wsgi_server, "raise-after: boom mid-body")
    assert_still_serving(wsgi_server)


def test_exception_after_the_head_aborts_a_content_length_response(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("GET", "/raise-after-cl"))
        head = connection.read_head()
        assert head.header("Content-Length") == "100"
        with pytest.raises(ConnectionClosedError) as closed:
            connection.read_exactly(100)
        assert closed.value.partial == b"partial"
    assert_still_serving(wsgi_server)


def test_exception_in_close_is_logged_and_the_response_stands(wsgi_server: Server) -> None:
    name = f"raise-close-{time.monotonic_ns()}"
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("GET", f"/raise-in-close?id={name}"))
        response = connection.read_response()
    assert (response.status, response.body) == (200, b"body before close")
    assert wsgi_server.wait_for_event(f"closed {name}")
    assert _logged(wsgi_server, "raise-in-close: boom in close()")
    assert_still_serving(wsgi_server)


def test_second_start_response_without_exc_info_raises(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("GET", "/start-twice"))
        response = connection.read_response()
    assert response.status == 200
    assert response.body.startswith(b"second call raised "), response.body


def test_start_response_with_exc_info_before_output_replaces_the_head(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("GET", "/exc-info-before"))
        response = connection.read_response()
    assert response.status == 503
    assert response.header("X-Second") == "yes"
    assert response.header("X-First") is None
    assert response.body == b"replaced by the error page"


def test_start_response_with_exc_info_after_output_reraises_and_aborts(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("GET", "/exc-info-after"))
        head = connection.read_head()
        assert head.status == 200
        rest = connection.read_until_close()
    assert rest.startswith(b"7\r\npartial\r\n")
    assert b"should never be sent" not in rest
    assert b"0\r\n\r\n" not in rest
    assert wsgi_server.wait_for_event("exc-info-after re-raised ValueError")
    assert "exc-info-after not re-raised" not in wsgi_server.events()
    assert_still_serving(wsgi_server)


# --- applications that break the protocol: 500, logged, and the server goes on ------------------


@pytest.mark.parametrize(
    "kind",
    [
        "yield-str",
        "return-none",
        "iter-raises",
        "bad-status",
        "int-header",
        "bytes-status",
        "headers-not-list",
        "write-str",
    ],
)
def test_protocol_violation_by_the_application_is_answered_500(wsgi_server: Server, kind: str) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("GET", f"/broken/{kind}"))
        try:
            response = connection.read_response()
        except ConnectionClosedError as closed:
            raise AssertionError(f"connection closed without a response: {closed.partial[:200]!r}") from None
    assert response.status == 500
    assert b"text, not bytes" not in response.body
    assert_still_serving(wsgi_server)


def test_server_objects_used_after_their_request_refuse_safely(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("POST", "/stash", body=b"0123456789" * 10))
        assert connection.read_response().body == b"stashed"
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("POST", "/use-stash", body=b"SECRET-OF-THE-SECOND-REQUEST"))
        response = connection.read_response()
        connection.send(request("GET", "/hello"))
        following = connection.read_response()
    assert response.status == 200
    outcomes = json.loads(response.body)
    assert "SECRET" not in response.body.decode(), "a stale wsgi.input read another request's body"
    for name in ("input.read", "input.readline", "input.iter", "start_response", "write"):
        assert outcomes[name].startswith("raised "), (name, outcomes[name])
    assert following.body == b"hello"
    assert_still_serving(wsgi_server)


def test_wrong_argument_types_to_wsgi_input_raise_type_errors(wsgi_server: Server) -> None:
    with RawConnection.to(wsgi_server) as connection:
        connection.send(request("POST", "/bad-input-args", body=b"abc"))
        response = connection.read_response()
    assert response.status == 200
    outcomes = json.loads(response.body)
    for name in ("read-str", "read-float", "read-two", "readline-str", "readlines-str"):
        assert outcomes[name] == "raised TypeError", (name, outcomes[name])
    assert outcomes["read-huge"] in (
        "returned b'abc'",
        "raised OverflowError",
        "raised ValueError",
        "raised MemoryError",
    ), outcomes["read-huge"]
    assert_still_serving(wsgi_server)
