"""Clients that vanish (tests/e2e/test_abrupt_clients.py): each kind stops at one point of a request or response
and then either resets the connection (SO_LINGER 0, so close() sends RST) or half-closes it (shutdown(SHUT_WR):
the server reads EOF, the client could still read).

Every kind takes the server, a request ID (the application records what it saw under it, tests/apps/abrupt_apps.py)
and the way to vanish. `Log` collects those records over a kept-alive control connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import socket
import ssl
import struct
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import h2.config
import h2.connection
from rawhttp import ConnectionClosedError, RawConnection, request
from websocket_support import frame, new_key, upgrade_headers

if TYPE_CHECKING:
    from collections.abc import Callable

    from conftest import Server

RESET = "reset"
HALF_CLOSE = "half-close"
HOWS = (RESET, HALF_CLOSE)

#: What the request declares; every kind stops well before it.
BODY_LENGTH = 100_000


def vanish(sock: socket.socket, how: str) -> None:
    """Reset the connection, or half-close it, wait for the server to close its side (≤ 10 s), then close."""
    if how == RESET:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
        return
    if isinstance(sock, ssl.SSLSocket):
        # A TLS half-close is a TCP FIN under the record layer (no close_notify): unwrap would send one.
        raw = socket.socket(fileno=sock.detach())
        raw.shutdown(socket.SHUT_WR)
        sock = raw
    else:
        sock.shutdown(socket.SHUT_WR)
    sock.settimeout(10)
    deadline = time.monotonic() + 10
    try:
        while time.monotonic() < deadline and sock.recv(65536):
            pass
    except OSError:
        pass
    sock.close()


@dataclass
class Log:
    """Reads the application's records (`/log?id=`) over one kept-alive connection."""

    server: Server
    #: Over TLS when the server serves TLS.
    tls: ssl.SSLContext | None = None
    seen: dict[str, list[str]] = field(default_factory=dict)
    connection: RawConnection | None = None

    def _connect(self) -> RawConnection:
        sock = self.server.connect()
        if self.tls is not None:
            sock = self.tls.wrap_socket(sock, server_hostname="localhost")
        return RawConnection(sock)

    def fetch(self, ident: str) -> list[str]:
        if self.connection is None:
            self.connection = self._connect()
        try:
            self.connection.send(request("GET", f"/log?id={ident}"))
            response = self.connection.read_response()
        except (ConnectionClosedError, OSError):
            # The kept-alive connection idled past --keep-alive while a kind waited (a half-closed client reading
            # a whole streamed response): a new one. The request is idempotent (it only reads and forgets).
            self.connection.close()
            self.connection = self._connect()
            self.connection.send(request("GET", f"/log?id={ident}"))
            response = self.connection.read_response()
        assert response.status == 200, response.status
        entries: list[str] = json.loads(response.body)
        self.seen.setdefault(ident, []).extend(entries)
        return self.seen[ident]

    def wait(self, ident: str, done: Callable[[list[str]], bool], timeout: float = 15.0) -> list[str]:
        """The records of `ident` once `done(records)` holds (fails after `timeout`)."""
        deadline = time.monotonic() + timeout
        while True:
            entries = self.fetch(ident)
            if done(entries):
                return self.seen.pop(ident)
            assert time.monotonic() < deadline, (ident, entries, self.server.excerpt())
            time.sleep(0.005)

    def started(self, ident: str) -> None:
        """Waits until the application was called for `ident` (the record stays for `wait`)."""
        deadline = time.monotonic() + 15
        while "started" not in self.fetch(ident):
            assert time.monotonic() < deadline, (ident, self.server.excerpt())
            time.sleep(0.005)

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None


@dataclass
class Target:
    """Where the abrupt clients connect: the server, and a TLS context when it serves TLS."""

    server: Server
    log: Log
    tls: ssl.SSLContext | None = None
    #: The same trust with ALPN `h2` (RFC 9113 §3.2), for the HTTP/2 kinds over TLS.
    tls_h2: ssl.SSLContext | None = None

    def connect(self, alpn: str | None = None) -> socket.socket:
        sock = self.server.connect()
        context = self.tls_h2 if alpn == "h2" else self.tls
        if context is None:
            return sock
        return context.wrap_socket(sock, server_hostname="localhost")


def upload_head(ident: str, *, chunked: bool = False) -> bytes:
    framing = ("Transfer-Encoding", "chunked") if chunked else ("Content-Length", str(BODY_LENGTH))
    return request("POST", f"/upload?id={ident}", [framing])


# --- HTTP/1.1 -----------------------------------------------------------------------------------------------


def h1_mid_head(target: Target, ident: str, how: str) -> None:
    """Part of a request head (no blank line yet): the application is never called."""
    sock = target.connect()
    sock.sendall(b"POST /upload?id=" + ident.encode() + b" HTTP/1.1\r\nHost: localhost\r\nContent-Le")
    vanish(sock, how)


def h1_mid_body(target: Target, ident: str, how: str) -> None:
    """The head and 1,000 of the declared 100,000 body bytes, once the application runs."""
    sock = target.connect()
    sock.sendall(upload_head(ident) + b"a" * 1000)
    target.log.started(ident)
    vanish(sock, how)


def h1_mid_chunk(target: Target, ident: str, how: str) -> None:
    """A chunked body cut inside its second chunk (RFC 9112 §7.1), once the application runs."""
    sock = target.connect()
    sock.sendall(upload_head(ident, chunked=True) + b"10\r\n" + b"b" * 16 + b"\r\n400\r\n" + b"c" * 100)
    target.log.started(ident)
    vanish(sock, how)


def h1_mid_response(target: Target, ident: str, how: str) -> None:
    """A streamed response (64 MiB): read its head and some body, then vanish while the server writes."""
    sock = target.connect()
    sock.sendall(request("GET", f"/stream?id={ident}"))
    sock.settimeout(10)
    received = 0
    while received < 200_000:
        data = sock.recv(65536)
        assert data, "the stream ended early"
        received += len(data)
    vanish(sock, how)


# --- WebSocket (RFC 6455) -----------------------------------------------------------------------------------


def ws_mid_message(target: Target, ident: str, how: str) -> None:
    """After the handshake, the first fragment of a message and half of a frame of its continuation."""
    sock = target.connect()
    key = new_key()
    sock.sendall(request("GET", f"/ws?id={ident}", upgrade_headers(key)))
    sock.settimeout(10)
    head = b""
    while b"\r\n\r\n" not in head:
        data = sock.recv(4096)
        assert data, head
        head += data
    assert head.startswith(b"HTTP/1.1 101"), head
    target.log.started(ident)
    continuation = frame(0x0, b"d" * 1000, fin=True)
    sock.sendall(frame(0x2, b"e" * 100, fin=False) + continuation[:200])
    vanish(sock, how)


# --- HTTP/2 (RFC 9113) --------------------------------------------------------------------------------------


def _h2_start(target: Target, path: str, *, end_stream: bool, method: str = "POST") -> tuple[socket.socket, int]:
    sock = target.connect("h2")
    connection = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
    connection.initiate_connection()
    connection.send_headers(
        1,
        [
            (":method", method),
            (":scheme", "https" if target.tls else "http"),
            (":authority", "localhost"),
            (":path", path),
            *([("content-length", str(BODY_LENGTH))] if not end_stream else []),
        ],
        end_stream=end_stream,
    )
    sock.sendall(connection.data_to_send())
    return sock, 1


def h2_mid_data(target: Target, ident: str, how: str) -> None:
    """A DATA frame whose header announces 16,384 bytes and only 500 follow (RFC 9113 §6.1)."""
    sock, stream = _h2_start(target, f"/upload?id={ident}", end_stream=False)
    target.log.started(ident)
    header = struct.pack(">I", 16384)[1:] + bytes([0x0, 0x0]) + struct.pack(">I", stream)
    sock.sendall(header + b"f" * 500)
    vanish(sock, how)


def h2_mid_response(target: Target, ident: str, how: str) -> None:
    """A streamed response on stream 1: read some of it (the windows let ~64 KiB out), then vanish."""
    sock, _ = _h2_start(target, f"/stream?id={ident}", end_stream=True, method="GET")
    sock.settimeout(10)
    received = 0
    while received < 30_000:
        data = sock.recv(65536)
        assert data, "the connection ended early"
        received += len(data)
    vanish(sock, how)


# --- TLS ----------------------------------------------------------------------------------------------------


@functools.cache
def _hello_context() -> ssl.SSLContext:
    # Made once: loading the system's CA store takes tens of milliseconds.
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def client_hello() -> bytes:
    """A real ClientHello (RFC 8446 §4.1.2) from Python's OpenSSL, as it would go on the wire."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    engine = _hello_context().wrap_bio(incoming, outgoing, server_hostname="localhost")
    with contextlib.suppress(ssl.SSLWantReadError):
        engine.do_handshake()
    return outgoing.read()


def tls_mid_handshake(target: Target, ident: str, how: str) -> None:
    """The first 100 bytes of a ClientHello, then nothing of the rest."""
    del ident
    sock = target.server.connect()
    sock.sendall(client_hello()[:100])
    vanish(sock, how)


def tls_after_hello(target: Target, ident: str, how: str) -> None:
    """A whole ClientHello, then vanish while the server's flight is in the air."""
    del ident
    sock = target.server.connect()
    sock.sendall(client_hello())
    sock.settimeout(10)
    assert sock.recv(1)  # the ServerHello began
    vanish(sock, how)


# --- HTTP/3 (RFC 9114) over QUIC (RFC 9000), with aioquic -------------------------------------------------


def h3_vanish(target: Target, ident: str, path: str, *, mid_response: bool, quic_port: int, ca: str) -> None:
    """Open a request, and stop sending anything at all (no CONNECTION_CLOSE, no RESET_STREAM): the server
    learns it only from its idle timeout (RFC 9000 §10.1)."""
    from h3client import H3Client  # noqa: PLC0415 (aioquic is optional: only the HTTP/3 kinds need it)

    async def work(connection: object) -> None:
        from h3client import _Protocol  # noqa: PLC0415

        assert isinstance(connection, _Protocol)
        fields = connection.fields(b"POST" if not mid_response else b"GET", path.encode())
        if not mid_response:
            fields.append((b"content-length", str(BODY_LENGTH).encode()))
        stream = connection.open(fields, end_stream=mid_response)
        if not mid_response:
            connection.http.send_data(stream, b"g" * 1000, end_stream=False)
        connection.transmit()
        if mid_response:
            deadline = time.monotonic() + 10
            while len(connection.raw.get(stream, b"")) < 30_000:
                assert time.monotonic() < deadline, "no response data"
                await asyncio.sleep(0.005)
        else:
            await asyncio.to_thread(target.log.started, ident)
        # From now on nothing leaves the client (aioquic still runs its timers, so its own close ends): it has
        # vanished.
        connection._transport.sendto = lambda *_: None  # type: ignore[union-attr,method-assign]

    from pathlib import Path  # noqa: PLC0415

    H3Client(port=quic_port, ca=Path(ca)).session(work)
