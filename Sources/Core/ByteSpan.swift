/// A run of bytes inside a buffer, as an offset and a length.
///
/// Parsers hand these out instead of copies: a span is only meaningful
/// together with the buffer it was cut from, and only until that buffer's
/// contents move (the next compaction or `feed`). 32-bit fields keep it at
/// 8 bytes so tables of them stay small.
public struct ByteSpan: Equatable, Hashable, Sendable {
    public var offset: Int32
    public var length: Int32

    @inlinable
    public init(offset: Int, length: Int) {
        self.offset = Int32(truncatingIfNeeded: offset)
        self.length = Int32(truncatingIfNeeded: length)
    }

    public static let empty = ByteSpan(offset: 0, length: 0)

    @inlinable public var start: Int { Int(offset) }
    @inlinable public var end: Int { Int(offset) + Int(length) }
    @inlinable public var count: Int { Int(length) }
    @inlinable public var isEmpty: Bool { length == 0 }

    /// The span moved `delta` bytes towards the start of its buffer.
    @inlinable
    public func shifted(by delta: Int) -> ByteSpan {
        ByteSpan(offset: Int(offset) - delta, length: Int(length))
    }
}
