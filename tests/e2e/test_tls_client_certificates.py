"""Client certificates (mTLS, TRANSPORT.md "TLS"): --tls-ca with --tls-client-cert optional or required.

What the application sees: WSGI SSL_CLIENT_VERIFY (SUCCESS, NONE,
FAILED:reason) and SSL_CLIENT_* fields; ASGI the `tls` extension's
client_cert_chain, client_cert_name and client_cert_error.
"""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING

import pytest
from tls_support import TLSFiles, client_context, info, leaf_pem, refused

if TYPE_CHECKING:
    from collections.abc import Callable

    from conftest import Server

pytest_plugins = ("tls_support",)


def mtls_server(tls_server: Callable[..., Server], files: TLSFiles, target: str, mode: str) -> Server:
    return tls_server(target, "--tls-ca", str(files.ca), "--tls-client-cert", mode)


def test_optional_without_certificate_is_none(tls_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    server = mtls_server(tls_server, tls_files, "tls_apps:wsgi", "optional")
    environ = info(server, client_context(tls_files))
    assert environ["SSL_CLIENT_VERIFY"] == "NONE"
    assert "SSL_CLIENT_S_DN" not in environ
    asgi = mtls_server(tls_server, tls_files, "tls_apps:asgi", "optional")
    tls = info(asgi, client_context(tls_files))["tls"]
    assert tls["client_cert_chain"] == []
    assert tls["client_cert_name"] is None
    assert tls["client_cert_error"] is None


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3])
def test_optional_with_certificate_is_success(
    tls_server: Callable[..., Server], tls_files: TLSFiles, version: ssl.TLSVersion
) -> None:
    server = mtls_server(tls_server, tls_files, "tls_apps:wsgi", "optional")
    context = client_context(tls_files, version=version, client_cert=(tls_files.client_cert, tls_files.client_key))
    environ = info(server, context)
    assert environ["SSL_CLIENT_VERIFY"] == "SUCCESS"
    assert "CN=client one" in environ["SSL_CLIENT_S_DN"]
    assert environ["SSL_CLIENT_I_DN"]
    assert environ["SSL_CLIENT_M_SERIAL"]
    assert all(c in "0123456789ABCDEF" for c in environ["SSL_CLIENT_M_SERIAL"])
    assert environ["SSL_CLIENT_V_START"].endswith("GMT")
    assert environ["SSL_CLIENT_V_END"].endswith("GMT")
    leaf = leaf_pem(tls_files.client_cert)
    assert environ["SSL_CLIENT_CERT"] == leaf


def test_asgi_scope_with_client_certificate(tls_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    server = mtls_server(tls_server, tls_files, "tls_apps:asgi", "optional")
    context = client_context(tls_files, client_cert=(tls_files.client_cert, tls_files.client_key))
    tls = info(server, context)["tls"]
    leaf = leaf_pem(tls_files.client_cert)
    assert tls["client_cert_chain"][0] == leaf
    assert "CN=client one" in tls["client_cert_name"]
    assert tls["client_cert_error"] is None


def test_optional_with_untrusted_certificate_is_failed(tls_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    server = mtls_server(tls_server, tls_files, "tls_apps:wsgi", "optional")
    context = client_context(tls_files, client_cert=(tls_files.rogue_client_cert, tls_files.rogue_client_key))
    environ = info(server, context)
    assert environ["SSL_CLIENT_VERIFY"].startswith("FAILED:")
    assert "CN=rogue" in environ["SSL_CLIENT_S_DN"]


def test_required_without_certificate_fails_the_handshake(
    tls_server: Callable[..., Server], tls_files: TLSFiles
) -> None:
    server = mtls_server(tls_server, tls_files, "tls_apps:wsgi", "required")
    for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
        assert refused(server, client_context(tls_files, version=version))
    context = client_context(tls_files, client_cert=(tls_files.client_cert, tls_files.client_key))
    assert info(server, context)["SSL_CLIENT_VERIFY"] == "SUCCESS"


def test_required_with_untrusted_certificate_fails_the_handshake(
    tls_server: Callable[..., Server], tls_files: TLSFiles
) -> None:
    server = mtls_server(tls_server, tls_files, "tls_apps:wsgi", "required")
    context = client_context(tls_files, client_cert=(tls_files.rogue_client_cert, tls_files.rogue_client_key))
    assert refused(server, context)
