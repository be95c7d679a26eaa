"""Inherited sockets: `--fd N`, systemd socket activation and `--unix-mode` (issue 17 item 3).

The parent (a test's own Python, or Debian's `systemd-socket-activate`, the
launcher systemd ships for exactly this) binds and listens; peregrine serves
what it inherited, over HTTP/1.1, TLS and HTTP/2, from every worker, keeps
it across SIGHUP without rebinding, and on a stop leaves it listening for the
parent. `LISTEN_PID`/`LISTEN_FDS`/`LISTEN_FDNAMES` are gone from the
environment before the application starts.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from h2client import H2Client

from conftest import APPS, LISTENING, STARTUP_TIMEOUT, Lines, Server
from installed import peregrine_command

pytest.register_assert_rewrite("tls_support")
from tls_support import client_context  # noqa: E402

pytest_plugins = ("tls_support",)

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from tls_support import TLSFiles

ACTIVATE = shutil.which("systemd-socket-activate") or "/usr/bin/systemd-socket-activate"
ASGI = "fleet_apps:asgi"
WSGI = "fleet_apps:wsgi"


def get(address: tuple[str, int] | str, path: str = "/", timeout: float = 20.0) -> tuple[int, bytes]:
    """One HTTP/1.1 GET over TCP (`(host, port)`) or a unix socket (a path); status and body."""
    family = socket.AF_UNIX if isinstance(address, str) else socket.AF_INET
    with socket.socket(family) as sock:
        sock.settimeout(timeout)
        sock.connect(address)
        sock.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def listening_socket(family: int = socket.AF_INET, path: Path | None = None) -> socket.socket:
    """A listening socket as a parent would pass it (inheritable)."""
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.bind(str(path) if path is not None else ("127.0.0.1", 0))
    sock.listen(64)
    sock.set_inheritable(True)
    return sock


@pytest.fixture
def spawn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Server]]:
    """`spawn(argv_prefix, target, *options, pass_fds=(), env=None, wait=True)`: a server started under a launcher
    (or directly), with inherited descriptors; stopped after the test."""
    servers: list[Server] = []

    def start(
        prefix: list[str],
        target: str,
        *options: str,
        pass_fds: tuple[int, ...] = (),
        env: dict[str, str] | None = None,
        wait: bool = True,
    ) -> Server:
        state = tmp_path_factory.mktemp("server")
        environment = dict(os.environ if env is None else env)
        environment["PEREGRINE_TEST_STATE"] = str(state)
        environment.setdefault("PYTHONUNBUFFERED", "1")
        args = [*prefix, *peregrine_command(), "--python-path", str(APPS), *options, target]
        process = subprocess.Popen(
            args,
            cwd=state,
            env=environment,
            pass_fds=pass_fds,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert process.stdout is not None
        assert process.stderr is not None
        server = Server(
            process=process, args=args, state=state, stderr=Lines(process.stderr), stdout=Lines(process.stdout)
        )
        servers.append(server)
        if wait:
            line = server.stderr.wait_for(lambda text: LISTENING.search(text) is not None, STARTUP_TIMEOUT)
            assert line is not None, server.stderr.text()
        return server

    yield start
    for server in servers:
        if server.process.poll() is None:
            server.stop()


def exits_with(prefix: list[str], *options: str, pass_fds: tuple[int, ...] = ()) -> tuple[int, str]:
    """Run the server expecting it to refuse to start: exit status and standard error."""
    result = subprocess.run(
        [*prefix, *peregrine_command(), "--python-path", str(APPS), *options, ASGI],
        pass_fds=pass_fds,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return result.returncode, result.stderr


# --- --fd ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("target", [ASGI, WSGI])
def test_fd_serves_an_inherited_tcp_socket_from_every_worker(spawn: Callable[..., Server], target: str) -> None:
    sock = listening_socket()
    port = sock.getsockname()[1]
    server = spawn([], target, "--fd", str(sock.fileno()), "--workers", "2", pass_fds=(sock.fileno(),))
    assert f"listening on http://127.0.0.1:{port} (inherited descriptor {sock.fileno()})" in server.stderr.text()
    pids = set()
    deadline = time.monotonic() + 20
    while len(pids) < 2 and time.monotonic() < deadline:
        status, body = get(("127.0.0.1", port))
        assert status == 200
        pids.add(body.split()[1])
    assert len(pids) == 2, "both workers serve the inherited socket"
    sock.close()


def test_fd_serves_an_inherited_unix_socket(spawn: Callable[..., Server], tmp_path: Path) -> None:
    path = tmp_path / "inherited.sock"
    sock = listening_socket(socket.AF_UNIX, path)
    server = spawn([], ASGI, "--fd", str(sock.fileno()), pass_fds=(sock.fileno(),))
    assert f"listening on unix:{path}" in server.stderr.text()
    assert get(str(path))[0] == 200
    sock.close()


def test_several_fds_are_each_served(spawn: Callable[..., Server], tmp_path: Path) -> None:
    tcp = listening_socket()
    tcp6 = socket.socket(socket.AF_INET6)
    tcp6.bind(("::1", 0))
    tcp6.listen(8)
    tcp6.set_inheritable(True)
    unix = listening_socket(socket.AF_UNIX, tmp_path / "u.sock")
    fds = (tcp.fileno(), tcp6.fileno(), unix.fileno())
    spawn([], WSGI, *[arg for fd in fds for arg in ("--fd", str(fd))], pass_fds=fds)
    assert get(("127.0.0.1", tcp.getsockname()[1]))[0] == 200
    with socket.create_connection(("::1", tcp6.getsockname()[1]), timeout=10) as c:
        c.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert c.recv(100).startswith(b"HTTP/1.1 200 ")
    assert get(str(tmp_path / "u.sock"))[0] == 200
    for s in (tcp, tcp6, unix):
        s.close()


def test_an_inherited_socket_serves_tls_and_http2(spawn: Callable[..., Server], tls_files: TLSFiles) -> None:
    sock = listening_socket()
    port = sock.getsockname()[1]
    server = spawn([], ASGI, "--fd", str(sock.fileno()), *tls_files.server_options(), pass_fds=(sock.fileno(),))
    assert f"listening on https://127.0.0.1:{port}" in server.stderr.text()
    with H2Client(port, tls=client_context(tls_files, alpn=["h2"])) as client:
        assert client.request("GET", "/", authority="localhost").status == 200
    with H2Client(port, tls=client_context(tls_files, alpn=["h2", "http/1.1"])) as client:
        assert client.request("GET", "/", authority="localhost").status == 200
    sock.close()


def test_an_inherited_socket_serves_http2_with_prior_knowledge(spawn: Callable[..., Server]) -> None:
    sock = listening_socket()
    spawn([], WSGI, "--fd", str(sock.fileno()), pass_fds=(sock.fileno(),))
    with H2Client(sock.getsockname()[1]) as client:
        assert client.request("GET", "/", authority="localhost").status == 200
    sock.close()


def socket_inodes(pid: int) -> set[str]:
    inodes = set()
    for entry in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = str(entry.readlink())
        except FileNotFoundError:  # closed meanwhile (a worker's status pipe)
            continue
        if target.startswith("socket:"):
            inodes.add(target)
    return inodes


def test_sighup_replaces_workers_without_rebinding_and_a_stop_leaves_the_socket_to_its_parent(
    spawn: Callable[..., Server],
) -> None:
    sock = listening_socket()
    port = sock.getsockname()[1]
    server = spawn([], ASGI, "--fd", str(sock.fileno()), pass_fds=(sock.fileno(),))
    first = get(("127.0.0.1", port))[1].split()[1]
    # The supervisor's only socket is the inherited one, before and after: nothing is bound again.
    inherited = {f"socket:[{os.fstat(sock.fileno()).st_ino}]"}
    assert socket_inodes(server.pid) == inherited
    mark = len(server.stderr.lines)
    server.process.send_signal(signal.SIGHUP)
    assert server.stderr.wait_for(lambda line: "draining" in line, 20, start=mark) is not None
    deadline = time.monotonic() + 20
    while get(("127.0.0.1", port))[1].split()[1] == first:
        assert time.monotonic() < deadline, "the replacement never served"
        time.sleep(0.1)
    assert socket_inodes(server.pid) == inherited
    server.stop()
    # Stopped: the parent's socket still listens (connections queue for the next start).
    with socket.create_connection(("127.0.0.1", port), timeout=5):
        pass
    sock.close()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        ("file", "--fd {fd} is not an open socket"),
        ("closed", "--fd {fd} is not an open socket"),
        ("udp", "--fd {fd} is not a stream socket"),
        ("unlistened", "--fd {fd} is not listening (the parent must bind and listen)"),
    ],
)
def test_fd_refuses_what_is_not_a_listening_stream_socket(tmp_path: Path, make: str, message: str) -> None:
    keep: Any
    if make == "file":
        keep = (tmp_path / "f").open("w")
        fd = keep.fileno()
    elif make == "closed":
        keep = None
        fd = 97
    elif make == "udp":
        keep = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        fd = keep.fileno()
    else:
        keep = socket.socket()
        keep.bind(("127.0.0.1", 0))
        fd = keep.fileno()
    status, stderr = exits_with([], "--fd", str(fd), pass_fds=(fd,) if keep is not None else ())
    assert status == 2
    assert f"peregrine: error: {message.format(fd=fd)}" in stderr
    if keep is not None:
        keep.close()


# --- systemd socket activation -------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_listening(port: int) -> None:
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert time.monotonic() < deadline
            time.sleep(0.05)


@pytest.mark.parametrize("target", [ASGI, WSGI])
def test_systemd_socket_activation_serves_each_named_socket(
    spawn: Callable[..., Server], tmp_path: Path, target: str
) -> None:
    assert Path(ACTIVATE).exists(), "install Debian's systemd (systemd-socket-activate)"
    port = free_port()
    path = tmp_path / "activated.sock"
    launcher = [ACTIVATE, "-l", f"127.0.0.1:{port}", "-l", str(path), "--fdname=web:local"]
    server = spawn(launcher, target, "--workers", "2", wait=False)
    wait_listening(port)  # the launcher listens; peregrine starts at the first connection
    status, body = get(("127.0.0.1", port), "/env")
    assert status == 200
    assert json.loads(body) == {}, "LISTEN_* are removed before the application starts"
    assert get(str(path), "/env")[0] == 200
    # The supervisor logs once the first worker reports ready, which may come after that worker's first answer.
    for line in (
        f"listening on http://127.0.0.1:{port} (inherited descriptor 3, systemd name 'web')",
        f"listening on unix:{path} (inherited descriptor 4, systemd name 'local')",
    ):
        assert server.stderr.wait_for(lambda text, line=line: line in text, 10) is not None, server.stderr.text()


def test_activation_for_another_process_is_ignored_and_removed(spawn: Callable[..., Server]) -> None:
    env = dict(os.environ, LISTEN_PID="1", LISTEN_FDS="1", LISTEN_FDNAMES="x")
    server = spawn([], ASGI, "--host", "127.0.0.1", "--port", "0", env=env)
    port = int(LISTENING.search(server.stderr.text())["port"])  # type: ignore[index]
    assert json.loads(get(("127.0.0.1", port), "/env")[1]) == {}


def test_activation_with_a_listen_address_option_is_refused() -> None:
    port = free_port()
    launcher = [ACTIVATE, "-l", f"127.0.0.1:{port}"]
    process = subprocess.Popen(
        [*launcher, *peregrine_command(), "--python-path", str(APPS), "--port", "9", ASGI],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_listening(port)
        assert process.wait(timeout=30) == 2
        assert process.stderr is not None
        assert "systemd passed sockets (LISTEN_FDS): --fd, --host, --port and --unix cannot name others" in (
            process.stderr.read()
        )
    finally:
        if process.poll() is None:
            process.kill()


# --- --unix-mode ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["600", "660", "0666"])
def test_unix_mode_sets_the_socket_files_permissions(
    start_server: Callable[..., Server], tmp_path: Path, mode: str
) -> None:
    path = tmp_path / "mode.sock"
    start_server(ASGI, "--unix", str(path), "--unix-mode", mode)
    assert stat.S_IMODE(path.stat().st_mode) == int(mode, 8)
    assert path.stat().st_gid == os.getegid()
    assert get(str(path))[0] == 200


def test_http3_binds_its_udp_sockets_beside_an_inherited_tcp_socket(
    spawn: Callable[..., Server], tls_files: TLSFiles
) -> None:
    sock = listening_socket()
    port = sock.getsockname()[1]
    server = spawn(
        [], ASGI, "--fd", str(sock.fileno()), "--http3", *tls_files.server_options(), pass_fds=(sock.fileno(),)
    )
    assert server.stderr.wait_for(lambda line: f"HTTP/3 on UDP port {port}" in line, 10) is not None
    taken = "Address already in use"  # by the server's QUIC sockets
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp, pytest.raises(OSError, match=taken):
        udp.bind(("127.0.0.1", port))
    sock.close()


def test_http3_with_only_unix_sockets_inherited_is_refused(tmp_path: Path, tls_files: TLSFiles) -> None:
    sock = listening_socket(socket.AF_UNIX, tmp_path / "only.sock")
    status, stderr = exits_with(
        [], "--fd", str(sock.fileno()), "--http3", *tls_files.server_options(), pass_fds=(sock.fileno(),)
    )
    assert status == 2
    assert "--http3 needs a TCP listener: every inherited socket is a unix socket" in stderr
    sock.close()
