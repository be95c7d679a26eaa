"""Shared pieces of the benchmark harness: applications, protocols, servers, processes, validation, load.

`run.py` (throughput) and `memory.py` (resident memory) build on this module.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import hashlib
import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from apps.payloads import BIG, ECHO, HELLO, JSON, bulk_chunks

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

BENCH_DIR = Path(__file__).resolve().parent
#: The body of the `bulk-*` apps (32 MiB), for validation.
BULK = b"".join(bulk_chunks())
REPO_DIR = BENCH_DIR.parent
VENV_DIR = BENCH_DIR / ".venv"
RESULTS_DIR = BENCH_DIR / "results"
POST_SCRIPT = BENCH_DIR / "post.lua"
NO_RESUME_SOURCE = BENCH_DIR / "no_resume.c"
WS_LOAD_SOURCE = BENCH_DIR / "ws_load.c"
#: The HTTP/3 load generator (benchmarks/h3load/, C on Debian's ngtcp2, nghttp3 and GnuTLS) and its build script.
H3LOAD_BUILD = BENCH_DIR / "h3load" / "build.sh"
TLS_PROBE = BENCH_DIR / "tls_probe.py"
HOST = "127.0.0.1"
SERVER_CPU = 0
CLIENT_CPU = 1
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def log(message: str) -> None:
    """Progress for the person running the harness (stderr, so stdout stays for reports)."""
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


@dataclasses.dataclass(frozen=True)
class App:
    """One application: what to send, what must come back, and its target per interface."""

    name: str
    method: str
    body: bytes
    expected: bytes
    wsgi: str | None
    asgi: str | None
    nginx: bool
    #: A WebSocket application: "echo" or "broadcast" (the load generator's mode); None for HTTP ones.
    ws_mode: str | None = None
    #: A bulk download (run in the `h3-bulk` mode only), loaded by this many connections of one stream each.
    bulk_connections: int | None = None

    @property
    def bulk(self) -> bool:
        """Whether this is a bulk-download application (run in the `h3-bulk` mode only)."""
        return self.bulk_connections is not None

    @property
    def websocket(self) -> bool:
        """Whether this is a WebSocket application (run in the `ws` mode only)."""
        return self.ws_mode is not None

    @property
    def wrk_script(self) -> Path | None:
        """The wrk Lua script that shapes the request, if it is not a plain GET."""
        return POST_SCRIPT if self.method == "POST" else None


APPS: dict[str, App] = {
    app.name: app
    for app in (
        App("hello", "GET", b"", HELLO, "apps.wsgi_apps:hello", "apps.asgi_apps:hello", nginx=True),
        App("12k", "GET", b"", BIG, "apps.wsgi_apps:big", "apps.asgi_apps:big", nginx=True),
        App("echo", "POST", ECHO, ECHO, "apps.wsgi_apps:echo", "apps.asgi_apps:echo", nginx=False),
        App("fastapi", "GET", b"", JSON, None, "apps.fastapi_app:app", nginx=False),
        App("ws-echo", "GET", b"", b"", None, "apps.ws_apps:echo", nginx=False, ws_mode="echo"),
        App("ws-broadcast", "GET", b"", b"", None, "apps.ws_apps:broadcast", nginx=False, ws_mode="broadcast"),
        # HTTP/3 bulk download: the same 32 MiB response over one connection and over four.
        *(
            App(
                f"bulk-{count}",
                "GET",
                b"",
                BULK,
                "apps.bulk_apps:wsgi",
                "apps.bulk_apps:asgi",
                nginx=True,
                bulk_connections=count,
            )
            for count in (1, 4)
        ),
    )
}
#: Bytes of every WebSocket message (text) the load generator and the validation send.
WS_MESSAGE_SIZE = 32


@dataclasses.dataclass(frozen=True)
class Protocol:
    """How a server is loaded: the client, whether over TLS and HTTP/2, and whether each request is a new connection."""

    name: str
    #: The load generator: "wrk" (HTTP/1.1), "h2load" (HTTP/2), "ws_load" (WebSocket, benchmarks/ws_load.c) or
    #: "h3load" (HTTP/3, benchmarks/h3load/).
    client: str
    tls: bool
    http2: bool
    #: Every request on a new connection (`Connection: close`): with TLS, every request is a full handshake.
    new_connection_per_request: bool = False
    #: WebSocket over HTTP/1.1: the apps are WebSocket apps, a "request" is a message.
    websocket: bool = False
    #: HTTP/3 over QUIC (UDP, on the same port number as the server's TCP listener, if it has one).
    http3: bool = False
    #: Bulk download: the apps are the `bulk-*` apps, each request a 32 MiB response.
    bulk: bool = False
    #: Open loop (benchmarks/open_loop.py): HTTP/1.1 at a fixed rate, latency from each request's intended send time.
    open_loop: bool = False

    @property
    def scheme(self) -> str:
        """URL scheme."""
        return "https" if self.tls else "http"


PROTOCOLS: dict[str, Protocol] = {
    protocol.name: protocol
    for protocol in (
        Protocol("h1", "wrk", tls=False, http2=False),
        Protocol("h1-tls", "wrk", tls=True, http2=False),
        Protocol("h2c", "h2load", tls=False, http2=True),
        Protocol("h2-tls", "h2load", tls=True, http2=True),
        Protocol("tls-handshake", "wrk", tls=True, http2=False, new_connection_per_request=True),
        Protocol("ws", "ws_load", tls=False, http2=False, websocket=True),
        # HTTP/3 (issue 15 item 7): many small requests over many connections, and bulk downloads.
        Protocol("h3", "h3load", tls=True, http2=False, http3=True),
        Protocol("h3-bulk", "h3load", tls=True, http2=False, http3=True, bulk=True),
        # Issue 20 point 4: fixed-rate latency at a share of each server's closed-loop maximum (any h1 server).
        Protocol("h1-openloop", "openloop", tls=False, http2=False, open_loop=True),
    )
}
H1 = PROTOCOLS["h1"]
WS = PROTOCOLS["ws"]
H3 = PROTOCOLS["h3"]
_ALL_PROTOCOLS = frozenset(PROTOCOLS)
_HTTP1_PROTOCOLS = frozenset({"h1", "h1-tls", "tls-handshake"})
_HTTP3_PROTOCOLS = frozenset({"h3", "h3-bulk"})


@dataclasses.dataclass(frozen=True)
class Server:
    """A server under test; `interface` is wsgi, asgi or static (nginx); `protocols` the modes it is run in."""

    name: str
    interface: str
    protocols: frozenset[str] = frozenset({"h1"})

    def serves(self, app: App) -> bool:
        """Whether this server runs `app` in the harness."""
        if self.interface == "static":
            return app.nginx
        return (app.wsgi if self.interface == "wsgi" else app.asgi) is not None

    def speaks(self, protocol: Protocol) -> bool:
        """Whether this server is measured in `protocol`'s mode (the open-loop one: every server of plain h1)."""
        return protocol.name in self.protocols or (protocol.open_loop and "h1" in self.protocols)

    def target(self, app: App) -> str:
        """MODULE:ATTR of `app` for this server's interface."""
        target = app.wsgi if self.interface == "wsgi" else app.asgi
        if target is None:
            raise ValueError(f"{self.name} does not serve {app.name}")
        return target


SERVERS: dict[str, Server] = {
    server.name: server
    for server in (
        Server("nginx", "static"),
        Server("peregrine-wsgi", "wsgi", frozenset({"h1"}) | _HTTP3_PROTOCOLS),
        Server("bjoern", "wsgi"),
        Server("granian-wsgi", "wsgi"),
        Server("gunicorn-sync", "wsgi"),
        Server("peregrine-asgi", "asgi", _ALL_PROTOCOLS),
        # peregrine-asgi is what `pip install .` gives: uvloop, a dependency wherever it has a wheel
        # (build_support/dependencies.py). This is the same server on plain asyncio (`--no-uvloop`), what a
        # free-threaded build or a PEREGRINE_NO_UVLOOP=1 install serves ASGI on: the loop's share, measured.
        Server("peregrine-asgi-asyncio", "asgi"),
        # uvicorn has no HTTP/2; its WebSockets are websockets' (the sans-I/O protocol, its default).
        Server("uvicorn", "asgi", _HTTP1_PROTOCOLS | {"ws"}),
        # granian has no HTTP/3.
        Server("granian-asgi", "asgi", _ALL_PROTOCOLS - _HTTP3_PROTOCOLS),
        # The WebSocket benchmark compares with uvicorn and granian (issue 7), not hypercorn.
        Server("hypercorn", "asgi", _ALL_PROTOCOLS - {"ws"}),
        # Another build of peregrine (run.py --baseline), measured in the same interleaved rounds: a change's
        # before and after side by side. Chosen only when a baseline is given.
        Server("peregrine-wsgi-baseline", "wsgi", frozenset({"h1"}) | _HTTP3_PROTOCOLS),
        Server("peregrine-asgi-baseline", "asgi", _ALL_PROTOCOLS),
        # The HTTP/3 peers: aioquic's own example server (examples/http3_server.py of the installed aioquic's
        # sdist, any ASGI app) and Caddy (Go, quic-go; fixed responses, the non-Python ceiling as nginx is for
        # HTTP/1.1).
        Server("aioquic", "asgi", _HTTP3_PROTOCOLS),
        Server("caddy", "static", _HTTP3_PROTOCOLS),
    )
}
#: The servers that run a baseline build (only with run.py --baseline).
BASELINE_SERVERS = {"peregrine-wsgi-baseline": "peregrine-wsgi", "peregrine-asgi-baseline": "peregrine-asgi"}


@dataclasses.dataclass(frozen=True)
class TlsFiles:
    """The PEM certificate chain and (PKCS#8) key every TLS server is given, made once per run; `ca` verifies it."""

    cert: Path
    key: Path
    ca: Path


def have_trustme() -> bool:
    """Whether the `trustme` package is importable (the fallback when the openssl CLI is missing)."""
    return importlib.util.find_spec("trustme") is not None


def make_certificate(directory: Path) -> TlsFiles:
    """A certificate for 127.0.0.1 with an ECDSA P-256 key.

    Self-signed by the openssl CLI (the key in PKCS#8, which granian's help asks for); without the CLI, issued by
    a throwaway `trustme` CA (a chain of two; the key in SEC1 form, which granian 2.8 accepts as well).
    """
    if not have("openssl") and have_trustme():
        import trustme  # noqa: PLC0415 - optional, only without the openssl CLI

        authority = trustme.CA()
        issued = authority.issue_cert(HOST, "localhost")
        tls = TlsFiles(cert=directory / "cert.pem", key=directory / "key.pem", ca=directory / "ca.pem")
        issued.private_key_pem.write_to_path(str(tls.key))
        tls.cert.write_bytes(b"".join(blob.bytes() for blob in issued.cert_chain_pems))
        authority.cert_pem.write_to_path(str(tls.ca))
        return tls
    tls = TlsFiles(cert=directory / "cert.pem", key=directory / "key.pem", ca=directory / "cert.pem")
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
            str(tls.key),
            "-out",
            str(tls.cert),
            "-days",
            "2",
            "-subj",
            f"/CN={HOST}",
            "-addext",
            f"subjectAltName=IP:{HOST},DNS:localhost",
        ],
        check=True,
        capture_output=True,
    )
    return tls


def build_ws_load(directory: Path) -> Path:
    """Compile benchmarks/ws_load.c (the WebSocket load generator); its path."""
    program = directory / "ws_load"
    subprocess.run(["cc", "-O2", "-o", str(program), str(WS_LOAD_SOURCE)], check=True, capture_output=True)
    return program


def build_no_resume(directory: Path) -> Path:
    """Compile benchmarks/no_resume.c (the LD_PRELOAD shim that stops wrk resuming TLS sessions); its path."""
    library = directory / "no_resume.so"
    subprocess.run(
        ["cc", "-shared", "-fPIC", "-O2", "-o", str(library), str(NO_RESUME_SOURCE), "-ldl"],
        check=True,
        capture_output=True,
    )
    return library


@dataclasses.dataclass
class Environment:
    """Where the executables come from."""

    peregrine: str
    venv: Path = VENV_DIR
    #: Another peregrine executable to measure beside `peregrine` (run.py --baseline), or None.
    baseline: str | None = None
    #: Idle keep-alive timeout to ask of servers that have one (seconds; None: their default).
    keep_alive: int | None = None
    #: Certificate and key for the TLS modes (None: no TLS mode is run).
    tls: TlsFiles | None = None
    #: The compiled no-resumption shim for the handshake mode.
    no_resume: Path | None = None
    #: The compiled WebSocket load generator for the `ws` mode.
    ws_load: Path | None = None
    #: The compiled HTTP/3 load generator for the `h3` and `h3-bulk` modes (and memory.py --h3).
    h3load: Path | None = None
    #: The compiled open-loop client (benchmarks/openloop/) for the `h1-openloop` mode.
    openloop: Path | None = None
    #: aioquic's examples/http3_server.py (fetch_aioquic_server), for the `aioquic` server.
    aioquic_server: Path | None = None

    def tool(self, name: str) -> str:
        """Path of a console script or interpreter in the peer venv."""
        return str(self.venv / "bin" / name)


def nginx_config(directory: Path, app: App, port: int) -> Path:
    """Write an nginx configuration serving `app`'s fixed response with one worker; return its path."""
    # `return 200 "text"` is nginx's cheapest fixed response, but a configuration parameter is limited to
    # 4 KiB: larger bodies are served from a file (sendfile; open_file_cache keeps it open).
    if len(app.expected) < 4000:
        location = f'return 200 "{app.expected.decode()}";'
    else:
        (directory / "body").write_bytes(app.expected)
        (directory / "body").chmod(0o644)
        directory.chmod(0o755)  # the worker runs as an unprivileged user
        location = f"root {directory}; try_files /body =404;"
    config = f"""
daemon off;
master_process on;
worker_processes 1;
pid {directory}/nginx.pid;
error_log stderr warn;
events {{ worker_connections 8192; }}
http {{
    access_log off;
    keepalive_timeout 300s;
    keepalive_requests 100000000;
    default_type text/plain;
    sendfile on;
    open_file_cache max=16;
    etag off;
    client_body_temp_path {directory}/body;
    proxy_temp_path {directory}/proxy;
    fastcgi_temp_path {directory}/fastcgi;
    uwsgi_temp_path {directory}/uwsgi;
    scgi_temp_path {directory}/scgi;
    server {{
        listen {HOST}:{port} backlog=2048;
        location / {{ {location} }}
    }}
}}
"""
    path = directory / "nginx.conf"
    path.write_text(config)
    return path


#: Bodies up to this size are a literal in the Caddyfile (held in memory, as nginx's `return`); larger ones a file.
CADDY_RESPOND_LIMIT = 64 * 1024


def caddy_config(directory: Path, app: App, port: int, tls: TlsFiles) -> Path:
    """Write a Caddyfile serving `app`'s fixed response over HTTPS on `port` (HTTP/3 on UDP); return its path.

    Offline and self-contained: no admin endpoint, no automatic HTTPS (the run's certificate is given), storage
    in `directory` (and its autosaved configuration, through XDG_CONFIG_HOME: `server_environment`). `hello` and
    `12k` are a `respond` literal, the 32 MiB bulk body a file (`file_server`).
    """
    if len(app.expected) <= CADDY_RESPOND_LIMIT:
        handler = f"respond `{app.expected.decode()}` 200"
    else:
        (directory / "body").write_bytes(app.expected)
        handler = f"root * {directory}\n    rewrite * /body\n    file_server"
    config = f"""{{
    admin off
    auto_https off
    storage file_system {directory / "data"}
    log {{
        level ERROR
    }}
    servers {{
        protocols h1 h2 h3
    }}
}}
https://{HOST}:{port} {{
    tls {tls.cert} {tls.key}
    header Content-Type text/plain
    {handler}
}}
"""
    path = directory / "Caddyfile"
    path.write_text(config)
    return path


#: Runs aioquic's examples/http3_server.py unchanged, with Python's logging at WARNING (the example configures
#: INFO, a line per connection event; the other servers run at warning level too).
_AIOQUIC_WRAPPER = (
    "import logging, runpy, sys; logging.basicConfig(level=logging.WARNING); "
    "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
)


def _tls_options(env: Environment, protocol: Protocol, cert_option: str, key_option: str) -> list[str]:
    """A server's certificate and key options for a TLS mode (none for a cleartext one)."""
    if not protocol.tls:
        return []
    if env.tls is None:
        raise ValueError(f"{protocol.name} needs a certificate (Environment.tls)")
    return [cert_option, str(env.tls.cert), key_option, str(env.tls.key)]


@dataclasses.dataclass(frozen=True)
class Job:
    """What to run: a server, the application it serves, and the mode (protocol) it is loaded in."""

    server: Server
    app: App
    protocol: Protocol = H1


def server_command(job: Job, port: int, env: Environment, scratch: Path) -> list[str]:
    """The argument vector that starts the job's server serving its app on `port` for its protocol's mode."""
    server, app, protocol = job.server, job.app, job.protocol
    ka = env.keep_alive
    peregrine_tls = _tls_options(env, protocol, "--tls-cert", "--tls-key")
    # granian speaks one HTTP version per process: 2 for the HTTP/2 modes (h2c by prior knowledge, ALPN h2).
    granian = [
        *_granian(port, "2" if protocol.http2 else "1", websocket=protocol.websocket),
        *_tls_options(env, protocol, "--ssl-certificate", "--ssl-keyfile"),
    ]

    def peregrine(executable: str | None, interface: str, *options: str) -> list[str]:
        if executable is None:
            raise ValueError(f"{server.name} needs run.py --baseline")
        # --http3 serves QUIC on the TCP listener's port number; the worker count is left at its default, one.
        return [
            executable,
            "--host",
            HOST,
            "--port",
            str(port),
            "--log-level",
            "warning",
            "--protocol",
            interface,
            "--python-path",
            str(BENCH_DIR),
            *(["--keep-alive", str(ka * 1000)] if ka else []),
            *peregrine_tls,
            *(["--http3"] if protocol.http3 else []),
            *options,
            server.target(app),
        ]

    def aioquic() -> list[str]:
        if env.aioquic_server is None or env.tls is None:
            raise ValueError("the aioquic server needs its example script and a certificate (Environment)")
        return [
            env.tool("python"),
            "-c",
            _AIOQUIC_WRAPPER,
            str(env.aioquic_server),
            "--certificate",
            str(env.tls.cert),
            "--private-key",
            str(env.tls.key),
            "--host",
            HOST,
            "--port",
            str(port),
            server.target(app),
        ]

    def caddy() -> list[str]:
        if env.tls is None:
            raise ValueError("caddy needs a certificate (Environment.tls)")
        config = caddy_config(scratch, app, port, env.tls)
        return ["caddy", "run", "--config", str(config), "--adapter", "caddyfile"]

    builders: dict[str, Callable[[], list[str]]] = {
        "nginx": lambda: ["nginx", "-p", str(scratch), "-e", "stderr", "-c", str(nginx_config(scratch, app, port))],
        "peregrine-wsgi": lambda: peregrine(env.peregrine, "wsgi"),
        "peregrine-asgi": lambda: peregrine(env.peregrine, "asgi"),
        "peregrine-asgi-asyncio": lambda: peregrine(env.peregrine, "asgi", "--no-uvloop"),
        "peregrine-wsgi-baseline": lambda: peregrine(env.baseline, "wsgi"),
        "peregrine-asgi-baseline": lambda: peregrine(env.baseline, "asgi"),
        "bjoern": lambda: [
            env.tool("python"),
            str(BENCH_DIR / "apps" / "bjoern_run.py"),
            server.target(app),
            HOST,
            str(port),
        ],
        "granian-wsgi": lambda: [env.tool("granian"), "--interface", "wsgi", *granian, server.target(app)],
        "granian-asgi": lambda: [env.tool("granian"), "--interface", "asgi", *granian, server.target(app)],
        "gunicorn-sync": lambda: [
            env.tool("gunicorn"),
            "--workers",
            "1",
            "--worker-class",
            "sync",
            "--bind",
            f"{HOST}:{port}",
            "--log-level",
            "warning",
            server.target(app),
        ],
        "uvicorn": lambda: [
            env.tool("uvicorn"),
            "--host",
            HOST,
            "--port",
            str(port),
            "--loop",
            "uvloop",
            "--http",
            "httptools",
            "--interface",
            "asgi3",
            "--no-access-log",
            "--log-level",
            "warning",
            *(["--timeout-keep-alive", str(ka)] if ka else []),
            *_tls_options(env, protocol, "--ssl-certfile", "--ssl-keyfile"),
            server.target(app),
        ],
        "hypercorn": lambda: [
            env.tool("hypercorn"),
            "--workers",
            "1",
            "--worker-class",
            "uvloop",
            "--bind",
            f"{HOST}:{port}",
            "--log-level",
            "warning",
            *(["--keep-alive", str(ka)] if ka else []),
            *_tls_options(env, protocol, "--certfile", "--keyfile"),
            # HTTP/3 (aioquic inside hypercorn) on UDP, beside the TLS listener on TCP.
            *(["--quic-bind", f"{HOST}:{port}"] if protocol.http3 else []),
            server.target(app),
        ],
        "aioquic": aioquic,
        "caddy": caddy,
    }
    return builders[server.name]()


def _granian(port: int, http: str, *, websocket: bool = False) -> list[str]:
    """The options granian is started with: WebSockets off (`--no-ws`) except in the `ws` mode (its default: on)."""
    return [
        "--host",
        HOST,
        "--port",
        str(port),
        "--workers",
        "1",
        "--http",
        http,
        *([] if websocket else ["--no-ws"]),
        "--log-level",
        "warning",
    ]


def free_port() -> int:
    """A port number on HOST that nothing uses right now, in TCP and in UDP (HTTP/3 servers take both)."""
    while True:
        with socket.socket() as probe:
            probe.bind((HOST, 0))
            port = int(probe.getsockname()[1])
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as datagram:
                try:
                    datagram.bind((HOST, port))
                except OSError:
                    continue
                return port


def server_environment(job: Job, scratch: Path) -> dict[str, str]:
    """The environment a server starts in: the apps importable, no bytecode written, Caddy's state in `scratch`."""
    environ = dict(os.environ, PYTHONPATH=str(BENCH_DIR), PYTHONDONTWRITEBYTECODE="1")
    if job.server.name == "caddy":
        environ.update(XDG_DATA_HOME=str(scratch / "data"), XDG_CONFIG_HOME=str(scratch / "config"), HOME=str(scratch))
    return environ


def pinned(cpu: int | None, argv: list[str]) -> list[str]:
    """`argv` run under `taskset -c CPU` (unchanged when `cpu` is None)."""
    return argv if cpu is None else ["taskset", "-c", str(cpu), *argv]


@dataclasses.dataclass
class Running:
    """A started server: its process (the root of its tree), port and log file."""

    server: Server
    app: App
    process: subprocess.Popen[bytes]
    port: int
    log_path: Path

    @property
    def pid(self) -> int:
        """Process id of the tree's root."""
        return self.process.pid


def descendants(root: int) -> list[int]:
    """`root` and every process below it (from /proc's parent links)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    tree, pending = [], [root]
    while pending:
        pid = pending.pop()
        tree.append(pid)
        pending.extend(children.get(pid, []))
    return tree


def tree_cpu_seconds(root: int) -> dict[int, float]:
    """user+sys CPU seconds of each process in `root`'s tree (threads included), by pid."""
    result: dict[int, float] = {}
    for pid in descendants(root):
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            # After the command name: state is fields[0], so utime (14th) is [11] and stime (15th) is [12].
            result[pid] = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    return result


def cpu_between(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU seconds spent between two `tree_cpu_seconds` snapshots (processes new since count fully)."""
    return sum(value - before.get(pid, 0.0) for pid, value in after.items())


def _status_kib(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def tree_memory_kib(root: int) -> tuple[int, int]:
    """(sum of VmRSS, sum of Pss) over `root`'s process tree, in KiB."""
    rss = pss = 0
    for pid in descendants(root):
        with contextlib.suppress(OSError, ValueError):
            rss += _status_kib(pid, "VmRSS")
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    pss += int(line.split()[1])
    return rss, pss


class ValidationError(Exception):
    """A response was not what the application sends."""


def _read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ValidationError(f"connection closed before the end of the response head ({len(data)} bytes)")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
        raise ValidationError(f"bad status line {lines[0]!r}")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if "content-length" not in headers:
        raise ValidationError(f"no Content-Length in the response (headers: {sorted(headers)})")
    length = int(headers["content-length"])
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ValidationError(f"connection closed after {len(rest)} of {length} body bytes")
        rest += chunk
    return int(parts[1]), headers, rest


def request_bytes(app: App, port: int) -> bytes:
    """The HTTP/1.1 keep-alive request the harness sends to `app`."""
    head = f"{app.method} / HTTP/1.1\r\nHost: {HOST}:{port}\r\nUser-Agent: peregrine-bench\r\n"
    if app.method == "POST":
        head += f"Content-Type: application/octet-stream\r\nContent-Length: {len(app.body)}\r\n"
    return head.encode() + b"\r\n" + app.body


def client_context(tls: TlsFiles, alpn: list[str]) -> ssl.SSLContext:
    """A client TLS context that trusts only the run's own certificate and offers `alpn`."""
    context = ssl.create_default_context(cafile=str(tls.ca))
    context.set_alpn_protocols(alpn)
    return context


def validate(app: App, port: int, requests: int = 3, tls: TlsFiles | None = None) -> str:
    """Send `requests` requests on one keep-alive connection; raise ValidationError unless each is exact.

    With `tls`, the connection is TLS (the certificate verified against the run's own); the result then
    describes what was negotiated ("TLSv1.3 TLS_AES_256_GCM_SHA384"), else it is "".
    """
    with socket.create_connection((HOST, port), timeout=10) as raw:
        sock = client_context(tls, ["http/1.1"]).wrap_socket(raw, server_hostname=HOST) if tls else raw
        negotiated = ""
        if isinstance(sock, ssl.SSLSocket):
            cipher = sock.cipher()
            negotiated = f"{sock.version()} {cipher[0] if cipher else '?'}"
        with sock:
            _exchange(app, port, sock, requests)
        return negotiated


def _exchange(app: App, port: int, sock: socket.socket, requests: int) -> None:
    """Send `requests` requests on `sock` and check each response."""
    for _ in range(requests):
        sock.sendall(request_bytes(app, port))
        status, headers, body = _read_response(sock)
        if status != 200:
            raise ValidationError(f"{app.name}: status {status}, expected 200")
        if body != app.expected:
            raise ValidationError(_body_differs(app, body))
        if headers.get("connection", "").lower() == "close":
            return  # gunicorn's sync worker closes after each response; one exact response is enough


#: curl's exit status when it could not connect (the server is not listening yet).
CURL_COULD_NOT_CONNECT = 7


def validate_h2(app: App, port: int, tls: TlsFiles | None = None) -> str:
    """One HTTP/2 request with curl (h2c by prior knowledge, or ALPN h2 over TLS); raise unless it is exact.

    Raises ConnectionRefusedError while nothing listens, so that `start` keeps waiting.
    """
    with tempfile.TemporaryDirectory(prefix="bench-curl-") as scratch:
        body_path = Path(scratch) / "body"
        argv = ["curl", "-sS", "--max-time", "10", "-o", str(body_path), "-w", "%{http_code} %{http_version}"]
        if tls is None:
            argv += ["--http2-prior-knowledge", f"http://{HOST}:{port}/"]
        else:
            argv += ["--http2", "--cacert", str(tls.ca), f"https://{HOST}:{port}/"]
        if app.method == "POST":
            (Path(scratch) / "request").write_bytes(app.body)
            argv += [
                "--data-binary",
                f"@{Path(scratch) / 'request'}",
                "-H",
                "Content-Type: application/octet-stream",
            ]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
        if done.returncode == CURL_COULD_NOT_CONNECT:
            raise ConnectionRefusedError(done.stderr.strip())
        if done.returncode != 0:
            raise ValidationError(f"{app.name}: curl failed ({done.returncode}): {done.stderr.strip()}")
        status, _, version = done.stdout.partition(" ")
        if version != "2":
            raise ValidationError(f"{app.name}: answered over HTTP/{version}, expected HTTP/2")
        if status != "200":
            raise ValidationError(f"{app.name}: status {status}, expected 200")
        body = body_path.read_bytes() if body_path.exists() else b""
        if body != app.expected:
            raise ValidationError(_body_differs(app, body))
    return "h2" if tls else "h2c"


#: Bodies larger than this are validated with a quiet gtlsclient (validate_h3).
QUIET_H3_VALIDATION = 1 << 20


def validate_h3(app: App, port: int, tls: TlsFiles) -> str:
    """One HTTP/3 request with Debian's `gtlsclient` (ngtcp2 and GnuTLS, in C); raise unless it is exact.

    The status comes from its HTTP dump (`[:status: 200]`), the body from `--download`, and what was negotiated
    from its log ("Negotiated ALPN is h3"). A connection that never completes its handshake (nothing listening
    yet on the UDP port: the handshake times out) raises ConnectionRefusedError, so that `start` keeps waiting.

    That log has a line per packet: for the 32 MiB of the bulk apps it is 13 MB and 4 s of the client's time,
    so large bodies are fetched with `-q`, which prints nothing: the check is then that the exact body arrived
    (and h3load counts every status during the load; a round with one that is not 2xx fails).
    """
    del tls  # gtlsclient does not verify certificates unless asked to; the TLS modes' curl check does
    with tempfile.TemporaryDirectory(prefix="bench-h3-") as scratch:
        downloads = Path(scratch) / "download"
        downloads.mkdir()
        quiet = len(app.expected) > QUIET_H3_VALIDATION
        argv = ["gtlsclient", *(["-q"] if quiet else []), "--exit-on-all-streams-close", "--no-quic-dump",
                "--no-http-dump", "--timeout=3s", f"--download={downloads}"]  # fmt: skip
        if app.method == "POST":
            (Path(scratch) / "request").write_bytes(app.body)
            argv += ["--http-method=POST", f"--data={Path(scratch) / 'request'}"]
        argv += [HOST, str(port), f"https://{HOST}:{port}/"]
        done = subprocess.run(argv, capture_output=True, text=True, errors="replace", timeout=120, check=False)
        output = done.stdout + done.stderr
        saved = list(downloads.iterdir())
        body = saved[0].read_bytes() if saved else b""
        if quiet:
            if not saved:  # nothing is printed quietly: no body at all counts as not answering yet
                raise ConnectionRefusedError(f"no HTTP/3 response from {HOST}:{port}: {output.strip()[-300:]}")
            if body != app.expected:
                raise ValidationError(_body_differs(app, body))
            return "h3 (quiet check: body only)"
        if "QUIC handshake has completed" not in output:
            raise ConnectionRefusedError(f"no QUIC handshake with {HOST}:{port}: {output.strip()[-300:]}")
        status = re.search(r"^http: stream 0x0 \[:status: (\d+)\]$", output, re.MULTILINE)
        if status is None:
            raise ValidationError(f"{app.name}: no HTTP/3 response: {output.strip()[-500:]}")
        if status.group(1) != "200":
            raise ValidationError(f"{app.name}: status {status.group(1)}, expected 200")
        if body != app.expected:
            raise ValidationError(_body_differs(app, body))
        found = [re.search(rf"^Negotiated {what} is (\S+)$", output, re.MULTILINE) for what in ("cipher suite", "ALPN")]
        if found[1] is None or found[1].group(1) != "h3":
            raise ValidationError(f"{app.name}: gtlsclient did not negotiate h3")
    return " ".join(match.group(1) for match in found if match)


def _body_differs(app: App, body: bytes) -> str:
    return f"{app.name}: body of {len(body)} bytes differs from the expected {len(app.expected)}"


_WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_WS_TEXT, _WS_CLOSE, _WS_PING, _WS_PONG = 1, 8, 9, 10


def ws_handshake(port: int) -> tuple[bytes, bytes]:
    """(the upgrade request with a fresh key, the Sec-WebSocket-Accept the server must answer it with)."""
    key = base64.b64encode(os.urandom(16))
    accept = base64.b64encode(hashlib.sha1(key + _WS_GUID, usedforsecurity=False).digest())
    request = (
        f"GET / HTTP/1.1\r\nHost: {HOST}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key.decode()}\r\nSec-WebSocket-Version: 13\r\n\r\n"
    ).encode()
    return request, accept


def ws_check_head(head: bytes, accept: bytes) -> None:
    """Raise ValidationError unless `head` (up to the blank line) is a 101 with the right accept value."""
    lines = head.decode("latin-1").split("\r\n")
    if not lines[0].startswith("HTTP/1.1 101"):
        raise ValidationError(f"WebSocket handshake answered {lines[0]!r}, not 101")
    headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
    if headers.get("sec-websocket-accept", "").encode() != accept:
        raise ValidationError(f"wrong Sec-WebSocket-Accept {headers.get('sec-websocket-accept')!r}")
    if headers.get("sec-websocket-extensions"):
        raise ValidationError(f"an extension nobody asked for: {headers['sec-websocket-extensions']!r}")


def ws_frame(payload: bytes, opcode: int = _WS_TEXT) -> bytes:
    """A masked client frame (FIN set) of `opcode` carrying `payload` (< 126 bytes)."""
    mask = os.urandom(4)
    masked = bytes(byte ^ mask[index & 3] for index, byte in enumerate(payload))
    return bytes((0x80 | opcode, 0x80 | len(payload))) + mask + masked


def ws_parse(buffer: bytes) -> tuple[int, bytes, int] | None:
    """(opcode, payload, bytes used) of the first whole server frame in `buffer`, or None if it is incomplete."""
    if len(buffer) < 2:
        return None
    if buffer[1] & 0x80:
        raise ValidationError("the server masked a frame")
    if not buffer[0] & 0x80:
        raise ValidationError("a fragmented message")
    length, head = buffer[1] & 0x7F, 2
    if length == 126:
        length, head = int.from_bytes(buffer[2:4]), 4
    elif length == 127:
        length, head = int.from_bytes(buffer[2:10]), 10
    if len(buffer) < head + length:
        return None
    return buffer[0] & 0x0F, buffer[head : head + length], head + length


def ws_message(index: int, tag: str = "check") -> bytes:
    """The `index`th WS_MESSAGE_SIZE-byte text message of the validation."""
    return f"{tag} {index:08d} ".encode().ljust(WS_MESSAGE_SIZE, b"x")


class WsClient:
    """A blocking WebSocket client over plain TCP, for validation: handshake checked, text messages."""

    def __init__(self, port: int, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection((HOST, port), timeout=timeout)
        self.buffer = b""
        request, accept = ws_handshake(port)
        self.sock.sendall(request)
        while b"\r\n\r\n" not in self.buffer:
            self._fill()
        head, _, self.buffer = self.buffer.partition(b"\r\n\r\n")
        ws_check_head(head, accept)

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ValidationError("the server closed the connection")
        self.buffer += chunk

    def send(self, payload: bytes) -> None:
        """Send one text message."""
        self.sock.sendall(ws_frame(payload))

    def receive(self, timeout: float = 10.0) -> bytes:
        """The next text or binary message (pings answered); raise TimeoutError if none comes in `timeout` s."""
        self.sock.settimeout(timeout)
        while True:
            frame = ws_parse(self.buffer)
            if frame is None:
                self._fill()
                continue
            opcode, payload, used = frame
            self.buffer = self.buffer[used:]
            if opcode == _WS_PING:
                self.sock.sendall(ws_frame(payload, _WS_PONG))
            elif opcode == _WS_CLOSE:
                raise ValidationError(f"the server closed the WebSocket ({payload[:2].hex()})")
            elif opcode != _WS_PONG:
                return payload

    def close(self) -> None:
        """Send a close frame (1000) and close the socket."""
        with contextlib.suppress(OSError):
            self.sock.sendall(ws_frame((1000).to_bytes(2), _WS_CLOSE))
        self.sock.close()


def validate_ws(app: App, port: int, messages: int = 3) -> str:
    """Check a WebSocket app: `echo` returns each message; `broadcast` delivers one client's message to another.

    Raises ConnectionRefusedError (an OSError) while nothing listens, so that `start` keeps waiting.
    """
    first = WsClient(port)
    try:
        if app.ws_mode == "echo":
            for index in range(messages):
                first.send(ws_message(index))
                if (echoed := first.receive()) != ws_message(index):
                    raise ValidationError(f"{app.name}: echo {echoed!r} of {ws_message(index)!r}")
            return "websocket"
        second = WsClient(port)
        try:
            # `second` joins the set once the app has accepted it: send until a message reaches it.
            deadline = time.monotonic() + 5
            index = 0
            while True:
                first.send(ws_message(index, "bcast"))
                if (own := first.receive()) != ws_message(index, "bcast"):
                    raise ValidationError(f"{app.name}: the sender got {own!r}, not its own broadcast")
                with contextlib.suppress(TimeoutError):
                    if second.receive(timeout=0.1).startswith(b"bcast "):
                        break
                if time.monotonic() > deadline:
                    raise ValidationError(f"{app.name}: no broadcast reached a second client in 5 s")
                index += 1
            # Both now in the set: one more must reach both, after whatever was still on its way to `second`.
            last = ws_message(index + 1, "bcast")
            first.send(last)
            if first.receive() != last:
                raise ValidationError(f"{app.name}: the sender did not get its own broadcast")
            while (got := second.receive()) != last:
                if not got.startswith(b"bcast "):
                    raise ValidationError(f"{app.name}: unexpected broadcast {got!r}")
        finally:
            second.close()
    finally:
        first.close()
    return "websocket"


def check(protocol: Protocol, app: App, port: int, env: Environment, requests: int = 3) -> str:
    """Validate responses the way `protocol`'s mode is served; a description of the negotiated TLS, if any."""
    tls = env.tls if protocol.tls else None
    if protocol.tls and tls is None:
        raise ValueError(f"{protocol.name} needs a certificate (Environment.tls)")
    if protocol.websocket:
        return validate_ws(app, port, requests)
    if protocol.http3:
        if tls is None:
            raise ValueError(f"{protocol.name} needs a certificate (Environment.tls)")
        return validate_h3(app, port, tls)
    if protocol.http2:
        return validate_h2(app, port, tls)
    return validate(app, port, requests, tls)


def start(job: Job, env: Environment, cpu: int | None, scratch: Path) -> Running:
    """Start the job's server (pinned to `cpu`) and wait until a request is answered exactly."""
    server, app, protocol = job.server, job.app, job.protocol
    port = free_port()
    argv = pinned(cpu, server_command(job, port, env, scratch))
    log_path = scratch / f"{server.name}-{app.name}.log"
    environ = server_environment(job, scratch)
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(
            argv,
            cwd=BENCH_DIR,
            env=environ,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    running = Running(server, app, process, port, log_path)
    deadline = time.monotonic() + 60
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"{server.name} exited with {process.returncode}: {tail(log_path)}")
        try:
            check(protocol, app, port, env, requests=1)
        except ValidationError:
            stop(running)
            raise
        except OSError as error:
            if time.monotonic() > deadline:
                stop(running)
                message = f"{server.name} did not answer {app.name} in 60 s: {error}; {tail(log_path)}"
                raise RuntimeError(message) from error
            time.sleep(0.1)
        else:
            return running


def tail(path: Path, lines: int = 8) -> str:
    """The last lines of a log file, for error messages."""
    try:
        return " | ".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def stop(running: Running) -> None:
    """Stop the server's whole process group: SIGTERM, then SIGKILL after 10 s."""
    pgid = running.process.pid  # start_new_session: the group is the one this harness created
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGTERM)
    try:
        running.process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)
        running.process.wait()
    # Workers of multi-process servers may outlive the master by a moment.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


@contextlib.contextmanager
def serving(server: Server, app: App, env: Environment, cpu: int | None, protocol: Protocol = H1) -> Iterator[Running]:
    """Run `server` on `app` (for `protocol`'s mode) for the duration of the block, in its own scratch directory."""
    with tempfile.TemporaryDirectory(prefix=f"bench-{server.name}-") as scratch:
        running = start(Job(server, app, protocol), env, cpu, Path(scratch))
        try:
            yield running
        finally:
            stop(running)


@dataclasses.dataclass
class LoadResult:
    """What one run of the load generator (wrk or h2load) measured. Latencies it does not report are None."""

    client: str
    requests: int
    #: Seconds of measured load (h2load: its main duration, without the warm-up).
    seconds: float
    rps: float
    p50_us: float | None
    p99_us: float | None
    mean_us: float | None
    max_us: float | None
    #: Socket errors (wrk) or failed requests (h2load).
    errors: int
    #: Responses that were not 2xx or 3xx.
    non_2xx: int
    #: The share of its core the client used over its whole run (wait4's rusage over wall time).
    client_cpu_fraction: float
    #: What h2load says it negotiated ("TLSv1.3 TLS_AES_128_GCM_SHA256 X25519 h2"); "" for wrk.
    negotiated: str = ""
    #: ws_load's broadcast mode: broadcasts that reached every client in the measured interval.
    broadcasts: int | None = None
    #: h3load: response body bytes received in the measured interval.
    body_bytes: int | None = None
    #: h3load: QUIC handshakes it made (one per connection, plus replacements of failed ones).
    handshakes: int | None = None


_UNITS = {"us": 1.0, "ms": 1000.0, "s": 1_000_000.0}
_DURATION = r"([\d.]+)(us|ms|s)"


def _latency(text: str, percent: str) -> float | None:
    match = re.search(rf"^\s+{percent}%\s+{_DURATION}\s*$", text, re.MULTILINE)
    return float(match.group(1)) * _UNITS[match.group(2)] if match else None


def parse_wrk(text: str, client_cpu_fraction: float) -> LoadResult:
    """Read the figures out of `wrk --latency` output."""
    done = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m)", text)
    rate = re.search(r"Requests/sec:\s+([\d.]+)", text)
    if not done or not rate:
        raise RuntimeError(f"unexpected wrk output: {text!r}")
    seconds = float(done.group(2)) * {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}[done.group(3)]
    socket_errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    # Thread Stats: "Latency   616.44us    1.21ms   37.56ms   96.50%" (avg, stdev, max, +/- stdev).
    latency = re.search(rf"^\s+Latency\s+{_DURATION}\s+{_DURATION}\s+{_DURATION}", text, re.MULTILINE)
    return LoadResult(
        client="wrk",
        requests=int(done.group(1)),
        seconds=seconds,
        rps=float(rate.group(1)),
        p50_us=_latency(text, "50"),
        p99_us=_latency(text, "99"),
        mean_us=float(latency.group(1)) * _UNITS[latency.group(2)] if latency else None,
        max_us=float(latency.group(5)) * _UNITS[latency.group(6)] if latency else None,
        errors=sum(int(value) for value in socket_errors.groups()) if socket_errors else 0,
        non_2xx=int(non_2xx.group(1)) if non_2xx else 0,
        client_cpu_fraction=client_cpu_fraction,
    )


def parse_h2load(text: str, seconds: float, client_cpu_fraction: float) -> LoadResult:
    """Read the figures out of h2load's output (`seconds`: the main duration it was given)."""
    finished = re.search(r"^finished in [\d.]+\w*, ([\d.]+) req/s", text, re.MULTILINE)
    counts = re.search(
        r"^requests: (\d+) total, (\d+) started, (\d+) done, (\d+) succeeded, (\d+) failed, (\d+) errored, "
        r"(\d+) timeout",
        text,
        re.MULTILINE,
    )
    statuses = re.search(r"^status codes: (\d+) 2xx, (\d+) 3xx, (\d+) 4xx, (\d+) 5xx", text, re.MULTILINE)
    # "time for request:  min  max  mean  sd  +/- sd"
    request = re.search(
        rf"^time for request:\s+{_DURATION}\s+{_DURATION}\s+{_DURATION}\s+{_DURATION}", text, re.MULTILINE
    )
    if not finished or not counts or not statuses:
        raise RuntimeError(f"unexpected h2load output: {text[-2000:]!r}")
    negotiated = " ".join(
        match.group(1).split()[0]
        for match in re.finditer(
            r"^(?:TLS Protocol|Cipher|Server Temp Key|Application protocol): (.+)$", text, re.MULTILINE
        )
    )
    succeeded = int(counts.group(4))
    return LoadResult(
        client="h2load",
        requests=succeeded,
        seconds=seconds,
        rps=float(finished.group(1)),
        p50_us=None,
        p99_us=None,
        mean_us=float(request.group(5)) * _UNITS[request.group(6)] if request else None,
        max_us=float(request.group(3)) * _UNITS[request.group(4)] if request else None,
        errors=int(counts.group(5)),
        non_2xx=int(statuses.group(3)) + int(statuses.group(4)),
        client_cpu_fraction=client_cpu_fraction,
        negotiated=negotiated,
    )


def _run_client(  # noqa: PLR0913 - the command, its CPU and time limit, plus three keyword-only options
    argv: list[str],
    cpu: int | None,
    limit: float,
    *,
    environ: dict[str, str] | None = None,
    mark: tuple[float, Callable[[], None]] | None = None,
    accepted: frozenset[int] = frozenset({0}),
) -> tuple[str, float]:
    """Run a load generator pinned to `cpu`; (its output, the share of a core it used while it ran).

    `mark` = (seconds, callback): the callback runs that long after the start (h2load's end of warm-up). The
    client is killed after `limit` seconds. An exit status outside `accepted` raises RuntimeError.
    """
    with tempfile.TemporaryFile() as output:
        began = time.monotonic()
        process = subprocess.Popen(pinned(cpu, argv), stdout=output, stderr=subprocess.STDOUT, env=environ)
        pending = mark
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            elapsed = time.monotonic() - began
            if pending is not None and elapsed >= pending[0]:
                pending[1]()
                pending = None
                continue
            if elapsed > limit:
                process.kill()
                _, status, usage = os.wait4(process.pid, 0)
                process.returncode = os.waitstatus_to_exitcode(status)
                raise RuntimeError(f"{argv[0]} still running after {limit:.0f} s: killed")
            time.sleep(min(0.02, pending[0] - elapsed) if pending is not None else 0.02)
        wall = time.monotonic() - began
        process.returncode = os.waitstatus_to_exitcode(status)
        output.seek(0)
        text = output.read().decode(errors="replace")
    if process.returncode not in accepted:
        raise RuntimeError(f"{argv[0]} failed ({process.returncode}): {text[-2000:]}")
    # The client's startup/teardown is a few ms: the fraction of its load phase it spent on a CPU.
    return text, (usage.ru_utime + usage.ru_stime) / max(wall, 1e-9)


@dataclasses.dataclass(frozen=True)
class Load:
    """How hard to load which port: the app (what to send), the mode, connections, HTTP/2 streams, client CPU."""

    app: App
    port: int
    protocol: Protocol = H1
    connections: int = 64
    #: Concurrent streams per HTTP/2 connection (h2load -m), or requests per HTTP/3 connection (h3load -m).
    streams: int = 10
    cpu: int | None = None
    #: A fixed number of requests instead of a duration (h3load -n; the bulk downloads).
    requests: int | None = None


def run_wrk(load: Load, seconds: float, env: Environment | None = None) -> LoadResult:
    """Run `wrk -t1` for `seconds` (whole, at least 1), pinned to the load's CPU; also measure wrk's own CPU use.

    In the handshake mode every request carries `Connection: close` and wrk runs with the no-resumption shim
    preloaded, so that every request is a new connection with a full TLS handshake.
    """
    protocol = load.protocol
    duration = max(1, round(seconds))
    argv = ["wrk", "-t1", f"-c{load.connections}", f"-d{duration}s", "--latency", "--timeout", "5s"]
    if load.app.wrk_script is not None:
        argv += ["-s", str(load.app.wrk_script)]
    environ = None
    if protocol.new_connection_per_request:
        argv += ["-H", "Connection: close"]
        if protocol.tls:
            if env is None or env.no_resume is None:
                raise ValueError(f"{protocol.name} needs the no-resumption shim (Environment.no_resume)")
            environ = dict(os.environ, LD_PRELOAD=str(env.no_resume))
    argv.append(f"{protocol.scheme}://{HOST}:{load.port}/")
    text, fraction = _run_client(argv, load.cpu, duration + 60, environ=environ)
    return parse_wrk(text, fraction)


def run_h2load(load: Load, seconds: float, warmup: float, on_measure: Callable[[], None]) -> LoadResult:
    """Run `h2load -t1 -c CONNECTIONS -m STREAMS` in duration mode (`-D`, after `--warm-up-time`), pinned.

    h2c is by prior knowledge (h2load's default for http://), TLS negotiates h2 by ALPN. `on_measure` is called
    when the warm-up is over (so the caller can read the server's CPU time there); h2load counts requests from
    that moment on.
    """
    argv = ["h2load", "-t1", f"-c{load.connections}", f"-m{load.streams}", f"-D{round(seconds * 1000)}ms"]
    if warmup > 0:
        argv.append(f"--warm-up-time={round(warmup * 1000)}ms")
    with tempfile.NamedTemporaryFile(prefix="bench-h2load-") as body:
        if load.app.method == "POST":
            body.write(load.app.body)
            body.flush()
            argv += ["-d", body.name, "-H", "content-type: application/octet-stream"]
        argv.append(f"{load.protocol.scheme}://{HOST}:{load.port}/")
        text, fraction = _run_client(argv, load.cpu, seconds + warmup + 60, mark=(warmup, on_measure))
    result = parse_h2load(text, seconds, fraction)
    if result.requests == 0:
        raise RuntimeError(f"h2load completed no request: {text[-2000:]}")
    application = result.negotiated.split()[-1] if result.negotiated else ""
    if application and application not in {"h2", "h2c"}:
        raise RuntimeError(f"h2load spoke {application}, not HTTP/2")
    return result


def build_h3load(directory: Path) -> Path:
    """Build the HTTP/3 load generator (benchmarks/h3load/build.sh DIRECTORY) into `directory`; its path."""
    subprocess.run([str(H3LOAD_BUILD), str(directory)], check=True, capture_output=True)
    program = directory / "h3load"
    if not program.exists():
        raise RuntimeError(f"{H3LOAD_BUILD} made no {program}")
    return program


def parse_h3load(text: str, wait4_fraction: float) -> LoadResult:
    """Read h3load's one JSON object (the last line of its output that is one).

    The client's share of its core is h3load's own CPU time over its measured window (`cpu_seconds` over
    `seconds`), which leaves out its handshakes and warm-up; `wait4_fraction` (over the whole run) if it has none.
    """
    found = None
    for line in reversed(text.splitlines()):
        if line.startswith("{"):
            with contextlib.suppress(ValueError):
                found = json.loads(line)
                break
    if not isinstance(found, dict) or "requests" not in found:
        raise RuntimeError(f"unexpected h3load output: {text[-2000:]!r}")
    latency = found.get("latency_us") or {}
    status = found.get("status") or {}
    seconds = float(found.get("seconds") or 0.0)
    cpu = found.get("cpu_seconds")
    return LoadResult(
        client="h3load",
        requests=int(found["requests"]),
        seconds=seconds,
        rps=float(found.get("rps") or 0.0),
        p50_us=latency.get("p50"),
        p99_us=latency.get("p99"),
        mean_us=None,
        max_us=latency.get("max"),
        errors=int(found.get("errors") or 0),
        non_2xx=sum(int(status.get(key) or 0) for key in ("3xx", "4xx", "5xx")),
        client_cpu_fraction=float(cpu) / seconds if isinstance(cpu, int | float) and seconds > 0 else wait4_fraction,
        body_bytes=int(found.get("body_bytes") or 0),
        handshakes=int(found.get("handshakes") or 0),
    )


#: Seconds a bulk-download run of h3load may take (the slowest peers move a few MiB/s on a loaded machine).
BULK_RUN_LIMIT = 900.0


def run_h3load(
    load: Load, seconds: float, warmup: float, on_measure: Callable[[], None], env: Environment
) -> LoadResult:
    """Run h3load (`-c CONNECTIONS -m STREAMS -d SECONDS -w WARMUP`, `-b` for POST) pinned, like h2load.

    h3load warms up and measures in one run; `on_measure` is called when the warm-up is over (on the harness's
    clock), so that the caller can read the server's CPU time there. Its exit status is 1 when a connection
    failed: the round is then recorded with the errors rather than raised.

    With `load.requests` (the bulk downloads) the run is `-n REQUESTS` instead: h3load counts a response's bytes
    when it completes, so a window of fixed length would count a 32 MiB download that straddles its edges
    wholly or not at all. The warm-up is then a run of its own (one download per connection), and the measured
    run counts from its start (its handshakes are a few ms against the 32 MiB downloads) to its last response.
    """
    if env.h3load is None:
        raise ValueError("the HTTP/3 modes need the compiled load generator (Environment.h3load)")
    argv = [str(env.h3load), "-c", str(load.connections), "-m", str(load.streams)]
    if load.app.method == "POST":
        argv += ["-b", str(len(load.app.body))]
    url = f"https://{HOST}:{load.port}/"
    accepted = frozenset({0, 1})
    if load.requests is not None:
        if warmup > 0:
            _run_client([*argv, "-n", str(load.connections), url], load.cpu, BULK_RUN_LIMIT)
        on_measure()
        text, fraction = _run_client(
            [*argv, "-n", str(load.requests), url], load.cpu, BULK_RUN_LIMIT, accepted=accepted
        )
    else:
        argv += ["-d", f"{seconds:g}", "-w", f"{warmup:g}", url]
        text, fraction = _run_client(
            argv, load.cpu, seconds + warmup + 60, mark=(warmup, on_measure), accepted=accepted
        )
    result = parse_h3load(text, fraction)
    if result.requests == 0:
        raise RuntimeError(f"h3load completed no request: {text[-2000:]}")
    return result


def aioquic_version(env: Environment) -> str:
    """The aioquic version installed in the peer venv ("" if none)."""
    return command_output([env.tool("python"), "-c", "import aioquic; print(aioquic.__version__)"])


def fetch_aioquic_server(env: Environment) -> Path:
    """examples/http3_server.py of the venv's aioquic, from its sdist (downloaded once, kept in the venv).

    The example server is not in the wheel: `pip download --no-binary :all: --no-deps aioquic==VERSION` fetches
    the source archive, and the script is extracted from it unchanged.
    """
    version = aioquic_version(env)
    if not version:
        raise RuntimeError(f"aioquic is not installed in {env.venv} (benchmarks/requirements.txt: hypercorn[h3])")
    target = env.venv / "share" / f"aioquic-{version}" / "http3_server.py"
    if target.exists():
        return target
    with tempfile.TemporaryDirectory(prefix="bench-aioquic-") as scratch:
        subprocess.run(
            [
                *(env.tool("python"), "-m", "pip", "download", "--disable-pip-version-check", "-q"),
                *("--no-binary", ":all:", "--no-deps", f"aioquic=={version}", "-d", scratch),
            ],
            check=True,
            capture_output=True,
        )
        archive = next(Path(scratch).glob("aioquic-*.tar.gz"))
        with tarfile.open(archive) as sdist:
            member = sdist.extractfile(f"aioquic-{version}/examples/http3_server.py")
            if member is None:
                raise RuntimeError(f"no examples/http3_server.py in {archive.name}")
            script = member.read()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(script)
    return target


def parse_ws_load(text: str, client_cpu_fraction: float) -> LoadResult:
    """Read the key=value lines of benchmarks/ws_load.c's output."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values.setdefault(key.strip(), value.strip())
    if "messages" not in values or "seconds" not in values:
        raise RuntimeError(f"unexpected ws_load output: {text[-2000:]!r}")

    def optional(key: str) -> float | None:
        return float(values[key]) if key in values else None

    return LoadResult(
        client="ws_load",
        requests=int(values["messages"]),
        seconds=float(values["seconds"]),
        rps=float(values["rate"]),
        p50_us=optional("p50_us"),
        p99_us=optional("p99_us"),
        mean_us=optional("mean_us"),
        max_us=optional("max_us"),
        errors=int(values.get("errors", "0")),
        non_2xx=0,
        client_cpu_fraction=client_cpu_fraction,
        broadcasts=int(values["broadcasts"]) if "broadcasts" in values else None,
    )


def run_ws_load(  # noqa: PLR0913 - the message size is the one optional knob
    load: Load,
    seconds: float,
    warmup: float,
    on_measure: Callable[[], None],
    env: Environment,
    *,
    message_size: int = WS_MESSAGE_SIZE,
) -> LoadResult:
    """Run benchmarks/ws_load.c in the app's mode (echo or broadcast), pinned; like h2load, warm-up included.

    Echo: `load.connections` clients each keep one `message_size`-byte text message in flight. Broadcast:
    `load.connections` clients connected, `load.streams` broadcasts in flight. `on_measure` is called when the
    warm-up is over; ws_load counts messages received from then on (on its own clock).
    """
    if env.ws_load is None:
        raise ValueError("the ws mode needs the compiled load generator (Environment.ws_load)")
    argv = [
        str(env.ws_load),
        HOST,
        str(load.port),
        load.app.ws_mode or "echo",
        str(load.connections),
        f"{warmup:.3f}",
        f"{seconds:.3f}",
        str(message_size),
        str(load.streams),
    ]
    try:
        text, fraction = _run_client(argv, load.cpu, seconds + warmup + 60, mark=(warmup, on_measure))
    except RuntimeError as error:
        raise RuntimeError(f"ws_load: {error}") from error
    result = parse_ws_load(text, fraction)
    if result.requests == 0:
        raise RuntimeError(f"ws_load counted no message: {text[-2000:]}")
    return result


def verify_full_handshakes(env: Environment, cpu: int | None) -> dict[str, int]:
    """Check that wrk with the no-resumption shim makes a full TLS handshake on every connection.

    A small Python TLS server (benchmarks/tls_probe.py) that issues session tickets and keeps a session cache,
    so that it would resume any session a client offered, counts new and resumed sessions while wrk runs the
    handshake mode against it for a second. A server can only resume a session the client offers; none
    offered means full handshakes with every server.
    """
    if env.tls is None:
        raise ValueError("the handshake check needs a certificate (Environment.tls)")
    port = free_port()
    probe = subprocess.Popen(
        [sys.executable, str(TLS_PROBE), str(env.tls.cert), str(env.tls.key), str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with socket.create_connection((HOST, port), timeout=1):
                    break
            except OSError:
                if probe.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the TLS probe server did not start") from None
                time.sleep(0.05)
        run_wrk(Load(APPS["hello"], port, PROTOCOLS["tls-handshake"], connections=8, cpu=cpu), 1, env)
    finally:
        probe.send_signal(signal.SIGTERM)
        output, errors = probe.communicate(timeout=10)
    counts = {key: int(value) for key, value in (item.split("=") for item in output.split())}
    if counts.get("full", 0) == 0 or counts.get("resumed", 0) != 0:
        raise RuntimeError(f"wrk did not make full handshakes only: {counts} {errors.strip()}")
    return counts


def have(executable: str) -> bool:
    """Whether `executable` is on PATH (or is an existing path)."""
    return shutil.which(executable) is not None


def command_output(argv: list[str]) -> str:
    """First line of a command's output (stdout, else stderr), or "" if it cannot run."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    text = (done.stdout or done.stderr).strip()
    return text.splitlines()[0] if text else ""


def command_lines(argv: list[str]) -> list[str]:
    """Every line of a command's standard output, or [] if it cannot run."""
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return done.stdout.splitlines()
