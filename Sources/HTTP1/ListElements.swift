/// Walks a comma-separated list value (`#element`, RFC 9110 §5.6.1), handing
/// out each element with the OWS around it removed. Empty elements are
/// reported (as start == end) and each caller decides what they mean.
/// Quoted strings are not special: none of the lists we interpret
/// (Transfer-Encoding, Connection, Expect) has a valid value
/// containing one, and a comma inside quotes only yields extra elements that
/// are rejected or ignored anyway.
struct ListElements {
    private let bytes: Bytes
    private var position: Int
    private let end: Int
    private var done = false

    init(_ bytes: Bytes, start: Int, end: Int) {
        self.bytes = bytes
        self.position = start
        self.end = end
    }

    /// The next element as `start..<end`, or nil after the last.
    mutating func next() -> (start: Int, end: Int)? {
        if done { return nil }
        var i = position
        while i < end && ByteClass.isOWS(bytes[i]) { i += 1 }
        let elementStart = i
        var elementEnd = i
        while i < end && bytes[i] != Byte.comma {
            if !ByteClass.isOWS(bytes[i]) { elementEnd = i + 1 }
            i += 1
        }
        if i == end { done = true } else { position = i + 1 }
        return (elementStart, elementEnd)
    }
}
