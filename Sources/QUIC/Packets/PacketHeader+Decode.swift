// Parsing one packet header out of a datagram (RFC 9000 §17, §12.2).
//
// Nothing here is a connection error: a header that does not parse makes
// its packet (and, when its end cannot be known, the rest of the datagram)
// unreadable, and it is dropped (§12.2, §17.2). Version-specific checks —
// the fixed bit, connection IDs of at most 20 bytes — apply only to the
// versions we speak; anything else is read through the invariants (RFC 8999)
// so Version Negotiation can echo it.

import Core

extension PacketHeader {
    /// Parses the packet starting at `datagram[at]`.
    /// - Parameter shortHeaderIDLength: the length of the connection IDs
    ///   this endpoint issues (a short header does not carry it).
    public static func decode(_ datagram: UnsafeRawBufferPointer, at start: Int,
                              shortHeaderIDLength: Int) throws(PacketDrop) -> PacketHeader {
        guard start < datagram.count else { throw .truncated }
        let first = datagram[start]
        if first & 0x80 == 0 {
            return .short(try decodeShort(datagram, start, first, shortHeaderIDLength))
        }
        // Invariant fields: version, then DCID and SCID with 8-bit lengths.
        guard datagram.count - start >= 7 else { throw .truncated }
        let version = QUICVersion(rawValue: readUInt32(datagram, at: start + 1))
        var at = start + 5
        let dcid = try lengthPrefixed(datagram, &at)
        let scid = try lengthPrefixed(datagram, &at)
        let end = datagram.count
        if version == .negotiation {
            // §17.2.1: the list runs to the end and is whole versions.
            let list = ByteSpan(offset: at, length: end - at)
            guard list.count > 0 && list.count % 4 == 0 else { throw .badVersionList }
            return .versionNegotiation(VersionNegotiationHeader(destinationID: dcid, sourceID: scid, versions: list,
                                                                packet: ByteSpan(offset: start, length: end - start)))
        }
        guard version.isSupported else {
            return .unsupportedVersion(UnsupportedVersionHeader(version: version, destinationID: dcid, sourceID: scid,
                                                                packet: ByteSpan(offset: start, length: end - start)))
        }
        // §17.2: "Endpoints that receive a version 1 long header with a value
        // larger than 20 MUST drop the packet."
        guard let destination = ConnectionID(datagram.slice(dcid)),
              let source = ConnectionID(datagram.slice(scid)) else { throw .connectionIDTooLong }
        // §17.2: "Packets containing a zero value for this bit are not valid
        // packets in this version and MUST be discarded."
        guard first & 0x40 != 0 else { throw .fixedBitZero }
        let type = version.longPacketType(bits: (first >> 4) & 3)
        if type == .retry {
            // §17.2.5: Retry Token (..), Retry Integrity Tag (128).
            guard end - at >= 16 else { throw .truncated }
            return .retry(RetryHeader(version: version, firstByte: first, destinationID: destination, sourceID: source,
                                      retryToken: ByteSpan(offset: at, length: end - 16 - at),
                                      integrityTag: ByteSpan(offset: end - 16, length: 16),
                                      packet: ByteSpan(offset: start, length: end - start)))
        }
        var token = ByteSpan(offset: at, length: 0)
        if type == .initial {
            guard let (n, w) = VarInt.decode(datagram, at: at) else { throw .truncated }
            at += w
            guard n <= UInt64(end - at) else { throw .truncated }
            token = ByteSpan(offset: at, length: Int(n))
            at += Int(n)
        }
        // §17.2: Length covers the Packet Number and Payload; it is what lets
        // packets be coalesced (§12.2).
        guard let (length, w) = VarInt.decode(datagram, at: at) else { throw .truncated }
        at += w
        guard length <= UInt64(end - at) else { throw .lengthPastDatagram }
        return .long(LongHeader(type: type, version: version, firstByte: first, destinationID: destination,
                                sourceID: source, token: token, packetNumberOffset: at,
                                packet: ByteSpan(offset: start, length: at + Int(length) - start)))
    }

    private static func decodeShort(_ datagram: UnsafeRawBufferPointer, _ start: Int, _ first: UInt8,
                                    _ idLength: Int) throws(PacketDrop) -> ShortHeader {
        guard first & 0x40 != 0 else { throw .fixedBitZero }
        guard datagram.count - start >= 1 + idLength else { throw .truncated }
        let id = ConnectionID(UnsafeRawBufferPointer(rebasing: datagram[(start + 1)..<(start + 1 + idLength)]))
        guard let id else { throw .connectionIDTooLong }
        return ShortHeader(firstByte: first, destinationID: id, packetNumberOffset: start + 1 + idLength,
                           packet: ByteSpan(offset: start, length: datagram.count - start))
    }

    private static func lengthPrefixed(_ d: UnsafeRawBufferPointer, _ at: inout Int) throws(PacketDrop) -> ByteSpan {
        guard at < d.count else { throw .truncated }
        let n = Int(d[at])
        guard d.count - at - 1 >= n else { throw .truncated }
        defer { at += 1 + n }
        return ByteSpan(offset: at + 1, length: n)
    }
}

extension PacketDrop {
    public static let truncated = PacketDrop("packet header truncated")
    public static let badVersionList = PacketDrop("Version Negotiation list empty or not whole versions")
    public static let connectionIDTooLong = PacketDrop("connection ID longer than 20 bytes")
    public static let fixedBitZero = PacketDrop("fixed bit is 0")
    public static let lengthPastDatagram = PacketDrop("Length field runs past the datagram")
    public static let differentDestinationID = PacketDrop("coalesced packet with a different Destination Connection ID")
    public static let sampleTooShort = PacketDrop("packet too short for the header protection sample")
    public static let decryptionFailed = PacketDrop("packet failed authentication")
    public static let badRetryTag = PacketDrop("Retry Integrity Tag does not verify")
}
