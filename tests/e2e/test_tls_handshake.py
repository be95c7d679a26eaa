"""TLS handshakes (TRANSPORT.md "TLS"): 1.2 and 1.3 accepted, 1.1 refused, the 1.2 cipher list honoured, ALPN.

Requests go to a WSGI application under wsgiref.validate and to an ASGI
application; both must see https and the facts of the handshake they came on.
"""

from __future__ import annotations

import json
import ssl
import subprocess
from typing import TYPE_CHECKING

import pytest
from tls_support import TLSFiles, client_context, https_request, info, leaf_pem, pattern, tls_connect

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from conftest import Server

pytest_plugins = ("tls_support",)

VERSIONS = [(ssl.TLSVersion.TLSv1_2, "TLSv1.2", 0x0303), (ssl.TLSVersion.TLSv1_3, "TLSv1.3", 0x0304)]


@pytest.mark.parametrize(("version", "name", "number"), VERSIONS)
def test_wsgi_request_over_each_version(
    tls_server: Callable[..., Server], tls_files: TLSFiles, version: ssl.TLSVersion, name: str, number: int
) -> None:
    server = tls_server("tls_apps:wsgi")
    context = client_context(tls_files, version=version)
    response, sock = https_request(server, context, "/info")
    cipher = sock.cipher()
    assert sock.version() == name
    sock.close()
    assert response.status == 200
    environ = json.loads(response.body)  # type: ignore[attr-defined]
    assert environ["wsgi.url_scheme"] == "https"
    assert environ["HTTPS"] == "on"
    assert environ["SSL_PROTOCOL"] == name
    assert cipher is not None
    assert environ["SSL_CIPHER"] == cipher[0]
    assert environ["SSL_CLIENT_VERIFY"] == "NONE"
    assert "SSL_CLIENT_CERT" not in environ
    assert number in (0x0303, 0x0304)


@pytest.mark.parametrize(("version", "name", "number"), VERSIONS)
def test_asgi_scope_has_the_tls_extension(
    tls_server: Callable[..., Server], tls_files: TLSFiles, version: ssl.TLSVersion, name: str, number: int
) -> None:
    server = tls_server("tls_apps:asgi")
    context = client_context(tls_files, version=version)
    response, sock = https_request(server, context, "/info")
    assert sock.version() == name
    sock.close()
    scope = json.loads(response.body)  # type: ignore[attr-defined]
    assert scope["scheme"] == "https"
    assert scope["http_version"] == "1.1"
    tls = scope["tls"]
    assert tls["tls_version"] == number
    assert isinstance(tls["cipher_suite"], int)
    assert tls["cipher_suite"] > 0
    assert tls["server_cert"] == leaf_pem(tls_files.cert)
    assert tls["client_cert_chain"] == []
    assert tls["client_cert_name"] is None
    assert tls["client_cert_error"] is None


def test_tls_1_1_is_refused(tls_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    server = tls_server("tls_apps:wsgi")
    context = client_context(tls_files)
    context.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
    context.maximum_version = ssl.TLSVersion.TLSv1_1
    context.set_ciphers("ALL:@SECLEVEL=0")
    with pytest.raises(ssl.SSLError):
        tls_connect(server, context)
    # The worker is unharmed.
    assert info(server, client_context(tls_files))["HTTPS"] == "on"


def test_tls_1_2_cipher_list_is_honoured(tls_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    server = tls_server("tls_apps:wsgi", "--tls-ciphers", "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256")
    context = client_context(tls_files, version=ssl.TLSVersion.TLSv1_2)
    environ = info(server, context)
    assert environ["SSL_CIPHER"] in ("ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256")
    # A client offering only ciphers outside the list is refused.
    narrow = client_context(tls_files, version=ssl.TLSVersion.TLSv1_2, ciphers="ECDHE-ECDSA-CHACHA20-POLY1305")
    with pytest.raises(ssl.SSLError):
        tls_connect(server, narrow)
    # TLS 1.3 keeps OpenSSL's default suites.
    assert info(server, client_context(tls_files, version=ssl.TLSVersion.TLSv1_3))["SSL_PROTOCOL"] == "TLSv1.3"


@pytest.mark.parametrize(
    ("options", "offered", "chosen"),
    [
        ((), ["h2", "http/1.1"], "h2"),  # the server's preference: HTTP/2
        ((), ["http/1.1", "h2"], "h2"),
        ((), ["http/1.1"], "http/1.1"),
        ((), None, None),
        (("--no-http2",), ["h2", "http/1.1"], "http/1.1"),
        (("--no-http2",), ["h2"], None),
        (("--http2-only",), ["http/1.1", "h2"], "h2"),
    ],
)
def test_alpn_choice(
    tls_server: Callable[..., Server],
    tls_files: TLSFiles,
    options: tuple[str, ...],
    offered: list[str] | None,
    chosen: str | None,
) -> None:
    """ALPN in server preference order: h2, then http/1.1; with no protocol in common the handshake goes on without."""
    server = tls_server("tls_apps:wsgi", *options)
    if chosen == "h2":
        with tls_connect(server, client_context(tls_files, alpn=offered)) as sock:
            assert sock.selected_alpn_protocol() == "h2"
        return
    response, sock = https_request(server, client_context(tls_files, alpn=offered), "/info")
    assert sock.selected_alpn_protocol() == chosen
    sock.close()
    assert response.status == 200


def test_startup_line_says_https(tls_server: Callable[..., Server]) -> None:
    server = tls_server("tls_apps:wsgi")
    assert f"listening on https://127.0.0.1:{server.port}" in server.stderr.text()


def test_curl(tls_server: Callable[..., Server], tls_files: TLSFiles, tmp_path: Path) -> None:
    server = tls_server("tls_apps:wsgi")
    base = f"https://localhost:{server.port}"
    out = tmp_path / "big"
    curl = ["curl", "-sS", "--cacert", str(tls_files.ca)]
    result = subprocess.run(
        [*curl, "-o", str(out), "-w", "%{http_code} %{http_version}", f"{base}/big?n=300000"],
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"200 2"  # curl offers h2 first, and ALPN picks it
    assert out.read_bytes() == pattern(300000)
    result = subprocess.run([*curl, f"{base}/info"], capture_output=True, timeout=30, check=False)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["HTTPS"] == "on"
