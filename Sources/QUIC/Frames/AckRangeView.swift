// The ranges an ACK frame carries (RFC 9000 §19.3.1: largest first, each a
// closed range), viewed over ascending half-open ranges (a RangeSet's)
// without building anything: the newest `count` of them. The encoder reads
// it with plain index loops, so encoding an ACK allocates nothing even in
// unoptimised builds, where generic collection access (a `lazy.map`, a
// `subscript.read` witness) allocated on every use
// (PacketBuildAllocationTests).

public struct AckRangeView {
    /// Ascending, half-open, disjoint.
    @usableFromInline let ascending: [Range<UInt64>]
    public let count: Int

    /// The newest `count` of `ascending` (ascending, half-open, disjoint).
    public init(_ ascending: [Range<UInt64>], count: Int) {
        precondition(count >= 0 && count <= ascending.count)
        self.ascending = ascending
        self.count = count
    }

    /// Closed ranges, largest first (what FrameEncoder's generic entry
    /// points take), converted once.
    init<R: Collection>(closedDescending ranges: R) where R.Element == ClosedRange<UInt64> {
        // upperBound + 1 cannot overflow: packet numbers are below 2^62.
        self.init(ranges.reversed().map { $0.lowerBound..<($0.upperBound + 1) }, count: ranges.count)
    }

    /// Range `i`, counted from the largest.
    @inlinable
    public subscript(i: Int) -> ClosedRange<UInt64> {
        let r = ascending[ascending.count - 1 - i]
        return r.lowerBound...(r.upperBound - 1)
    }
}
