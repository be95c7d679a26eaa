// Frames a server sends (RFC 9114 §7.2): SETTINGS (with a reserved setting),
// HEADERS, the header of a DATA frame (the payload follows, uncopied), GOAWAY,
// a reserved (grease) frame, and the unidirectional stream preamble.

import Core

public enum H3FrameEncoder {
    /// Appends a frame header: type and payload length (§7.1).
    public static func appendHeader(_ type: H3FrameType, length: Int, to out: inout [UInt8]) {
        QUICVarInt.append(type.rawValue, to: &out)
        QUICVarInt.append(UInt64(length), to: &out)
    }

    /// The stream type that starts a unidirectional stream (§6.2).
    public static func appendStreamType(_ type: H3UniStreamType, to out: inout [UInt8]) {
        QUICVarInt.append(type.rawValue, to: &out)
    }

    /// A SETTINGS frame (§7.2.4), with reserved setting `grease` if given.
    public static func appendSettings(_ s: H3Settings, grease: UInt64? = nil, greaseValue: UInt64 = 0, to out: inout [UInt8]) {
        let payload = s.encodedPayload(grease: grease, greaseValue: greaseValue)
        appendHeader(.settings, length: payload.count, to: &out)
        out.append(contentsOf: payload)
    }

    /// A HEADERS frame around an encoded field section (§7.2.2).
    public static func appendHeaders(_ fieldSection: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        appendHeader(.headers, length: fieldSection.count, to: &out)
        out.append(contentsOf: fieldSection)
    }

    /// The header of a DATA frame of `length` bytes (§7.2.1).
    public static func appendDataHeader(length: Int, to out: inout [UInt8]) {
        appendHeader(.data, length: length, to: &out)
    }

    /// GOAWAY with the first client-initiated bidirectional stream ID the
    /// server will not process (§5.2, §7.2.6).
    public static func appendGoaway(streamID: UInt64, to out: inout [UInt8]) {
        appendHeader(.goaway, length: QUICVarInt.encodedLength(streamID), to: &out)
        QUICVarInt.append(streamID, to: &out)
    }

    /// A reserved frame type `0x1f * n + 0x21` (§7.2.8) with `payload`.
    public static func appendGreaseFrame(_ n: UInt64, payload: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        QUICVarInt.append(H3Grease.value(n), to: &out)
        QUICVarInt.append(UInt64(payload.count), to: &out)
        out.append(contentsOf: payload)
    }
}
