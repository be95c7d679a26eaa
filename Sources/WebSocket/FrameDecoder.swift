import Core

/// Server-side, sans-I/O decoder of client frames (RFC 6455 §5).
///
///      0                   1                   2                   3
///      0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
///     +-+-+-+-+-------+-+-------------+-------------------------------+
///     |F|R|R|R| opcode|M| Payload len |    Extended payload length    |
///     |I|S|S|S|  (4)  |A|     (7)     |             (16/64)           |
///     |N|V|V|V|       |S|             |   (if payload len==126/127)   |
///     | |1|2|3|       |K|             |                               |
///     +-+-+-+-+-------+-+-------------+ - - - - - - - - - - - - - - - +
///     |     Extended payload length continued, if payload len == 127  |
///     + - - - - - - - - - - - - - - - +-------------------------------+
///     |                               |Masking-key, if MASK set to 1  |
///     +-------------------------------+-------------------------------+
///     | Masking-key (continued)       |          Payload Data         |
///     +-------------------------------- - - - - - - - - - - - - - - - +
///
/// Theory of operation. `decode(bytes)` reads from the start of the caller's
/// buffer and returns one `DecodeStep`: an event plus the bytes it used, or
/// "need more data" plus the bytes it used anyway (frame headers are
/// consumed as soon as they are complete; a header cut short is left in
/// place — commit only on success). The caller drops `consumed` bytes, and
/// calls again, with more input appended when it was told to. Two read
/// modes:
///
///     header ──data frame──> payload(remaining, mask, phase) ──0 left──> header
///        │ ──ping/pong/close: whole frame present──> event ──> header / closed
///        └ any rule broken ──> failed(error)   (sticky: every later call throws it)
///
/// - Data payload is handed out as soon as any is available, unmasked *in
///   place* (the input buffer is mutable for that reason; nothing is copied)
///   and reported as a `MessagePiece` span. Bytes are unmasked only when
///   they are reported consumed, so re-offering unconsumed bytes is safe.
/// - Control frames (≤ 125 bytes of payload) are reported only once whole,
///   so a close frame's code and reason can be checked first.
/// - After a close frame every further byte is consumed and ignored: the
///   peer "MUST NOT send any more data frames after sending a Close frame"
///   (§5.5.1), and the close handshake (`CloseHandshake`) decides the rest.
///
/// Checks run in a fixed order on the first two bytes (reserved bits,
/// opcode, control-frame rules, mask, fragmentation sequence), then on the
/// extended length (minimal encoding, high bit), then the message size, so
/// the verdict for a byte string never depends on how it was split.
/// Errors carry their close code (`WebSocketError+Catalogue.swift`).
///
/// Usage:
///
///     var decoder = FrameDecoder(configuration: .init(maxMessageLength: limit))
///     do {
///         loop {
///             let input = UnsafeMutableRawBufferPointer(mutating: buffer.readable)
///             switch try decoder.decode(input) {
///             case .event(let event, let n): handle(event, input); buffer.readerIndex += n
///             case .needMoreData(let n): buffer.readerIndex += n; read more, then loop
///             }
///         }
///     } catch {   // WebSocketError
///         FrameEncoder.writeClose(for: error, into: out); flush; close the connection
///     }
///
/// `handle` must use an event's spans before the bytes are dropped or the
/// buffer compacted: a ping's payload is copied into the pong right away,
/// message pieces are copied out (to Python, or into an assembly buffer).
public struct FrameDecoder: Sendable {
    public struct Configuration: Sendable {
        /// The largest message accepted, summed over its frames' payload
        /// lengths and checked against each header before any payload is
        /// read. A message that would exceed it fails the connection with
        /// 1009 (§7.4.1, §10.4). Default: 16 MiB, `--ws-max-message`.
        public var maxMessageLength: Int
        /// Whether RSV1 may be set on the first frame of a data message:
        /// true once permessage-deflate is negotiated (RFC 7692 §6). RSV2
        /// and RSV3 are always refused.
        public var allowRSV1: Bool

        public static let defaultMaxMessageLength = 16 << 20

        public init(maxMessageLength: Int = Configuration.defaultMaxMessageLength, allowRSV1: Bool = false) {
            precondition(maxMessageLength >= 0)
            self.maxMessageLength = maxMessageLength
            self.allowRSV1 = allowRSV1
        }
    }

    private enum ReadMode: Sendable {
        case header
        case payload(remaining: Int, fin: Bool, key: MaskingKey, phase: Int)
        case closed
        case failed(WebSocketError)
    }

    /// The message a data frame continues; exists from a data frame with
    /// FIN clear until the frame with FIN set.
    private struct Message: Sendable {
        var opcode: Opcode
        var length = 0
        var isCompressed: Bool
        var pieceReported = false
        var utf8 = UTF8Validator()
    }

    public let configuration: Configuration
    private var mode = ReadMode.header
    private var message: Message?

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// A close frame was received; later input is ignored.
    public var isClosed: Bool {
        if case .closed = mode { return true }
        return false
    }

    /// Decodes from the start of `bytes` (see the type's documentation).
    public mutating func decode(_ bytes: UnsafeMutableRawBufferPointer) throws(WebSocketError) -> DecodeStep {
        var position = 0
        while true {
            switch mode {
            case .failed(let error):
                throw error
            case .closed:
                return .needMoreData(consumed: bytes.count)
            case .header:
                let step: DecodeStep?
                do {
                    step = try decodeFrameStart(bytes, &position)
                } catch {
                    mode = .failed(error)
                    throw error
                }
                if let step { return step }
            case .payload(let remaining, let fin, let key, let phase):
                let available = min(remaining, bytes.count - position)
                if available == 0 && remaining > 0 { return .needMoreData(consumed: position) }
                let payload = UnsafeMutableRawBufferPointer(rebasing: bytes[position..<position + available])
                Masking.apply(payload, key: key, phase: phase)
                let left = remaining - available
                let isLast = fin && left == 0
                guard var current = message else { preconditionFailure("payload mode without a message") }
                if current.opcode == .text && !current.isCompressed {
                    // §8.1: fail as soon as the bytes cannot be UTF-8, and at
                    // the end of the message if it stops inside a character.
                    guard current.utf8.validate(UnsafeRawBufferPointer(payload)),
                          !isLast || current.utf8.isComplete else {
                        mode = .failed(.invalidUTF8)
                        throw .invalidUTF8
                    }
                }
                let piece = MessagePiece(span: ByteSpan(offset: position, length: available), opcode: current.opcode,
                                         isFirst: !current.pieceReported, isLast: isLast, isCompressed: current.isCompressed)
                current.pieceReported = true
                position += available
                if left > 0 {
                    // Wrapping: phase only matters mod 4.
                    mode = .payload(remaining: left, fin: fin, key: key, phase: (phase &+ available) & 3)
                    message = current
                } else {
                    mode = .header
                    message = fin ? nil : current
                }
                return .event(.messageData(piece), consumed: position)
            }
        }
    }

    /// At a frame start at `position`: validates the header, and either
    /// reports a whole control frame, enters payload mode for a data frame
    /// (returning nil so the loop goes on), or asks for more bytes.
    private mutating func decodeFrameStart(_ bytes: UnsafeMutableRawBufferPointer, _ position: inout Int) throws(WebSocketError) -> DecodeStep? {
        let available = bytes.count - position
        guard available >= 2 else { return .needMoreData(consumed: position) }
        let b0 = bytes[position], b1 = bytes[position + 1]
        let fin = b0 & 0x80 != 0
        let rsv1 = b0 & 0x40 != 0
        let opcode = Opcode(rawValue: b0 & 0x0F)
        let length7 = Int(b1 & 0x7F)

        // §5.2: reserved bits MUST be 0 unless an extension gives them a
        // meaning; RFC 7692 §6 gives RSV1 one, on a message's first frame only.
        if b0 & 0x30 != 0 { throw .reservedBitsSet }
        if rsv1 && (!configuration.allowRSV1 || opcode.isControl || opcode == .continuation) { throw .reservedBitsSet }
        // §5.2: unknown opcodes fail the connection.
        guard opcode.isKnown else { throw .unknownOpcode }
        if opcode.isControl {
            // §5.5: "All control frames MUST have a payload length of 125
            // bytes or less and MUST NOT be fragmented."
            guard length7 <= 125 else { throw .controlFrameTooLong }
            guard fin else { throw .fragmentedControlFrame }
        }
        // §5.1: "The server MUST close the connection upon receiving a frame
        // that is not masked."
        guard b1 & 0x80 != 0 else { throw .unmaskedFrame }
        // §5.4: fragments of one message are not interleaved with another's.
        if opcode == .continuation && message == nil { throw .continuationWithoutMessage }
        if (opcode == .text || opcode == .binary) && message != nil { throw .dataFrameInsideMessage }

        let extendedLength = length7 == 126 ? 2 : length7 == 127 ? 8 : 0
        let headerLength = 2 + extendedLength + 4
        guard available >= headerLength else { return .needMoreData(consumed: position) }
        var payloadLength = length7
        if extendedLength == 2 {
            payloadLength = Int(bytes[position + 2]) << 8 | Int(bytes[position + 3])
            // §5.2: "the minimal number of bytes MUST be used to encode the length".
            guard payloadLength >= 126 else { throw .nonMinimalLength }
        } else if extendedLength == 8 {
            // §5.2: "the most significant bit MUST be 0".
            guard bytes[position + 2] & 0x80 == 0 else { throw .lengthHighBitSet }
            var value: UInt64 = 0
            for k in 2..<10 { value = value << 8 | UInt64(bytes[position + k]) }
            guard value > 0xFFFF else { throw .nonMinimalLength }
            // At most 2^63 - 1 here; on a 32-bit platform anything over
            // Int.max is over every message limit too.
            guard value <= UInt64(Int.max) else { throw .messageTooBig }
            payloadLength = Int(value)
        }
        let keyOffset = position + 2 + extendedLength
        let key = MaskingKey(bytes[keyOffset], bytes[keyOffset + 1], bytes[keyOffset + 2], bytes[keyOffset + 3])

        if opcode.isControl {
            guard available >= headerLength + payloadLength else { return .needMoreData(consumed: position) }
            let start = position + headerLength
            let payload = UnsafeMutableRawBufferPointer(rebasing: bytes[start..<start + payloadLength])
            Masking.apply(payload, key: key, phase: 0)
            position = start + payloadLength
            let span = ByteSpan(offset: start, length: payloadLength)
            switch opcode {
            case .ping: return .event(.pingReceived(span), consumed: position)
            case .pong: return .event(.pongReceived(span), consumed: position)
            default: break
            }
            let event = try FrameDecoder.decodeClosePayload(UnsafeRawBufferPointer(payload), at: start)
            mode = .closed
            message = nil
            return .event(event, consumed: position)
        }

        // A data frame: check the message limit from the header, before
        // buffering anything (§10.4; 1009).
        var current = message ?? Message(opcode: opcode, isCompressed: rsv1)
        guard payloadLength <= configuration.maxMessageLength - current.length else { throw .messageTooBig }
        current.length += payloadLength
        message = current
        position += headerLength
        mode = .payload(remaining: payloadLength, fin: fin, key: key, phase: 0)
        if payloadLength == 0 && !fin {
            // An empty non-final fragment carries nothing to report.
            mode = .header
        }
        return nil
    }

    /// §5.5.1: an empty body, or a 2-byte code followed by a UTF-8 reason.
    /// The code must be one that may be sent (§7.4.1–§7.4.2).
    static func decodeClosePayload(_ payload: UnsafeRawBufferPointer, at start: Int) throws(WebSocketError) -> FrameEvent {
        switch payload.count {
        case 0:
            return .closeReceived(code: nil, reason: ByteSpan(offset: start, length: 0))
        case 1:
            throw .closePayloadOneByte
        default:
            let code = CloseCode(rawValue: UInt16(payload[0]) << 8 | UInt16(payload[1]))
            guard code.isValidOnWire else { throw .invalidCloseCode }
            guard UTF8Validator.isValid(UnsafeRawBufferPointer(rebasing: payload[2...])) else { throw .closeReasonNotUTF8 }
            return .closeReceived(code: code, reason: ByteSpan(offset: start + 2, length: payload.count - 2))
        }
    }
}
