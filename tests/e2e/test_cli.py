"""The `peregrine` command line (issue 2 item 3): errors exit 2 with one clear line, never a Swift crash.

Also --version, --help, --factory, protocol detection and --access-log.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import socket
import subprocess
import time
from typing import TYPE_CHECKING

import pytest
from rawhttp import RawConnection, request

from conftest import APPS, CRASH_MARKERS, start
from installed import REPO, peregrine_command, server_python_facts

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from conftest import Server


def run(*args: str, cwd: Path | None = None, timeout: float = 20.0) -> subprocess.CompletedProcess[str]:
    """Run peregrine to completion (it must exit by itself)."""
    try:
        return subprocess.run(
            [*peregrine_command(), *args],
            cwd=cwd or APPS,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
            env={**os.environ, "PEREGRINE_TEST_STATE": "/tmp"},  # noqa: S108 (the apps' event log; unused here)
        )
    except subprocess.TimeoutExpired as expired:
        pytest.fail(
            f"peregrine {' '.join(args)} did not exit within {timeout:.0f}s (stderr so far: {expired.stderr!r})"
        )


def error_lines(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("peregrine: error:")]


def assert_clean_usage_error(result: subprocess.CompletedProcess[str], *mentions: str, traceback: bool = False) -> str:
    """Exit 2, exactly one `peregrine: error:` line mentioning each of `mentions`, no crash text."""
    assert result.returncode == 2, f"exit {result.returncode}; stderr:\n{result.stderr}"
    lines = error_lines(result)
    assert len(lines) == 1, f"expected one 'peregrine: error:' line; stderr:\n{result.stderr}"
    for marker in CRASH_MARKERS:
        assert marker not in result.stderr, f"crash text {marker!r} in stderr:\n{result.stderr}"
    for mention in mentions:
        assert mention in lines[0], f"{mention!r} not named in {lines[0]!r}"
    if not traceback:
        assert "Traceback" not in result.stderr, result.stderr
    return lines[0]


# --- bad command lines --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "mention"),
    [
        (["--bogus", "wsgi_apps:app"], "--bogus"),
        (["--port", "abc", "wsgi_apps:app"], "abc"),
        (["--port", "99999", "wsgi_apps:app"], "99999"),
        (["--port", "-1", "wsgi_apps:app"], "-1"),
        (["--protocol", "foo", "wsgi_apps:app"], "foo"),
        (["--max-body", "x", "wsgi_apps:app"], "--max-body"),
        (["--max-header-size", "12q", "wsgi_apps:app"], "--max-header-size"),
        (["--keep-alive", "soon", "wsgi_apps:app"], "--keep-alive"),
        (["--request-timeout", "", "wsgi_apps:app"], "--request-timeout"),
        (["--max-connections", "many", "wsgi_apps:app"], "--max-connections"),
        (["--backlog", "lots", "wsgi_apps:app"], "--backlog"),
        (["--log-level", "loud", "wsgi_apps:app"], "loud"),
        (["--access-log-format", "xml", "wsgi_apps:app"], "xml"),
        (["--http3", "wsgi_apps:app"], "--tls-cert"),
        (["--quic-port", "9", "wsgi_apps:app"], "--http3"),
        (["--http3-max-streams", "0", "wsgi_apps:app"], "--http3-max-streams"),
        (["--quic-idle-timeout", "never", "wsgi_apps:app"], "--quic-idle-timeout"),
        (["--quic-stream-window", "1", "wsgi_apps:app"], "--quic-stream-window"),
        (["--quic-connection-window", "2g", "wsgi_apps:app"], "--quic-connection-window"),
        (["wsgi_apps:app", "--port"], "--port"),
        ([], ""),
        (["wsgi_apps:app", "other:app"], ""),
    ],
    ids=[
        "unknown-option",
        "port-abc",
        "port-99999",
        "port-negative",
        "protocol-foo",
        "max-body-x",
        "max-header-size-suffix",
        "keep-alive-word",
        "request-timeout-empty",
        "max-connections-word",
        "backlog-word",
        "log-level",
        "access-log-format",
        "http3-without-tls",
        "quic-port-without-http3",
        "http3-max-streams-zero",
        "quic-idle-timeout-word",
        "quic-stream-window-small",
        "quic-connection-window-large",
        "missing-value",
        "no-application",
        "two-applications",
    ],
)
def test_bad_command_line_exits_2_with_one_error_line(args: list[str], mention: str) -> None:
    assert_clean_usage_error(run(*args), mention)


def test_module_that_raises_at_import_shows_its_traceback(tmp_path: Path) -> None:
    result = run("--port", "0", "--python-path", str(APPS), "broken_import:app", cwd=tmp_path)
    line = assert_clean_usage_error(result, "broken_import", traceback=True)
    assert "Traceback (most recent call last)" in result.stderr
    assert "ZeroDivisionError: broken_import explodes at import time" in result.stderr
    assert "_explode" in result.stderr
    assert "ZeroDivisionError" in line or "import" in line


def test_module_not_found(tmp_path: Path) -> None:
    result = run("--port", "0", "--python-path", str(APPS), "no_such_module_here:app", cwd=tmp_path)
    assert_clean_usage_error(result, "no_such_module_here", traceback=True)


def test_missing_attribute(tmp_path: Path) -> None:
    result = run("--port", "0", "--python-path", str(APPS), "wsgi_apps:no_such_attribute", cwd=tmp_path)
    assert_clean_usage_error(result, "no_such_attribute", traceback=True)


def test_attribute_that_is_not_callable(tmp_path: Path) -> None:
    result = run("--port", "0", "--python-path", str(APPS), "wsgi_apps:not_callable", cwd=tmp_path)
    assert_clean_usage_error(result, "not_callable", traceback=True)


@pytest.mark.parametrize("order", [("a", "b"), ("b", "a")])
def test_python_paths_come_first_in_the_order_given(tmp_path: Path, order: tuple[str, str]) -> None:
    """`--python-path` entries lead sys.path in command-line order: of two directories holding a module of the
    same name, the first given is the one imported (its import error names it)."""
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "order_probe.py").write_text(f"raise ImportError('imported from directory {name}')\n")
    first, second = order
    result = run(
        "--port", "0", "--python-path", str(tmp_path / first), "--python-path", str(tmp_path / second),
        "order_probe:app", cwd=tmp_path,
    )  # fmt: skip
    assert f"imported from directory {first}" in result.stderr
    assert f"imported from directory {second}" not in result.stderr


@pytest.mark.parametrize("target", ["wsgi_apps:", ":app", "wsgi_apps:app:extra", "wsgi apps:app"])
def test_malformed_application_reference(tmp_path: Path, target: str) -> None:
    result = run("--port", "0", "--python-path", str(APPS), target, cwd=tmp_path)
    assert_clean_usage_error(result, traceback=True)


def test_port_in_use(tmp_path: Path) -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        result = run(
            "--host", "127.0.0.1", "--port", str(port), "--python-path", str(APPS), "wsgi_apps:app", cwd=tmp_path
        )
    assert_clean_usage_error(result, str(port))


def test_unix_socket_in_a_missing_directory(tmp_path: Path) -> None:
    result = run("--unix", str(tmp_path / "missing" / "s.sock"), "--python-path", str(APPS), "wsgi_apps:app")
    assert_clean_usage_error(result)


def test_coroutine_function_is_detected_as_asgi(start_server: Callable[..., Server]) -> None:
    server = start_server("asgi_app:app")
    assert "(ASGI" in server.stderr.text()
    assert _get(server, "/") == (200, b"asgi")


def test_three_argument_instance_is_detected_as_asgi(start_server: Callable[..., Server]) -> None:
    server = start_server("asgi_app:three_arguments")
    assert "(ASGI" in server.stderr.text()
    assert "(WSGI)" not in server.stderr.text()


def test_var_positional_wsgi_middleware_is_detected_as_wsgi(start_server: Callable[..., Server]) -> None:
    """wsgiref.validate's wrapper takes (*args, **kw): a plain callable like that is WSGI."""
    server = start_server("flask_app:application")
    assert "(WSGI)" in server.stderr.text()


def test_protocol_asgi_forces_asgi(start_server: Callable[..., Server]) -> None:
    server = start_server("wsgi_apps:app", "--protocol", "asgi")
    assert "(ASGI" in server.stderr.text()


# --- information ---------------------------------------------------------------------------------


def test_version() -> None:
    result = run("--version")
    assert result.returncode == 0
    assert re.fullmatch(r"peregrine \d+\.\d+\.\d+\n", result.stdout), result.stdout
    assert error_lines(result) == []


def test_help() -> None:
    result = run("--help")
    assert result.returncode == 0
    assert "usage: peregrine" in result.stdout
    for option in (
        "--host",
        "--port",
        "--unix",
        "--backlog",
        "--protocol",
        "--factory",
        "--root-path",
        "--max-connections",
        "--max-body",
        "--max-header-size",
        "--keep-alive",
        "--request-timeout",
        "--python-path",
        "--log-level",
        "--access-log",
        "--access-log-format",
        "--version",
        "--help",
    ):
        assert option in result.stdout, option


def test_every_option_is_in_config_md_and_back() -> None:
    """CONFIG.md documents exactly the options --help lists (it is the reference, so it must not drift)."""
    listed = set(re.findall(r"^  (--[a-z0-9-]+)", run("--help").stdout, re.MULTILINE))
    config = (REPO / "CONFIG.md").read_text()
    documented = set(re.findall(r"^\| `(--[a-z0-9-]+)", config, re.MULTILINE))
    assert {"--host", "--tls-cert", "--ws-compress"} <= listed
    assert listed - {"--version", "--help"} == documented


# --- serving variants ----------------------------------------------------------------------------


def _get(server: Server, target: str) -> tuple[int, bytes]:
    with RawConnection.to(server) as connection:
        connection.send(request("GET", target))
        response = connection.read_response()
    return response.status, response.body


def test_factory_is_called_once_to_build_the_application(start_server: Callable[..., Server]) -> None:
    server = start_server("wsgi_apps:factory", "--factory")
    assert _get(server, "/hello") == (200, b"hello")
    assert _get(server, "/hello") == (200, b"hello")
    assert server.events().count("factory called") == 1


def test_callable_instance_is_detected_as_wsgi(start_server: Callable[..., Server]) -> None:
    server = start_server("wsgi_apps:instance")
    assert _get(server, "/hello") == (200, b"hello")
    assert "(WSGI)" in server.stderr.text()


def test_protocol_wsgi_forces_wsgi(start_server: Callable[..., Server]) -> None:
    server = start_server("asgi_app:either", "--protocol", "wsgi")
    assert _get(server, "/") == (200, b"wsgi")


def test_access_log_text(start_server: Callable[..., Server]) -> None:
    server = start_server("wsgi_apps:app", "--access-log")
    assert _get(server, "/hello?x=1") == (200, b"hello")
    assert _get(server, "/status/404") == (404, b"status 404")
    line = server.stdout.wait_for(lambda text: "/hello?x=1" in text, 5)
    assert line is not None, f"no access log line on stdout: {server.stdout.text()!r}"
    assert "GET" in line
    assert " 200 " in line or line.rstrip().endswith(" 200") or '" 200' in line
    missing = server.stdout.wait_for(lambda text: "/status/404" in text, 5)
    assert missing is not None
    assert "404" in missing
    assert "/hello?x=1" not in server.stderr.text(), "access log went to stderr"


def test_access_log_json(start_server: Callable[..., Server]) -> None:
    server = start_server("wsgi_apps:app", "--access-log-format", "json")
    assert _get(server, "/hello?x=1") == (200, b"hello")
    with RawConnection.to(server) as connection:
        connection.send(request("POST", "/echo/logged", body=b"12345"))
        assert connection.read_response().status == 200
    first = server.stdout.wait_for(lambda text: "/hello" in text, 5)
    second = server.stdout.wait_for(lambda text: "/echo/logged" in text, 5)
    assert first is not None
    assert second is not None
    record = json.loads(first)
    assert (record["status"], record["method"], record["target"]) == (200, "GET", "/hello?x=1")
    posted = json.loads(second)
    assert (posted["status"], posted["method"], posted["target"]) == (200, "POST", "/echo/logged")


def test_access_log_records_rejected_requests_or_stays_valid_json(start_server: Callable[..., Server]) -> None:
    server = start_server("wsgi_apps:app", "--access-log-format", "json")
    with RawConnection.to(server) as connection:
        connection.send(b"GET /bad\x01 HTTP/1.1\r\nHost: x\r\n\r\n")
        assert connection.read_response().status == 400
    assert _get(server, "/hello") == (200, b"hello")
    assert server.stdout.wait_for(lambda text: "/hello" in text, 5) is not None
    for line in server.stdout.lines:
        json.loads(line)


def test_sigterm_lets_an_in_flight_request_finish(start_server: Callable[..., Server]) -> None:
    server = start_server("wsgi_apps:app")
    with RawConnection.to(server) as connection:
        connection.send(request("GET", "/sleep?ms=1000"))
        time.sleep(0.3)
        server.process.send_signal(signal.SIGTERM)
        response = connection.read_response()
        assert (response.status, response.body) == (200, b"slept")
    assert server.process.wait(timeout=10) == 0


def test_serves_on_ipv6_loopback(tmp_path_factory: pytest.TempPathFactory) -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6 in this Python")
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback on this machine")
    server = start("wsgi_apps:app", "--host", "::1", "--port", "0", state=tmp_path_factory.mktemp("v6"))
    try:
        with socket.create_connection(("::1", server.port), timeout=10) as sock:
            connection = RawConnection(sock)
            connection.send(request("GET", "/environ/v6"))
            environ = json.loads(connection.read_response().body)
        assert environ["REMOTE_ADDR"][1] == "::1"
        assert environ["SERVER_PORT"][1] == str(server.port)
    finally:
        server.stop()


def test_free_threaded_needs_an_interpreter_without_the_gil(tmp_path: Path) -> None:
    """`--free-threaded` on an interpreter with the GIL: one error line saying what is needed, exit 2.

    The workers run the server's interpreter (installed.server_python); on a
    free-threaded one the same command serves, in two worker threads.
    """
    args = ("--free-threaded", "--workers", "2", "--port", "0", "--python-path", str(APPS), "wsgi_apps:hello")
    if not server_python_facts()["free_threaded"]:
        result = run(*args, cwd=tmp_path)
        line = assert_clean_usage_error(result, "--free-threaded", "free-threaded Python", "GIL")
        assert "3.13t" in line
        return
    server = start("thread_apps:wsgi", *args[:-1], state=tmp_path)
    try:
        assert server.stderr.wait_for(lambda text: "in 2 worker threads" in text, 10) is not None
        # Both threads serve, with the GIL off inside the requests.
        bodies: set[str] = set()
        for _ in range(200):
            connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
            connection.request("GET", "/")
            bodies.add(connection.getresponse().read().decode())
            connection.close()
            if {body.split()[0] for body in bodies} == {"main", "other"}:
                break
        assert {body.split()[0] for body in bodies} == {"main", "other"}, bodies
        assert all(body.endswith("gil=False") for body in bodies), bodies
    finally:
        server.stop()
