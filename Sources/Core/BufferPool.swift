/// Fixed-size byte blocks for connection read buffers, recycled through a
/// free list so a busy worker stops calling malloc once warm.
///
/// A connection holds a block only while it has bytes to keep (a partial
/// request, a body in flight); an idle keep-alive connection gives its block
/// back, which is what keeps thousands of idle connections cheap. At most
/// `maxFree` blocks are kept; the rest go back to the allocator.
public struct BufferPool: ~Copyable {
    public let blockSize: Int
    private let maxFree: Int
    private var free: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    private var freeCount = 0

    public init(blockSize: Int = 16 * 1024, maxFree: Int = 256) {
        self.blockSize = blockSize
        self.maxFree = maxFree
        free = .allocate(capacity: maxFree)
    }

    deinit {
        for i in 0..<freeCount { free[i]!.deallocate() }
        free.deallocate()
    }

    public mutating func take() -> UnsafeMutableRawPointer {
        if freeCount > 0 {
            freeCount -= 1
            return free[freeCount]!
        }
        return .allocate(byteCount: blockSize, alignment: 16)
    }

    public mutating func give(_ block: UnsafeMutableRawPointer) {
        if freeCount < maxFree {
            free[freeCount] = block
            freeCount += 1
        } else {
            block.deallocate()
        }
    }
}
