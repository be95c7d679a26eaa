#!/usr/bin/env bash
# Check TLS for QUIC against OpenSSL 3.5 on a machine whose own OpenSSL is
# older (Debian 12: 3.0), without touching the machine's OpenSSL:
#
#   scripts/check-openssl35.sh [--e2e] [--rebuild]
#
#   1. OpenSSL 3.5 in PREFIX (default $PEREGRINE_OSSL35_PREFIX, else
#      ~/.cache/peregrine/openssl-3.5), built when PREFIX holds no working
#      3.5: the source of Debian trixie's `openssl` package, fetched with
#      `apt-get source --download-only` through deb-src lines that live in a
#      scratch directory of their own (its own sources.list, lists and
#      cache; the machine's apt configuration and packages are untouched and
#      no trixie binary package is installed). apt checks the files against
#      the signed trixie Release. The newest version the mirror's pool
#      actually holds is taken (a point release can be listed before its
#      files reach a mirror). Its upstream tarball (openssl_*.orig.tar.gz) is
#      built with no Debian patch: `./Configure shared no-tests no-docs
#      --libdir=lib` with an rpath to PREFIX/lib, `make -j2 build_sw`,
#      `make install_sw` (libraries, headers, the openssl command; no docs).
#      PREFIX/peregrine-source.txt records the Debian source version.
#      --rebuild builds it again even if it works.
#   2. The TLSTests and QUICTests targets built against it, in a build
#      directory of their own (.build-openssl35, so the machine-OpenSSL build
#      in .build stays as it is): headers from PREFIX/include, libraries from
#      PREFIX/lib, found at run time through an rpath. The run must print
#      "OpenSSL at run time: OpenSSL 3.5" (TLSTests.OpenSSLVersionTests) and
#      the test bundle must map PREFIX's libssl and libcrypto (ldd), or the
#      check fails.
#   3. With --e2e: `peregrine` and `peregrine-worker` built the same way, the
#      worker checked to map PREFIX's libssl, and
#      tests/e2e/test_http3_aioquic.py run against them (aioquic is the
#      client, on the test venv's own OpenSSL-free Python crypto).
#
# Times measured on 2 cores shared with other builds: fetching and building
# OpenSSL 8 to 10 minutes (once; make alone 470 to 550 s); then, from a fresh
# .build-openssl35, the Swift build and the tests 75 s, and --e2e 20 s more
# (the products reuse the tests' build; the 14 tests take 15 s); with nothing
# to rebuild, 15 s (35 s with --e2e). The prefix takes 26 MB.
# Environment: PEREGRINE_OSSL35_PREFIX, PEREGRINE_OSSL35_JOBS (default 2),
# PEREGRINE_OSSL35_MIRROR (default http://deb.debian.org/debian),
# PEREGRINE_OSSL35_SECURITY_MIRROR (default http://deb.debian.org/debian-security),
# PEREGRINE_OSSL35_WORK (scratch directory, default PREFIX.work; kept on
# failure), PYTHON (interpreter for the Swift build flags and pytest; default
# .venv-test/bin/python of this checkout, else python3; --e2e needs one with
# pytest and aioquic, as scripts/test.sh makes).
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

e2e=
rebuild=
while [ $# -gt 0 ]; do
    case $1 in
        --e2e) e2e=1; shift ;;
        --rebuild) rebuild=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done

root=$(cd "$(dirname "$0")/.." && pwd)
prefix=${PEREGRINE_OSSL35_PREFIX:-$HOME/.cache/peregrine/openssl-3.5}
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)
jobs=${PEREGRINE_OSSL35_JOBS:-2}
mirror=${PEREGRINE_OSSL35_MIRROR:-http://deb.debian.org/debian}
security_mirror=${PEREGRINE_OSSL35_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
work=${PEREGRINE_OSSL35_WORK:-$prefix.work}
record="$prefix/peregrine-source.txt"
scratch="$root/.build-openssl35"
if [ -n "${PYTHON:-}" ]; then python=$PYTHON
elif [ -x "$root/.venv-test/bin/python" ]; then python="$root/.venv-test/bin/python"
else python=python3
fi

step() { printf '==> %s\n' "$*" >&2; }
started=$SECONDS

# A working 3.5 in PREFIX: its own openssl command (which finds its own
# libraries through the rpath) says 3.5, and the headers and libraries the
# Swift build needs are there.
works() {
    [ -f "$prefix/include/openssl/ssl.h" ] && [ -e "$prefix/lib/libssl.so" ] && [ -e "$prefix/lib/libcrypto.so" ] &&
        "$prefix/bin/openssl" version 2>/dev/null | grep -q '^OpenSSL 3\.5\.'
}

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"
    elif command -v sudo >/dev/null; then sudo "$@"
    else echo "need root (or sudo) for: $*" >&2; return 1
    fi
}

build_openssl() {
    local needed=(build-essential perl dpkg-dev debian-archive-keyring) missing=() p
    for p in "${needed[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        step "apt-get install ${missing[*]}"
        as_root apt-get update -qq
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi

    step "source of trixie's openssl (apt state in $work/apt, not the machine's)"
    rm -rf "$work/apt" "$work/src"
    mkdir -p "$work/apt/lists/partial" "$work/apt/cache/archives/partial" "$work/apt/parts" "$work/src"
    local key=/usr/share/keyrings/debian-archive-keyring.gpg
    {
        echo "deb-src [signed-by=$key] $mirror trixie main"
        echo "deb-src [signed-by=$key] $mirror trixie-updates main"
        echo "deb-src [signed-by=$key] $security_mirror trixie-security main"
    } >"$work/apt/sources.list"
    local apt_options=(
        -o "Dir::Etc::sourcelist=$work/apt/sources.list"
        -o "Dir::Etc::sourceparts=$work/apt/parts"
        -o "Dir::State::Lists=$work/apt/lists"
        -o "Dir::Cache=$work/apt/cache"
        -o "Debug::NoLocking=1"
        -o "APT::Sandbox::User=$(id -un)"
    )
    apt-get "${apt_options[@]}" -qq update
    # Newest first; only 3.5.x (the suite could move on to another series).
    local versions version got=
    versions=$(apt-cache "${apt_options[@]}" showsrc openssl | sed -n 's/^Version: //p' | grep '^3\.5\.' |
        sort -V -r | uniq)
    [ -n "$versions" ] || { echo "trixie lists no openssl 3.5.x source" >&2; return 1; }
    for version in $versions; do
        if (cd "$work/src" && apt-get "${apt_options[@]}" -qq source --download-only "openssl=$version") \
            >"$work/fetch.log" 2>&1; then
            got=$version
            break
        fi
        step "openssl $version is listed but not in the pool; trying an older one"
        rm -f "$work"/src/openssl_*
    done
    [ -n "$got" ] || { cat "$work/fetch.log" >&2; echo "no openssl 3.5.x source could be fetched" >&2; return 1; }
    local tarball
    tarball=$(ls "$work"/src/openssl_*.orig.tar.gz)
    step "upstream source $(basename "$tarball") (Debian $got)"
    tar -xzf "$tarball" -C "$work/src"
    local source
    source=$(find "$work/src" -mindepth 1 -maxdepth 1 -type d -name 'openssl-3.5*' | head -n 1)
    [ -n "$source" ] || { echo "no openssl-3.5* directory in $tarball" >&2; return 1; }

    # A previous build's files would otherwise mix with this one's.
    rm -rf "${prefix:?}/bin" "$prefix/include" "$prefix/lib" "$prefix/ssl" "$record"
    step "Configure shared no-tests no-docs --prefix=$prefix"
    (cd "$source" && ./Configure --prefix="$prefix" --openssldir="$prefix/ssl" --libdir=lib \
        shared no-tests no-docs "-Wl,-rpath,$prefix/lib") >"$work/configure.log" 2>&1 ||
        { tail -n 30 "$work/configure.log" >&2; echo "Configure failed, log: $work/configure.log" >&2; return 1; }
    step "make -j$jobs build_sw (log: $work/make.log)"
    local start=$SECONDS
    (cd "$source" && make -j"$jobs" build_sw) >"$work/make.log" 2>&1 ||
        { tail -n 30 "$work/make.log" >&2; echo "make failed, log: $work/make.log" >&2; return 1; }
    step "built in $((SECONDS - start)) s; make install_sw"
    (cd "$source" && make install_sw) >"$work/install.log" 2>&1 ||
        { tail -n 30 "$work/install.log" >&2; echo "make install_sw failed, log: $work/install.log" >&2; return 1; }
    echo "source: openssl $got (Debian trixie, upstream tarball, no Debian patches)" >"$record"
}

if works && [ -z "$rebuild" ]; then
    step "$("$prefix/bin/openssl" version) in $prefix: nothing to build"
else
    build_openssl
    works || { echo "the OpenSSL built in $prefix does not pass the check; sources and logs: $work" >&2; exit 1; }
    rm -rf "$work"
    step "$("$prefix/bin/openssl" version) in $prefix ($(du -sh "$prefix" | cut -f1))"
fi

# Headers of 3.5 for every C target and the Clang importer; its libraries
# first on the link line and, through the rpath, at run time.
swift_flags=(--scratch-path "$scratch" -j "$jobs"
    -Xcc "-I$prefix/include" -Xlinker "-L$prefix/lib" -Xlinker -rpath -Xlinker "$prefix/lib")

# Every libssl/libcrypto the binary would load must be PREFIX's.
maps_prefix() {
    local libs
    libs=$(ldd "$1" | grep -E 'lib(ssl|crypto)\.so' || true)
    printf '%s\n' "$libs" | sed 's/^/    /' >&2
    [ "$(printf '%s\n' "$libs" | grep -c "=> $prefix/lib/")" = 2 ] &&
        ! printf '%s\n' "$libs" | grep -v "=> $prefix/lib/" | grep -q .
}

step "TLSTests and QUICTests against $prefix (build directory $scratch)"
log="$scratch/openssl35-tests.log"
mkdir -p "$scratch"
set +e
PYTHON="$python" "$root/scripts/swiftpm" test "${swift_flags[@]}" --filter 'TLSTests|QUICTests' >"$log" 2>&1
status=$?
set -e
grep -E "error:|OpenSSL at run time" "$log" | tail -n 40 >&2
grep -E "Executed [0-9]+ tests" "$log" | tail -n 1 >&2
[ $status = 0 ] || { echo "the tests failed against OpenSSL 3.5 (log: $log)" >&2; exit 1; }
grep -q "OpenSSL at run time: OpenSSL 3\.5\." "$log" ||
    { echo "the tests did not report running on OpenSSL 3.5 (log: $log)" >&2; exit 1; }
bundle=$(find "$scratch" -path '*/debug/*' -name 'peregrinePackageTests.xctest' -type f | head -n 1)
[ -n "$bundle" ] && maps_prefix "$bundle" ||
    { echo "the test bundle ${bundle:-(not found)} does not load $prefix's libssl and libcrypto" >&2; exit 1; }

if [ -n "$e2e" ]; then
    step "peregrine and peregrine-worker against $prefix"
    PYTHON="$python" "$root/scripts/swiftpm" build "${swift_flags[@]}" --product peregrine >"$scratch/e2e-build.log" 2>&1 &&
        PYTHON="$python" "$root/scripts/swiftpm" build "${swift_flags[@]}" --product peregrine-worker \
            >>"$scratch/e2e-build.log" 2>&1 ||
        { tail -n 30 "$scratch/e2e-build.log" >&2; echo "the build failed (log: $scratch/e2e-build.log)" >&2; exit 1; }
    bin=$(PYTHON="$python" "$root/scripts/swiftpm" build "${swift_flags[@]}" --show-bin-path)
    maps_prefix "$bin/peregrine-worker" ||
        { echo "$bin/peregrine-worker does not load $prefix's libssl and libcrypto" >&2; exit 1; }
    step "tests/e2e/test_http3_aioquic.py"
    (cd "$root" && PEREGRINE_BIN="$bin/peregrine" "$python" -m pytest tests/e2e/test_http3_aioquic.py -q -p no:cacheprovider)
fi

step "OpenSSL 3.5 check passed in $((SECONDS - started)) s"
