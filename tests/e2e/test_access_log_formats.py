"""Access-log formats (issue 18 item 2): gunicorn format strings, the JSON line, --access-log-file and its reopen,
--log-format json, and the start-up errors of each option.

The application is tests/apps/request_id_apps.py: it sets `X-App: seen` on every response, answers
`/status/N` with status N and `/sleep/MS` after MS milliseconds.
"""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import stat
import subprocess
import time
from typing import TYPE_CHECKING

import pytest
from h2client import H2Client
from process_support import wait_for_workers, workers
from rawhttp import RawConnection, request

from conftest import APPS, CRASH_MARKERS
from installed import peregrine_command

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from conftest import Server

TARGETS = ["request_id_apps:wsgi", "request_id_apps:asgi"]
#: Every atom, `|`-separated (no value below holds a `|`), then a literal `%`.
ALL_ATOMS = "|".join(
    [
        *(f"%({atom})s" for atom in "hlutrmUqHsbBfaTDMLp"),
        "%({x-trace}i)s",
        "%({X-App}o)s",
        "%({content-length}o)s",
        "%({x-absent}i)s",
        "%({x-absent}o)s",
        "100%%",
    ]
)
CLF_TIME = re.compile(r"\[\d{2}/[A-Z][a-z]{2}/\d{4}:\d{2}:\d{2}:\d{2} [+-]\d{4}\]")


def get(server: Server, target: str, headers: list[tuple[str, str]] | None = None) -> int:
    with RawConnection.to(server) as connection:
        connection.send(request("GET", target, headers))
        return connection.read_response().status


def line_with(server: Server, marker: str) -> str:
    line = server.stdout.wait_for(lambda text: marker in text, 5.0)
    assert line is not None, f"no access-log line with {marker!r}; stdout: {server.stdout.text()!r}"
    return line.rstrip("\n")


@pytest.mark.parametrize("target", TARGETS)
def test_every_gunicorn_atom(start_server: Callable[..., Server], target: str) -> None:
    server = start_server(target, "--access-log-format", ALL_ATOMS)
    credentials = base64.b64encode(b"alice:secret").decode()
    headers = [
        ("Referer", "http://example.com/from"),
        ("User-Agent", "atom-test/1.0"),
        ("Authorization", f"Basic {credentials}"),
        ("X-Trace", "trace-7"),
    ]
    assert get(server, "/sleep/150?a=1&b=%41", headers) == 200
    fields = line_with(server, "atom-test/1.0").split("|")
    (h, dash, u, t, r, m, path, q, proto, s, b, big_b, f, a, secs, micros, millis, decimal, pid,
     trace, app, length, absent_in, absent_out, literal) = fields  # fmt: skip
    assert (h, dash, u) == ("127.0.0.1", "-", "alice")
    assert CLF_TIME.fullmatch(t), t
    assert r == "GET /sleep/150?a=1&b=%41 HTTP/1.1"
    assert (m, path, q, proto, s) == ("GET", "/sleep/150", "a=1&b=%41", "HTTP/1.1", "200")
    body_length = len(json.dumps({"x-request-id": None, "x-trace": "trace-7"}))
    if target.endswith("asgi"):
        body_length = len(json.dumps({"x-request-id": [], "x-trace": ["trace-7"]}))
    assert b == big_b == length == str(body_length)
    assert (f, a) == ("http://example.com/from", "atom-test/1.0")
    # gunicorn: T whole seconds, D microseconds, M milliseconds, L seconds with six decimals.
    # The app sleeps 150 ms, but an event loop's timer may fire early by its clock
    # granularity (libuv's loop time is cached at the start of an iteration), so
    # the bound allows a few milliseconds under.
    assert 145_000 <= int(micros) < 10_000_000
    assert int(millis) == int(micros) // 1000
    assert secs == str(int(micros) // 1_000_000)
    assert re.fullmatch(r"\d+\.\d{6}", decimal)
    assert decimal == f"{int(micros) // 1_000_000}.{int(micros) % 1_000_000:06d}"
    assert re.fullmatch(r"<\d+>", pid)
    assert int(pid[1:-1]) in workers(server)
    assert (trace, app, absent_in, absent_out, literal) == ("trace-7", "seen", "-", "-", "100%")


def test_path_atom_is_decoded_and_values_are_escaped(start_server: Callable[..., Server]) -> None:
    server = start_server(TARGETS[0], "--access-log-format", '%(U)s "%({x-trace}i)s" %(u)s')
    assert get(server, "/a%20b/c", [("X-Trace", 'say "hi" \\ a\tb'), ("Authorization", "Bearer xyz")]) == 200
    assert line_with(server, "/a b/c") == '/a b/c "say \\"hi\\" \\\\ a\\x09b" -'


def test_forwarded_client_is_the_h_atom_and_the_json_client(start_server: Callable[..., Server]) -> None:
    forwarded = [("X-Forwarded-For", "203.0.113.7"), ("User-Agent", "fwd")]
    text = start_server(TARGETS[0], "--access-log-format", "%(h)s %(a)s", "--forwarded-allow-ips", "127.0.0.1")
    assert get(text, "/", forwarded) == 200
    assert line_with(text, "fwd") == "203.0.113.7 fwd"
    js = start_server(TARGETS[1], "--access-log-format", "json", "--forwarded-allow-ips", "127.0.0.1")
    assert get(js, "/fwd", forwarded) == 200
    record = json.loads(line_with(js, "/fwd"))
    assert (record["client"], record["remote"]) == ("203.0.113.7", "203.0.113.7")


@pytest.mark.parametrize("target", TARGETS)
def test_json_line_fields_over_http1_and_http2(start_server: Callable[..., Server], target: str) -> None:
    server = start_server(target, "--access-log-format", "json", "--request-id-header", "X-Request-ID")
    assert get(server, "/sleep/20", [("X-Request-ID", "json-one")]) == 200
    one = json.loads(line_with(server, "/sleep/20"))
    assert one["protocol"] == one["version"] == "HTTP/1.1"
    assert one["request_id"] == "json-one"
    assert one["client"] == one["remote"] == "127.0.0.1"
    assert one["status"] == 200
    assert one["bytes"] > 0
    assert one["duration_us"] >= 20_000
    assert abs(one["duration_ms"] - one["duration_us"] / 1000) < 0.01
    with H2Client(server.port) as c:
        assert c.request("GET", "/over-h2").status == 200
    two = json.loads(line_with(server, "/over-h2"))
    assert two["protocol"] == "HTTP/2"
    assert re.fullmatch(r"[0-9a-f]{32}", two["request_id"])


def test_json_request_id_is_null_without_the_option(start_server: Callable[..., Server]) -> None:
    server = start_server(TARGETS[0], "--access-log-format", "json")
    assert get(server, "/plain") == 200
    assert json.loads(line_with(server, "/plain"))["request_id"] is None


def test_text_line_ends_with_the_request_id(start_server: Callable[..., Server]) -> None:
    server = start_server(TARGETS[0], "--access-log", "--request-id-header", "X-Request-ID")
    assert get(server, "/texty", [("X-Request-ID", "text-id-1")]) == 200
    line = line_with(server, "/texty")
    assert re.fullmatch(r'127\.0\.0\.1:\d+ - "GET /texty HTTP/1\.1" 200 \d+ \d+\.\d\dms text-id-1', line), line


def test_a_rejected_request_logs_dashes(start_server: Callable[..., Server]) -> None:
    server = start_server(TARGETS[0], "--access-log-format", "%(h)s %(r)s %(s)s %(b)s %(D)s %({x-trace}o)s END")
    with RawConnection.to(server) as connection:
        connection.send(b"GARBAGE\r\n\r\n")
        assert connection.read_response().status == 400
    assert line_with(server, "END") == "127.0.0.1 - 400 0 - - END"
    assert get(server, "/after") == 200  # the worker keeps serving


def test_access_log_file_is_appended_and_reopened_on_sigusr1(
    start_server: Callable[..., Server], tmp_path: Path
) -> None:
    path = tmp_path / "access.log"
    path.write_text("kept from before\n")
    server = start_server(TARGETS[0], "--access-log-file", str(path), "--workers", "2")
    before = wait_for_workers(server, 2)
    for i in range(6):
        assert get(server, f"/first/{i}") == 200
    deadline = time.monotonic() + 5
    while path.read_text().count("/first/") < 6 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert path.read_text().count("/first/") == 6
    assert path.read_text().startswith("kept from before\n")
    assert "/first/" not in server.stdout.text(), "the access log also went to stdout"
    rotated = tmp_path / "access.log.1"
    path.rename(rotated)
    os.kill(server.pid, signal.SIGUSR1)
    assert server.stderr.wait_for(lambda text: "reopening log files" in text, 5.0) is not None
    time.sleep(0.3)  # the relayed signal reaches the workers
    for i in range(6):
        assert get(server, f"/second/{i}") == 200
    deadline = time.monotonic() + 5
    while (not path.exists() or path.read_text().count("/second/") < 6) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert path.read_text().count("/second/") == 6
    assert "/second/" not in rotated.read_text()
    assert rotated.read_text().count("/first/") == 6
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644 & ~umask
    # Neither worker took the signal for a drain: both still serve.
    assert workers(server) == before
    assert "draining" not in server.stderr.text()


def test_access_log_file_that_cannot_be_opened_stops_the_start(tmp_path: Path) -> None:
    result = run("--access-log-file", str(tmp_path / "missing-dir" / "access.log"), TARGETS[0])
    assert_usage_error(result, "--access-log-file")


def test_log_format_json_makes_every_server_line_an_object(start_server: Callable[..., Server]) -> None:
    server = start_server(TARGETS[1], "--log-format", "json", "--workers", "2")
    banners = server.stderr.wait_for(lambda text: server.stderr.text().count(" serving request_id_apps") == 2, 15.0)
    assert banners is not None, server.stderr.text()
    assert get(server, "/") == 200
    lines = [line for line in server.stderr.text().splitlines() if line.strip()]
    assert len(lines) >= 4
    pids = set()
    for line in lines:
        record = json.loads(line)
        assert set(record) == {"time", "level", "pid", "message"}, record
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \+0000", record["time"])
        assert record["level"] in {"DEBUG", "INFO", "WARNING", "ERROR"}
        pids.add(record["pid"])
    assert server.pid in pids, "no supervisor line"
    assert len(pids) >= 3, "supervisor and both workers log JSON"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*peregrine_command(), *args],
        cwd=APPS,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=20,
        check=False,
    )


def assert_usage_error(result: subprocess.CompletedProcess[str], mention: str) -> None:
    assert result.returncode == 2, f"exit {result.returncode}; stderr:\n{result.stderr}"
    lines = [line for line in result.stderr.splitlines() if line.startswith("peregrine: error:")]
    assert len(lines) == 1, result.stderr
    assert mention in lines[0], lines[0]
    for marker in CRASH_MARKERS:
        assert marker not in result.stderr


@pytest.mark.parametrize(
    ("value", "mention"),
    [
        ("%(h)s %(z)s", "%(z)s"),
        ("%(h)s %(s)d", "%(s)d"),
        ("%(h)s 100%", "%"),
        ("%(h)s %(", "%("),
        ("%({x-a}e)s", "%({x-a}e)s"),
        ("%({}i)s", "%({}i)s"),
        ("%({bad name}i)s", "%({bad name}i)s"),
        ("plain words", "plain words"),
    ],
    ids=["unknown", "conversion", "lone-percent", "unclosed", "environ", "empty-field", "bad-field", "no-atom"],
)
def test_a_bad_format_exits_2_naming_it(value: str, mention: str) -> None:
    assert_usage_error(run("--access-log-format", value, TARGETS[0]), mention)


@pytest.mark.parametrize(
    ("args", "mention"),
    [
        (["--log-format", "xml"], "--log-format"),
        (["--request-id-header", "X Request"], "--request-id-header"),
        (["--request-id-header", ""], "--request-id-header"),
        (["--access-log-file", ""], "--access-log-file"),
    ],
    ids=["log-format", "request-id-space", "request-id-empty", "access-log-file-empty"],
)
def test_option_values_are_checked(args: list[str], mention: str) -> None:
    assert_usage_error(run(*args, TARGETS[0]), mention)


@pytest.mark.parametrize("target", TARGETS)
def test_an_idle_worker_reopens_without_waiting_for_a_request(
    start_server: Callable[..., Server], tmp_path: Path, target: str
) -> None:
    """The rotated file is let go within the heartbeat, not only at the next line (its space can be freed)."""
    path = tmp_path / "access.log"
    server = start_server(target, "--access-log-file", str(path))
    assert get(server, "/before") == 200
    path.rename(tmp_path / "access.log.1")
    os.kill(server.pid, signal.SIGUSR1)
    deadline = time.monotonic() + 5
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert path.exists(), "the idle worker did not reopen PATH"
    assert get(server, "/after") == 200
    deadline = time.monotonic() + 5
    while "/after" not in path.read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "/after" in path.read_text()
