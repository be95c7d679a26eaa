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
  user who wants plain asyncio; `--no-uvloop` refuses it at run time instead).
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
#: Set to anything but "" or "0" while installing to leave uvloop out.
OPT_OUT_VARIABLE = "PEREGRINE_NO_UVLOOP"


def opted_out(environ: Mapping[str, str]) -> bool:
    """Whether the person installing asked for no uvloop."""
    return environ.get(OPT_OUT_VARIABLE, "") not in ("", "0")


def install_requires(*, free_threaded: bool, environ: Mapping[str, str]) -> list[str]:
    """The requirements of a wheel built by an interpreter that is `free_threaded` (or not)."""
    if free_threaded or opted_out(environ):
        return []
    return [f"{UVLOOP_REQUIREMENT}; {UVLOOP_MARKER}"]
