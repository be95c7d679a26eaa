"""OCSP stapling from a file (issue 18 item 5; RFC 6066 §8 status_request, RFC 6960 responses): `--tls-ocsp
PATH`, repeatable and paired in order with `--tls-cert`, is stapled for that certificate to clients that ask,
in TLS 1.2 and 1.3; new workers read it again on SIGHUP. The responses are made by `openssl ocsp` from an index
file as a CA's responder would, and read back by `openssl s_client -status`. Files that cannot be a fitting
response (not DER, unsuccessful, about another certificate, revoked) are one error line and exit 2.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from typing import TYPE_CHECKING

import pytest
from process_support import wait_for_workers
from test_cli import assert_clean_usage_error, run
from tls_files_support import CA, Leaf, expired_ocsp_response, issue_for, ocsp_response, openssl

pytest_plugins = ("process_support", "tls_files_support")

x509 = pytest.importorskip("cryptography.x509")

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from conftest import Server

TARGET = "tls_apps:wsgi"


def s_client(server: Server, ca: Path, *options: str, servername: str = "localhost") -> str:
    """`openssl s_client -status` against the server: its output (stdout and stderr)."""
    result = subprocess.run(
        [openssl(), "s_client", "-connect", f"127.0.0.1:{server.port}", "-servername", servername,
         "-CAfile", str(ca), "-verify_return_error", *options],
        input="", capture_output=True, text=True, timeout=20, check=False,
    )  # fmt: skip
    return result.stdout + result.stderr


def stapled_serial(output: str) -> str | None:
    """The serial number of the certificate the stapled response speaks of, or None when none was stapled."""
    if "OCSP response: no response sent" in output or "OCSP Response Status: successful" not in output:
        return None
    match = re.search(r"Serial Number: ([0-9A-F]+)", output)
    assert match is not None, output
    return match[1]


def serial_of(leaf: Leaf) -> str:
    """The serial number as `openssl ocsp` prints it (upper-case hex)."""
    serial = format(x509.load_der_x509_certificate(leaf.der).serial_number, "X")
    return serial if len(serial) % 2 == 0 else "0" + serial


def good(test_ca: CA, leaf: Leaf, name: str, **options: object) -> Path:
    return ocsp_response(test_ca.cert, test_ca.key, leaf, test_ca.directory / f"{name}.der", **options)  # type: ignore[arg-type]


@pytest.mark.parametrize("version", ["-tls1_2", "-tls1_3"])
def test_stapled_when_asked(serve: Callable[..., Server], test_ca: CA, version: str) -> None:
    leaf = test_ca.issue("server", with_issuer=True)
    response = good(test_ca, leaf, "server")
    server = serve(TARGET, "--tls-cert", str(leaf.cert), "--tls-key", str(leaf.key), "--tls-ocsp", str(response))
    output = s_client(server, test_ca.cert, "-status", version)
    assert "Verify return code: 0 (ok)" in output, output
    assert "Cert Status: good" in output, output
    assert stapled_serial(output) == serial_of(leaf)
    # The stapled bytes are the file's: openssl prints the DER it got under -status as a parsed response.
    assert "Response Type: Basic OCSP Response" in output
    # Not asked, not sent.
    assert "OCSP response" not in s_client(server, test_ca.cert, version)


def test_paired_in_order_with_the_certificates(serve: Callable[..., Server], test_ca: CA, tmp_path: Path) -> None:
    """The second certificate (chosen by SNI) staples the second response; an empty path skips the first."""
    first = test_ca.issue("first", with_issuer=True)
    second = issue_for(test_ca.ca, tmp_path, "second", ("exact.test",), with_issuer=True)
    response = good(test_ca, second, "second")
    server = serve(
        TARGET,
        "--tls-cert", str(first.cert), "--tls-key", str(first.key),
        "--tls-cert", str(second.cert), "--tls-key", str(second.key),
        "--tls-ocsp", "", "--tls-ocsp", str(response),
    )  # fmt: skip
    assert stapled_serial(s_client(server, test_ca.cert, "-status", servername="localhost")) is None
    assert stapled_serial(s_client(server, test_ca.cert, "-status", servername="exact.test")) == serial_of(second)


def test_new_workers_read_the_response_again_on_sighup(serve: Callable[..., Server], test_ca: CA) -> None:
    leaf = test_ca.issue("server", with_issuer=True)
    served = test_ca.directory / "served.der"
    good(test_ca, leaf, "first", days=1).replace(served)
    server = serve(TARGET, "--tls-cert", str(leaf.cert), "--tls-key", str(leaf.key), "--tls-ocsp", str(served))
    before = wait_for_workers(server, 1)
    first = s_client(server, test_ca.cert, "-status")
    assert stapled_serial(first) == serial_of(leaf)
    time.sleep(1.1)  # a later thisUpdate, to tell the two responses apart
    good(test_ca, leaf, "second", days=3).replace(served)
    mark = len(server.stderr.lines)
    os.kill(server.pid, signal.SIGHUP)
    assert server.stderr.wait_for(lambda line: "ready; worker" in line, 20, mark), server.excerpt(60)
    wait_for_workers(server, 1, exclude=before)
    after = s_client(server, test_ca.cert, "-status")

    def this_update(output: str) -> str:
        match = re.search(r"This Update: (.+)", output)
        assert match is not None, output
        return match[1]

    assert this_update(after) != this_update(first)


def test_broken_response_on_sighup_keeps_the_old_workers(serve: Callable[..., Server], test_ca: CA) -> None:
    leaf = test_ca.issue("server", with_issuer=True)
    served = good(test_ca, leaf, "served")
    server = serve(TARGET, "--tls-cert", str(leaf.cert), "--tls-key", str(leaf.key), "--tls-ocsp", str(served))
    before = wait_for_workers(server, 1)
    served.write_bytes(b"not DER")
    mark = len(server.stderr.lines)
    os.kill(server.pid, signal.SIGHUP)
    line = server.stderr.wait_for(lambda line: "no worker replaced" in line, 15, mark)
    assert line is not None, server.excerpt(60)
    assert "not a DER OCSP response" in line, line
    assert wait_for_workers(server, 1) == before
    assert stapled_serial(s_client(server, test_ca.cert, "-status")) == serial_of(leaf)


def test_without_the_issuer_in_the_chain_the_response_is_still_stapled(
    serve: Callable[..., Server], test_ca: CA
) -> None:
    leaf = test_ca.issue("server")  # the chain file holds the leaf alone: no CertID check possible
    response = good(test_ca, leaf, "server")
    server = serve(TARGET, "--tls-cert", str(leaf.cert), "--tls-key", str(leaf.key), "--tls-ocsp", str(response))
    assert stapled_serial(s_client(server, test_ca.cert, "-status")) == serial_of(leaf)


def test_expired_response_is_loaded_with_a_warning_and_not_stapled(serve: Callable[..., Server], test_ca: CA) -> None:
    """A response past its nextUpdate would make strict clients fail: none is stapled, the operator is warned."""
    leaf = test_ca.issue("server", with_issuer=True)
    response = expired_ocsp_response(test_ca.cert, test_ca.key, leaf, test_ca.directory / "expired.der")
    server = serve(TARGET, "--tls-cert", str(leaf.cert), "--tls-key", str(leaf.key), "--tls-ocsp", str(response))
    assert stapled_serial(s_client(server, test_ca.cert, "-status")) is None
    warnings = [line for line in server.stderr.lines if "past its nextUpdate" in line]
    assert warnings, server.excerpt()
    assert all("[WARNING]" in line for line in warnings), warnings
    assert all(str(response) in line for line in warnings), warnings


def test_response_without_next_update_is_always_stapled(serve: Callable[..., Server], test_ca: CA) -> None:
    leaf = test_ca.issue("server", with_issuer=True)
    response = good(test_ca, leaf, "server", days=None)
    output = s_client(
        serve(TARGET, "--tls-cert", str(leaf.cert), "--tls-key", str(leaf.key), "--tls-ocsp", str(response)),
        test_ca.cert,
        "-status",
    )
    assert "Next Update" not in output, output
    assert stapled_serial(output) == serial_of(leaf)


def serve_args(leaf: Leaf, response: Path) -> tuple[str, ...]:
    return (
        "--port",
        "0",
        "--tls-cert",
        str(leaf.cert),
        "--tls-key",
        str(leaf.key),
        "--tls-ocsp",
        str(response),
        TARGET,
    )


def test_not_der_is_refused(test_ca: CA) -> None:
    leaf = test_ca.issue("server", with_issuer=True)
    response = test_ca.directory / "bad.der"
    response.write_text("-----BEGIN OCSP-----\n")
    assert_clean_usage_error(run(*serve_args(leaf, response)), "not a DER OCSP response", str(response))


def test_empty_and_missing_files_are_refused(test_ca: CA) -> None:
    leaf = test_ca.issue("server", with_issuer=True)
    empty = test_ca.directory / "empty.der"
    empty.write_bytes(b"")
    assert_clean_usage_error(run(*serve_args(leaf, empty)), "is empty", str(empty))
    missing = test_ca.directory / "missing.der"
    assert_clean_usage_error(run(*serve_args(leaf, missing)), "cannot read the OCSP response file", str(missing))


def test_oversized_file_is_refused(test_ca: CA) -> None:
    leaf = test_ca.issue("server", with_issuer=True)
    big = test_ca.directory / "big.der"
    big.write_bytes(b"\x30" * (64 * 1024 + 1))
    assert_clean_usage_error(run(*serve_args(leaf, big)), "larger than 64 KiB", str(big))


def test_response_about_another_certificate_is_refused(test_ca: CA) -> None:
    leaf = test_ca.issue("server", with_issuer=True)
    other = test_ca.issue("other", with_issuer=True)
    response = good(test_ca, other, "other")
    assert_clean_usage_error(run(*serve_args(leaf, response)), "not about the certificate", str(response))


def test_revoked_certificate_is_refused(test_ca: CA) -> None:
    leaf = test_ca.issue("server", with_issuer=True)
    response = good(test_ca, leaf, "revoked", status="R")
    assert_clean_usage_error(run(*serve_args(leaf, response)), "revoked", str(response))


def test_unsuccessful_response_is_refused(test_ca: CA) -> None:
    # OCSPResponse { responseStatus unauthorized (6) } with no responseBytes (RFC 6960 §4.2.1).
    leaf = test_ca.issue("server", with_issuer=True)
    response = test_ca.directory / "unauthorized.der"
    response.write_bytes(bytes([0x30, 0x03, 0x0A, 0x01, 0x06]))
    assert_clean_usage_error(run(*serve_args(leaf, response)), "not a successful one", "unauthorized")


def test_more_responses_than_certificates_is_a_usage_error(test_ca: CA) -> None:
    leaf = test_ca.issue("server", with_issuer=True)
    result = run("--port", "0", "--tls-cert", str(leaf.cert), "--tls-key", str(leaf.key),
                 "--tls-ocsp", "a.der", "--tls-ocsp", "b.der", TARGET)  # fmt: skip
    assert_clean_usage_error(result, "--tls-ocsp pairs with --tls-cert")
