"""ASGI misuse and application errors (issue 3 items 4 and 5).

/misuse?kind=K does one wrong thing with send(), catches what it raises and
answers {"kind", "caught": {"type", "message", ...}} as the body;
/misuse-propagate?kind=K lets the exception escape instead. Application
exceptions before the head become a 500, after it an aborted connection;
all are logged with the traceback and the server keeps serving.

Every test runs on uvloop and on plain asyncio (the `loop` fixture).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
from rawhttp import ConnectionClosedError, RawConnection, request

# Rewritten asserts in the shared helpers, which are also loaded as a plugin below.
pytest.register_assert_rewrite("asgi_support")
from asgi_support import (  # noqa: E402
    assert_raw_still_serving,
    get_json,
    logged,
    logged_with_traceback,
    release,
    unique,
    wait_records,
)

#: The shared ASGI fixtures (`loop`, `raw_server`) live in asgi_support.
pytest_plugins = ("asgi_support",)

if TYPE_CHECKING:
    from conftest import Server


def misuse(server: Server, kind: str) -> tuple[int, dict[str, Any]]:
    """The status and the caught exception of /misuse?kind=KIND."""
    with RawConnection.to(server) as connection:
        connection.send(request("GET", f"/misuse?kind={kind}") + request("GET", "/hello"))
        response = connection.read_response()
        # The connection stays in sync after a caught misuse.
        following = connection.read_response()
        assert (following.status, following.body) == (200, b"hello")
    result = json.loads(response.body)
    assert result["kind"] == kind
    assert result["caught"] is not None, f"{kind}: send() raised nothing"
    caught: dict[str, Any] = result["caught"]
    return response.status, caught


# (kind, exception type, words of the message, status of the response that follows)
MISUSES = [
    ("body-before-start", "RuntimeError", "before http.response.start", 200),
    ("start-twice", "RuntimeError", "http.response.start sent twice", 200),
    ("unknown-type", "RuntimeError", "http.response.teapot", 200),
    ("not-a-dict", "TypeError", "dict", 200),
    ("no-type", "TypeError", "'type'", 200),
    ("status-str", "TypeError", "int 'status'", 200),
    ("status-103", "ValueError", "103", 200),
    ("headers-not-pairs", "TypeError", "pair", 200),
    ("headers-single-bytes", "TypeError", "pair", 200),
    ("headers-int-value", "TypeError", "bytes, bytearray or str", 200),
    ("headers-not-iterable", "TypeError", "iterable", 200),
    ("header-crlf", "ValueError", "control character", 200),
    ("header-lf", "ValueError", "control character", 200),
    ("header-name-space", "ValueError", "invalid header name", 200),
    # Not a type error (it is a str): the message must say what is wrong with it.
    ("header-not-latin1", "Exception", "latin-1", 200),
    ("body-str", "TypeError", "must be bytes", 200),
    ("trailers-without-flag", "RuntimeError", "'trailers': True", 200),
    ("pathsend-missing", "OSError", "/nonexistent/peregrine/file", 200),
]


@pytest.mark.parametrize(("kind", "exception", "words", "status"), MISUSES, ids=[m[0] for m in MISUSES])
def test_misuse_raises_in_the_application(
    raw_server: Server, kind: str, exception: str, words: str, status: int
) -> None:
    got_status, caught = misuse(raw_server, kind)
    assert exception in caught["mro"], caught
    assert words in caught["message"], caught
    assert got_status == status


def test_header_injection_never_reaches_the_wire(raw_server: Server) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", "/misuse?kind=header-crlf"))
        response = connection.read_response()
    assert response.header("x-injected") is None
    assert response.header("x-a") is None


def test_start_twice_keeps_the_first_status(raw_server: Server) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", "/misuse?kind=start-twice"))
        response = connection.read_response()
    assert response.status == 200
    assert response.header("Content-Type") == "text/plain"


def test_body_after_the_response_is_complete_raises(raw_server: Server) -> None:
    ident = unique("after-complete")
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", f"/body-after-complete?id={ident}") + request("GET", "/hello"))
        response = connection.read_response()
        assert (response.status, response.body) == (200, b"complete")
        assert connection.read_response().body == b"hello", "the late body reached the wire"
    found = wait_records(raw_server, ident, lambda found: len(found) == 1)
    caught = found[0]["caught"]
    assert caught is not None, "send() after the response was complete raised nothing"
    assert caught["type"] == "RuntimeError"
    assert "after the response was complete" in caught["message"]


@pytest.mark.parametrize(
    ("kind", "words"),
    [
        ("body-before-start", "before http.response.start"),
        ("unknown-type", "http.response.teapot"),
        ("status-str", "int 'status'"),
        ("header-crlf", "control character"),
    ],
)
def test_misuse_left_to_propagate_before_the_head_is_a_500(raw_server: Server, kind: str, words: str) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", f"/misuse-propagate?kind={kind}"))
        response = connection.read_response()
    assert response.status == 500
    assert words.encode() not in response.body, "the exception leaked to the client"
    assert logged_with_traceback(raw_server, words), raw_server.excerpt()
    assert_raw_still_serving(raw_server)


# --- application exceptions -----------------------------------------------------------------------


def test_exception_before_start_is_answered_500_and_logged_with_traceback(raw_server: Server) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", "/raise-before") + request("GET", "/hello"))
        response = connection.read_response()
        assert response.status == 500
        assert b"boom" not in response.body, "the exception leaked to the client"
        # A 500 for an exception before the head keeps the connection usable (or closes it cleanly).
        try:
            following = connection.read_response()
        except ConnectionClosedError:
            following = None
        if following is not None:
            assert following.body == b"hello"
    assert logged_with_traceback(raw_server, "RuntimeError: raise-before: boom before start"), raw_server.excerpt()
    assert_raw_still_serving(raw_server)


def test_many_exceptions_in_a_row(raw_server: Server) -> None:
    for _ in range(30):
        with RawConnection.to(raw_server) as connection:
            connection.send(request("GET", "/raise-before/again"))
            assert connection.read_response().status == 500
    assert_raw_still_serving(raw_server)


def test_exception_after_body_started_aborts_the_chunked_response(raw_server: Server) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", "/raise-after") + request("GET", "/hello"))
        head = connection.read_head()
        assert head.status == 200
        assert (head.header("Transfer-Encoding") or "").lower() == "chunked"
        rest = connection.read_until_close()
    assert rest.startswith(b"7\r\npartial\r\n")
    assert b"0\r\n\r\n" not in rest, "an aborted response was terminated as if complete"
    assert b"HTTP/1.1" not in rest, "the pipelined request was answered on an aborted connection"
    assert logged_with_traceback(raw_server, "RuntimeError: raise-after: boom mid-body"), raw_server.excerpt()
    assert_raw_still_serving(raw_server)


def test_exception_right_after_start_never_completes_the_applications_response(raw_server: Server) -> None:
    """Issue 3 item 5: after http.response.start, an exception means abort (or a 500 if nothing was sent yet)."""
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", "/raise-after-start"))
        head = connection.read_head()
        if head.status == 200:
            rest = connection.read_until_close()
            assert b"0\r\n\r\n" not in rest, "a response was completed after the application raised"
        else:
            assert head.status == 500
    assert logged_with_traceback(raw_server, "RuntimeError: raise-after-start: boom after the head"), (
        raw_server.excerpt()
    )
    assert_raw_still_serving(raw_server)


def test_returning_without_a_response_is_a_500(raw_server: Server) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", "/return-nothing"))
        response = connection.read_response()
    assert response.status == 500
    assert logged(raw_server, "returned without sending a response"), raw_server.excerpt()
    assert_raw_still_serving(raw_server)


def test_returning_with_the_body_unfinished_aborts(raw_server: Server) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("GET", "/return-after-start") + request("GET", "/hello"))
        head = connection.read_head()
        assert head.status == 200
        rest = connection.read_until_close()
    assert rest.startswith(b"a\r\nunfinished\r\n")
    assert b"0\r\n\r\n" not in rest, "an unfinished response was terminated as if complete"
    assert b"HTTP/1.1" not in rest
    assert logged(raw_server, "returned before finishing its response"), raw_server.excerpt()
    assert_raw_still_serving(raw_server)


def test_send_and_receive_of_an_ended_request_touch_nothing(raw_server: Server) -> None:
    """Issue 3 item 5: a receive()/send() kept from an ended request never reaches another request."""
    ident = unique("stale")
    with RawConnection.to(raw_server) as reused:
        reused.send(request("GET", "/leak"))
        assert reused.read_response().body == b"leaked"
        # The same connection now carries another request, paused mid-response.
        reused.send(request("GET", f"/stream?id={ident}"))
        head = reused.read_head()
        assert head.status == 200
        wait_records(raw_server, ident, lambda found: found == ["sent first"])
        result = get_json(raw_server, "/use-leaked")
        assert result["send"] is not None, "a stale send() completed"
        assert result["send"]["type"] == "RuntimeError", result
        if "message" in result["receive"]:
            assert result["receive"]["message"] == "http.disconnect", result
        else:
            assert result["receive"]["type"] == "RuntimeError", result
        release(raw_server, ident)
        body = b""
        while not body.endswith(b"0\r\n\r\n"):
            body += reused.read_line()
        assert body == b"6\r\nfirst;\r\n7\r\nsecond;\r\n5\r\nthird\r\n0\r\n\r\n", "stale send() bytes in the stream"
        reused.send(request("GET", "/hello"))
        response = reused.read_response()
        assert (response.status, response.body) == (200, b"hello")
        assert response.header("x-leaked") is None


def test_receive_while_another_receive_is_pending_raises(raw_server: Server) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("POST", "/double-receive", [("Content-Length", "4")]))
        assert connection.still_open_after(0.3)
        connection.send(b"body")
        response = connection.read_response()
    result = json.loads(response.body)
    assert result["caught"] is not None, "a second concurrent receive() was accepted"
    assert result["caught"]["type"] == "RuntimeError"
    assert "still pending" in result["caught"]["message"]
    assert (result["first"], result["body"]) == ("http.request", "body")
