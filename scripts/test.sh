#!/usr/bin/env bash
# The whole test suite, from a fresh clone of this repository on a Debian 12
# machine with a Swift 6 toolchain and CPython (what .ci/run calls):
#
#   1. system packages the build and the tests need (apt, when root);
#   2. a test venv with the test requirements and peregrine itself installed
#      by `pip install .` (a release build against that venv's interpreter);
#   3. lint and format (ruff) and types (mypy --strict) of the Python package;
#   4. `swift test`: unit tests of the protocol cores;
#   5. a short libFuzzer run over each fuzz target (HTTP/1, HPACK/HTTP/2 frames,
#      QPACK/HTTP/3 frames, Forwarded headers, PROXY protocol, QUIC packets,
#      the HTTP/3 session, capsules, WebSocket frames, permessage-deflate and
#      the WebSocket handshake), Swift under ASan, our C under ASan + UBSan;
#   5b. the benchmark harness in smoke mode (one short round, peregrine only; Caddy too over HTTP/3);
#   6. pytest (after scripts/pywebtransport-venv.sh: the venv of the
#      WebTransport client pywebtransport, CPython >= 3.12, cached in
#      ~/.cache/peregrine): end-to-end tests against the installed server, and the install
#      test (fresh venvs of two interpreters); the framework matrix's outcomes
#      (tests/e2e/test_framework_matrix.py) must be the table in CONFIG.md
#      (scripts/framework_matrix.py --check);
#   7. the ASGI, HTTP/2 and WebSocket end-to-end tests again on a debug build,
#      which keeps Swift's run-time exclusivity checks (not the 100k-request
#      leak test: it measures the release binary, and takes minutes on debug);
#   7b. TLS for QUIC on OpenSSL 3.5 (scripts/check-openssl35.sh --e2e: the
#      build cached in ~/.cache/peregrine/openssl-3.5, about 9 minutes when
#      missing; then about 1.5 minutes): TLSTests, QUICTests and the aioquic
#      HTTP/3 end-to-end tests against it;
#   8. a free-threaded CPython 3.13t (scripts/build-free-threaded-python.sh,
#      cached in ~/.cache/peregrine/python3.13t, about 4 minutes to build when
#      missing), peregrine and the test applications' frameworks
#      (tests/requirements-ft.txt) installed into a venv of it, and the
#      end-to-end suites for HTTP/1.1, WSGI, ASGI, HTTP/2 (with the h2spec
#      conformance suite), TLS and WebSocket against that build with every
#      server run as `--free-threaded --workers 2` (PEREGRINE_TEST_WORKER_THREADS,
#      tests/conftest.py), plus the worker-thread tests (the cross-talk stress
#      test, Django and FastAPI on two threads); the clients run on the test
#      venv. What it leaves out, and why: README, "Tests".
#
# Environment: PYTHON (default python3) picks the interpreter of the test venv;
# FUZZ_SECONDS (default 10) the fuzzing time per fuzz target (12 targets:
# about 2 minutes of fuzzing plus the sanitizer builds, fuzz/README.md).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
python=${PYTHON:-python3}
venv="$root/.venv-test"

step() { printf '\n==> %s\n' "$*"; }

step "system packages"
# ngtcp2-client (gtlsclient) and chromium: independent HTTP/3 clients for tests/e2e/test_http3_{ngtcp2,chromium}.py.
# openssl: `openssl ocsp` makes and `openssl s_client -status` reads the stapled responses of tests/e2e/test_tls_ocsp.py.
needed=(libssl-dev zlib1g-dev python3-dev python3-venv curl wrk nghttp2-client nginx haproxy systemd ngtcp2-client chromium openssl)
missing=()
needed+=(gcc)  # cc builds the accept4 shim of tests/e2e/test_accept_errors.py (tests/e2e/accept_inject.c)
# h3load (benchmarks/h3load, tests/e2e/test_h3load.py): the HTTP/3 load generator in C on ngtcp2, nghttp3 and GnuTLS.
needed+=(pkg-config libngtcp2-dev libngtcp2-crypto-gnutls-dev libnghttp3-dev libgnutls28-dev)
# caddy (Go, quic-go): the HTTP/3 peer of the benchmark smoke's h3 round (benchmarks/run.py --quick).
needed+=(caddy)
for p in "${needed[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    else
        echo "missing Debian packages: ${missing[*]} (run as root, or install them)" >&2
        exit 1
    fi
fi

step "test venv ($($python --version 2>&1)) and pip install ."
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q -r tests/requirements.txt -r tests/requirements-asgi.txt -r tests/requirements-ws.txt -r tests/requirements-h2.txt -r tests/requirements-h3.txt -r tests/requirements-frameworks.txt ruff mypy
"$venv/bin/python" -m pip install -q .
"$venv/bin/peregrine" --version

step "ruff and mypy"
"$venv/bin/python" -m ruff check python build_support setup.py tests benchmarks
"$venv/bin/python" -m ruff format --check python build_support setup.py tests benchmarks
"$venv/bin/python" -m mypy

step "swift test"
PYTHON="$venv/bin/python" scripts/swiftpm test -j 2 2>&1 | tail -n 40

step "fuzz (${FUZZ_SECONDS:-10} s per target)"
fuzz/run.sh "${FUZZ_SECONDS:-10}"

step "benchmark smoke (benchmarks/run.py --quick)"
"$venv/bin/python" benchmarks/run.py --quick --peregrine "$venv/bin/peregrine"

# pywebtransport (the current-draft WebTransport client of tests/e2e/wtclient_pywebtransport.py) needs
# CPython >= 3.12: a venv of its own, cached in ~/.cache/peregrine/venv-pywebtransport (pyenv's 3.12 or 3.13).
step "pywebtransport venv (WebTransport client of the current draft)"
scripts/pywebtransport-venv.sh | tail -n 1

# The free-threaded interpreter is built (or found in its cache) before pytest: tests/test_packaging.py
# checks the metadata pip prepares for it; the free-threaded step below reuses it.
step "free-threaded CPython 3.13t (build or cache)"
scripts/build-free-threaded-python.sh | tail -n 1

step "pytest"
matrix="$root/.build/framework-matrix.json"
rm -f "$matrix"
PEREGRINE_FRAMEWORK_MATRIX="$matrix" "$venv/bin/python" -m pytest tests -q -p no:cacheprovider --durations=25
# The docs table of frameworks x protocols is what this run produced, or CI fails with the difference.
"$venv/bin/python" scripts/framework_matrix.py --check "$matrix"

# Release builds run without Swift's run-time exclusivity checks (see
# Package.swift); the asynchronous paths, where an overlapping access could
# hide, run once more on a debug build that keeps them.
# Mixed traffic, SIGHUPs and a worker killed twice, two minutes: nothing may fail but the killed
# workers' in-flight requests, and every worker must give its descriptors back (issue 19 point 5).
step "soak (2 minutes, benchmarks/soak.py)"
"$venv/bin/python" benchmarks/soak.py --duration 120 --sighup-every 60 --kill-every 45 \
    --bin "$venv/bin/peregrine" --output "$root/.build/soak.json"

step "pytest: ASGI, HTTP/2 and WebSocket end-to-end on a debug build (exclusivity checks on)"
for product in peregrine-worker peregrine; do
    PYTHON="$venv/bin/python" scripts/swiftpm build --product "$product" -j 2 2>&1 | tail -n 3
done
PEREGRINE_BIN="$root/.build/debug/peregrine" "$venv/bin/python" -m pytest tests/e2e -q -p no:cacheprovider \
    -k "(asgi or http2 or websocket) and not test_leaks"

step "OpenSSL 3.5: TLSTests, QUICTests and tests/e2e/test_http3_aioquic.py against it"
PYTHON="$venv/bin/python" scripts/check-openssl35.sh --e2e

# The worker threads share one interpreter: with the GIL gone they run in
# parallel, which only a free-threaded build shows. The servers run from the
# 3.13t venv; the tests and their clients from the test venv (trustme's
# cryptography and uvloop have no 3.13t build; the ASGI tests run on asyncio).
step "free-threaded CPython 3.13t: the end-to-end suites under --free-threaded --workers 2"
ft_venv="$root/.venv-ft"
scripts/build-free-threaded-python.sh --venv "$ft_venv" | tail -n 2
"$ft_venv/bin/python" -m pip install -q --upgrade pip
"$ft_venv/bin/python" -m pip install -q --only-binary=pydantic-core -r tests/requirements-ft.txt
"$ft_venv/bin/python" -m pip install -q .
"$ft_venv/bin/python" -c 'import sys; assert not sys._is_gil_enabled(), "the GIL is on"'
ft_started=$SECONDS
PEREGRINE_BIN="$ft_venv/bin/peregrine" PEREGRINE_TEST_WORKER_THREADS=2 "$venv/bin/python" -m pytest -q -p no:cacheprovider \
    tests/e2e/test_http1_*.py tests/e2e/test_wsgi_{environ,errors,input,response}.py tests/e2e/test_flask_app.py tests/e2e/test_asgi_*.py \
    tests/e2e/test_http2_gateway.py tests/h2spec tests/e2e/test_tls_*.py tests/e2e/test_websocket_*.py \
    tests/e2e/test_worker_threads.py tests/e2e/test_worker_threads_crosstalk.py tests/e2e/test_worker_contexts.py \
    tests/e2e/test_frameworks_worker_threads.py tests/e2e/test_cli.py \
    tests/e2e/test_process_graceful.py tests/e2e/test_process_workers.py
# These pick their own process model (--wsgi-threads pools, one lifespan per
# thread or per process, a process of threads replaced): run as they are.
PEREGRINE_BIN="$ft_venv/bin/peregrine" "$venv/bin/python" -m pytest -q -p no:cacheprovider \
    tests/e2e/test_wsgi_threads.py tests/e2e/test_lifespan_scope.py tests/e2e/test_worker_threads_restarts.py
echo "free-threaded end-to-end tests: $((SECONDS - ft_started)) s"
