"""Ordinary HTTP/2 exchanges (h2spec's "generic" group; RFC 9113 §8, §5.2 flow control, §5.1.2 concurrency):
requests and bodies both ways, concurrent streams, large responses under a small window, HEAD, trailers, cookies,
:authority and what the application is told about the request."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest
from hyperframe.frame import DataFrame

pytest.register_assert_rewrite("h2wire", "h2support")
from h2wire import (  # noqa: E402
    F,
    FrameConn,
    H2Client,
    S,
    T,
    encode,
    request_headers,
)

# isort: split
# h2support (imported by h2wire) puts tests/apps on sys.path.
from h2_apps import TRAILER, pattern  # noqa: E402

pytest_plugins = ("h2support",)
pytestmark = pytest.mark.timeout(60)

if TYPE_CHECKING:
    from h2support import Target


def report(client: H2Client, extra: list[tuple[str, str]] | None = None, path: str = "/headers") -> dict[str, object]:
    """What /headers reports for a GET with `extra` fields."""
    response = client.request("GET", path, extra or [])
    assert response.status == 200, response
    result: dict[str, object] = json.loads(bytes(response.body))
    return result


def header_values(seen: dict[str, object], name: str) -> list[str]:
    """Values of header `name` in a /headers report."""
    pairs = seen["headers"]
    assert isinstance(pairs, list)
    return [value for key, value in pairs if key == name]


def test_get(target: Target) -> None:
    """RFC 9113 §8.1: a GET is answered with its status, fields and body."""
    with H2Client(target) as client:
        response = client.request("GET", "/hello")
    assert (response.status, bytes(response.body)) == (200, b"hello")
    assert response.header("content-type") == "text/plain"
    assert response.header("content-length") in (None, "5")


def test_post_body_is_echoed(target: Target) -> None:
    """RFC 9113 §8.1: a POST body in DATA frames reaches the application whole."""
    with H2Client(target) as client:
        response = client.request("POST", "/echo", body=b"hello, body")
    assert bytes(response.body) == b"hello, body"
    assert response.header("x-body-length") == "11"


def test_large_post_body_under_the_servers_flow_control(target: Target) -> None:
    """RFC 9113 §5.2, §6.9: a 1 MiB upload needs the server to open its receive windows (WINDOW_UPDATE)."""
    body = pattern(1 << 20)
    with H2Client(target) as client:
        response = client.request("POST", "/echo", body=body)
    assert response.status == 200
    assert bytes(response.body) == body


def test_body_in_many_small_data_frames(target: Target) -> None:
    """RFC 9113 §6.1: a body split into many DATA frames, some empty, arrives in order."""
    with FrameConn.open(target) as conn:
        stream_id = conn.request("/echo", "POST", end_stream=False)
        for index in range(50):
            conn.data(stream_id, b"%02d" % index)
            if index % 10 == 0:
                conn.data(stream_id, b"")
        conn.data(stream_id, b"", end_stream=True)
        response = conn.response(stream_id)
    assert response.body == b"".join(b"%02d" % i for i in range(50))


def test_concurrent_streams_with_interleaved_bodies(target: Target) -> None:
    """RFC 9113 §5: ten streams open at once, their DATA frames interleaved, each answered with its own body."""
    with FrameConn.open(target) as conn:
        streams = [conn.request("/echo", "POST", end_stream=False) for _ in range(10)]
        for part in range(3):
            for stream_id in streams:
                conn.data(stream_id, f"s{stream_id}p{part};".encode(), end_stream=part == 2)
        for stream_id in streams:
            expected = "".join(f"s{stream_id}p{part};" for part in range(3)).encode()
            assert conn.response(stream_id).body == expected


def test_concurrent_large_responses(target: Target) -> None:
    """RFC 9113 §5, §6.9: twenty concurrent 100 kB responses share the connection window and all complete."""
    with H2Client(target) as client:
        streams = [client.start("GET", f"/large?size=100000&chunk={1000 + i}") for i in range(20)]
        responses = client.wait(*streams)
    for response in responses:
        assert response.status == 200
        assert bytes(response.body) == pattern(100000)


def test_large_response_respects_a_small_client_window(target: Target) -> None:
    """RFC 9113 §6.9: with a 4 KiB initial window and updates only as data is consumed, a 1 MiB response arrives
    whole, never more than the window ahead."""
    window = 4096
    with FrameConn.open(target, [(S.INITIAL_WINDOW_SIZE, window)]) as conn:
        conn.auto_window = False
        stream_id = conn.request("/large?size=1048576")
        consumed = 0
        state = conn.stream_state(stream_id)
        while not state.ended:
            got = conn.read()
            assert got is not None, f"the response stalled at {len(state.data)} octets; {conn.log()}"
            if isinstance(got.frame, DataFrame) and got.stream_id == stream_id:
                assert len(state.data) - consumed <= window, "the server sent beyond the stream window"
                consumed = len(state.data)
                size = got.frame.flow_controlled_length
                if size:
                    conn.window_update(0, size)
                    if not state.ended:
                        conn.window_update(stream_id, size)
        assert bytes(state.data) == pattern(1048576)


def test_head_has_no_body(target: Target) -> None:
    """RFC 9113 §8.1, RFC 9110 §9.3.2: a HEAD response ends with its HEADERS (or empty DATA); no content."""
    with FrameConn.open(target) as conn:
        response = conn.response(conn.request("/hello", "HEAD"))
    assert response.status == 200
    assert response.body == b""
    assert response.header("content-length") in (None, "5")


def test_no_content_status_has_no_body(target: Target) -> None:
    """RFC 9113 §8.1.1, RFC 9110 §15.3.5: a 204 response carries no content."""
    with FrameConn.open(target) as conn:
        response = conn.response(conn.request("/status?code=204"))
    assert (response.status, response.body) == (204, b"")


def test_request_trailers_with_the_h2_client(target: Target) -> None:
    """RFC 9113 §8.1: a request body followed by trailers is delivered; the response completes."""
    with H2Client(target) as client:
        response = client.request(
            "POST", "/echo", [("te", "trailers")], body=b"body then trailers", trailers=[("x-sum", "42")]
        )
    assert bytes(response.body) == b"body then trailers"


def test_response_trailers(asgi_target: Target) -> None:
    """RFC 9113 §8.1 (ASGI http.response.trailers): trailers end the response in a final HEADERS with END_STREAM."""
    with FrameConn.open(asgi_target) as conn:
        response = conn.response(conn.request("/trailers", extra=[("te", "trailers")]))
        last = conn.streams[1].blocks[-1]
    assert response.body == b"trailers"
    assert response.trailers == [(TRAILER[0].decode(), TRAILER[1].decode())], response
    assert not any(name.startswith(b":") for name, _ in last), "pseudo-header fields in trailers"


def test_cookie_crumbs_are_joined_for_the_application(target: Target) -> None:
    """RFC 9113 §8.2.3: cookie crumbs sent as separate fields are joined with "; " into one header."""
    with FrameConn.open(target) as conn:
        extra = [("cookie", "a=1"), ("x-between", "yes"), ("cookie", "b=2"), ("cookie", "c=3")]
        conn.headers(1, request_headers(target, "/headers", extra=extra))
        seen = json.loads(conn.response(1).body)
    assert header_values(seen, "cookie") == ["a=1; b=2; c=3"], seen["headers"]


def test_authority_becomes_the_host(target: Target) -> None:
    """RFC 9113 §8.3.1: :authority is the request's host; the application sees exactly one host."""
    with H2Client(target) as client:
        seen = report(client)
    assert header_values(seen, "host") == [target.authority], seen["headers"]


def test_host_field_without_authority(target: Target) -> None:
    """RFC 9113 §8.3.1: a request may carry Host instead of :authority; the application sees it."""
    with FrameConn.open(target) as conn:
        fields = [pair for pair in request_headers(target, "/headers") if pair[0] != ":authority"]
        conn.headers(1, [*fields, ("host", "example.org:8080")])
        seen = json.loads(conn.response(1).body)
    assert header_values(seen, "host") == ["example.org:8080"], seen["headers"]


def test_authority_and_equal_host_give_one_host(target: Target) -> None:
    """RFC 9113 §8.3.1: with both :authority and the same Host, the application still sees one host."""
    with FrameConn.open(target) as conn:
        conn.headers(1, request_headers(target, "/headers", extra=[("host", target.authority)]))
        seen = json.loads(conn.response(1).body)
    assert header_values(seen, "host") == [target.authority], seen["headers"]


def test_request_line_parts_reach_the_application(target: Target) -> None:
    """RFC 9113 §8.3.1: :method, :path (with its query) and :scheme make the request the application sees; the
    protocol is HTTP/2 (ASGI http_version "2", WSGI SERVER_PROTOCOL "HTTP/2")."""
    with H2Client(target) as client:
        seen = report(client, [("x-custom", "value")], "/headers/sub%20dir?q=1&r=two")
    assert seen["method"] == "GET"
    assert seen["path"] == "/headers/sub dir"
    assert seen["query"] == "q=1&r=two"
    assert seen["scheme"] == target.scheme
    assert seen["http_version"] in ("2", "HTTP/2", "HTTP/2.0"), seen["http_version"]
    assert header_values(seen, "x-custom") == ["value"]


def test_application_error_is_a_500(target: Target) -> None:
    """RFC 9113 §8.1: an application that fails before responding gets the client a 500; the connection lives on."""
    with FrameConn.open(target) as conn:
        response = conn.response(conn.request("/boom"))
        assert response.status == 500
        assert conn.response(conn.request("/hello")).body == b"hello"


def test_many_requests_on_one_connection(target: Target) -> None:
    """RFC 9113 §5.1.1: one connection serves a long run of streams (identifiers 1, 3, ... 399)."""
    with FrameConn.open(target) as conn:
        for _ in range(200):
            assert conn.response(conn.request("/hello")).body == b"hello"


def test_end_stream_on_headers_with_empty_block_continuations(target: Target) -> None:
    """RFC 9113 §6.2, §6.10: HEADERS(END_STREAM) + CONTINUATION(END_HEADERS) is a complete GET."""
    with FrameConn.open(target) as conn:
        block = encode(request_headers(target, "/hello"))
        conn.send_frame(T.HEADERS, F.END_STREAM, 1, block)
        conn.continuation(1, b"")
        assert conn.response(1).body == b"hello"
