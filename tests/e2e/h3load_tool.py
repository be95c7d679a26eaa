"""The compiled HTTP/3 load generator (benchmarks/h3load) as a pytest fixture, for the tests that drive it.

Built with benchmarks/h3load/build.sh into a module's scratch directory. A test module lists this module in its
`pytest_plugins`; a test that asks for `h3load` (or `h3load_sources`) skips when the compiler or the libraries
(Debian libngtcp2-dev, libngtcp2-crypto-gnutls-dev, libnghttp3-dev, libgnutls28-dev) are missing.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "benchmarks" / "h3load" / "build.sh"
LIBRARIES = ["libngtcp2", "libngtcp2_crypto_gnutls", "libnghttp3", "gnutls"]


def toolchain_missing() -> str | None:
    """Why h3load cannot be built here, or None."""
    if shutil.which("cc") is None or shutil.which("pkg-config") is None:
        return "no C compiler or pkg-config"
    found = subprocess.run(["pkg-config", "--exists", *LIBRARIES], check=False)
    return None if found.returncode == 0 else f"missing development libraries ({' '.join(LIBRARIES)})"


@pytest.fixture(scope="module")
def h3load_sources() -> tuple[Path, list[str]]:
    """benchmarks/h3load and the compiler flags of its libraries (pkg-config --cflags)."""
    missing = toolchain_missing()
    if missing is not None:
        pytest.skip(missing)
    flags = subprocess.run(["pkg-config", "--cflags", *LIBRARIES], capture_output=True, text=True, check=True)
    return BUILD.parent, flags.stdout.split()


@pytest.fixture(scope="module")
def h3load(tmp_path_factory: pytest.TempPathFactory, h3load_sources: tuple[Path, list[str]]) -> Path:
    """The h3load executable, built for this module."""
    directory = tmp_path_factory.mktemp("h3load")
    built = subprocess.run([str(BUILD), str(directory)], capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stderr
    return Path(built.stdout.strip())
