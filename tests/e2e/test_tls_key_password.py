"""Encrypted private keys (issue 18 item 5): `--tls-key-password-file PATH` (its first line) or
`--tls-key-password TEXT` decrypts every key, PKCS#8 and traditional PEM alike, over TCP and QUIC. A wrong or
missing password is one `peregrine: error:` line and exit 2, before any worker starts; the server never prompts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from test_cli import assert_clean_usage_error, run
from tls_files_support import encrypt_key
from tls_support import client_context, exchange, info, tls_connect

pytest_plugins = ("tls_support", "tls_files_support")

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from tls_support import TLSFiles

    from conftest import Server

TARGET = "tls_apps:wsgi"
PASSWORD = b"correct horse battery staple"


def serve(*options: str) -> tuple[str, ...]:
    return ("--port", "0", *options, TARGET)


@pytest.fixture(params=["pkcs8", "traditional"])
def encrypted_key(request: pytest.FixtureRequest, tls_files: TLSFiles, tmp_path: Path) -> Path:
    """The default pair's key under PASSWORD, in either encrypted PEM form."""
    return encrypt_key(tls_files.key, tmp_path / "server.key", PASSWORD, pkcs8=request.param == "pkcs8")


def password_file(tmp_path: Path, content: bytes) -> Path:
    path = tmp_path / "password"
    path.write_bytes(content)
    return path


@pytest.mark.parametrize("ending", [b"\n", b"\r\n", b"", b"\nsecond line is ignored\n"])
def test_password_file_first_line_decrypts_the_key(
    start_server: Callable[..., Server], tls_files: TLSFiles, encrypted_key: Path, tmp_path: Path, ending: bytes
) -> None:
    secret = password_file(tmp_path, PASSWORD + ending)
    server = start_server(
        TARGET,
        "--tls-cert",
        str(tls_files.cert),
        "--tls-key",
        str(encrypted_key),
        "--tls-key-password-file",
        str(secret),
    )
    assert info(server, client_context(tls_files))["wsgi.url_scheme"] == "https"


def test_password_on_the_command_line(
    start_server: Callable[..., Server], tls_files: TLSFiles, encrypted_key: Path
) -> None:
    server = start_server(
        TARGET,
        "--tls-cert",
        str(tls_files.cert),
        "--tls-key",
        str(encrypted_key),
        "--tls-key-password",
        PASSWORD.decode(),
    )
    assert info(server, client_context(tls_files))["wsgi.url_scheme"] == "https"


def test_password_applies_to_every_key(
    start_server: Callable[..., Server], tls_files: TLSFiles, tmp_path: Path
) -> None:
    first = encrypt_key(tls_files.key, tmp_path / "a.key", PASSWORD, pkcs8=True)
    second = encrypt_key(tls_files.sni_key, tmp_path / "b.key", PASSWORD, pkcs8=False)
    server = start_server(
        TARGET,
        "--tls-cert", str(tls_files.cert), "--tls-key", str(first),
        "--tls-cert", str(tls_files.sni_cert), "--tls-key", str(second),
        "--tls-key-password-file", str(password_file(tmp_path, PASSWORD + b"\n")),
    )  # fmt: skip
    context = client_context(tls_files)
    assert info(server, context)["wsgi.url_scheme"] == "https"
    sock = tls_connect(server, context, hostname="exact.test")
    try:
        assert exchange(sock, "GET", "/info").status == 200
    finally:
        sock.close()


def test_unencrypted_key_ignores_the_password(start_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    server = start_server(TARGET, *tls_files.server_options("--tls-key-password", "unused"))
    assert info(server, client_context(tls_files))["wsgi.url_scheme"] == "https"


def test_http3_loads_the_encrypted_key_too(
    start_server: Callable[..., Server], tls_files: TLSFiles, tmp_path: Path
) -> None:
    h3client = pytest.importorskip("h3client")
    key = encrypt_key(tls_files.key, tmp_path / "server.key", PASSWORD, pkcs8=False)
    server = start_server(
        TARGET, "--http3", "--tls-cert", str(tls_files.cert), "--tls-key", str(key),
        "--tls-key-password-file", str(password_file(tmp_path, PASSWORD)),
    )  # fmt: skip
    assert h3client.H3Client(port=server.port, ca=tls_files.ca).request("GET", "/info").status == 200


def test_wrong_password_is_one_error_line(tls_files: TLSFiles, encrypted_key: Path, tmp_path: Path) -> None:
    secret = password_file(tmp_path, b"not it\n")
    result = run(*serve("--tls-cert", str(tls_files.cert), "--tls-key", str(encrypted_key),
                        "--tls-key-password-file", str(secret)))  # fmt: skip
    assert_clean_usage_error(result, "wrong password", str(encrypted_key))
    assert "serving" not in result.stderr


def test_wrong_password_for_the_second_key(tls_files: TLSFiles, tmp_path: Path) -> None:
    """One password for every key: a second key under another one is refused by name."""
    first = encrypt_key(tls_files.key, tmp_path / "a.key", PASSWORD, pkcs8=True)
    second = encrypt_key(tls_files.sni_key, tmp_path / "b.key", b"another", pkcs8=True)
    result = run(*serve("--tls-cert", str(tls_files.cert), "--tls-key", str(first),
                        "--tls-cert", str(tls_files.sni_cert), "--tls-key", str(second),
                        "--tls-key-password", PASSWORD.decode()))  # fmt: skip
    assert_clean_usage_error(result, "wrong password", str(second))


def test_encrypted_key_without_a_password_is_refused_not_prompted(tls_files: TLSFiles, encrypted_key: Path) -> None:
    result = run(*serve("--tls-cert", str(tls_files.cert), "--tls-key", str(encrypted_key)))
    assert_clean_usage_error(result, "is encrypted", str(encrypted_key), "--tls-key-password-file")


def test_missing_password_file(tls_files: TLSFiles, encrypted_key: Path, tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    result = run(*serve("--tls-cert", str(tls_files.cert), "--tls-key", str(encrypted_key),
                        "--tls-key-password-file", str(missing)))  # fmt: skip
    assert_clean_usage_error(result, "--tls-key-password-file", str(missing), "No such file")


@pytest.mark.parametrize("content", [b"", b"\n", b"\r\nsecret\n"])
def test_password_file_with_an_empty_first_line(
    tls_files: TLSFiles, encrypted_key: Path, tmp_path: Path, content: bytes
) -> None:
    secret = password_file(tmp_path, content)
    result = run(*serve("--tls-cert", str(tls_files.cert), "--tls-key", str(encrypted_key),
                        "--tls-key-password-file", str(secret)))  # fmt: skip
    assert_clean_usage_error(result, "the first line is empty", str(secret))


def test_password_file_line_over_the_limit(tls_files: TLSFiles, encrypted_key: Path, tmp_path: Path) -> None:
    secret = password_file(tmp_path, b"x" * 5000 + b"\n")
    result = run(*serve("--tls-cert", str(tls_files.cert), "--tls-key", str(encrypted_key),
                        "--tls-key-password-file", str(secret)))  # fmt: skip
    assert_clean_usage_error(result, "longer than 4096 bytes", str(secret))


def test_both_password_options_are_a_usage_error(tls_files: TLSFiles, tmp_path: Path) -> None:
    result = run(*serve(*tls_files.server_options("--tls-key-password", "a", "--tls-key-password-file", "/p")))
    assert_clean_usage_error(result, "--tls-key-password", "--tls-key-password-file")


def test_password_without_tls_is_a_usage_error() -> None:
    assert_clean_usage_error(run(*serve("--tls-key-password", "a")), "--tls-key-password needs --tls-cert")
