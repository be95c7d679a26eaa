"""Build the `peregrine` executables (supervisor and worker) with SwiftPM for the interpreter doing the install.

setup.py calls `build_binary`. The scratch directory lives in the source tree
(.build/pip-<interpreter>) and survives between installs, so a second
`pip install .` with the same interpreter only recompiles what changed; each
interpreter gets its own, because its flags would otherwise invalidate the
other's build.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import pyflags

if TYPE_CHECKING:
    from collections.abc import Mapping


class BuildFailedError(Exception):
    """`swift build` exited non-zero; the message is a one-line summary."""


def scratch_dir(root: Path, environ: Mapping[str, str]) -> Path:
    """PEREGRINE_BUILD_DIR, or .build/pip-cpXY-<hash of the base interpreter>."""
    explicit = environ.get("PEREGRINE_BUILD_DIR")
    if explicit:
        return Path(explicit).resolve()
    tag = sysconfig.get_config_var("SOABI") or f"py{sys.version_info[0]}{sys.version_info[1]}"
    digest = hashlib.sha256(f"{sys.base_prefix}\0{pyflags.base_executable()}".encode()).hexdigest()
    return root / ".build" / f"pip-{tag}-{digest[:10]}"


def jobs(environ: Mapping[str, str]) -> str:
    """PEREGRINE_BUILD_JOBS, default one job per CPU."""
    return environ.get("PEREGRINE_BUILD_JOBS") or str(os.cpu_count() or 1)


def _tail(log: Path, lines: int = 40) -> str:
    text = log.read_text(errors="replace").splitlines()
    errors = [line for line in text if ": error:" in line or line.startswith("error:")]
    shown = [*errors[:15], "...", *text[-lines:]] if errors else text[-lines:]
    return "\n".join(shown)


def static_runtime(swift: str, environ: Mapping[str, str]) -> bool:
    """Link the Swift runtime statically: the toolchain ships it (lib/swift_static), and PEREGRINE_STATIC_STDLIB≠0."""
    if environ.get("PEREGRINE_STATIC_STDLIB", "1") == "0":
        return False
    found = shutil.which(swift) or swift
    toolchain = Path(os.path.realpath(found)).parent.parent
    return (toolchain / "lib" / "swift_static" / "linux" / "libswiftCore.a").is_file()


def static_stdlib_flags(swift: str, environ: Mapping[str, str]) -> list[str]:
    """`-static-stdlib` when `static_runtime`.

    Linked into the executable, the Swift runtime costs each worker about 2.5 MiB less resident memory than
    the shared libswiftCore and its companions (which are relocated and paged in whole).
    """
    return ["-Xswiftc", "-static-stdlib"] if static_runtime(swift, environ) else []


def build_environment(swift: str, environ: Mapping[str, str]) -> dict[str, str]:
    """The environment of `swift build`: the libpython link flags, and whether the supervisor links fully static.

    Package.swift reads both (see there). The supervisor (`peregrine`) is linked with `-static-executable`
    under the same condition as `-static-stdlib`: it then maps nothing but itself.
    """
    env = {**environ, **pyflags.link_environment()}
    env["PEREGRINE_STATIC_SUPERVISOR"] = "1" if static_runtime(swift, environ) else "0"
    return env


#: The executables a build produces: the supervisor, and the worker it runs (beside it, same directory).
PRODUCTS = ("peregrine-worker", "peregrine")


def build_binary(swift: str, root: Path, environ: Mapping[str, str]) -> list[Path]:
    """Run `swift build -c release` for each product; return the built executables (in PRODUCTS order)."""
    scratch = scratch_dir(root, environ)
    scratch.mkdir(parents=True, exist_ok=True)
    flags = pyflags.swiftpm_flags(default_python=pyflags.base_executable()) + static_stdlib_flags(swift, environ)
    env = build_environment(swift, environ)
    common = [swift, "build", "-c", "release", "--package-path", str(root), "--scratch-path", str(scratch)]
    log = scratch / "pip-build.log"
    print(
        f"peregrine: swift build -c release for {pyflags.base_executable()} in {scratch} (log: {log})",
        flush=True,
    )
    started = time.monotonic()
    # The toolchain leaves a TemporaryDirectory.* in $TMPDIR on every run: give it one of its own.
    with log.open("w") as sink, tempfile.TemporaryDirectory(dir=scratch, prefix="swift-tmp.") as tmp:
        env["TMPDIR"] = tmp
        for product in PRODUCTS:
            command = [*common, "--product", product, "-j", jobs(environ), *flags]
            sink.write(" ".join(command) + "\n")
            sink.flush()
            status = subprocess.run(command, stdout=sink, stderr=subprocess.STDOUT, env=env, check=False).returncode
            if status != 0:
                break
    elapsed = time.monotonic() - started
    if status != 0:
        print(_tail(log), file=sys.stderr, flush=True)
        raise BuildFailedError(
            f"swift build failed (exit {status}) after {elapsed:.0f}s; the errors are above, the full log is {log}"
        )
    print(f"peregrine: swift build finished in {elapsed:.0f}s", flush=True)
    shown = subprocess.run([*common, "--show-bin-path", *flags], capture_output=True, text=True, env=env, check=False)
    output = shown.stdout.strip().splitlines()
    bin_dir = Path(output[-1] if output else scratch / "release")
    binaries = [bin_dir / product for product in PRODUCTS]
    for binary in binaries:
        if not binary.is_file():
            raise BuildFailedError(f"swift build succeeded but {binary} does not exist")
    return binaries
