"""Behind a reverse proxy: `--forwarded-allow-ips`, `FORWARDED_ALLOW_IPS` and `--scheme` (issue 17 item 1).

Only when the immediate peer is trusted do `Forwarded` (RFC 7239) and
`X-Forwarded-For`/`-Proto`/`-Host`/`-Port` change what the application sees:
ASGI `client`, `scheme` (ws/wss for a WebSocket) and `server`; WSGI
REMOTE_ADDR, REMOTE_PORT (only when known), wsgi.url_scheme, HTTP_HOST,
SERVER_NAME and SERVER_PORT; the access log's client. The apps in
tests/apps/forwarded_apps.py answer those as JSON. Every test client here
connects from 127.0.0.1 (the nginx test from 127.0.0.2, through nginx).
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from h2client import H2Client
from rawhttp import RawConnection, request

from conftest import APPS, start
from installed import peregrine_command

pytest.register_assert_rewrite("websocket_support", "tls_support")
from tls_support import client_context, exchange, tls_connect  # noqa: E402
from websocket_support import handshake  # noqa: E402

#: The TLS fixtures (`tls_files`, `tls_server`) live in tls_support.
pytest_plugins = ("tls_support",)

if TYPE_CHECKING:
    from collections.abc import Callable

    from tls_support import TLSFiles

    from conftest import Server, ServerPool

ASGI = "forwarded_apps:asgi"
WSGI = "forwarded_apps:wsgi"
NGINX = Path("/usr/sbin/nginx")

Headers = list[tuple[str, str]]


def h1(server: Server, headers: Headers, host: str = "localhost") -> dict[str, Any]:
    """One HTTP/1.1 GET with `headers`; the application's JSON answer."""
    with RawConnection.to(server) as connection:
        connection.send(request("GET", "/", headers, host=host))
        response = connection.read_response()
    assert response.status == 200, response.body[:2000]
    answer: dict[str, Any] = json.loads(response.body)
    return answer


def h2(server: Server, headers: Headers, host: str = "localhost") -> dict[str, Any]:
    """One HTTP/2 (h2c, prior knowledge) GET with `headers`; the application's JSON answer."""
    with H2Client(server.port) as client:
        response = client.request("GET", "/", headers=[(n.lower(), v) for n, v in headers], authority=host)
    assert response.status == 200, bytes(response.body[:2000])
    answer: dict[str, Any] = json.loads(bytes(response.body))
    return answer


SENDERS: dict[str, Callable[..., dict[str, Any]]] = {"h1": h1, "h2": h2}


@pytest.fixture(params=["h1", "h2"])
def send(request: pytest.FixtureRequest) -> Callable[..., dict[str, Any]]:
    """A request over HTTP/1.1 or HTTP/2."""
    return SENDERS[request.param]


def view(interface: str, answer: dict[str, Any]) -> dict[str, Any]:
    """The answer of either interface in one shape: client, scheme, server, host."""
    if interface == "asgi":
        return {
            "client": answer["client"],
            "scheme": answer["scheme"],
            "server": answer["server"],
            "host": answer["host"][0] if answer["host"] else None,
        }
    client = None
    if answer["REMOTE_ADDR"]:
        client = [answer["REMOTE_ADDR"], int(answer["REMOTE_PORT"]) if answer["has_remote_port"] else 0]
    return {
        "client": client,
        "scheme": answer["wsgi.url_scheme"],
        "server": [answer["SERVER_NAME"], int(answer["SERVER_PORT"])],
        "host": answer["HTTP_HOST"],
    }


def served(pool: ServerPool, interface: str, *options: str) -> Server:
    return pool.get(ASGI if interface == "asgi" else WSGI, *options)


PROXY_FIELDS: Headers = [
    ("X-Forwarded-For", "203.0.113.7"),
    ("X-Forwarded-Proto", "https"),
    ("X-Forwarded-Host", "example.com"),
]


def assert_socket_view(server: Server, interface: str, got: dict[str, Any]) -> None:
    """What the socket says: the client on 127.0.0.1, plain http, the listener's address, the Host sent."""
    assert got["client"][0] == "127.0.0.1"
    assert got["client"][1] > 0
    assert got["scheme"] == "http"
    assert got["server"] == ["127.0.0.1", server.port]
    assert got["host"] == "localhost"


# --- Trust boundary ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("interface", ["asgi", "wsgi"])
@pytest.mark.parametrize("options", [(), ("--forwarded-allow-ips", "10.0.0.1, 192.168.0.0/16, ::1")])
def test_an_untrusted_peer_changes_nothing_and_its_headers_pass_through(
    server_pool: ServerPool, send: Callable[..., dict[str, Any]], interface: str, options: tuple[str, ...]
) -> None:
    server = served(server_pool, interface, *options)
    answer = send(server, [*PROXY_FIELDS, ("Forwarded", "for=198.51.100.1;proto=https")])
    assert_socket_view(server, interface, view(interface, answer))
    if interface == "asgi":
        assert ["x-forwarded-for", "203.0.113.7"] in answer["headers"]
        assert ["forwarded", "for=198.51.100.1;proto=https"] in answer["headers"]
    else:
        assert answer["headers"]["HTTP_X_FORWARDED_FOR"] == "203.0.113.7"
        assert answer["headers"]["HTTP_FORWARDED"] == "for=198.51.100.1;proto=https"
        assert answer["has_remote_port"]


@pytest.mark.parametrize("interface", ["asgi", "wsgi"])
@pytest.mark.parametrize("allow", ["127.0.0.1", "127.0.0.0/8", "*", "::ffff:127.0.0.1", "10.0.0.0/8, 127.0.0.1"])
def test_a_trusted_peer_sets_client_scheme_and_server(
    server_pool: ServerPool, send: Callable[..., dict[str, Any]], interface: str, allow: str
) -> None:
    server = served(server_pool, interface, "--forwarded-allow-ips", allow)
    got = view(interface, send(server, PROXY_FIELDS))
    # No port from the proxy: 0 in ASGI (as uvicorn), no REMOTE_PORT in WSGI.
    assert got["client"] == ["203.0.113.7", 0]
    assert got["scheme"] == "https"
    assert got["server"] == ["example.com", 443]  # the scheme's default port (RFC 9110 §4.2.2)
    if interface == "wsgi":
        assert got["host"] == "example.com"


@pytest.mark.parametrize("interface", ["asgi", "wsgi"])
def test_the_forwarded_host_port_and_x_forwarded_port(server_pool: ServerPool, interface: str) -> None:
    server = served(server_pool, interface, "--forwarded-allow-ips", "127.0.0.1")
    got = view(interface, h1(server, [("X-Forwarded-Host", "example.com:8443")]))
    assert got["server"] == ["example.com", 8443]
    assert got["scheme"] == "http"
    got = view(interface, h1(server, [("X-Forwarded-Host", "example.com"), ("X-Forwarded-Port", "8080")]))
    assert got["server"] == ["example.com", 8080]
    got = view(interface, h1(server, [("X-Forwarded-Host", "[2001:db8::5]:81")]))
    assert got["server"] == ["2001:db8::5", 81]
    if interface == "wsgi":
        assert got["host"] == "[2001:db8::5]:81"


def test_a_wsgi_application_thread_sees_the_forwarded_host(server_pool: ServerPool) -> None:
    """Under --wsgi-threads the request's bytes are copied to its thread: the
    forwarded host, which points into them, follows (the connection's buffer
    may be reused meanwhile)."""
    server = served(server_pool, "wsgi", "--forwarded-allow-ips", "127.0.0.1", "--wsgi-threads", "2")
    for port in range(8440, 8450):
        got = view("wsgi", h1(server, [("X-Forwarded-Host", f"example-{port}.com:{port}"), *PROXY_FIELDS[:2]]))
        assert got["server"] == [f"example-{port}.com", port]
        assert got["host"] == f"example-{port}.com:{port}"
        assert got["client"] == ["203.0.113.7", 0]


def test_the_environment_variable_is_read_when_the_option_is_absent(
    start_server: Callable[..., Server], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "127.0.0.1")
    trusting = start_server(ASGI)
    assert h1(trusting, PROXY_FIELDS)["client"] == ["203.0.113.7", 0]
    # The option wins over the variable.
    overruled = start_server(ASGI, "--forwarded-allow-ips", "10.0.0.1")
    assert h1(overruled, PROXY_FIELDS)["client"][0] == "127.0.0.1"


@pytest.mark.parametrize("interface", ["asgi", "wsgi"])
def test_unix_socket_peers_are_trusted_only_through_the_unix_item(
    start_server: Callable[..., Server], tmp_path: Path, interface: str
) -> None:
    target = ASGI if interface == "asgi" else WSGI
    trusting = start_server(target, "--unix", str(tmp_path / "a.sock"), "--forwarded-allow-ips", "unix")
    got = view(interface, h1(trusting, PROXY_FIELDS))
    assert got["client"] == ["203.0.113.7", 0]
    assert got["scheme"] == "https"
    assert got["server"] == ["example.com", 443]
    untrusting = start_server(target, "--unix", str(tmp_path / "b.sock"), "--forwarded-allow-ips", "127.0.0.1")
    answer = h1(untrusting, PROXY_FIELDS)
    if interface == "asgi":
        assert answer["client"] is None
        assert answer["scheme"] == "http"
        assert answer["server"] is None
    else:
        assert answer["REMOTE_ADDR"] == ""
        assert answer["wsgi.url_scheme"] == "http"
        assert answer["HTTP_HOST"] == "localhost"


# --- What the proxy says ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("interface", ["asgi", "wsgi"])
def test_the_chain_is_walked_from_the_right_past_trusted_hops(
    server_pool: ServerPool, send: Callable[..., dict[str, Any]], interface: str
) -> None:
    server = served(server_pool, interface, "--forwarded-allow-ips", "127.0.0.1, 10.0.0.0/8")
    chain = "198.51.100.1, 203.0.113.7, 10.0.0.5"
    assert view(interface, send(server, [("X-Forwarded-For", chain)]))["client"] == ["203.0.113.7", 0]
    # The same chain over two field lines is one list (RFC 9110 §5.3).
    two_lines = [("X-Forwarded-For", "198.51.100.1, 203.0.113.7"), ("X-Forwarded-For", "10.0.0.5")]
    assert view(interface, send(server, two_lines))["client"] == ["203.0.113.7", 0]
    forwarded = [("Forwarded", 'for=198.51.100.1, for="203.0.113.7:4000";proto=https, for=10.0.0.5')]
    got = view(interface, send(server, forwarded))
    assert got["client"] == ["203.0.113.7", 4000]
    assert got["scheme"] == "https"
    # Every hop trusted: the leftmost is the client.
    assert view(interface, send(server, [("X-Forwarded-For", "10.1.1.1, 10.0.0.5")]))["client"] == ["10.1.1.1", 0]
    # The hop in the middle is not trusted when only the socket peer is.
    narrow = served(server_pool, interface, "--forwarded-allow-ips", "127.0.0.1")
    assert view(interface, send(narrow, [("X-Forwarded-For", chain)]))["client"] == ["10.0.0.5", 0]


@pytest.mark.parametrize("interface", ["asgi", "wsgi"])
def test_forwarded_wins_over_x_forwarded(
    server_pool: ServerPool, send: Callable[..., dict[str, Any]], interface: str
) -> None:
    server = served(server_pool, interface, "--forwarded-allow-ips", "127.0.0.1")
    fields = [
        ("X-Forwarded-For", "203.0.113.9"),
        ("X-Forwarded-Proto", "http"),
        ("X-Forwarded-Host", "x.example"),
        ("Forwarded", 'for=192.0.2.60;proto=https;host="example.org"'),
    ]
    got = view(interface, send(server, fields))
    assert got["client"] == ["192.0.2.60", 0]
    assert got["scheme"] == "https"
    assert got["server"] == ["example.org", 443]


@pytest.mark.parametrize("interface", ["asgi", "wsgi"])
def test_ipv6_in_forwarded(server_pool: ServerPool, send: Callable[..., dict[str, Any]], interface: str) -> None:
    server = served(server_pool, interface, "--forwarded-allow-ips", "127.0.0.1")
    answer = send(server, [("Forwarded", 'for="[2001:DB8:0:0::1]:4711"')])
    assert view(interface, answer)["client"] == ["2001:db8::1", 4711]  # RFC 5952 text
    if interface == "wsgi":
        assert answer["REMOTE_PORT"] == "4711"


@pytest.mark.parametrize("interface", ["asgi", "wsgi"])
def test_unknown_and_obfuscated_clients_are_not_the_socket_peer(server_pool: ServerPool, interface: str) -> None:
    server = served(server_pool, interface, "--forwarded-allow-ips", "127.0.0.1")
    for value in ("for=unknown", "for=_hidden;proto=https"):
        answer = h1(server, [("Forwarded", value)])
        if interface == "asgi":
            assert answer["client"] is None, value
        else:
            assert answer["REMOTE_ADDR"] == "", value
            assert not answer["has_remote_port"], value


GARBAGE: list[Headers] = [
    [("X-Forwarded-For", "not-an-address")],
    [("X-Forwarded-For", "203.0.113.7:99999")],
    [("X-Forwarded-For", "::1:2:3:4:5:6:7:8:9")],
    [("X-Forwarded-For", ", , ,")],
    [("X-Forwarded-For", ", ".join(["10.0.0.1"] * 40))],  # over the 32-hop cap
    [("X-Forwarded-Proto", "gopher")],
    [("X-Forwarded-Host", "bad host/")],
    [("X-Forwarded-Host", "example.com:0")],
    [("X-Forwarded-Port", "99999"), ("X-Forwarded-Host", "[::1")],
    [("Forwarded", 'for="[2001:db8::1"')],
    [("Forwarded", "for=1.2.3.4;;;==;proto")],
    [("Forwarded", 'for="unterminated')],
    [("Forwarded", "proto=ftp;host=a b")],
    [("Forwarded", "for=300.1.1.1")],
    [("Forwarded", "for=\x80\xff;proto=\xfe" * 50)],  # obs-text (RFC 9110 §5.5)
]


@pytest.mark.parametrize("interface", ["asgi", "wsgi"])
@pytest.mark.parametrize("fields", GARBAGE, ids=range(len(GARBAGE)))
def test_malformed_values_are_ignored(
    server_pool: ServerPool, send: Callable[..., dict[str, Any]], interface: str, fields: Headers
) -> None:
    server = served(server_pool, interface, "--forwarded-allow-ips", "127.0.0.1")
    got = view(interface, send(server, fields))
    assert got["client"][0] == "127.0.0.1"
    assert got["scheme"] == "http"
    assert got["server"] == ["127.0.0.1", server.port]
    # And the worker goes on serving with what is valid.
    assert view(interface, send(server, PROXY_FIELDS))["client"] == ["203.0.113.7", 0]


@pytest.mark.parametrize("interface", ["asgi", "wsgi"])
def test_scheme_option_forces_the_scheme(
    server_pool: ServerPool, send: Callable[..., dict[str, Any]], interface: str
) -> None:
    server = served(server_pool, interface, "--scheme", "https")
    assert view(interface, send(server, []))["scheme"] == "https"
    both = served(server_pool, interface, "--scheme", "https", "--forwarded-allow-ips", "127.0.0.1")
    got = view(interface, send(both, [("X-Forwarded-Proto", "http"), ("X-Forwarded-For", "203.0.113.7")]))
    assert got["scheme"] == "https"  # forced, whatever the proxy says
    assert got["client"] == ["203.0.113.7", 0]


@pytest.mark.parametrize("interface", ["asgi", "wsgi"])
def test_over_tls(tls_server: Callable[..., Server], tls_files: TLSFiles, interface: str) -> None:
    target = ASGI if interface == "asgi" else WSGI

    def over_tls(server: Server, headers: dict[str, str]) -> dict[str, Any]:
        with tls_connect(server, client_context(tls_files)) as sock:
            response = exchange(sock, "GET", "/", headers=headers)
        assert response.status == 200
        return view(interface, json.loads(response.body))  # type: ignore[attr-defined]

    untrusting = tls_server(target)
    got = over_tls(untrusting, {"X-Forwarded-For": "203.0.113.7", "X-Forwarded-Proto": "http"})
    assert got["client"][0] == "127.0.0.1"
    assert got["scheme"] == "https"
    trusting = tls_server(target, "--forwarded-allow-ips", "127.0.0.1")
    got = over_tls(trusting, {"X-Forwarded-For": "203.0.113.7", "X-Forwarded-Host": "example.com"})
    assert got["client"] == ["203.0.113.7", 0]
    assert got["scheme"] == "https"  # the socket's, no proto was forwarded
    assert got["server"] == ["example.com", 443]
    assert over_tls(trusting, {"X-Forwarded-Proto": "http"})["scheme"] == "http"
    forced = tls_server(target, "--scheme", "http")
    assert over_tls(forced, {})["scheme"] == "http"


# --- WebSocket --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("proto", "scheme"), [("https", "wss"), ("http", "ws"), ("wss", "wss")])
def test_websocket_scope_scheme_follows_x_forwarded_proto(server_pool: ServerPool, proto: str, scheme: str) -> None:
    server = served(server_pool, "asgi", "--forwarded-allow-ips", "127.0.0.1")
    fields = [("X-Forwarded-Proto", proto), ("X-Forwarded-For", "[2001:db8::7]:5000")]
    with handshake(server, "/", fields) as ws:
        scope = json.loads(ws.read_text())
    assert scope["type"] == "websocket"
    assert scope["scheme"] == scheme
    assert scope["client"] == ["2001:db8::7", 5000]


def test_websocket_scheme_is_wss_under_scheme_https(server_pool: ServerPool) -> None:
    server = served(server_pool, "asgi", "--scheme", "https")
    with handshake(server, "/", []) as ws:
        assert json.loads(ws.read_text())["scheme"] == "wss"


# --- Access log -------------------------------------------------------------------------------------------------


def test_the_access_log_shows_the_forwarded_client(start_server: Callable[..., Server]) -> None:
    server = start_server(WSGI, "--access-log", "--forwarded-allow-ips", "127.0.0.1")
    h1(server, [("X-Forwarded-For", "203.0.113.7")])
    line = server.stdout.wait_for(lambda text: '"GET / HTTP/1.1" 200' in text, 5)
    assert line is not None, server.stdout.text()
    assert line.startswith("203.0.113.7 - "), line
    h2(server, [("Forwarded", 'for="[2001:db8::1]:4711"')])
    line = server.stdout.wait_for(lambda text: '"GET / HTTP/2" 200' in text, 5)
    assert line is not None, server.stdout.text()
    assert line.startswith("2001:db8::1:4711 - "), line
    json_log = start_server(ASGI, "--access-log-format", "json", "--forwarded-allow-ips", "127.0.0.1")
    h1(json_log, [("X-Forwarded-For", "203.0.113.8")])
    line = json_log.stdout.wait_for(lambda text: text.startswith("{"), 5)
    assert line is not None, json_log.stdout.text()
    record = json.loads(line)
    assert record["remote"] == "203.0.113.8"
    assert record["port"] is None


def test_the_access_log_of_an_untrusted_peer_shows_the_socket(start_server: Callable[..., Server]) -> None:
    server = start_server(WSGI, "--access-log")
    h1(server, [("X-Forwarded-For", "203.0.113.7")])
    line = server.stdout.wait_for(lambda text: '"GET / HTTP/1.1" 200' in text, 5)
    assert line is not None, server.stdout.text()
    assert line.startswith("127.0.0.1:"), line


# --- Usage errors -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "environment", "named"),
    [
        (["--forwarded-allow-ips", "127.0.0.1, 10.0.0.0/33"], None, "'10.0.0.0/33'"),
        (["--forwarded-allow-ips", "localhost"], None, "'localhost'"),
        (["--forwarded-allow-ips", "::1/129"], None, "'::1/129'"),
        ([], "10.0.0.1,bogus", "FORWARDED_ALLOW_IPS: 'bogus'"),
        (["--scheme", "ftp"], None, "'ftp'"),
    ],
)
def test_a_bad_item_is_a_usage_error(
    tmp_path: Path, arguments: list[str], environment: str | None, named: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if environment is not None:
        monkeypatch.setenv("FORWARDED_ALLOW_IPS", environment)
    else:
        monkeypatch.delenv("FORWARDED_ALLOW_IPS", raising=False)
    result = subprocess.run(
        [*peregrine_command(), "--python-path", str(APPS), *arguments, ASGI],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=tmp_path,
        check=False,
    )
    assert result.returncode == 2, result
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("peregrine: error: "), lines
    assert named in lines[0], lines


# --- A real sender: nginx ---------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def nginx_in_front(directory: Path, port: int, upstream: int) -> Path:
    """An nginx configuration proxying 127.0.0.1:`port` to peregrine, run as this user (no master process)."""
    config = f"""
daemon off;
master_process off;
worker_processes 1;
pid {directory}/nginx.pid;
error_log stderr warn;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {directory}/body;
    proxy_temp_path {directory}/proxy;
    fastcgi_temp_path {directory}/fastcgi;
    uwsgi_temp_path {directory}/uwsgi;
    scgi_temp_path {directory}/scgi;
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://127.0.0.1:{upstream};
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_set_header Host $host;
        }}
    }}
}}
"""
    path = directory / "nginx.conf"
    path.write_text(config)
    return path


def through_nginx(port: int, headers: Headers) -> dict[str, Any]:
    """A GET to nginx from 127.0.0.2, so the client nginx sees is not the address nginx connects from."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10, source_address=("127.0.0.2", 0))
    with RawConnection(sock) as connection:
        connection.send(request("GET", "/", [*headers, ("Connection", "close")], host="shop.example"))
        response = connection.read_response()
    assert response.status == 200, (response.status, response.body[:500])
    answer: dict[str, Any] = json.loads(response.body)
    return answer


@pytest.mark.parametrize("interface", ["asgi", "wsgi"])
def test_behind_nginx_the_client_is_the_one_nginx_saw(tmp_path_factory: pytest.TempPathFactory, interface: str) -> None:
    assert NGINX.exists(), "this test runs nginx in front of peregrine: install Debian's nginx"
    state = tmp_path_factory.mktemp("server")
    server = start(ASGI if interface == "asgi" else WSGI, "--forwarded-allow-ips", "127.0.0.1", state=state)
    scratch = tmp_path_factory.mktemp("nginx")
    port = free_port()
    nginx = subprocess.Popen(
        [str(NGINX), "-p", str(scratch), "-e", "stderr", "-c", str(nginx_in_front(scratch, port, server.port))],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert nginx.poll() is None, nginx.communicate()[1]
                assert time.monotonic() < deadline, "nginx did not start listening"
                time.sleep(0.05)
        got = view(interface, through_nginx(port, []))
        assert got["client"] == ["127.0.0.2", 0]
        assert got["scheme"] == "http"
        assert got["host"] == "shop.example"
        # A client's own X-Forwarded-For is kept by nginx to the left of what it saw: the rightmost untrusted hop
        # (the address nginx saw) is the client, never the forged one.
        got = view(interface, through_nginx(port, [("X-Forwarded-For", "198.51.100.66")]))
        assert got["client"] == ["127.0.0.2", 0]
    finally:
        nginx.terminate()
        nginx.wait(timeout=10)
        server.stop()
