// Version Negotiation (RFC 9000 §6, §17.2.1).
//
// A server that gets a long header of a version it does not speak answers
// with the versions it does: "If the version selected by the client is not
// acceptable to the server, the server responds with a Version Negotiation
// packet" (§6.1). The packet's Destination Connection ID is the client's
// Source Connection ID and its Source Connection ID the client's Destination
// Connection ID, echoed byte for byte (§17.2.1) — up to 255 bytes each, as
// other versions allow (RFC 8999 §5.1). The first byte has its high bit set
// and the other seven unused (we set the fixed bit, as §17.2.1 suggests, with
// the rest random). "A server MUST NOT send more than one Version
// Negotiation packet in response to a single UDP datagram", and only to a
// datagram at least as large as the smallest allowed Initial (§14.1: 1200
// bytes) — the connection layer applies both rules with
// `shouldAnswerUnsupportedVersion`.

import Core

public enum VersionNegotiation {
    /// §14.1: "A server MUST discard an Initial packet that is carried in a
    /// UDP datagram with a payload that is smaller than the smallest allowed
    /// maximum datagram size of 1200 bytes"; Version Negotiation is only
    /// worth sending for a datagram that could have held a client's Initial.
    public static let minimumDatagramSize = 1200

    public static func shouldAnswerUnsupportedVersion(datagramLength: Int) -> Bool {
        datagramLength >= minimumDatagramSize
    }

    public static func size(for header: UnsupportedVersionHeader, versions: [QUICVersion] = QUICVersion.supported) -> Int {
        1 + 4 + 1 + header.sourceID.count + 1 + header.destinationID.count + 4 * versions.count
    }

    /// Writes the answer to `header`, read from `datagram`, and returns its
    /// size. `unusedBits` fills the seven unused bits of the first byte
    /// (random, so middleboxes do not ossify on them).
    @discardableResult
    public static func encode(answering header: UnsupportedVersionHeader, in datagram: UnsafeRawBufferPointer,
                              versions: [QUICVersion] = QUICVersion.supported, unusedBits: UInt8 = 0,
                              into out: UnsafeMutableRawBufferPointer) -> Int {
        let n = size(for: header, versions: versions)
        var w = WireWriter(out, size: n)
        w.uint8(0x80 | 0x40 | (unusedBits & 0x3f))
        w.uint32(QUICVersion.negotiation.rawValue)
        w.uint8(UInt8(header.sourceID.count))
        w.bytes(datagram.slice(header.sourceID))
        w.uint8(UInt8(header.destinationID.count))
        w.bytes(datagram.slice(header.destinationID))
        for v in versions { w.uint32(v.rawValue) }
        return w.finish()
    }
}
