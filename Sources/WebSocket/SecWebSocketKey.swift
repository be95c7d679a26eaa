/// The client's `Sec-WebSocket-Key` and the `Sec-WebSocket-Accept` derived
/// from it (RFC 6455 §4.2.1 item 5, §4.2.2 step 5, §1.3).
///
/// Theory of operation. The key MUST be "a base64-encoded value that, when
/// decoded, is 16 bytes in length" (§4.2.1). We decode it strictly (see
/// `Base64`) and keep the 16 bytes inline, so the handshake state holds no
/// pointer into the read buffer. Because strict decoding accepts exactly one
/// encoding per byte string, re-encoding reproduces the client's 24
/// characters byte for byte, which is what the accept value is computed over:
///
///     Sec-WebSocket-Accept = base64( SHA-1( key-as-sent ++ GUID ) )
///     GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
///
/// e.g. key "dGhlIHNhbXBsZSBub25jZQ==" → "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" (§1.3).
public struct SecWebSocketKey: Equatable, Hashable, Sendable {
    /// The 16 decoded bytes, big-endian halves.
    public let high: UInt64
    public let low: UInt64

    /// §1.3: the GUID appended to the key before hashing.
    public static let guid: StaticString = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
    /// base64 of 16 bytes, padding included.
    public static let encodedLength = 24
    /// base64 of a 20-byte SHA-1 digest.
    public static let acceptLength = 28

    /// Decodes a field value (surrounding OWS ignored); nil unless it is the
    /// canonical base64 encoding of exactly 16 bytes.
    public init?(fieldValue: UnsafeRawBufferPointer) {
        let (start, end) = FieldSyntax.trimmed(fieldValue)
        guard end - start == SecWebSocketKey.encodedLength else { return nil }
        var decoded: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 18 bytes needed for 24 chars
        let count = withUnsafeMutableBytes(of: &decoded) { out in
            Base64.decode(UnsafeRawBufferPointer(rebasing: fieldValue[start..<end]), into: out)
        }
        guard count == 16 else { return nil }
        let (first, second, _) = decoded
        high = UInt64(bigEndian: first)
        low = UInt64(bigEndian: second)
    }

    /// The key as sent: 24 base64 characters at the start of `output`.
    @discardableResult
    public func writeEncoded(into output: UnsafeMutableRawBufferPointer) -> Int {
        var raw = (high.bigEndian, low.bigEndian)
        return withUnsafeBytes(of: &raw) { Base64.encode($0, into: output) }
    }

    /// Writes the 28-byte `Sec-WebSocket-Accept` value at the start of
    /// `output` (which must hold `acceptLength` bytes) and returns 28.
    @discardableResult
    public func writeAccept(into output: UnsafeMutableRawBufferPointer) -> Int {
        precondition(output.count >= SecWebSocketKey.acceptLength)
        var sha = SHA1()
        var encoded: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes
        withUnsafeMutableBytes(of: &encoded) { buffer in
            writeEncoded(into: buffer)
            sha.update(UnsafeRawBufferPointer(buffer))
        }
        SecWebSocketKey.guid.withUTF8Buffer { sha.update(UnsafeRawBufferPointer($0)) }
        var digest: (UInt64, UInt64, UInt32) = (0, 0, 0)  // 20 bytes
        return withUnsafeMutableBytes(of: &digest) { buffer in
            sha.finish(into: buffer)
            return Base64.encode(UnsafeRawBufferPointer(rebasing: buffer[0..<SHA1.digestLength]), into: output)
        }
    }
}
