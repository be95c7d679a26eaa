import Core

extension SocketAddress {
    /// The address as text, for the application and the access log:
    /// dotted quad for IPv4; RFC 5952 for IPv6 (lower-case hex, the longest
    /// run of two or more zero groups as `::`). Made once per QUIC
    /// connection, not per request.
    var text: String {
        if family == .ipv4 {
            let v = ipv4Value
            return "\(v >> 24).\(v >> 16 & 0xFF).\(v >> 8 & 0xFF).\(v & 0xFF)"
        }
        var groups: [UInt16] = []
        for i in 0..<4 { groups.append(UInt16(truncatingIfNeeded: high >> (48 - 16 * i))) }
        for i in 0..<4 { groups.append(UInt16(truncatingIfNeeded: low >> (48 - 16 * i))) }
        var bestStart = -1, bestLength = 1
        var i = 0
        while i < 8 {
            guard groups[i] == 0 else { i += 1; continue }
            var j = i
            while j < 8 && groups[j] == 0 { j += 1 }
            if j - i > bestLength { bestStart = i; bestLength = j - i }
            i = j
        }
        func hex(_ range: Range<Int>) -> String { range.map { String(groups[$0], radix: 16) }.joined(separator: ":") }
        guard bestStart >= 0 else { return hex(0..<8) }
        return hex(0..<bestStart) + "::" + hex((bestStart + bestLength)..<8)
    }
}
