"""The framework matrix: which frameworks, over which protocols, and the report the docs table is made from.

`FRAMEWORKS` lists the applications of tests/apps/frameworks (how each is
served, whether it has WebSockets and a startup hook of its own); `PROTOCOLS`
lists the ways a client reaches a server: HTTP/1.1 and HTTP/2, each in
cleartext and over TLS, and HTTP/3. A protocol is one more entry there: its
`transport` picks the shared server (one per framework and transport, from
conftest's `server_pool`; the TLS one also serves HTTP/3, `--http3`, on the
same port over UDP), its `client` makes an httpx client that speaks it (for
HTTP/3 with the aioquic transport of h3transport.py, so the checks stay as
they are) and its `websocket` opens a WebSocket over it (over HTTP/3, RFC
9220's extended CONNECT on an aioquic connection, h3websocket.py). A
protocol without WebSockets would say so (`carries_websocket=False`): its
WebSocket cases are not generated, and the table marks the cell "websocket:
not yet" rather than counting a check that never ran.

As a pytest plugin (`pytest_plugins = ("framework_matrix",)`) it records the
outcome of every matrix test (framework, protocol, check) and, when
$PEREGRINE_FRAMEWORK_MATRIX names a file, writes them there as JSON at the
end of the session with the version of each framework the server's
interpreter has; scripts/framework_matrix.py turns that into the table in
CONFIG.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import ssl
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from typing import Protocol as Interface

import httpx
import pytest
import websockets.sync.client
from h2websocket import H2WebSocket, h2_client
from h3client import H3Client
from h3transport import H3Transport
from h3websocket import H3WebSocket
from websocket_support import BINARY, TEXT

from conftest import APPS
from installed import server_python

if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Iterator

    from tls_support import TLSFiles

    from conftest import Server, ServerPool

#: Names the JSON report file (no report when unset).
REPORT_VARIABLE = "PEREGRINE_FRAMEWORK_MATRIX"


@dataclass(frozen=True)
class Framework:
    """One application of tests/apps/frameworks and how it is served."""

    name: str
    title: str
    #: The distributions whose versions the table names (the framework, then what it is served with).
    distributions: tuple[str, ...]
    target: str
    options: tuple[str, ...] = ()
    interface: str = "ASGI"
    websocket: bool = True
    #: Whether the framework has a startup hook of its own (lifespan, on_startup, AppConfig.ready, a factory).
    startup: bool = True
    #: Whether it has a shutdown hook of its own (the ASGI lifespan's shutdown; Django's ASGI handler has none).
    shutdown: bool = False
    #: Whether the framework reports a request that came over TLS as https (from the ASGI scope's `scheme`
    #: or WSGI's `wsgi.url_scheme`); Sanic's ASGI mode does not, under any server.
    sees_tls: bool = True
    #: What the docs table says below the framework's row.
    note: str = ""


FRAMEWORKS = (
    Framework("fastapi", "FastAPI", ("fastapi",), "frameworks.fastapi_app:app", shutdown=True),
    Framework("starlette", "Starlette", ("starlette",), "frameworks.starlette_app:app", shutdown=True),
    Framework("litestar", "Litestar", ("litestar",), "frameworks.litestar_app:app", shutdown=True),
    Framework("quart", "Quart", ("quart",), "frameworks.quart_app:app", shutdown=True),
    Framework("falcon-asgi", "Falcon (ASGI)", ("falcon",), "frameworks.falcon_asgi_app:app", shutdown=True),
    Framework(
        "falcon-wsgi",
        "Falcon (WSGI)",
        ("falcon",),
        "frameworks.falcon_wsgi_app:app",
        interface="WSGI",
        websocket=False,
        startup=False,
    ),
    Framework(
        "django-asgi", "Django (ASGI, Channels)", ("django", "channels"), "frameworks.django_project.asgi:application"
    ),
    Framework(
        "django-wsgi",
        "Django (WSGI)",
        ("django",),
        "frameworks.django_project.wsgi:application",
        interface="WSGI",
        websocket=False,
    ),
    Framework("flask", "Flask", ("flask",), "frameworks.flask_app:create_app", ("--factory",), "WSGI", websocket=False),
    Framework(
        "sanic",
        "Sanic (ASGI mode)",
        ("sanic",),
        "frameworks.sanic_app:app",
        shutdown=True,
        sees_tls=False,
        note="Sanic's ASGI mode reports every request as http, TLS or not (uvicorn too): its request.scheme asks the "
        "ASGI transport for `ssl_object`, which that transport does not answer",
    ),
)


class EchoSocket(Interface):
    """A WebSocket as the echo check uses it."""

    def send(self, message: str | bytes) -> None: ...

    def receive(self) -> str | bytes: ...

    def close(self) -> None: ...


class H1EchoSocket:
    """A WebSocket over HTTP/1.1 (RFC 6455), with the `websockets` client."""

    def __init__(self, connection: websockets.sync.client.ClientConnection) -> None:
        self.connection = connection

    def send(self, message: str | bytes) -> None:
        self.connection.send(message)

    def receive(self) -> str | bytes:
        return self.connection.recv(timeout=10)

    def close(self) -> None:
        """Close with 1000; the server's close frame must echo it."""
        self.connection.close(1000)
        assert self.connection.protocol.close_rcvd is not None, "no close frame from the server"
        assert self.connection.protocol.close_rcvd.code == 1000


class H2EchoSocket:
    """A WebSocket over HTTP/2 (RFC 8441: an extended CONNECT, frames in DATA), with the `h2` client."""

    def __init__(self, socket: H2WebSocket) -> None:
        self.socket = socket

    def send(self, message: str | bytes) -> None:
        if isinstance(message, str):
            self.socket.send_text(message)
        else:
            self.socket.send(BINARY, message)

    def receive(self) -> str | bytes:
        opcode, payload = self.socket.read_message()
        return payload.decode() if opcode == TEXT else payload

    def close(self) -> None:
        """Close with 1000 and END_STREAM; the server answers 1000 and ends its side without a reset."""
        self.socket.send_close(1000, end_stream=True)
        assert self.socket.expect_close().close_code == 1000
        assert self.socket.expect_end().reset_code is None


class H3EchoSocket:
    """A WebSocket over HTTP/3 (RFC 9220: an extended CONNECT, frames in DATA frames), on an aioquic connection
    whose event loop runs while the check waits."""

    def __init__(self, loop: asyncio.AbstractEventLoop, socket: H3WebSocket) -> None:
        self.loop = loop
        self.socket = socket

    def send(self, message: str | bytes) -> None:
        async def sending() -> None:
            if isinstance(message, str):
                self.socket.send_text(message)
            else:
                self.socket.send(BINARY, message)

        self.loop.run_until_complete(sending())

    def receive(self) -> str | bytes:
        opcode, payload = self.loop.run_until_complete(self.socket.read_message())
        return payload.decode() if opcode == TEXT else payload

    def close(self) -> None:
        """Close with 1000 and FIN; the server answers 1000 and ends its side without a reset."""

        async def closing() -> int | None:
            self.socket.send_close(1000, end_stream=True)
            return (await self.socket.expect_close()).close_code

        assert self.loop.run_until_complete(closing()) == 1000
        assert self.loop.run_until_complete(self.socket.expect_end()).reset_code is None


@dataclass(frozen=True)
class Protocol:
    """A way to reach a server: the transport its server listens with, and the clients that speak it."""

    name: str
    title: str
    #: `clear` or `tls`: one shared server per framework and transport.
    transport: str
    #: What httpx reports as the response's `http_version`.
    http_version: str
    #: Whether the server takes WebSockets over this protocol.
    carries_websocket: bool = True

    @property
    def scheme(self) -> str:
        return "https" if self.transport == "tls" else "http"

    def client(self, server: Server, tls: TLSFiles) -> httpx.Client:
        """An httpx client that speaks this protocol only (HTTP/2 in cleartext: by prior knowledge, RFC 9113 §3.3;
        HTTP/3 straight to the UDP port, as a client that has seen the server's Alt-Svc would)."""
        if self.http_version == "HTTP/3":
            transport = H3Transport(ca=tls.ca, timeout=20)
            return httpx.Client(base_url=f"https://127.0.0.1:{server.port}", transport=transport, timeout=20)
        http2 = self.http_version == "HTTP/2"
        verify: ssl.SSLContext | bool = (
            ssl.create_default_context(cafile=str(tls.ca)) if self.transport == "tls" else True
        )
        return httpx.Client(
            base_url=f"{self.scheme}://127.0.0.1:{server.port}", http1=not http2, http2=http2, verify=verify, timeout=20
        )

    @contextlib.contextmanager
    def websocket(self, server: Server, tls: TLSFiles, path: str) -> Iterator[EchoSocket]:
        """An open WebSocket to `path` (the server accepted it), dropped after the block if still open."""
        assert self.carries_websocket, f"no WebSocket over {self.title} yet"
        context = ssl.create_default_context(cafile=str(tls.ca)) if self.transport == "tls" else None
        if self.http_version == "HTTP/1.1":
            scheme = "wss" if context else "ws"
            uri = f"{scheme}://127.0.0.1:{server.port}{path}"
            with websockets.sync.client.connect(uri, ssl=context, open_timeout=10) as connection:
                yield H1EchoSocket(connection)
            return
        if self.http_version == "HTTP/3":
            yield from _h3_websocket(server, tls, path)
            return
        if context is not None:
            context.set_alpn_protocols(["h2"])
        with h2_client(server.port, tls=context, server_hostname="127.0.0.1") as client:
            socket = H2WebSocket.open(client, path, scheme=self.scheme, authority=f"127.0.0.1:{server.port}")
            response = socket.wait_response()
            assert response.status == 200, (response.status, response.headers)
            yield H2EchoSocket(socket)


PROTOCOLS = (
    Protocol("h1", "HTTP/1.1", "clear", "HTTP/1.1"),
    Protocol("h1-tls", "HTTP/1.1 + TLS", "tls", "HTTP/1.1"),
    Protocol("h2c", "HTTP/2 (h2c)", "clear", "HTTP/2"),
    Protocol("h2-tls", "HTTP/2 + TLS", "tls", "HTTP/2"),
    Protocol("h3", "HTTP/3", "tls", "HTTP/3"),
)


def _h3_websocket(server: Server, tls: TLSFiles, path: str) -> Iterator[EchoSocket]:
    """A WebSocket over a new HTTP/3 connection, which closes after the block."""
    loop = asyncio.new_event_loop()
    opened = H3Client(port=server.port, ca=tls.ca).open()
    try:
        connection = loop.run_until_complete(asyncio.wait_for(opened.__aenter__(), 20))
        try:

            async def opening() -> H3WebSocket:
                return await H3WebSocket.open(connection, path).accepted()

            yield H3EchoSocket(loop, loop.run_until_complete(opening()))
        finally:
            loop.run_until_complete(opened.__aexit__(None, None, None))
    finally:
        loop.close()


@dataclass(frozen=True)
class Case:
    """One framework over one protocol."""

    framework: Framework
    protocol: Protocol

    @property
    def id(self) -> str:
        return f"{self.framework.name}-{self.protocol.name}"


def cases(
    wanted: Callable[[Framework], bool] = lambda _: True, over: Callable[[Protocol], bool] = lambda _: True
) -> list[Any]:
    """Every (framework, protocol) with a `wanted` framework and a protocol to test it `over`, as pytest params."""
    return [
        pytest.param(Case(framework, protocol), id=Case(framework, protocol).id)
        for framework in FRAMEWORKS
        if wanted(framework)
        for protocol in PROTOCOLS
        if over(protocol)
    ]


def serve(pool: ServerPool, case: Case, tls: TLSFiles) -> Server:
    """The shared server for the case's framework and transport (over TLS it serves HTTP/3 too)."""
    options = case.framework.options
    if case.protocol.transport == "tls":
        options = (*tls.server_options(), "--http3", *options)
    return pool.get(case.framework.target, *options)


@contextlib.contextmanager
def uvicorn(target: str, *options: str, tls: TLSFiles | None = None) -> Iterator[httpx.Client]:
    """uvicorn serving `target` (with the server's interpreter, on a socket bound here), and an httpx client for it:
    to show that what a framework does under peregrine it does under another ASGI server too."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        command = [str(server_python()), "-m", "uvicorn", "--app-dir", str(APPS), "--fd", str(listener.fileno())]
        if tls is not None:
            command += ["--ssl-certfile", str(tls.cert), "--ssl-keyfile", str(tls.key)]
        command += ["--log-level", "warning", *options, target]
        process = subprocess.Popen(command, pass_fds=[listener.fileno()], stderr=subprocess.PIPE, text=True)
    scheme, verify = ("https", ssl.create_default_context(cafile=str(tls.ca))) if tls else ("http", True)
    try:
        with httpx.Client(base_url=f"{scheme}://127.0.0.1:{port}", verify=verify, timeout=20) as client:
            deadline = time.monotonic() + 15
            while True:
                try:
                    client.get("/")
                    break
                except httpx.TransportError:
                    assert process.poll() is None, f"uvicorn exited: {process.communicate()[1]}"
                    assert time.monotonic() < deadline, "uvicorn did not start"
                    time.sleep(0.1)
            yield client
    finally:
        process.terminate()
        process.communicate(timeout=15)


# --- the report ----------------------------------------------------------------------------------------------

#: (framework, protocol, check) -> "passed" / "failed", in the order the tests ran.
RESULTS: dict[tuple[str, str, str], str] = {}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """Remember each matrix test's outcome: failed if any phase failed, passed once its call passed (a skip is
    recorded too, so the table cannot count a check that did not run as one that does not apply)."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    callspec = getattr(item, "callspec", None)
    case = callspec.params.get("case") if callspec is not None else None
    if not isinstance(case, Case) or not isinstance(item, pytest.Function):
        return
    key = (case.framework.name, case.protocol.name, item.originalname.removeprefix("test_"))
    if report.failed:
        RESULTS[key] = "failed"
    elif report.skipped and RESULTS.get(key) != "failed":
        RESULTS[key] = "skipped"
    elif report.when == "call" and report.passed and RESULTS.get(key) != "failed":
        RESULTS[key] = "passed"


def versions() -> dict[str, str]:
    """The version of every distribution the matrix names, in the server's interpreter."""
    names = sorted({name for framework in FRAMEWORKS for name in framework.distributions})
    probe = "import importlib.metadata as m, json, sys; print(json.dumps({n: m.version(n) for n in sys.argv[1:]}))"
    found = subprocess.run([str(server_python()), "-c", probe, *names], capture_output=True, text=True, check=True)
    result: dict[str, str] = json.loads(found.stdout)
    return result


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Write the JSON report where $PEREGRINE_FRAMEWORK_MATRIX says, if any matrix test ran."""
    path = os.environ.get(REPORT_VARIABLE)
    if not path or not RESULTS:
        return
    report = {
        "protocols": [{"name": p.name, "title": p.title, "websocket": p.carries_websocket} for p in PROTOCOLS],
        "frameworks": [
            {
                "name": f.name,
                "title": f.title,
                "interface": f.interface,
                "distributions": list(f.distributions),
                "target": f.target,
                "options": list(f.options),
                "websocket": f.websocket,
                "note": f.note,
            }
            for f in FRAMEWORKS
        ],
        "versions": versions(),
        "results": [
            {"framework": framework, "protocol": protocol, "check": check, "outcome": outcome}
            for (framework, protocol, check), outcome in RESULTS.items()
        ],
    }
    Path(path).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
