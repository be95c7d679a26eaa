// The storage of a byte stream whose front is consumed: SendBuffer's
// acknowledged bytes, ReassemblyBuffer's read ones. Both keep their bytes
// in one array from index `head` on and drop the consumed front here.
//
// Emptied storage is kept for the next bytes when it is large (a bulk
// transfer reuses it), freed when small: a small block freed now is reused
// by the allocations that follow, where one kept until the idle release
// would leave a hole in malloc's heap (issue 15; TRANSPORT.md, "What an
// idle HTTP/3 connection holds"). Consumed bytes are dropped from the front
// in chunks, once at least `compactionThreshold` of them make up half of
// the array (amortised O(1) per byte).

enum ConsumedFront {
    static let compactionThreshold = 4096
    /// Storage at least this large is kept when emptied.
    static let keptCapacity = 4096

    /// Drops what lies before `head` when the policy above says so.
    static func compact(_ storage: inout [UInt8], head: inout Int) {
        if head == storage.count {
            storage.removeAll(keepingCapacity: storage.capacity >= keptCapacity)
            head = 0
        } else if head >= compactionThreshold && head >= storage.count / 2 {
            storage.removeSubrange(0..<head)
            head = 0
        }
    }
}
