"""Find the server binary shipped in this package and replace the process with it.

`pip install` compiles the Swift host against the installing interpreter and
puts it at `peregrine/_bin/peregrine`, beside `build.json` naming that
interpreter. The launcher runs it with PEREGRINE_PYTHON_EXECUTABLE set to the
interpreter running the launcher: the host gives that path to the embedded
CPython as its executable, so sys.prefix, site-packages and therefore the
application's imports come out as in this interpreter or venv.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from collections.abc import Sequence

#: Overrides the binary to run (a development build, say); skips the build check.
BINARY_ENV = "PEREGRINE_BINARY"
#: Set for the binary: the interpreter whose environment the application sees.
PYTHON_ENV = "PEREGRINE_PYTHON_EXECUTABLE"

_BIN_DIR = Path(__file__).resolve().parent / "_bin"


class PeregrineError(Exception):
    """Base of the errors raised by this package."""


class BinaryNotFoundError(PeregrineError):
    """The server executable is missing or not executable; `path` is where it was looked for."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"the server binary {path} {reason}")
        self.path = path


class WrongInterpreterError(PeregrineError):
    """The binary was built for another Python version than the one running the launcher."""

    def __init__(self, built_for: str, running: str) -> None:
        super().__init__(
            f"this peregrine was built for Python {built_for} but runs under Python {running}; "
            f"reinstall it with this interpreter: {sys.executable} -m pip install --force-reinstall "
            "--no-cache-dir peregrine"
        )
        self.built_for = built_for
        self.running = running


def binary_path() -> Path:
    """Path of the server executable: $PEREGRINE_BINARY, else the one in the package."""
    explicit = os.environ.get(BINARY_ENV)
    path = Path(explicit) if explicit else _BIN_DIR / "peregrine"
    if not path.is_file():
        hint = (
            f"(from ${BINARY_ENV})"
            if explicit
            else "was not installed; reinstall the package (pip install --force-reinstall --no-cache-dir "
            "peregrine) and check its build output"
        )
        raise BinaryNotFoundError(path, f"does not exist {hint}")
    if not os.access(path, os.X_OK):
        raise BinaryNotFoundError(path, "is not executable (was the wheel unpacked without file modes?)")
    return path


def _check_build() -> None:
    """Fail on a Python version mismatch, warn if the base interpreter moved."""
    try:
        info = json.loads((_BIN_DIR / "build.json").read_text())
    except (OSError, ValueError):
        return
    running = f"{sys.version_info[0]}.{sys.version_info[1]}"
    built_for = str(info.get("python_version", running))
    if built_for != running:
        raise WrongInterpreterError(built_for, running)
    base_prefix = info.get("base_prefix")
    if isinstance(base_prefix, str) and os.path.realpath(base_prefix) != os.path.realpath(sys.base_prefix):
        sys.stderr.write(
            f"peregrine: warning: built against the Python in {base_prefix}, running under the one in "
            f"{sys.base_prefix}; if the server fails to start, reinstall it with this interpreter\n"
        )


def server_environment() -> dict[str, str]:
    """This process's environment plus the interpreter the server should embed."""
    environment = dict(os.environ)
    if sys.executable:
        environment[PYTHON_ENV] = sys.executable
    return environment


def checked_binary_path() -> Path:
    """`binary_path()`, checked against this interpreter unless $PEREGRINE_BINARY chose it."""
    path = binary_path()
    if BINARY_ENV not in os.environ:
        _check_build()
    return path


def exec_binary(argv: Sequence[str]) -> NoReturn:
    """Replace this process with the server, passing `argv` (without a program name)."""
    path = checked_binary_path()
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(path, ["peregrine", *argv], server_environment())  # noqa: S606 (becoming the server is the point)
    except OSError as error:
        raise BinaryNotFoundError(path, f"could not be started: {error.strerror or error}") from error
