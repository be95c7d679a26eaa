// A set of UInt64 offsets or packet numbers kept as sorted, disjoint,
// non-adjacent half-open ranges.
//
// QUIC tracks many things this way: packet numbers received (the ranges of
// an ACK frame, RFC 9000 §19.3.1), stream and CRYPTO bytes received out of
// order (§2.2), bytes of a send buffer acknowledged or declared lost. The
// sets stay small — a handful of ranges in practice — so a sorted array with
// binary search beats a tree, and its capacity is reused (no allocation in
// steady state).

struct RangeSet: Equatable, Sendable {
    private(set) var ranges: [Range<UInt64>] = []

    var isEmpty: Bool { ranges.isEmpty }
    var count: Int { ranges.count }
    var first: Range<UInt64>? { ranges.first }
    var last: Range<UInt64>? { ranges.last }

    /// The index of the first range whose upper bound is ≥ `x`.
    private func firstIndex(reaching x: UInt64) -> Int {
        var lo = 0, hi = ranges.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if ranges[mid].upperBound < x { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    func contains(_ x: UInt64) -> Bool {
        let i = firstIndex(reaching: x + 1)
        return i < ranges.count && ranges[i].contains(x)
    }

    /// Whether every value of `r` is in the set.
    func contains(_ r: Range<UInt64>) -> Bool {
        if r.isEmpty { return true }
        let i = firstIndex(reaching: r.lowerBound + 1)
        return i < ranges.count && ranges[i].lowerBound <= r.lowerBound && ranges[i].upperBound >= r.upperBound
    }

    /// Adds `r`, merging it with the ranges it overlaps or touches.
    mutating func insert(_ r: Range<UInt64>) {
        guard !r.isEmpty else { return }
        let i = firstIndex(reaching: r.lowerBound)  // first range that may touch r
        var j = i
        var lower = r.lowerBound, upper = r.upperBound
        while j < ranges.count && ranges[j].lowerBound <= upper {
            lower = min(lower, ranges[j].lowerBound)
            upper = max(upper, ranges[j].upperBound)
            j += 1
        }
        if j == i {
            ranges.insert(lower..<upper, at: i)
        } else {
            ranges[i] = lower..<upper
            if j > i + 1 { ranges.removeSubrange((i + 1)..<j) }
        }
    }

    mutating func insert(_ x: UInt64) { insert(x..<(x + 1)) }

    /// Removes every value of `r`.
    mutating func remove(_ r: Range<UInt64>) {
        guard !r.isEmpty else { return }
        var i = firstIndex(reaching: r.lowerBound + 1)
        while i < ranges.count && ranges[i].lowerBound < r.upperBound {
            let cur = ranges[i]
            let left = cur.lowerBound..<max(cur.lowerBound, r.lowerBound)
            let right = min(cur.upperBound, r.upperBound)..<cur.upperBound
            switch (left.isEmpty, right.isEmpty) {
            case (true, true):
                ranges.remove(at: i)
            case (false, true):
                ranges[i] = left
                i += 1
            case (true, false):
                ranges[i] = right
                i += 1
            case (false, false):
                ranges[i] = left
                ranges.insert(right, at: i + 1)
                i += 2
            }
        }
    }

    /// Removes the ranges that start at or below `front` (they touch or
    /// overlap `..<front`) and returns where the run they make with
    /// `..<front` ends: a buffer's contiguous front moving on past data that
    /// arrived (or was acknowledged) ahead of it.
    mutating func takeRun(from front: UInt64) -> UInt64 {
        var end = front
        while let f = ranges.first, f.lowerBound <= end {
            end = max(end, f.upperBound)
            ranges.removeFirst()
        }
        return end
    }

    /// Removes every value below `x`.
    mutating func remove(below x: UInt64) {
        guard let f = ranges.first, f.lowerBound < x else { return }
        remove(f.lowerBound..<x)
    }

    /// Drops the lowest range (to bound the set's size).
    mutating func removeFirst() { ranges.removeFirst() }

    mutating func removeAll() { ranges.removeAll(keepingCapacity: true) }

    /// Gives back the array's spare capacity (an idle connection's sets,
    /// grown at their busiest, keep none: issue 15).
    mutating func releaseCapacity() {
        if ranges.isEmpty {
            ranges = []
        } else if ranges.capacity > ranges.count {
            ranges = Array(ranges)
        }
    }

    /// The first gap of `r` not in the set, if any: the lowest sub-range of
    /// `r` absent from the set.
    func firstMissing(in r: Range<UInt64>) -> Range<UInt64>? {
        var lower = r.lowerBound
        var i = firstIndex(reaching: lower + 1)
        while lower < r.upperBound {
            if i < ranges.count && ranges[i].lowerBound <= lower {
                lower = ranges[i].upperBound
                i += 1
                continue
            }
            let upper = i < ranges.count ? min(ranges[i].lowerBound, r.upperBound) : r.upperBound
            return lower..<upper
        }
        return nil
    }
}
