// libFuzzer target for permessage-deflate (RFC 7692 §7.2): the bounded
// inflater and the deflater (see fuzz/README.md).
//
// Byte 0 configures: bits 0–2 the client's window (8 + n bits; 7: not
// answered, 15), bit 3 no context takeover, bit 4 text messages, bits 6–7
// the message limit (65536, 16, 256 or 4096 bytes, so short inputs reach
// 1009), bit 5 the mode. Byte 1 derives the split point (and the
// compression level). The rest is messages separated by `ff fe`.
//
//  * Inflate (bit 5 clear): each message is compressed payload from a
//    client, inflated whole, split in two at a derived point, and a byte at
//    a time (inputs up to 512 bytes). Whatever the input, no message comes
//    out longer than the limit; errors are 1009, 1007 (text only) or 1002;
//    a text message that comes out is valid UTF-8 (standard library
//    validator); and the three runs agree on every message (output or
//    failure; 1009 and 1007 may trade places, since which of the two is
//    seen first depends on how much output one zlib call produced). With
//    a window under 2^15 bits, a client that refers further back than its
//    agreed window (RFC 7692 §7.1.2.2 forbids it) may see its message
//    refused with 1002 in one run and inflated (or refused later, say with
//    1007) in another: zlib resolves a distance into output of the same
//    call even past the window, and checks the window only across calls
//    (the campaigns' findings, seeds `window-9-distance-beyond-window` and
//    `window-9-distance-then-bad-utf8`). The runs then diverge; memory
//    stays bounded either way.
//  * Round trip (bit 5 set): each message is deflated by `MessageDeflater`
//    (window 9–15, the same context takeover on both sides) and inflated
//    in two pieces by `MessageInflater`: inflate(deflate(x)) == x when x fits
//    the limit (and is UTF-8, for text), 1009 when it does not, 1007 for
//    text that is not UTF-8; the compressed size stays within
//    `MessageDeflater.bound`.
//
// Built with -D FUZZING, -parse-as-library and -sanitize=fuzzer this file
// defines LLVMFuzzerTestOneInput and the entry point libFuzzer runs from.
// Built plainly it is a replay tool: `fuzz-ws-deflate FILE...`.

import Core
import FuzzSupport
import WebSocket

func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("invariant broken: \(message())") }
}

func referenceValidUTF8(_ bytes: some Collection<UInt8>) -> Bool {
    String(validating: bytes, as: UTF8.self) != nil
}

/// Splits at `ff fe`.
func messages(_ bytes: ArraySlice<UInt8>) -> [[UInt8]] {
    var out: [[UInt8]] = [], current: [UInt8] = []
    var i = bytes.startIndex
    while i < bytes.endIndex {
        if bytes[i] == 0xFF && i + 1 < bytes.endIndex && bytes[i + 1] == 0xFE {
            out.append(current); current = []; i += 2
        } else {
            current.append(bytes[i]); i += 1
        }
    }
    out.append(current)
    return out
}

enum Inflated: Equatable {
    case message([UInt8])
    case failed(WebSocketError)
}

/// Inflates each message, cut at `cuts(message)`, until one fails.
func inflateAll(_ compressed: [[UInt8]], parameters: PerMessageDeflateParameters, limit: Int, text: Bool,
                cuts: ([UInt8]) -> [Int]) -> [Inflated] {
    let inflater = MessageInflater(parameters: parameters, maxMessageLength: limit)
    var results: [Inflated] = []
    for message in compressed {
        let points = cuts(message) + [message.count]
        var start = 0
        do throws(WebSocketError) {
            var output: UnsafeRawBufferPointer?
            for (k, end) in points.enumerated() where end >= start {
                output = try message.withUnsafeBytes { b in
                    Result { () throws(WebSocketError) in
                        try inflater.inflate(UnsafeRawBufferPointer(rebasing: b[start..<end]), isFirst: k == 0,
                                             isLast: k == points.count - 1, text: text)
                    }
                }.get()
                check(k == points.count - 1 || output == nil, "a message came out before its last piece")
                start = end
            }
            guard let output else { fatalError("invariant broken: no message after the last piece") }
            check(output.count <= limit, "inflated \(output.count) bytes over the limit \(limit)")
            let bytes = Array(output)
            if text { check(referenceValidUTF8(bytes), "text message inflated to invalid UTF-8") }
            results.append(.message(bytes))
            if start % 3 == 0 { inflater.release() }  // released or kept, both must work
        } catch {
            let allowed: [WebSocketError] = text ? [.messageTooBig, .invalidUTF8, .compressedDataInvalid]
                : [.messageTooBig, .compressedDataInvalid]
            check(allowed.contains(error), "unexpected error \(error)")
            results.append(.failed(error))
            break
        }
    }
    return results
}

/// Equal, except that 1009 and 1007 may trade places, and that with a
/// window under 2^15 one run may fail with 1002 where the other went on
/// (a message, or a later error), the runs then diverging (see the file's
/// notes).
func agree(_ a: [Inflated], _ b: [Inflated], window: Int) -> Bool {
    for (x, y) in zip(a, b) where x != y {
        let swappable: [Inflated] = [.failed(.messageTooBig), .failed(.invalidUTF8)]
        if swappable.contains(x) && swappable.contains(y) { continue }
        let farBack = Inflated.failed(.compressedDataInvalid)
        if window < 15 && (x == farBack || y == farBack) { return true }
        return false
    }
    return a.count == b.count
}

func fuzzOne(_ input: UnsafeRawBufferPointer) {
    guard input.count >= 2 else { return }
    let config = input[0], derive = Int(input[1])
    let windowCode = Int(config & 7)
    let noTakeover = config & 8 != 0
    let text = config & 16 != 0
    let limit = [65536, 16, 256, 4096][Int(config >> 6)]
    let bytes = Array(input[2...])
    let split: ([UInt8]) -> [Int] = { m in [(derive &* 7919) % (m.count + 1)] }

    if config & 32 == 0 {
        let parameters = PerMessageDeflateParameters(clientNoContextTakeover: noTakeover,
                                                     clientMaxWindowBits: windowCode == 7 ? nil : 8 + windowCode)
        let compressed = messages(bytes[...])
        let whole = inflateAll(compressed, parameters: parameters, limit: limit, text: text) { _ in [] }
        let halves = inflateAll(compressed, parameters: parameters, limit: limit, text: text, cuts: split)
        let window = parameters.inflateWindowBits
        check(agree(whole, halves, window: window), "split differs from whole: \(whole) vs \(halves)")
        if bytes.count <= 512 {
            let bytewise = inflateAll(compressed, parameters: parameters, limit: limit, text: text) { Array(0..<$0.count) }
            check(agree(whole, bytewise, window: window), "byte at a time differs from whole: \(whole) vs \(bytewise)")
        }
        return
    }

    // Round trip: our deflater with the window the client asked us for,
    // inflated as a client would (the same window and takeover).
    let bits = 9 + windowCode % 7
    let deflater = MessageDeflater(parameters: PerMessageDeflateParameters(serverNoContextTakeover: noTakeover, serverMaxWindowBits: bits),
                                   level: derive % 10)
    let inflater = MessageInflater(parameters: PerMessageDeflateParameters(clientNoContextTakeover: noTakeover, clientMaxWindowBits: bits),
                                   maxMessageLength: limit)
    for message in messages(bytes[...]) {
        let compressed = message.withUnsafeBytes { deflater.compress($0) }
        check(compressed.count + MessageDeflater.tailLength <= MessageDeflater.bound(length: message.count),
              "\(message.count) bytes deflated to \(compressed.count) + 4, over the bound")
        let cut = split(compressed)[0]
        do throws(WebSocketError) {
            let output = try compressed.withUnsafeBytes { b in
                Result { () throws(WebSocketError) -> [UInt8] in
                    _ = try inflater.inflate(UnsafeRawBufferPointer(rebasing: b[..<cut]), isFirst: true, isLast: false, text: text)
                    let out = try inflater.inflate(UnsafeRawBufferPointer(rebasing: b[cut...]), isFirst: false, isLast: true, text: text)
                    return Array(out!)
                }
            }.get()
            check(output == message, "inflate(deflate(x)) != x for \(message.count) bytes")
            check(message.count <= limit, "a message over the limit came through")
            check(!text || referenceValidUTF8(message), "text that is not UTF-8 came through")
        } catch {
            let tooBig = message.count > limit
            let badText = text && !referenceValidUTF8(message)
            check((error == .messageTooBig && tooBig) || (error == .invalidUTF8 && badText),
                  "round trip of \(message.count) bytes failed with \(error)")
            return  // the connection is failed
        }
    }
}

#if FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzOne(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

/// libFuzzer's `main` for this executable (see FuzzSupport).
@_cdecl("fuzz_ws_deflate_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runLibFuzzer(argc, argv, fuzzTestOneInput)
}
#else
let replayStatus: Never = replay(CommandLine.arguments.dropFirst()) { _, bytes in fuzzOne(bytes) }
#endif
