"""`--tls-min-version 1.2|1.3` (issue 18 item 5): the lowest TLS version over TCP, 1.2 by default. A client
pinned to TLS 1.2 is refused by a 1.3-only server (protocol_version alert, RFC 8446 §4.2.1) and served by
default; HTTP/3 is TLS 1.3 whatever the option says (RFC 9001 §4.2).
"""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING

import pytest
from test_cli import assert_clean_usage_error, run
from tls_support import client_context, exchange, info, tls_connect

pytest_plugins = ("tls_support",)

if TYPE_CHECKING:
    from collections.abc import Callable

    from tls_support import TLSFiles

    from conftest import Server

TARGET = "tls_apps:wsgi"


def test_default_accepts_tls12_and_tls13(tls_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    server = tls_server(TARGET)
    assert info(server, client_context(tls_files, version=ssl.TLSVersion.TLSv1_2))["SSL_PROTOCOL"] == "TLSv1.2"
    assert info(server, client_context(tls_files, version=ssl.TLSVersion.TLSv1_3))["SSL_PROTOCOL"] == "TLSv1.3"


def test_explicit_tls12_accepts_tls12(tls_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    server = tls_server(TARGET, "--tls-min-version", "1.2")
    assert info(server, client_context(tls_files, version=ssl.TLSVersion.TLSv1_2))["SSL_PROTOCOL"] == "TLSv1.2"


def test_tls13_only_refuses_a_client_pinned_to_tls12(tls_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    server = tls_server(TARGET, "--tls-min-version", "1.3")
    with pytest.raises(ssl.SSLError, match=r"(?i)protocol.version|unsupported protocol|wrong.version"):
        tls_connect(server, client_context(tls_files, version=ssl.TLSVersion.TLSv1_2))
    # A client offering both gets 1.3; the refused handshake did not disturb the worker.
    assert info(server, client_context(tls_files))["SSL_PROTOCOL"] == "TLSv1.3"
    sock = tls_connect(server, client_context(tls_files, version=ssl.TLSVersion.TLSv1_3))
    try:
        assert sock.version() == "TLSv1.3"
        assert exchange(sock, "GET", "/info").status == 200
    finally:
        sock.close()


def test_tls13_only_with_http3(tls_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    h3client = pytest.importorskip("h3client")
    server = tls_server(TARGET, "--http3", "--tls-min-version", "1.3")
    assert h3client.H3Client(port=server.port, ca=tls_files.ca).request("GET", "/info").status == 200
    assert info(server, client_context(tls_files))["SSL_PROTOCOL"] == "TLSv1.3"


@pytest.mark.parametrize("value", ["1.1", "1.0", "TLSv1.3", "13"])
def test_other_versions_are_usage_errors(tls_files: TLSFiles, value: str) -> None:
    result = run("--port", "0", *tls_files.server_options("--tls-min-version", value), TARGET)
    assert_clean_usage_error(result, "--tls-min-version must be 1.2 or 1.3", value)


def test_tls12_ciphers_with_tls13_only_are_a_usage_error(tls_files: TLSFiles) -> None:
    options = tls_files.server_options("--tls-min-version", "1.3", "--tls-ciphers", "ECDHE-ECDSA-AES128-GCM-SHA256")
    assert_clean_usage_error(run("--port", "0", *options, TARGET), "--tls-ciphers", "--tls-min-version 1.3")


def test_min_version_without_tls_is_a_usage_error() -> None:
    result = run("--port", "0", "--tls-min-version", "1.3", TARGET)
    assert_clean_usage_error(result, "--tls-min-version needs --tls-cert")
