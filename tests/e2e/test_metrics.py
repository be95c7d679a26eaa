"""Prometheus metrics (issue 18 point 1): `--metrics-port` serves `/metrics` from the supervisor.

Every test scrapes with `prometheus_client.parser.text_string_to_metric_families` (so the text must be valid
exposition format 0.0.4) and checks the values against the traffic it sent itself: HTTP/1.1, h2 (prior
knowledge and ALPN), h3, WebSocket, TLS full and resumed handshakes, a 413 and a 431. The counters are summed
over the workers through shared memory, and must never go backwards: not across a SIGHUP (every worker replaced)
nor a `kill -9` of a worker (its counters are folded into the supervisor's retired totals when it is reaped).

Applications: process_apps (`/hello`, 404 elsewhere), ws_apps (`/echo`), tls_apps (`/info`, `/echo`).
"""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import os
import re
import signal
import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import pytest
from h2client import H2Client
from process_support import WSGI, log_after, wait_for_workers, workers
from rawhttp import RawConnection, request
from tls_support import client_context, exchange, tls_connect
from websocket_support import handshake

from conftest import APPS, CRASH_MARKERS
from installed import peregrine_command

parser = pytest.importorskip("prometheus_client.parser")

if TYPE_CHECKING:
    from collections.abc import Callable

    from tls_support import TLSFiles

    from conftest import Server

pytest_plugins = ("tls_support", "process_support")

METRICS_LINE = re.compile(r"metrics on http://(?:\[[^\]]+\]|[^\s:/]+):(\d+)/metrics")

#: The documented upper bounds of the request-duration histogram (CONFIG.md).
BUCKETS = [
    "0.0005",
    "0.001",
    "0.0025",
    "0.005",
    "0.01",
    "0.025",
    "0.05",
    "0.1",
    "0.25",
    "0.5",
    "1",
    "2.5",
    "5",
    "10",
    "+Inf",
]

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def metrics_port(server: Server) -> int:
    line = server.stderr.wait_for(lambda text: METRICS_LINE.search(text) is not None, 10.0)
    assert line is not None, server.excerpt()
    match = METRICS_LINE.search(line)
    assert match is not None
    return int(match[1])


def get(port: int, method: str = "GET", path: str = "/metrics") -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request(method, path)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def scrape(port: int) -> tuple[Samples, dict[str, str]]:
    """Every sample by (name, labels), and every family's type."""
    status, headers, body = get(port)
    assert status == 200, (status, body)
    assert headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
    samples: Samples = {}
    types: dict[str, str] = {}
    for family in parser.text_string_to_metric_families(body.decode()):
        types[family.name] = family.type
        for sample in family.samples:
            key = (sample.name, frozenset(sample.labels.items()))
            assert key not in samples, f"duplicate sample {key}"
            samples[key] = sample.value
    return samples, types


def value(samples: Samples, name: str, **labels: str) -> float:
    key = (name, frozenset(labels.items()))
    assert key in samples, f"no sample {name}{labels}; have {sorted(k for k in samples if k[0] == name)}"
    return samples[key]


def settled(port: int, expected: dict[tuple[str, frozenset[tuple[str, str]]], float], timeout: float = 10.0) -> Samples:
    """Scrape until every expected sample has its value (a worker counts a request once its response is out)."""
    deadline = time.monotonic() + timeout
    while True:
        samples, _ = scrape(port)
        wrong = {k: (samples.get(k), v) for k, v in expected.items() if samples.get(k) != v}
        if not wrong:
            return samples
        if time.monotonic() > deadline:
            pytest.fail(f"metrics did not settle (sample: (got, expected)): {wrong}")
        time.sleep(0.05)


def key(name: str, **labels: str) -> tuple[str, frozenset[tuple[str, str]]]:
    return (name, frozenset(labels.items()))


def counter_keys(samples: Samples, types: dict[str, str]) -> set[tuple[str, frozenset[tuple[str, str]]]]:
    """The samples that must never decrease: counters and histograms (per-worker CPU ends with its worker)."""
    out = set()
    for k in samples:
        suffixes = ("", "_total", "_bucket", "_count", "_sum")
        family = next((f for f in types if any(k[0] == f + suffix for suffix in suffixes)), None)
        if family is None or family == "peregrine_worker_cpu_seconds":
            continue
        if types[family] in {"counter", "histogram"}:
            out.add(k)
    return out


class Monotonic:
    """Scrapes that check every counter against the previous scrape."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.previous: Samples = {}

    def scrape(self) -> Samples:
        samples, types = scrape(self.port)
        for k in counter_keys(samples, types):
            assert samples[k] >= self.previous.get(k, 0.0), f"{k} went backwards: {self.previous[k]} -> {samples[k]}"
        self.previous = samples
        return samples

    def until(self, expected: dict[tuple[str, frozenset[tuple[str, str]]], float], timeout: float = 20.0) -> Samples:
        deadline = time.monotonic() + timeout
        while True:
            samples = self.scrape()
            if all(samples.get(k) == v for k, v in expected.items()):
                return samples
            if time.monotonic() > deadline:
                pytest.fail(f"metrics did not settle: { {k: (samples.get(k), v) for k, v in expected.items()} }")
            time.sleep(0.05)


def get_hello(port: int, count: int, path: str = "/hello") -> bytes:
    """`count` requests on one connection; the last body."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    body = b""
    for _ in range(count):
        connection.request("GET", path)
        body = connection.getresponse().read()
    connection.close()
    return body


def test_http1_h2_and_refusals_are_counted_across_workers(serve: Callable[..., Server]) -> None:
    server = serve(WSGI, "--workers", "2", "--metrics-port", "0", "--max-body", "1k", "--max-header-size", "4k")
    port = metrics_port(server)
    wait_for_workers(server, 2)
    # Whatever connected before (the fixture's readiness probes) is the base line.
    before = value(scrape(port)[0], "peregrine_connections_total", transport="tcp")
    get_hello(server.port, 5)
    get_hello(server.port, 2, "/nope")
    with H2Client(server.port) as h2:
        for _ in range(3):
            assert h2.request("GET", "/hello").status == 200
    with RawConnection.to(server) as raw:  # 413: the declared length is over --max-body
        raw.send(request("POST", "/hello", [("Content-Length", "5000")]))
        assert raw.read_response("POST").status == 413
    with RawConnection.to(server) as raw:  # 431: the head is over --max-header-size
        raw.send(request("GET", "/hello", [("X-Big", "x" * 5000)]))
        assert raw.read_response().status == 431
    samples = settled(
        port,
        {
            key("peregrine_requests_total", protocol="http/1.1", status="2xx"): 5,
            key("peregrine_requests_total", protocol="http/1.1", status="4xx"): 2,
            key("peregrine_requests_total", protocol="h2", status="2xx"): 3,
            key("peregrine_request_duration_seconds_count", protocol="http/1.1"): 7,
            key("peregrine_request_duration_seconds_bucket", protocol="h2", le="+Inf"): 3,
            key("peregrine_http2_streams_total"): 3,
            key("peregrine_rejected_requests_total", reason="413"): 1,
            key("peregrine_rejected_requests_total", reason="431"): 1,
            key("peregrine_rejected_requests_total", reason="400"): 0,
            key("peregrine_connections_total", transport="tcp"): before + 5,
            key("peregrine_connections_in_flight", transport="tcp"): 0,
            key("peregrine_requests_in_flight", protocol="http/1.1"): 0,
            key("peregrine_worker_starts_total"): 2,
            key("peregrine_worker_restarts_total"): 0,
            key("peregrine_workers", state="ready"): 2,
        },
    )
    _, types = scrape(port)
    assert types["peregrine_requests"] == "counter"  # the parser names counter families without `_total`
    assert types["peregrine_request_duration_seconds"] == "histogram"
    assert types["peregrine_requests_in_flight"] == "gauge"
    buckets = [
        value(samples, "peregrine_request_duration_seconds_bucket", protocol="http/1.1", le=le) for le in BUCKETS
    ]
    assert buckets == sorted(buckets), buckets  # cumulative
    assert 0 < value(samples, "peregrine_request_duration_seconds_sum", protocol="http/1.1") < 7 * 10
    # The 431's head was read up to --max-header-size at least.
    assert value(samples, "peregrine_received_bytes_total", transport="tcp") > 4096
    assert value(samples, "peregrine_sent_bytes_total", transport="tcp") >= 3 * len(b"hello")
    assert value(samples, "peregrine_tls_handshakes_total", transport="tcp", result="full") == 0
    per_worker = [dict(labels) for name, labels in samples if name == "peregrine_worker_resident_memory_bytes"]
    assert {int(labels["pid"]) for labels in per_worker} == workers(server)
    assert sorted(labels["worker"] for labels in per_worker) == ["0", "1"]
    for labels in per_worker:
        assert value(samples, "peregrine_worker_resident_memory_bytes", **labels) > 1 << 20
        assert value(samples, "peregrine_worker_cpu_seconds_total", **labels) >= 0
    (build,) = [dict(labels) for name, labels in samples if name == "peregrine_build_info"]
    assert build["version"] == run("--version").stdout.split()[-1]
    assert re.fullmatch(r"3\.\d+\.\d+", build["python"]), build


def test_websocket_messages_and_the_conversation_are_counted(serve: Callable[..., Server]) -> None:
    server = serve("ws_apps:app", "--metrics-port", "0")
    port = metrics_port(server)
    ws = handshake(server, "/echo")
    for text in ["one", "two", "three"]:
        ws.send_text(text)
        assert ws.read_text() == text
    settled(
        port,
        {
            key("peregrine_websocket_messages_total", direction="in"): 3,
            key("peregrine_websocket_messages_total", direction="out"): 3,
            key("peregrine_requests_in_flight", protocol="websocket"): 1,
            key("peregrine_connections_in_flight", transport="tcp"): 1,
        },
    )
    ws.send_close(1000)
    ws.expect_close()
    ws.raw.close()
    settled(
        port,
        {
            key("peregrine_requests_in_flight", protocol="websocket"): 0,
            key("peregrine_requests_total", protocol="websocket", status="1xx"): 1,
            key("peregrine_request_duration_seconds_count", protocol="websocket"): 1,
            key("peregrine_connections_in_flight", transport="tcp"): 0,
        },
    )


def test_counters_never_go_backwards_across_sighup_and_kill_9(serve: Callable[..., Server]) -> None:
    server = serve(WSGI, "--workers", "2", "--metrics-port", "0")
    port = metrics_port(server)
    first = wait_for_workers(server, 2)
    scrapes = Monotonic(port)
    watched = counter_keys(*scrape(port))
    assert key("peregrine_requests_total", protocol="http/1.1", status="2xx") in watched
    assert key("peregrine_request_duration_seconds_bucket", protocol="h2", le="+Inf") in watched
    assert key("peregrine_requests_in_flight", protocol="http/1.1") not in watched
    get_hello(server.port, 10)
    scrapes.until({key("peregrine_requests_total", protocol="http/1.1", status="2xx"): 10})

    mark = len(server.stderr.lines)
    os.kill(server.pid, signal.SIGHUP)
    for _ in range(2):
        assert log_after(server, r"worker \d+ ready; worker \d+ draining", mark, timeout=20) is not None
        mark = next(i for i in range(mark, len(server.stderr.lines)) if "draining" in server.stderr.lines[i]) + 1
    second = wait_for_workers(server, 2, timeout=30, exclude=first)
    scrapes.until(
        {
            key("peregrine_worker_exits_total", cause="replaced"): 2,
            key("peregrine_requests_total", protocol="http/1.1", status="2xx"): 10,
            key("peregrine_worker_restarts_total"): 2,
        }
    )
    # The victim is the worker that served these: its counts must outlive it.
    victim = int(get_hello(server.port, 5, "/pid"))
    assert victim in second
    scrapes.until({key("peregrine_requests_total", protocol="http/1.1", status="2xx"): 15})

    os.kill(victim, signal.SIGKILL)
    wait_for_workers(server, 2, timeout=30, exclude={victim})
    samples = scrapes.until(
        {
            key("peregrine_worker_exits_total", cause="signal"): 1,
            key("peregrine_worker_starts_total"): 5,
            key("peregrine_worker_restarts_total"): 3,
            key("peregrine_requests_total", protocol="http/1.1", status="2xx"): 15,
            key("peregrine_request_duration_seconds_count", protocol="http/1.1"): 15,
            key("peregrine_connections_total", transport="tcp"): 2,
            key("peregrine_requests_in_flight", protocol="http/1.1"): 0,
        }
    )
    shown = {dict(labels)["pid"] for name, labels in samples if name == "peregrine_worker_resident_memory_bytes"}
    assert str(victim) not in shown
    get_hello(server.port, 1)
    scrapes.until({key("peregrine_requests_total", protocol="http/1.1", status="2xx"): 16})


def test_tls_handshakes_alpn_h2_and_h3_are_counted(serve: Callable[..., Server], tls_files: TLSFiles) -> None:
    h3client = pytest.importorskip("h3client")
    server = serve("tls_apps:asgi", *tls_files.server_options("--http3", "--metrics-port", "0"))
    port = metrics_port(server)
    context = client_context(tls_files)
    sock = tls_connect(server, context)
    assert exchange(sock, "GET", "/info").status == 200
    session = sock.session
    sock.close()
    resumed = tls_connect(server, context, session=session)
    assert resumed.session_reused
    assert exchange(resumed, "GET", "/info").status == 200
    resumed.close()
    h2_context = client_context(tls_files, alpn=["h2"])
    with H2Client(server.port, tls=h2_context) as h2:
        assert h2.request("GET", "/info").status == 200
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as plain:  # not TLS: a failed handshake
        plain.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        with contextlib.suppress(OSError):
            plain.recv(100)

    client = h3client.H3Client(port=server.port, ca=tls_files.ca)

    async def one() -> int:
        async with client.open() as c:
            response = await c.request("GET", "/info", f"localhost:{server.port}", [], None)
            return int(response.status)

    assert asyncio.run(asyncio.wait_for(one(), 30)) == 200
    samples = settled(
        port,
        {
            key("peregrine_tls_handshakes_total", transport="tcp", result="full"): 2,
            key("peregrine_tls_handshakes_total", transport="tcp", result="resumed"): 1,
            key("peregrine_tls_handshakes_total", transport="tcp", result="failed"): 1,
            key("peregrine_tls_handshakes_total", transport="quic", result="full"): 1,
            key("peregrine_requests_total", protocol="http/1.1", status="2xx"): 2,
            key("peregrine_requests_total", protocol="h2", status="2xx"): 1,
            key("peregrine_requests_total", protocol="h3", status="2xx"): 1,
            key("peregrine_connections_total", transport="quic"): 1,
            key("peregrine_connections_in_flight", transport="quic"): 0,
        },
        timeout=45,  # the QUIC connection's close is counted when the server's side of it ends
    )
    assert value(samples, "peregrine_received_bytes_total", transport="quic") > 1200  # an Initial is padded to 1200
    assert value(samples, "peregrine_sent_bytes_total", transport="quic") > 1200


def test_the_endpoint_answers_only_get_and_head_on_metrics(serve: Callable[..., Server]) -> None:
    server = serve(WSGI, "--metrics-port", "0")
    port = metrics_port(server)
    status, headers, body = get(port, "HEAD")
    assert (status, body) == (200, b"")
    assert int(headers["content-length"]) > 1000
    assert get(port, "GET", "/metrics?x=1")[0] == 200
    assert get(port, "GET", "/")[0] == 404
    status, headers, _ = get(port, "POST")
    assert status == 405
    assert headers["allow"] == "GET, HEAD"
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"GET /metrics HTTP/1.1\r\nX: " + b"y" * 9000)
        assert s.recv(100).startswith(b"HTTP/1.1 431 ")
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"nonsense\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.1 400 ")
    samples, _ = scrape(port)  # none of this was application traffic
    assert value(samples, "peregrine_connections_total", transport="tcp") == 0


def run(*args: str) -> subprocess.CompletedProcess[str]:
    command = [*peregrine_command(), *args]
    return subprocess.run(
        command, cwd=APPS, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=20, check=False
    )


@pytest.mark.parametrize(
    ("args", "mention"),
    [
        (("--port", "18099", "--metrics-port", "18099"), "--metrics-port must differ from the serving port (18099)"),
        (("--metrics-host", "127.0.0.1"), "--metrics-host needs --metrics-port"),
        (("--metrics-port", "70000"), "--metrics-port"),
        (("--metrics-port", "x"), "--metrics-port"),
        (("--metrics-port",), "--metrics-port"),
    ],
    ids=["same-port", "host-alone", "out-of-range", "not-a-number", "no-value"],
)
def test_metrics_usage_errors(args: tuple[str, ...], mention: str) -> None:
    result = run(*args, "process_apps:wsgi")
    assert result.returncode == 2, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("peregrine: error:")]
    assert len(lines) == 1, result.stderr
    assert mention in lines[0]
    for marker in CRASH_MARKERS:
        assert marker not in result.stderr


def test_a_metrics_port_in_use_fails_the_start() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        result = run("--port", "0", "--metrics-port", str(busy), "process_apps:wsgi")
    assert result.returncode != 0
    assert f"--metrics-port: cannot listen on 127.0.0.1:{busy}" in result.stderr


def test_each_worker_thread_writes_its_own_block_and_they_are_summed(
    serve: Callable[..., Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PEREGRINE_WORKER_CONTEXTS", "2")
    server = serve("context_apps:wsgi", "--metrics-port", "0")
    port = metrics_port(server)
    assert server.stderr.wait_for(lambda line: "in 2 worker contexts" in line, 10) is not None
    threads: set[str | None] = set()
    sent = 0

    def one() -> str | None:
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        try:
            connection.request("GET", "/")
            response = connection.getresponse()
            response.read()
            return response.getheader("x-thread")
        finally:
            connection.close()

    with ThreadPoolExecutor(4) as pool:
        while len(threads) < 2 and sent < 400:
            threads.update(pool.map(lambda _: one(), range(8)))
            sent += 8
    assert len(threads) == 2, "one worker context served every request"
    scrapes = Monotonic(port)
    scrapes.until({key("peregrine_requests_total", protocol="http/1.1", status="2xx"): sent})
    (worker,) = workers(server)
    os.kill(worker, signal.SIGKILL)
    wait_for_workers(server, 1, timeout=30, exclude={worker})
    scrapes.until(
        {
            key("peregrine_worker_exits_total", cause="signal"): 1,
            key("peregrine_requests_total", protocol="http/1.1", status="2xx"): sent,
            key("peregrine_connections_total", transport="tcp"): sent,
            key("peregrine_connections_in_flight", transport="tcp"): 0,
        }
    )


def test_silent_scrapers_are_cut_and_do_not_block_others(serve: Callable[..., Server]) -> None:
    server = serve(WSGI, "--metrics-port", "0")
    port = metrics_port(server)
    silent = [
        socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(70)
    ]  # past the 64 served at once
    try:
        started = time.monotonic()
        for s in silent[:64]:
            s.sendall(b"GET /metr")  # a head that never completes
        assert silent[0].recv(100) == b""  # closed after the endpoint's 5 s
        assert 4 < time.monotonic() - started < 9
        scrape(port)  # the ones waiting in the backlog got their turn, and so does this one
    finally:
        for s in silent:
            s.close()
