#!/bin/sh
# Compiles openloop (the fixed-rate HTTP/1.1 latency client) into DIRECTORY (created if needed) and prints the
# executable's path; with --check, also its unit checks (check.c) as DIRECTORY/openloop-check.
# Usage: benchmarks/openloop/build.sh [--check] DIRECTORY
set -eu
check=0
if [ "${1:-}" = "--check" ]; then
    check=1
    shift
fi
if [ $# -ne 1 ]; then
    echo "usage: $0 [--check] DIRECTORY" >&2
    exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
flags="-O2 -std=gnu11 -Wall -Wextra"
# shellcheck disable=SC2086
cc $flags -o "$out/openloop" "$here"/main.c "$here"/conn.c "$here"/http.c "$here"/../histogram/histogram.c
if [ $check -eq 1 ]; then
    # shellcheck disable=SC2086
    cc $flags -o "$out/openloop-check" "$here"/check.c "$here"/http.c "$here"/../histogram/histogram.c
fi
echo "$out/openloop"
