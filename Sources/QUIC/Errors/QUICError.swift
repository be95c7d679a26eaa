// Connection errors found while decoding (RFC 9000 §11.1, §20).
//
// Everything the wire layer rejects in an authenticated packet is a
// connection error: the connection closes with CONNECTION_CLOSE (type 0x1c)
// carrying `code` and, when known, the type of the frame that triggered it
// (§19.19 "Frame Type"). Each rule is a named constant in
// QUICError+Catalogue.swift, so the code for it is chosen once (STYLE §4).
// Problems that only make a packet unreadable (bad header, failed
// decryption) are not connection errors: the packet is dropped silently
// (§5.2, §12.2) — see `PacketDrop`.

/// A connection error: wire code, the frame type involved, a fixed reason.
public struct QUICError: Error, Sendable, Equatable, CustomStringConvertible {
    public let code: TransportErrorCode
    /// The frame type that caused the error, for CONNECTION_CLOSE's Frame
    /// Type field (0 when unknown or not about a frame).
    public var frameType: UInt64
    public let reason: StaticString

    public init(code: TransportErrorCode, frameType: UInt64 = 0, reason: StaticString) {
        self.code = code
        self.frameType = frameType
        self.reason = reason
    }

    /// The same rule, reported against frame type `type`.
    public func inFrame(_ type: UInt64) -> QUICError {
        var e = self
        e.frameType = type
        return e
    }

    public static func == (lhs: QUICError, rhs: QUICError) -> Bool {
        lhs.code == rhs.code && lhs.frameType == rhs.frameType && lhs.reason.sameText(as: rhs.reason)
    }

    public var description: String { "QUIC error \(code.rawValue) (frame 0x\(String(frameType, radix: 16))): \(reason)" }
}

/// Why a packet or datagram was dropped without a connection error (RFC
/// 9000 §5.2, §12.2, §17; RFC 9001 §5.4.2, §5.5).
public struct PacketDrop: Error, Sendable, Equatable, CustomStringConvertible {
    public let reason: StaticString

    public init(_ reason: StaticString) {
        self.reason = reason
    }

    public static func == (lhs: PacketDrop, rhs: PacketDrop) -> Bool { lhs.reason.sameText(as: rhs.reason) }

    public var description: String { "packet dropped: \(reason)" }
}
