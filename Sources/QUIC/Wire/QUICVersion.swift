// QUIC versions (RFC 9000 §15, RFC 8999 §5.1, RFC 9369 §3).
//
// The version decides how a long header's type bits are read (v2 permutes
// them, RFC 9369 §3.2), the Initial salt and the HKDF labels of packet
// protection (RFC 9001 §5.2, RFC 9369 §3.3). Version 0 marks a Version
// Negotiation packet (§17.2.1); versions of the form 0x?a?a?a?a are reserved
// for greasing (§15).

/// A 32-bit QUIC version.
public struct QUICVersion: RawRepresentable, Hashable, Sendable {
    public var rawValue: UInt32

    public init(rawValue: UInt32) {
        self.rawValue = rawValue
    }

    /// QUIC version 1 (RFC 9000).
    public static let v1 = QUICVersion(rawValue: 0x0000_0001)
    /// QUIC version 2 (RFC 9369 §3.1).
    public static let v2 = QUICVersion(rawValue: 0x6b33_43cf)
    /// The Version field of a Version Negotiation packet (§17.2.1).
    public static let negotiation = QUICVersion(rawValue: 0)

    /// The versions this implementation speaks, in preference order.
    public static let supported: [QUICVersion] = [.v1, .v2]

    public var isSupported: Bool { self == .v1 || self == .v2 }

    /// Reserved to exercise version negotiation (§15: 0x?a?a?a?a).
    public var isReservedForGreasing: Bool { rawValue & 0x0f0f_0f0f == 0x0a0a_0a0a }
}

/// The long-header packet types, independent of their version's encoding.
public enum LongPacketType: Sendable, Equatable, CaseIterable {
    case initial, zeroRTT, handshake, retry
}

extension QUICVersion {
    /// The packet type of long-header type bits `bits` (0...3).
    /// v1: Initial 0, 0-RTT 1, Handshake 2, Retry 3 (RFC 9000 §17.2 Table 5);
    /// v2: Initial 1, 0-RTT 2, Handshake 3, Retry 0 (RFC 9369 §3.2).
    public func longPacketType(bits: UInt8) -> LongPacketType {
        let b = self == .v2 ? (bits &+ 3) & 3 : bits & 3
        switch b {
        case 0: return .initial
        case 1: return .zeroRTT
        case 2: return .handshake
        default: return .retry
        }
    }

    /// The type bits (0...3) of `type` in this version.
    public func typeBits(_ type: LongPacketType) -> UInt8 {
        let v1: UInt8 = switch type {
        case .initial: 0
        case .zeroRTT: 1
        case .handshake: 2
        case .retry: 3
        }
        return self == .v2 ? (v1 &+ 1) & 3 : v1
    }
}
