"""Build hook: compile the Swift host for the installing interpreter and ship it.

Metadata lives in pyproject.toml. This file only adds what declarative
setuptools cannot say:

- `build_py` also runs `swift build -c release` for the two executables, the
  supervisor `peregrine` and the `peregrine-worker` it runs, with the
  include/link flags of the interpreter doing the install (build_support/),
  and copies them to peregrine/_bin/, beside a small JSON record of which
  interpreter they were built for;
- the distribution claims to have extension modules, so the wheel is tagged
  for this CPython ABI and platform (cp311-cp311-linux_x86_64): the binary
  links this interpreter's libpython;
- the runtime dependencies are this interpreter's (build_support/dependencies.py):
  uvloop, except on a free-threaded build, which PEP 508 markers cannot tell
  apart and for which uvloop publishes no wheel, or with PEREGRINE_NO_UVLOOP=1.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import sysconfig
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "build_support"))

import dependencies  # noqa: E402  (found through the sys.path entry above)
import preflight  # noqa: E402
import pyflags  # noqa: E402
import swiftbuild  # noqa: E402

#: The supervisor (what the launcher runs) and the worker executable it starts from its own directory.
BINARIES = ("_bin/peregrine-worker", "_bin/peregrine")
BUILD_INFO = "_bin/build.json"


class BinaryDistribution(Distribution):
    """Not pure Python: the package carries an executable linked to libpython."""

    def has_ext_modules(self) -> bool:
        """Say yes, so the wheel gets this interpreter's ABI and platform tags."""
        return True


class BuildPyWithSwift(build_py):
    """build_py, then build the Swift executable and put it in the package."""

    def run(self) -> None:
        """Check prerequisites, copy the Python files, then build and add the binary."""
        try:
            swift = preflight.checks_from_environment(os.environ)
            super().run()
            built = swiftbuild.build_binary(swift, ROOT, os.environ)
        except (pyflags.MissingPrerequisiteError, swiftbuild.BuildFailedError) as error:
            raise SystemExit(f"peregrine build: {error}") from None
        # An editable install imports the package from the source tree.
        package_dir = ROOT / "python" / "peregrine" if self.editable_mode else Path(self.build_lib) / "peregrine"
        for source, name in zip(built, BINARIES, strict=True):
            target = package_dir / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target)
            target.chmod(0o755)
        info = {
            "python_version": f"{sys.version_info[0]}.{sys.version_info[1]}",
            "base_prefix": sys.base_prefix,
            "base_executable": pyflags.base_executable(),
            "soabi": sysconfig.get_config_var("SOABI"),
        }
        (package_dir / BUILD_INFO).write_text(json.dumps(info, indent=2) + "\n")

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        """Files this command produces, the binary and its build record included."""
        if self.editable_mode:
            return list(super().get_outputs(include_bytecode))
        package_dir = Path(self.build_lib) / "peregrine"
        extra = [*(str(package_dir / name) for name in BINARIES), str(package_dir / BUILD_INFO)]
        return [*super().get_outputs(include_bytecode), *extra]


def install_requires() -> list[str]:
    """This interpreter's runtime dependencies, or stop with one line if PEREGRINE_NO_UVLOOP is malformed."""
    try:
        free_threaded = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
        return dependencies.install_requires(free_threaded=free_threaded, environ=os.environ)
    except dependencies.OptOutValueError as error:
        raise SystemExit(f"peregrine build: {error}") from None


setup(distclass=BinaryDistribution, cmdclass={"build_py": BuildPyWithSwift}, install_requires=install_requires())
