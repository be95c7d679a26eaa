import Core

/// Version 2, the binary header (spec §2.2):
///
///     bytes 0–11   signature \r\n\r\n\0\r\nQUIT\n
///     byte  12     version (high nibble, must be 2) | command (low: 0 LOCAL, 1 PROXY)
///     byte  13     family (high: 0 UNSPEC, 1 INET, 2 INET6, 3 UNIX)
///                  | transport (low: 0 UNSPEC, 1 STREAM, 2 DGRAM)
///     bytes 14–15  length of what follows, network order
///     then         addresses: INET 4+4+2+2 = 12, INET6 16+16+2+2 = 36,
///                  UNIX 108+108 = 216 (source first); then TLVs to the end
///
/// - LOCAL: "the receiver must accept this connection as valid and must use
///   the real connection endpoints and discard the protocol block including
///   the family which is ignored" — so neither the family nor the block is
///   checked, and no TLVs are read.
/// - Only the family/transport bytes 0x00, 0x11, 0x12, 0x21, 0x22, 0x31,
///   0x32 are defined; other values "must be rejected as invalid by
///   receivers". UNSPEC (0x00) under PROXY: the addresses are to be ignored
///   and the block skipped; its layout is undefined, so no TLVs are read.
/// - The length may exceed the addresses (TLVs follow) but never fall short
///   of them.
extension ProxyHeaderDecoder {
    func decodeV2(_ bytes: UnsafeRawBufferPointer) -> ProxyHeaderResult {
        let signature = Self.v2Signature
        for i in 0..<min(bytes.count, signature.count) where bytes[i] != signature[i] {
            return .failed(.missingSignature)
        }
        let fixed = Self.v2FixedLength
        guard bytes.count > 12 else { return .needMoreData(atLeast: fixed) }
        guard bytes[12] >> 4 == 2 else { return .failed(.v2BadVersion) }
        let command: ProxyHeader.Command
        switch bytes[12] & 0x0F {
        case 0: command = .local
        case 1: command = .proxy
        default: return .failed(.v2BadCommand)
        }
        guard bytes.count > 13 else { return .needMoreData(atLeast: fixed) }
        let family = bytes[13]
        let addressLength: Int
        let transport: ProxyHeader.Transport
        switch command == .local ? 0x00 : family {
        case 0x00: addressLength = 0; transport = .unspecified
        case 0x11: addressLength = 12; transport = .stream
        case 0x12: addressLength = 12; transport = .datagram
        case 0x21: addressLength = 36; transport = .stream
        case 0x22: addressLength = 36; transport = .datagram
        case 0x31: addressLength = 216; transport = .stream
        case 0x32: addressLength = 216; transport = .datagram
        default: return .failed(.v2BadFamily)
        }
        guard bytes.count >= fixed else { return .needMoreData(atLeast: fixed) }
        let length = Int(bytes[14]) << 8 | Int(bytes[15])
        guard length <= maxV2Length else { return .failed(.v2TooLong) }
        guard length >= addressLength else { return .failed(.v2AddressLengthMismatch) }
        let total = fixed + length
        guard bytes.count >= total else { return .needMoreData(atLeast: total) }

        var header = ProxyHeader(length: total, version: .v2, command: command, transport: transport,
                                 endpoints: .keepSocket, tlvs: .empty, ssl: nil)
        guard command == .proxy && family != 0x00 else { return .complete(header) }

        let a = fixed
        switch family >> 4 {
        case 1:
            header.endpoints = .ip(source: IPAddress(ipv4Bytes: bytes.slice(a, a + 4)), sourcePort: Self.uint16(bytes, a + 8),
                                   destination: IPAddress(ipv4Bytes: bytes.slice(a + 4, a + 8)),
                                   destinationPort: Self.uint16(bytes, a + 10))
        case 2:
            header.endpoints = .ip(source: IPAddress(ipv6Bytes: bytes.slice(a, a + 16)), sourcePort: Self.uint16(bytes, a + 32),
                                   destination: IPAddress(ipv6Bytes: bytes.slice(a + 16, a + 32)),
                                   destinationPort: Self.uint16(bytes, a + 34))
        default:
            header.endpoints = .unix(source: Self.path(bytes, a), destination: Self.path(bytes, a + 108))
        }
        header.tlvs = ByteSpan(offset: a + addressLength, length: length - addressLength)
        // §2.2: the TLVs fill the rest of the header; each must lie inside it.
        var tlvs = ProxyTLVs(bytes, header.tlvs)
        while let tlv = tlvs.next() {
            if tlv.type == ProxyTLVs.typeSSL {
                // §2.2.5: uint8_t client; uint32_t verify; then sub-TLVs.
                guard tlv.value.count >= 5 else { return .failed(.v2MalformedSSL) }
                let v = tlv.value.start
                header.ssl = ProxyHeader.SSL(client: bytes[v],
                                             verify: UInt32(Self.uint16(bytes, v + 1)) << 16 | UInt32(Self.uint16(bytes, v + 3)))
            }
        }
        guard !tlvs.overran else { return .failed(.v2TLVOverrun) }
        return .complete(header)
    }

    static func uint16(_ bytes: UnsafeRawBufferPointer, _ at: Int) -> UInt16 {
        UInt16(bytes[at]) << 8 | UInt16(bytes[at + 1])
    }

    /// A 108-byte `sun_path`, up to its first NUL.
    static func path(_ bytes: UnsafeRawBufferPointer, _ at: Int) -> ByteSpan {
        var n = 0
        while n < 108 && bytes[at + n] != 0 { n += 1 }
        return ByteSpan(offset: at, length: n)
    }
}
