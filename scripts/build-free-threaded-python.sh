#!/usr/bin/env bash
# Build a free-threaded CPython 3.13 (PEP 703, `python3.13t`) to build and run
# peregrine against, on a Debian (or Ubuntu) machine that does not package one.
#
#   scripts/build-free-threaded-python.sh [--venv DIR] [--debian-fixes] [PREFIX]
#
# PREFIX (default $PEREGRINE_FT_PREFIX, else ~/.cache/peregrine/python3.13t)
# receives the interpreter: PREFIX/bin/python3.13t, its headers and a shared
# libpython3.13t.so found through an rpath to PREFIX/lib (no LD_LIBRARY_PATH).
# With --venv DIR, a venv of that interpreter is made in DIR (kept if it
# already is one of it); then `DIR/bin/pip install .` builds peregrine against
# it. Prints the interpreter's path (and the venv's) on its last lines.
#
# Idempotent: if PREFIX already holds a python3.13t that runs with the GIL
# disabled and imports ssl, sqlite3, ctypes and zlib, nothing is built.
# Otherwise:
#   1. build dependencies from the machine's own Debian packages (apt-get
#      install as root, or via sudo; the list is below);
#   2. the source of Debian trixie's `python3.13` package, fetched with
#      `apt-get source --download-only` through a deb-src line that lives in a
#      scratch directory of its own (its own sources.list, lists and cache):
#      the machine's apt configuration, package lists and installed packages
#      are untouched, and no trixie binary package is ever installed, so the
#      machine's libc and OpenSSL stay what they are. apt checks the files
#      against the signed trixie Release (debian-archive-keyring). What is
#      built is the upstream tarball inside it (python3.13_*.orig.tar.xz, at
#      3.13.5-2+deb13u5 upstream 3.13.5). By default no Debian patch is
#      applied. With --debian-fixes, the `*.patch` entries of Debian's
#      debian/patches/series are applied in order: the security and crash
#      fixes Debian backported (at 3.13.5-2+deb13u5: 31 CVE fixes, an SNI
#      callback crash and a reference leak in _ssl, a dict use-after-free,
#      GC traversal of managed dicts). Its `*.diff` entries are Debian's own
#      layout (multiarch, install schemes, ensurepip off) and are never
#      applied. A patch that does not apply stops the build;
#   3. ./configure --disable-gil --enable-shared --disable-test-modules
#      --prefix=PREFIX with LDFLAGS=-Wl,-rpath,PREFIX/lib;
#      `make -j$PEREGRINE_FT_JOBS` (default 2); `make altinstall` (python3.13t,
#      python3.13, pip3.13; no unversioned python3);
#   4. a check: python3.13t imports ssl, sqlite3, ctypes and zlib and
#      sys._is_gil_enabled() is False. PREFIX/peregrine-source.txt records the
#      Debian source version and whether --debian-fixes was applied (asking
#      for --debian-fixes over a prefix built without them rebuilds it). The
#      scratch directory is removed.
#
# About 4 minutes on 2 idle cores (fetch 10 s, make 170 s); the prefix is
# about 190 MB (73 MB of it the static libpython3.13t.a that make installs too).
# Environment: PEREGRINE_FT_PREFIX (the default PREFIX), PEREGRINE_FT_JOBS
# (make jobs, default 2), PEREGRINE_FT_MIRROR (default
# http://deb.debian.org/debian), PEREGRINE_FT_SUITE (default trixie),
# PEREGRINE_FT_WORK (scratch directory, default PREFIX.work; kept on failure).
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

venv=
prefix=
debian_fixes=
while [ $# -gt 0 ]; do
    case $1 in
        --venv) [ $# -ge 2 ] || { echo "--venv needs a directory" >&2; exit 2; }; venv=$2; shift 2 ;;
        --venv=*) venv=${1#--venv=}; shift ;;
        --debian-fixes) debian_fixes=1; shift ;;
        -h|--help) usage; exit 0 ;;
        -*) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
        *) [ -z "$prefix" ] || { echo "one PREFIX only (see --help)" >&2; exit 2; }; prefix=$1; shift ;;
    esac
done
prefix=${prefix:-${PEREGRINE_FT_PREFIX:-$HOME/.cache/peregrine/python3.13t}}
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)
jobs=${PEREGRINE_FT_JOBS:-2}
mirror=${PEREGRINE_FT_MIRROR:-http://deb.debian.org/debian}
suite=${PEREGRINE_FT_SUITE:-trixie}
work=${PEREGRINE_FT_WORK:-$prefix.work}
python="$prefix/bin/python3.13t"

step() { printf '==> %s\n' "$*" >&2; }

# What "a working free-threaded interpreter" means here: the modules a server
# and pip need, and the GIL off (it is re-enabled at run time by an extension
# module that does not declare Py_MOD_GIL_NOT_USED, so this imports only the
# standard library's, which all do).
works() {
    [ -x "$python" ] && "$python" -c '
import sys, ssl, sqlite3, ctypes, zlib
assert not sys._is_gil_enabled(), "the GIL is enabled"' 2>/dev/null
}

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"
    elif command -v sudo >/dev/null; then sudo "$@"
    else echo "need root (or sudo) for: $*" >&2; return 1
    fi
}

build() {
    step "build dependencies (the machine's own packages)"
    # ssl, zlib, ctypes (libffi), sqlite3, bz2, lzma, readline, curses, uuid
    # and dbm (decimal uses the bundled libmpdec; tkinter is built only if
    # tk-dev happens to be there). debian-archive-keyring verifies trixie's
    # Release; dpkg-dev is what apt-get source expects to find.
    local needed=(build-essential pkg-config xz-utils dpkg-dev debian-archive-keyring
        libssl-dev zlib1g-dev libffi-dev libsqlite3-dev libbz2-dev liblzma-dev
        libreadline-dev libncurses-dev uuid-dev libgdbm-dev libgdbm-compat-dev)
    local missing=() p
    for p in "${needed[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        step "apt-get install ${missing[*]}"
        as_root apt-get update -qq
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi

    step "source of $suite's python3.13 (apt state in $work/apt, not the machine's)"
    rm -rf "$work/apt" "$work/src"
    mkdir -p "$work/apt/lists/partial" "$work/apt/cache/archives/partial" "$work/apt/parts" "$work/src"
    # Debian's keyring (also packaged by Ubuntu) holds the trixie archive keys.
    echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main" \
        >"$work/apt/sources.list"
    local apt_options=(
        -o "Dir::Etc::sourcelist=$work/apt/sources.list"
        -o "Dir::Etc::sourceparts=$work/apt/parts"
        -o "Dir::State::Lists=$work/apt/lists"
        -o "Dir::Cache=$work/apt/cache"
        -o "Debug::NoLocking=1"
        -o "APT::Sandbox::User=$(id -un)"
    )
    apt-get "${apt_options[@]}" -qq update
    (cd "$work/src" && apt-get "${apt_options[@]}" -qq source --download-only python3.13)
    local tarball dsc
    tarball=$(ls "$work"/src/python3.13_*.orig.tar.xz)
    dsc=$(ls "$work"/src/python3.13_*.dsc)
    step "upstream source $(basename "$tarball")"
    tar -xf "$tarball" -C "$work/src"
    local source
    source=$(find "$work/src" -mindepth 1 -maxdepth 1 -type d -name 'Python-3.13*' | head -n 1)
    [ -n "$source" ] || { echo "no Python-3.13* directory in $tarball" >&2; return 1; }
    if [ -n "$debian_fixes" ]; then
        tar -xf "$(ls "$work"/src/python3.13_*.debian.tar.xz)" -C "$work/src"
        local patch count=0
        : >"$work/patch.log"
        for patch in $(grep -v '^#' "$work/src/debian/patches/series" | grep '\.patch$'); do
            patch -d "$source" -p1 -s -N <"$work/src/debian/patches/$patch" >>"$work/patch.log" 2>&1 ||
                { cat "$work/patch.log" >&2; echo "Debian's $patch does not apply" >&2; return 1; }
            count=$((count + 1))
        done
        step "applied Debian's $count fixes (*.patch of debian/patches/series)"
    fi

    # --disable-test-modules: CPython's own test suite and test extensions
    # are 140 MB of the prefix and part of the build time; nothing here runs them.
    step "configure --disable-gil --enable-shared --prefix=$prefix"
    (cd "$source" && ./configure -q --prefix="$prefix" --disable-gil --enable-shared \
        --disable-test-modules --with-ensurepip=install LDFLAGS="-Wl,-rpath,$prefix/lib") >"$work/configure.log" 2>&1 ||
        { tail -n 30 "$work/configure.log" >&2; echo "configure failed, log: $work/configure.log" >&2; return 1; }

    step "make -j$jobs (log: $work/make.log)"
    local start=$SECONDS
    (cd "$source" && make -j"$jobs") >"$work/make.log" 2>&1 ||
        { tail -n 30 "$work/make.log" >&2; echo "make failed, log: $work/make.log" >&2; return 1; }
    # Modules the build could not make (a missing -dev package) are listed here.
    grep -A3 -E "^The necessary bits|^Following modules built successfully but were removed|^Failed to build these modules" \
        "$work/make.log" >&2 || true
    step "built in $((SECONDS - start)) s; make altinstall"
    (cd "$source" && make altinstall) >"$work/install.log" 2>&1 ||
        { tail -n 30 "$work/install.log" >&2; echo "make altinstall failed, log: $work/install.log" >&2; return 1; }
    {
        echo "source: $(basename "$dsc" .dsc) ($mirror $suite)"
        if [ -n "$debian_fixes" ]; then echo "debian-fixes: yes"; else echo "debian-fixes: no"; fi
    } >"$record"
}

# The record of what PREFIX was built from (see step 4 above).
record="$prefix/peregrine-source.txt"
fixes_missing() { [ -n "$debian_fixes" ] && ! grep -qx 'debian-fixes: yes' "$record" 2>/dev/null; }

if works && ! fixes_missing; then
    step "$python already works, GIL disabled: nothing to build"
else
    build
    works || {
        "$python" -c 'import sys, ssl, sqlite3, ctypes, zlib; print("GIL enabled:", sys._is_gil_enabled())' >&2 || true
        echo "the built $python does not pass the check (above); sources and logs: $work" >&2
        exit 1
    }
    rm -rf "$work/apt" "$work/src" "$work"/*.log
    rmdir "$work" 2>/dev/null || true
    step "$("$python" -VV | head -n 1) in $prefix ($(du -sh "$prefix" | cut -f1))"
fi

if [ -n "$venv" ]; then
    if [ -x "$venv/bin/python" ] && [ "$("$venv/bin/python" -c 'import sys; print(sys._base_executable)' 2>/dev/null)" = "$python" ]; then
        step "venv $venv already uses $python"
    else
        step "venv $venv"
        "$python" -m venv "$venv"
    fi
    echo "$python"
    echo "$(cd "$venv" && pwd)/bin/python"
else
    echo "$python"
fi
