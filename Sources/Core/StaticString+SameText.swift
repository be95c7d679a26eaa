extension StaticString {
    /// True when both strings spell the same bytes. The protocol errors
    /// (`H1Error`, `H2Error`, `WebSocketError`, ...) carry a `StaticString`
    /// reason and compare by it, so a test may build an error from a literal
    /// and still equal the catalogue constant the parser threw. Two uses of
    /// one constant share their storage, so pointer identity answers first.
    @inlinable
    public func sameText(as other: StaticString) -> Bool {
        withUTF8Buffer { a in
            other.withUTF8Buffer { b in
                a.count == b.count && (a.baseAddress == b.baseAddress || a.elementsEqual(b))
            }
        }
    }
}
