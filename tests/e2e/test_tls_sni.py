"""SNI (TRANSPORT.md "TLS"): several --tls-cert/--tls-key pairs, chosen by the certificate's DNS names.

`*.wild.test` matches exactly one left-most label (RFC 6125 §6.4.3); an
unknown name, or none at all, gets the first pair.
"""

from __future__ import annotations

import ssl
from typing import TYPE_CHECKING

import pytest
from tls_support import TLSFiles, client_context, leaf_pem, tls_connect

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from conftest import Server

pytest_plugins = ("tls_support",)


def presented(server: Server, files: TLSFiles, hostname: str | None) -> bytes:
    """The DER certificate the server presents for `hostname` (None: no SNI)."""
    context = client_context(files)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    sock = server.connect()
    tls = context.wrap_socket(sock, server_hostname=hostname)
    der = tls.getpeercert(binary_form=True)
    tls.close()
    assert der is not None
    return der


def der(path: Path) -> bytes:
    """The DER of the first certificate in a PEM file."""
    return ssl.PEM_cert_to_DER_cert(leaf_pem(path))


@pytest.fixture
def sni_server(tls_server: Callable[..., Server], tls_files: TLSFiles) -> Server:
    return tls_server("tls_apps:wsgi", "--tls-cert", str(tls_files.sni_cert), "--tls-key", str(tls_files.sni_key))


@pytest.mark.parametrize(
    ("hostname", "pair"),
    [
        ("localhost", "default"),
        ("exact.test", "sni"),
        ("EXACT.test", "sni"),
        ("a.wild.test", "sni"),
        ("b.wild.test", "sni"),
        ("wild.test", "default"),  # the wildcard needs a label in its place
        ("a.b.wild.test", "default"),  # ...and only one
        ("unknown.example", "default"),
        (None, "default"),
    ],
)
def test_certificate_follows_the_server_name(
    sni_server: Server, tls_files: TLSFiles, hostname: str | None, pair: str
) -> None:
    expected = tls_files.sni_cert if pair == "sni" else tls_files.cert
    assert presented(sni_server, tls_files, hostname) == der(expected)


def test_chosen_certificate_verifies_for_its_names(sni_server: Server, tls_files: TLSFiles) -> None:
    for hostname in ("exact.test", "x.wild.test", "localhost"):
        tls = tls_connect(sni_server, client_context(tls_files), hostname=hostname)
        tls.close()
