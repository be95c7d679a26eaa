"""Servers and fixtures of the HTTP/2 conformance suite (tests/h2spec).

Every case runs against one *variant*: a transport (`h2c`, HTTP/2 over
cleartext TCP by prior knowledge, RFC 9113 §3.3; or `tls`, HTTP/2 over TLS
negotiated with ALPN "h2", §3.2) and an application interface (`asgi` or
`wsgi`, tests/apps/h2_apps.py). The server under test is chosen with
$H2SPEC_SERVER:

- `peregrine` (the default, what CI runs): the installed server from
  tests/installed.py, `peregrine --host 127.0.0.1 --port 0 [--tls-cert C
  --tls-key K] h2_apps:asgi_app`;
- `hypercorn`: an independent server (`pip install hypercorn`), to check the
  suite itself: `python -m hypercorn --bind 127.0.0.1:0 [--certfile C
  --keyfile K] h2_apps:asgi_app`.

$H2SPEC_VARIANTS (comma-separated, e.g. `h2c-asgi,tls-wsgi`) narrows the
variants; $H2SPEC_TIMEOUT (seconds, default 3) is how long a case waits for
a frame it expects.

Fixtures (loaded by each test module with `pytest_plugins = ("h2support",)`):

- `target`: a shared server of the variant (one per variant and options for
  the session), checked alive after every test and stopped with SIGTERM at
  the end (it must exit 0 without crash text);
- `asgi_target`, `h2c_target`, `tls_target`: the same, over a subset;
- `variant` and `fresh_target`: a server of the test's own (for memory and
  timeout cases), stopped and checked when the test ends.

Test modules import the conftest helpers they need from the tests directory
(this directory has no conftest.py of its own so that `conftest` keeps naming
tests/conftest.py).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from conftest import APPS, CRASH_MARKERS, STARTUP_TIMEOUT, Lines, Server, launch

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    import trustme

# The suite imports tests/apps/h2_apps.py itself (the body pattern, the trailer it sends).
if str(APPS) not in sys.path:
    sys.path.append(str(APPS))

SERVER_KIND = os.environ.get("H2SPEC_SERVER", "peregrine").strip() or "peregrine"
#: How long a case waits for a frame it expects (GOAWAY, RST_STREAM, a response).
TIMEOUT = float(os.environ.get("H2SPEC_TIMEOUT", "3"))
#: Startup line of either server: peregrine's `listening on http(s)://HOST:PORT`, hypercorn's `Running on ...`.
LISTENING = re.compile(r"(?:listening on|Running on) (?P<scheme>https?)://(?:\[[^\]]+\]|[^\s:/]+):(?P<port>\d+)")
HOSTNAME = "localhost"


@dataclass(frozen=True)
class Variant:
    """A transport and an application interface."""

    transport: str  # "h2c" or "tls"
    app: str  # "asgi" or "wsgi"

    @property
    def id(self) -> str:
        """`h2c-asgi` and so on."""
        return f"{self.transport}-{self.app}"

    @property
    def tls(self) -> bool:
        """Whether the variant runs over TLS."""
        return self.transport == "tls"


ALL_VARIANTS = [Variant(t, a) for t in ("h2c", "tls") for a in ("asgi", "wsgi")]


def selected(variants: list[Variant]) -> list[Variant]:
    """The variants $H2SPEC_VARIANTS leaves (all by default)."""
    wanted = {word.strip() for word in os.environ.get("H2SPEC_VARIANTS", "").split(",") if word.strip()}
    return [variant for variant in variants if not wanted or variant.id in wanted]


def variant_params(predicate: Callable[[Variant], bool] = lambda _: True) -> list[object]:
    """pytest params (with ids) for the selected variants that satisfy `predicate`."""
    return [pytest.param(v, id=v.id) for v in selected(ALL_VARIANTS) if predicate(v)]


@dataclass
class Certificates:
    """A throwaway CA and a server certificate for 127.0.0.1 and localhost (trustme)."""

    ca: trustme.CA
    cert: Path
    key: Path
    ca_cert: Path

    contexts: dict[tuple[str, ...], ssl.SSLContext] = field(default_factory=dict)

    def client_context(self, alpn: list[str] | None = None) -> ssl.SSLContext:
        """A client context trusting only the CA, offering `alpn` (default ["h2"]); made once per ALPN list."""
        key = tuple(["h2"] if alpn is None else alpn)
        context = self.contexts.get(key)
        if context is None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            self.ca.configure_trust(context)
            context.set_alpn_protocols(list(key))
            self.contexts[key] = context
        return context


def make_certificates(directory: Path) -> Certificates:
    """Issue the server certificate into `directory`."""
    import trustme  # noqa: PLC0415 (only the TLS variants need it)

    ca = trustme.CA()
    issued = ca.issue_cert("127.0.0.1", HOSTNAME)
    directory.mkdir(parents=True, exist_ok=True)
    cert, key, ca_cert = directory / "cert.pem", directory / "key.pem", directory / "ca.pem"
    issued.private_key_pem.write_to_path(str(key))
    issued.cert_chain_pems[0].write_to_path(str(cert))
    for extra in issued.cert_chain_pems[1:]:
        with cert.open("ab") as out:
            out.write(extra.bytes())
    ca.cert_pem.write_to_path(str(ca_cert))
    return Certificates(ca=ca, cert=cert, key=key, ca_cert=ca_cert)


@dataclass
class Target:
    """A running server of one variant."""

    server: Server
    variant: Variant
    kind: str
    certificates: Certificates | None

    @property
    def port(self) -> int:
        """The TCP port."""
        return self.server.port

    @property
    def tls(self) -> bool:
        """Whether connections are TLS."""
        return self.variant.tls

    @property
    def app(self) -> str:
        """`asgi` or `wsgi`."""
        return self.variant.app

    @property
    def scheme(self) -> str:
        """`https` over TLS, else `http`."""
        return "https" if self.tls else "http"

    @property
    def authority(self) -> str:
        """The :authority clients send."""
        return f"{HOSTNAME}:{self.port}"

    def url(self, path: str = "/hello") -> str:
        """An absolute URL (127.0.0.1: curl and nghttp need no name resolution)."""
        return f"{self.scheme}://127.0.0.1:{self.port}{path}"

    def tcp(self, timeout: float = 10.0, receive_buffer: int | None = None) -> socket.socket:
        """A plain TCP connection to the server (SO_RCVBUF set before connecting when asked)."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if receive_buffer is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        sock.settimeout(timeout)
        sock.connect(("127.0.0.1", self.port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def connect(
        self, timeout: float = 10.0, alpn: list[str] | None = None, receive_buffer: int | None = None
    ) -> socket.socket:
        """A connection ready for HTTP/2: plain TCP for h2c, TLS with ALPN `h2` (checked) for tls."""
        sock = self.tcp(timeout, receive_buffer)
        if not self.tls:
            return sock
        assert self.certificates is not None
        context = self.certificates.client_context(alpn)
        wrapped = context.wrap_socket(sock, server_hostname=HOSTNAME)
        if alpn is None:
            chosen = wrapped.selected_alpn_protocol()
            assert chosen == "h2", f"ALPN selected {chosen!r}, not h2 (RFC 9113 §3.2)"
        return wrapped

    def events(self) -> list[str]:
        """Lines the applications recorded (`call METHOD PATH`)."""
        return self.server.events()

    def check_alive(self) -> None:
        """Fail if the server died or printed crash text."""
        self.server.check_alive()

    def rss_kib(self) -> int:
        """VmRSS of the server and its direct children (workers), in KiB."""
        pids = [self.server.pid]
        children = Path(f"/proc/{self.server.pid}/task/{self.server.pid}/children")
        with contextlib.suppress(OSError):
            pids += [int(pid) for pid in children.read_text().split()]
        total = 0
        for pid in pids:
            with contextlib.suppress(OSError):
                for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        return total


def _wait_listening(server: Server) -> None:
    line = server.stderr.wait_for(lambda text: LISTENING.search(text) is not None, STARTUP_TIMEOUT)
    if line is None:
        line = server.stdout.wait_for(lambda text: LISTENING.search(text) is not None, 0.1)
    if line is None:
        with contextlib.suppress(ProcessLookupError):
            server.process.kill()
        server.process.wait()
        server.stderr.join()
        pytest.fail(
            f"{' '.join(server.args)} did not log its listening address within {STARTUP_TIMEOUT:.0f}s "
            f"(exit {server.process.returncode}); stderr:\n{server.stderr.text()}"
        )
    match = LISTENING.search(line)
    assert match is not None
    server.port = int(match["port"])


def start_target(
    variant: Variant,
    state: Path,
    certificates: Certificates | None,
    peregrine_options: tuple[str, ...] = (),
    hypercorn_options: tuple[str, ...] = (),
) -> Target:
    """Start the server under test ($H2SPEC_SERVER) for `variant` and wait for its listening line."""
    app = f"h2_apps:{variant.app}_app"
    if SERVER_KIND == "peregrine":
        tls_options: tuple[str, ...] = ()
        if variant.tls:
            assert certificates is not None
            tls_options = ("--tls-cert", str(certificates.cert), "--tls-key", str(certificates.key))
        options = ("--host", "127.0.0.1", "--port", "0", *tls_options, *peregrine_options)
        process, args = launch(app, *options, state=state)
    elif SERVER_KIND == "hypercorn":
        tls_options = ()
        if variant.tls:
            assert certificates is not None
            tls_options = ("--certfile", str(certificates.cert), "--keyfile", str(certificates.key))
        args = [sys.executable, "-m", "hypercorn", "--bind", "127.0.0.1:0", *tls_options, *hypercorn_options, app]
        environment = dict(os.environ)
        environment["PEREGRINE_TEST_STATE"] = str(state)
        environment["PYTHONUNBUFFERED"] = "1"
        environment["PYTHONPATH"] = os.pathsep.join([str(APPS), environment.get("PYTHONPATH", "")])
        process = subprocess.Popen(
            args,
            cwd=state,
            env=environment,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
        )
    else:
        pytest.fail(f"H2SPEC_SERVER={SERVER_KIND!r}: expected peregrine or hypercorn")
    assert process.stderr is not None
    assert process.stdout is not None
    server = Server(process=process, args=args, state=state, stderr=Lines(process.stderr), stdout=Lines(process.stdout))
    _wait_listening(server)
    return Target(server=server, variant=variant, kind=SERVER_KIND, certificates=certificates)


def stop_target(target: Target) -> None:
    """SIGTERM; the server must exit 0 without crash text (hypercorn: any exit after SIGTERM)."""
    if target.kind == "peregrine":
        target.server.stop()
        return
    server = target.server
    if server.stopped:
        return
    server.stopped = True
    if server.process.poll() is None:
        server.process.send_signal(signal.SIGTERM)
        try:
            server.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait()
    crash = next((line for line in server.stderr.lines if any(m in line for m in CRASH_MARKERS)), None)
    if crash is not None:
        pytest.fail(f"{' '.join(server.args)} printed crash text {crash!r}")


class TargetPool:
    """Servers shared across the session, one per (variant, options)."""

    def __init__(self, factory: pytest.TempPathFactory) -> None:
        self._factory = factory
        self._targets: dict[tuple[object, ...], Target] = {}
        self._certificates: Certificates | None = None

    @property
    def certificates(self) -> Certificates:
        """The session's CA and server certificate (made on first use)."""
        if self._certificates is None:
            self._certificates = make_certificates(self._factory.mktemp("h2-tls"))
        return self._certificates

    def get(
        self, variant: Variant, peregrine_options: tuple[str, ...] = (), hypercorn_options: tuple[str, ...] = ()
    ) -> Target:
        """The shared server of `variant` with these options, started on first use."""
        key = (variant, peregrine_options, hypercorn_options)
        target = self._targets.get(key)
        if target is None:
            certificates = self.certificates if variant.tls else None
            state = self._factory.mktemp(f"h2-{variant.id}")
            target = start_target(variant, state, certificates, peregrine_options, hypercorn_options)
            self._targets[key] = target
        return target

    def check_all(self) -> None:
        """Fail if a shared server died."""
        for target in self._targets.values():
            target.check_alive()

    def stop_all(self) -> None:
        """Stop every shared server; report every failure."""
        failures = []
        for target in self._targets.values():
            try:
                stop_target(target)
            except pytest.fail.Exception as failure:
                failures.append(str(failure))
        if failures:
            pytest.fail("\n\n".join(failures))


@pytest.fixture(scope="session")
def h2_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TargetPool]:
    """The session's shared HTTP/2 servers."""
    pool = TargetPool(tmp_path_factory)
    yield pool
    pool.stop_all()


@pytest.fixture(autouse=True)
def _h2_servers_survive(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test that used shared HTTP/2 servers, they must all still be running."""
    yield
    if "h2_pool" in request.fixturenames:
        pool: TargetPool = request.getfixturevalue("h2_pool")
        pool.check_all()


@pytest.fixture(params=variant_params())
def target(request: pytest.FixtureRequest, h2_pool: TargetPool) -> Target:
    """The shared server of each variant."""
    variant: Variant = request.param
    return h2_pool.get(variant)


@pytest.fixture(params=variant_params(lambda v: v.app == "asgi"))
def asgi_target(request: pytest.FixtureRequest, h2_pool: TargetPool) -> Target:
    """The shared ASGI server over each transport."""
    variant: Variant = request.param
    return h2_pool.get(variant)


@pytest.fixture(params=variant_params(lambda v: v.transport == "h2c"))
def h2c_target(request: pytest.FixtureRequest, h2_pool: TargetPool) -> Target:
    """The shared cleartext (prior knowledge) server of each application."""
    variant: Variant = request.param
    return h2_pool.get(variant)


@pytest.fixture(params=variant_params(lambda v: v.transport == "tls"))
def tls_target(request: pytest.FixtureRequest, h2_pool: TargetPool) -> Target:
    """The shared TLS server of each application."""
    variant: Variant = request.param
    return h2_pool.get(variant)


@pytest.fixture(params=variant_params())
def variant(request: pytest.FixtureRequest) -> Variant:
    """Each variant, for tests that start their own server."""
    chosen: Variant = request.param
    return chosen


@pytest.fixture
def fresh_target(tmp_path_factory: pytest.TempPathFactory, h2_pool: TargetPool) -> Iterator[Callable[..., Target]]:
    """`fresh_target(variant, peregrine_options=(), hypercorn_options=())`: a server of the test's own."""
    started: list[Target] = []

    def starter(
        chosen: Variant, peregrine_options: tuple[str, ...] = (), hypercorn_options: tuple[str, ...] = ()
    ) -> Target:
        certificates = h2_pool.certificates if chosen.tls else None
        state = tmp_path_factory.mktemp(f"h2-own-{chosen.id}")
        target = start_target(chosen, state, certificates, peregrine_options, hypercorn_options)
        started.append(target)
        return target

    yield starter
    failures = []
    for target in started:
        try:
            stop_target(target)
        except pytest.fail.Exception as failure:
            failures.append(str(failure))
    if failures:
        pytest.fail("\n\n".join(failures))


def peregrine_only(target: Target, why: str) -> None:
    """Skip unless the server under test is peregrine (for behaviour only its options select)."""
    if target.kind != "peregrine":
        pytest.skip(f"peregrine-specific: {why}")
