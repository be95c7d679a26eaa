import Core

/// What the frame decoder reports (see `FrameDecoder`). Spans are relative
/// to the buffer passed to the `decode` call that returned the event, point
/// at bytes already unmasked in place, and are valid until the caller drops
/// or overwrites those bytes.
public enum FrameEvent: Equatable, Sendable {
    /// A piece of a text or binary message.
    case messageData(MessagePiece)
    /// A ping (§5.5.2); the payload (≤ 125 bytes) must be echoed in a pong.
    case pingReceived(ByteSpan)
    /// A pong (§5.5.3); unsolicited pongs are allowed and carry no duty.
    case pongReceived(ByteSpan)
    /// A close frame (§5.5.1): `code` is nil for an empty payload (report
    /// 1005 to the application, §7.4.1); `reason` is UTF-8, possibly empty.
    /// The decoder ignores every byte after it.
    case closeReceived(code: CloseCode?, reason: ByteSpan)
}

/// A run of message payload as it arrived: a whole message, a whole frame,
/// or part of a frame. A caller may stream the pieces (deliver each) or
/// assemble them (append until `isLast`).
public struct MessagePiece: Equatable, Sendable {
    /// The unmasked payload bytes.
    public var span: ByteSpan
    /// `.text` or `.binary`: the message's type, also for the pieces that
    /// arrived in continuation frames.
    public var opcode: Opcode
    @usableFromInline var flags: UInt8

    @usableFromInline static let firstFlag: UInt8 = 1
    @usableFromInline static let lastFlag: UInt8 = 2
    @usableFromInline static let compressedFlag: UInt8 = 4

    @inlinable
    public init(span: ByteSpan, opcode: Opcode, isFirst: Bool, isLast: Bool, isCompressed: Bool = false) {
        self.span = span
        self.opcode = opcode
        flags = (isFirst ? MessagePiece.firstFlag : 0) | (isLast ? MessagePiece.lastFlag : 0)
            | (isCompressed ? MessagePiece.compressedFlag : 0)
    }

    /// The first piece of its message.
    @inlinable public var isFirst: Bool { flags & MessagePiece.firstFlag != 0 }
    /// The last piece of its message (FIN frame, no payload left). Only the
    /// last piece of a message may be empty.
    @inlinable public var isLast: Bool { flags & MessagePiece.lastFlag != 0 }
    /// The message's first frame had RSV1 set (RFC 7692 §6: compressed).
    /// Only possible when `allowRSV1` is configured; the payload is then
    /// deflated bytes, not yet UTF-8 validated.
    @inlinable public var isCompressed: Bool { flags & MessagePiece.compressedFlag != 0 }
}

/// The outcome of one `FrameDecoder.decode` call.
public enum DecodeStep: Equatable, Sendable {
    /// An event; drop `consumed` bytes from the front of the input.
    case event(FrameEvent, consumed: Int)
    /// No complete event yet: drop `consumed` bytes (frame headers, or
    /// everything after a close frame) and call again with more input.
    case needMoreData(consumed: Int)
}
