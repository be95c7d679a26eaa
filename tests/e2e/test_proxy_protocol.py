"""PROXY protocol v1 and v2: `--proxy-protocol` and `--proxy-allow-ips` (issue 17 item 2).

Every connection from an allowed peer (default 127.0.0.1, ::1, unix) must
begin with a PROXY header (HAProxy's "The PROXY protocol", v1 text line or
v2 binary, detected from the first byte); its source becomes the client,
before TLS and before HTTP/1.1 or HTTP/2. A missing, truncated, malformed or
oversized header closes the connection without an answer and without the
application; the worker serves on. The headers here are built by hand from
the spec, then HAProxy from Debian sends its own (`send-proxy`,
`send-proxy-v2`, `send-proxy-v2-ssl`).
"""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from h2client import H2Client

pytest.register_assert_rewrite("tls_support")
from tls_support import client_context  # noqa: E402

pytest_plugins = ("tls_support",)

if TYPE_CHECKING:
    import ssl
    from collections.abc import Callable, Iterator

    from tls_support import TLSFiles

    from conftest import Server, ServerPool

ASGI = "forwarded_apps:asgi"
WSGI = "forwarded_apps:wsgi"
HAPROXY = Path("/usr/sbin/haproxy")

#: v2 §2.2: the 12-byte signature.
V2_SIGNATURE = b"\r\n\r\n\x00\r\nQUIT\n"
PP2_TYPE_ALPN, PP2_TYPE_AUTHORITY, PP2_TYPE_NOOP, PP2_TYPE_SSL = 0x01, 0x02, 0x04, 0x20
PP2_SUBTYPE_SSL_VERSION = 0x21


def v1(source: str = "203.0.113.9", port: int = 4567, destination: str = "192.0.2.1", dport: int = 443) -> bytes:
    """v1 §2.1: `PROXY TCP4|TCP6 src dst sport dport CRLF`."""
    family = "TCP6" if ":" in source else "TCP4"
    return f"PROXY {family} {source} {destination} {port} {dport}\r\n".encode()


def tlv(kind: int, value: bytes) -> bytes:
    return struct.pack("!BH", kind, len(value)) + value


def v2(
    source: str = "198.51.100.3", port: int = 1234, *, command: int = 0x1, tlvs: bytes = b"", family: int | None = None
) -> bytes:
    """v2 §2.2: signature, version 2 and `command` (0 LOCAL, 1 PROXY), family/protocol, length, addresses, TLVs."""
    if family == 0x00:  # AF_UNSPEC: no addresses
        addresses = b""
        fam = 0x00
    elif ":" in source:
        fam = 0x21  # TCP over IPv6
        addresses = socket.inet_pton(socket.AF_INET6, source) + socket.inet_pton(socket.AF_INET6, "2001:db8::1")
        addresses += struct.pack("!HH", port, 443)
    else:
        fam = 0x11  # TCP over IPv4
        addresses = socket.inet_aton(source) + socket.inet_aton("192.0.2.1") + struct.pack("!HH", port, 443)
    body = addresses + tlvs
    return V2_SIGNATURE + bytes([0x20 | command, fam]) + struct.pack("!H", len(body)) + body


def http_get(host: str = "localhost") -> bytes:
    return f"GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode()


def read_all(sock: socket.socket, timeout: float = 10.0) -> bytes:
    """Everything the server sends until it closes (a reset counts as a close)."""
    sock.settimeout(timeout)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except ConnectionResetError:
        pass
    return data


def body_of(response: bytes) -> dict[str, Any]:
    head, _, body = response.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 "), response[:500]
    answer: dict[str, Any] = json.loads(body)
    return answer


def connect(server: Server) -> socket.socket:
    sock = server.connect()
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def over_h1(server: Server, *pieces: bytes) -> dict[str, Any]:
    """`pieces` (a header, split as the test likes) then one HTTP/1.1 GET; the application's answer."""
    with connect(server) as sock:
        for piece in pieces:
            sock.sendall(piece)
            if len(pieces) > 1:
                time.sleep(0.002)
        sock.sendall(http_get())
        return body_of(read_all(sock))


def over_h2(server: Server, header: bytes, *, tls: ssl.SSLContext | None = None) -> dict[str, Any]:
    with H2Client(server.port, preamble=header, tls=tls) as client:
        response = client.request("GET", "/", authority="localhost")
    assert response.status == 200
    answer: dict[str, Any] = json.loads(bytes(response.body))
    return answer


def client_of(interface: str, answer: dict[str, Any]) -> list[Any] | None:
    if interface == "asgi":
        return answer["client"]  # type: ignore[no-any-return]
    if not answer["REMOTE_ADDR"]:
        return None
    return [answer["REMOTE_ADDR"], int(answer["REMOTE_PORT"])]


def server_of(interface: str, answer: dict[str, Any]) -> list[Any]:
    if interface == "asgi":
        return answer["server"]  # type: ignore[no-any-return]
    return [answer["SERVER_NAME"], int(answer["SERVER_PORT"])]


def refused_without_answer(server: Server, *pieces: bytes, close_after: bool = False) -> bool:
    """Whether the server closes a connection that sends `pieces` without sending a byte back."""
    with connect(server) as sock:
        for piece in pieces:
            sock.sendall(piece)
        if close_after:
            sock.shutdown(socket.SHUT_WR)
        return read_all(sock) == b""


def served(pool: ServerPool, interface: str, *options: str) -> Server:
    return pool.get(ASGI if interface == "asgi" else WSGI, "--proxy-protocol", *options)


INTERFACES = ["asgi", "wsgi"]


# --- The header's source becomes the client -----------------------------------------------------------------


@pytest.mark.parametrize("interface", INTERFACES)
@pytest.mark.parametrize(
    ("header", "client"),
    [
        (v1(), ["203.0.113.9", 4567]),
        (v1("2001:db8::7", 65535, "2001:db8::1"), ["2001:db8::7", 65535]),
        (v2(), ["198.51.100.3", 1234]),
        (v2("2001:db8:0:0:0:0:0:9", 80), ["2001:db8::9", 80]),
    ],
    ids=["v1-tcp4", "v1-tcp6", "v2-inet", "v2-inet6"],
)
def test_the_source_becomes_the_client_over_http1_and_http2(
    server_pool: ServerPool, interface: str, header: bytes, client: list[Any]
) -> None:
    server = served(server_pool, interface)
    for answer in (over_h1(server, header), over_h2(server, header)):
        assert client_of(interface, answer) == client
        # The server side stays the socket's own.
        assert server_of(interface, answer) == ["127.0.0.1", server.port]
        assert answer["proxy_ssl"] is None


@pytest.mark.parametrize("interface", INTERFACES)
@pytest.mark.parametrize("version", ["v1", "v2"])
def test_a_header_split_at_every_byte_is_read_whole(server_pool: ServerPool, interface: str, version: str) -> None:
    server = served(server_pool, interface)
    header = v1() if version == "v1" else v2(tlvs=tlv(PP2_TYPE_AUTHORITY, b"example.com"))
    answer = over_h1(server, *[header[i : i + 1] for i in range(len(header))])
    assert client_of(interface, answer)[0] == ("203.0.113.9" if version == "v1" else "198.51.100.3")  # type: ignore[index]


@pytest.mark.parametrize("interface", INTERFACES)
@pytest.mark.parametrize(
    "header",
    [b"PROXY UNKNOWN\r\n", b"PROXY UNKNOWN 1.2.3.4 5.6.7.8 1 2\r\n", v2(command=0x0), v2(family=0x00)],
    ids=["v1-unknown", "v1-unknown-addresses", "v2-local", "v2-unspec"],
)
def test_local_and_unknown_keep_the_socket_address(server_pool: ServerPool, interface: str, header: bytes) -> None:
    server = served(server_pool, interface)
    client = client_of(interface, over_h1(server, header))
    assert client is not None
    assert client[0] == "127.0.0.1"
    assert client[1] > 0


@pytest.mark.parametrize("interface", INTERFACES)
def test_tlvs_are_skipped_and_the_ssl_tlv_is_noted(server_pool: ServerPool, interface: str) -> None:
    server = served(server_pool, interface)
    # v2 §2.2.5: client bits (PP2_CLIENT_SSL | PP2_CLIENT_CERT_CONN), verify 0, then sub-TLVs.
    ssl_value = bytes([0x03]) + struct.pack("!I", 0) + tlv(PP2_SUBTYPE_SSL_VERSION, b"TLSv1.3")
    tlvs = tlv(PP2_TYPE_ALPN, b"h2") + tlv(PP2_TYPE_NOOP, b"\x00" * 7) + tlv(PP2_TYPE_SSL, ssl_value)
    tlvs += tlv(0xE0, b"custom")  # PP2_TYPE_MIN_CUSTOM: skipped as well
    for answer in (over_h1(server, v2(tlvs=tlvs)), over_h2(server, v2(tlvs=tlvs))):
        assert client_of(interface, answer) == ["198.51.100.3", 1234]
        assert answer["proxy_ssl"] == {"client_ssl": True, "client": 3, "verify": 0}


@pytest.mark.parametrize("interface", INTERFACES)
def test_the_header_comes_before_tls_for_http1_and_http2(
    start_server: Callable[..., Server], tls_files: TLSFiles, interface: str
) -> None:
    server = start_server(ASGI if interface == "asgi" else WSGI, "--proxy-protocol", *tls_files.server_options())
    context = client_context(tls_files, alpn=["http/1.1"])
    with connect(server) as raw:
        raw.sendall(v1("203.0.113.50", 50000))
        with context.wrap_socket(raw, server_hostname="localhost") as sock:
            sock.sendall(http_get())
            answer = body_of(read_all(sock))
    assert client_of(interface, answer) == ["203.0.113.50", 50000]
    answer = over_h2(server, v2("2001:db8::50", 50001), tls=client_context(tls_files, alpn=["h2"]))
    assert client_of(interface, answer) == ["2001:db8::50", 50001]
    assert (answer["http_version"] if interface == "asgi" else answer["SERVER_PROTOCOL"]) in ("2", "HTTP/2")
    # Without the header the ClientHello is not a header: closed, no handshake.
    assert refused_without_answer(server, b"\x16\x03\x01\x00\x05hello")


# --- Refusals -----------------------------------------------------------------------------------------------


REFUSED = {
    "missing": http_get(),
    "h2-preface-instead": b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
    "v1-bad-address": b"PROXY TCP4 203.0.113.300 192.0.2.1 1 2\r\n" + http_get(),
    "v1-bad-port": b"PROXY TCP4 203.0.113.3 192.0.2.1 65536 2\r\n" + http_get(),
    "v1-leading-zero-port": b"PROXY TCP4 203.0.113.3 192.0.2.1 080 2\r\n" + http_get(),
    "v1-family-mismatch": b"PROXY TCP4 2001:db8::1 192.0.2.1 1 2\r\n" + http_get(),
    "v1-bare-lf": b"PROXY TCP4 203.0.113.3 192.0.2.1 1 2\n" + http_get(),
    "v1-over-107-bytes": b"PROXY UNKNOWN " + b"x" * 100 + b"\r\n" + http_get(),
    "v1-lowercase": b"proxy TCP4 203.0.113.3 192.0.2.1 1 2\r\n" + http_get(),
    "v2-bad-version": V2_SIGNATURE + b"\x11\x11\x00\x0c" + b"\x00" * 12 + http_get(),
    "v2-bad-command": V2_SIGNATURE + b"\x22\x11\x00\x0c" + b"\x00" * 12 + http_get(),
    "v2-bad-family": V2_SIGNATURE + b"\x21\x41\x00\x0c" + b"\x00" * 12 + http_get(),
    "v2-short-addresses": V2_SIGNATURE + b"\x21\x21\x00\x0c" + b"\x00" * 12 + http_get(),
    "v2-over-4096": V2_SIGNATURE + b"\x21\x11\x10\x0d" + b"\x00" * 64,
    "v2-tlv-overrun": v2(tlvs=b"\x04\x00\x09abc") + http_get(),
    "v2-short-ssl-tlv": v2(tlvs=tlv(PP2_TYPE_SSL, b"\x01\x00")) + http_get(),
}


@pytest.mark.parametrize("interface", INTERFACES)
@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_bad_header_closes_without_answer_and_the_worker_serves_on(
    server_pool: ServerPool, interface: str, name: str
) -> None:
    server = served(server_pool, interface)
    assert refused_without_answer(server, REFUSED[name])
    assert client_of(interface, over_h1(server, v1())) == ["203.0.113.9", 4567]
    server.check_alive()


@pytest.mark.parametrize("interface", INTERFACES)
@pytest.mark.parametrize("partial", [b"PROXY TCP4 203.0.113.9 192.0.2", V2_SIGNATURE + b"\x21\x11\x00\x0c\x01\x02"])
def test_a_truncated_header_closes_without_answer(server_pool: ServerPool, interface: str, partial: bytes) -> None:
    server = served(server_pool, interface)
    assert refused_without_answer(server, partial, close_after=True)
    assert client_of(interface, over_h1(server, v2())) == ["198.51.100.3", 1234]


def test_a_header_that_never_completes_is_closed_at_the_request_timeout(start_server: Callable[..., Server]) -> None:
    server = start_server(ASGI, "--proxy-protocol", "--request-timeout", "600")
    with connect(server) as sock:
        sock.sendall(b"PROXY TCP4 ")
        started = time.monotonic()
        assert read_all(sock, timeout=10) == b""
        assert 0.4 < time.monotonic() - started < 5


@pytest.mark.parametrize("interface", INTERFACES)
def test_a_peer_not_on_the_list_is_served_directly_and_its_header_refused(
    server_pool: ServerPool, interface: str
) -> None:
    server = served(server_pool, interface, "--proxy-allow-ips", "10.0.0.0/8, ::1")
    answer = body_of(refused_or_response(server, http_get()))
    assert client_of(interface, answer)[0] == "127.0.0.1"  # type: ignore[index]
    # Nobody off the list may claim to relay a client.
    assert refused_without_answer(server, v1() + http_get())
    assert refused_without_answer(server, v2() + http_get())


def refused_or_response(server: Server, data: bytes) -> bytes:
    with connect(server) as sock:
        sock.sendall(data)
        return read_all(sock)


def test_a_unix_socket_peer_sends_the_header_by_default(
    start_server: Callable[..., Server], tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = tmp_path_factory.mktemp("unix") / "s.sock"
    start_server(ASGI, "--proxy-protocol", "--unix", str(path))
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(str(path))
        sock.sendall(v1("203.0.113.77", 7777) + http_get())
        answer = body_of(read_all(sock))
    assert answer["client"] == ["203.0.113.77", 7777]
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(str(path))
        sock.sendall(http_get())
        assert read_all(sock) == b""


def test_the_access_log_shows_the_relayed_client(start_server: Callable[..., Server]) -> None:
    server = start_server(ASGI, "--proxy-protocol", "--access-log")
    over_h1(server, v1("203.0.113.99", 9999))
    assert server.stdout.wait_for(lambda line: "203.0.113.99" in line, 10) is not None


# --- A real sender: HAProxy ---------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def haproxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], int]]:
    """`haproxy(backend_and_frontend_lines)`: HAProxy in TCP mode on a free port, in the foreground; the port."""
    assert HAPROXY.exists(), "these tests run HAProxy in front of peregrine: install Debian's haproxy"
    processes: list[subprocess.Popen[bytes]] = []

    def run(proxy: str) -> int:
        port = free_port()
        directory = tmp_path_factory.mktemp("haproxy")
        config = directory / "haproxy.cfg"
        config.write_text(
            "global\n  log stderr format raw local0 warning\n"
            "defaults\n  mode tcp\n  timeout connect 5s\n  timeout client 30s\n  timeout server 30s\n"
            + proxy.replace("PORT", str(port))
        )
        process = subprocess.Popen([str(HAPROXY), "-db", "-f", str(config)], stderr=subprocess.PIPE)
        processes.append(process)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                return port
            except OSError:
                assert process.poll() is None, process.communicate()[1]
                assert time.monotonic() < deadline, "haproxy did not start listening"
                time.sleep(0.05)

    yield run
    for process in processes:
        process.terminate()
        process.wait(timeout=10)


def through(port: int, data: bytes, *, context: ssl.SSLContext | None = None) -> bytes:
    """`data` to HAProxy from 127.0.0.2 (so the client HAProxy sees is not the address it connects from)."""
    with socket.socket() as raw:
        raw.bind(("127.0.0.2", 0))
        raw.settimeout(10)
        raw.connect(("127.0.0.1", port))
        if context is None:
            raw.sendall(data)
            return read_all(raw)
        with context.wrap_socket(raw, server_hostname="localhost") as sock:
            sock.sendall(data)
            return read_all(sock)


@pytest.mark.parametrize("interface", INTERFACES)
@pytest.mark.parametrize("send", ["send-proxy", "send-proxy-v2"])
def test_behind_haproxy_the_client_is_the_one_haproxy_saw(
    server_pool: ServerPool, haproxy: Callable[[str], int], interface: str, send: str
) -> None:
    server = served(server_pool, interface)
    port = haproxy(
        f"frontend f\n  bind 127.0.0.1:PORT\n  default_backend b\n"
        f"backend b\n  server s 127.0.0.1:{server.port} {send}\n"
    )
    answer = body_of(through(port, http_get()))
    client = client_of(interface, answer)
    assert client is not None
    assert client[0] == "127.0.0.2"
    assert client[1] > 0
    # HTTP/2 with prior knowledge through the same TCP relay.
    h2_answer = h2_through(port)
    assert client_of(interface, h2_answer)[0] == "127.0.0.2"  # type: ignore[index]


def h2_through(port: int) -> dict[str, Any]:
    original = socket.create_connection

    def from_127_0_0_2(address: tuple[str, int], timeout: float | None = None, **_: Any) -> socket.socket:  # noqa: ANN401
        return original(address, timeout=timeout, source_address=("127.0.0.2", 0))

    socket.create_connection = from_127_0_0_2  # type: ignore[assignment]
    try:
        with H2Client(port) as client:
            response = client.request("GET", "/", authority="localhost")
    finally:
        socket.create_connection = original
    assert response.status == 200
    answer: dict[str, Any] = json.loads(bytes(response.body))
    return answer


@pytest.mark.parametrize("interface", INTERFACES)
def test_behind_haproxy_passing_tls_through(
    start_server: Callable[..., Server], haproxy: Callable[[str], int], tls_files: TLSFiles, interface: str
) -> None:
    server = start_server(ASGI if interface == "asgi" else WSGI, "--proxy-protocol", *tls_files.server_options())
    port = haproxy(
        "frontend f\n  bind 127.0.0.1:PORT\n  default_backend b\n"
        f"backend b\n  server s 127.0.0.1:{server.port} send-proxy-v2\n"
    )
    answer = body_of(through(port, http_get(), context=client_context(tls_files, alpn=["http/1.1"])))
    assert client_of(interface, answer)[0] == "127.0.0.2"  # type: ignore[index]


@pytest.mark.parametrize("interface", INTERFACES)
def test_behind_haproxy_terminating_tls_the_ssl_tlv_is_noted(
    server_pool: ServerPool,
    haproxy: Callable[[str], int],
    tls_files: TLSFiles,
    tmp_path_factory: pytest.TempPathFactory,
    interface: str,
) -> None:
    server = served(server_pool, interface)
    bundle = tmp_path_factory.mktemp("haproxy-tls") / "bundle.pem"
    bundle.write_text(tls_files.cert.read_text() + tls_files.key.read_text())
    port = haproxy(
        f"frontend f\n  bind 127.0.0.1:PORT ssl crt {bundle}\n  default_backend b\n"
        f"backend b\n  server s 127.0.0.1:{server.port} send-proxy-v2-ssl\n"
    )
    answer = body_of(through(port, http_get(), context=client_context(tls_files)))
    assert client_of(interface, answer)[0] == "127.0.0.2"  # type: ignore[index]
    assert answer["proxy_ssl"]["client_ssl"] is True
    assert answer["proxy_ssl"]["client"] & 0x01
