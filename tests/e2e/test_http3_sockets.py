"""`--http3`'s UDP sockets (issue 14 points 2 and 7): bound beside the TCP listener by the supervisor, read by the
workers, and steered per worker by connection ID.

No QUIC is spoken yet: a worker reads every datagram and drops it. What is checked is what the sockets promise
the QUIC layer: the port is held (IPv4, IPv6, dual-stack), `--quic-port` is honoured, garbage costs nothing (HTTPS
over TCP is still served and the worker lives), a taken port or a unix listener is refused with one error line, and
the kernel hands a datagram whose destination connection ID names socket k to the worker reading socket k (seen in
the `--log-level debug` line `UDP socket K: N datagrams`, which carries the worker's pid).
"""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import time
from typing import TYPE_CHECKING

import pytest
from process_support import wait_for_workers
from tls_support import client_context, https_request

from conftest import CRASH_MARKERS, launch

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from tls_support import TLSFiles

    from conftest import Server

pytest_plugins = ("tls_support",)

HTTP3_PORT = re.compile(r"HTTP/3 on UDP port (\d+)")
RECEIVED = re.compile(r"\[(\d+)\] \[DEBUG\] UDP socket (\d+): (\d+) datagrams?")
#: Socket generations per worker slot (Supervision/DatagramGroup.swift).
GENERATIONS = 3


def quic_port(server: Server) -> int:
    line = server.stderr.wait_for(lambda text: HTTP3_PORT.search(text) is not None, 10)
    assert line is not None, server.stderr.text()
    match = HTTP3_PORT.search(line)
    assert match is not None
    return int(match[1])


def udp_port_taken(host: str, port: int) -> bool:
    """Whether a plain UDP socket (no SO_REUSEPORT, so it cannot join the server's group) fails to bind."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


def has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_DGRAM) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def our_cid(socket_index: int, salt: int = 0) -> bytes:
    """A connection ID as the server lays them out (Core/Datagrams/QUICConnectionIDLayout.swift)."""
    return bytes([0x15, socket_index >> 8, socket_index & 0xFF, salt & 0xFF, 2, 3, 4, 5])


def short_header(socket_index: int, salt: int = 0) -> bytes:
    """RFC 9000 §17.3.1: a 1-RTT packet to our connection ID (the rest is not QUIC: it is dropped)."""
    return b"\x41" + our_cid(socket_index, salt) + bytes(40)


def client_initial(dcid: bytes) -> bytes:
    """RFC 9000 §17.2.2: the start of a client Initial with its own DCID, padded to 1200 bytes."""
    head = b"\xc0\x00\x00\x00\x01" + bytes([len(dcid)]) + dcid + b"\x08" + bytes(8)
    return head + bytes(1200 - len(head))


def send(port: int, datagrams: list[bytes], host: str = "127.0.0.1") -> None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as client:
        for datagram in datagrams:
            client.sendto(datagram, (host, port))


def receivers(server: Server, start: int = 0) -> dict[int, set[int]]:
    """Socket index -> the pids that logged receiving on it, from log line `start` on."""
    seen: dict[int, set[int]] = {}
    for line in list(server.stderr.lines)[start:]:
        match = RECEIVED.search(line)
        if match:
            seen.setdefault(int(match[2]), set()).add(int(match[1]))
    return seen


def wait_receivers(server: Server, sockets: set[int], start: int = 0, timeout: float = 10.0) -> dict[int, set[int]]:
    deadline = time.monotonic() + timeout
    while True:
        seen = receivers(server, start)
        if sockets <= seen.keys() or time.monotonic() > deadline:
            return seen
        time.sleep(0.05)


def wait_steered(server: Server, sockets: set[int], timeout: float = 10.0) -> None:
    """Wait until the supervisor's steering sends new connections to exactly `sockets`."""
    wanted = "QUIC: new connections go to UDP sockets " + ",".join(str(s) for s in sorted(sockets))
    assert server.stderr.wait_for(lambda text: text.endswith(wanted), timeout) is not None, server.stderr.text()


def served_over_tls(server: Server, tls_files: TLSFiles) -> None:
    response, sock = https_request(server, client_context(tls_files), "/hello")
    sock.close()
    assert (response.status, response.body) == (200, b"hello")  # type: ignore[attr-defined]


# --- binding -------------------------------------------------------------------------------------


def test_the_udp_port_is_the_tcp_port_by_default(tls_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    server = tls_server("wsgi_apps:app", "--http3")
    assert quic_port(server) == server.port
    assert udp_port_taken("127.0.0.1", server.port)
    served_over_tls(server, tls_files)


def test_quic_port_is_respected(tls_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    port = free_udp_port()
    server = tls_server("wsgi_apps:app", "--http3", "--quic-port", str(port))
    assert quic_port(server) == port
    assert udp_port_taken("127.0.0.1", port)
    served_over_tls(server, tls_files)


def test_without_http3_no_udp_port_is_bound(tls_server: Callable[..., Server]) -> None:
    server = tls_server("wsgi_apps:app")
    assert not udp_port_taken("127.0.0.1", server.port)
    assert "HTTP/3" not in server.stderr.text()


def test_ipv6_loopback(start_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    if not has_ipv6_loopback():
        pytest.skip("no IPv6 loopback on this machine")
    server = start_server("wsgi_apps:app", "--host", "::1", "--port", "0", *tls_files.server_options("--http3"))
    port = quic_port(server)
    assert udp_port_taken("::1", port)
    assert not udp_port_taken("127.0.0.1", port), "::1 is IPv6 only"


def test_wildcard_ipv6_is_one_dual_stack_socket(start_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    if not has_ipv6_loopback():
        pytest.skip("no IPv6 on this machine")
    server = start_server(
        "wsgi_apps:app", "--host", "::", "--port", "0", "--log-level", "debug", *tls_files.server_options("--http3")
    )
    port = quic_port(server)
    assert udp_port_taken("127.0.0.1", port)
    assert udp_port_taken("::1", port)
    # Both families reach the worker's socket (index 0) through the one group.
    before = len(server.stderr.lines)
    send(port, [short_header(0)], host="127.0.0.1")
    assert 0 in wait_receivers(server, {0}, before)
    before = len(server.stderr.lines)
    send(port, [short_header(0)], host="::1")
    assert 0 in wait_receivers(server, {0}, before)


# --- robustness ----------------------------------------------------------------------------------


def test_garbage_datagrams_do_not_harm_the_worker(start_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    server = start_server("wsgi_apps:app", *tls_files.server_options("--http3", "--log-level", "debug"))
    port = quic_port(server)
    garbage = [
        b"",
        b"\x00",
        b"\xff" * 7,
        b"\xc0",  # a long header cut after its first byte
        b"\xc0\x00\x00\x00\x01\xff",  # a DCID length past the datagram
        b"\x40" + bytes(3),  # a short header shorter than a connection ID
        bytes(range(256)) * 4,
        b"\x80" * 1500,
        b"x" * 60_000,  # longer than a receive slot: truncated, dropped
    ]
    for _ in range(3):
        send(port, garbage * 50)
    seen = wait_receivers(server, {0})
    assert 0 in seen, server.stderr.text()
    served_over_tls(server, tls_files)
    server.check_alive()


def test_the_worker_reads_while_it_serves_https(tls_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    server = tls_server("asgi_app:app", "--http3")
    port = quic_port(server)
    for _ in range(20):
        send(port, [client_initial(bytes([n]) * 8) for n in range(20)])
        response, sock = https_request(server, client_context(tls_files), "/")
        sock.close()
        assert response.status == 200
    server.check_alive()


# --- refusals ------------------------------------------------------------------------------------


def run_to_exit(tmp_path: Path, *options: str) -> subprocess.CompletedProcess[str]:
    process, _ = launch("wsgi_apps:app", *options, state=tmp_path)
    try:
        out, err = process.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        pytest.fail(f"peregrine {' '.join(options)} did not exit")
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def one_error_line(result: subprocess.CompletedProcess[str], *mentions: str) -> str:
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("peregrine: error:")]
    assert len(lines) == 1, result.stderr
    for marker in CRASH_MARKERS:
        assert marker not in result.stderr
    for mention in mentions:
        assert mention in lines[0], lines[0]
    return lines[0]


def test_a_taken_udp_port_is_refused(tmp_path: Path, tls_files: TLSFiles) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as holder:
        holder.bind(("127.0.0.1", 0))
        port = holder.getsockname()[1]
        options = tls_files.server_options("--http3", "--quic-port", str(port))
        result = run_to_exit(tmp_path, "--host", "127.0.0.1", "--port", "0", *options)
    one_error_line(result, "UDP", str(port), "in use")


def test_a_taken_udp_port_is_refused_even_in_a_reuseport_group(tmp_path: Path, tls_files: TLSFiles) -> None:
    """Another server's SO_REUSEPORT group (same user) must not be joined: it would get half our datagrams."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as holder:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        holder.bind(("127.0.0.1", 0))
        port = holder.getsockname()[1]
        options = tls_files.server_options("--http3", "--quic-port", str(port))
        result = run_to_exit(tmp_path, "--host", "127.0.0.1", "--port", "0", *options)
    one_error_line(result, "UDP", "in use")


def test_http3_with_a_unix_socket_is_refused(tmp_path: Path, tls_files: TLSFiles) -> None:
    result = run_to_exit(tmp_path, "--unix", str(tmp_path / "s.sock"), *tls_files.server_options("--http3"))
    one_error_line(result, "--http3", "--unix")


# --- steering across workers ---------------------------------------------------------------------


def test_each_datagram_reaches_the_worker_whose_socket_its_connection_id_names(
    start_server: Callable[..., Server], tls_files: TLSFiles
) -> None:
    server = start_server(
        "wsgi_apps:app", "--workers", "2", "--log-level", "debug", *tls_files.server_options("--http3")
    )
    port = quic_port(server)
    wait_for_workers(server, 2)
    wait_steered(server, {0, GENERATIONS})
    # Slot s, generation 0, one thread: socket s * GENERATIONS.
    first, second = 0, GENERATIONS
    before = len(server.stderr.lines)
    send(port, [short_header(first, n) for n in range(5)] + [short_header(second, n) for n in range(5)])
    seen = wait_receivers(server, {first, second}, before)
    assert len(seen.get(first, set())) == 1, seen
    assert len(seen.get(second, set())) == 1, seen
    assert seen[first] != seen[second], "two sockets, two workers"
    # A client's own DCID (a new connection) lands on one of the ready workers' sockets.
    before = len(server.stderr.lines)
    send(port, [client_initial(bytes([0xF0, 1, 2, n, 3, 4, 5, 6])) for n in range(30)])
    time.sleep(0.5)
    assert set(receivers(server, before)) <= {first, second}
    assert set(receivers(server, before)) == {first, second}, "new connections spread over both workers"


def test_after_sighup_new_connections_go_to_the_new_workers(
    start_server: Callable[..., Server], tls_files: TLSFiles
) -> None:
    server = start_server(
        "wsgi_apps:app", "--workers", "2", "--log-level", "debug", *tls_files.server_options("--http3")
    )
    port = quic_port(server)
    old = wait_for_workers(server, 2)
    server.process.send_signal(signal.SIGHUP)
    new = wait_for_workers(server, 2, exclude=old)
    wait_steered(server, {1, GENERATIONS + 1})
    before = len(server.stderr.lines)
    send(port, [client_initial(bytes([0xF0, 1, 2, n, 3, 4, 5, 6])) for n in range(30)])
    # The replacements read generation 1: sockets 1 and GENERATIONS + 1.
    seen = wait_receivers(server, {1, GENERATIONS + 1}, before)
    assert set(seen) == {1, GENERATIONS + 1}, seen
    assert set().union(*seen.values()) <= new
    before = len(server.stderr.lines)
    send(port, [short_header(GENERATIONS + 1)])
    assert wait_receivers(server, {GENERATIONS + 1}, before).get(GENERATIONS + 1, set()) <= new


def test_each_worker_thread_reads_a_socket_of_its_own(
    start_server: Callable[..., Server], tls_files: TLSFiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PEREGRINE_WORKER_CONTEXTS", "2")
    server = start_server("wsgi_apps:app", "--log-level", "debug", *tls_files.server_options("--http3"))
    port = quic_port(server)
    before = len(server.stderr.lines)
    # One process, two contexts: block 0 is sockets 0 and 1.
    send(port, [short_header(0), short_header(1)])
    seen = wait_receivers(server, {0, 1}, before)
    assert set(seen) == {0, 1}, seen
    assert seen[0] == seen[1], "the same process"
    # New connections spread over both threads' sockets.
    before = len(server.stderr.lines)
    send(port, [client_initial(bytes([0xF0, 1, 2, n, 3, 4, 5, 6])) for n in range(30)])
    assert set(wait_receivers(server, {0, 1}, before)) == {0, 1}
    served_over_tls(server, tls_files)
