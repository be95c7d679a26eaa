import PyBridge

/// A forwarded host (`uri-host [ ":" port ]`, already validated by the
/// resolver) split for the gateways: the name without its port, and an
/// IPv6 literal without its brackets, as the socket's own addresses are
/// written in `server` / `SERVER_NAME`.
enum ForwardedHostParts {
    static func name(_ host: UnsafeRawBufferPointer) -> UnsafeRawBufferPointer {
        if host.first == 0x5B, let close = host.firstIndex(of: 0x5D) {
            return UnsafeRawBufferPointer(rebasing: host[1..<close])
        }
        let end = host.firstIndex(of: 0x3A) ?? host.count
        return UnsafeRawBufferPointer(rebasing: host[0..<end])
    }
}

extension ForwardedResolution {
    /// The server port a forwarded host implies: the port the resolver
    /// found (`X-Forwarded-Port`, else the host's own), else the default
    /// port of the scheme the request reports (RFC 9110 §4.2.1, §4.2.2).
    func serverPort(secure: Bool) -> Int {
        if let port { return Int(port) }
        return secure ? 443 : 80
    }
}

/// The text of a forwarded client address as a Python str: written into a
/// stack buffer (RFC 5952 form), no Swift String.
func pythonText(_ address: IPAddress) -> PyRef? {
    withUnsafeTemporaryAllocation(byteCount: IPAddress.maxTextLength, alignment: 1) { out in
        let n = address.writeText(into: out)
        return Py.latin1(UnsafeRawBufferPointer(rebasing: out[0..<n]))
    }
}
