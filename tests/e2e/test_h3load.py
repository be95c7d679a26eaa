"""h3load (benchmarks/h3load), the HTTP/3 load generator in C on ngtcp2 + nghttp3 + GnuTLS (issue 15 point 7),
against `peregrine --http3`: its counts must be true, since the benchmark harness reports them as measured.

- closed loop over several connections and streams, stopped by a request count: exactly that many requests
  reached the server (its access log) and came back 2xx; stopped by a duration after a warm-up: every
  counted request is in the access log;
- body bytes: a download counts each response body whole; a POST's body reaches the application whole
  (tests/apps/h3load_apps.py answers 400 otherwise) and its echo is counted;
- `--idle N --hold S` (for the server's memory per idle connection): `ready` once all N have their response,
  then a clean exit after the hold;
- a server that goes away mid-run (SIGTERM: it closes its connections, RFC 9114 §5.2 / RFC 9000 §10.2, then
  nothing answers): the failures are counted as errors and the exit status is 1;
- usage errors exit 2; an IPv6 literal URL works.

The tests build h3load with benchmarks/h3load/build.sh; they skip only when the compiler or the libraries
(Debian libngtcp2-dev, libngtcp2-crypto-gnutls-dev, libnghttp3-dev, libgnutls28-dev) are missing.
"""

from __future__ import annotations

import json
import signal
import subprocess
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from tls_support import TLSFiles

    from conftest import Server

pytest_plugins = ("tls_support", "h3load_tool")

TARGET = "h3load_apps:app"


@pytest.fixture
def server(tls_server: Callable[..., Server], tls_files: TLSFiles) -> Server:
    """A fresh HTTP/3 server of h3load_apps with its access log on stdout."""
    return tls_server(TARGET, "--http3", "--access-log")


def run(h3load: Path, *arguments: str, timeout: float = 60) -> tuple[dict[str, Any], int, str]:
    """Runs h3load; its JSON report (the only thing on stdout), exit status and stderr."""
    done = subprocess.run([str(h3load), *arguments], capture_output=True, text=True, timeout=timeout, check=False)
    assert done.stdout.count("\n") == 1, (done.stdout, done.stderr)
    return json.loads(done.stdout), done.returncode, done.stderr


def logged(server: Server, request: str, count: int, timeout: float = 10.0) -> int:
    """How many access-log lines hold `request` with a 200, once `count` of them are there (or after `timeout`)."""
    server.stdout.wait_for(lambda _: server.stdout.text().count(request) >= count, timeout)
    return server.stdout.text().count(request)


def test_request_count_is_exact(h3load: Path, server: Server) -> None:
    report, code, stderr = run(h3load, "-c", "4", "-m", "8", "-n", "2000", f"https://127.0.0.1:{server.port}/hello")
    assert code == 0, stderr
    assert report["requests"] == 2000
    assert report["status"] == {"2xx": 2000, "3xx": 0, "4xx": 0, "5xx": 0}
    assert report["errors"] == 0
    assert report["connections"] == 4
    assert report["streams"] == 8
    assert report["handshakes"] == 4
    assert report["body_bytes"] == 5 * 2000
    assert report["seconds"] > 0
    assert report["rps"] == pytest.approx(2000 / report["seconds"], rel=1e-3)
    latency = report["latency_us"]
    assert 0 < latency["p50"] <= latency["p90"] <= latency["p99"] <= latency["max"]
    assert report["cpu_seconds"] > 0
    # Every request reached the server once: no retries, nothing beyond the budget (-n counts those in flight).
    assert logged(server, '"GET /hello HTTP/3" 200', 2000) == 2000
    assert server.stdout.text().count(" HTTP/3") == 2000


def test_duration_after_warmup_counts_only_the_window(h3load: Path, server: Server) -> None:
    report, code, stderr = run(
        h3load, "-c", "2", "-m", "4", "-w", "1", "-d", "2", f"https://127.0.0.1:{server.port}/hello"
    )
    assert code == 0, stderr
    assert report["requests"] > 0
    assert report["status"]["2xx"] == report["requests"]
    assert report["errors"] == 0
    assert 2.0 <= report["seconds"] < 3.5  # the window's end is one of the loop's deadlines
    # The warm-up's requests reached the server too but are not counted.
    assert logged(server, '"GET /hello HTTP/3" 200', report["requests"] + 1) > report["requests"]


def test_request_count_after_warmup_is_exact(h3load: Path, server: Server) -> None:
    # The warm-up leaves 4 x 16 requests in flight when the window opens; -n still counts exactly 100.
    report, code, stderr = run(
        h3load, "-c", "4", "-m", "16", "-w", "1", "-n", "100", f"https://127.0.0.1:{server.port}/hello"
    )
    assert code == 0, stderr
    assert report["requests"] == 100
    assert report["status"]["2xx"] == 100
    assert report["body_bytes"] == 5 * 100
    assert report["errors"] == 0


def test_status_classes_are_counted(h3load: Path, server: Server) -> None:
    # A 4xx is a completed request, not an error (the exit status stays 0).
    report, code, stderr = run(h3load, "-c", "1", "-m", "4", "-n", "12", f"https://127.0.0.1:{server.port}/missing")
    assert code == 0, stderr
    assert report["status"] == {"2xx": 0, "3xx": 0, "4xx": 12, "5xx": 0}
    assert report["requests"] == 12
    assert report["body_bytes"] == 0


def test_download_counts_each_body_whole(h3load: Path, server: Server) -> None:
    size = 1_000_000
    report, code, stderr = run(h3load, "-c", "1", "-m", "1", "-n", "4", f"https://127.0.0.1:{server.port}/big?n={size}")
    assert code == 0, stderr
    assert report["requests"] == 4
    assert report["body_bytes"] == size * 4
    assert report["mib_per_s"] == pytest.approx(size * 4 / report["seconds"] / 2**20, rel=1e-2)
    assert logged(server, f'"GET /big?n={size} HTTP/3" 200 {size}', 4) == 4


def test_post_body_reaches_the_application_whole(h3load: Path, server: Server) -> None:
    report, code, stderr = run(
        h3load, "-c", "2", "-m", "2", "-n", "40", "-b", "1000", f"https://127.0.0.1:{server.port}/echo"
    )
    assert code == 0, stderr
    assert report["requests"] == 40
    assert report["status"]["2xx"] == 40  # the application answers 400 to a body that is not 1000 'x' bytes
    assert report["body_bytes"] == 1000 * 40
    assert logged(server, '"POST /echo HTTP/3" 200 1000', 40) == 40


def test_post_body_larger_than_the_flow_control_windows(h3load: Path, server: Server) -> None:
    size = 3 * 1024 * 1024
    report, code, stderr = run(h3load, "-n", "2", "-b", str(size), f"https://127.0.0.1:{server.port}/echo")
    assert code == 0, stderr
    assert report["status"]["2xx"] == 2
    assert report["body_bytes"] == size * 2


def test_idle_connections_held_then_closed(h3load: Path, server: Server) -> None:
    process = subprocess.Popen(
        [str(h3load), "--idle", "20", "--hold", "2", f"https://127.0.0.1:{server.port}/hello"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    assert process.stderr.readline() == "ready\n"
    # Ready means all 20 had their response: the server logged 20 requests.
    assert logged(server, '"GET /hello HTTP/3" 200', 20) == 20
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    report = json.loads(stdout)
    assert report["connections"] == 20
    assert report["requests"] == 20
    assert report["handshakes"] == 20
    assert report["errors"] == 0
    assert report["seconds"] >= 2.0
    assert server.stdout.text().count(" HTTP/3") == 20


def test_idle_hold_outlasts_the_server_idle_timeout(
    h3load: Path, tls_server: Callable[..., Server], tls_files: TLSFiles
) -> None:
    # RFC 9000 §10.1.2: h3load PINGs at half the server's max_idle_timeout (1.5 s here), so a 5 s hold keeps
    # every connection open; one closed by the server's idle timer would be an error.
    server = tls_server(TARGET, "--http3", "--access-log", "--quic-idle-timeout", "3000")
    report, code, stderr = run(h3load, "--idle", "5", "--hold", "5", f"https://127.0.0.1:{server.port}/hello")
    assert code == 0, stderr
    assert report["errors"] == 0
    assert report["handshakes"] == 5
    assert report["requests"] == 5


def test_goaway_replaces_the_connection(h3load: Path, tls_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    # --max-connection-age: the server sends GOAWAY (RFC 9114 §5.2) on a connection past its age; h3load lets
    # the requests in flight finish, counts the server's close as an error and carries on on a new connection.
    server = tls_server(TARGET, "--http3", "--access-log", "--max-connection-age", "300")
    report, code, stderr = run(h3load, "-c", "2", "-m", "2", "-d", "3", f"https://127.0.0.1:{server.port}/hello")
    assert code == 1, stderr
    assert report["errors"] >= 2
    assert report["handshakes"] > 2
    assert report["handshakes"] >= report["errors"]
    assert report["requests"] > 0
    assert report["status"]["2xx"] == report["requests"]


def test_server_going_away_is_counted(h3load: Path, server: Server) -> None:
    process = subprocess.Popen(
        [str(h3load), "-c", "2", "-m", "2", "-d", "12", f"https://127.0.0.1:{server.port}/hello"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert logged(server, '"GET /hello HTTP/3" 200', 10, timeout=9) >= 10
    assert server.stop() == 0
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 1, stderr
    report = json.loads(stdout)
    assert report["requests"] > 0
    assert report["errors"] >= 2  # both connections closed by the server; their replacements refused
    assert "failed" in stderr


def test_sigint_ends_the_run_with_a_report(h3load: Path, server: Server) -> None:
    process = subprocess.Popen(
        [str(h3load), "-c", "2", "-m", "2", "-d", "50", f"https://127.0.0.1:{server.port}/hello"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert logged(server, '"GET /hello HTTP/3" 200', 10, timeout=20) >= 10
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=20)
    assert process.returncode == 0, stderr
    report = json.loads(stdout)
    assert report["requests"] > 0  # (the server logs a request as it answers: h3load may not have the last ones yet)
    assert report["errors"] == 0
    assert report["seconds"] < 40


def test_ipv6_literal(h3load: Path, tls_server: Callable[..., Server], tls_files: TLSFiles) -> None:
    server = tls_server(TARGET, "--host", "::1", "--port", "0", "--http3", "--access-log")
    report, code, stderr = run(h3load, "-c", "2", "-m", "2", "-n", "50", f"https://[::1]:{server.port}/hello")
    assert code == 0, stderr
    assert report["requests"] == 50
    assert logged(server, '"GET /hello HTTP/3" 200', 50) == 50


@pytest.mark.parametrize(
    "arguments",
    [
        [],
        ["http://127.0.0.1:1/"],
        ["https://localhost:1/"],
        ["-c", "0", "https://127.0.0.1:1/"],
        ["-d", "x", "https://127.0.0.1:1/"],
        ["--idle", "3", "https://127.0.0.1:1/"],
        ["--idle", "3", "--hold", "1", "-n", "5", "https://127.0.0.1:1/"],
        ["https://[::1/"],
        ["--bogus", "https://127.0.0.1:1/"],
    ],
)
def test_usage_errors_exit_2(h3load: Path, arguments: list[str]) -> None:
    done = subprocess.run([str(h3load), *arguments], capture_output=True, text=True, timeout=10, check=False)
    assert done.returncode == 2
    assert done.stdout == ""
    assert "usage: h3load" in done.stderr


def test_latency_histogram(tmp_path: Path, h3load_sources: tuple[Path, list[str]]) -> None:
    """benchmarks/h3load/stats_test.c: exact small values, quantiles within one bucket, the open last bucket."""
    source, flags = h3load_sources
    program = tmp_path / "stats_test"
    subprocess.run(
        ["cc", "-O2", f"-I{source}", "-o", str(program), str(source / "stats_test.c"),
         str(source.parent / "histogram" / "histogram.c"),
         *flags],
        check=True,
    )  # fmt: skip
    done = subprocess.run([str(program)], capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (0, "ok\n")


def test_help_says_certificates_are_not_verified(h3load: Path) -> None:
    done = subprocess.run([str(h3load), "--help"], capture_output=True, text=True, timeout=10, check=False)
    assert done.returncode == 0
    assert "NOT verified" in done.stdout


def test_a_burst_past_the_retry_threshold_leaves_no_handshake_behind(
    h3load: Path, tls_server: Callable[..., Server]
) -> None:
    """RFC 9000 §17.2.5.2: a client takes one Retry per attempt, and its Initial with the token makes the connection.

    In a burst past --quic-retry-threshold some clients get a Retry for one Initial while another Initial of the
    same attempt, sent before the Retry arrived, finds the threshold no longer reached and makes a connection. That
    connection never hears from the client again; the server ends it when the token comes instead of holding it
    half-open until the idle timeout (a stop then waited for them: --graceful-timeout).
    """
    server = tls_server(TARGET, "--http3", "--quic-retry-threshold", "50")
    count = 200
    process = subprocess.Popen(
        [str(h3load), "--idle", str(count), "--hold", "3", f"https://127.0.0.1:{server.port}/hello"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        for text in process.stderr:
            if "ready" in text:
                break
        start = len(server.stderr.lines)
        server.process.send_signal(signal.SIGUSR2)
        line = server.stderr.wait_for(lambda text: text.startswith('{"event": "stats"'), 10.0, start)
        assert line is not None, server.excerpt()
        connections = json.loads(line)["connections"]
        assert connections["h3"] == count, connections
        assert connections["quic_handshaking"] == 0, connections
        out, _ = process.communicate(timeout=30)
    finally:
        process.kill()
    report = json.loads(out)
    assert report["errors"] == 0
    assert report["handshakes"] == count
