"""Configuration outside the command line (issue 18 item 3).

A TOML file (`--config`, PEREGRINE_CONFIG), PEREGRINE_<OPTION> variables,
WEB_CONCURRENCY, `--env-file`, `--app-dir` and `--print-config`, on the real
binary. Precedence: command line > PEREGRINE_* > file > WEB_CONCURRENCY /
FORWARDED_ALLOW_IPS > default. The supervisor resolves once: workers get
the resolved arguments, and a SIGHUP does not re-read the file.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import subprocess
import time
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from process_support import wait_for_workers

from conftest import APPS, CRASH_MARKERS, LISTENING, STARTUP_TIMEOUT, Lines, Server
from installed import peregrine_command

if TYPE_CHECKING:
    from collections.abc import Iterator

#: Variables of the test environment that would configure the server under test.
CONFIG_VARIABLES = ("WEB_CONCURRENCY", "FORWARDED_ALLOW_IPS", "PEREGRINE_TEST_WORKER_THREADS")


def environment(**extra: str) -> dict[str, str]:
    """The test's environment without configuration variables, plus `extra`."""
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in CONFIG_VARIABLES and not (name.startswith("PEREGRINE_") and name != "PEREGRINE_BIN")
    }
    env.update(extra)
    return env


def run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run peregrine to completion (--print-config, or a startup error)."""
    return subprocess.run(
        [*peregrine_command(), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=30,
        check=False,
    )


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    """Servers a test started, stopped (SIGTERM, exit 0) at its end."""
    started: list[Server] = []
    yield started
    for server in started:
        server.stop()


def start(servers: list[Server], args: list[str], cwd: Path, env: dict[str, str]) -> Server:
    """Start peregrine with exactly `args` and `env`; wait for `listening on`."""
    env = {**env, "PEREGRINE_TEST_STATE": str(cwd), "PYTHONUNBUFFERED": "1"}
    full = [*peregrine_command(), *args]
    process = subprocess.Popen(
        full, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stderr is not None
    assert process.stdout is not None
    server = Server(process=process, args=full, state=cwd, stderr=Lines(process.stderr), stdout=Lines(process.stdout))
    line = server.stderr.wait_for(lambda text: LISTENING.search(text) is not None, STARTUP_TIMEOUT)
    if line is None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        process.wait()
        server.stderr.join()
        pytest.fail(f"{' '.join(full)} did not start (exit {process.returncode}); stderr:\n{server.stderr.text()}")
    match = LISTENING.search(line)
    assert match is not None
    server.port = int(match["port"])
    servers.append(server)
    return server


def ask(server: Server, *variables: str) -> dict[str, Any]:
    """What the application (tests/apps/config_apps.py) reports."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        query = "&".join(f"var={name}" for name in variables)
        connection.request("GET", f"/?{query}")
        response = connection.getresponse()
        assert response.status == 200
        report: dict[str, Any] = json.loads(response.read())
        return report
    finally:
        connection.close()


def started_workers(server: Server) -> int:
    """N of the supervisor's `starting N worker(s)` line."""
    line = server.stderr.wait_for(lambda text: "starting" in text and "supervisor" in text, 5)
    assert line is not None, server.excerpt()
    words = line.split()
    return int(words[words.index("starting") + 1])


def error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The one `peregrine: error:` line of a startup failure (exit 2)."""
    assert result.returncode == 2, f"exit {result.returncode}; stderr:\n{result.stderr}"
    lines = [line for line in result.stderr.splitlines() if line.startswith("peregrine: error:")]
    assert len(lines) == 1, result.stderr
    for marker in CRASH_MARKERS:
        assert marker not in result.stderr
    return lines[0]


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


BASE = f'app = "config_apps:app"\npython-path = [{json.dumps(str(APPS))}]\nhost = "127.0.0.1"\nport = 0\n'


# MARK: - A file, the environment, both


def test_serves_from_a_config_file_alone(tmp_path: Path, servers: list[Server]) -> None:
    write(tmp_path / "peregrine.toml", "# everything from the file\n[peregrine]\n" + BASE + "workers = 2\n")
    server = start(servers, ["--config", "peregrine.toml"], tmp_path, environment())
    assert started_workers(server) == 2
    assert ask(server)["module"] == str(APPS / "config_apps.py")


def test_serves_from_the_environment_alone(tmp_path: Path, servers: list[Server]) -> None:
    env = environment(
        PEREGRINE_APP="config_apps:app",
        PEREGRINE_PYTHON_PATH=json.dumps([str(APPS)]),
        PEREGRINE_PORT="0",
        PEREGRINE_WORKERS="2",
        PEREGRINE_ACCESS_LOG="true",
    )
    server = start(servers, [], tmp_path, env)
    assert started_workers(server) == 2
    ask(server)
    logged = server.stdout.wait_for(lambda text: '"GET /?' in text, 5)
    assert logged is not None, "PEREGRINE_ACCESS_LOG=true: no access log"


def test_environment_overrides_the_file_and_the_command_line_both(tmp_path: Path, servers: list[Server]) -> None:
    write(tmp_path / "p.toml", BASE + "workers = 1\naccess-log = true\n")
    env = environment(PEREGRINE_CONFIG="p.toml", PEREGRINE_WORKERS="3", PEREGRINE_ACCESS_LOG="0")
    server = start(servers, ["--workers", "2"], tmp_path, env)
    assert started_workers(server) == 2
    ask(server)
    assert server.stdout.wait_for(lambda text: "GET" in text, 1) is None, "PEREGRINE_ACCESS_LOG=0 did not turn it off"


def test_web_concurrency_sets_the_workers(tmp_path: Path, servers: list[Server]) -> None:
    write(tmp_path / "p.toml", BASE)
    server = start(servers, ["--config", "p.toml"], tmp_path, environment(WEB_CONCURRENCY="3"))
    assert started_workers(server) == 3
    assert len(wait_for_workers(server, 3)) == 3


def test_web_concurrency_yields_to_peregrine_workers_and_the_file(tmp_path: Path) -> None:
    write(tmp_path / "p.toml", BASE + "workers = 2\n")
    result = run(["--print-config", "--config", "p.toml"], tmp_path, environment(WEB_CONCURRENCY="3"))
    assert tomllib.loads(result.stdout)["workers"] == 2
    env = environment(WEB_CONCURRENCY="3", PEREGRINE_WORKERS="4")
    result = run(["--print-config", "config_apps:app"], tmp_path, env)
    assert tomllib.loads(result.stdout)["workers"] == 4
    assert "# environment variable PEREGRINE_WORKERS" in result.stdout


def test_workers_get_resolved_arguments_and_sighup_does_not_reread_the_file(
    tmp_path: Path, servers: list[Server]
) -> None:
    config = write(tmp_path / "p.toml", BASE + "max-body = 100\n")
    server = start(servers, ["--config", "p.toml"], tmp_path, environment())
    first = ask(server)["pid"]
    arguments = Path(f"/proc/{first}/cmdline").read_bytes().split(b"\0")
    assert b"--config" not in arguments, arguments
    at = arguments.index(b"--max-body")
    assert arguments[at : at + 2] == [b"--max-body", b"100"]
    # A broken file is not re-read: the restarted workers keep serving the resolved configuration.
    write(config, "this is not = = toml\n")
    server.process.send_signal(signal.SIGHUP)
    pid = first
    deadline = time.monotonic() + 15
    while pid == first and time.monotonic() < deadline:
        time.sleep(0.1)
        pid = ask(server)["pid"]
    assert pid != first, server.excerpt()
    assert "error" not in server.stderr.text().lower(), server.excerpt()
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    connection.request("POST", "/", body=b"x" * 101)
    assert connection.getresponse().status == 413
    connection.close()


# MARK: - --print-config


def test_print_config_shows_every_option_with_its_origin(tmp_path: Path) -> None:
    write(tmp_path / "p.toml", BASE + '\nmax-body = "1m"\ntls-cert = []\n')
    env = environment(PEREGRINE_BACKLOG="64", PEREGRINE_RELOAD_INCLUDE='["*.py", "*.html"]')
    result = run(["--config", "p.toml", "--print-config", "--port", "8123"], tmp_path, env)
    assert result.returncode == 0, result.stderr
    values = tomllib.loads(result.stdout)
    assert values == {
        "app": "config_apps:app",
        "python-path": [str(APPS)],
        "host": "127.0.0.1",
        "port": 8123,
        "max-body": "1m",
        "tls-cert": [],
        "backlog": 64,
        "reload-include": ["*.py", "*.html"],
    }
    lines = {line.split(" = ")[0]: line for line in result.stdout.splitlines() if " = " in line}
    assert lines["port"].endswith("# command line")
    assert lines["backlog"].endswith("# environment variable PEREGRINE_BACKLOG")
    assert lines["max-body"].endswith("# p.toml:6 (key max-body)")
    assert lines["# keep-alive"].endswith("# default")
    assert "# keep-alive = 5000" in lines["# keep-alive"]
    # Every option of the help is there, set or not.
    help_text = run(["--help"], tmp_path, environment()).stdout
    documented = {line.split()[0][2:] for line in help_text.splitlines() if line.startswith("  --")}
    shown = {line.lstrip("# ").split(" ")[0] for line in result.stdout.splitlines()[1:]}
    assert documented - {"config", "print-config", "help", "version"} <= shown


# MARK: - --env-file


def test_env_file_reaches_the_application_and_does_not_configure_peregrine(
    tmp_path: Path, servers: list[Server]
) -> None:
    write(
        tmp_path / "app.env",
        '# for the application\nexport GREETING="hello ${WHO:-world}"\nKEPT=from-file\nPEREGRINE_WORKERS=3\n'
        "QUOTED='a ${GREETING} b'\n",
    )
    write(tmp_path / "p.toml", BASE + 'env-file = "app.env"\n')
    server = start(servers, ["--config", "p.toml"], tmp_path, environment(KEPT="from-environment"))
    assert started_workers(server) == 1
    env = ask(server, "GREETING", "KEPT", "PEREGRINE_WORKERS", "QUOTED")["env"]
    assert env == {
        "GREETING": "hello world",
        "KEPT": "from-environment",
        "PEREGRINE_WORKERS": "3",
        "QUOTED": "a ${GREETING} b",
    }


def test_a_configuration_file_over_one_mebibyte_is_refused(tmp_path: Path) -> None:
    write(tmp_path / "big.toml", "# padding\n" * ((1 << 20) // 10) + "port = 1\n")
    result = run(["--config", "big.toml", "config_apps:app"], tmp_path, environment())
    assert "--config: cannot read big.toml: larger than 1 MiB (command line)" in error_line(result)
    write(tmp_path / "fits.toml", "# padding\n" * ((1 << 20) // 10 - 1) + "port = 1\n")
    result = run(["--print-config", "--config", "fits.toml", "config_apps:app"], tmp_path, environment())
    assert result.returncode == 0, result.stderr
    assert tomllib.loads(result.stdout)["port"] == 1


def test_a_bad_env_file_stops_startup_with_its_line(tmp_path: Path) -> None:
    write(tmp_path / "app.env", "A=1\nnot a line\n")
    result = run(["--env-file", "app.env", "config_apps:app"], tmp_path, environment())
    assert "--env-file app.env:2:" in error_line(result)


# MARK: - --app-dir


def test_app_dir_is_the_import_directory_and_working_directory(tmp_path: Path, servers: list[Server]) -> None:
    source = tmp_path / "src"
    source.mkdir()
    (source / "cfgmod.py").write_text("from config_apps import app as app\n", encoding="utf-8")
    (tmp_path / "cfgmod.py").write_text("raise RuntimeError('imported from the wrong directory')\n", encoding="utf-8")
    (tmp_path / "other").mkdir()
    args = ["--app-dir", "src", "--python-path", str(APPS), "--python-path", "other", "--port", "0", "cfgmod:app"]
    server = start(servers, args, tmp_path, environment())
    report = ask(server)
    assert report["cwd"] == str(source)
    assert report["path0"] == str(source)


def test_app_dir_must_exist(tmp_path: Path) -> None:
    result = run(["--app-dir", "missing", "config_apps:app"], tmp_path, environment())
    assert "--app-dir missing is not a directory" in error_line(result)


# MARK: - Errors name their origin


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ('port = 0\nmax-body = "lots"\n', "p.toml:2 (key max-body): --max-body must be a size"),
        ("[peregrine]\nmax-bdy = 1\n", "p.toml:2: unknown key 'max-bdy' (did you mean 'max-body'?)"),
        ("workers = 1.5\n", "p.toml:1: floats are not supported"),
        ('access-log = "yes"\n', "p.toml:1: 'access-log' is a flag: it takes true or false"),
        ("[server]\n", "p.toml:1: unknown table [server]"),
        ('tls-ca = "ca.pem"\n', "--tls-ca needs --tls-cert and --tls-key (--tls-ca from p.toml:1 (key tls-ca))"),
    ],
)
def test_file_errors_name_the_file_line_and_key(tmp_path: Path, document: str, expected: str) -> None:
    write(tmp_path / "p.toml", document)
    result = run(["--config", "p.toml", "config_apps:app"], tmp_path, environment())
    assert expected in error_line(result)


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        ({"PEREGRINE_PORT": "http"}, "environment variable PEREGRINE_PORT: --port must be an integer"),
        ({"PEREGRINE_NO_HTTP2": "sure"}, "environment variable PEREGRINE_NO_HTTP2 must be 1, true, yes, on"),
        ({"WEB_CONCURRENCY": "-1"}, "environment variable WEB_CONCURRENCY: --workers must be an integer"),
        (
            {"PEREGRINE_CONFIG": "missing.toml"},
            "--config: cannot read missing.toml: open: No such file or directory (environment variable",
        ),
    ],
)
def test_environment_errors_name_the_variable(tmp_path: Path, variables: dict[str, str], expected: str) -> None:
    result = run(["config_apps:app"], tmp_path, environment(**variables))
    assert expected in error_line(result)
