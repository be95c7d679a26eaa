"""`pip install .` builds the server for the installing interpreter and the launcher runs it.

Slow on purpose: each interpreter gets a fresh venv and a release build of the
Swift host (incremental after the first run; the scratch directory is
.build/pip-<interpreter> in the source tree). The interpreters default to
pyenv's 3.11 and Debian's /usr/bin/python3; set PEREGRINE_INSTALL_PYTHONS to a
os.pathsep-separated list of interpreters to choose others (a pyenv 3.12 or
3.13, say). The preflight and launcher tests further down are fast.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
import textwrap
import time
from pathlib import Path

import pytest

from installed import REPO, RunningServer, Venv, clean_environment, http_get, make_venv, pip_install

sys.path.insert(0, str(REPO / "build_support"))
sys.path.insert(0, str(REPO / "python"))
# The build helpers and the launcher, from the source tree (not an installed copy).

import peregrine
import preflight
import pyflags
import swiftbuild


def _default_interpreters() -> list[Path]:
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    pyenv_311 = sorted(pyenv_root.glob("versions/3.11.*/bin/python3.11"))
    return [*pyenv_311[-1:], Path("/usr/bin/python3")]


def _interpreters() -> list[Path]:
    chosen = os.environ.get("PEREGRINE_INSTALL_PYTHONS")
    if chosen:
        return [Path(part) for part in chosen.split(os.pathsep) if part]
    return _default_interpreters()


def _interpreter_id(python: Path) -> str:
    return "debian" if str(python).startswith("/usr/bin/") else python.parent.parent.name


@pytest.fixture(scope="module", params=_interpreters(), ids=_interpreter_id)
def installed_venv(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    """A fresh venv of one interpreter with this source tree pip-installed into it."""
    base: Path = request.param
    if not base.is_file():
        pytest.skip(f"{base} is not installed here")
    venv = make_venv(base, tmp_path_factory.mktemp(f"venv-{_interpreter_id(base)}"))
    pip_install(venv, str(REPO))
    return venv


def _site_packages(venv: Venv) -> Path:
    result = venv.run("-c", "import sysconfig; print(sysconfig.get_paths()['platlib'])")
    return Path(result.stdout.strip())


# --- the installed package -------------------------------------------------------------


@pytest.mark.install
def test_console_script_runs_the_binary(installed_venv: Venv) -> None:
    result = subprocess.run(
        [str(installed_venv.peregrine), "--version"],
        capture_output=True,
        text=True,
        env=clean_environment(),
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"peregrine {peregrine.__version__}"


@pytest.mark.install
def test_python_dash_m_runs_the_binary(installed_venv: Venv) -> None:
    result = installed_venv.run("-m", "peregrine", "--version", env=clean_environment(), timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"peregrine {peregrine.__version__}"


@pytest.mark.install
def test_binary_ships_executable_inside_the_package(installed_venv: Venv) -> None:
    package = _site_packages(installed_venv) / "peregrine"
    for name in ("peregrine", "peregrine-worker"):  # the supervisor runs the worker from its own directory
        binary = package / "_bin" / name
        assert binary.is_file()
        assert os.access(binary, os.X_OK)
    info = json.loads((package / "_bin" / "build.json").read_text())
    version = installed_venv.run("-c", "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')")
    assert info["python_version"] == version.stdout.strip()


@pytest.mark.install
def test_wheel_is_tagged_for_the_interpreter_abi(installed_venv: Venv) -> None:
    wheel_file = next(_site_packages(installed_venv).glob("peregrine-*.dist-info")) / "WHEEL"
    tags = re.findall(r"^Tag: (.+)$", wheel_file.read_text(), re.MULTILINE)
    # The ABI tag carries the interpreter's ABI flags (PEP 3149): `t` for a free-threaded build (cp313-cp313t).
    abi = installed_venv.run("-c", "import sys; print(f'cp{sys.version_info[0]}{sys.version_info[1]}', sys.abiflags)")
    cp, *flags = abi.stdout.split()
    assert tags == [f"{cp}-{cp}{''.join(flags)}-linux_{os.uname().machine}"]


@pytest.mark.install
def test_worker_links_the_installing_interpreters_libpython(installed_venv: Venv) -> None:
    binary = _site_packages(installed_venv) / "peregrine" / "_bin" / "peregrine-worker"
    libdir = installed_venv.run("-c", "import sysconfig; print(sysconfig.get_config_var('LIBDIR'))")
    ldd = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True).stdout
    libpython = [line for line in ldd.splitlines() if "libpython" in line]
    if not libpython:
        pytest.skip("linked statically against libpython")
    assert "not found" not in libpython[0]
    assert libdir.stdout.strip() in libpython[0]


@pytest.mark.install
def test_supervisor_maps_neither_python_nor_openssl(installed_venv: Venv) -> None:
    """The supervisor process only waits on workers: it links no libpython, libssl or libcrypto."""
    binary = _site_packages(installed_venv) / "peregrine" / "_bin" / "peregrine"
    ldd = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=False)
    shown = ldd.stdout + ldd.stderr
    for library in ("libpython", "libssl", "libcrypto"):
        assert library not in shown, shown


APP = """
import json
import sys

import markupsafe
import markupsafe._speedups  # the C extension, loaded into the embedded interpreter

import from_cwd
import from_python_path


def app(environ, start_response):
    body = json.dumps({
        "escaped": str(markupsafe.escape("<b>")),
        "speedups": markupsafe._speedups.__file__,
        "from_cwd": from_cwd.WHERE,
        "from_python_path": from_python_path.WHERE,
        "prefix": sys.prefix,
    }).encode()
    start_response("200 OK", [("Content-Type", "application/json"),
                              ("Content-Length", str(len(body)))])
    return [body]
"""


@pytest.fixture
def import_app(tmp_path: Path) -> tuple[Path, Path]:
    """An application directory and a separate --python-path directory."""
    app_dir = tmp_path / "app"
    extra = tmp_path / "extra"
    app_dir.mkdir()
    extra.mkdir()
    (app_dir / "importer.py").write_text(textwrap.dedent(APP))
    (app_dir / "from_cwd.py").write_text('WHERE = "cwd"\n')
    (extra / "from_python_path.py").write_text('WHERE = "python-path"\n')
    return app_dir, extra


@pytest.mark.install
def test_application_imports_resolve_like_the_venv(installed_venv: Venv, import_app: tuple[Path, Path]) -> None:
    """A C extension from the venv, a module from the cwd and one from --python-path all import."""
    pip_install(installed_venv, "markupsafe")
    app_dir, extra = import_app
    command = [str(installed_venv.peregrine), "--port", "0", "--python-path", str(extra), "importer:app"]
    server = RunningServer(command, cwd=app_dir)
    try:
        status, body = http_get(server.port)
    finally:
        returncode = server.stop()
    assert status == 200, server.output
    answer = json.loads(body)
    venv_root = installed_venv.root.resolve()
    assert answer["escaped"] == "&lt;b&gt;"
    assert Path(answer["speedups"]).resolve().is_relative_to(venv_root)
    assert answer["from_cwd"] == "cwd"
    assert answer["from_python_path"] == "python-path"
    assert Path(answer["prefix"]).resolve() == venv_root
    assert returncode == 0, server.output  # SIGTERM is a graceful stop


ASGI_APP = """
async def app(scope, receive, send):
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
    await send({"type": "http.response.body", "body": b"ok"})
"""


@pytest.mark.install
def test_plain_install_serves_asgi_on_the_loop_its_dependencies_bring(installed_venv: Venv, tmp_path: Path) -> None:
    """`pip install .` alone brings uvloop on a GIL build, and the worker's start-up line says it runs on it.

    A free-threaded build gets no uvloop (build_support/dependencies.py) and says asyncio.
    """
    probe = installed_venv.run(
        "-c",
        "import importlib.util, sysconfig; "
        "print(bool(sysconfig.get_config_var('Py_GIL_DISABLED')), importlib.util.find_spec('uvloop') is not None)",
        env=clean_environment(),
    )
    free_threaded, has_uvloop = (word == "True" for word in probe.stdout.split())
    assert has_uvloop is not free_threaded, probe.stdout + probe.stderr
    expected = "(ASGI on asyncio)" if free_threaded else "(ASGI on uvloop)"
    (tmp_path / "hello_asgi.py").write_text(ASGI_APP)
    server = RunningServer([str(installed_venv.peregrine), "--port", "0", "hello_asgi:app"], cwd=tmp_path)
    try:
        status, body = http_get(server.port)
        # The worker logs its loop before it serves; the reader thread may still be a line behind.
        deadline = time.monotonic() + 30
        while expected not in server.output and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        returncode = server.stop()
    assert (status, body) == (200, "ok"), server.output
    assert expected in server.output, server.output
    assert returncode == 0, server.output


# --- preflight: one line naming what is missing ---------------------------------------


def _pip_wheel(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(tmp_path), str(REPO)],
        capture_output=True,
        text=True,
        env=clean_environment(**env),
        timeout=600,
        check=False,
    )


def _build_message(result: subprocess.CompletedProcess[str]) -> str:
    lines = [line.strip() for line in (result.stdout + result.stderr).splitlines()]
    messages = [line for line in lines if line.startswith("peregrine build:")]
    assert len(messages) == 1, "\n".join(lines[-40:])
    return messages[0]


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"PEREGRINE_PREFLIGHT_HIDE": "swift"}, "Swift toolchain was not found"),
        (
            {"PEREGRINE_SWIFT": "/nonexistent/swift"},
            "PEREGRINE_SWIFT=/nonexistent/swift is not an executable",
        ),
        ({"PEREGRINE_PREFLIGHT_HIDE": "python-headers"}, "Python headers (Python.h)"),
        ({"PEREGRINE_PREFLIGHT_HIDE": "openssl"}, "apt-get install libssl-dev"),
        ({"PEREGRINE_PREFLIGHT_HIDE": "zlib"}, "apt-get install zlib1g-dev"),
    ],
    ids=["no-swift", "bad-swift-path", "no-python-headers", "no-openssl", "no-zlib"],
)
def test_pip_install_stops_with_one_line_naming_the_missing_piece(
    tmp_path: Path, env: dict[str, str], expected: str
) -> None:
    result = _pip_wheel(tmp_path, **env)
    assert result.returncode != 0
    assert expected in _build_message(result)
    assert not list(tmp_path.glob("*.whl"))


def test_swift_is_not_found_without_path_or_fallback() -> None:
    with pytest.raises(pyflags.MissingPrerequisiteError, match="install a Swift 6 toolchain"):
        preflight.find_swift(None, "/nonexistent", ["/nonexistent/swift"])


def test_swift_older_than_6_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "swift"
    fake.write_text("#!/bin/sh\necho 'Swift version 5.10 (swift-5.10-RELEASE)'\n")
    fake.chmod(0o755)
    with pytest.raises(pyflags.MissingPrerequisiteError, match="needs Swift 6 or newer"):
        preflight.swift_version(str(fake))


def test_openssl_headers_are_found_only_where_ssl_h_is(tmp_path: Path) -> None:
    with pytest.raises(pyflags.MissingPrerequisiteError, match="libssl-dev"):
        preflight.find_openssl_headers([str(tmp_path)])
    (tmp_path / "openssl").mkdir()
    (tmp_path / "openssl" / "ssl.h").write_text("")
    assert preflight.find_openssl_headers([str(tmp_path)]) == str(tmp_path)


def test_zlib_header_is_found_only_where_zlib_h_is(tmp_path: Path) -> None:
    with pytest.raises(pyflags.MissingPrerequisiteError, match="zlib1g-dev"):
        preflight.find_zlib_header([str(tmp_path)])
    (tmp_path / "zlib.h").write_text("")
    assert preflight.find_zlib_header([str(tmp_path)]) == str(tmp_path)


def test_python_headers_missing_names_the_interpreter(tmp_path: Path) -> None:
    with pytest.raises(pyflags.MissingPrerequisiteError, match="python3-dev"):
        preflight.find_python_headers([str(tmp_path)])


def test_no_libpython_at_all_is_reported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    empty = str(tmp_path)
    values = {"LIBDIR": empty, "LIBPL": empty, "LDLIBRARY": "libpython9.9.so", "LDVERSION": "9.9"}
    monkeypatch.setattr(pyflags, "_var", lambda name: values.get(name, ""))
    with pytest.raises(pyflags.MissingPrerequisiteError, match="--enable-shared"):
        pyflags.link_flags()


def test_failed_swift_build_shows_errors_and_one_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fake = tmp_path / "swift"
    fake.write_text(
        "#!/bin/sh\n"
        'for i in $(seq 1 100); do echo "[$i/100] Compiling"; done\n'
        "echo '/src/Sources/Core/X.swift:1:1: error: something is wrong'\n"
        "exit 1\n"
    )
    fake.chmod(0o755)
    with pytest.raises(swiftbuild.BuildFailedError) as failure:
        swiftbuild.build_binary(str(fake), REPO, {"PEREGRINE_BUILD_DIR": str(tmp_path / "scratch")})
    summary = str(failure.value)
    assert "\n" not in summary
    assert summary.startswith("swift build failed (exit 1)")
    shown = capsys.readouterr().err
    assert "error: something is wrong" in shown
    assert "[1/100] Compiling" not in shown  # the tail, not the whole log


def test_scratch_directory_is_per_interpreter_and_in_the_tree() -> None:
    scratch = swiftbuild.scratch_dir(REPO, {})
    assert scratch.parent == REPO / ".build"
    assert sysconfig.get_config_var("SOABI") in scratch.name


# --- the launcher ---------------------------------------------------------------------


def _launcher(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """Run `python -m peregrine` from the source tree with this interpreter."""
    return subprocess.run(
        [sys.executable, "-m", "peregrine", *args],
        capture_output=True,
        text=True,
        env=clean_environment(PYTHONPATH=str(REPO / "python"), **env),
        timeout=60,
        check=False,
    )


def test_launcher_execs_binary_with_interpreter_and_arguments() -> None:
    """The binary gets argv[0] "peregrine", the arguments, and the launcher's interpreter."""
    # Stand in for the server with this interpreter, which can report all three.
    report = "import os, sys; print(sys.orig_argv[0], os.environ['PEREGRINE_PYTHON_EXECUTABLE'], sys.argv[1:])"
    result = _launcher({"PEREGRINE_BINARY": sys.executable}, "-c", report, "--port", "0", "app:app")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"peregrine {sys.executable} ['--port', '0', 'app:app']"


def test_launcher_without_binary_exits_2_with_one_line(tmp_path: Path) -> None:
    result = _launcher({"PEREGRINE_BINARY": str(tmp_path / "missing")}, "--version")
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("peregrine: the server binary ")
    assert "does not exist" in result.stderr


def test_launcher_refuses_a_binary_that_is_not_executable(tmp_path: Path) -> None:
    plain = tmp_path / "peregrine"
    plain.write_text("")
    result = _launcher({"PEREGRINE_BINARY": str(plain)}, "--version")
    assert result.returncode == 2
    assert "is not executable" in result.stderr


def test_package_exports_version_and_launcher_names() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", peregrine.__version__)
    assert set(peregrine.__all__) <= set(dir(peregrine))


def test_pyflags_bakes_the_given_interpreter() -> None:
    flags = pyflags.swiftpm_flags(default_python="/some/python")
    assert '-DPEREGRINE_BUILD_PYTHON="/some/python"' in flags
