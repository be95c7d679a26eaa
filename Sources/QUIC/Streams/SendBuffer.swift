// The bytes of one outgoing stream (or CRYPTO stream) from the lowest
// unacknowledged offset on (RFC 9000 §2.2, §13.3).
//
// The application appends; the packet builder takes chunks — first ranges
// declared lost (§13.3: "Application data sent in STREAM frames is
// retransmitted in new STREAM frames"), then new bytes; acknowledgments
// mark ranges done and the front is dropped once everything below an
// offset is acknowledged. Retransmitted bytes are the same bytes at the same
// offsets, re-framed to fit the packet at hand. Memory is bounded by the
// caller (`maxSendBufferPerStream` for streams); the acknowledged front is
// dropped as ConsumedFront says (a bulk sender's array reused, a small one
// freed when it empties).

struct SendBuffer {
    private var storage: [UInt8] = []
    private var head = 0
    /// Everything below `base` is acknowledged and dropped.
    private(set) var base: UInt64 = 0
    /// The offset after the last byte written.
    private(set) var end: UInt64 = 0
    /// The next offset never sent.
    private(set) var nextNew: UInt64 = 0
    /// Ranges to send again, lowest first.
    private var lost = RangeSet()
    /// Acknowledged ranges above `base`.
    private var acked = RangeSet()

    /// Bytes held (written, not yet acknowledged).
    var bufferedCount: Int { Int(end - base) }
    var hasLostData: Bool { !lost.isEmpty }
    var hasNewData: Bool { nextNew < end }
    var allAcknowledged: Bool { base == end }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        storage.append(contentsOf: bytes)
        end += UInt64(bytes.count)
    }

    /// The next range to send, at most `maxLength` bytes: lost data first
    /// (`isNew` false); else new data up to `newLimit` (flow control).
    func nextChunk(maxLength: Int, newLimit: UInt64) -> (offset: UInt64, length: Int, isNew: Bool)? {
        guard maxLength > 0 else { return nil }
        if let r = lost.first {
            return (r.lowerBound, min(maxLength, Int(r.upperBound - r.lowerBound)), false)
        }
        let limit = min(end, newLimit)
        guard nextNew < limit else { return nil }
        return (nextNew, min(maxLength, Int(limit - nextNew)), true)
    }

    /// Records that `offset..<offset+length` went out in a packet.
    mutating func markSent(offset: UInt64, length: Int) {
        let r = offset..<(offset + UInt64(length))
        lost.remove(r)
        if r.upperBound > nextNew { nextNew = r.upperBound }
    }

    /// The bytes of a range not yet acknowledged (contiguous in storage).
    func withBytes<R>(offset: UInt64, length: Int, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        precondition(offset >= base && offset + UInt64(length) <= end)
        let at = head + Int(offset - base)
        return storage.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[at..<(at + length)])) }
    }

    /// A packet carrying the range was acknowledged. The range may lie
    /// wholly below `base` already: another copy of the same bytes (a PTO
    /// probe's, RFC 9002 §6.2.4, or a retransmission of a packet declared
    /// lost too early, §6.1) was acknowledged first.
    mutating func markAcked(offset: UInt64, length: Int) {
        let upper = min(offset + UInt64(length), end)  // past `end`: dropped by `truncate`
        guard upper > base, offset < upper else { return }
        let r = max(offset, base)..<upper
        lost.remove(r)
        guard r.lowerBound == base else {
            acked.insert(r)
            return
        }
        // In order, the common case: the front moves on without `acked`
        // holding the range (it allocates only for acknowledgments that
        // arrive out of order), taking along the ranges it now reaches.
        let front = acked.takeRun(from: r.upperBound)
        head += Int(front - base)
        base = front
        ConsumedFront.compact(&storage, head: &head)
    }

    /// A packet carrying the range was declared lost: send the part not
    /// acknowledged since (by another copy) again.
    /// As in `markAcked`, the range may already be below `base`.
    mutating func markLost(offset: UInt64, length: Int) {
        let upper = min(offset + UInt64(length), end)  // past `end`: dropped by `truncate`
        guard upper > base, offset < upper else { return }
        var r = max(offset, base)..<upper
        while let gap = acked.firstMissing(in: r) {
            lost.insert(gap)
            r = gap.upperBound..<r.upperBound
        }
    }

    /// Keeps only the bytes below `offset` (a reliable reset, draft-ietf-
    /// quic-reliable-stream-reset §5: bytes below the Reliable Size are
    /// still sent and resent until acknowledged, those above never again).
    /// Acknowledgments and losses of dropped bytes are ignored from now on.
    mutating func truncate(at offset: UInt64) {
        guard offset < end else { return }
        let cut = max(offset, base)
        storage.removeSubrange((head + Int(cut - base))...)
        end = cut
        nextNew = min(nextNew, cut)
        lost.remove(cut..<UInt64.max)
        acked.remove(cut..<UInt64.max)
    }

    /// Gives back the storage kept for the next bytes once everything
    /// written was acknowledged (an idle stream, issue 15).
    mutating func releaseIdleCapacity() {
        if head == storage.count {
            storage = []
            head = 0
        }
        lost.releaseCapacity()
        acked.releaseCapacity()
    }

    /// Forgets everything (the stream was reset): nothing is sent again.
    mutating func abandon() {
        storage.removeAll(keepingCapacity: false)
        head = 0
        base = end
        nextNew = end
        lost.removeAll()
        acked.removeAll()
    }
}
