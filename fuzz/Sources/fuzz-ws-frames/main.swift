// libFuzzer target for the WebSocket frame decoder (RFC 6455 §5), client
// masking (§5.3) and UTF-8 validation (§5.6, §8.1) (see fuzz/README.md).
//
// Byte 0 configures the decoder (bit 0: RSV1 allowed, as with
// permessage-deflate; bit 1: a small message limit, `byte >> 2` bytes, so
// short inputs reach 1009) and derives the split point; the rest is what a
// client sent. Beyond "no crash", it traps when an invariant breaks:
//
//  * every call consumes no more than it is given, and every span (message
//    piece, ping/pong payload, close reason) lies inside what it consumed;
//    only a message's last piece may be empty; pieces are text or binary,
//    compressed only when RSV1 is allowed; messages stay within the limit;
//  * the events (messages reassembled, control frames, the message in
//    progress at the end) and the error are the same whole, split at a
//    derived point, and a byte at a time (inputs up to 1024 bytes); with
//    bytes appended, the whole's events are a prefix and its error the same;
//  * re-encoding the events with `FrameEncoder`, masked with keys derived
//    from the input, decodes back to the same events without an error
//    (unmasking round-trips with the encoder and `Masking`);
//  * every complete uncompressed text message and close reason is valid
//    UTF-8 by the standard library's validator, and `UTF8Validator` agrees
//    with it on the raw bytes, whole and split at the derived point;
//  * `Masking.apply` equals the byte-by-byte XOR of §5.3, split at any
//    phase, and applied twice restores the input.
//
// Built with -D FUZZING, -parse-as-library and -sanitize=fuzzer this file
// defines LLVMFuzzerTestOneInput and the entry point libFuzzer runs from.
// Built plainly it is a replay tool: `fuzz-ws-frames FILE...`.

import Core
import FuzzSupport
import WebSocket

func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("invariant broken: \(message())") }
}

/// The reference verdict: the standard library's strict UTF-8 validation.
func referenceValidUTF8(_ bytes: some Collection<UInt8>) -> Bool {
    String(validating: bytes, as: UTF8.self) != nil
}

enum Event: Equatable {
    case message(opcode: UInt8, compressed: Bool, payload: [UInt8])
    case ping([UInt8])
    case pong([UInt8])
    case close(code: UInt16?, reason: [UInt8])
}

struct Outcome: Equatable {
    var events: [Event] = []
    /// The message in progress at the end (nil: none, or nothing of it reported yet).
    var partial: Event?
    var error: WebSocketError?
}

/// Feeds `bytes` cut at `cuts` to a fresh decoder through a glue that keeps
/// unconsumed bytes, as the connection does.
func decode(_ bytes: [UInt8], cuts: [Int], configuration: FrameDecoder.Configuration) -> Outcome {
    var decoder = FrameDecoder(configuration: configuration)
    var out = Outcome()
    var held: [UInt8] = []
    var opcode: UInt8 = 0, compressed = false, assembled: [UInt8] = [], started = false
    var start = 0
    do throws(WebSocketError) {
        for end in cuts + [bytes.count] where end >= start {
            held += bytes[start..<end]
            start = end
            while true {
                let result = held.withUnsafeMutableBytes { buffer -> Result<(DecodeStep, Event?), WebSocketError> in
                    let step: DecodeStep
                    do throws(WebSocketError) { step = try decoder.decode(buffer) } catch { return .failure(error) }
                    func copy(_ span: ByteSpan, within consumed: Int) -> [UInt8] {
                        check(span.start >= 0 && span.end <= consumed && consumed <= buffer.count,
                              "span \(span) outside the \(consumed) bytes consumed of \(buffer.count)")
                        return Array(buffer[span.start..<span.end])
                    }
                    switch step {
                    case .needMoreData(let n):
                        check(n >= 0 && n <= buffer.count, "consumed \(n) of \(buffer.count)")
                        return .success((step, nil))
                    case .event(let event, let n):
                        check(n > 0 && n <= buffer.count, "consumed \(n) of \(buffer.count) with an event")
                        switch event {
                        case .messageData(let piece):
                            check(piece.opcode == .text || piece.opcode == .binary, "piece opcode \(piece.opcode.rawValue)")
                            check(!piece.isCompressed || configuration.allowRSV1, "compressed piece without RSV1 allowed")
                            check(piece.isLast || piece.span.count > 0, "empty piece that is not the last")
                            let payload = copy(piece.span, within: n)
                            if piece.isFirst {
                                check(!started, "first piece inside a message")
                                opcode = piece.opcode.rawValue; compressed = piece.isCompressed; assembled = []; started = true
                            } else {
                                check(started && opcode == piece.opcode.rawValue && compressed == piece.isCompressed,
                                      "continuing piece does not match its message")
                            }
                            assembled += payload
                            check(assembled.count <= configuration.maxMessageLength, "message over the limit")
                            if piece.isLast {
                                started = false
                                return .success((step, .message(opcode: opcode, compressed: compressed, payload: assembled)))
                            }
                            return .success((step, nil))
                        case .pingReceived(let span):
                            check(span.count <= 125, "ping over 125 bytes")
                            return .success((step, .ping(copy(span, within: n))))
                        case .pongReceived(let span):
                            check(span.count <= 125, "pong over 125 bytes")
                            return .success((step, .pong(copy(span, within: n))))
                        case .closeReceived(let code, let reason):
                            check(code == nil ? reason.isEmpty : code!.isValidOnWire, "close code")
                            let bytes = copy(reason, within: n)
                            check(referenceValidUTF8(bytes), "close reason accepted but not UTF-8")
                            started = false  // the decoder drops a message in progress (§5.5.1)
                            return .success((step, .close(code: code?.rawValue, reason: bytes)))
                        }
                    }
                }
                let step = try result.get()
                if let event = step.1 { out.events.append(event) }
                switch step.0 {
                case .needMoreData(let n):
                    held.removeFirst(n)
                case .event(_, let n):
                    held.removeFirst(n)
                    continue
                }
                break
            }
        }
    } catch {
        out.error = error
    }
    // After an error the pieces reported before it depend on the split (a
    // bad UTF-8 byte fails the piece it is in), so only compare them without one.
    if started && out.error == nil { out.partial = .message(opcode: opcode, compressed: compressed, payload: assembled) }
    return out
}

/// A client frame: `FrameEncoder`'s header with the mask bit set, the key,
/// and the payload masked with it (§5.2, §5.3).
func appendClientFrame(opcode: Opcode, fin: Bool, rsv1: Bool, payload: [UInt8], key: MaskingKey, to out: inout [UInt8]) {
    var frame = [UInt8](repeating: 0, count: FrameEncoder.frameLength(payloadLength: payload.count))
    let header = frame.withUnsafeMutableBytes { buffer in
        payload.withUnsafeBytes { FrameEncoder.writeFrame(opcode: opcode, fin: fin, rsv1: rsv1, payload: $0, into: buffer) }
        - payload.count
    }
    frame[1] |= 0x80
    var masked = Array(frame[header...])
    masked.withUnsafeMutableBytes { Masking.apply($0, key: key, phase: 0) }
    out += frame[..<header]
    withUnsafeBytes(of: key.rawValue) { out += $0 }
    out += masked
}

/// The client stream that carries `outcome`'s events (no error).
func reencode(_ outcome: Outcome, keys: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    func key(_ i: Int) -> MaskingKey {
        keys.isEmpty ? MaskingKey(rawValue: 0)
            : MaskingKey(keys[i % keys.count], keys[(i + 1) % keys.count], keys[(i + 2) % keys.count], keys[(i + 3) % keys.count])
    }
    for (i, event) in (outcome.events + (outcome.partial.map { [$0] } ?? [])).enumerated() {
        let isPartial = i == outcome.events.count
        switch event {
        case .message(let opcode, let compressed, let payload):
            appendClientFrame(opcode: Opcode(rawValue: opcode), fin: !isPartial, rsv1: compressed, payload: payload, key: key(i), to: &out)
        case .ping(let payload):
            appendClientFrame(opcode: .ping, fin: true, rsv1: false, payload: payload, key: key(i), to: &out)
        case .pong(let payload):
            appendClientFrame(opcode: .pong, fin: true, rsv1: false, payload: payload, key: key(i), to: &out)
        case .close(let code, let reason):
            var payload: [UInt8] = []
            if let code { payload = [UInt8(code >> 8), UInt8(code & 0xFF)] + reason }
            appendClientFrame(opcode: .close, fin: true, rsv1: false, payload: payload, key: key(i), to: &out)
        }
    }
    return out
}

func checkUTF8(_ bytes: [UInt8], split: Int) {
    let reference = referenceValidUTF8(bytes)
    let whole = bytes.withUnsafeBytes { UTF8Validator.isValid($0) }
    check(whole == reference, "UTF8Validator says \(whole), the reference \(reference)")
    var validator = UTF8Validator()
    let parts = bytes.withUnsafeBytes { b in
        validator.validate(UnsafeRawBufferPointer(rebasing: b[..<split]))
            && validator.validate(UnsafeRawBufferPointer(rebasing: b[split...])) && validator.isComplete
    }
    check(parts == reference, "UTF8Validator split at \(split) says \(parts), the reference \(reference)")
}

func checkMasking(_ bytes: [UInt8], split: Int) {
    guard bytes.count >= 4 else { return }
    let key = MaskingKey(bytes[0], bytes[1], bytes[2], bytes[3])
    let original = Array(bytes[4...])
    let cut = min(split, original.count)
    let expected = original.enumerated().map { $0.element ^ bytes[$0.offset & 3] }
    var whole = original, parts = original
    whole.withUnsafeMutableBytes { Masking.apply($0, key: key, phase: 0) }
    parts.withUnsafeMutableBytes { b in
        Masking.apply(UnsafeMutableRawBufferPointer(rebasing: b[..<cut]), key: key, phase: 0)
        Masking.apply(UnsafeMutableRawBufferPointer(rebasing: b[cut...]), key: key, phase: cut)
    }
    check(whole == expected, "Masking.apply differs from §5.3's XOR")
    check(parts == expected, "Masking.apply split at phase \(cut) differs")
    whole.withUnsafeMutableBytes { Masking.apply($0, key: key, phase: 0) }
    check(whole == original, "masking twice does not restore the input")
}

func fuzzOne(_ input: UnsafeRawBufferPointer) {
    guard let first = input.first else { return }
    let configuration = FrameDecoder.Configuration(maxMessageLength: first & 2 != 0 ? Int(first >> 2) : 1 << 20,
                                                   allowRSV1: first & 1 != 0)
    let bytes = Array(input[1...])
    let split = (Int(first) &* 7919) % (bytes.count + 1)
    let whole = decode(bytes, cuts: [], configuration: configuration)
    check(decode(bytes, cuts: [split], configuration: configuration) == whole, "split at \(split) differs from whole")
    if bytes.count <= 1024 {
        check(decode(bytes, cuts: Array(0..<bytes.count), configuration: configuration) == whole, "byte at a time differs from whole")
    }
    let longer = decode(bytes + bytes, cuts: [], configuration: configuration)
    check(longer.events.starts(with: whole.events), "appended bytes change earlier events")
    if whole.error != nil { check(longer.error == whole.error, "appended bytes change the error") }

    for event in whole.events {
        if case .message(let opcode, false, let payload) = event, opcode == Opcode.text.rawValue {
            check(referenceValidUTF8(payload), "text message accepted but not UTF-8")
        }
    }
    let again = reencode(whole, keys: bytes)
    let redecoded = decode(again, cuts: [], configuration: configuration)
    check(redecoded.error == nil, "re-encoded events fail: \(String(describing: redecoded.error))")
    check(redecoded.events == whole.events && redecoded.partial == whole.partial, "re-encoded events decode differently")

    checkUTF8(bytes, split: split)
    checkMasking(bytes, split: split)
}

#if FUZZING
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTestOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    fuzzOne(UnsafeRawBufferPointer(start: data, count: size))
    return 0
}

/// libFuzzer's `main` for this executable (see FuzzSupport).
@_cdecl("fuzz_ws_frames_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    runLibFuzzer(argc, argv, fuzzTestOneInput)
}
#else
let replayStatus: Never = replay(CommandLine.arguments.dropFirst()) { _, bytes in fuzzOne(bytes) }
#endif
