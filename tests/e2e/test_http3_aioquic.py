"""HTTP/3 against aioquic's client (RFC 9000, 9001, 9114; TRANSPORT.md "HTTP/3").

Each test starts a server with `--http3` over the TLS fixtures and talks to
its UDP port (by default the TCP port) with aioquic, an independent QUIC,
TLS 1.3 and HTTP/3 stack. The applications are the TLS modules' (tls_apps):
`/echo` answers the length and SHA-256 of the body, `/big` and `/file`
serve `pattern(n)` from a generator and from a file. Each test runs with
`--quic-congestion cubic` (the default) and `newreno`.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import TYPE_CHECKING

import pytest
from h3client import H3Client
from tls_support import TLSFiles, pattern

if TYPE_CHECKING:
    from collections.abc import Callable

    from conftest import Server

pytest_plugins = ("tls_support",)

CipherSuite = pytest.importorskip("aioquic.tls").CipherSuite

TARGETS = ["tls_apps:wsgi", "tls_apps:asgi"]
TEN_MIB = 10 * 1024 * 1024


def client(server: Server, files: TLSFiles, **settings: object) -> H3Client:
    return H3Client(port=server.port, ca=files.ca, **settings)  # type: ignore[arg-type]


@pytest.fixture(params=["cubic", "newreno"])
def h3_server(tls_server: Callable[..., Server], request: pytest.FixtureRequest) -> Callable[..., Server]:
    """Every test runs under both congestion controllers (TRANSPORT.md)."""

    def starter(target: str, *options: str) -> Server:
        return tls_server(target, "--http3", "--quic-congestion", request.param, *options)

    return starter


@pytest.mark.parametrize("target", TARGETS)
def test_get(h3_server: Callable[..., Server], tls_files: TLSFiles, target: str) -> None:
    server = h3_server(target, "--access-log")
    c = client(server, tls_files)
    response = c.request("GET", "/info")
    assert response.status == 200
    info = json.loads(response.body)
    if target.endswith("asgi"):
        assert info["http_version"] == "3"
        assert info["scheme"] == "https"
    else:
        assert info["wsgi.url_scheme"] == "https"
    assert c.connection_facts["alpn"] == "h3"
    assert server.stdout.wait_for(lambda line: '"GET /info HTTP/3" 200' in line, 5.0) is not None


@pytest.mark.parametrize("target", TARGETS)
def test_post_echo(h3_server: Callable[..., Server], tls_files: TLSFiles, target: str) -> None:
    server = h3_server(target)
    body = os.urandom(100_000)
    response = client(server, tls_files).request("POST", "/echo", body=body)
    assert response.status == 200
    assert json.loads(response.body) == {"length": len(body), "sha256": hashlib.sha256(body).hexdigest()}


#: Seconds a 10 MiB transfer may take (the client is aioquic, pure Python).
BULK_TIMEOUT = 180.0


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("route", ["big", "file"])
def test_ten_mib_download(h3_server: Callable[..., Server], tls_files: TLSFiles, target: str, route: str) -> None:
    server = h3_server(target)
    # A generous limit: unloaded this takes about 2 s, but on a loaded 2-core CI machine aioquic (pure Python) has
    # run past 60 s.
    response = client(server, tls_files, timeout=BULK_TIMEOUT).request("GET", f"/{route}?n={TEN_MIB}")
    assert response.status == 200
    assert len(response.body) == TEN_MIB
    assert response.body == pattern(TEN_MIB)


@pytest.mark.parametrize("target", TARGETS)
def test_ten_mib_upload(h3_server: Callable[..., Server], tls_files: TLSFiles, target: str) -> None:
    server = h3_server(target, "--max-body", "64m")
    body = os.urandom(TEN_MIB)
    response = client(server, tls_files, timeout=BULK_TIMEOUT).request("POST", "/echo", body=body)
    assert response.status == 200
    assert json.loads(response.body) == {"length": TEN_MIB, "sha256": hashlib.sha256(body).hexdigest()}


@pytest.mark.parametrize("target", TARGETS)
def test_hundred_concurrent_streams(h3_server: Callable[..., Server], tls_files: TLSFiles, target: str) -> None:
    server = h3_server(target)
    sizes = [(i * 997) % 50_000 for i in range(100)]
    responses = client(server, tls_files, timeout=60.0).gather([("GET", f"/big?n={n}", None) for n in sizes])
    assert [r.status for r in responses] == [200] * 100
    assert [r.body for r in responses] == [pattern(n) for n in sizes]


def test_session_resumption(h3_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    server = h3_server("tls_apps:asgi")
    first = client(server, tls_files)
    assert first.request("GET", "/info").status == 200
    assert first.connection_facts["resumed"] is False
    assert first.tickets, "the server sent no session ticket"
    second = client(server, tls_files, session_ticket=first.tickets[-1])
    assert second.request("GET", "/info").status == 200
    assert second.connection_facts["resumed"] is True


def test_chacha20_only_client(h3_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    server = h3_server("tls_apps:asgi")
    c = client(server, tls_files, cipher_suites=[CipherSuite.CHACHA20_POLY1305_SHA256])
    body = os.urandom(300_000)
    response = c.request("POST", "/echo", body=body)
    assert json.loads(response.body)["sha256"] == hashlib.sha256(body).hexdigest()
    assert c.connection_facts["cipher_suite"] == CipherSuite.CHACHA20_POLY1305_SHA256
