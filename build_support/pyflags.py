"""Compute the SwiftPM flags that build peregrine against one interpreter.

The host binary embeds CPython, so it must be compiled against the headers of
the interpreter that will run the application and linked against that
interpreter's libpython: shared when the interpreter has one, static otherwise
(then the executable exports its symbols so C extension modules resolve them).

Used by setup.py at `pip install` time and by scripts/swiftpm for development.
Run directly, it prints one -Xcc flag per line; with --link, the libpython
link flags for PEREGRINE_PYTHON_LINK.
"""

from __future__ import annotations

import os
import sys
import sysconfig


class MissingPrerequisiteError(Exception):
    """A build input is absent; the message names it and how to get it."""


def base_executable() -> str:
    """The installed interpreter behind this one.

    A pip isolated build, `python -m build` and uv run the build inside a
    throwaway environment; `sys.executable` then names a temporary venv that is
    gone when the binary runs. The base interpreter is the one whose headers
    and libpython the flags below name, so it is the honest default to bake in.
    At run time the launcher passes the real interpreter anyway
    (PEREGRINE_PYTHON_EXECUTABLE), see python/peregrine/_binary.py. setup.py
    bakes this one; a development build (scripts/swiftpm) bakes sys.executable
    so that `swift run` inside a venv sees that venv.
    """
    # Resolved, so python3 and python3.11 of one installation give the same
    # flags (and share one incremental build directory, see swiftbuild.py).
    return os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)


def _var(name: str) -> str:
    value = sysconfig.get_config_var(name)
    return "" if value is None else str(value)


def include_dir() -> str:
    """Directory holding Python.h for this interpreter."""
    path = _var("INCLUDEPY") or sysconfig.get_paths()["include"]
    if not os.path.isfile(os.path.join(path, "Python.h")):
        raise MissingPrerequisiteError(
            f"Python headers not found: {path}/Python.h is missing. "
            f"Install the development package for {base_executable()} "
            "(Debian: apt-get install python3-dev)."
        )
    return path


def _shared_library() -> str | None:
    libdir = _var("LIBDIR")
    names = [_var("LDLIBRARY"), f"libpython{_var('LDVERSION')}.so"]
    multiarch = _var("MULTIARCH")
    dirs = [libdir] + ([os.path.join(libdir, multiarch)] if multiarch else [])
    for directory in dirs:
        for name in names:
            if name.endswith(".so") and os.path.isfile(os.path.join(directory, name)):
                return directory
    return None


def _static_library() -> str | None:
    name = _var("LIBRARY") or f"libpython{_var('LDVERSION')}.a"
    # Debian's plain archive is not position-independent and cannot go into
    # a PIE executable; it ships a -pic variant beside it.
    names = [name.removesuffix(".a") + "-pic.a", name]
    for directory in (_var("LIBPL"), _var("LIBDIR")):
        for candidate in (os.path.join(directory, n) for n in names):
            if directory and os.path.isfile(candidate):
                return candidate
    return None


def link_flags() -> list[str]:
    """Linker flags for libpython: shared with an rpath, else static and exported."""
    flags: list[str] = []
    shared_dir = _shared_library()
    if shared_dir is not None:
        flags += ["-L" + shared_dir, "-lpython" + _var("LDVERSION")]
        # A libpython outside the loader's default path (pyenv, a custom
        # prefix) must be found at run time without LD_LIBRARY_PATH.
        flags += ["-rpath", shared_dir]
    else:
        static = _static_library()
        if static is None:
            raise MissingPrerequisiteError(
                f"libpython for {base_executable()} not found (neither a shared "
                "libpython nor libpython.a). Install the interpreter's development "
                "files, or rebuild it with --enable-shared."
            )
        # Extension modules are loaded with dlopen and expect the interpreter's
        # symbols in the executable: export them.
        flags += ["--whole-archive", static, "--no-whole-archive", "-export-dynamic"]
        # MODLIBS: libraries of the extension modules built into the archive
        # (zlib, expat on Debian's); python3-config leaves them out because
        # it assumes the shared library, which carries its own dependencies.
        for part in " ".join(_var(name) for name in ("LIBS", "SYSLIBS", "MODLIBS")).split():
            if part.startswith(("-l", "-L")) and part not in flags:
                flags.append(part)
    return flags


def swiftpm_flags(default_python: str | None = None) -> list[str]:
    """-Xcc flags for SwiftPM (the link flags travel in PEREGRINE_PYTHON_LINK, see `link_environment`).

    `default_python` is the interpreter baked in as the binary's default
    program name (PEREGRINE_BUILD_PYTHON); sys.executable if not given.
    """
    baked = default_python or sys.executable
    return ["-Xcc", "-I" + include_dir(), "-Xcc", f'-DPEREGRINE_BUILD_PYTHON="{baked}"']


#: Package.swift reads the libpython link flags from this variable and gives them to the worker executable only.
LINK_VARIABLE = "PEREGRINE_PYTHON_LINK"


def link_environment() -> dict[str, str]:
    """The environment entry carrying the link flags, separated by 0x1F (a flag may hold a space)."""
    return {LINK_VARIABLE: "\x1f".join(link_flags())}


def main(arguments: list[str]) -> int:
    """Print one -Xcc flag per line, or with --link the value of PEREGRINE_PYTHON_LINK; or the missing prerequisite."""
    try:
        if arguments == ["--link"]:
            print(link_environment()[LINK_VARIABLE])
        else:
            for flag in swiftpm_flags():
                print(flag)
    except MissingPrerequisiteError as error:
        print(f"peregrine build: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
