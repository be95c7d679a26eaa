/// The ECN field of an IP header (RFC 3168 §5), as QUIC counts and sets it
/// (RFC 9000 §13.4): the two low bits of the IPv4 TOS / IPv6 traffic class.
public enum ECNCodepoint: UInt8, Sendable, CaseIterable {
    case notECT = 0
    case ect1 = 1
    case ect0 = 2
    /// Congestion Experienced: set by a router instead of dropping.
    case ce = 3

    /// The codepoint of a TOS / traffic class byte (the DSCP bits ignored).
    @inlinable
    public init(field: UInt8) {
        self = ECNCodepoint(rawValue: field & 0x3)!
    }
}
