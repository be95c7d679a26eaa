/// Every error the WebSocket decoder produces, one constant per rule, so the
/// close code for each rule is decided here and nowhere else (STYLE §4).
/// Tests assert against these constants.
extension WebSocketError {
    // MARK: Frame header (RFC 6455 §5.2) — 1002

    /// §5.2: "RSV1, RSV2, RSV3 ... MUST be 0 unless an extension is negotiated
    /// that defines meanings for non-zero values ... the receiving endpoint
    /// MUST _Fail the WebSocket Connection_."
    public static let reservedBitsSet = WebSocketError(closeCode: .protocolError, reason: "reserved bits set")
    /// §5.2: "If an unknown opcode is received, the receiving endpoint MUST
    /// _Fail the WebSocket Connection_."
    public static let unknownOpcode = WebSocketError(closeCode: .protocolError, reason: "unknown opcode")
    /// §5.1: "The server MUST close the connection upon receiving a frame that
    /// is not masked."
    public static let unmaskedFrame = WebSocketError(closeCode: .protocolError, reason: "client frame not masked")
    /// §5.2: "the minimal number of bytes MUST be used to encode the length".
    public static let nonMinimalLength = WebSocketError(closeCode: .protocolError, reason: "non-minimal payload length")
    /// §5.2: in the 64-bit form "the most significant bit MUST be 0".
    public static let lengthHighBitSet = WebSocketError(closeCode: .protocolError, reason: "64-bit payload length has high bit set")

    // MARK: Control frames (§5.5) — 1002

    /// §5.5: "All control frames MUST have a payload length of 125 bytes or less".
    public static let controlFrameTooLong = WebSocketError(closeCode: .protocolError, reason: "control frame payload over 125 bytes")
    /// §5.5: "All control frames ... MUST NOT be fragmented."
    public static let fragmentedControlFrame = WebSocketError(closeCode: .protocolError, reason: "fragmented control frame")

    // MARK: Fragmentation (§5.4) — 1002

    /// §5.4: a continuation frame belongs to a message begun by a text or
    /// binary frame with FIN clear; there is none.
    public static let continuationWithoutMessage = WebSocketError(closeCode: .protocolError, reason: "continuation frame without a message")
    /// §5.4: "the fragments of one message MUST NOT be interleaved between
    /// the fragments of another message".
    public static let dataFrameInsideMessage = WebSocketError(closeCode: .protocolError, reason: "new data frame while a message is in progress")

    // MARK: Close frame payload (§5.5.1, §7.4) — 1002 / 1007

    /// §5.5.1: "If there is a body, the first two bytes of the body MUST be a
    /// 2-byte unsigned integer" — one byte cannot be that.
    public static let closePayloadOneByte = WebSocketError(closeCode: .protocolError, reason: "close payload of one byte")
    /// §7.4.1/§7.4.2: a code that must not be sent or lies in no range.
    public static let invalidCloseCode = WebSocketError(closeCode: .protocolError, reason: "invalid close code")
    /// §5.5.1: the reason "is not guaranteed to be human readable" but its
    /// "data MUST be UTF-8-encoded"; §8.1 makes invalid UTF-8 a 1007.
    public static let closeReasonNotUTF8 = WebSocketError(closeCode: .invalidFramePayloadData, reason: "close reason is not UTF-8")

    // MARK: Message data (§8.1, §10.4) — 1007 / 1009

    /// §8.1: "When an endpoint is to interpret a byte stream as UTF-8 but
    /// finds that the byte stream is not, in fact, a valid UTF-8 stream, that
    /// endpoint MUST _Fail the WebSocket Connection_" (code 1007, §7.4.1).
    public static let invalidUTF8 = WebSocketError(closeCode: .invalidFramePayloadData, reason: "text message is not UTF-8")
    /// §10.4: implementations "SHOULD impose an implementation-specific limit
    /// on frame sizes and the total message size"; 1009 says why (§7.4.1).
    public static let messageTooBig = WebSocketError(closeCode: .messageTooBig, reason: "message too big")

    // MARK: permessage-deflate (RFC 7692) — 1002

    /// RFC 7692 §6.2 has the receiver inflate the payload; bytes that are
    /// not DEFLATE data cannot be, and the connection fails. (RFC 7692 names
    /// no code; 1002 as for any other broken extension framing, like
    /// Python's websockets.)
    public static let compressedDataInvalid = WebSocketError(closeCode: .protocolError, reason: "compressed data is not valid DEFLATE")
}
