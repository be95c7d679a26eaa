"""TLS configuration mistakes stop the server before any worker starts: one `peregrine: error:` line, exit 2."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from test_cli import assert_clean_usage_error, run

if TYPE_CHECKING:
    from pathlib import Path

    from tls_support import TLSFiles

pytest_plugins = ("tls_support",)


def serve(*options: str) -> tuple[str, ...]:
    return ("--port", "0", *options, "tls_apps:wsgi")


def test_missing_certificate(tls_files: TLSFiles, tmp_path: Path) -> None:
    missing = tmp_path / "nope.pem"
    result = run(*serve("--tls-cert", str(missing), "--tls-key", str(tls_files.key)))
    assert_clean_usage_error(result, str(missing), "No such file")
    assert "serving" not in result.stderr  # no worker started


def test_missing_key(tls_files: TLSFiles, tmp_path: Path) -> None:
    missing = tmp_path / "nope.key"
    assert_clean_usage_error(run(*serve("--tls-cert", str(tls_files.cert), "--tls-key", str(missing))), str(missing))


def test_unreadable_key(tls_files: TLSFiles, tmp_path: Path) -> None:
    # A directory cannot be read as a file even by root (a mode-000 file can).
    key = tmp_path / "locked.key"
    key.mkdir()
    assert_clean_usage_error(run(*serve("--tls-cert", str(tls_files.cert), "--tls-key", str(key))), str(key))


@pytest.mark.parametrize(
    "content", [b"", b"not a key\n", b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"]
)
def test_key_that_is_not_a_key(tls_files: TLSFiles, tmp_path: Path, content: bytes) -> None:
    key = tmp_path / "bad.key"
    key.write_bytes(content)
    assert_clean_usage_error(run(*serve("--tls-cert", str(tls_files.cert), "--tls-key", str(key))), str(key))


def test_key_that_is_a_directory(tls_files: TLSFiles, tmp_path: Path) -> None:
    assert_clean_usage_error(run(*serve("--tls-cert", str(tls_files.cert), "--tls-key", str(tmp_path))), str(tmp_path))


def test_certificate_that_is_not_a_certificate(tls_files: TLSFiles, tmp_path: Path) -> None:
    cert = tmp_path / "bad.pem"
    cert.write_text("hello\n")
    assert_clean_usage_error(run(*serve("--tls-cert", str(cert), "--tls-key", str(tls_files.key))), str(cert))


def test_mismatched_key(tls_files: TLSFiles) -> None:
    result = run(*serve("--tls-cert", str(tls_files.cert), "--tls-key", str(tls_files.other_key)))
    assert_clean_usage_error(result, "does not match", str(tls_files.cert), str(tls_files.other_key))


def test_mismatched_second_pair(tls_files: TLSFiles) -> None:
    result = run(
        *serve(*tls_files.server_options("--tls-cert", str(tls_files.sni_cert), "--tls-key", str(tls_files.key)))
    )
    assert_clean_usage_error(result, "does not match", str(tls_files.sni_cert))


def test_certificate_without_key(tls_files: TLSFiles) -> None:
    assert_clean_usage_error(run(*serve("--tls-cert", str(tls_files.cert))), "--tls-key")
    assert_clean_usage_error(run(*serve("--tls-key", str(tls_files.key))), "--tls-cert")


def test_bad_cipher_list(tls_files: TLSFiles) -> None:
    assert_clean_usage_error(run(*serve(*tls_files.server_options("--tls-ciphers", "NOT-A-CIPHER"))), "--tls-ciphers")


def test_bad_ca_file(tls_files: TLSFiles, tmp_path: Path) -> None:
    missing = tmp_path / "ca.pem"
    assert_clean_usage_error(run(*serve(*tls_files.server_options("--tls-ca", str(missing)))), str(missing))


@pytest.mark.parametrize(
    ("options", "mention"),
    [
        (("--tls-client-cert", "required"), "--tls-ca"),
        (("--tls-client-cert", "sometimes"), "--tls-client-cert"),
        (("--tls-handshake-timeout", "0"), "--tls-handshake-timeout"),
    ],
)
def test_bad_client_certificate_options(tls_files: TLSFiles, options: tuple[str, ...], mention: str) -> None:
    assert_clean_usage_error(run(*serve(*tls_files.server_options(*options))), mention)


def test_tls_options_without_a_certificate(tls_files: TLSFiles) -> None:
    assert_clean_usage_error(run(*serve("--tls-ca", str(tls_files.ca))), "--tls-cert")
