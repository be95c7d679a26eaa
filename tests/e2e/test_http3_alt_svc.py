"""`--http3` advertises itself (issue 14 point 1, RFC 9114 §3.1.1): HTTP/1.1 and HTTP/2 responses over TLS carry
`alt-svc: h3=":PORT"; ma=86400` with the QUIC port, unless the application set its own Alt-Svc (kept, alone);
without `--http3`, and on cleartext, no response carries one."""

from __future__ import annotations

import http.client
import socket
from typing import TYPE_CHECKING

import pytest
from h2client import H2Client
from tls_support import client_context, https_request

if TYPE_CHECKING:
    from collections.abc import Callable

    from tls_support import TLSFiles

    from conftest import Server

pytest_plugins = ("tls_support",)

OWN = 'h3=":9999"; ma=60'
TARGETS = ["alt_svc_apps:wsgi", "alt_svc_apps:asgi"]


def h1_alt_svc(server: Server, tls_files: TLSFiles, path: str) -> list[str]:
    """Every alt-svc field of an HTTP/1.1-over-TLS response."""
    response, sock = https_request(server, client_context(tls_files, alpn=["http/1.1"]), path)
    sock.close()
    assert response.status == 200
    return response.headers.get_all("alt-svc") or []


def h2_alt_svc(server: Server, tls_files: TLSFiles, path: str) -> list[bytes]:
    """Every alt-svc field of an HTTP/2-over-TLS response."""
    with H2Client(server.port, tls=client_context(tls_files, alpn=["h2"])) as client:
        response = client.request("GET", path, scheme="https")
    assert response.status == 200
    return [value for name, value in response.headers if name == b"alt-svc"]


@pytest.mark.parametrize("target", TARGETS)
def test_http1_over_tls_advertises_the_quic_port(
    tls_server: Callable[..., Server], tls_files: TLSFiles, target: str
) -> None:
    server = tls_server(target, "--http3")
    assert h1_alt_svc(server, tls_files, "/") == [f'h3=":{server.port}"; ma=86400']


@pytest.mark.parametrize("target", TARGETS)
def test_http2_over_tls_advertises_the_quic_port(
    tls_server: Callable[..., Server], tls_files: TLSFiles, target: str
) -> None:
    server = tls_server(target, "--http3")
    assert h2_alt_svc(server, tls_files, "/") == [f'h3=":{server.port}"; ma=86400'.encode()]


@pytest.mark.parametrize("target", TARGETS)
def test_an_applications_own_alt_svc_is_kept_and_alone(
    tls_server: Callable[..., Server], tls_files: TLSFiles, target: str
) -> None:
    server = tls_server(target, "--http3")
    assert h1_alt_svc(server, tls_files, "/own") == [OWN]
    assert h2_alt_svc(server, tls_files, "/own") == [OWN.encode()]


def test_the_advertised_port_is_the_quic_port(
    tls_server: Callable[..., Server], tls_files: TLSFiles, unused_udp_port: int
) -> None:
    server = tls_server("alt_svc_apps:wsgi", "--http3", "--quic-port", str(unused_udp_port))
    assert unused_udp_port != server.port
    assert h1_alt_svc(server, tls_files, "/") == [f'h3=":{unused_udp_port}"; ma=86400']
    assert h2_alt_svc(server, tls_files, "/") == [f'h3=":{unused_udp_port}"; ma=86400'.encode()]


@pytest.mark.parametrize("target", TARGETS)
def test_without_http3_nothing_is_advertised(
    tls_server: Callable[..., Server], tls_files: TLSFiles, target: str
) -> None:
    server = tls_server(target)
    assert h1_alt_svc(server, tls_files, "/") == []
    assert h2_alt_svc(server, tls_files, "/") == []


@pytest.mark.parametrize("target", TARGETS)
def test_cleartext_responses_carry_none(start_server: Callable[..., Server], target: str) -> None:
    """--http3 needs TLS, so a cleartext listener never has HTTP/3 to advertise (RFC 7838 §2.1: not for http)."""
    server = start_server(target)
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.request("GET", "/")
    response = connection.getresponse()
    response.read()
    connection.close()
    assert response.getheader("alt-svc") is None
    with H2Client(server.port) as client:
        assert all(name != b"alt-svc" for name, _ in client.request("GET", "/").headers)


@pytest.fixture
def unused_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
