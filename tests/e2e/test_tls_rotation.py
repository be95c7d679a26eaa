"""Certificate rotation (issue 18 item 5): SIGHUP's new workers read the certificate and key files again, over
TCP and QUIC. A rotation under load fails no request and new connections see the new certificate; a broken new
certificate (or key, or password) is found by the check the supervisor runs before replacing anyone: one error
line, no worker replaced, the old certificate still served.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pytest
from process_support import wait_for_workers
from tls_files_support import CA, Leaf, encrypt_key

pytest_plugins = ("process_support", "tls_files_support")

if TYPE_CHECKING:
    import ssl
    from collections.abc import Callable
    from pathlib import Path

    from conftest import Server

READY = "ready; worker"
TARGET = "tls_apps:wsgi"


def fetch(server: Server, context: ssl.SSLContext) -> bytes:
    """One request on a fresh TLS connection: the DER certificate the server presented (the response checked)."""
    with (
        socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname="localhost") as sock,
    ):
        der = sock.getpeercert(binary_form=True)
        sock.sendall(b"GET /info HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        response = b""
        while chunk := sock.recv(65536):
            response += chunk
    assert response.startswith(b"HTTP/1.1 200 "), response[:200]
    assert der is not None
    return der


@dataclass
class Rotation:
    """Client threads, each sending requests on fresh TLS connections until stopped, noting the certificate
    each connection saw and every failure."""

    server: Server
    context: ssl.SSLContext
    threads: int = 4
    seen: list[bytes] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _workers: list[threading.Thread] = field(default_factory=list)

    def __enter__(self) -> Rotation:
        for _ in range(self.threads):
            thread = threading.Thread(target=self._loop, daemon=True)
            thread.start()
            self._workers.append(thread)
        return self

    def _loop(self) -> None:
        deadline = time.monotonic() + 60  # bounded even if the test never stops it
        while not self._stop.is_set() and time.monotonic() < deadline:
            try:
                self.seen.append(fetch(self.server, self.context))
            except (OSError, AssertionError) as error:
                self.failures.append(repr(error))

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        for thread in self._workers:
            thread.join(15)


def handovers(server: Server, start: int) -> int:
    return sum(READY in line for line in list(server.stderr.lines)[start:])


def wait_for_handovers(server: Server, count: int, start: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while handovers(server, start) < count:
        if time.monotonic() > deadline:
            pytest.fail(f"expected {count} handovers; stderr:\n{server.excerpt(80)}")
        time.sleep(0.05)


def wait_for_line(server: Server, text: str, start: int, timeout: float = 15.0) -> str:
    line = server.stderr.wait_for(lambda line: text in line, timeout, start)
    if line is None:
        pytest.fail(f"no line with {text!r}; stderr:\n{server.excerpt(80)}")
    return line


def install(leaf: Leaf, cert: Path, key: Path) -> None:
    """Replaces the served files with `leaf`'s, each by rename (as certbot's symlink switch is atomic)."""
    for source, target in ((leaf.cert, cert), (leaf.key, key)):
        temporary = target.with_suffix(".new")
        temporary.write_bytes(source.read_bytes())
        temporary.replace(target)


def errors_since(server: Server, start: int) -> list[str]:
    return [line for line in list(server.stderr.lines)[start:] if "[ERROR]" in line or "error:" in line]


@pytest.fixture
def rotating(test_ca: CA, tmp_path: Path) -> tuple[Leaf, Leaf, Path, Path]:
    """Two certificates for localhost from the test CA, the first one installed at the served paths."""
    old, new = test_ca.issue("old"), test_ca.issue("new")
    cert, key = tmp_path / "served.pem", tmp_path / "served.key"
    install(old, cert, key)
    return old, new, cert, key


@pytest.mark.timeout(120)
def test_rotation_under_load_fails_no_request_and_serves_the_new_certificate(
    serve: Callable[..., Server], test_ca: CA, rotating: tuple[Leaf, Leaf, Path, Path]
) -> None:
    old, new, cert, key = rotating
    server = serve(TARGET, "--workers", "2", "--tls-cert", str(cert), "--tls-key", str(key))
    wait_for_workers(server, 2)
    context = test_ca.client_context()
    assert fetch(server, context) == old.der
    mark = len(server.stderr.lines)
    with Rotation(server, context) as load:
        time.sleep(0.5)
        install(new, cert, key)
        os.kill(server.pid, signal.SIGHUP)
        wait_for_handovers(server, 2, mark)
        wait_for_workers(server, 2)
        time.sleep(0.5)
    assert load.failures == [], load.failures[:5]
    assert len(load.seen) > 20
    assert old.der in load.seen
    assert new.der in load.seen
    # Every new connection now meets the new certificate.
    assert {fetch(server, context) for _ in range(20)} == {new.der}
    assert errors_since(server, mark) == []

    # A broken certificate: the check refuses it, one error line, nobody replaced, the new one still served.
    before = wait_for_workers(server, 2)
    mark = len(server.stderr.lines)
    with Rotation(server, context) as load:
        cert.write_text("-----BEGIN CERTIFICATE-----\nbroken\n-----END CERTIFICATE-----\n")
        os.kill(server.pid, signal.SIGHUP)
        line = wait_for_line(server, "no worker replaced", mark)
        time.sleep(2)  # long enough for a crash loop to show itself
    assert str(cert) in line, line
    assert errors_since(server, mark) == [line]
    assert handovers(server, mark) == 0
    assert wait_for_workers(server, 2) == before
    assert load.failures == [], load.failures[:5]
    assert set(load.seen) == {new.der}


def test_mismatched_key_on_sighup_keeps_the_old_workers(
    serve: Callable[..., Server], test_ca: CA, rotating: tuple[Leaf, Leaf, Path, Path]
) -> None:
    old, new, cert, key = rotating
    server = serve(TARGET, "--tls-cert", str(cert), "--tls-key", str(key))
    before = wait_for_workers(server, 1)
    mark = len(server.stderr.lines)
    cert.write_bytes(new.cert.read_bytes())  # the new certificate, the old key
    os.kill(server.pid, signal.SIGHUP)
    line = wait_for_line(server, "no worker replaced", mark)
    assert "does not match" in line, line
    time.sleep(1)
    assert errors_since(server, mark) == [line]
    assert wait_for_workers(server, 1) == before
    assert fetch(server, test_ca.client_context()) == old.der

    # Fixed files and another SIGHUP: the rotation goes through.
    key.write_bytes(new.key.read_bytes())
    mark = len(server.stderr.lines)
    os.kill(server.pid, signal.SIGHUP)
    wait_for_handovers(server, 1, mark)
    wait_for_workers(server, 1, exclude=before)
    assert fetch(server, test_ca.client_context()) == new.der


def test_rotation_to_a_key_under_a_new_password(
    serve: Callable[..., Server], test_ca: CA, rotating: tuple[Leaf, Leaf, Path, Path], tmp_path: Path
) -> None:
    """The password file is read again by the check and the new workers, like the key."""
    old, new, cert, key = rotating
    password = tmp_path / "password"
    encrypt_key(old.key, key, b"first", pkcs8=True)
    password.write_text("first\n")
    server = serve(TARGET, "--tls-cert", str(cert), "--tls-key", str(key), "--tls-key-password-file", str(password))
    before = wait_for_workers(server, 1)
    # The new key under a new password, but the password file not yet changed: refused.
    cert.write_bytes(new.cert.read_bytes())
    encrypt_key(new.key, key, b"second", pkcs8=False)
    mark = len(server.stderr.lines)
    os.kill(server.pid, signal.SIGHUP)
    line = wait_for_line(server, "no worker replaced", mark)
    assert "wrong password" in line, line
    assert fetch(server, test_ca.client_context()) == old.der
    password.write_text("second\n")
    mark = len(server.stderr.lines)
    os.kill(server.pid, signal.SIGHUP)
    wait_for_handovers(server, 1, mark)
    wait_for_workers(server, 1, exclude=before)
    assert fetch(server, test_ca.client_context()) == new.der


@pytest.mark.timeout(90)
def test_http3_workers_serve_the_rotated_certificate(
    serve: Callable[..., Server], test_ca: CA, rotating: tuple[Leaf, Leaf, Path, Path]
) -> None:
    h3client = pytest.importorskip("h3client")
    old, new, cert, key = rotating
    server = serve(TARGET, "--http3", "--tls-cert", str(cert), "--tls-key", str(key))
    before = wait_for_workers(server, 1)

    def quic_certificate() -> bytes:
        client = h3client.H3Client(port=server.port, ca=test_ca.cert)

        async def work(connection: object) -> bytes:
            response = await connection.request("GET", "/info", f"localhost:{server.port}", [], None)  # type: ignore[attr-defined]
            assert response.status == 200
            peer = connection._quic.tls._peer_certificate  # type: ignore[attr-defined]
            return peer.public_bytes(serialization.Encoding.DER)  # type: ignore[no-any-return]

        return client.session(work)  # type: ignore[no-any-return]

    serialization = pytest.importorskip("cryptography.hazmat.primitives.serialization")
    assert quic_certificate() == old.der
    install(new, cert, key)
    mark = len(server.stderr.lines)
    os.kill(server.pid, signal.SIGHUP)
    wait_for_handovers(server, 1, mark)
    wait_for_workers(server, 1, exclude=before)
    assert quic_certificate() == new.der
    assert fetch(server, test_ca.client_context()) == new.der
