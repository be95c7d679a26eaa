// libFuzzer target for the PROXY protocol v1/v2 decoder (see fuzz/README.md).
//
// Byte 0 picks the v2 length cap (the default 4096, or a small one so short
// inputs reach `v2TooLong`); the rest is the start of a connection. Beyond
// "no crash", it traps when an invariant breaks:
//
//  * a complete header's length is within the input and within its bound
//    (107 bytes for v1, 16 + the cap for v2); its address spans and TLV
//    region lie inside the header, and walking the TLVs never overruns;
//  * "need more" asks for more than it has, and never for more than the
//    header turns out to take;
//  * the verdict is the same whole, at a split point derived from the
//    input, a byte at a time (for the first 128 bytes), read as a worker
//    reads (as much as the decoder asks for), and with bytes appended;
//  * end of input inside a header is `truncated`;
//  * `ProxyHeaderReader`, run over a modelled socket (bytes arriving and
//    peeked in sizes derived from the input), takes exactly the header off
//    the socket and reaches the verdict of the whole; while incomplete it
//    has taken every byte that came and no more.
//  * `ProxyHeaderDecoder.startsWithSignature` holds for every decodable
//    header, and a signature-less input of 12 bytes or more never decodes.
//
// Built with -D FUZZING, -parse-as-library and -sanitize=fuzzer this file
// defines LLVMFuzzerTestOneInput and the entry point libFuzzer runs from.
// Built plainly it is a replay tool: `fuzz-proxy-protocol FILE...`.

import Core
import FuzzSupport
import Proxy

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("invariant broken: \(message())") }
}

func within(_ span: ByteSpan, _ limit: Int) -> Bool {
    span.offset >= 0 && span.length >= 0 && span.end <= limit
}

func checkHeader(_ h: ProxyHeader, _ bytes: UnsafeRawBufferPointer, _ decoder: ProxyHeaderDecoder) {
    check(h.length <= bytes.count, "length \(h.length) past the input of \(bytes.count)")
    switch h.version {
    case .v1:
        check(h.length >= 15 && h.length <= 107, "v1 length \(h.length)")
        check(bytes[h.length - 2] == 0x0D && bytes[h.length - 1] == 0x0A, "v1 without CRLF")
        check(h.tlvs == .empty && h.ssl == nil, "v1 with TLVs")
    case .v2:
        check(h.length >= 16 && h.length <= 16 + decoder.maxV2Length, "v2 length \(h.length)")
    }
    check(within(h.tlvs, h.length), "TLV region \(h.tlvs) outside the header")
    if case .unix(let s, let d) = h.endpoints {
        check(within(s, h.length) && within(d, h.length) && s.length <= 108 && d.length <= 108, "unix spans")
    }
    if h.command == .local { check(h.endpoints == .keepSocket, "LOCAL with addresses") }
    var tlvs = ProxyTLVs(bytes, h.tlvs)
    var sawSSL = false
    while let t = tlvs.next() {
        check(within(t.value, h.tlvs.end) && t.value.start >= h.tlvs.start + 3, "TLV value outside the region")
        if t.type == ProxyTLVs.typeSSL { sawSSL = true }
    }
    check(!tlvs.overran, "TLV walk overran a decoded header")
    check(sawSSL == (h.ssl != nil), "SSL TLV noted wrongly")
}

func prefix(_ bytes: UnsafeRawBufferPointer, _ n: Int) -> UnsafeRawBufferPointer {
    UnsafeRawBufferPointer(rebasing: bytes[0..<n])
}

/// A prefix of `cut` bytes either agrees with the whole or asks for more,
/// and no more than the header needs.
func checkPrefix(_ decoder: ProxyHeaderDecoder, _ bytes: UnsafeRawBufferPointer, _ cut: Int, _ whole: ProxyHeaderResult) {
    let got = decoder.decode(prefix(bytes, cut))
    switch got {
    case .needMoreData(let atLeast):
        check(atLeast > cut, "asks for \(atLeast) with \(cut)")
        if case .complete(let h) = whole {
            check(atLeast <= h.length, "asks for \(atLeast) of a \(h.length)-byte header")
        }
        check(decoder.decode(prefix(bytes, cut), endOfInput: true) == .failed(.truncated), "EOF not truncated")
    default:
        check(got == whole, "prefix of \(cut) decided \(got), whole \(whole)")
    }
}

func fuzzOne(_ input: UnsafeRawBufferPointer) {
    guard let first = input.first else { return }
    let decoder = ProxyHeaderDecoder(maxV2Length: first & 1 == 0 ? 4096 : Int(first >> 1))
    let bytes = UnsafeRawBufferPointer(rebasing: input[1...])

    let whole = decoder.decode(bytes)
    check(decoder.decode(bytes) == whole, "decoding twice differs")
    switch whole {
    case .complete(let h):
        checkHeader(h, bytes, decoder)
        // Bytes after the header change nothing.
        var longer = Array(bytes)
        longer += [0x0D, 0x0A, 0x00, 0x50, 0xFF]
        check(longer.withUnsafeBytes { decoder.decode($0) } == whole, "extra bytes changed the verdict")
        check(decoder.decode(bytes, endOfInput: true) == whole, "EOF after a complete header changed it")
    case .needMoreData(let atLeast):
        check(atLeast > bytes.count, "asks for \(atLeast) with \(bytes.count)")
        check(decoder.decode(bytes, endOfInput: true) == .failed(.truncated), "EOF not truncated")
    case .failed:
        break
    }

    // A split point derived from the input.
    let cut = bytes.isEmpty ? 0 : (Int(bytes[bytes.count / 2]) &* 257 &+ bytes.count) % (bytes.count + 1)
    checkPrefix(decoder, bytes, cut, whole)
    // A byte at a time, over the first 128 bytes.
    for n in 0..<min(bytes.count, 128) { checkPrefix(decoder, bytes, n, whole) }
    checkReader(decoder, bytes, whole)
    checkSignature(bytes, whole)
    // As a worker reads: as much as asked for, until a verdict.
    var have = 0
    while true {
        let got = decoder.decode(prefix(bytes, have))
        if case .needMoreData(let atLeast) = got, have < bytes.count {
            have = min(atLeast, bytes.count)
            continue
        }
        check(got == whole, "reading as asked decided \(got), whole \(whole)")
        break
    }
}

/// The worker's peek-and-consume loop over a modelled receive queue.
func checkReader(_ decoder: ProxyHeaderDecoder, _ bytes: UnsafeRawBufferPointer, _ whole: ProxyHeaderResult) {
    let reader = ProxyHeaderReader(decoder: decoder)
    let chunk = 1 + Int(bytes.first ?? 0) % 23
    let peekSize = 1 + Int(bytes.last ?? 0) % 131
    var arrived = 0
    var read = 0
    var seen: [UInt8] = []
    var rounds = 0
    while true {
        rounds += 1
        check(rounds <= bytes.count + 2, "the reader does not progress")
        arrived = min(arrived + chunk, bytes.count)
        let n = min(arrived - read, peekSize, reader.peekLimit(taken: read))
        seen = Array(bytes[0..<read]) + Array(bytes[read..<(read + n)])
        let step = seen.withUnsafeBytes { reader.next($0, taken: read, peerClosed: false) }
        switch step {
        case .consume(let k):
            check(k == n, "an incomplete header takes \(k) of \(n) peeked")
            read += k
            if n == 0 && arrived == bytes.count {
                guard case .needMoreData = whole else {
                    return check(false, "waits at \(read) where the whole is \(whole)")
                }
                check(read == bytes.count, "waits having taken \(read) of \(bytes.count)")
                return
            }
        case .complete(let h, let k):
            check(k >= 0 && k <= n, "consumes \(k) of \(n) peeked")
            check(read + k == h.length, "took \(read + k) for a \(h.length)-byte header")
            check(whole == .complete(h), "the reader decided \(h), the whole \(whole)")
            return
        case .failed(let error):
            check(whole == .failed(error), "the reader refused with \(error), the whole \(whole)")
            return
        }
    }
}

/// A header can only start with a signature.
func checkSignature(_ bytes: UnsafeRawBufferPointer, _ whole: ProxyHeaderResult) {
    let signed = ProxyHeaderDecoder.startsWithSignature(bytes)
    if case .complete = whole { check(signed, "a decoded header without a signature") }
    if !signed && bytes.count >= 12 {
        if case .failed = whole { return }
        check(false, "no signature in \(bytes.count) bytes, yet \(whole)")
    }
}

#if FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzOne(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

/// libFuzzer's `main` for this executable (see FuzzSupport).
@_cdecl("fuzz_proxy_protocol_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runLibFuzzer(argc, argv, fuzz)
}
#else
// A declaration rather than statements, so the file also parses in the
// -parse-as-library mode of the fuzzing build (where this branch is
// inactive but must still be valid library code). In a plain build it is
// top-level code and runs at start-up.
let replayStatus: Never = replay(CommandLine.arguments.dropFirst()) { _, bytes in fuzzOne(bytes) }
#endif
