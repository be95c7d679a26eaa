"""WSGI and ASGI applications over HTTP/2 (h2c by prior knowledge on the HTTP/1.1 port), driven by the `h2` client.

The same request path as HTTP/1.1: these tests check what the applications
see (http_version / SERVER_PROTOCOL, `host` from :authority, joined cookie
crumbs), bodies both ways through flow control (bodies larger than every
window), concurrent streams, trailers, and the --no-http2 / --http2-only
switches. The protocol rules themselves are the conformance suite's
(tests/h2spec).
"""

from __future__ import annotations

import hashlib
import json
import socket
import time
from typing import TYPE_CHECKING

import pytest
from h2client import INITIAL_WINDOW, H2Client

pytest.register_assert_rewrite("asgi_support")
from asgi_support import unique, wait_records  # noqa: E402

if TYPE_CHECKING:
    from pathlib import Path

    from conftest import Server, ServerPool

WSGI = "wsgi_apps:app"
ASGI = "asgi_raw:app"


@pytest.fixture
def asgi(server_pool: ServerPool) -> Server:
    return server_pool.get(ASGI)


@pytest.fixture
def wsgi(server_pool: ServerPool) -> Server:
    return server_pool.get(WSGI)


def test_asgi_hello(asgi: Server) -> None:
    with H2Client(asgi.port) as c:
        r = c.request("GET", "/hello")
    assert r.status == 200
    assert bytes(r.body) == b"hello"
    assert r.header(b"content-length") == b"5"
    assert r.header(b"date") is not None


def test_asgi_scope(asgi: Server) -> None:
    headers = [("cookie", "a=1"), ("x-one", "1"), ("cookie", "b=2"), ("cookie", "c=3")]
    with H2Client(asgi.port) as c:
        r = c.request("GET", "/scope?x=1&y=%20", headers=headers, authority="example.test:8443")
    scope = json.loads(bytes(r.body))
    assert scope["http_version"] == "2"
    assert scope["type"] == "http"
    assert scope["method"] == "GET"
    assert scope["path"] == "/scope"
    assert scope["query_string"] == {"bytes": "x=1&y=%20"}
    pairs = [(p["tuple"][0]["bytes"], p["tuple"][1]["bytes"]) for p in scope["headers"]]
    # :authority arrives as the first header, `host`; no pseudo-header leaks.
    assert pairs[0] == ("host", "example.test:8443")
    assert not any(name.startswith(":") for name, _ in pairs)
    # RFC 9113 §8.2.3: cookie crumbs are joined for the application.
    assert [v for n, v in pairs if n == "cookie"] == ["a=1; b=2; c=3"]
    assert ("x-one", "1") in pairs


def test_asgi_echo_body_larger_than_windows(asgi: Server) -> None:
    body = bytes(range(256)) * 8192  # 2 MiB: several times the stream and connection windows
    with H2Client(asgi.port) as c:
        r = c.request("POST", "/echo", body=body)
    result = json.loads(bytes(r.body))
    assert result["size"] == len(body)
    assert result["sha256"] == hashlib.sha256(body).hexdigest()


def test_asgi_concurrent_streams(asgi: Server) -> None:
    with H2Client(asgi.port) as c:
        sids = [c.send("GET", "/hello") for _ in range(50)]
        responses = c.collect(*sids)
    assert all(r.status == 200 and bytes(r.body) == b"hello" for r in responses)


def test_asgi_trailers(asgi: Server) -> None:
    with H2Client(asgi.port) as c:
        r = c.request("GET", "/trailers", headers=[("te", "trailers")])
    assert bytes(r.body) == b"part one,part two"
    assert dict(r.trailers) == {b"x-checksum": b"abc123", b"x-count": b"2"}


def test_asgi_head(asgi: Server) -> None:
    with H2Client(asgi.port) as c:
        r = c.request("HEAD", "/hello")
    assert r.status == 200
    assert bytes(r.body) == b""
    assert r.header(b"content-length") == b"5"


def test_wsgi_hello_and_environ(wsgi: Server) -> None:
    with H2Client(wsgi.port) as c:
        r = c.request("GET", "/hello")
        assert (r.status, bytes(r.body)) == (200, b"hello")
        env = json.loads(bytes(c.request("GET", "/environ?q=1", authority="example.test").body))
    assert env["SERVER_PROTOCOL"] == ["str", "HTTP/2"]
    assert env["HTTP_HOST"] == ["str", "example.test"]
    assert env["QUERY_STRING"] == ["str", "q=1"]
    assert env["wsgi.url_scheme"] == ["str", "http"]


def test_wsgi_echo_body_larger_than_windows(wsgi: Server) -> None:
    body = hashlib.sha256(b"seed").digest() * 40000  # 1.25 MiB
    with H2Client(wsgi.port) as c:
        r = c.request("POST", "/echo", body=body)
    assert r.status == 200
    assert r.header(b"x-body-length") == str(len(body)).encode()
    assert bytes(r.body) == body


def test_wsgi_streams_are_served_in_turn(wsgi: Server) -> None:
    with H2Client(wsgi.port) as c:
        sids = [c.send("GET", f"/sleep?ms={10 * (i % 3)}") for i in range(10)]
        sids += [c.send("POST", "/echo", body=b"x" * 70000) for _ in range(3)]
        responses = c.collect(*sids, timeout=20)
    assert all(r.status == 200 for r in responses)
    assert all(len(r.body) == 70000 for r in responses[-3:])


@pytest.mark.parametrize(("target", "path"), [(WSGI, "/echo"), (ASGI, "/echo-stream")])
def test_response_waits_for_a_small_client_window(server_pool: ServerPool, target: str, path: str) -> None:
    """The client allows 1 KiB per stream: the whole echoed body still arrives, in order."""
    server = server_pool.get(target)
    body = bytes(range(251)) * 2000  # 502,000 bytes, not a multiple of anything
    with H2Client(server.port, settings={INITIAL_WINDOW: 1024}) as c:
        r = c.request("POST", path, body=body)
    assert r.status == 200
    assert bytes(r.body) == body


def test_no_http2_treats_the_preface_as_http1(start_server: object) -> None:
    server = start_server(WSGI, "--no-http2")  # type: ignore[operator]
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        reply = s.recv(4096)
    assert reply.startswith(b"HTTP/1.1 ")


def test_http2_only_refuses_http1(start_server: object) -> None:
    server = start_server(ASGI, "--http2-only")  # type: ignore[operator]
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as s:
        s.sendall(b"GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
        reply = b"".join(iter(lambda: s.recv(4096), b""))
    # RFC 9113 §3.4: an invalid preface is a connection error, GOAWAY(0, PROTOCOL_ERROR), not a 505
    # (frame by frame in test_http2_preface.py).
    assert not reply.startswith(b"HTTP/")
    assert reply.endswith(b"\x00\x00\x00\x00\x00\x00\x00\x01client connection preface mismatch")
    with H2Client(server.port) as c:
        assert bytes(c.request("GET", "/hello").body) == b"hello"


def test_http1_still_served_beside_h2c(asgi: Server) -> None:
    with socket.create_connection(("127.0.0.1", asgi.port), timeout=5) as s:
        s.sendall(b"PUT /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi")
        reply = s.recv(4096)
    assert reply.startswith(b"HTTP/1.1 200 ")


def test_asgi_pathsend_and_early_hints(asgi: Server, tmp_path: Path) -> None:
    """pathsend over HTTP/2 (read and framed as the windows allow, not sendfile) and 103 before the final head."""
    blob = tmp_path / "blob.bin"
    data = bytes(range(256)) * 5000  # 1.28 MB: several windows
    blob.write_bytes(data)
    with H2Client(asgi.port) as c:
        r = c.request("GET", f"/pathsend?path={blob}")
        assert r.status == 200
        assert bytes(r.body) == data
        hinted = c.request("GET", "/early-hint")
    assert [dict(h)[b":status"] for h in hinted.informational] == [b"103", b"103"]
    links = [v for n, v in hinted.informational[0] if n == b"link"]
    assert links == [b"</style.css>; rel=preload; as=style", b"</app.js>; rel=preload; as=script"]
    assert bytes(hinted.body) == b"final"


def test_asgi_pathsend_then_trailers(asgi: Server, tmp_path: Path) -> None:
    """The trailers' HEADERS frame ends the stream after the file's last DATA frame (RFC 9113 §8.1)."""
    blob = tmp_path / "blob.bin"
    data = bytes(range(256)) * 5000  # several windows: the trailers are sent while the file is pending
    blob.write_bytes(data)
    with H2Client(asgi.port) as c:
        r = c.request("GET", f"/pathsend-trailers?path={blob}")
        assert r.status == 200
        assert bytes(r.body) == data
        assert r.trailers == [(b"x-file-end", b"yes")]
        assert bytes(c.request("GET", "/hello").body) == b"hello"


def test_wsgi_file_wrapper(wsgi: Server, tmp_path: Path) -> None:
    blob = tmp_path / "blob.bin"
    data = hashlib.sha256(b"file").digest() * 20000  # 640 KB
    blob.write_bytes(data)
    with H2Client(wsgi.port) as c:
        r = c.request("GET", f"/file?path={blob}&offset=100")
    assert r.status == 200
    assert bytes(r.body) == data[100:]


@pytest.mark.parametrize("target", [WSGI, ASGI])
def test_client_reset_mid_response_leaves_the_connection_serving(server_pool: ServerPool, target: str) -> None:
    """RST_STREAM from the client while a large response is under way: the other streams and the connection go on."""
    server = server_pool.get(target)
    path = "/echo" if target == WSGI else "/echo-stream"
    with H2Client(server.port, settings={INITIAL_WINDOW: 1024}) as c:
        sid = c.send("POST", path, body=b"z" * 300_000)
        c.read_once()
        c.conn.reset_stream(sid)
        c.flush()
        r = c.request("GET", "/hello")
    assert r.status == 200
    assert bytes(r.body) == b"hello"


@pytest.mark.parametrize("target", [WSGI, ASGI])
def test_body_stalled_mid_stream_gets_408(start_server: object, target: str) -> None:
    """A client that stops sending the body past --request-timeout gets 408; the connection serves on."""
    server = start_server(target, "--request-timeout", "1000")  # type: ignore[operator]
    with H2Client(server.port) as c:
        sid = c.send("POST", "/echo", headers=[("content-length", "100")], body=b"x" * 10, end_stream=False)
        r = c.collect(sid, timeout=10)[0]
        assert r.status == 408
        assert bytes(c.request("GET", "/hello").body) == b"hello"


def test_sigterm_with_an_idle_http2_client(start_server: object) -> None:
    """SIGTERM: the idle client gets GOAWAY(NO_ERROR) with the last stream, and the worker exits without waiting
    for --graceful-timeout (only the brief lingering close for the client to read it)."""
    server = start_server(ASGI, "--graceful-timeout", "20000")  # type: ignore[operator]
    with H2Client(server.port) as c:
        assert c.request("GET", "/hello").status == 200
        started = time.monotonic()
        assert server.stop() == 0
        elapsed = time.monotonic() - started
        c.read_once()
        assert c.terminated is not None
        assert c.terminated.error_code == 0
        assert c.terminated.last_stream_id == 1
    assert elapsed < 8, f"took {elapsed:.1f}s to stop"


@pytest.mark.parametrize("code", [101, 103, 199])
def test_asgi_final_status_without_meaning_in_http2_is_a_500(asgi: Server, code: int) -> None:
    """HTTP/2 has no 101 and no final 1xx (RFC 9113 §8.1.1): the client gets a 500, the worker serves on."""
    with H2Client(asgi.port) as c:
        r = c.request("GET", f"/status?code={code}")
        assert r.status == 500
        assert bytes(c.request("GET", "/hello").body) == b"hello"


@pytest.mark.parametrize("code", ["101", "199"])
def test_wsgi_final_status_without_meaning_in_http2_is_a_500(wsgi: Server, code: str) -> None:
    with H2Client(wsgi.port) as c:
        r = c.request("GET", f"/status/{code}")
        assert r.status == 500
        assert bytes(c.request("GET", "/hello").body) == b"hello"


# --- the response held to its declared Content-Length (the exchange, as over HTTP/1.1) ---------


@pytest.mark.parametrize(("target", "path"), [(WSGI, "/cl-excess"), (ASGI, "/content-length-excess")])
def test_body_past_declared_length_is_cut_to_it(server_pool: ServerPool, target: str, path: str) -> None:
    # RFC 9113 §8.1.1: DATA past content-length would make the response malformed.
    server = server_pool.get(target)
    with H2Client(server.port) as c:
        response = c.request("GET", path)
        following = c.request("GET", "/hello")
    declared = int(response.header(b"content-length") or b"-1")
    assert response.reset_code is None
    assert len(response.body) == declared
    assert following.status == 200


@pytest.mark.parametrize(("target", "path"), [(WSGI, "/cl-short"), (ASGI, "/content-length-short")])
def test_body_short_of_declared_length_resets_the_stream(server_pool: ServerPool, target: str, path: str) -> None:
    # A response that cannot be completed is cut off (RST_STREAM), never ended as if it were whole.
    server = server_pool.get(target)
    with H2Client(server.port) as c:
        response = c.request("GET", path)
        following = c.request("GET", "/hello")
    assert response.reset_code is not None
    assert len(response.body) < int(response.header(b"content-length") or b"0")
    assert following.status == 200


# --- Expect: 100-continue (RFC 9110 §10.1.1) -----------------------------------------------------


@pytest.mark.parametrize("target", [WSGI, ASGI])
def test_expect_continue_is_answered_when_the_application_reads_the_body(server_pool: ServerPool, target: str) -> None:
    # The client holds its body back until the interim 100 arrives, as an HTTP/1.1 client may.
    server = server_pool.get(target)
    with H2Client(server.port) as c:
        sid = c.send("POST", "/echo", headers=[("expect", "100-continue"), ("content-length", "5")], end_stream=False)
        deadline = time.monotonic() + 5
        while not c.responses[sid].informational:
            assert time.monotonic() < deadline, "no 100 (Continue) within 5 s"
            assert c.read_once()
        assert dict(c.responses[sid].informational[0])[b":status"] == b"100"
        assert not c.responses[sid].headers  # no final response yet
        c.send_body(sid, b"hello")
        response = c.collect(sid)[0]
    assert response.status == 200
    body = bytes(response.body)
    # The WSGI echo returns the body; the ASGI one describes it.
    assert body == b"hello" if target == WSGI else json.loads(body)["head"] == b"hello".hex()


@pytest.mark.parametrize("target", [WSGI, ASGI])
def test_expect_continue_is_not_answered_when_the_application_does_not_read(
    server_pool: ServerPool, target: str
) -> None:
    # On demand, not on arrival: an application that answers without reading never invites the upload.
    server = server_pool.get(target)
    with H2Client(server.port) as c:
        sid = c.send("POST", "/hello", headers=[("expect", "100-continue"), ("content-length", "5")], end_stream=False)
        response = c.collect(sid)[0]
    assert response.informational == []
    assert response.status == 200


# --- a receive() cancelled after its message was ready (ASGI: no message is lost) -----------------


@pytest.mark.parametrize("options", [(), ("--no-uvloop",)], ids=["uvloop", "asyncio"])
def test_asgi_body_of_a_receive_cancelled_once_it_was_ready_goes_to_the_next_receive(
    server_pool: ServerPool, options: tuple[str, ...]
) -> None:
    """The asyncio.timeout()/wait_for (3.12+) and anyio race, made certain (tests/apps/receive_race.py).

    The receive() waiting for the DATA is cancelled after the server completed its future but before
    it resumed: the body must reach the next receive(), not vanish with the cancelled one."""
    server = server_pool.get(ASGI, *options)
    ident = unique("h2-receive-race")
    with H2Client(server.port) as c:
        sid = c.send("POST", f"/receive-race?id={ident}", headers=[("content-length", "10")], end_stream=False)
        wait_records(server, ident, lambda found: found == ["waiting"])
        c.send_body(sid, b"0123456789")
        response = c.collect(sid)[0]
    assert response.status == 200, bytes(response.body)[:300]
    result = json.loads(bytes(response.body))
    assert "error" not in result, result
    assert result["cancelled"] is True, f"the race was not hit: {result}"
    assert result["body"] == "0123456789", f"the message of the cancelled receive() was lost: {result}"
