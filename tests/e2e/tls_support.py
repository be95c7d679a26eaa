"""Certificates (made with trustme) and an HTTPS client over raw sockets, for the TLS end-to-end modules.

`tls_files` (session) writes one CA and, signed by it: the default server
pair (localhost, 127.0.0.1), a second pair for SNI (`*.wild.test` and
`exact.test`), a client certificate, a key that matches none of them, and a
client certificate from a CA the server does not trust.

`https_request` speaks HTTP/1.1 over `ssl` with http.client's response
parser, so a test sees the TLS facts of the very connection (version,
cipher, ALPN, whether the session was resumed).

Modules load the fixtures with `pytest_plugins = ("tls_support",)`.
"""

from __future__ import annotations

import http.client
import json
import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    import socket
    from collections.abc import Callable
    from pathlib import Path

    from conftest import Server

trustme = pytest.importorskip("trustme")


def pattern(n: int) -> bytes:
    """The bytes tls_apps serves for size `n` (see tests/apps/tls_apps.py)."""
    return (bytes(range(256)) * (n // 256 + 1))[:n]


def leaf_pem(path: Path) -> str:
    """The first certificate of a PEM file, as the server reports it."""
    end = "-----END CERTIFICATE-----"
    return path.read_text().split(end, maxsplit=1)[0] + end + "\n"


@dataclass
class TLSFiles:
    """Paths of the PEM files the tests use."""

    ca: Path
    cert: Path
    key: Path
    sni_cert: Path
    sni_key: Path
    client_cert: Path
    client_key: Path
    other_key: Path
    rogue_client_cert: Path
    rogue_client_key: Path

    def server_options(self, *extra: str) -> tuple[str, ...]:
        """--tls-cert/--tls-key for the default pair, then `extra`."""
        return ("--tls-cert", str(self.cert), "--tls-key", str(self.key), *extra)


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> TLSFiles:
    """One CA and every certificate the TLS modules need, as files."""
    base = tmp_path_factory.mktemp("tls")
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(base / "ca.pem"))
    server = ca.issue_cert("localhost", "127.0.0.1")
    sni = ca.issue_cert("*.wild.test", "exact.test")
    client = ca.issue_cert("client@example.test", common_name="client one")
    other = ca.issue_cert("localhost")
    rogue = trustme.CA().issue_cert("rogue@example.test", common_name="rogue")

    def write(leaf: trustme.LeafCert, name: str) -> tuple[Path, Path]:
        cert, key = base / f"{name}.pem", base / f"{name}.key"
        cert.write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
        leaf.private_key_pem.write_to_path(str(key))
        return cert, key

    cert, key = write(server, "server")
    sni_cert, sni_key = write(sni, "sni")
    client_cert, client_key = write(client, "client")
    _, other_key = write(other, "other")
    rogue_cert, rogue_key = write(rogue, "rogue")
    return TLSFiles(
        base / "ca.pem", cert, key, sni_cert, sni_key, client_cert, client_key, other_key, rogue_cert, rogue_key
    )


def client_context(
    files: TLSFiles,
    *,
    version: ssl.TLSVersion | None = None,
    ciphers: str | None = None,
    alpn: list[str] | None = None,
    client_cert: tuple[Path, Path] | None = None,
) -> ssl.SSLContext:
    """A client context trusting the test CA, pinned to `version` if given."""
    context = ssl.create_default_context(cafile=str(files.ca))
    if version is not None:
        context.minimum_version = version
        context.maximum_version = version
    if ciphers is not None:
        context.set_ciphers(ciphers)
    if alpn is not None:
        context.set_alpn_protocols(alpn)
    if client_cert is not None:
        context.load_cert_chain(str(client_cert[0]), str(client_cert[1]))
    return context


def tls_connect(
    server: Server,
    context: ssl.SSLContext,
    *,
    hostname: str | None = "localhost",
    session: ssl.SSLSession | None = None,
) -> ssl.SSLSocket:
    """A TLS connection to `server` (handshake done)."""
    sock = server.connect()
    if hostname is None:
        context.check_hostname = False
    return context.wrap_socket(sock, server_hostname=hostname, session=session)


def exchange(
    sock: ssl.SSLSocket, method: str, target: str, body: bytes = b"", headers: dict[str, str] | None = None
) -> http.client.HTTPResponse:
    """One request on `sock`; the response with its body read."""
    fields = {"Host": "localhost", "Content-Length": str(len(body)), **(headers or {})}
    head = f"{method} {target} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in fields.items()) + "\r\n"
    sock.sendall(head.encode() + body)
    response = http.client.HTTPResponse(sock, method=method)  # type: ignore[arg-type]
    response.begin()
    response.body = response.read()  # type: ignore[attr-defined]
    return response


def https_request(
    server: Server, context: ssl.SSLContext, target: str, *, method: str = "GET", body: bytes = b""
) -> tuple[http.client.HTTPResponse, ssl.SSLSocket]:
    """Connect, send one request, read the response; the socket stays open (the caller closes it)."""
    sock = tls_connect(server, context)
    return exchange(sock, method, target, body), sock


def info(server: Server, context: ssl.SSLContext) -> dict[str, Any]:
    """The /info JSON of a fresh connection."""
    response, sock = https_request(server, context, "/info")
    sock.close()
    assert response.status == 200
    return json.loads(response.body)  # type: ignore[attr-defined,no-any-return]


@pytest.fixture
def tls_server(start_server: Callable[..., Server], tls_files: TLSFiles) -> Callable[..., Server]:
    """`tls_server(target, *options)`: a fresh server with the default pair and `options`."""

    def starter(target: str, *options: str) -> Server:
        return start_server(target, *tls_files.server_options(*options))

    return starter


def refused(server: Server, context: ssl.SSLContext) -> bool:
    """Whether a request fails at the TLS level (during the handshake, or at the first read for TLS 1.3,
    whose client finishes its side before the server's verdict arrives)."""
    try:
        sock = tls_connect(server, context)
        exchange(sock, "GET", "/info")
    except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
        return True
    sock.close()
    return False


def closed_quickly(sock: socket.socket, timeout: float = 5.0) -> bool:
    """Whether the server closes `sock` (EOF or reset) within `timeout`, reading whatever it sends."""
    sock.settimeout(timeout)
    try:
        while sock.recv(4096):
            pass
    except (ConnectionResetError, BrokenPipeError):
        return True
    except TimeoutError:
        return False
    return True
