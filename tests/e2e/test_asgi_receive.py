"""ASGI receive(): http.request messages as the body arrives, flow control, http.disconnect (issue 3 item 3).

Every test runs on uvloop and on plain asyncio (the `loop` fixture).
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import TYPE_CHECKING, Any

import pytest
from rawhttp import RawConnection, chunked, request

# Rewritten asserts in the shared helpers, which are also loaded as a plugin below.
pytest.register_assert_rewrite("asgi_support")
from asgi_support import (  # noqa: E402
    BackgroundSender,
    assert_raw_still_serving,
    records,
    release,
    rss_kib,
    unique,
    wait_records,
)

#: The shared ASGI fixtures (`loop`, `raw_server`) live in asgi_support.
pytest_plugins = ("asgi_support",)

if TYPE_CHECKING:
    from conftest import Server


def echo(server: Server, data: bytes) -> dict[str, Any]:
    """Send `data` (a request to /echo) and return what the application read."""
    with RawConnection.to(server) as connection:
        connection.send(data)
        response = connection.read_response()
    assert response.status == 200, response.body[:500]
    result: dict[str, Any] = json.loads(response.body)
    return result


def assert_well_formed(messages: list[dict[str, Any]]) -> None:
    """http.request messages: more_body on all but the last, which ends the body."""
    assert messages, "no http.request message"
    assert all(message["type"] == "http.request" for message in messages), messages
    assert all(message["more_body"] for message in messages[:-1]), messages
    assert messages[-1]["more_body"] is False, messages


def test_request_without_body_gives_one_empty_final_message(raw_server: Server) -> None:
    result = echo(raw_server, request("GET", "/echo/none"))
    assert result["size"] == 0
    assert result["messages"] == [{"type": "http.request", "size": 0, "more_body": False}]


def test_small_body_with_content_length(raw_server: Server) -> None:
    result = echo(raw_server, request("POST", "/echo/small", body=b"hello asgi"))
    assert result["size"] == 10
    assert bytes.fromhex(result["head"]) == b"hello asgi"
    assert_well_formed(result["messages"])


def test_content_length_zero(raw_server: Server) -> None:
    result = echo(raw_server, request("POST", "/echo/zero", [("Content-Length", "0")]))
    assert result["size"] == 0
    assert_well_formed(result["messages"])


def test_large_body_arrives_in_several_messages(raw_server: Server) -> None:
    body = hashlib.sha256(b"large").digest() * (4 * 1024 * 1024 // 32)
    result = echo(raw_server, request("POST", "/echo/large", body=body))
    assert (result["size"], result["sha256"]) == (len(body), hashlib.sha256(body).hexdigest())
    assert_well_formed(result["messages"])
    assert len(result["messages"]) > 1, "4 MiB were delivered in one message: the body was buffered whole"


def test_chunked_upload_with_trailers(raw_server: Server) -> None:
    pieces = [b"first piece,", b"x" * 70000, b"", b"last"]
    body = chunked(*pieces, trailers=[("X-Trailer", "t")])
    data = request("POST", "/echo/chunked", [("Transfer-Encoding", "chunked")]) + body
    result = echo(raw_server, data)
    joined = b"".join(pieces)
    assert (result["size"], result["sha256"]) == (len(joined), hashlib.sha256(joined).hexdigest())
    assert_well_formed(result["messages"])


def test_empty_chunked_upload(raw_server: Server) -> None:
    result = echo(raw_server, request("POST", "/echo/empty-chunked", [("Transfer-Encoding", "chunked")]) + b"0\r\n\r\n")
    assert result["size"] == 0
    assert_well_formed(result["messages"])


def test_pipelined_uploads_on_one_connection_stay_separate(raw_server: Server) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(
            request("POST", "/echo/p1", body=b"one")
            + request("POST", "/echo/p2", [("Transfer-Encoding", "chunked")])
            + chunked(b"tw", b"o")
            + request("POST", "/echo/p3", body=b"three")
        )
        sizes = [json.loads(connection.read_response().body)["size"] for _ in range(3)]
    assert sizes == [3, 3, 5]


def test_body_streams_both_ways(raw_server: Server) -> None:
    """The first part of the upload reaches the app, and its echo the client, before the rest is sent."""
    with RawConnection.to(raw_server) as connection:
        connection.send(request("POST", "/echo-stream/both", [("Content-Length", "20")]) + b"0123456789")
        head = connection.read_head()
        assert head.status == 200
        assert (head.header("Transfer-Encoding") or "").lower() == "chunked"
        assert connection.read_line() == b"a\r\n"
        assert connection.read_exactly(12) == b"0123456789\r\n"
        connection.send(b"abcdefghij")
        assert connection.read_line() == b"a\r\n"
        assert connection.read_exactly(12) == b"abcdefghij\r\n"
        assert connection.read_line() == b"0\r\n"
        assert connection.read_line() == b"\r\n"
        # The connection is still usable.
        connection.send(request("GET", "/hello"))
        assert connection.read_response().body == b"hello"


def test_chunked_upload_streams_to_the_application(raw_server: Server) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("POST", "/echo-stream/chunked", [("Transfer-Encoding", "chunked")]) + b"5\r\nfirst\r\n")
        connection.read_head()
        assert connection.read_line() == b"5\r\n"
        assert connection.read_exactly(7) == b"first\r\n"
        connection.send(b"6\r\nsecond\r\n0\r\n\r\n")
        assert connection.read_line() == b"6\r\n"
        assert connection.read_exactly(8) == b"second\r\n"
        assert connection.read_line() == b"0\r\n"


# --- Expect: 100-continue -------------------------------------------------------------------------


def test_100_continue_is_sent_on_the_first_receive_only(raw_server: Server) -> None:
    ident = unique("expect")
    with RawConnection.to(raw_server) as connection:
        connection.send(request("POST", f"/expect?id={ident}", [("Content-Length", "5"), ("Expect", "100-continue")]))
        wait_records(raw_server, ident, lambda found: found == ["waiting"])
        assert connection.still_open_after(0.5), "100 Continue sent before the application called receive()"
        release(raw_server, ident)
        interim = connection.read_head()
        assert interim.status == 100
        connection.send(b"abcde")
        response = connection.read_response(skip_informational=False)
        assert (response.status, response.body) == (200, b"got 5")


def test_100_continue_with_a_chunked_upload(raw_server: Server) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(
            request("POST", "/expect/chunked", [("Transfer-Encoding", "chunked"), ("Expect", "100-continue")])
        )
        assert connection.read_head().status == 100
        connection.send(chunked(b"abc", b"defg"))
        response = connection.read_response(skip_informational=False)
        assert (response.status, response.body) == (200, b"got 7")


def test_no_100_continue_when_the_application_never_receives(raw_server: Server) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("POST", "/no-read/expect", [("Content-Length", "5000"), ("Expect", "100-continue")]))
        head = connection.read_head()
        assert head.status == 200, "a 100 Continue was sent although the application never called receive()"
        assert connection.read_exactly(int(head.header("Content-Length") or "0")) == b"did not read"
        if not connection.closed_by_server(timeout=1.0):
            connection.send(b"z" * 5000 + request("GET", "/hello"))
            assert connection.read_response().body == b"hello"
    assert_raw_still_serving(raw_server)


def test_unread_body_does_not_desynchronise_the_connection(raw_server: Server) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("POST", "/no-read/unread", body=b"q" * 100_000) + request("GET", "/hello"))
        assert connection.read_response().body == b"did not read"
        # Either the unread body is discarded and the next request answered, or the connection closed.
        try:
            following = connection.read_response()
        except Exception:  # noqa: BLE001 (closed: also correct)
            following = None
        if following is not None:
            assert (following.status, following.body) == (200, b"hello")
    assert_raw_still_serving(raw_server)


# --- flow control ---------------------------------------------------------------------------------


@pytest.mark.timeout(60)
def test_body_is_read_from_the_socket_only_as_the_application_asks(raw_server: Server) -> None:
    size = 50 * 1024 * 1024
    block = b"\x5a" * 65536
    expected = hashlib.sha256(b"\x5a" * size).hexdigest()
    ident = unique("slow-reader")
    assert_raw_still_serving(raw_server)
    baseline_kib = rss_kib(raw_server)
    with RawConnection.to(raw_server, timeout=30) as connection:
        connection.send(request("POST", f"/read-slowly?id={ident}", [("Content-Length", str(size))]))
        sender = BackgroundSender(connection.sock, size, block).start()
        wait_records(raw_server, ident, lambda found: len(found) == 1)
        stalled = sender.stalled_at(quiet=0.5)
        grown_mib = (rss_kib(raw_server) - baseline_kib) / 1024
        assert stalled < 16 * 1024 * 1024, f"the server took {stalled} bytes while the application read one message"
        assert grown_mib < 16, f"server RSS grew by {grown_mib:.1f} MiB while the application did not read"
        release(raw_server, ident)
        assert sender.join(30), "the upload did not finish once the application read again"
        assert sender.error is None, sender.error
        response = connection.read_response()
    assert response.status == 200, response.body[:300]
    result = json.loads(response.body)
    assert (result["size"], result["sha256"]) == (size, expected)
    assert 0 < result["largest"] <= 1024 * 1024, f"one http.request message carried {result['largest']} bytes"
    grown_mib = (rss_kib(raw_server) - baseline_kib) / 1024
    assert grown_mib < 16, f"server RSS grew by {grown_mib:.1f} MiB after a 50 MiB upload"


# --- http.disconnect ------------------------------------------------------------------------------


def test_disconnect_mid_body_is_received(raw_server: Server) -> None:
    ident = unique("mid-body")
    connection = RawConnection.to(raw_server)
    connection.send(request("POST", f"/disconnect-wait?id={ident}", [("Content-Length", "1000")]) + b"y" * 100)
    time.sleep(0.2)
    connection.close()
    found = wait_records(raw_server, ident, lambda found: len(found) >= 1)
    assert found == [{"type": "http.disconnect", "received": 100}]
    assert_raw_still_serving(raw_server)


def test_disconnect_after_the_body_while_the_application_waits(raw_server: Server) -> None:
    ident = unique("after-body")
    connection = RawConnection.to(raw_server)
    connection.send(request("POST", f"/disconnect-wait?id={ident}", body=b"full body"))
    wait_records(raw_server, ident, lambda found: found == [{"body-complete": 9}])
    connection.close()
    found = wait_records(raw_server, ident, lambda found: len(found) >= 2)
    assert found == [{"body-complete": 9}, {"type": "http.disconnect", "received": 9}]
    assert_raw_still_serving(raw_server)


def test_disconnect_of_a_get_without_body(raw_server: Server) -> None:
    ident = unique("get-wait")
    connection = RawConnection.to(raw_server)
    connection.send(request("GET", f"/disconnect-wait?id={ident}"))
    wait_records(raw_server, ident, lambda found: found == [{"body-complete": 0}])
    connection.close()
    found = wait_records(raw_server, ident, lambda found: len(found) >= 2)
    assert found[1] == {"type": "http.disconnect", "received": 0}


def test_receive_after_the_response_is_complete_is_disconnect(raw_server: Server) -> None:
    ident = unique("receive-after")
    with RawConnection.to(raw_server) as connection:
        connection.send(request("POST", f"/receive-after?id={ident}", body=b"abc"))
        assert connection.read_response().body == b"done"
        found = wait_records(raw_server, ident, lambda found: len(found) >= 2)
        assert found == [{"type": "http.disconnect"}, {"type": "http.disconnect"}]
        # The connection itself goes on serving.
        connection.send(request("GET", "/hello"))
        assert connection.read_response().body == b"hello"
    assert records(raw_server, ident) == found


# --- cancelled receive() --------------------------------------------------------------------------


def test_a_cancelled_receive_does_not_block_the_next_one(raw_server: Server) -> None:
    """Cancelling a waiting receive() (anyio cancel scopes, task groups) must leave receive() usable."""
    with RawConnection.to(raw_server) as connection:
        connection.send(request("POST", "/receive-cancelled", [("Content-Length", "4")]))
        time.sleep(0.3)
        connection.send(b"body")
        response = connection.read_response()
    result = json.loads(response.body)
    assert result["done_before_cancel"] is False
    assert result["cancelled"] is True
    assert "error" not in result, f"receive() after a cancelled receive() raised {result['error']}"
    assert result["body"] == "body"


def test_receive_polled_with_wait_for_timeouts(raw_server: Server) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("POST", "/receive-timeout", [("Content-Length", "10")]))
        time.sleep(0.3)
        connection.send(b"01234")
        time.sleep(0.2)
        connection.send(b"56789")
        response = connection.read_response()
    result = json.loads(response.body)
    assert "error" not in result, f"receive() after a timed-out receive() raised {result['error']}"
    assert result["body"] == "0123456789"
    assert result["timeouts"] >= 2


def test_receive_polled_in_anyio_cancel_scopes(raw_server: Server) -> None:
    with RawConnection.to(raw_server) as connection:
        connection.send(request("POST", "/receive-move-on-after", [("Content-Length", "10")]))
        time.sleep(0.3)
        connection.send(b"01234")
        time.sleep(0.2)
        connection.send(b"56789")
        response = connection.read_response()
    result = json.loads(response.body)
    assert "error" not in result, f"receive() after a cancelled receive() raised {result['error']}"
    assert result["body"] == "0123456789"
    assert result["timeouts"] >= 2


# --- a receive() cancelled after its message was ready (ASGI: no message is lost) -----------------


def test_body_of_a_receive_cancelled_once_it_was_ready_goes_to_the_next_receive(raw_server: Server) -> None:
    """The asyncio.timeout()/wait_for (3.12+) and anyio race, made certain (tests/apps/receive_race.py).

    The receive() waiting for the body is cancelled after the server completed its future but before
    it resumed: the body must reach the next receive(), not vanish with the cancelled one."""
    ident = unique("receive-race")
    with RawConnection.to(raw_server) as connection:
        connection.send(request("POST", f"/receive-race?id={ident}", [("Content-Length", "10")]))
        wait_records(raw_server, ident, lambda found: found == ["waiting"])
        connection.send(b"0123456789")
        response = connection.read_response()
    result = json.loads(response.body)
    assert "error" not in result, result
    assert result["cancelled"] is True, f"the race was not hit: {result}"
    assert result["body"] == "0123456789", f"the message of the cancelled receive() was lost: {result}"
    assert_well_formed(result["messages"])


def test_disconnect_of_a_receive_cancelled_once_it_was_ready_goes_to_the_next_receive(raw_server: Server) -> None:
    ident = unique("receive-race-disconnect")
    connection = RawConnection.to(raw_server)
    connection.send(request("POST", f"/receive-race-disconnect?id={ident}", body=b"full body"))
    wait_records(raw_server, ident, lambda found: found == ["waiting"])
    connection.close()
    found = wait_records(raw_server, ident, lambda found: len(found) >= 2)
    assert found[1] == {"cancelled": True, "next": "http.disconnect"}
    assert_raw_still_serving(raw_server)
