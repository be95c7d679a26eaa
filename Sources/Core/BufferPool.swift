import CSys

/// Fixed-size byte blocks for connection read buffers, recycled through a
/// free list so a busy worker stops allocating once warm.
///
/// A connection holds a block only while it has bytes to keep (a partial
/// request, a body in flight); an idle keep-alive connection gives its block
/// back, which is what keeps thousands of idle connections cheap. Blocks are
/// whole pages of their own (mmap), so that memory a burst needed can go
/// back to the system: `trim()` (the worker calls it about once a second)
/// empties the free blocks beyond the `hot` most recently returned (madvise
/// DONTNEED; they read as zeros when used again). Every ASGI request in
/// flight holds its block, so without this a burst of concurrent requests
/// would leave its peak in resident memory after the connections go idle.
/// At most `maxFree` blocks are kept at all.
public struct BufferPool: ~Copyable {
    public let blockSize: Int
    private let maxFree: Int
    private let hot: Int
    private var free: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    /// Whether the free block at the same index still holds its pages.
    private var resident: UnsafeMutablePointer<Bool>
    private var freeCount = 0
    /// Blocks taken and not given back.
    private var inUse = 0

    /// What the pool holds, for the stats line (SIGUSR2).
    public struct Usage: Equatable, Sendable {
        public var blockSize: Int
        public var inUse: Int
        public var free: Int
        /// Mapped by the pool: blocks in use and free (a trimmed free
        /// block's pages are back with the kernel, its mapping is not).
        public var bytes: Int { (inUse + free) * blockSize }
        public init(blockSize: Int, inUse: Int, free: Int) {
            self.blockSize = blockSize
            self.inUse = inUse
            self.free = free
        }
    }

    public var usage: Usage { Usage(blockSize: blockSize, inUse: inUse, free: freeCount) }

    public init(blockSize: Int = 16 * 1024, maxFree: Int = 256, hot: Int = 4) {
        self.blockSize = blockSize
        self.maxFree = maxFree
        self.hot = hot
        free = .allocate(capacity: maxFree)
        resident = .allocate(capacity: maxFree)
    }

    deinit {
        for i in 0..<freeCount { csys_pages_unmap(free[i]!, blockSize) }
        free.deallocate()
        resident.deallocate()
    }

    public mutating func take() -> UnsafeMutableRawPointer {
        inUse += 1
        if freeCount > 0 {
            freeCount -= 1
            return free[freeCount]!
        }
        guard let block = csys_pages_map(blockSize) else {
            // Out of address space or mappings: an ordinary allocation would
            // fail as well.
            fatalError("cannot map a \(blockSize)-byte buffer block")
        }
        return block
    }

    public mutating func give(_ block: UnsafeMutableRawPointer) {
        inUse -= 1
        guard freeCount < maxFree else {
            csys_pages_unmap(block, blockSize)
            return
        }
        free[freeCount] = block
        resident[freeCount] = true
        freeCount += 1
    }

    /// Gives the pages of free blocks beyond the hot set back to the system.
    public mutating func trim() {
        guard freeCount > hot else { return }
        for i in 0..<(freeCount - hot) where resident[i] {
            csys_pages_discard(free[i]!, blockSize)
            resident[i] = false
        }
    }
}
