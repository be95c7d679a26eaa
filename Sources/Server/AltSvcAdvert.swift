/// The `alt-svc` field value that advertises HTTP/3 on HTTP/1.1 and HTTP/2
/// responses over TLS (RFC 9114 §3.1.1, RFC 7838 §3):
///
///     alt-svc: h3=":8443"; ma=86400
///
/// The authority has no host, so it is the origin's host (RFC 7838 §2.1)
/// at the QUIC port; `ma` lets a client remember it for a day. Made once per
/// worker with `--http3` (the port is the worker's UDP socket's), so a
/// response pays one field copy. Not on cleartext responses: an
/// alternative service must not be advertised for an `http` origin
/// without its authority (RFC 7838 §2.1), and HTTP/3 serves `https` only.
final class AltSvcAdvert {
    let bytes: UnsafeRawBufferPointer
    /// Freshness lifetime advertised (`ma`), in seconds.
    static let maxAgeSeconds = 86_400

    init(port: UInt16) {
        let text = Array("h3=\":\(port)\"; ma=\(AltSvcAdvert.maxAgeSeconds)".utf8)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: text.count, alignment: 1)
        buffer.copyBytes(from: text)
        bytes = UnsafeRawBufferPointer(buffer)
    }

    deinit { bytes.deallocate() }
}

extension AltSvcAdvert {
    static var fieldName: UnsafeRawBufferPointer {
        let s: StaticString = "alt-svc"
        return UnsafeRawBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount)
    }
}
