// libFuzzer target for the ClientHello reader of compatible version
// negotiation (ClientHelloPeek: the client's transport parameters found in
// its first Initial CRYPTO bytes before TLS reads them, RFC 9368 §2.2).
//
// Byte 0 picks the shape: even, the rest is the handshake message as given;
// odd, the rest becomes the extensions block of a well-formed ClientHello
// envelope (type, lengths, random, session ID, suites, compression), so
// that inputs reach the extension walk. Beyond "no crash", it traps when an
// invariant breaks:
//
//  * a found range lies inside the message, behind a 0x39 extension header
//    whose length is the range's;
//  * every strict prefix of a message that is whole is `needMoreBytes`
//    (the reader never decides on bytes it has not got);
//  * bytes after the message change nothing (the message is
//    length-delimited: a coalesced next message must not leak in).
//
// Built with -D FUZZING, -parse-as-library and -sanitize=fuzzer this file
// defines LLVMFuzzerTestOneInput and the entry point libFuzzer runs from.
// Built plainly it is a replay tool: `fuzz-client-hello FILE...`.

import FuzzSupport
import QUIC

func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("invariant broken: \(message())") }
}

/// A ClientHello around `extensions` (RFC 8446 §4.1.2).
func envelope(_ extensions: UnsafeRawBufferPointer) -> [UInt8] {
    var body: [UInt8] = [0x03, 0x03] + [UInt8](repeating: 0x5a, count: 32)
    body += [0]  // legacy_session_id
    body += [0, 2, 0x13, 0x01]  // cipher_suites: TLS_AES_128_GCM_SHA256
    body += [1, 0]  // legacy_compression_methods: null
    let n = min(extensions.count, 0xFFFF)
    body += [UInt8(n >> 8), UInt8(n & 0xFF)] + extensions.prefix(n)
    return [1, UInt8(body.count >> 16), UInt8((body.count >> 8) & 0xFF), UInt8(body.count & 0xFF)] + body
}

func peek(_ bytes: [UInt8]) -> ClientHelloPeek {
    bytes.withUnsafeBytes { ClientHelloPeek.transportParameters(in: $0) }
}

func fuzzOne(_ input: UnsafeRawBufferPointer) {
    guard let first = input.first else { return }
    let rest = UnsafeRawBufferPointer(rebasing: input[1...])
    let message = first & 1 == 1 ? envelope(rest) : [UInt8](rest)
    let whole = peek(message)
    if case .transportParameters(let range) = whole {
        check(range.lowerBound >= 4 + 4 && range.upperBound <= message.count, "range \(range) outside the message")
        let header = Array(message[(range.lowerBound - 4)..<range.lowerBound])
        check(header[0] == 0 && header[1] == 0x39, "range not behind a 0x39 extension header")
        check(Int(header[2]) << 8 | Int(header[3]) == range.count, "extension length differs from the range")
    }
    guard message.count >= 4 else {
        check(whole == .needMoreBytes || (message.first != 1 && whole == .notFound), "short input decided")
        return
    }
    let declared = 4 + (Int(message[1]) << 16 | Int(message[2]) << 8 | Int(message[3]))
    guard message[0] == 1, message.count >= declared else { return }
    // Whole: its prefixes wait, and trailing bytes change nothing.
    let step = max(1, declared / 64)
    for cut in stride(from: 0, to: declared, by: step) {
        check(peek(Array(message[..<cut])) == .needMoreBytes, "prefix of \(cut) of \(declared) bytes decided")
    }
    let exact = peek(Array(message[..<declared]))
    check(exact == whole, "trailing bytes changed the outcome")
    check(peek(Array(message[..<declared]) + [1, 0, 0, 9, 0xFF]) == exact, "a following message leaked in")
}

#if FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzOne(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

/// libFuzzer's `main` for this executable (see FuzzSupport).
@_cdecl("fuzz_client_hello_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runLibFuzzer(argc, argv, fuzzTestOneInput)
}
#else
let replayStatus: Never = replay(CommandLine.arguments.dropFirst()) { _, bytes in fuzzOne(bytes) }
#endif
