// HKDF-Extract and TLS 1.3's HKDF-Expand-Label (RFC 9001 §5.1, RFC 9846
// §7.1) over libcrypto. Secrets are small arrays: they are derived a few
// times per connection, never per packet.

import CTLS

public enum HKDF {
    public enum Hash: Sendable {
        case sha256, sha384

        public var length: Int { self == .sha256 ? 32 : 48 }
        var cValue: Int32 { self == .sha256 ? Int32(CTLS_QUIC_SHA256) : Int32(CTLS_QUIC_SHA384) }
    }

    public static func extract(_ hash: Hash, salt: [UInt8], inputKeyingMaterial ikm: UnsafeRawBufferPointer) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: hash.length)
        let n = salt.withUnsafeBufferPointer { s in
            out.withUnsafeMutableBufferPointer { o in
                ctls_quic_hkdf_extract(hash.cValue, s.baseAddress, s.count, ikm.baseAddress?.assumingMemoryBound(to: UInt8.self),
                                       ikm.count, o.baseAddress, o.count)
            }
        }
        precondition(n == Int32(hash.length), "HKDF-Extract failed in libcrypto")
        return out
    }

    /// HKDF-Expand-Label(secret, label, "", length); `label` without the
    /// "tls13 " prefix.
    public static func expandLabel(_ hash: Hash, secret: [UInt8], label: StaticString, length: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: length)
        let rc = secret.withUnsafeBufferPointer { s in
            out.withUnsafeMutableBufferPointer { o in
                ctls_quic_hkdf_expand_label(hash.cValue, s.baseAddress, s.count, label.utf8Start, label.utf8CodeUnitCount,
                                            nil, 0, o.baseAddress, o.count)
            }
        }
        precondition(rc == 0, "HKDF-Expand-Label failed in libcrypto")
        return out
    }
}
