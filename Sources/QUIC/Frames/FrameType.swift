// Frame type values (RFC 9000 §12.4 Table 3, §19; RFC 9221 §4) and which
// packet types may carry each (§12.4 Table 3 "Pkts"; RFC 9221 §4).

/// The packet types as Table 3 distinguishes them.
public enum PacketKind: Sendable, Equatable, CaseIterable {
    case initial, zeroRTT, handshake, oneRTT
}

public enum FrameType {
    public static let padding: UInt64 = 0x00
    public static let ping: UInt64 = 0x01
    public static let ack: UInt64 = 0x02
    public static let ackECN: UInt64 = 0x03
    public static let resetStream: UInt64 = 0x04
    public static let stopSending: UInt64 = 0x05
    public static let crypto: UInt64 = 0x06
    public static let newToken: UInt64 = 0x07
    /// 0x08-0x0f: the low three bits are OFF (0x04), LEN (0x02), FIN (0x01).
    public static let stream: UInt64 = 0x08
    public static let maxData: UInt64 = 0x10
    public static let maxStreamData: UInt64 = 0x11
    public static let maxStreamsBidi: UInt64 = 0x12
    public static let maxStreamsUni: UInt64 = 0x13
    public static let dataBlocked: UInt64 = 0x14
    public static let streamDataBlocked: UInt64 = 0x15
    public static let streamsBlockedBidi: UInt64 = 0x16
    public static let streamsBlockedUni: UInt64 = 0x17
    public static let newConnectionID: UInt64 = 0x18
    public static let retireConnectionID: UInt64 = 0x19
    public static let pathChallenge: UInt64 = 0x1a
    public static let pathResponse: UInt64 = 0x1b
    public static let connectionClose: UInt64 = 0x1c
    public static let applicationClose: UInt64 = 0x1d
    public static let handshakeDone: UInt64 = 0x1e
    /// RFC 9221 §4: 0x30 without Length, 0x31 with.
    public static let datagram: UInt64 = 0x30
    public static let datagramWithLength: UInt64 = 0x31

    /// Whether a frame of `type` may appear in a packet of `kind` (§12.4
    /// Table 3): I = Initial, H = Handshake, 0 = 0-RTT, 1 = 1-RTT.
    public static func isPermitted(_ type: UInt64, in kind: PacketKind) -> Bool {
        switch type {
        case padding, ping:
            return true                                  // IH01
        case ack, ackECN, crypto:
            return kind != .zeroRTT                      // IH_1
        case connectionClose:
            return true                                  // ih01: only 0x1c in I and H
        case newToken, pathResponse, handshakeDone:
            return kind == .oneRTT                       // ___1
        default:
            // Everything else of Table 3 (__01) and DATAGRAM (RFC 9221 §4:
            // "DATAGRAM frames MUST only be sent in 0-RTT or 1-RTT packets").
            return kind == .zeroRTT || kind == .oneRTT
        }
    }
}
