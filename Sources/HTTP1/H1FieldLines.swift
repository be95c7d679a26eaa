/// Field lines alone (`name: value\r\n` each, RFC 9112 §5), for a head whose
/// other lines the caller writes itself — the WebSocket 101 response, whose
/// handshake fields come from the WebSocket module.
///
///     let lines = H1FieldLines(fields)
///     out.reserve(lines.length)
///     out.count += lines.write(into: out.base + out.count)
public struct H1FieldLines<Field: H1FieldBytes> {
    @usableFromInline let fields: UnsafeBufferPointer<Field>
    /// Bytes `write(into:)` writes.
    public let length: Int

    @inlinable
    public init(_ fields: UnsafeBufferPointer<Field>) {
        self.fields = fields
        var n = 0
        for f in fields { n += HeadBytes.fieldLineLength(f.name, f.value) }
        length = n
    }

    /// Writes the lines at `p`, which has room for `length` bytes; returns
    /// `length`.
    @inlinable
    @discardableResult
    public func write(into p: UnsafeMutableRawPointer) -> Int {
        var out = HeadBytes(p)
        for f in fields { out.putFieldLine(f.name, f.value) }
        return out.count
    }
}
