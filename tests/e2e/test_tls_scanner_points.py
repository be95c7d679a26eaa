"""What a TLS scanner checks, checked with `openssl s_client` on every CI run (issue 19 point 6).

`testssl.sh` is the independent scanner (its last summary is in TRANSPORT.md, "TLS: what a
scanner sees"); it takes a minute and more, so CI repeats its findings point by point here:
no protocol below TLS 1.2, only forward-secret AEAD suites for TLS 1.2 by default (no CBC:
LUCKY13; no RSA key transport: ROBOT), no compression (CRIME), secure renegotiation
advertised (RFC 5746) and client-initiated renegotiation refused, no heartbeat extension
(Heartbleed).
"""

from __future__ import annotations

import ssl
import subprocess
from typing import TYPE_CHECKING

import pytest
from tls_support import TLSFiles, client_context, info, tls_connect

if TYPE_CHECKING:
    from collections.abc import Callable

    from conftest import Server

pytest_plugins = ("tls_support",)

# TLS 1.2 suites a scanner flags and OpenSSL's own default list offers: CBC with SHA-1 or
# SHA-2 MACs. (RSA key transport is also off by default, but with the tests' ECDSA
# certificate it could not be chosen anyway, so it would prove nothing here.)
WEAK_TLS12 = [
    "ECDHE-ECDSA-AES128-SHA",
    "ECDHE-ECDSA-AES256-SHA",
    "ECDHE-ECDSA-AES128-SHA256",
    "ECDHE-ECDSA-AES256-SHA384",
]
STRONG_TLS12 = ["ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305"]


def s_client(server: Server, tls_files: TLSFiles, *options: str, stdin: bytes = b"") -> str:
    """Run `openssl s_client` against the server; its stdout and stderr together."""
    result = subprocess.run(
        ["openssl", "s_client", "-connect", f"127.0.0.1:{server.port}", "-servername", "localhost",
         "-CAfile", str(tls_files.ca), *options],
        input=stdin,
        capture_output=True,
        timeout=30,
        check=False,
    )  # fmt: skip
    return (result.stdout + result.stderr).decode(errors="replace")


@pytest.mark.parametrize("cipher", WEAK_TLS12)
def test_weak_tls12_suites_are_refused_by_default(
    tls_server: Callable[..., Server], tls_files: TLSFiles, cipher: str
) -> None:
    server = tls_server("tls_apps:wsgi")
    narrow = client_context(tls_files, version=ssl.TLSVersion.TLSv1_2, ciphers=cipher)
    with pytest.raises(ssl.SSLError):
        tls_connect(server, narrow)
    assert info(server, client_context(tls_files))["HTTPS"] == "on"


@pytest.mark.parametrize("cipher", STRONG_TLS12)
def test_forward_secret_aead_suites_are_accepted(
    tls_server: Callable[..., Server], tls_files: TLSFiles, cipher: str
) -> None:
    server = tls_server("tls_apps:wsgi")
    environ = info(server, client_context(tls_files, version=ssl.TLSVersion.TLSv1_2, ciphers=cipher))
    assert environ["SSL_CIPHER"] == cipher


def test_an_explicit_cipher_list_can_bring_cbc_back(tls_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    """The default is a default: an operator who must serve an old client can say so."""
    server = tls_server("tls_apps:wsgi", "--tls-ciphers", "ECDHE-ECDSA-AES128-SHA")
    environ = info(server, client_context(tls_files, version=ssl.TLSVersion.TLSv1_2, ciphers="ECDHE-ECDSA-AES128-SHA"))
    assert environ["SSL_CIPHER"] == "ECDHE-ECDSA-AES128-SHA"


@pytest.mark.filterwarnings("ignore:ssl.TLSVersion:DeprecationWarning")
@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1, ssl.TLSVersion.TLSv1_1])
def test_protocols_below_tls12_are_refused(
    tls_server: Callable[..., Server], tls_files: TLSFiles, version: ssl.TLSVersion
) -> None:
    server = tls_server("tls_apps:wsgi")
    context = client_context(tls_files)
    context.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
    context.maximum_version = version
    context.set_ciphers("ALL:@SECLEVEL=0")
    with pytest.raises(ssl.SSLError):
        tls_connect(server, context)
    assert info(server, client_context(tls_files))["HTTPS"] == "on"


def test_no_compression_no_heartbeat_and_secure_renegotiation(
    tls_server: Callable[..., Server], tls_files: TLSFiles
) -> None:
    server = tls_server("tls_apps:wsgi")
    out = s_client(server, tls_files, "-tls1_2", "-tlsextdebug", "-status")
    assert "Verify return code: 0 (ok)" in out, out
    assert "Compression: NONE" in out
    assert "Secure Renegotiation IS supported" in out
    # -tlsextdebug prints each extension of the ServerHello by name.
    assert 'TLS server extension "renegotiation info"' in out
    assert "heartbeat" not in out.lower()


def test_client_initiated_renegotiation_is_refused(tls_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    """`R` on s_client's input asks for a renegotiation (TLS 1.2); the server must not perform one."""
    server = tls_server("tls_apps:wsgi")
    out = s_client(server, tls_files, "-tls1_2", stdin=b"R\n")
    assert "RENEGOTIATING" in out, out
    # SSL_OP_NO_RENEGOTIATION: the server answers the new ClientHello with a
    # no_renegotiation alert (RFC 5246 §7.2.2), which s_client reports.
    assert "no renegotiation" in out, out
    assert out.count("Verify return code: 0 (ok)") == 1
    assert info(server, client_context(tls_files))["HTTPS"] == "on"
