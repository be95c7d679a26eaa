#!/usr/bin/env bash
# Build each fuzz target (fuzz-http1: the HTTP/1 head parser and chunked
# decoder; fuzz-hpack: HPACK and the HTTP/2 frame parser; fuzz-qpack: QPACK
# and the HTTP/3 frame reader; fuzz-forwarded: the Forwarded/X-Forwarded-*
# resolver and address parsers; fuzz-proxy-protocol: the PROXY protocol v1/v2
# decoder; fuzz-quic-packet: QUIC datagrams, packet protection and frames;
# fuzz-h3-session: the HTTP/3 server session over abstract streams;
# fuzz-capsules: the Capsule Protocol reader and WebTransport capsules;
# fuzz-client-hello: the ClientHello reader of QUIC version negotiation;
# fuzz-ws-frames: the WebSocket frame decoder, masking and UTF-8;
# fuzz-ws-deflate: permessage-deflate; fuzz-ws-handshake: the WebSocket
# handshake and extension-list readers) with libFuzzer and the sanitizers,
# and fuzz it for SECONDS (default 60) from its seed corpus. Exits non-zero
# if a build fails or libFuzzer finds a crash, leak, sanitizer report or
# broken invariant; the input that did it is left in fuzz/artifacts/.
#
# Sanitizers, in one build: Swift code with -sanitize=fuzzer,address; the C
# targets (CSys, CTLS, CZlib) with -fsanitize=address,undefined and libFuzzer
# coverage (-fsanitize=fuzzer-no-link), a UBSan report being fatal
# (-fno-sanitize-recover). swiftc has no -sanitize=undefined on Linux
# ("unsupported option ... for target x86_64-unknown-linux-gnu"); Swift's
# own overflow, bounds and exclusivity checks, which trap in both debug and
# release builds, are its equivalent. The UBSan handlers come with the ASan
# runtime, so nothing more is linked. FUZZ_UBSAN=0 drops the C flags.
#
#   fuzz/run.sh 60                 # CI (scripts/test.sh: FUZZ_SECONDS)
#   FUZZ_CONFIG=release fuzz/run.sh 600   # faster executions, same checks
#   FUZZ_TARGETS="ws-frames ws-deflate" fuzz/run.sh 30   # some targets only
#
# Environment: FUZZ_SCRATCH (build directory, default /tmp/fuzzbuild),
# FUZZ_CONFIG (debug|release, default debug), FUZZ_ARGS (extra libFuzzer
# flags), FUZZ_TARGETS (names without `fuzz-`, default all), FUZZ_UBSAN.
set -euo pipefail

seconds=${1:-60}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
scratch=${FUZZ_SCRATCH:-/tmp/fuzzbuild}
config=${FUZZ_CONFIG:-debug}
sanitizers=(-Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -DFUZZING)
if [ "${FUZZ_UBSAN:-1}" != 0 ]; then
    sanitizers+=(-Xcc -fsanitize=address,undefined,fuzzer-no-link -Xcc -fno-sanitize-recover=undefined)
fi
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# Swift's own crash backtracer trips ASan inside a fuzzing process and can
# stall it after a finding; libFuzzer and ASan print the stack anyway.
export SWIFT_BACKTRACE=enable=no
mkdir -p "$here/artifacts"
# The toolchain leaves a TemporaryDirectory.* in $TMPDIR on every build: its own, removed at the end.
mkdir -p "$scratch"
toolchain_tmp=$(mktemp -d "$scratch/swift-tmp.XXXXXX")
trap 'rm -rf "$toolchain_tmp"' EXIT

fuzz() {
    local name=$1 corpus=$2; shift 2
    case " ${FUZZ_TARGETS:-$name} " in *" $name "*) ;; *) return 0 ;; esac
    TMPDIR=$toolchain_tmp swift build --package-path "$root" -c "$config" --scratch-path "$scratch" --product "fuzz-$name" "${sanitizers[@]}"
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
fuzz client-hello client-hello
fuzz ws-frames ws-frames
fuzz ws-deflate ws-deflate
fuzz ws-handshake ws-handshake -dict="$here/ws-handshake.dict"
