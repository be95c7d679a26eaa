"""A small HTTP/1.x client over a raw socket: send exact bytes, parse exact responses.

Malformed requests cannot go through http.client or httpx, and framing checks
(chunk sizes, close-delimited bodies, what follows a response on the same
connection) need the bytes as they came. `RawConnection` keeps one receive
buffer so pipelined responses are parsed one after another.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import socket

    from conftest import Server


class ConnectionClosedError(Exception):
    """The server closed the connection before a complete response."""

    def __init__(self, message: str, partial: bytes) -> None:
        super().__init__(message)
        self.partial = partial


@dataclass
class Response:
    """One parsed response."""

    version: str
    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes = b""
    chunks: list[bytes] = field(default_factory=list)
    trailers: list[tuple[str, str]] = field(default_factory=list)
    framing: str = "none"  # "length", "chunked", "close" or "none"

    def header(self, name: str) -> str | None:
        """The value of the last header called `name` (case-insensitive), or None."""
        found = None
        for key, value in self.headers:
            if key.lower() == name.lower():
                found = value
        return found

    def header_all(self, name: str) -> list[str]:
        """Every value of header `name`."""
        return [value for key, value in self.headers if key.lower() == name.lower()]


def request(
    method: str,
    target: str,
    headers: list[tuple[str, str]] | None = None,
    body: bytes = b"",
    version: str = "HTTP/1.1",
    host: str | None = "localhost",
) -> bytes:
    """The bytes of a well-formed request; adds Host (unless None) and Content-Length for a body."""
    lines = [f"{method} {target} {version}"]
    names = {name.lower() for name, _ in headers or []}
    if host is not None and "host" not in names:
        lines.append(f"Host: {host}")
    lines.extend(f"{name}: {value}" for name, value in headers or [])
    if body and "content-length" not in names and "transfer-encoding" not in names:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def chunked(*pieces: bytes, trailers: list[tuple[str, str]] | None = None) -> bytes:
    """A chunked body of `pieces` (each a chunk), the last chunk and optional trailers."""
    out = b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces if piece)
    out += b"0\r\n"
    out += b"".join(f"{name}: {value}\r\n".encode("latin-1") for name, value in trailers or [])
    return out + b"\r\n"


class RawConnection:
    """One client connection with a receive buffer."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""
        self.eof = False

    @classmethod
    def to(cls, server: Server, timeout: float = 10.0) -> RawConnection:
        """Connect to `server`."""
        return cls(server.connect(timeout))

    def __enter__(self) -> RawConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the client socket."""
        self.sock.close()

    def send(self, data: bytes) -> None:
        """Send all of `data`."""
        self.sock.sendall(data)

    def _fill(self) -> bool:
        """Receive more bytes into the buffer; False at EOF (or reset)."""
        if self.eof:
            return False
        try:
            data = self.sock.recv(65536)
        except (ConnectionResetError, BrokenPipeError):
            data = b""
        if not data:
            self.eof = True
            return False
        self.buffer += data
        return True

    def _take(self, count: int) -> bytes:
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def read_line(self) -> bytes:
        """Up to and including the next CRLF."""
        while b"\r\n" not in self.buffer:
            if not self._fill():
                raise ConnectionClosedError("closed before a line ended", self.buffer)
        index = self.buffer.index(b"\r\n") + 2
        return self._take(index)

    def read_exactly(self, count: int) -> bytes:
        """Exactly `count` bytes."""
        while len(self.buffer) < count:
            if not self._fill():
                raise ConnectionClosedError(f"closed after {len(self.buffer)} of {count} bytes", self.buffer)
        return self._take(count)

    def read_until_close(self, timeout: float = 10.0) -> bytes:
        """Everything until the server closes the connection."""
        self.sock.settimeout(timeout)
        while self._fill():
            pass
        return self._take(len(self.buffer))

    def read_head(self) -> Response:
        """Status line and header fields of the next response (1xx included)."""
        status_line = self.read_line().decode("latin-1").rstrip("\r\n")
        version, _, rest = status_line.partition(" ")
        code, _, reason = rest.partition(" ")
        headers = []
        while True:
            line = self.read_line()
            if line == b"\r\n":
                break
            name, _, value = line.decode("latin-1").rstrip("\r\n").partition(":")
            headers.append((name, value.strip(" \t")))
        return Response(version=version, status=int(code), reason=reason, headers=headers)

    def read_response(self, method: str = "GET", *, skip_informational: bool = True) -> Response:
        """The next complete response (1xx skipped unless asked), framed per RFC 9112 §6.3."""
        while True:
            response = self.read_head()
            if not (skip_informational and 100 <= response.status < 200):
                break
        if method == "HEAD" or response.status in (204, 304) or 100 <= response.status < 200:
            response.framing = "none"
            return response
        transfer_encoding = response.header("Transfer-Encoding")
        length = response.header("Content-Length")
        if transfer_encoding is not None and transfer_encoding.lower().endswith("chunked"):
            response.framing = "chunked"
            self._read_chunked(response)
        elif length is not None:
            response.framing = "length"
            response.body = self.read_exactly(int(length))
        else:
            response.framing = "close"
            response.body = self.read_until_close()
        return response

    def _read_chunked(self, response: Response) -> None:
        while True:
            size_line = self.read_line().decode("latin-1").rstrip("\r\n")
            size = int(size_line.split(";", 1)[0], 16)
            if size == 0:
                break
            data = self.read_exactly(size)
            if self.read_exactly(2) != b"\r\n":
                raise AssertionError(f"chunk of {size} bytes not followed by CRLF")
            response.chunks.append(data)
        while True:
            line = self.read_line()
            if line == b"\r\n":
                break
            name, _, value = line.decode("latin-1").rstrip("\r\n").partition(":")
            response.trailers.append((name, value.strip()))
        response.body = b"".join(response.chunks)

    def closed_by_server(self, timeout: float = 5.0) -> bool:
        """Whether the server closes the connection (EOF or reset) within `timeout`, no more data first."""
        self.sock.settimeout(timeout)
        try:
            while self._fill():
                pass
        except TimeoutError:
            return False
        return True

    def still_open_after(self, seconds: float) -> bool:
        """True if nothing arrives and the connection is not closed for `seconds`."""
        self.sock.settimeout(seconds)
        try:
            data = self.sock.recv(65536)
        except TimeoutError:
            return True
        except ConnectionResetError:
            return False
        self.buffer += data
        return False


def exchange(server: Server, data: bytes, method: str = "GET") -> tuple[Response, RawConnection]:
    """Send `data` on a new connection and read one response; returns the open connection too."""
    connection = RawConnection.to(server)
    connection.send(data)
    return connection.read_response(method), connection


def get(server: Server, target: str = "/hello") -> Response:
    """A normal GET on a new connection."""
    with RawConnection.to(server) as connection:
        connection.send(request("GET", target))
        return connection.read_response()


def assert_still_serving(server: Server) -> None:
    """The server answers a normal request on a new connection."""
    response = get(server, "/hello")
    assert (response.status, response.body) == (200, b"hello")


def wait_until(predicate: object, timeout: float = 5.0) -> bool:
    """Poll a zero-argument callable until it is true."""
    assert callable(predicate)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return bool(predicate())
