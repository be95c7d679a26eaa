#!/usr/bin/env bash
# Build each fuzz target (fuzz-http1: the HTTP/1 head parser and chunked
# decoder; fuzz-hpack: HPACK and the HTTP/2 frame parser; fuzz-qpack: QPACK
# and the HTTP/3 frame reader; fuzz-forwarded: the Forwarded/X-Forwarded-*
# resolver and address parsers; fuzz-proxy-protocol: the PROXY protocol v1/v2
# decoder; fuzz-quic-packet: QUIC datagrams, packet protection and frames;
# fuzz-h3-session: the HTTP/3 server session over abstract streams;
# fuzz-capsules: the Capsule Protocol reader and WebTransport capsules)
# with libFuzzer +
# AddressSanitizer and fuzz it for SECONDS (default 60) from its seed corpus. Exits non-zero if
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

# Swift's own crash backtracer trips ASan inside a fuzzing process and can
# stall it after a finding; libFuzzer and ASan print the stack anyway.
export SWIFT_BACKTRACE=enable=no
mkdir -p "$here/artifacts"

fuzz() {
    local name=$1 corpus=$2; shift 2
    swift build --package-path "$root" -c "$config" --scratch-path "$scratch" --product "fuzz-$name" \
        -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -DFUZZING
    # New inputs go to a scratch corpus, so the committed seeds stay a
    # curated set (copy interesting ones into fuzz/corpus/NAME/ by hand).
    local work
    work=$(mktemp -d "${TMPDIR:-/tmp}/fuzz-$name-corpus.XXXXXX")
    "$scratch/$config/fuzz-$name" "$work" "$here/corpus/$corpus" \
        -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
        -artifact_prefix="$here/artifacts/" -print_final_stats=1 "$@" ${FUZZ_ARGS:-}
    rm -rf "$work"
}

fuzz http1 http1 -dict="$here/http1.dict"
fuzz hpack hpack
fuzz qpack qpack
fuzz forwarded forwarded -dict="$here/forwarded.dict"
fuzz proxy-protocol proxy-protocol -dict="$here/proxy-protocol.dict"
fuzz quic-packet quic-packet
fuzz h3-session h3-session
fuzz capsules capsules
