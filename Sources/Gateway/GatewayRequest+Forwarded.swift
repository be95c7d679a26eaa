/// Trusted proxies (`--forwarded-allow-ips`): the one place where a
/// request's forwarding fields are read, whatever transport carried it.
extension GatewayRequest {
    /// Resolves `Forwarded` / `X-Forwarded-*` against `resolver` and keeps
    /// the result in `forwarded` (left nil when nothing changes). From a
    /// peer the list does not trust, the fields are not even looked at:
    /// they reach the application untouched and change nothing.
    ///
    /// No allocation: the field lines point into the request's own bytes.
    public mutating func resolveForwarded(_ resolver: ForwardedResolver) {
        guard resolver.trusted.contains(peer.address) else { return }
        var lines = ForwardedFieldLines()
        for i in 0..<fieldCount {
            let f = fields[i]
            lines.append(name: bytes(f.name), value: bytes(f.value))
        }
        let resolution = resolver.resolve(peer: peer.address, fields: lines)
        if !resolution.isUnchanged { forwarded = resolution }
    }
}

extension GatewayRequest {
    /// The request's bytes were copied from `old` to `new` (a --wsgi-threads
    /// pool thread takes its own copy): the forwarded host and an
    /// obfuscated client, which point into those bytes, follow them.
    public mutating func rebaseForwarded(from old: UnsafeRawPointer, to new: UnsafeRawPointer) {
        guard var resolution = forwarded else { return }
        func moved(_ slice: FieldSlice) -> FieldSlice {
            guard let start = slice.bytes.baseAddress else { return slice }
            return FieldSlice(UnsafeRawBufferPointer(start: new + (start - old), count: slice.bytes.count))
        }
        if let host = resolution.host { resolution.host = moved(host) }
        if case .obfuscated(let identifier) = resolution.client { resolution.client = .obfuscated(moved(identifier)) }
        forwarded = resolution
    }
}
