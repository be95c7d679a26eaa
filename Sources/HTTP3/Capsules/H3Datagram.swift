// HTTP/3 Datagrams (RFC 9297 §2.1): the payload of a QUIC DATAGRAM frame
// is prefixed with the request stream it belongs to, divided by four.
//
//   HTTP/3 Datagram { Quarter Stream ID (i), HTTP Datagram Payload (..) }

import Core

public enum H3Datagram {
    /// §2.1: "the largest legal value of Quarter Stream ID is 2^60-1".
    public static let maxQuarterStreamID: UInt64 = (1 << 60) - 1

    /// H3_DATAGRAM_ERROR (§2.1, §5.2).
    public static let datagramError = H3ErrorCode(rawValue: 0x33)

    /// The request stream a received datagram is for, and where its payload
    /// starts. Too short for the prefix, or a prefix over 2^60 - 1, is a
    /// connection error of type H3_DATAGRAM_ERROR.
    public static func parse(_ datagram: UnsafeRawBufferPointer) throws(H3Error) -> (streamID: UInt64, payloadStart: Int) {
        guard let (quarter, length) = QUICVarInt.decode(datagram, at: 0) else { throw .datagramTruncated }
        guard quarter <= maxQuarterStreamID else { throw .datagramStreamIDTooLarge }
        return (quarter * 4, length)
    }

    /// Appends the prefix for `streamID`, a client-initiated bidirectional
    /// stream (its ID is a multiple of four).
    public static func appendPrefix(streamID: UInt64, to out: inout [UInt8]) {
        precondition(streamID & 3 == 0, "HTTP Datagrams belong to client-initiated bidirectional streams")
        QUICVarInt.append(streamID / 4, to: &out)
    }
}
