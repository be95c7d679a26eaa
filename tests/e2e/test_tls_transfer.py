"""Bodies over TLS, byte-exact (TRANSPORT.md "TLS"): big uploads and downloads, files, keep-alive and pipelining.

Downloads come from a generator and from a file (WSGI wsgi.file_wrapper,
ASGI http.response.pathsend: the server's pread + SSL_write path).
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import TYPE_CHECKING

import pytest
from rawhttp import RawConnection
from tls_support import TLSFiles, client_context, exchange, pattern, tls_connect

if TYPE_CHECKING:
    from collections.abc import Callable

    from conftest import Server

pytest_plugins = ("tls_support",)

TARGETS = ["tls_apps:wsgi", "tls_apps:asgi"]
BIG = 5 * 1024 * 1024 + 123


@pytest.mark.parametrize("target", TARGETS)
def test_big_upload(tls_server: Callable[..., Server], tls_files: TLSFiles, target: str) -> None:
    server = tls_server(target, "--max-body", "64m")
    body = os.urandom(BIG)
    sock = tls_connect(server, client_context(tls_files))
    response = exchange(sock, "POST", "/echo", body)
    sock.close()
    assert response.status == 200
    assert json.loads(response.body) == {"length": BIG, "sha256": hashlib.sha256(body).hexdigest()}  # type: ignore[attr-defined]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("route", ["big", "file"])
def test_big_download(tls_server: Callable[..., Server], tls_files: TLSFiles, target: str, route: str) -> None:
    server = tls_server(target)
    sock = tls_connect(server, client_context(tls_files))
    for n in (BIG, 100_000, 0, 1):
        response = exchange(sock, "GET", f"/{route}?n={n}")
        assert response.status == 200
        assert response.body == pattern(n)  # type: ignore[attr-defined]
    sock.close()


@pytest.mark.parametrize("target", TARGETS)
def test_keep_alive_and_pipelining(tls_server: Callable[..., Server], tls_files: TLSFiles, target: str) -> None:
    server = tls_server(target)
    conn = RawConnection(tls_connect(server, client_context(tls_files)))
    # Keep-alive: one request after the other.
    for n in (10, 70_000, 3):
        conn.send(f"GET /big?n={n} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
        response = conn.read_response()
        assert response.status == 200
        assert response.body == pattern(n)
    # Pipelining: many requests in one write (several TLS records, decrypted
    # in one go), answered in order.
    sizes = [1, 20_000, 5, 300_000, 7, 0, 65_536, 2]
    burst = b"".join(f"GET /big?n={n} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode() for n in sizes)
    posts = [os.urandom(n) for n in (40_000, 3)]
    burst += b"".join(
        f"POST /echo HTTP/1.1\r\nHost: localhost\r\nContent-Length: {len(p)}\r\n\r\n".encode() + p for p in posts
    )
    conn.send(burst)
    for n in sizes:
        response = conn.read_response()
        assert response.status == 200
        assert response.body == pattern(n)
    for p in posts:
        response = conn.read_response()
        assert json.loads(response.body) == {"length": len(p), "sha256": hashlib.sha256(p).hexdigest()}
    conn.close()


@pytest.mark.parametrize("target", TARGETS)
def test_connection_close_ends_with_close_notify(
    tls_server: Callable[..., Server], tls_files: TLSFiles, target: str
) -> None:
    server = tls_server(target)
    sock = tls_connect(server, client_context(tls_files))
    response = exchange(sock, "GET", "/big?n=1000", headers={"Connection": "close"})
    assert response.body == pattern(1000)  # type: ignore[attr-defined]
    # A clean TLS EOF (close_notify), not a bare TCP close: recv returns b"".
    assert sock.recv(100) == b""
    sock.close()
