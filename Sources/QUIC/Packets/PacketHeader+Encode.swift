// Writing packet headers (RFC 9000 §17.2, §17.3), size first, write once.
//
// The header is written with the packet number in the clear and the
// protected bits of the first byte unmasked; `PacketProtection.seal` then
// encrypts the payload and applies header protection in place. A long
// header's Length covers the packet number, the payload and the AEAD tag
// (§17.2), so the caller states the payload size up front.

import Core

public enum PacketHeaderEncoder {
    /// The size of a long header (Initial when `tokenLength` is given,
    /// otherwise 0-RTT/Handshake) up to and including its packet number.
    public static func longHeaderSize(destinationID: ConnectionID, sourceID: ConnectionID, tokenLength: Int?,
                                      packetNumberLength: Int, payloadLength: Int) -> Int {
        var n = 1 + 4 + 1 + destinationID.count + 1 + sourceID.count
        if let tokenLength { n += VarInt.encodedLength(UInt64(tokenLength)) + tokenLength }
        n += VarInt.encodedLength(UInt64(packetNumberLength + payloadLength + PacketProtection.tagLength))
        return n + packetNumberLength
    }

    /// Writes an Initial, 0-RTT or Handshake header for a payload of
    /// `payloadLength` plaintext bytes (the tag comes on top) and returns its
    /// size: the offset at which the payload goes.
    @discardableResult
    public static func encodeLong(type: LongPacketType, version: QUICVersion, destinationID: ConnectionID,
                                  sourceID: ConnectionID, token: UnsafeRawBufferPointer? = nil,
                                  packetNumber: UInt64, packetNumberLength: Int, payloadLength: Int,
                                  into out: UnsafeMutableRawBufferPointer) -> Int {
        precondition(type != .retry, "Retry packets are built by RetryPacket")
        precondition((1...4).contains(packetNumberLength))
        precondition((type == .initial) == (token != nil), "only Initial packets carry a token")
        let size = longHeaderSize(destinationID: destinationID, sourceID: sourceID, tokenLength: token?.count,
                                  packetNumberLength: packetNumberLength, payloadLength: payloadLength)
        var w = WireWriter(out, size: size)
        // Header Form 1, Fixed Bit 1, type, Reserved 0, Packet Number Length - 1.
        w.uint8(0xc0 | version.typeBits(type) << 4 | UInt8(packetNumberLength - 1))
        w.uint32(version.rawValue)
        w.connectionID(destinationID)
        w.connectionID(sourceID)
        if let token {
            w.varint(UInt64(token.count))
            w.bytes(token)
        }
        w.varint(UInt64(packetNumberLength + payloadLength + PacketProtection.tagLength))
        w.packetNumber(packetNumber, length: packetNumberLength)
        return w.finish()
    }

    public static func shortHeaderSize(destinationID: ConnectionID, packetNumberLength: Int) -> Int {
        1 + destinationID.count + packetNumberLength
    }

    /// Writes a 1-RTT header and returns its size.
    @discardableResult
    public static func encodeShort(destinationID: ConnectionID, keyPhase: Bool, spin: Bool = false,
                                   packetNumber: UInt64, packetNumberLength: Int,
                                   into out: UnsafeMutableRawBufferPointer) -> Int {
        precondition((1...4).contains(packetNumberLength))
        let size = shortHeaderSize(destinationID: destinationID, packetNumberLength: packetNumberLength)
        var w = WireWriter(out, size: size)
        // §17.3.1: Header Form 0, Fixed Bit 1, Spin, Reserved 00, Key Phase, PN Length - 1.
        w.uint8(0x40 | (spin ? 0x20 : 0) | (keyPhase ? 0x04 : 0) | UInt8(packetNumberLength - 1))
        w.bytes(destinationID)
        w.packetNumber(packetNumber, length: packetNumberLength)
        return w.finish()
    }
}

extension WireWriter {
    mutating func connectionID(_ id: ConnectionID) {
        uint8(UInt8(id.count))
        bytes(id)
    }

    mutating func bytes(_ id: ConnectionID) {
        id.withUnsafeBytes { bytes($0) }
    }

    mutating func packetNumber(_ pn: UInt64, length: Int) {
        let truncated = PacketNumber.truncate(pn, length: length)
        for i in stride(from: length - 1, through: 0, by: -1) { uint8(UInt8(truncatingIfNeeded: truncated >> (8 * UInt32(i)))) }
    }
}
