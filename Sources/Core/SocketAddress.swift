// An IPv4 or IPv6 socket address stored inline, for datagram paths: the UDP
// loop reads one per datagram (source and, from IP_PKTINFO/IPV6_PKTINFO, the
// destination the client used) and the QUIC connections key their paths on
// them, so it must hash and compare without allocating. Conversion to and
// from `sockaddr` lives with the syscalls (CSys); protocol code only compares
// addresses and passes them back.

/// An IP address and port. IPv4 addresses are held as IPv4, never as
/// IPv4-mapped IPv6, so one client has one form.
public struct SocketAddress: Hashable, Sendable {
    public enum Family: UInt8, Sendable { case ipv4 = 4, ipv6 = 6 }

    public var family: Family
    /// Host byte order.
    public var port: UInt16
    /// The address bytes in network order: IPv4 in the first 4 of `high`'s
    /// big-endian bytes and the rest zero; IPv6 as two big-endian halves.
    public var high: UInt64
    public var low: UInt64
    /// IPv6 scope (interface index) for link-local addresses; 0 otherwise.
    /// For a destination address read from packet info, the interface the
    /// datagram arrived on (replies leave through it).
    public var scopeID: UInt32

    @inlinable
    public init(family: Family, port: UInt16, high: UInt64, low: UInt64, scopeID: UInt32 = 0) {
        self.family = family
        self.port = port
        self.high = high
        self.low = low
        self.scopeID = scopeID
    }

    /// An IPv4 address from its 32-bit value in host order (a.b.c.d = a<<24 | ...).
    @inlinable
    public static func ipv4(_ address: UInt32, port: UInt16) -> SocketAddress {
        SocketAddress(family: .ipv4, port: port, high: UInt64(address) << 32, low: 0)
    }

    /// The IPv4 address in host order (0 for IPv6).
    @inlinable
    public var ipv4Value: UInt32 { family == .ipv4 ? UInt32(truncatingIfNeeded: high >> 32) : 0 }

    /// The 4 or 16 address bytes in network order.
    public var addressBytes: [UInt8] {
        var out: [UInt8] = []
        let count = family == .ipv4 ? 4 : 16
        out.reserveCapacity(count)
        for i in 0..<min(count, 8) { out.append(UInt8(truncatingIfNeeded: high >> (56 - 8 * i))) }
        if count == 16 { for i in 0..<8 { out.append(UInt8(truncatingIfNeeded: low >> (56 - 8 * i))) } }
        return out
    }
}

/// The two ends of a datagram as the server sees them: whom it came from and
/// which of the server's addresses it was sent to (RFC 9000 §9: a path is
/// this 4-tuple). Replies go back from `local` to `peer`.
public struct DatagramPath: Hashable, Sendable {
    public var peer: SocketAddress
    public var local: SocketAddress

    @inlinable
    public init(peer: SocketAddress, local: SocketAddress) {
        self.peer = peer
        self.local = local
    }
}
