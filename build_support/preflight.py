"""Check what `pip install .` needs before starting a long Swift build.

Each check returns what it found or raises pyflags.MissingPrerequisiteError with a
one-line message naming the missing piece and how to get it. The checks take
their search locations as arguments so tests can point them at empty places;
`checks_from_environment` is what setup.py calls.

PEREGRINE_SWIFT names the `swift` driver explicitly. PEREGRINE_PREFLIGHT_HIDE
(comma-separated: swift, python-headers, openssl, zlib) makes a check search nowhere,
so the install test can see each message through a real pip run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import TYPE_CHECKING

from pyflags import MissingPrerequisiteError, base_executable, include_dir

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence

# Where toolchains unpacked from swift.org tarballs or the swiftlang images
# usually live when they are not on PATH.
SWIFT_FALLBACKS = (
    "/opt/swift/usr/bin/swift",
    "/usr/share/swift/usr/bin/swift",
    "/usr/local/swift/usr/bin/swift",
    os.path.expanduser("~/.local/share/swiftly/bin/swift"),
)

SWIFT_HINT = (
    "install a Swift 6 toolchain (https://www.swift.org/install/linux/) and put "
    "its usr/bin on PATH, or set PEREGRINE_SWIFT=/path/to/swift"
)

OPENSSL_HINT = "Debian/Ubuntu: apt-get install libssl-dev; Fedora: dnf install openssl-devel"
ZLIB_HINT = "Debian/Ubuntu: apt-get install zlib1g-dev; Fedora: dnf install zlib-devel"

SYSTEM_INCLUDE_DIRS = ("/usr/local/include", "/usr/include")


def find_swift(explicit: str | None, search_path: str | None, fallbacks: Iterable[str]) -> str:
    """The `swift` driver: `explicit` if given, else on `search_path`, else a fallback."""
    if explicit:
        if os.path.isfile(explicit) and os.access(explicit, os.X_OK):
            return explicit
        raise MissingPrerequisiteError(f"PEREGRINE_SWIFT={explicit} is not an executable swift driver; {SWIFT_HINT}.")
    found = shutil.which("swift", path=search_path) if search_path else None
    if found:
        return found
    for candidate in fallbacks:
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    raise MissingPrerequisiteError(f"the Swift toolchain was not found (no swift on PATH); {SWIFT_HINT}.")


def swift_version(swift: str) -> str:
    """First line of `swift --version`; fails if the driver does not run or is older than 6."""
    try:
        result = subprocess.run([swift, "--version"], capture_output=True, text=True, timeout=120, check=False)
    except OSError as error:
        raise MissingPrerequisiteError(f"{swift} does not run ({error}); {SWIFT_HINT}.") from error
    text = (result.stdout + result.stderr).strip()
    first = next((line for line in text.splitlines() if "Swift version" in line), "")
    if result.returncode != 0 or not first:
        raise MissingPrerequisiteError(f"{swift} --version failed (exit {result.returncode}); {SWIFT_HINT}.")
    major = first.split("Swift version", 1)[1].strip().split(".", 1)[0]
    if not major.isdigit() or int(major) < 6:
        raise MissingPrerequisiteError(f"peregrine needs Swift 6 or newer, {swift} is: {first}; {SWIFT_HINT}.")
    return first


def find_python_headers(candidates: Sequence[str] | None = None) -> str:
    """Directory holding Python.h for the interpreter doing the build."""
    if candidates is None:
        return include_dir()
    for directory in candidates:
        if os.path.isfile(os.path.join(directory, "Python.h")):
            return directory
    raise MissingPrerequisiteError(
        f"Python headers (Python.h) for {base_executable()} not found; install the "
        "interpreter's development files (Debian: apt-get install python3-dev; "
        "pyenv interpreters ship them)."
    )


def openssl_include_dirs(environ: Mapping[str, str]) -> list[str]:
    """Where a C compiler looks for <openssl/ssl.h> here, most specific first."""
    dirs: list[str] = []
    for variable in ("CPATH", "C_INCLUDE_PATH"):
        dirs += [part for part in environ.get(variable, "").split(os.pathsep) if part]
    pkg_config = shutil.which("pkg-config", path=environ.get("PATH"))
    if pkg_config:
        result = subprocess.run([pkg_config, "--cflags-only-I", "openssl"], capture_output=True, text=True, check=False)
        if result.returncode == 0:
            dirs += [flag[2:] for flag in result.stdout.split() if flag.startswith("-I")]
    return dirs + list(SYSTEM_INCLUDE_DIRS)


def find_openssl_headers(candidates: Iterable[str]) -> str:
    """Directory holding openssl/ssl.h (TLS and QUIC link OpenSSL)."""
    for directory in candidates:
        if os.path.isfile(os.path.join(directory, "openssl", "ssl.h")):
            return directory
    raise MissingPrerequisiteError(f"OpenSSL headers (openssl/ssl.h) not found; {OPENSSL_HINT}.")


def find_zlib_header(candidates: Iterable[str]) -> str:
    """Directory holding zlib.h (WebSocket permessage-deflate links zlib)."""
    for directory in candidates:
        if os.path.isfile(os.path.join(directory, "zlib.h")):
            return directory
    raise MissingPrerequisiteError(f"zlib headers (zlib.h) not found; {ZLIB_HINT}.")


def checks_from_environment(environ: Mapping[str, str]) -> str:
    """Run every check for a real install; return the swift driver to use."""
    hidden = {part.strip() for part in environ.get("PEREGRINE_PREFLIGHT_HIDE", "").split(",")}
    if "swift" in hidden:
        swift = find_swift(None, None, ())
    else:
        swift = find_swift(environ.get("PEREGRINE_SWIFT"), environ.get("PATH", os.defpath), SWIFT_FALLBACKS)
    swift_version(swift)
    find_python_headers([] if "python-headers" in hidden else None)
    find_openssl_headers([] if "openssl" in hidden else openssl_include_dirs(environ))
    find_zlib_header([] if "zlib" in hidden else openssl_include_dirs(environ))
    return swift


def main() -> int:
    """Run the checks against this environment and say what was found."""
    try:
        swift = checks_from_environment(os.environ)
    except MissingPrerequisiteError as error:
        print(f"peregrine build: {error}", file=sys.stderr)
        return 1
    print(f"ok: {swift_version(swift)} ({swift}); Python.h in {include_dir()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
