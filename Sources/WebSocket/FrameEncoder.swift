/// Server frames (RFC 6455 §5.2), written into the caller's buffer.
///
/// Theory of operation. Size first, write once (STYLE §2): every writer has
/// a length function, the caller reserves that many bytes and the writer
/// fills them in one pass, returning the count written. Server frames are
/// never masked — §5.1: "A server MUST NOT mask any frames that it sends to
/// the client" — so a header is 2, 4 or 10 bytes, and lengths always use the
/// minimal encoding (§5.2: "the minimal number of bytes MUST be used").
///
/// A large message can be sent as one frame, or as a sequence of frames
/// (§5.4): the first with the message's opcode, the rest `.continuation`,
/// FIN set only on the last. `writeHeader` alone serves a caller that
/// writes the payload itself (e.g. straight from a Python `bytes` object);
/// `writeFrame` copies it.
///
/// Misuse is a local bug, not a peer error, so it is a precondition failure:
/// a control payload over 125 bytes (§5.5), a close reason over 123 bytes
/// (§5.5.1), a close code that must not be sent (§7.4.1), a buffer too small.
/// The caller guarantees a text payload or close reason is UTF-8 (§5.6).
///
/// Usage (a message, a pong answering a ping):
///
///     let n = FrameEncoder.frameLength(payloadLength: payload.count)
///     out.reserve(n); out.commit(FrameEncoder.writeFrame(opcode: .text, payload: payload, into: out.writable))
///     FrameEncoder.writePong(payload: pingPayload, into: out.writable)   // ≤ 127 bytes
public enum FrameEncoder {
    /// §5.5: "All control frames MUST have a payload length of 125 bytes or less".
    public static let maxControlPayloadLength = 125
    /// The 2-byte status code leaves 123 bytes of a close frame for the reason.
    public static let maxCloseReasonLength = 123

    /// Header bytes for a server frame carrying `payloadLength` bytes.
    @inlinable
    public static func headerLength(payloadLength: Int) -> Int {
        payloadLength < 126 ? 2 : payloadLength <= 0xFFFF ? 4 : 10
    }

    /// Total bytes of a server frame carrying `payloadLength` bytes.
    @inlinable
    public static func frameLength(payloadLength: Int) -> Int {
        headerLength(payloadLength: payloadLength) + payloadLength
    }

    /// Writes a frame header at the start of `output`; returns its length.
    /// `rsv1` marks a compressed message's first frame (RFC 7692 §6).
    @discardableResult
    public static func writeHeader(opcode: Opcode, fin: Bool, rsv1: Bool = false, payloadLength: Int,
                                   into output: UnsafeMutableRawBufferPointer) -> Int {
        precondition(opcode.isKnown && payloadLength >= 0)
        precondition(!opcode.isControl || (fin && payloadLength <= maxControlPayloadLength && !rsv1))
        let length = headerLength(payloadLength: payloadLength)
        precondition(output.count >= length)
        output[0] = (fin ? 0x80 : 0) | (rsv1 ? 0x40 : 0) | opcode.rawValue
        switch length {
        case 2:
            output[1] = UInt8(payloadLength)
        case 4:
            output[1] = 126
            output[2] = UInt8(truncatingIfNeeded: payloadLength >> 8)
            output[3] = UInt8(truncatingIfNeeded: payloadLength)
        default:
            output[1] = 127
            let value = UInt64(payloadLength)  // < 2^63: the high bit stays 0 (§5.2)
            for k in 0..<8 { output[2 + k] = UInt8(truncatingIfNeeded: value >> UInt64(56 - 8 * k)) }
        }
        return length
    }

    /// Writes a whole frame (header and a copy of `payload`); returns
    /// `frameLength(payloadLength: payload.count)`.
    @discardableResult
    public static func writeFrame(opcode: Opcode, fin: Bool = true, rsv1: Bool = false, payload: UnsafeRawBufferPointer,
                                  into output: UnsafeMutableRawBufferPointer) -> Int {
        let header = writeHeader(opcode: opcode, fin: fin, rsv1: rsv1, payloadLength: payload.count, into: output)
        precondition(output.count >= header + payload.count)
        if let source = payload.baseAddress, payload.count > 0 {
            (output.baseAddress! + header).copyMemory(from: source, byteCount: payload.count)
        }
        return header + payload.count
    }

    /// Bytes of a close frame with `code` (nil: empty body) and a reason of
    /// `reasonLength` bytes (which requires a code).
    @inlinable
    public static func closeFrameLength(code: CloseCode?, reasonLength: Int) -> Int {
        code == nil ? 2 : 2 + 2 + reasonLength
    }

    /// Writes a close frame (§5.5.1): an empty body when `code` is nil,
    /// otherwise the code big-endian and the UTF-8 `reason`.
    @discardableResult
    public static func writeClose(code: CloseCode?, reason: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0),
                                  into output: UnsafeMutableRawBufferPointer) -> Int {
        guard let code else {
            precondition(reason.isEmpty, "a close reason needs a code (§5.5.1)")
            return writeHeader(opcode: .close, fin: true, payloadLength: 0, into: output)
        }
        precondition(code.isValidOnWire, "code must not be sent (§7.4.1)")
        precondition(reason.count <= maxCloseReasonLength)
        let length = closeFrameLength(code: code, reasonLength: reason.count)
        precondition(output.count >= length)
        writeHeader(opcode: .close, fin: true, payloadLength: 2 + reason.count, into: output)
        output[2] = UInt8(truncatingIfNeeded: code.rawValue >> 8)
        output[3] = UInt8(truncatingIfNeeded: code.rawValue)
        if let source = reason.baseAddress, reason.count > 0 {
            (output.baseAddress! + 4).copyMemory(from: source, byteCount: reason.count)
        }
        return length
    }

    /// Writes a close frame whose reason is the error's static description.
    @discardableResult
    public static func writeClose(for error: WebSocketError, into output: UnsafeMutableRawBufferPointer) -> Int {
        error.reason.withUTF8Buffer { reason in
            writeClose(code: error.closeCode, reason: UnsafeRawBufferPointer(reason), into: output)
        }
    }

    /// Writes a ping (§5.5.2); `payload` ≤ 125 bytes.
    @discardableResult
    public static func writePing(payload: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int {
        writeFrame(opcode: .ping, payload: payload, into: output)
    }

    /// Writes a pong (§5.5.3): in answer to a ping, "Application data" MUST be
    /// the ping's, so pass the ping's payload unchanged.
    @discardableResult
    public static func writePong(payload: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int {
        writeFrame(opcode: .pong, payload: payload, into: output)
    }
}
