import CSys

// The C side of datagram addresses (csys_udp.h) is plain bytes: family, port
// in host order, the address in network order, the scope. These two
// conversions are the only place the layouts meet.

extension SocketAddress {
    /// The address of a received datagram's end; nil for an endpoint the
    /// kernel gave no address for (family 0).
    @inlinable
    public init?(endpoint e: csys_ip_endpoint) {
        guard let family = Family(rawValue: e.family) else { return nil }
        let bytes = e.addr
        // Big-endian halves: byte 0 is the most significant.
        let high = withUnsafeBytes(of: bytes) { raw in UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)) }
        let low = withUnsafeBytes(of: bytes) { raw in UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)) }
        if family == .ipv4 {
            // Only the first 4 bytes are the address; the C side zeroes the rest.
            self.init(family: .ipv4, port: e.port, high: high & 0xFFFF_FFFF_0000_0000, low: 0, scopeID: e.scope_id)
        } else {
            self.init(family: .ipv6, port: e.port, high: high, low: low, scopeID: e.scope_id)
        }
    }

    /// The C endpoint for this address.
    @inlinable
    public var endpoint: csys_ip_endpoint {
        var e = csys_ip_endpoint()
        e.family = family.rawValue
        e.port = port
        e.scope_id = scopeID
        withUnsafeMutableBytes(of: &e.addr) { raw in
            raw.storeBytes(of: (family == .ipv4 ? high & 0xFFFF_FFFF_0000_0000 : high).bigEndian, toByteOffset: 0, as: UInt64.self)
            raw.storeBytes(of: (family == .ipv4 ? 0 : low).bigEndian, toByteOffset: 8, as: UInt64.self)
        }
        return e
    }
}
