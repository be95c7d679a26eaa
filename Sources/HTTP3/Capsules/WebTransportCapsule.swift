// The capsules of a WebTransport session's CONNECT stream
// (draft-ietf-webtrans-http3, "Session Termination" and "Flow Control";
// draft-02 has only CLOSE_WEBTRANSPORT_SESSION, the same type), and the
// DATAGRAM capsule of RFC 9297 §3.5.
//
// Each value must hold exactly its fields (RFC 9297 §3.3: "additional bytes
// ... or a capsule payload that terminates before the end of the identified
// fields MUST be treated as ... malformed").

import Core

public enum CapsuleType {
    /// RFC 9297 §3.5.
    public static let datagram: UInt64 = 0x00
    /// WT_CLOSE_SESSION (draft-02: CLOSE_WEBTRANSPORT_SESSION).
    public static let closeSession: UInt64 = 0x2843
    public static let drainSession: UInt64 = 0x78ae
    public static let maxData: UInt64 = 0x190b_4d3d
    public static let maxStreamsBidi: UInt64 = 0x190b_4d3f
    public static let maxStreamsUni: UInt64 = 0x190b_4d40
    public static let dataBlocked: UInt64 = 0x190b_4d41
    public static let streamsBlockedBidi: UInt64 = 0x190b_4d43
    public static let streamsBlockedUni: UInt64 = 0x190b_4d44

    /// The types a WebTransport session reads; others are skipped.
    public static func isWebTransport(_ type: UInt64) -> Bool {
        switch type {
        case datagram, closeSession, drainSession, maxData, maxStreamsBidi, maxStreamsUni, dataBlocked,
             streamsBlockedBidi, streamsBlockedUni: true
        default: false
        }
    }
}

public enum WebTransportCapsule: Equatable, Sendable {
    /// The session ends with an application code and a UTF-8 message of at
    /// most 1024 bytes.
    case closeSession(code: UInt32, message: [UInt8])
    /// The peer asks for the session to wind down (GOAWAY for one session).
    case drainSession
    case maxData(UInt64)
    case maxStreams(bidirectional: Bool, UInt64)
    case dataBlocked(UInt64)
    case streamsBlocked(bidirectional: Bool, UInt64)
    /// An HTTP Datagram sent on the stream.
    case datagram([UInt8])

    /// The largest WT_CLOSE_SESSION message.
    public static let maxCloseMessage = 1024
    /// Stream counts above it cannot be opened (stream IDs end at 2^62 - 1).
    public static let maxStreamCount: UInt64 = 1 << 60

    /// Decodes the value of a capsule of `type`; nil for a type that is not
    /// one of these (skip it).
    public static func decode(type: UInt64, value: UnsafeRawBufferPointer) throws(CapsuleError) -> WebTransportCapsule? {
        switch type {
        case CapsuleType.datagram:
            return .datagram(Array(value))
        case CapsuleType.closeSession:
            guard value.count >= 4 else { throw .lengthMismatch }
            let code = UInt32(value[0]) << 24 | UInt32(value[1]) << 16 | UInt32(value[2]) << 8 | UInt32(value[3])
            let message = UnsafeRawBufferPointer(rebasing: value[4...])
            guard message.count <= maxCloseMessage, String(validating: message, as: UTF8.self) != nil else {
                throw .badCloseMessage
            }
            return .closeSession(code: code, message: Array(message))
        case CapsuleType.drainSession:
            guard value.isEmpty else { throw .lengthMismatch }
            return .drainSession
        case CapsuleType.maxData:
            return .maxData(try single(value))
        case CapsuleType.dataBlocked:
            return .dataBlocked(try single(value))
        case CapsuleType.maxStreamsBidi, CapsuleType.maxStreamsUni:
            let n = try single(value)
            guard n <= maxStreamCount else { throw .streamLimitTooLarge }
            return .maxStreams(bidirectional: type == CapsuleType.maxStreamsBidi, n)
        case CapsuleType.streamsBlockedBidi, CapsuleType.streamsBlockedUni:
            let n = try single(value)
            guard n <= maxStreamCount else { throw .streamLimitTooLarge }
            return .streamsBlocked(bidirectional: type == CapsuleType.streamsBlockedBidi, n)
        default:
            return nil
        }
    }

    /// A value that is exactly one varint.
    private static func single(_ value: UnsafeRawBufferPointer) throws(CapsuleError) -> UInt64 {
        guard let (n, length) = QUICVarInt.decode(value, at: 0), length == value.count else { throw .lengthMismatch }
        return n
    }

    /// Appends the whole capsule (type, length, value) to `out`. A close
    /// message over 1024 bytes is cut at the last UTF-8 character boundary
    /// that fits (the draft: "Senders that truncate ... MUST do so at a
    /// UTF-8 character boundary").
    public func append(to out: inout [UInt8]) {
        var value: [UInt8] = []
        let type: UInt64
        switch self {
        case .closeSession(let code, let message):
            type = CapsuleType.closeSession
            value = [UInt8(code >> 24), UInt8(truncatingIfNeeded: code >> 16), UInt8(truncatingIfNeeded: code >> 8),
                     UInt8(truncatingIfNeeded: code)]
            value += Self.truncatedUTF8(message, to: Self.maxCloseMessage)
        case .drainSession:
            type = CapsuleType.drainSession
        case .maxData(let n):
            type = CapsuleType.maxData
            QUICVarInt.append(n, to: &value)
        case .dataBlocked(let n):
            type = CapsuleType.dataBlocked
            QUICVarInt.append(n, to: &value)
        case .maxStreams(let bidi, let n):
            type = bidi ? CapsuleType.maxStreamsBidi : CapsuleType.maxStreamsUni
            QUICVarInt.append(n, to: &value)
        case .streamsBlocked(let bidi, let n):
            type = bidi ? CapsuleType.streamsBlockedBidi : CapsuleType.streamsBlockedUni
            QUICVarInt.append(n, to: &value)
        case .datagram(let payload):
            type = CapsuleType.datagram
            value = payload
        }
        value.withUnsafeBytes { CapsuleWriter.append(type: type, value: $0, to: &out) }
    }

    /// The longest prefix of `text` of at most `limit` bytes that does not
    /// end inside a UTF-8 sequence.
    static func truncatedUTF8(_ text: [UInt8], to limit: Int) -> [UInt8] {
        guard text.count > limit else { return text }
        var end = limit
        // Step back over continuation bytes (10xxxxxx) to a lead byte, then
        // drop that lead too unless its whole sequence fits.
        while end > 0 && text[end] & 0xc0 == 0x80 { end -= 1 }
        return Array(text[0..<end])
    }
}
