/// IP addresses to text, in the canonical form of RFC 5952 §4:
///
/// - leading zeros of a group suppressed (§4.1), hex digits in lower case
///   (§4.3);
/// - `::` replaces the longest run of two or more zero groups, the first
///   such run on a tie (§4.2.2, §4.2.3); a single zero group stays `0`;
/// - an IPv4-mapped address that was not received as IPv4 is written
///   `::ffff:a.b.c.d` (§5); one received as IPv4 is written `a.b.c.d`.
///
/// Output goes into the caller's buffer: no `String`, no allocation.
extension IPAddress {
    /// Writes the text form into `out` (at least `maxTextLength` bytes) and
    /// returns its length.
    public func writeText(into out: UnsafeMutableRawBufferPointer) -> Int {
        precondition(out.count >= IPAddress.maxTextLength)
        var n = 0
        if isIPv4 {
            return Self.writeDottedQuad(UInt32(truncatingIfNeeded: low), into: out, at: 0)
        }
        if isIPv4Mapped {
            for b in "::ffff:".utf8 { out[n] = b; n += 1 }
            return Self.writeDottedQuad(UInt32(truncatingIfNeeded: low), into: out, at: n)
        }
        // The longest run of zero groups, at least two long; the first wins a tie.
        var bestStart = -1
        var bestLength = 1
        var runStart = -1
        for k in 0...8 {
            if k < 8 && group(k) == 0 {
                if runStart < 0 { runStart = k }
            } else if runStart >= 0 {
                if k - runStart > bestLength {
                    bestStart = runStart
                    bestLength = k - runStart
                }
                runStart = -1
            }
        }
        var k = 0
        var separate = false  // a ':' goes before the next group
        while k < 8 {
            if k == bestStart {
                // "::" stands for the run and the separators around it.
                out[n] = 0x3A; out[n + 1] = 0x3A; n += 2
                k += bestLength
                separate = false
                continue
            }
            if separate { out[n] = 0x3A; n += 1 }
            n = Self.writeHex(group(k), into: out, at: n)
            separate = true
            k += 1
        }
        return n
    }

    static func writeHex(_ value: UInt16, into out: UnsafeMutableRawBufferPointer, at start: Int) -> Int {
        let digits: StaticString = "0123456789abcdef"
        var n = start
        var shift = 12
        while shift > 0 && (value >> UInt16(shift)) == 0 { shift -= 4 }
        while shift >= 0 {
            out[n] = digits.utf8Start[Int((value >> UInt16(shift)) & 0xF)]
            n += 1
            shift -= 4
        }
        return n
    }

    static func writeDottedQuad(_ value: UInt32, into out: UnsafeMutableRawBufferPointer, at start: Int) -> Int {
        var n = start
        for part in 0..<4 {
            if part > 0 { out[n] = 0x2E; n += 1 }
            let octet = Int((value >> UInt32(24 - 8 * part)) & 0xFF)
            if octet >= 100 { out[n] = UInt8(0x30 + octet / 100); n += 1 }
            if octet >= 10 { out[n] = UInt8(0x30 + octet / 10 % 10); n += 1 }
            out[n] = UInt8(0x30 + octet % 10); n += 1
        }
        return n
    }
}

extension IPAddress: CustomStringConvertible {
    /// The canonical text (logs, errors and tests; the request path writes
    /// into its own buffer with `writeText(into:)`).
    public var description: String {
        withUnsafeTemporaryAllocation(byteCount: IPAddress.maxTextLength, alignment: 1) { out in
            let n = writeText(into: out)
            return String(decoding: UnsafeRawBufferPointer(rebasing: out[..<n]), as: UTF8.self)
        }
    }
}
