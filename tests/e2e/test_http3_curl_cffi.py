"""HTTP/3 against curl (issue 14 point 8): libcurl with ngtcp2, nghttp3 and BoringSSL, as PyPI's curl_cffi bundles
it, an HTTP/3 stack that shares no code with the server's nor with aioquic.

`CurlHttpVersion.V3ONLY` makes curl speak HTTP/3 straight to the UDP port (no Alt-Svc, no fallback to TCP): a
request that succeeds went over QUIC, which the response's HTTP version and the server's access log both say.
The certificate is verified against the test CA (BoringSSL's verifier, the 127.0.0.1 IP SAN).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest
from tls_support import TLSFiles, pattern

if TYPE_CHECKING:
    from collections.abc import Callable

    from conftest import Server

curl_cffi = pytest.importorskip("curl_cffi")

from curl_cffi import CurlHttpVersion  # noqa: E402
from curl_cffi import requests as curl_requests  # noqa: E402

pytest_plugins = ("tls_support",)

TARGETS = ["tls_apps:wsgi", "tls_apps:asgi"]
FIVE_MIB = 5 * 1024 * 1024
#: What libcurl reports as the response's version for HTTP/3 (CURL_HTTP_VERSION_3).
CURL_HTTP3 = 30


def get(server: Server, tls_files: TLSFiles, path: str) -> curl_requests.Response:
    """One request over HTTP/3 only, certificate verified."""
    with curl_requests.Session() as session:
        return session.get(
            f"https://127.0.0.1:{server.port}{path}",
            verify=str(tls_files.ca),
            http_version=CurlHttpVersion.V3ONLY,
            timeout=60,
        )


@pytest.mark.parametrize("target", TARGETS)
def test_get(tls_server: Callable[..., Server], tls_files: TLSFiles, target: str) -> None:
    server = tls_server(target, "--http3", "--access-log")
    response = get(server, tls_files, "/info")
    assert response.status_code == 200
    assert response.http_version == CURL_HTTP3
    info = json.loads(response.content)
    if target.endswith("asgi"):
        assert info["http_version"] == "3"
        assert info["scheme"] == "https"
    else:
        assert info["wsgi.url_scheme"] == "https"
    assert server.stdout.wait_for(lambda line: '"GET /info HTTP/3" 200' in line, 5.0) is not None


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("route", ["big", "file"])
def test_five_mib_download(tls_server: Callable[..., Server], tls_files: TLSFiles, target: str, route: str) -> None:
    """5 MiB from a generator (ASGI body messages, WSGI iterable) and from a file (pathsend, wsgi.file_wrapper)."""
    server = tls_server(target, "--http3", "--access-log")
    response = get(server, tls_files, f"/{route}?n={FIVE_MIB}")
    assert response.status_code == 200
    assert response.http_version == CURL_HTTP3
    assert int(response.headers["content-length"]) == FIVE_MIB
    assert response.content == pattern(FIVE_MIB)
    logged = f'"GET /{route}?n={FIVE_MIB} HTTP/3" 200 {FIVE_MIB}'
    assert server.stdout.wait_for(lambda line: logged in line, 5.0) is not None
