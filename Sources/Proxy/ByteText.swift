/// Small byte-level helpers for the header grammars (RFC 9110 §5.6,
/// RFC 3986), kept in this module so it depends on `Core` only.
extension UnsafeRawBufferPointer {
    /// The bytes spell `lowercase` in any ASCII case.
    @inlinable
    func equalsIgnoringCase(_ lowercase: StaticString) -> Bool {
        guard count == lowercase.utf8CodeUnitCount else { return false }
        let p = lowercase.utf8Start
        for i in 0..<count {
            var b = self[i]
            if b >= 0x41 && b <= 0x5A { b |= 0x20 }
            if b != p[i] { return false }
        }
        return true
    }

    /// `self[start..<end]` as a buffer of its own (same memory).
    @inlinable
    func slice(_ start: Int, _ end: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: self[start..<end])
    }
}

enum ByteText {
    /// tchar (RFC 9110 §5.6.2).
    static func isTchar(_ b: UInt8) -> Bool {
        switch b {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
        case 0x21, 0x23, 0x24, 0x25, 0x26, 0x27, 0x2A, 0x2B, 0x2D, 0x2E, 0x5E, 0x5F, 0x60, 0x7C, 0x7E: return true
        default: return false
        }
    }

    /// OWS = *( SP / HTAB ) (RFC 9110 §5.6.3).
    static func isOWS(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 }

    static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

    static func isAlpha(_ b: UInt8) -> Bool { (b | 0x20) >= 0x61 && (b | 0x20) <= 0x7A }

    /// unreserved / sub-delims (RFC 3986 §2.2, §2.3): reg-name bytes other
    /// than pct-encoded.
    static func isRegNameByte(_ b: UInt8) -> Bool {
        switch b {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2D, 0x2E, 0x5F, 0x7E: return true
        case 0x21, 0x24, 0x26, 0x27, 0x28, 0x29, 0x2A, 0x2B, 0x2C, 0x3B, 0x3D: return true
        default: return false
        }
    }

    /// `1*5DIGIT` with a value of at most 65535 (RFC 7239 §6 `port`,
    /// RFC 3986 §3.2.3 with the TCP range).
    static func port(_ text: UnsafeRawBufferPointer) -> UInt16? {
        guard text.count >= 1, text.count <= 5 else { return nil }
        var value = 0
        for b in text {
            guard isDigit(b) else { return nil }
            value = value * 10 + Int(b - 0x30)
        }
        return value <= 65535 ? UInt16(value) : nil
    }
}
