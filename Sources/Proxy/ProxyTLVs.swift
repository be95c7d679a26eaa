import Core

/// The TLVs of a v2 header (spec §2.2, after the addresses), in order:
///
///     struct pp2_tlv { uint8_t type; uint8_t length_hi; uint8_t length_lo; uint8_t value[0]; };
///
/// Types the spec defines (all skipped by the decoder except SSL, which it
/// notes): ALPN 0x01, AUTHORITY 0x02, CRC32C 0x03, NOOP 0x04, UNIQUE_ID
/// 0x05, SSL 0x20 (with sub-TLVs 0x21–0x25), NETNS 0x30. The CRC32C is not
/// checked (§2.2.3 leaves that to the receiver); the header comes from a
/// trusted peer over TCP.
///
/// The walk stops at the first TLV whose header or value would run past the
/// region and sets `overran`; the decoder refuses such a header, so on a
/// `ProxyHeader.tlvs` region the walk always reaches the end.
public struct ProxyTLVs: IteratorProtocol {
    public static let typeALPN: UInt8 = 0x01
    public static let typeAuthority: UInt8 = 0x02
    public static let typeCRC32C: UInt8 = 0x03
    public static let typeNoop: UInt8 = 0x04
    public static let typeUniqueID: UInt8 = 0x05
    public static let typeSSL: UInt8 = 0x20
    public static let typeNetNS: UInt8 = 0x30

    public struct TLV: Equatable, Sendable {
        public var type: UInt8
        /// The value, as a span of the input.
        public var value: ByteSpan
    }

    private let bytes: UnsafeRawBufferPointer
    private var position: Int
    private let end: Int
    /// A TLV ran past the region.
    public private(set) var overran = false

    /// The TLVs in `region` of `bytes` (the buffer the header was decoded from).
    public init(_ bytes: UnsafeRawBufferPointer, _ region: ByteSpan) {
        precondition(region.start >= 0 && region.end <= bytes.count)
        self.bytes = bytes
        self.position = region.start
        self.end = region.end
    }

    public mutating func next() -> TLV? {
        guard position < end, !overran else { return nil }
        guard end - position >= 3 else {
            overran = true
            return nil
        }
        let length = Int(bytes[position + 1]) << 8 | Int(bytes[position + 2])
        guard length <= end - position - 3 else {
            overran = true
            return nil
        }
        let tlv = TLV(type: bytes[position], value: ByteSpan(offset: position + 3, length: length))
        position += 3 + length
        return tlv
    }
}
