import Core

/// Decodes the PROXY protocol header at the start of a connection (HAProxy,
/// "The PROXY protocol", versions 1 and 2), detecting the version from the
/// first byte: `P` starts a v1 line, CR the v2 signature; anything else is
/// refused at once.
///
/// Sans-I/O and stateless: the worker keeps the connection's first bytes in
/// its read buffer and calls `decode` with all of them after each read:
///
///     let decoder = ProxyHeaderDecoder(maxV2Length: 4096)
///     switch decoder.decode(buffer.readable, endOfInput: peerClosed) {
///     case .needMoreData(let n): read on (n: the least total the buffer must hold)
///     case .complete(let header): consume header.length bytes, use header.endpoints
///     case .failed(let error): close, without the application
///     }
///
/// Checks run in byte order and each needs only the bytes before it, so a
/// prefix is refused as soon as it cannot start a valid header, and the
/// verdict does not depend on how the bytes were split across reads. The
/// reads are bounded: a v1 line by 107 bytes, a v2 header by 16 +
/// `maxV2Length` (refused as soon as its length field is seen).
public struct ProxyHeaderDecoder: Sendable {
    /// v2 §2.2: "the 12-byte signature \x0D\x0A\x0D\x0A\x00\x0D\x0A\x51\x55\x49\x54\x0A".
    static let v2Signature: [UInt8] = [0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A]
    /// v1 §2.1: the line starts with "PROXY" and a single space.
    static let v1Prefix: [UInt8] = Array("PROXY ".utf8)
    /// v1 §2.1: the longest line, CRLF included ("PROXY UNKNOWN" with two
    /// full IPv6 addresses and two 5-digit ports).
    public static let v1MaxLength = 107
    /// The shortest v1 line, "PROXY UNKNOWN\r\n".
    static let v1MinLength = 15
    /// v2: the fixed part (signature, version/command, family, length).
    public static let v2FixedLength = 16

    /// The largest v2 length field accepted (addresses plus TLVs); a larger
    /// one is refused (`v2TooLong`) before its bytes are read. 4096 leaves
    /// room for the usual TLVs (ALPN, authority, SSL with its sub-TLVs, a
    /// unique ID) at a fixed cost per connection.
    public var maxV2Length: Int

    public init(maxV2Length: Int = 4096) {
        self.maxV2Length = min(max(maxV2Length, 0), 65535)
    }

    /// The header at the start of `bytes`, or what is missing. With
    /// `endOfInput` (the peer closed its side), a header still incomplete is
    /// `truncated`.
    public func decode(_ bytes: UnsafeRawBufferPointer, endOfInput: Bool = false) -> ProxyHeaderResult {
        guard let first = bytes.first else {
            return endOfInput ? .failed(.truncated) : .needMoreData(atLeast: 1)
        }
        let result: ProxyHeaderResult
        switch first {
        case 0x50: result = decodeV1(bytes)
        case 0x0D: result = decodeV2(bytes)
        default: return .failed(.missingSignature)
        }
        if endOfInput, case .needMoreData = result { return .failed(.truncated) }
        return result
    }
}

extension ProxyHeaderDecoder {
    /// `bytes` start with a whole PROXY signature: `PROXY ` (v1) or the
    /// 12-byte v2 signature. Lets a server that expects no header from a
    /// peer recognise one it must refuse.
    public static func startsWithSignature(_ bytes: UnsafeRawBufferPointer) -> Bool {
        func starts(with prefix: [UInt8]) -> Bool {
            bytes.count >= prefix.count && prefix.indices.allSatisfy { bytes[$0] == prefix[$0] }
        }
        return starts(with: v1Prefix) || starts(with: v2Signature)
    }
}
