// Packet headers as far as they can be read before decryption (RFC 9000
// §17, RFC 8999 §5).
//
//   Long Header Packet {                 Short Header (1-RTT) Packet {
//     Header Form (1) = 1,                 Header Form (1) = 0,
//     Fixed Bit (1) = 1,                   Fixed Bit (1) = 1,
//     Long Packet Type (2),                Spin Bit (1),
//     Type-Specific Bits (4),  *           Reserved Bits (2),       *
//     Version (32),                        Key Phase (1),           *
//     DCID Len (8), DCID (0..160),         Packet Number Length (2),*
//     SCID Len (8), SCID (0..160),         Destination Connection ID (0..160),
//     Type-Specific Payload (..),          Packet Number (8..32),   *
//   }                                      Packet Payload (8..),    *
//                                        }
//
// Fields marked * are under header protection (RFC 9001 §5.4) and are read
// by `PacketProtection.open`; until then a header gives the packet's type,
// version, connection IDs, token, where the packet number starts and where
// the packet ends. Every offset is into the datagram the header was parsed
// from. A short header does not carry its DCID length: the receiver knows
// it (it chose the ID), so the parser is told.

import Core

/// A long-header packet of version 1 or 2: Initial, 0-RTT, Handshake.
public struct LongHeader: Equatable, Sendable {
    public var type: LongPacketType
    public var version: QUICVersion
    /// The first byte as received (its low 4 bits still protected).
    public var firstByte: UInt8
    public var destinationID: ConnectionID
    public var sourceID: ConnectionID
    /// Initial only: the Token field (empty otherwise).
    public var token: ByteSpan
    /// Offset of the Packet Number field in the datagram.
    public var packetNumberOffset: Int
    /// The packet's bytes in the datagram, header included (§12.2: the
    /// Length field delimits it).
    public var packet: ByteSpan

    /// The packet number's offset from the packet's first byte, for
    /// `PacketProtection.open` over the packet's own bytes.
    public var packetNumberOffsetInPacket: Int { packetNumberOffset - packet.start }
}

/// A Retry packet (§17.2.5): no packet number, no protection; its end is the
/// datagram's end.
public struct RetryHeader: Equatable, Sendable {
    public var version: QUICVersion
    public var firstByte: UInt8
    public var destinationID: ConnectionID
    public var sourceID: ConnectionID
    public var retryToken: ByteSpan
    /// The 16-byte Retry Integrity Tag (RFC 9001 §5.8).
    public var integrityTag: ByteSpan
    public var packet: ByteSpan
}

/// A 1-RTT packet (§17.3.1), which runs to the end of the datagram.
public struct ShortHeader: Equatable, Sendable {
    public var firstByte: UInt8
    public var destinationID: ConnectionID
    public var packetNumberOffset: Int
    public var packet: ByteSpan

    public var packetNumberOffsetInPacket: Int { packetNumberOffset - packet.start }
}

/// A Version Negotiation packet (§17.2.1). Connection IDs are spans: other
/// versions allow up to 255 bytes (RFC 8999 §5.1).
public struct VersionNegotiationHeader: Equatable, Sendable {
    public var destinationID: ByteSpan
    public var sourceID: ByteSpan
    /// The Supported Version list, 4 bytes each.
    public var versions: ByteSpan
    public var packet: ByteSpan

    public var versionCount: Int { versions.count / 4 }

    public func version(_ i: Int, in datagram: UnsafeRawBufferPointer) -> QUICVersion {
        QUICVersion(rawValue: readUInt32(datagram, at: versions.start + 4 * i))
    }
}

/// A long header of a version we do not speak: only the invariant fields
/// (RFC 8999 §5.1) can be read, enough to answer with Version Negotiation
/// (§6.1). Its length is unknown, so it takes the rest of the datagram.
public struct UnsupportedVersionHeader: Equatable, Sendable {
    public var version: QUICVersion
    public var destinationID: ByteSpan
    public var sourceID: ByteSpan
    public var packet: ByteSpan
}

/// One packet's header, parsed up to its protected fields.
public enum PacketHeader: Equatable, Sendable {
    case long(LongHeader)
    case retry(RetryHeader)
    case short(ShortHeader)
    case versionNegotiation(VersionNegotiationHeader)
    case unsupportedVersion(UnsupportedVersionHeader)

    /// The packet's bytes in the datagram.
    public var packet: ByteSpan {
        switch self {
        case .long(let h): h.packet
        case .retry(let h): h.packet
        case .short(let h): h.packet
        case .versionNegotiation(let h): h.packet
        case .unsupportedVersion(let h): h.packet
        }
    }
}
