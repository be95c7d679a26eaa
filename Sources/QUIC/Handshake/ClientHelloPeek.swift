// Reading the client's transport parameters out of its ClientHello before
// TLS does (RFC 9368 §2.2, RFC 9369 §4).
//
// Compatible version negotiation needs the client's version_information
// before the server answers: the server's first flight (ServerHello and
// EncryptedExtensions, with our own version_information) must already use
// the negotiated version's Initial keys and name it as the Chosen Version.
// So the first Initial CRYPTO bytes are read here, without changing them:
// the TLS 1.3 ClientHello (RFC 8446 §4.1.2) is walked to its extensions and
// the body of quic_transport_parameters (0x39, RFC 9001 §8.2) is found.
// Anything malformed is left for TLS to refuse.

public enum ClientHelloPeek: Equatable, Sendable {
    /// The ClientHello is not whole yet.
    case needMoreBytes
    /// The extension body, as a range of the bytes given.
    case transportParameters(Range<Int>)
    /// Not a well-formed ClientHello, or one without the extension.
    case notFound

    /// RFC 8446 §4: msg_type client_hello(1), uint24 length, then the body.
    public static func transportParameters(in bytes: UnsafeRawBufferPointer) -> ClientHelloPeek {
        guard bytes.count >= 4 else { return .needMoreBytes }
        guard bytes[0] == 1 else { return .notFound }
        let length = Int(bytes[1]) << 16 | Int(bytes[2]) << 8 | Int(bytes[3])
        guard bytes.count >= 4 + length else { return .needMoreBytes }
        var r = Cursor(bytes: bytes, at: 4, end: 4 + length)
        // legacy_version, random, legacy_session_id<0..32>,
        // cipher_suites<2..2^16-2>, legacy_compression_methods<1..2^8-1>.
        guard r.skip(2 + 32), let session = r.uint8(), r.skip(session), let suites = r.uint16(), r.skip(suites),
              let compression = r.uint8(), r.skip(compression), let extensionsLength = r.uint16(),
              r.at + extensionsLength == r.end else { return .notFound }
        while r.at < r.end {
            guard let type = r.uint16(), let size = r.uint16(), r.at + size <= r.end else { return .notFound }
            if type == 0x39 { return .transportParameters(r.at..<(r.at + size)) }
            _ = r.skip(size)
        }
        return .notFound
    }

    private struct Cursor {
        let bytes: UnsafeRawBufferPointer
        var at: Int
        let end: Int

        mutating func skip(_ n: Int) -> Bool {
            guard at + n <= end else { return false }
            at += n
            return true
        }

        mutating func uint8() -> Int? {
            guard at + 1 <= end else { return nil }
            defer { at += 1 }
            return Int(bytes[at])
        }

        mutating func uint16() -> Int? {
            guard at + 2 <= end else { return nil }
            defer { at += 2 }
            return Int(bytes[at]) << 8 | Int(bytes[at + 1])
        }
    }
}
