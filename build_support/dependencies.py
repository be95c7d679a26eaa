"""The runtime dependencies `pip install .` declares: uvloop, where it installs from a wheel.

ASGI applications run on uvloop when it is importable in the application's
environment (plain asyncio otherwise), and uvloop is the faster loop, so the
install brings it: a newcomer's default is the configuration the benchmarks
measure (issue 20, point 5).

Why setup.py computes the list rather than pyproject.toml stating it: the wheel
is built for the installing interpreter (it links that libpython), so the
build knows the interpreter, including what PEP 508 markers cannot tell: a
free-threaded CPython (`Py_GIL_DISABLED`) from a GIL build of the same version.
uvloop publishes no wheel for free-threaded 3.13 (0.23.0 has none for `cp313t`);
pip would build its sdist there, which needs a C compiler, `make` and minutes,
and its failure would fail peregrine's install. The rule never requires a
build of uvloop:

- free-threaded builds: no uvloop (`pip install uvloop` yourself: it builds
  from the sdist on 3.13t and keeps the GIL off, INSTALLATION.md);
- otherwise uvloop, under a marker for what its wheels cover and the server
  supports: CPython on Linux, and CPython versions uvloop publishes wheels for
  (3.11 to 3.14 in 0.23.0; raise the bound once a newer CPython has them);
- `PEREGRINE_NO_UVLOOP=1` in the environment of `pip install`: no uvloop (a
  user who wants plain asyncio). It is the run-time variable of `--no-uvloop`
  too (CONFIG.md, "Configuration file and environment"), read the same way:
  one setting in a shell means asyncio at both times.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

#: The oldest uvloop the ASGI tests run on (tests/requirements-asgi.txt).
UVLOOP_REQUIREMENT = "uvloop>=0.19"
#: PEP 508 §"Environment Markers": where uvloop has wheels. Checked for 0.23.0 with
#: `pip download --only-binary :all: --python-version 3.X uvloop`: cp311 to cp314, not cp315 yet.
UVLOOP_MARKER = "platform_python_implementation == 'CPython' and sys_platform == 'linux' and python_version < '3.15'"
#: The environment variable of `--no-uvloop`, which the install reads too.
OPT_OUT_VARIABLE = "PEREGRINE_NO_UVLOOP"
#: A flag's values in the environment, as the server reads them (Sources/Options/ConfigSources+Entries.swift):
#: any case; empty counts as unset.
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"", "0", "false", "no", "off"})


class OptOutValueError(ValueError):
    """PEREGRINE_NO_UVLOOP holds something the server would refuse as well."""


def opted_out(environ: Mapping[str, str]) -> bool:
    """Whether the person installing asked for no uvloop; refuses a value the server would refuse."""
    value = environ.get(OPT_OUT_VARIABLE, "")
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise OptOutValueError(
        f"environment variable {OPT_OUT_VARIABLE} must be 1, true, yes, on, 0, false, no or off, got '{value}'"
    )


def install_requires(*, free_threaded: bool, environ: Mapping[str, str]) -> list[str]:
    """The requirements of a wheel built by an interpreter that is `free_threaded` (or not)."""
    if free_threaded or opted_out(environ):
        return []
    return [f"{UVLOOP_REQUIREMENT}; {UVLOOP_MARKER}"]
