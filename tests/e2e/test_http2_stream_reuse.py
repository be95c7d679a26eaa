"""HTTP/2 stream objects are reused within a connection (Sources/Server/H2Session+StreamPool.swift).

An ended stream's object is reset and serves a later stream of the same
connection. RFC 9113 §5.1: every stream starts idle, on its own; nothing of
an earlier stream — its body, its reset, its HEAD method, its headers, its
cut-short response — may show in a later one. Each test ends streams in
those ways, over and over on one connection (so every pooled object is
reused many times), and checks the streams that follow are served whole.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

import pytest
from h2client import H2Client

if TYPE_CHECKING:
    from collections.abc import Callable

    from conftest import Server, ServerPool

WSGI = "wsgi_apps:app"
ASGI = "asgi_raw:app"
ROUNDS = 20


def _echoed(target: str, body: bytes, response_body: bytes) -> bool:
    """Whether the echo endpoint saw exactly `body` (WSGI echoes it; ASGI's reports size and digest)."""
    if target == WSGI:
        return response_body == body
    result = json.loads(response_body)
    return bool(result["size"] == len(body) and result["sha256"] == hashlib.sha256(body).hexdigest())


@pytest.mark.parametrize("target", [WSGI, ASGI])
def test_streams_after_reset_head_and_cut_short_ones_carry_nothing_of_them(
    server_pool: ServerPool, target: str
) -> None:
    server = server_pool.get(target)
    short = "/cl-short" if target == WSGI else "/content-length-short"
    with H2Client(server.port) as c:
        for i in range(ROUNDS):
            # A body half sent, then the client's RST_STREAM: its bytes stay with that stream.
            abandoned = c.send("POST", "/echo", body=b"a" * (1000 + i), end_stream=False)
            c.conn.reset_stream(abandoned)
            c.flush()
            head = c.request("HEAD", "/hello")
            assert (head.status, bytes(head.body), head.header(b"content-length")) == (200, b"", b"5")
            cut = c.request("GET", short)
            assert cut.reset_code is not None
            body = bytes([i]) * (300 + i)
            echoed = c.request("POST", "/echo", body=body)
            assert echoed.status == 200
            assert _echoed(target, body, bytes(echoed.body)), f"round {i}: another stream's body showed"
            # After a HEAD: a GET gets its body (the method is not carried over).
            hello = c.request("GET", "/hello")
            assert (hello.status, bytes(hello.body)) == (200, b"hello"), f"round {i}"


def test_asgi_scope_of_a_reused_stream_has_only_its_own_headers(server_pool: ServerPool) -> None:
    server = server_pool.get(ASGI)
    with H2Client(server.port) as c:
        for i in range(ROUNDS):
            many = [("cookie", "a=1"), ("x-secret", "s" * (100 + i)), ("cookie", "b=2")]
            first = json.loads(bytes(c.request("GET", f"/scope?round={i}", headers=many).body))
            pairs = [(p["tuple"][0]["bytes"], p["tuple"][1]["bytes"]) for p in first["headers"]]
            assert ("cookie", "a=1; b=2") in pairs
            scope = json.loads(bytes(c.request("GET", "/scope", authority="other.test").body))
            pairs = [(p["tuple"][0]["bytes"], p["tuple"][1]["bytes"]) for p in scope["headers"]]
            assert pairs == [("host", "other.test")], f"round {i}: {pairs}"
            assert scope["query_string"] == {"bytes": ""}


def test_wsgi_environ_of_a_reused_stream_has_only_its_own_headers(server_pool: ServerPool) -> None:
    server = server_pool.get(WSGI)
    with H2Client(server.port) as c:
        for i in range(ROUNDS):
            first = json.loads(bytes(c.request("GET", f"/environ?round={i}", headers=[("x-secret", "s" * i)]).body))
            assert first["QUERY_STRING"] == ["str", f"round={i}"]
            env = json.loads(bytes(c.request("GET", "/environ", authority="other.test").body))
            assert "HTTP_X_SECRET" not in env, f"round {i}"
            assert env["HTTP_HOST"] == ["str", "other.test"]
            assert env["QUERY_STRING"] == ["str", ""]


def test_a_kept_send_never_reaches_the_stream_that_reuses_its_object(start_server: Callable[..., Server]) -> None:
    """An ASGI application keeps `send` and `receive` past its request's end; the stream object is reused at once.

    The kept callables are bound to the finished request, which let go of
    its stream when the exchange ended: using them again raises (the
    response is complete) and reads `http.disconnect`, and the stream that
    now uses the object is answered by its own application call.
    """
    server = start_server("alloc_apps:asgi_keeper", "--workers", "1")
    with H2Client(server.port) as c:
        assert bytes(c.request("GET", "/keep").body) == b"Hello, world!"
        for _ in range(50):
            assert bytes(c.request("GET", "/hello").body) == b"Hello, world!"
        old = c.request("GET", "/old")
    assert (old.status, bytes(old.body)) == (200, b"RuntimeError http.disconnect")
