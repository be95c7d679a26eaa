"""What a TLS port does with clients that do not complete a handshake (TRANSPORT.md "TLS").

An idle connection is closed after --tls-handshake-timeout; plain HTTP and
random bytes get the connection closed (at most an alert). The worker keeps
serving through all of it.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import TYPE_CHECKING

from tls_support import TLSFiles, client_context, closed_quickly, info, tls_connect

if TYPE_CHECKING:
    from collections.abc import Callable

    from conftest import Server

pytest_plugins = ("tls_support",)


def test_idle_connection_closed_after_handshake_timeout(tls_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    server = tls_server("tls_apps:wsgi", "--tls-handshake-timeout", "500")
    idle = server.connect()
    started = time.monotonic()
    assert closed_quickly(idle, timeout=5.0)
    assert 0.3 < time.monotonic() - started < 4.0
    idle.close()
    assert info(server, client_context(tls_files))["HTTPS"] == "on"


def test_half_a_client_hello_is_closed_after_the_timeout(
    tls_server: Callable[..., Server], tls_files: TLSFiles
) -> None:
    server = tls_server("tls_apps:asgi", "--tls-handshake-timeout", "500")
    stalled = server.connect()
    stalled.sendall(bytes.fromhex("160301020001"))  # a record header and the start of a ClientHello
    assert closed_quickly(stalled, timeout=5.0)
    stalled.close()
    assert info(server, client_context(tls_files))["scheme"] == "https"


def test_plain_http_to_the_tls_port_is_closed(tls_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    server = tls_server("tls_apps:wsgi")
    for _ in range(3):
        plain = server.connect()
        plain.sendall(b"GET /info HTTP/1.1\r\nHost: localhost\r\n\r\n")
        assert closed_quickly(plain)
        plain.close()
    assert info(server, client_context(tls_files))["HTTPS"] == "on"


def test_garbage_to_the_tls_port_is_closed(tls_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    # Bytes that could be the start of a record are waited for: the
    # handshake timeout ends those.
    server = tls_server("tls_apps:wsgi", "--tls-handshake-timeout", "1000")
    for size in (1, 5, 100, 20000):
        garbage = server.connect()
        with contextlib.suppress(ConnectionResetError, BrokenPipeError):
            garbage.sendall(os.urandom(size))
        assert closed_quickly(garbage)
        garbage.close()
    # A valid handshake record header followed by junk.
    junk = server.connect()
    junk.sendall(bytes.fromhex("1603010040") + os.urandom(64))
    assert closed_quickly(junk)
    junk.close()
    assert info(server, client_context(tls_files))["HTTPS"] == "on"


def test_client_that_vanishes_mid_handshake(tls_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    server = tls_server("tls_apps:asgi")
    for _ in range(5):
        sock = server.connect()
        sock.sendall(bytes.fromhex("16030100"))
        sock.close()
    assert info(server, client_context(tls_files))["scheme"] == "https"


def test_bad_request_is_answered_then_closed_cleanly(tls_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    # The error response, our close_notify, then a lingering close that
    # reads what the client still sends.
    server = tls_server("tls_apps:wsgi")
    sock = tls_connect(server, client_context(tls_files))
    sock.sendall(b"GET /info HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\nGET /info HTTP/1.1\r\n")
    received = b""
    while chunk := sock.recv(4096):
        received += chunk
    sock.close()
    assert received.startswith(b"HTTP/1.1 400 ")
    assert b"connection: close" in received
    assert info(server, client_context(tls_files))["HTTPS"] == "on"
