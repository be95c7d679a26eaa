#!/usr/bin/env bash
# ThreadSanitizer over the worker threads of one process (issue #16 point 6),
# outside CI (a debug build with TSan is slow to build and to run):
#
#   scripts/tsan-stress.sh [ROUNDS] [-- PYTEST-ARGS...]
#
#   1. builds `peregrine` and `peregrine-worker` with `-sanitize=thread`
#      (Swift) and `-fsanitize=thread` (the C targets) against a free-threaded
#      CPython 3.13t into .build-tsan (a debug build);
#   2. runs the cross-talk stress test (tests/e2e/test_worker_threads_crosstalk.py:
#      WSGI and ASGI over HTTP/1.1 keep-alive, new connections and h2c
#      streams) ROUNDS times (default 3) against it, as
#      `--free-threaded --workers 2`, plus whatever PYTEST-ARGS name (e.g.
#      tests/e2e/test_frameworks_worker_threads.py, which needs Django and
#      FastAPI in the free-threaded venv);
#   3. prints every TSan report and exits 1 if there was one (but for the
#      suppressions in scripts/tsan-suppressions.txt, each with its reason).
#
# CPython itself is not instrumented: a report always involves our Swift or
# C code on at least one side. Synchronisation done only inside libpython
# (its own atomics) is invisible to TSan; pthread locks anywhere are seen.
#
# Environment: FT_VENV (default .venv-ft, as scripts/test.sh makes it with
# scripts/build-free-threaded-python.sh --venv), TEST_PYTHON (default
# .venv-test/bin/python: the clients, which need h2), TSAN_REPORTS (default
# a fresh temporary directory).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
rounds=3
if [ $# -gt 0 ] && [ "$1" != "--" ]; then rounds=$1; shift; fi
[ "${1:-}" = "--" ] && shift
ft_venv=${FT_VENV:-$root/.venv-ft}
test_python=${TEST_PYTHON:-$root/.venv-test/bin/python}
reports=${TSAN_REPORTS:-$(mktemp -d /tmp/peregrine-tsan.XXXXXX)}
mkdir -p "$reports"
build="$root/.build-tsan"

[ -x "$ft_venv/bin/python" ] || scripts/build-free-threaded-python.sh --venv "$ft_venv" | tail -n 2
"$ft_venv/bin/python" -c 'import sys; assert not sys._is_gil_enabled(), "not a free-threaded interpreter"'

echo "==> TSan build against $("$ft_venv/bin/python" --version) into $build"
for product in peregrine-worker peregrine; do
    PYTHON="$ft_venv/bin/python" scripts/swiftpm build --product "$product" -j 2 --build-path "$build" \
        -Xswiftc -sanitize=thread -Xcc -fsanitize=thread 2>&1 | tail -n 1
done

echo "==> $rounds round(s) of the cross-talk stress test, reports in $reports"
for round in $(seq "$rounds"); do
    echo "--- round $round"
    # halt_on_error=0: a report does not stop the worker, every one is collected.
    TSAN_OPTIONS="log_path=$reports/report halt_on_error=0 second_deadlock_stack=1 suppressions=$root/scripts/tsan-suppressions.txt ${TSAN_OPTIONS:-}" \
    PEREGRINE_PYTHON_EXECUTABLE="$ft_venv/bin/python" \
    PEREGRINE_BIN="$build/debug/peregrine" \
        "$test_python" -m pytest -q -p no:cacheprovider tests/e2e/test_worker_threads_crosstalk.py "$@"
done

shopt -s nullglob
found=("$reports"/report.*)
if [ ${#found[@]} -eq 0 ]; then
    echo "==> ThreadSanitizer: no reports"
    exit 0
fi
cat "${found[@]}"
echo "==> ThreadSanitizer: $(grep -c '^WARNING: ThreadSanitizer' "${found[@]}" | awk -F: '{n += $NF} END {print n}') report(s) in ${#found[@]} file(s) under $reports"
exit 1
