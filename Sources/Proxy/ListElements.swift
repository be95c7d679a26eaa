/// The non-empty elements of a comma-separated list value (RFC 9110
/// §5.6.1 `#element`), OWS trimmed, left to right. Used for the
/// `X-Forwarded-*` fields, whose elements never contain quotes or commas.
struct ListElements {
    private let line: UnsafeRawBufferPointer
    private var position = 0

    init(_ line: UnsafeRawBufferPointer) { self.line = line }

    mutating func next() -> UnsafeRawBufferPointer? {
        let n = line.count
        while position < n {
            while position < n && ByteText.isOWS(line[position]) { position += 1 }
            let start = position
            var end = position
            while position < n && line[position] != 0x2C {
                if !ByteText.isOWS(line[position]) { end = position + 1 }
                position += 1
            }
            if position < n { position += 1 }  // the comma
            if end > start { return line.slice(start, end) }
        }
        return nil
    }
}
