"""HTTP/3 against a browser (issue 14 point 8): headless Chromium (Debian's `chromium`), whose QUIC and HTTP/3
stack (Google's QUICHE on BoringSSL) shares no code with the server's, aioquic, curl's or ngtcp2's.

Chromium is told to speak QUIC to the server's origin from the first request (`--origin-to-force-quic-on`, no
Alt-Svc round) and to accept the test certificate by the SHA-256 of its public key
(`--ignore-certificate-errors-spki-list`; Chromium does not take a CA file). It opens browser_apps' page, whose
script fetches 5 MiB, checks every byte and reports the result with one more request; the access log must show
the page, the resource and the report as HTTP/3, and nothing over TCP (Chromium falls back to TCP when QUIC
fails, which would show as HTTP/1.1 or HTTP/2 there). Headless Chromium does not exit by itself: the test stops
it (its own process group) once the report is in.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import signal
import subprocess
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from tls_support import TLSFiles

    from conftest import Server

pytest_plugins = ("tls_support",)

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium (Debian chromium) is not installed")

TARGETS = ["browser_apps:wsgi", "browser_apps:asgi"]
FIVE_MIB = 5 * 1024 * 1024


def spki_sha256(certificate: Path) -> str:
    """The base64 SHA-256 of the certificate's SubjectPublicKeyInfo, as --ignore-certificate-errors-spki-list
    takes it."""
    leaf = x509.load_pem_x509_certificate(certificate.read_bytes())
    der = leaf.public_key().public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    return base64.b64encode(hashlib.sha256(der).digest()).decode()


@pytest.mark.parametrize("target", TARGETS)
def test_page_and_five_mib_over_http3(
    tls_server: Callable[..., Server], tls_files: TLSFiles, tmp_path: Path, target: str
) -> None:
    assert CHROMIUM is not None
    server = tls_server(target, "--http3", "--access-log")
    origin = f"127.0.0.1:{server.port}"
    command = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
        f"--user-data-dir={tmp_path / 'profile'}",
        f"--ignore-certificate-errors-spki-list={spki_sha256(tls_files.cert)}",
        f"--origin-to-force-quic-on={origin}", f"https://{origin}/?n={FIVE_MIB}",
    ]  # fmt: skip
    with (tmp_path / "chromium.log").open("wb") as log:
        browser = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        report = server.stdout.wait_for(lambda line: '"GET /report?' in line, 60.0)
    finally:
        os.killpg(browser.pid, signal.SIGTERM)
        try:
            browser.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(browser.pid, signal.SIGKILL)
            browser.wait(timeout=15)
    lines = server.stdout.text().splitlines()
    requests = [line for line in lines if '"GET ' in line]
    assert report is not None, (requests, (tmp_path / "chromium.log").read_text(errors="replace")[-3000:])
    query = parse_qs(urlsplit(report.split('"')[1].split()[1]).query)
    assert query == {"length": [str(FIVE_MIB)], "ok": ["1"], "protocol": ["h3"]}, report
    assert any(f'"GET /?n={FIVE_MIB} HTTP/3" 200' in line for line in requests), requests
    assert any(f'"GET /big?n={FIVE_MIB} HTTP/3" 200 {FIVE_MIB}' in line for line in requests), requests
    assert " HTTP/3" in report
    assert not [line for line in requests if " HTTP/1.1" in line or " HTTP/2" in line], requests
