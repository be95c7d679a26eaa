/// Decodes %XX escapes of a request path into `out` (grown as needed) and
/// returns the decoded length. A `%` not followed by two hex digits is kept
/// as it is, as the common servers do.
public func percentDecode(_ raw: UnsafeRawBufferPointer, into out: inout [UInt8]) -> Int {
    if out.count < raw.count { out = [UInt8](repeating: 0, count: raw.count) }
    var n = 0
    out.withUnsafeMutableBufferPointer { dst in
        var i = 0
        while i < raw.count {
            let b = raw[i]
            if b == 0x25, i + 2 < raw.count, let hi = hexValue(raw[i + 1]), let lo = hexValue(raw[i + 2]) {
                dst[n] = hi << 4 | lo
                i += 3
            } else {
                dst[n] = b
                i += 1
            }
            n += 1
        }
    }
    return n
}

@inline(__always)
func hexValue(_ c: UInt8) -> UInt8? {
    switch c {
    case 0x30...0x39: return c - 0x30
    case 0x41...0x46: return c - 0x41 + 10
    case 0x61...0x66: return c - 0x61 + 10
    default: return nil
    }
}
