import Core
import XCTest

@testable import WebSocket

// Client frames built by hand, independently of the encoder under test
// (which only writes unmasked server frames), and a driver that feeds every
// input three ways (STYLE §7) — whole, split at every boundary (small inputs)
// and one byte at a time, and followed by an extra byte — insisting on the
// same outcome each time.

extension Array where Element == UInt8 {
    init(_ text: String) { self = Array(text.utf8) }
}

/// The RFC 6455 §5.7 example key.
let exampleMask: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]

enum LengthForm { case minimal, sixteen, sixtyFour }

/// A client frame: FIN, RSV bits (already shifted: 0x40, 0x20, 0x10), opcode,
/// masked with `mask` unless it is nil, length in the given form.
func clientFrame(_ opcode: UInt8, _ payload: [UInt8], fin: Bool = true, rsv: UInt8 = 0,
                 mask: [UInt8]? = exampleMask, length: LengthForm = .minimal) -> [UInt8] {
    var out: [UInt8] = [(fin ? 0x80 : 0) | rsv | opcode]
    let maskBit: UInt8 = mask == nil ? 0 : 0x80
    let n = payload.count
    let form: LengthForm = length == .minimal ? (n < 126 ? .minimal : n <= 0xFFFF ? .sixteen : .sixtyFour) : length
    switch form {
    case .minimal:
        out.append(maskBit | UInt8(n))
    case .sixteen:
        out += [maskBit | 126, UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)]
    case .sixtyFour:
        out.append(maskBit | 127)
        for k in 0..<8 { out.append(UInt8(UInt64(n) >> UInt64(56 - 8 * k) & 0xFF)) }
    }
    if let mask {
        out += mask
        for (i, b) in payload.enumerated() { out.append(b ^ mask[i % 4]) }
    } else {
        out += payload
    }
    return out
}

func closePayload(_ code: UInt16, _ reason: [UInt8] = []) -> [UInt8] {
    [UInt8(code >> 8), UInt8(code & 0xFF)] + reason
}

/// What a decode produced, with data pieces assembled into messages so
/// outcomes compare across splits.
enum Seen: Equatable, CustomStringConvertible {
    case text([UInt8])
    case binary([UInt8])
    case ping([UInt8])
    case pong([UInt8])
    case close(UInt16?, [UInt8])

    var description: String {
        switch self {
        case .text(let b): return "text(\(String(decoding: b, as: UTF8.self)))"
        case .binary(let b): return "binary(\(b.count) bytes)"
        case .ping(let b): return "ping(\(b))"
        case .pong(let b): return "pong(\(b))"
        case .close(let c, let r): return "close(\(c.map(String.init) ?? "nil"), \(String(decoding: r, as: UTF8.self)))"
        }
    }
}

struct DecodeOutcome: Equatable, CustomStringConvertible {
    var events: [Seen] = []
    var error: WebSocketError?
    /// Message pieces seen with wrong first/last flags (should stay empty).
    var flagProblems: [String] = []

    var description: String { "\(events) error: \(error.map { "\($0)" } ?? "none") \(flagProblems)" }
}

/// Runs a decoder over `chunks` in order, keeping unconsumed bytes like a
/// read buffer would.
func decode(_ chunks: [[UInt8]], configuration: FrameDecoder.Configuration = .init()) -> DecodeOutcome {
    var decoder = FrameDecoder(configuration: configuration)
    var buffer: [UInt8] = []
    var outcome = DecodeOutcome()
    var pending: (opcode: Opcode, bytes: [UInt8])?
    for chunk in chunks {
        buffer += chunk
        while true {
            let result = buffer.withUnsafeMutableBytes { bytes in
                Result { () throws(WebSocketError) in try decoder.decode(bytes) }
            }
            let step: DecodeStep
            switch result {
            case .success(let s): step = s
            case .failure(let error):
                outcome.error = error
                return outcome
            }
            switch step {
            case .needMoreData(let consumed):
                buffer.removeFirst(consumed)
            case .event(let event, let consumed):
                func bytes(_ span: ByteSpan) -> [UInt8] { Array(buffer[span.start..<span.end]) }
                switch event {
                case .messageData(let piece):
                    if piece.isFirst != (pending == nil) { outcome.flagProblems.append("isFirst wrong") }
                    if piece.span.isEmpty && !piece.isLast { outcome.flagProblems.append("empty non-final piece") }
                    var current = pending ?? (piece.opcode, [])
                    if current.opcode != piece.opcode { outcome.flagProblems.append("opcode changed") }
                    current.bytes += bytes(piece.span)
                    if piece.isLast {
                        outcome.events.append(current.opcode == .text ? .text(current.bytes) : .binary(current.bytes))
                        pending = nil
                    } else {
                        pending = current
                    }
                case .pingReceived(let span): outcome.events.append(.ping(bytes(span)))
                case .pongReceived(let span): outcome.events.append(.pong(bytes(span)))
                case .closeReceived(let code, let reason): outcome.events.append(.close(code?.rawValue, bytes(reason)))
                }
                buffer.removeFirst(consumed)
                continue
            }
            break
        }
    }
    return outcome
}

/// Feeds `input` whole, split at every boundary (if short), one byte at a
/// time, and followed by one extra byte (the start of another frame, which
/// decides nothing alone) and asserts each outcome equals `expected` plus
/// `error`.
func assertDecodes(_ input: [UInt8], to expected: [Seen], error: WebSocketError? = nil,
                   configuration: FrameDecoder.Configuration = .init(),
                   file: StaticString = #filePath, line: UInt = #line) {
    let want = DecodeOutcome(events: expected, error: error)
    XCTAssertEqual(decode([input], configuration: configuration), want, "whole", file: file, line: line)
    XCTAssertEqual(decode(input.map { [$0] }, configuration: configuration), want, "byte at a time", file: file, line: line)
    XCTAssertEqual(decode([input + [0x89]], configuration: configuration), want, "with a trailing byte", file: file, line: line)
    if input.count <= 300 {
        for cut in 1..<max(1, input.count) {
            let outcome = decode([Array(input[..<cut]), Array(input[cut...])], configuration: configuration)
            XCTAssertEqual(outcome, want, "split at \(cut)", file: file, line: line)
            if outcome != want { break }
        }
    }
}

func assertFails(_ input: [UInt8], with error: WebSocketError, after expected: [Seen] = [],
                 configuration: FrameDecoder.Configuration = .init(),
                 file: StaticString = #filePath, line: UInt = #line) {
    assertDecodes(input, to: expected, error: error, configuration: configuration, file: file, line: line)
}

/// One `decode` call over the whole of `bytes` (unmasking them in place).
func decodeOnce(_ decoder: inout FrameDecoder, _ bytes: inout [UInt8], from start: Int = 0) -> Result<DecodeStep, WebSocketError> {
    bytes.withUnsafeMutableBytes { b in
        Result { () throws(WebSocketError) in try decoder.decode(UnsafeMutableRawBufferPointer(rebasing: b[start...])) }
    }
}
