/// IPv4 and IPv6 addresses from their text forms, without libc.
///
/// IPv4 (RFC 3986 §3.2.2 `IPv4address`): exactly four `dec-octet`s, each
/// 0–255 in decimal without leading zeros ("010" could mean octal to some
/// readers and is refused, as glibc's `inet_pton` does).
///
/// IPv6 (RFC 4291 §2.2): eight groups of one to four hex digits; one `::`
/// stands for one or more zero groups; the last 32 bits may be written as an
/// IPv4 address (form 3, e.g. `::ffff:192.0.2.1`, `::13.1.68.3`). Zone
/// identifiers (`%eth0`, RFC 6874) are not addresses and are refused, as
/// are brackets (callers strip those where their grammar has them).
extension IPAddress {
    /// The longest text form: `ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255`.
    public static let maxTextLength = 45

    /// An IPv4 or IPv6 address, told apart by the presence of a colon.
    public static func parse(_ text: UnsafeRawBufferPointer) -> IPAddress? {
        if text.contains(0x3A) { return parseIPv6(text) }
        return parseIPv4(text)
    }

    /// A dotted-quad IPv4 address.
    public static func parseIPv4(_ text: UnsafeRawBufferPointer) -> IPAddress? {
        guard let value = dottedQuad(text, from: 0) else { return nil }
        return IPAddress(ipv4: value)
    }

    /// An IPv6 address in any RFC 4291 §2.2 form.
    public static func parseIPv6(_ text: UnsafeRawBufferPointer) -> IPAddress? {
        let n = text.count
        guard n >= 2, n <= maxTextLength else { return nil }
        var groups = InlineArray<8, UInt16>(repeating: 0)
        var count = 0
        var gap: Int? = nil  // index in `groups` where "::" stands
        var i = 0
        if text[0] == 0x3A {
            // A leading colon is only valid as "::".
            guard text[1] == 0x3A else { return nil }
            gap = 0
            i = 2
            if i == n { return IPAddress(ipv6High: 0, low: 0) }
        }
        while true {
            // One group, or the trailing IPv4 part.
            var j = i
            var value = 0
            while j < n, let digit = hexValue(text[j]) {
                value = value << 4 | digit
                j += 1
            }
            if j < n && text[j] == 0x2E {
                // "x:x:...:d.d.d.d": the rest is the IPv4 address, two groups.
                guard count <= 6, let v4 = dottedQuad(text, from: i) else { return nil }
                groups[count] = UInt16(truncatingIfNeeded: v4 >> 16)
                groups[count + 1] = UInt16(truncatingIfNeeded: v4)
                count += 2
                break
            }
            let digits = j - i
            guard digits >= 1, digits <= 4, count < 8 else { return nil }
            groups[count] = UInt16(value)
            count += 1
            i = j
            if i == n { break }
            guard text[i] == 0x3A, i + 1 < n else { return nil }  // a trailing single ':' is not valid
            i += 1
            if text[i] == 0x3A {
                guard gap == nil else { return nil }  // "::" at most once (RFC 4291 §2.2 item 2)
                gap = count
                i += 1
                if i == n { break }
            }
        }
        if let gap {
            // "::" stands for at least one group of zeros.
            guard count <= 7 else { return nil }
            let shift = 8 - count
            var k = 7
            while k >= gap + shift {
                groups[k] = groups[k - shift]
                k -= 1
            }
            while k >= gap {
                groups[k] = 0
                k -= 1
            }
        } else {
            guard count == 8 else { return nil }
        }
        var high: UInt64 = 0
        var low: UInt64 = 0
        for k in 0..<4 { high = high << 16 | UInt64(groups[k]) }
        for k in 4..<8 { low = low << 16 | UInt64(groups[k]) }
        return IPAddress(ipv6High: high, low: low)
    }

    /// `a.b.c.d` from `start` to the end of `text`.
    static func dottedQuad(_ text: UnsafeRawBufferPointer, from start: Int) -> UInt32? {
        let n = text.count
        guard n - start >= 7, n - start <= 15 else { return nil }
        var result: UInt32 = 0
        var i = start
        for part in 0..<4 {
            if part > 0 {
                guard i < n, text[i] == 0x2E else { return nil }
                i += 1
            }
            let first = i
            var value: UInt32 = 0
            while i < n, i - first < 3, text[i] >= 0x30, text[i] <= 0x39 {
                value = value * 10 + UInt32(text[i] - 0x30)
                i += 1
            }
            // dec-octet: 1–3 digits, no leading zero, at most 255.
            let digits = i - first
            guard digits >= 1, value <= 255, digits == 1 || text[first] != 0x30 else { return nil }
            result = result << 8 | value
        }
        return i == n ? result : nil
    }

    @inline(__always)
    static func hexValue(_ b: UInt8) -> Int? {
        switch b {
        case 0x30...0x39: return Int(b - 0x30)
        case 0x41...0x46: return Int(b - 0x41 + 10)
        case 0x61...0x66: return Int(b - 0x61 + 10)
        default: return nil
        }
    }
}

extension IPAddress {
    /// An address parsed from a Swift string (configuration and tests; the
    /// request path uses the byte-span form).
    public init?(_ text: String) {
        var copy = text
        guard let parsed = copy.withUTF8({ IPAddress.parse(UnsafeRawBufferPointer($0)) }) else { return nil }
        self = parsed
    }
}
