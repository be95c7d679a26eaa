#!/usr/bin/env bash
# Build the HTTP/1 fuzz target with libFuzzer + AddressSanitizer and fuzz it
# for SECONDS (default 60) starting from the seed corpus. Exits non-zero if
# the build fails or libFuzzer finds a crash, leak or broken invariant; the
# input that did it is left in fuzz/artifacts/.
#
#   fuzz/run.sh 60                 # CI
#   FUZZ_CONFIG=release fuzz/run.sh 600   # faster executions, same checks
#
# Environment: FUZZ_SCRATCH (build directory, default /tmp/fuzzbuild),
# FUZZ_CONFIG (debug|release, default debug), FUZZ_ARGS (extra libFuzzer flags).
set -euo pipefail

seconds=${1:-60}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
scratch=${FUZZ_SCRATCH:-/tmp/fuzzbuild}
config=${FUZZ_CONFIG:-debug}

swift build --package-path "$root" -c "$config" --scratch-path "$scratch" --product fuzz-http1 \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -DFUZZING
binary="$scratch/$config/fuzz-http1"

# New inputs go to a scratch corpus, so the committed seeds stay a curated set
# (copy interesting ones into fuzz/corpus/http1/ by hand).
work=$(mktemp -d "${TMPDIR:-/tmp}/fuzz-http1-corpus.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$here/artifacts"

# Swift's own crash backtracer trips ASan inside a fuzzing process and can
# stall it after a finding; libFuzzer and ASan print the stack anyway.
export SWIFT_BACKTRACE=enable=no

"$binary" "$work" "$here/corpus/http1" \
    -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
    -dict="$here/http1.dict" -artifact_prefix="$here/artifacts/" -print_final_stats=1 \
    ${FUZZ_ARGS:-}
