/// An IP address as 128 bits, IPv4 included.
///
/// An IPv4 address is held as its IPv4-mapped IPv6 form, `::ffff:a.b.c.d`
/// (RFC 4291 §2.5.5.2), so one masked comparison matches both families and a
/// dual-stack socket's `::ffff:10.1.2.3` is the same host as `10.1.2.3`.
/// `isIPv4` remembers how the address was written or received, for output
/// only: `TrustedPeers` and every comparison of hosts use the 128 bits.
///
/// 17 bytes of payload; no allocation, no `String`.
public struct IPAddress: Hashable, Sendable {
    /// Bytes 0–7 of the address, byte 0 in the most significant position.
    public let high: UInt64
    /// Bytes 8–15.
    public let low: UInt64
    /// The address came as IPv4 (text `a.b.c.d`, a 4-byte socket address,
    /// PROXY `TCP4`/`AF_INET`). Its bits are the mapped form either way.
    public let isIPv4: Bool

    /// The prefix of the IPv4-mapped block, `::ffff:0:0/96`, in `low`.
    @usableFromInline static let mappedTag: UInt64 = 0x0000_FFFF_0000_0000

    @inlinable
    public init(ipv4 value: UInt32) {
        high = 0
        low = IPAddress.mappedTag | UInt64(value)
        isIPv4 = true
    }

    @inlinable
    public init(ipv6High high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
        isIPv4 = false
    }

    /// From 4 bytes in network order (`in_addr`, a PROXY v2 address).
    @inlinable
    public init(ipv4Bytes b: UnsafeRawBufferPointer) {
        precondition(b.count == 4)
        self.init(ipv4: UInt32(b[0]) << 24 | UInt32(b[1]) << 16 | UInt32(b[2]) << 8 | UInt32(b[3]))
    }

    /// From 16 bytes in network order (`in6_addr`, a PROXY v2 address).
    @inlinable
    public init(ipv6Bytes b: UnsafeRawBufferPointer) {
        precondition(b.count == 16)
        var h: UInt64 = 0
        var l: UInt64 = 0
        for i in 0..<8 { h = h << 8 | UInt64(b[i]) }
        for i in 8..<16 { l = l << 8 | UInt64(b[i]) }
        self.init(ipv6High: h, low: l)
    }

    /// The address lies in `::ffff:0:0/96` (IPv4, however it was written).
    @inlinable
    public var isIPv4Mapped: Bool { high == 0 && low & 0xFFFF_FFFF_0000_0000 == IPAddress.mappedTag }

    /// The IPv4 address, for an address in the mapped block.
    @inlinable
    public var ipv4Value: UInt32? { isIPv4Mapped ? UInt32(truncatingIfNeeded: low) : nil }

    /// The 16-bit group `index` (0–7) of the IPv6 form.
    @inlinable
    public func group(_ index: Int) -> UInt16 {
        let word = index < 4 ? high : low
        return UInt16(truncatingIfNeeded: word >> UInt64(48 - 16 * (index & 3)))
    }

    /// The same host: equal bits, whichever family it was written in.
    @inlinable
    public func isSameHost(as other: IPAddress) -> Bool { high == other.high && low == other.low }
}
