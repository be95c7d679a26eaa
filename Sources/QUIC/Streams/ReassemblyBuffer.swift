// Out-of-order reassembly of a byte stream (RFC 9000 §2.2): STREAM and
// CRYPTO frames may arrive in any order, overlap and repeat; the reader gets
// the bytes in order.
//
// Bytes are stored from the read offset on, each at its stream offset minus
// the read offset, in one contiguous array. The readable part, from the read
// offset to `contiguousEnd`, is two numbers; only bytes received beyond a
// gap (out of order) have their ranges kept in a RangeSet, so in-order data
// never allocates for it.
// Memory is bounded by the caller: stream data by the flow-control limit it
// advertised (§4.1: a peer sending past it is a FLOW_CONTROL_ERROR before
// anything is stored), CRYPTO data by `CryptoReceiveBuffer.limit`. Consumed
// bytes are dropped from the front in chunks (ConsumedFront), so a steady
// stream's large array is reused and does not allocate.

struct ReassemblyBuffer {
    private var storage: [UInt8] = []
    /// Index in `storage` of the byte at `readOffset`.
    private var head = 0
    /// Stream offset of the next byte to read.
    private(set) var readOffset: UInt64 = 0
    /// Everything from `readOffset` to here was received (readable).
    private var contiguousEnd: UInt64 = 0
    /// Received ranges beyond a gap: all above `contiguousEnd`, none
    /// touching it.
    private var received = RangeSet()

    /// Consumed bytes are dropped from the front once at least this many
    /// make up half of the array (ConsumedFront).
    static let compactionThreshold = ConsumedFront.compactionThreshold

    /// The end of the highest byte received (or `readOffset`).
    var receivedEnd: UInt64 { max(contiguousEnd, received.last?.upperBound ?? 0) }

    /// Bytes readable now, in order.
    var contiguousCount: Int { Int(contiguousEnd - readOffset) }

    /// Bytes held (received, not yet read), for tests of the memory bound.
    var bufferedByteCount: Int { storage.count - head }

    /// Where the storage lives, for tests that it is reused, not copied.
    var storageAddress: UnsafeRawPointer? { storage.withUnsafeBytes { $0.baseAddress } }

    /// Stores `bytes` found at stream offset `offset`; bytes below the read
    /// offset or already received are ignored (§2.2: retransmitted data
    /// "MUST NOT" differ; we keep the first copy).
    mutating func write(offset: UInt64, _ bytes: UnsafeRawBufferPointer) {
        let end = offset + UInt64(bytes.count)
        guard end > readOffset else { return }
        let start = max(offset, readOffset)
        let needed = head + Int(end - readOffset)
        if storage.count < needed { storage.append(contentsOf: repeatElement(0, count: needed - storage.count)) }
        let skip = Int(start - offset)
        storage.withUnsafeMutableBytes { dst in
            let at = head + Int(start - readOffset)
            (dst.baseAddress! + at).copyMemory(from: bytes.baseAddress! + skip, byteCount: bytes.count - skip)
        }
        guard start <= contiguousEnd else {
            received.insert(start..<end)
            return
        }
        // Extends the readable part, and with it any ranges it now reaches.
        contiguousEnd = received.takeRun(from: max(contiguousEnd, end))
    }

    /// Calls `body` with the readable bytes.
    func withContiguousBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        let n = contiguousCount
        return storage.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[head..<(head + n)])) }
    }

    /// Marks `n` readable bytes read.
    mutating func consume(_ n: Int) {
        precondition(n <= contiguousCount, "consumed more than was readable")
        guard n > 0 else { return }
        readOffset += UInt64(n)
        head += n
        ConsumedFront.compact(&storage, head: &head)
    }

    /// Gives back the storage kept for the next bytes once everything
    /// received was read (an idle stream, issue 15).
    mutating func releaseIdleCapacity() {
        if head == storage.count {
            storage = []
            head = 0
        }
        received.releaseCapacity()
    }

    /// Skips everything up to `offset` (data the application will never
    /// read: a reset or abandoned stream), freeing the memory.
    mutating func discard(upTo offset: UInt64) {
        guard offset > readOffset else { return }
        storage.removeAll(keepingCapacity: false)
        head = 0
        readOffset = offset
        // Keep nothing: what is above `offset` is discarded too by the
        // callers (they drop all later data as it arrives).
        contiguousEnd = offset
        received.removeAll()
    }
}
