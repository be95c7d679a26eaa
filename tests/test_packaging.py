"""The dependencies `pip install .` declares: uvloop where it installs from a wheel (build_support/dependencies.py).

The rule's cases are checked on the function setup.py calls; the markers are
evaluated as pip evaluates them (PEP 508, `packaging`); and the metadata pip
prepares from this source tree (`pip install --dry-run --report`: setup.py's
metadata hook only, no Swift build) is checked for this interpreter, with the
opt-out variable, and for the free-threaded 3.13t of
scripts/build-free-threaded-python.sh when it is built.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.markers import Marker, default_environment
from packaging.requirements import Requirement

from installed import REPO, clean_environment

sys.path.insert(0, str(REPO / "build_support"))

import dependencies

#: How the server, and so the install, words the values a flag's environment variable takes.
ALLOWED = "must be 1, true, yes, on, 0, false, no or off"
#: The free-threaded interpreter scripts/build-free-threaded-python.sh caches (CI's free-threaded leg).
FREE_THREADED_PYTHON = Path.home() / ".cache" / "peregrine" / "python3.13t" / "bin" / "python3.13t"


def _uvloop(free_threaded: bool = False, **environ: str) -> Requirement | None:
    found = dependencies.install_requires(free_threaded=free_threaded, environ=environ)
    assert len(found) <= 1
    return Requirement(found[0]) if found else None


def _environment(**changes: str) -> dict[str, str]:
    """PEP 508 marker variables of a Linux CPython 3.11, with `changes`."""
    environment: dict[str, str] = {key: str(value) for key, value in default_environment().items()}
    environment |= {
        "platform_python_implementation": "CPython",
        "implementation_name": "cpython",
        "sys_platform": "linux",
        "python_version": "3.11",
        "python_full_version": "3.11.7",
    }
    environment.update(changes)
    return environment


# --- the rule ---------------------------------------------------------------------------------------


def test_a_gil_build_requires_uvloop_from_0_19() -> None:
    requirement = _uvloop()
    assert requirement is not None
    assert requirement.name == "uvloop"
    assert str(requirement.specifier) == ">=0.19"
    assert "0.19.0" in requirement.specifier
    assert "0.23.0" in requirement.specifier
    assert "0.18.0" not in requirement.specifier


def test_a_free_threaded_build_requires_nothing() -> None:
    """No cp313t wheel: pip would build uvloop's sdist, and a failed build would fail peregrine's install."""
    assert dependencies.install_requires(free_threaded=True, environ={}) == []


# The variable is --no-uvloop's at run time too: the same values, read the same way (CONFIG.md).
@pytest.mark.parametrize("value", ["1", "true", "yes", "on", "TRUE", "Yes", "On"])
def test_the_opt_out_variable_leaves_uvloop_out(value: str) -> None:
    assert _uvloop(PEREGRINE_NO_UVLOOP=value) is None


@pytest.mark.parametrize("value", ["", "0", "false", "no", "off", "OFF", "False"])
def test_an_empty_or_false_opt_out_variable_keeps_uvloop(value: str) -> None:
    assert _uvloop(PEREGRINE_NO_UVLOOP=value) is not None


@pytest.mark.parametrize("value", ["2", "y", "uvloop", " 1"])
def test_an_opt_out_value_the_server_would_refuse_is_refused(value: str) -> None:
    with pytest.raises(dependencies.OptOutValueError, match=re.escape(f"{ALLOWED}, got '{value}'")):
        _uvloop(PEREGRINE_NO_UVLOOP=value)


def test_other_variables_do_not_opt_out() -> None:
    assert _uvloop(PEREGRINE_UVLOOP="0", NO_UVLOOP="1") is not None


# --- the marker (PEP 508, "Environment Markers") -------------------------------------------------------


@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13", "3.14"])
def test_marker_holds_for_linux_cpython_with_uvloop_wheels(version: str) -> None:
    requirement = _uvloop()
    assert requirement is not None
    assert requirement.marker is not None
    assert requirement.marker.evaluate(_environment(python_version=version, python_full_version=f"{version}.0"))


@pytest.mark.parametrize(
    "changes",
    [
        {"platform_python_implementation": "PyPy", "implementation_name": "pypy"},
        {"sys_platform": "win32"},
        {"sys_platform": "darwin"},
        {"python_version": "3.15", "python_full_version": "3.15.0"},
    ],
    ids=["pypy", "windows", "macos", "cpython-3.15"],
)
def test_marker_excludes_what_uvloop_has_no_wheel_for_or_the_server_does_not_run_on(changes: dict[str, str]) -> None:
    requirement = _uvloop()
    assert requirement is not None
    assert requirement.marker is not None
    assert not requirement.marker.evaluate(_environment(**changes))


def test_marker_holds_for_the_interpreter_running_the_tests() -> None:
    """The test venv's CPython on Linux: its install brings uvloop."""
    assert Marker(dependencies.UVLOOP_MARKER).evaluate()


# --- the metadata pip prepares from this tree ------------------------------------------------------


def _requires_dist(python: Path, **env: str) -> list[str]:
    """Requires-Dist of peregrine as pip would install it with `python` (metadata only, no Swift build)."""
    command = [str(python), "-m", "pip", "install", "--dry-run", "--quiet", "--no-deps", "--ignore-installed"]
    result = subprocess.run(
        [*command, "--report", "-", str(REPO)],
        capture_output=True,
        text=True,
        env=clean_environment(**env),
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    [item] = report["install"]
    assert item["metadata"]["name"] == "peregrine"
    requires: list[str] = item["metadata"].get("requires_dist") or []
    return requires


def test_metadata_for_this_interpreter_requires_uvloop() -> None:
    requires = _requires_dist(Path(sys.executable))
    assert [Requirement(line).name for line in requires] == ["uvloop"]
    assert Requirement(requires[0]).marker == Marker(dependencies.UVLOOP_MARKER)


def test_metadata_with_the_opt_out_requires_nothing() -> None:
    assert _requires_dist(Path(sys.executable), PEREGRINE_NO_UVLOOP="1") == []


def test_a_malformed_opt_out_stops_the_install_with_one_line() -> None:
    command = [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--no-deps", "--ignore-installed"]
    result = subprocess.run(
        [*command, str(REPO)],
        capture_output=True,
        text=True,
        env=clean_environment(PEREGRINE_NO_UVLOOP="maybe"),
        timeout=600,
        check=False,
    )
    assert result.returncode != 0
    lines = [line.strip() for line in (result.stdout + result.stderr).splitlines()]
    messages = [line for line in lines if line.startswith("peregrine build:")]
    expected = f"peregrine build: environment variable PEREGRINE_NO_UVLOOP {ALLOWED}, got 'maybe'"
    assert messages == [expected], "\n".join(lines[-40:])


def test_metadata_for_a_free_threaded_interpreter_requires_nothing() -> None:
    # scripts/test.sh builds it before its pytest step; a machine without it is told how to build it.
    assert os.access(FREE_THREADED_PYTHON, os.X_OK), (
        f"{FREE_THREADED_PYTHON} is not built: run scripts/build-free-threaded-python.sh"
    )
    free_threaded = subprocess.run(
        [str(FREE_THREADED_PYTHON), "-c", "import sysconfig; print(sysconfig.get_config_var('Py_GIL_DISABLED'))"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert free_threaded.stdout.strip() == "1"
    assert _requires_dist(FREE_THREADED_PYTHON) == []
