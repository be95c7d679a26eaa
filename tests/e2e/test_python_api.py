"""`peregrine.run()` against the real server (issue 18 point 4).

- the option table of python/peregrine/_options.py names exactly the options of `peregrine --help`;
- `run(block=False)`: the handle's port (also for `port=0`, also when the log level hides the
  `listening on` line), URL, pid, stop, wait, context manager; start-up failures carry the server's log;
- `run()` (block=True) in a subprocess: the Python process becomes the server (same pid), for a
  `module:attr` string and for an application object of a script run as a file;
- a module that calls `run()` at import time is refused inside the server.

Without a server: tests/test_python_api_mapping.py. The package comes from the source tree; the server
is the one under test (PEREGRINE_BIN), given to the package as $PEREGRINE_BINARY.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

from installed import REPO, server_executable, server_python

sys.path.insert(0, str(REPO / "python"))
# The package from the source tree (not an installed copy).

import peregrine
from peregrine._options import OPTIONS

if TYPE_CHECKING:
    from collections.abc import Iterator

HELLO = """
    def app(environ, start_response):
        body = b"hello from " + environ["PATH_INFO"].encode()
        start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))])
        return [body]
"""
LISTENING = re.compile(r"listening on http://127\.0\.0\.1:(\d+)")


@pytest.fixture(autouse=True)
def binary(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The server under test, for the package's launcher."""
    path = server_executable()
    monkeypatch.setenv("PEREGRINE_BINARY", str(path))
    return path


@pytest.fixture
def app_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory with `hello_pyapi.py` (a WSGI app), on sys.path here too; its modules leave sys.modules after."""
    (tmp_path / "hello_pyapi.py").write_text(textwrap.dedent(HELLO))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        del sys.modules[name]


def children(pid: int) -> set[int]:
    """The child processes of `pid`."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            found.update(int(word) for word in (task / "children").read_text().split())
    return found


def gone(pid: int, timeout: float = 10.0) -> bool:
    """Whether process `pid` has exited (or is a zombie) within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state == "Z":
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def running_with_argument(argument: str) -> list[int]:
    """Live processes with `argument` on their command line."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if argument.encode() in (entry / "cmdline").read_bytes().split(b"\0") and not gone(int(entry.name), 0):
                    found.append(int(entry.name))
    return found


# --- the option table --------------------------------------------------------------------------------------


def test_the_option_table_names_exactly_the_options_of_help(binary: Path) -> None:
    usage = subprocess.run([str(binary), "--help"], capture_output=True, text=True, check=True, timeout=30).stdout
    section = usage.split("\noptions:\n", 1)[1]
    in_help = set(re.findall(r"^  (--[a-z0-9-]+)", section, re.MULTILINE))
    in_table = {option.name for option in OPTIONS}
    assert in_table - in_help == set(), "in python/peregrine/_options.py but not in --help"
    assert in_help - in_table == set(), "in --help but not in python/peregrine/_options.py: add a row"


# --- block=False ---------------------------------------------------------------------------------------------


def test_run_without_blocking_serves_an_application_object_on_the_port_it_picked(app_dir: Path) -> None:
    import hello_pyapi  # noqa: PLC0415 (written by the fixture)

    server = peregrine.run(hello_pyapi.app, port=0, block=False)
    try:
        assert server.port > 0
        assert server.url == f"http://127.0.0.1:{server.port}"
        assert server.returncode is None
        assert Path(f"/proc/{server.pid}/exe").resolve() == server_executable()
        response = httpx.get(server.url + "/first")
        assert (response.status_code, response.text) == (200, "hello from /first")
        assert any("serving hello_pyapi:app" in line for line in server.log)
        assert server.args[1:] == ["--port", "0", "--python-path", str(app_dir), "hello_pyapi:app"]
        with pytest.raises(TimeoutError, match=r"still runs after 0\.2 s"):
            server.wait(timeout=0.2)
    finally:
        status = server.stop()
    assert status == 0
    assert server.returncode == 0
    assert server.wait() == 0
    assert server.stop() == 0  # stopping a stopped server is harmless
    with pytest.raises(httpx.ConnectError):
        httpx.get(server.url)


def test_the_handle_is_a_context_manager_that_stops_the_server(app_dir: Path) -> None:
    with peregrine.run("hello_pyapi:app", port=0, workers=2, access_log=True, block=False) as server:
        workers = children(server.pid)
        assert httpx.get(f"http://127.0.0.1:{server.port}/x").text == "hello from /x"
    assert server.returncode == 0
    assert all(gone(pid) for pid in workers)


def test_a_quiet_log_level_still_finds_the_port_from_the_listening_socket(app_dir: Path) -> None:
    with peregrine.run("hello_pyapi:app", port=0, log_level="warning", block=False) as server:
        assert not any("listening on" in line for line in server.log)
        assert server.port > 0
        response = httpx.get(server.url + "/quiet", timeout=10)
        assert response.text == "hello from /quiet"
    assert server.returncode == 0


def test_a_unix_socket_server_has_a_unix_url_and_no_port(app_dir: Path) -> None:
    path = app_dir / "pyapi.sock"
    with peregrine.run("hello_pyapi:app", unix=path, block=False) as server:
        assert server.url == f"unix:{path}"
        with pytest.raises(peregrine.PeregrineError, match="has no TCP port"):
            _ = server.port
        with httpx.Client(transport=httpx.HTTPTransport(uds=str(path))) as client:
            assert client.get("http://localhost/uds").text == "hello from /uds"


def test_a_server_that_cannot_start_raises_with_its_log_and_status(app_dir: Path) -> None:
    with pytest.raises(peregrine.ServerStartError) as raised:
        peregrine.run("hello_pyapi:missing", port=0, block=False)
    assert raised.value.returncode != 0
    assert "exited with status" in str(raised.value)
    assert "missing" in "\n".join(raised.value.log)
    assert "missing" in str(raised.value).split("the server's log:", 1)[1]


def test_a_value_the_server_refuses_is_its_one_line_error_and_exit_status_2(app_dir: Path) -> None:
    with pytest.raises(peregrine.ServerStartError, match="exited with status 2") as raised:
        peregrine.run("hello_pyapi:app", port=70000, block=False)
    assert any("--port" in line for line in raised.value.log)


def test_a_server_not_ready_in_time_is_stopped_and_reported(app_dir: Path) -> None:
    (app_dir / "slow_pyapi.py").write_text("import time\ntime.sleep(60)\n" + textwrap.dedent(HELLO))
    started = time.monotonic()
    with pytest.raises(peregrine.ServerStartError, match="did not start listening within 1 s") as raised:
        peregrine.run("slow_pyapi:app", port=0, ready_timeout=1, graceful_timeout=500, block=False)
    assert time.monotonic() - started < 10
    assert raised.value.returncode is not None  # stopped, not left running
    assert running_with_argument("slow_pyapi:app") == []  # and its worker with it


def test_stop_kills_a_server_that_does_not_stop_in_time(app_dir: Path) -> None:
    server = peregrine.run("hello_pyapi:app", port=0, block=False)
    workers = children(server.pid)
    os.kill(server.pid, signal.SIGSTOP)  # the supervisor cannot act on SIGTERM
    try:
        assert server.stop(timeout=0.5) == -signal.SIGKILL
    finally:
        for pid in workers:  # a worker orphaned by the SIGKILL is this test's to clean up
            if not gone(pid, timeout=5):
                os.kill(pid, signal.SIGKILL)


def test_a_server_left_running_is_stopped_when_the_interpreter_exits(app_dir: Path) -> None:
    code = "import peregrine; s = peregrine.run('hello_pyapi:app', port=0, block=False); print(s.pid, flush=True)"
    process = start_python(["-c", code], app_dir, stdout=subprocess.PIPE)
    output, errors = process.communicate(timeout=60)
    assert process.returncode == 0, errors
    pid = int(output.split()[0])
    assert gone(pid), f"the server {pid} outlived the interpreter that started it"
    assert "signal 15: stopping gracefully" in errors


# --- block=True: the process becomes the server -------------------------------------------------------------


def start_python(code_or_script: list[str], cwd: Path, stdout: int | None = None) -> subprocess.Popen[str]:
    """The server's interpreter running `code_or_script`, with the package from the source tree."""
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join([str(REPO / "python"), environment.get("PYTHONPATH", "")])
    return subprocess.Popen(
        [str(server_python()), *code_or_script],
        cwd=cwd,
        env=environment,
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
    )


def listening_port(process: subprocess.Popen[str], timeout: float = 20.0) -> tuple[int, list[str]]:
    """The port in the process's `listening on` line, and the lines up to it."""
    assert process.stderr is not None
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stderr.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
        if match := LISTENING.search(line):
            return int(match[1]), lines
    process.kill()
    pytest.fail("no 'listening on' line; stderr:\n" + "\n".join(lines))


def stop(process: subprocess.Popen[str]) -> int:
    """SIGTERM and the exit status."""
    process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()


@pytest.mark.usefixtures("app_dir")
def test_run_blocking_replaces_the_python_process_with_the_server(app_dir: Path) -> None:
    process = start_python(["-c", "import peregrine; peregrine.run('hello_pyapi:app', port=0, http2=False)"], app_dir)
    port, lines = listening_port(process)
    # The supervisor's log prefix is its pid: the interpreter's own process, replaced by exec.
    assert any(f"[{process.pid}] [INFO] listening on" in line for line in lines)
    assert httpx.get(f"http://127.0.0.1:{port}/blocking").text == "hello from /blocking"
    assert stop(process) == 0


def test_run_blocking_with_an_object_of_a_script_imports_the_script_by_name(app_dir: Path) -> None:
    script = app_dir / "serve_pyapi.py"
    script.write_text(
        textwrap.dedent(HELLO)
        + textwrap.dedent("""
            if __name__ == "__main__":
                import peregrine
                peregrine.run(app, port=0)
        """)
    )
    other = app_dir.parent / f"{app_dir.name}-elsewhere"
    other.mkdir()
    process = start_python([str(script)], other)  # not from the script's directory
    port, lines = listening_port(process)
    assert any("serving serve_pyapi:app" in line for line in lines)
    assert httpx.get(f"http://127.0.0.1:{port}/script").text == "hello from /script"
    assert stop(process) == 0


def test_a_module_calling_run_at_import_is_refused_inside_the_server(app_dir: Path) -> None:
    script = app_dir / "unguarded_pyapi.py"
    script.write_text(textwrap.dedent(HELLO) + "\nimport peregrine\nperegrine.run(app, port=0)\n")
    process = start_python([str(script)], app_dir)
    try:
        _, errors = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode != 0
    assert "NestedRunError" in errors
    assert 'if __name__ == "__main__"' in errors
