extension UnsafeRawBufferPointer {
    /// The bytes spell `lowercase` (an ASCII literal in lower case), in any
    /// case: field names and tokens are case-insensitive (RFC 9110 §5.1,
    /// §5.6.2).
    @inlinable
    public func equalsIgnoringASCIICase(_ lowercase: StaticString) -> Bool {
        guard count == lowercase.utf8CodeUnitCount else { return false }
        let p = lowercase.utf8Start
        for i in 0..<count {
            var b = self[i]
            if b >= 0x41 && b <= 0x5A { b |= 0x20 }
            if b != p[i] { return false }
        }
        return true
    }
}

extension UnsafeRawBufferPointer {
    /// The bytes spell `lowercase` (bytes already in lower case), in any
    /// case: a field name chosen at run time (`--request-id-header`).
    @inlinable
    public func equalsIgnoringASCIICase(_ lowercase: UnsafeRawBufferPointer) -> Bool {
        guard count == lowercase.count else { return false }
        for i in 0..<count {
            var b = self[i]
            if b >= 0x41 && b <= 0x5A { b |= 0x20 }
            if b != lowercase[i] { return false }
        }
        return true
    }
}
