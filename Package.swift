// swift-tools-version:6.0
// The Python include and link flags are not known until install time: they
// come from the interpreter doing the install. `scripts/swiftpm` (and the pip
// build) computes them with sysconfig and passes the include flags as -Xcc
// flags and the link flags in PEREGRINE_PYTHON_LINK (separated by 0x1F),
// which link only the worker executable to libpython: the supervisor
// (`peregrine`) must not map it. So this manifest stays free of any
// interpreter path.
import PackageDescription

let pythonLink: [LinkerSetting] = {
    let flags = (Context.environment["PEREGRINE_PYTHON_LINK"] ?? "").split(separator: "\u{1F}").map(String.init)
    return flags.isEmpty ? [] : [.unsafeFlags(flags.flatMap { ["-Xlinker", $0] })]
}()

// The supervisor is linked fully static when the build asks for it (the pip
// build does when the toolchain has the static Swift runtime): it then maps
// nothing but itself, about 4.1 MiB resident instead of 6.2 with the shared C
// and C++ runtimes (BENCHMARKS.md, memory).
let supervisorLink: [LinkerSetting] =
    Context.environment["PEREGRINE_STATIC_SUPERVISOR"] == "1" ? [.unsafeFlags(["-static-executable"])] : []

// Release builds drop the run-time exclusivity checks (debug builds, which
// the tests run, keep them): on a WSGI hello request they were 4,200 of the
// 21,300 instructions spent in user space (callgrind; BENCHMARKS.md,
// optimisation log). The compile-time checks stay on everywhere.
let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release)),
]

let package = Package(
    name: "peregrine",
    products: [
        // The supervisor: options, listening socket, worker processes. No Python.
        .executable(name: "peregrine", targets: ["peregrine"]),
        // A worker: Python, the application, the protocols. Run by `peregrine`.
        .executable(name: "peregrine-worker", targets: ["peregrine-worker"]),
    ],
    targets: [
        // C: syscalls, socket options, epoll, sendfile, clock, signals.
        .target(name: "CSys"),
        // libpython headers; the module map names no library, the link flags
        // come from the build (see above).
        .systemLibrary(name: "CPython", path: "Sources/CPython"),
        // CPython macros and inline functions Swift cannot call directly.
        .target(name: "CPyShim", dependencies: ["CPython"]),
        // The system OpenSSL (libssl, libcrypto) behind small C functions.
        .target(name: "CTLS", linkerSettings: [.linkedLibrary("ssl"), .linkedLibrary("crypto")]),
        // zlib's raw DEFLATE streams behind an opaque handle, for permessage-deflate.
        .target(name: "CZlib", linkerSettings: [.linkedLibrary("z")]),
        // The worker's malloc: glibc's, but for blocks allocated under a
        // zone hint (CSys), which go to that zone of CTLS's handshake heap
        // (callocator.h). Linked only into the worker: it replaces malloc
        // for the whole process.
        .target(name: "CAllocator", dependencies: ["CSys", "CTLS"]),

        .target(name: "Core", dependencies: ["CSys"], swiftSettings: strict),
        .target(name: "HTTP1", dependencies: ["Core"], swiftSettings: strict),
        // What HTTP/2 and HTTP/3 share: the Huffman code and prefixed integers
        // of HPACK/QPACK, decoded field lists, the request field rules.
        .target(name: "HTTPFields", dependencies: ["Core"], swiftSettings: strict),
        // Sans-I/O HTTP/2: frames, HPACK (HPACK/), connection and streams.
        .target(name: "HTTP2", dependencies: ["HTTPFields", "Core"], swiftSettings: strict),
        // Sans-I/O HTTP/3 (RFC 9114) framing, streams and QPACK (RFC 9204),
        // without QUIC: the connection integration supplies stream ids and bytes.
        .target(name: "HTTP3", dependencies: ["HTTPFields", "Core"], swiftSettings: strict),
        // Sans-I/O QUIC (RFC 9000, 9001, 9369): wire formats, frames, transport
        // parameters and packet protection; CTLS for the crypto primitives only.
        .target(name: "QUIC", dependencies: ["Core", "CTLS"], swiftSettings: strict),
        // Sans-I/O RFC 6455 framing and handshake helpers; permessage-deflate (RFC 7692) over CZlib.
        .target(name: "WebSocket", dependencies: ["Core", "CZlib"], swiftSettings: strict),
        // TLS contexts and sessions for the server (over CTLS), and TLS for
        // QUIC: QUIC's CryptoHandshake over OpenSSL.
        .target(name: "TLS", dependencies: ["CTLS", "QUIC", "Core"], swiftSettings: strict),
        // One request/response exchange, whatever carries it: the per-request
        // state and the decisions that do not depend on framing. No Python.
        .target(name: "Exchanges", dependencies: ["Core"], swiftSettings: strict),
        // Sans-I/O decisions about proxies: trusted-address lists, the
        // Forwarded/X-Forwarded-* resolver, the PROXY protocol v1/v2 decoder.
        .target(name: "Proxy", dependencies: ["Core"], swiftSettings: strict),
        .target(name: "PyBridge", dependencies: ["CPython", "CPyShim", "Core"], swiftSettings: strict,
                linkerSettings: pythonLink),
        // The gateways are Python adapters by nature, so they see the C API too;
        // the protocol cores and the server do not.
        .target(name: "Gateway", dependencies: ["Exchanges", "Proxy", "PyBridge", "CPython", "CPyShim", "Core", "CSys"], swiftSettings: strict),
        // The command line, the configuration it makes and the listening
        // socket: shared by the supervisor and the workers.
        .target(name: "Options", dependencies: ["Proxy", "Core", "CSys"], swiftSettings: strict),
        // The supervisor process (no Python, no OpenSSL, no protocol code).
        .target(name: "Supervision", dependencies: ["Options", "Core", "CSys"], swiftSettings: strict),
        .target(name: "Server", dependencies: ["Options", "Exchanges", "Gateway", "Proxy", "PyBridge", "HTTP1", "HTTP2", "HTTP3", "HTTPFields",
                                              "QUIC", "WebSocket", "Core", "CSys", "TLS"],
                swiftSettings: strict),
        .executableTarget(name: "peregrine", dependencies: ["Supervision"], swiftSettings: strict,
                          linkerSettings: supervisorLink),
        .executableTarget(name: "peregrine-worker", dependencies: ["Server", "CAllocator"], swiftSettings: strict),

        // What the fuzz targets share: starting libFuzzer, replaying files.
        .target(name: "FuzzSupport", path: "fuzz/Sources/FuzzSupport", swiftSettings: strict),
        // libFuzzer entry point for the HTTP/1 parsers (see fuzz/README.md).
        .executableTarget(name: "fuzz-http1", dependencies: ["FuzzSupport", "HTTP1", "Core"], path: "fuzz/Sources/fuzz-http1", swiftSettings: strict),
        // libFuzzer entry point for HPACK and the HTTP/2 frame parser.
        .executableTarget(name: "fuzz-hpack", dependencies: ["FuzzSupport", "HTTP2", "Core"], path: "fuzz/Sources/fuzz-hpack", swiftSettings: strict),
        // libFuzzer entry point for QPACK field sections and the encoder stream.
        .executableTarget(name: "fuzz-qpack", dependencies: ["FuzzSupport", "HTTP3", "HTTPFields", "Core"], path: "fuzz/Sources/fuzz-qpack", swiftSettings: strict),
        // libFuzzer entry point for the HTTP/3 server session over abstract streams.
        .executableTarget(name: "fuzz-h3-session", dependencies: ["FuzzSupport", "HTTP3", "HTTPFields", "Core"], path: "fuzz/Sources/fuzz-h3-session",
                          swiftSettings: strict),
        // libFuzzer entry point for the ClientHello reader of compatible version negotiation.
        .executableTarget(name: "fuzz-client-hello", dependencies: ["FuzzSupport", "QUIC"], path: "fuzz/Sources/fuzz-client-hello",
                          swiftSettings: strict),
        // libFuzzer entry point for the Capsule Protocol reader and WebTransport capsules.
        .executableTarget(name: "fuzz-capsules", dependencies: ["FuzzSupport", "HTTP3", "Core"], path: "fuzz/Sources/fuzz-capsules",
                          swiftSettings: strict),
        // libFuzzer entry point for the Forwarded/X-Forwarded-* resolver.
        .executableTarget(name: "fuzz-forwarded", dependencies: ["FuzzSupport", "Proxy", "Core"], path: "fuzz/Sources/fuzz-forwarded", swiftSettings: strict),
        // libFuzzer entry point for the PROXY protocol v1/v2 decoder.
        .executableTarget(name: "fuzz-proxy-protocol", dependencies: ["FuzzSupport", "Proxy", "Core"], path: "fuzz/Sources/fuzz-proxy-protocol", swiftSettings: strict),
        // libFuzzer entry point for the QUIC packet path: datagram split,
        // headers, Initial unprotection, frames.
        .executableTarget(name: "fuzz-quic-packet", dependencies: ["FuzzSupport", "QUIC", "Core"], path: "fuzz/Sources/fuzz-quic-packet",
                          swiftSettings: strict),

        // libFuzzer entry points for WebSocket: frames, masking and UTF-8;
        // permessage-deflate; the handshake and extension-list readers.
        .executableTarget(name: "fuzz-ws-frames", dependencies: ["FuzzSupport", "WebSocket", "Core"], path: "fuzz/Sources/fuzz-ws-frames",
                          swiftSettings: strict),
        .executableTarget(name: "fuzz-ws-deflate", dependencies: ["FuzzSupport", "WebSocket", "Core"], path: "fuzz/Sources/fuzz-ws-deflate",
                          swiftSettings: strict),
        .executableTarget(name: "fuzz-ws-handshake", dependencies: ["FuzzSupport", "WebSocket", "Core"], path: "fuzz/Sources/fuzz-ws-handshake",
                          swiftSettings: strict),

        // Counts a thread's mallocs (interposed for the test executable), for
        // the allocation-count tests.
        .target(name: "AllocationCounter", path: "Tests/AllocationCounter"),
        .testTarget(name: "QUICTests", dependencies: ["QUIC", "Core", "AllocationCounter"], swiftSettings: strict),
        .testTarget(name: "TLSTests", dependencies: ["TLS", "QUIC", "Core"], exclude: ["Fixtures"], swiftSettings: strict),
        .testTarget(name: "CoreTests", dependencies: ["Core"], swiftSettings: strict),
        .testTarget(name: "HTTP1Tests", dependencies: ["HTTP1", "Core", "AllocationCounter"], swiftSettings: strict),
        .testTarget(name: "HTTPFieldsTests", dependencies: ["HTTPFields", "Core"], swiftSettings: strict),
        .testTarget(name: "HTTP2Tests", dependencies: ["HTTP2", "Core", "AllocationCounter"], swiftSettings: strict),
        .testTarget(name: "HTTP3Tests", dependencies: ["HTTP3", "HTTPFields", "Core"], swiftSettings: strict),
        .testTarget(name: "ExchangesTests", dependencies: ["Exchanges", "Core"], swiftSettings: strict),
        .testTarget(name: "WebSocketTests", dependencies: ["WebSocket", "Core", "AllocationCounter"], swiftSettings: strict),
        .testTarget(name: "ProxyTests", dependencies: ["Proxy", "Core"], swiftSettings: strict),
        .testTarget(name: "OptionsTests", dependencies: ["Options", "Proxy", "Core"], swiftSettings: strict),
        .testTarget(name: "SupervisionTests", dependencies: ["Supervision", "Core"], swiftSettings: strict),
    ]
)
