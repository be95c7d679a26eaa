/// A growable byte buffer with a read cursor: bytes are appended at
/// `writerIndex` and consumed from `readerIndex`.
///
/// It is a plain struct over a raw allocation, owned by exactly one
/// connection; the owner decides where the storage comes from (a pool block
/// or a larger one-off allocation) through `storage`/`capacity`, and returns
/// it. Nothing here frees memory by itself.
public struct ByteBuffer {
    public private(set) var storage: UnsafeMutableRawPointer?
    public private(set) var capacity: Int = 0
    public var readerIndex: Int = 0
    public var writerIndex: Int = 0

    public init() {}

    @inlinable public var readableCount: Int { writerIndex - readerIndex }
    @inlinable public var writableCount: Int { capacity - writerIndex }
    @inlinable public var isEmpty: Bool { readerIndex == writerIndex }
    public var hasStorage: Bool { storage != nil }

    /// The unread bytes.
    public var readable: UnsafeRawBufferPointer {
        guard let s = storage else { return UnsafeRawBufferPointer(start: nil, count: 0) }
        return UnsafeRawBufferPointer(start: s + readerIndex, count: readerIndex == writerIndex ? 0 : writerIndex - readerIndex)
    }

    /// Free space after the written bytes.
    public var writable: UnsafeMutableRawBufferPointer {
        UnsafeMutableRawBufferPointer(start: storage! + writerIndex, count: capacity - writerIndex)
    }

    public mutating func attach(_ block: UnsafeMutableRawPointer, capacity: Int) {
        precondition(storage == nil)
        storage = block
        self.capacity = capacity
        readerIndex = 0
        writerIndex = 0
    }

    /// Gives up the storage (to be returned by the caller) and resets.
    public mutating func detach() -> UnsafeMutableRawPointer? {
        let s = storage
        storage = nil
        capacity = 0
        readerIndex = 0
        writerIndex = 0
        return s
    }

    /// Moves unread bytes to the front so the free space is contiguous.
    public mutating func compact() {
        guard readerIndex > 0, let s = storage else { return }
        let n = writerIndex - readerIndex
        if n > 0 { s.copyMemory(from: s + readerIndex, byteCount: n) }
        readerIndex = 0
        writerIndex = n
    }

    /// Moves the contents into a new allocation of `newCapacity` bytes and
    /// returns the old storage for the caller to release.
    public mutating func move(toNewStorage block: UnsafeMutableRawPointer, capacity newCapacity: Int) -> UnsafeMutableRawPointer? {
        let n = readableCount
        precondition(newCapacity >= n)
        if n > 0 { block.copyMemory(from: storage! + readerIndex, byteCount: n) }
        let old = storage
        storage = block
        capacity = newCapacity
        readerIndex = 0
        writerIndex = n
        return old
    }

    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        precondition(bytes.count <= writableCount)
        if bytes.count > 0 { (storage! + writerIndex).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count) }
        writerIndex += bytes.count
    }

    /// Appends `bytes` to a buffer that owns its storage (never a pool
    /// block: outgrown storage is deallocated), compacting first and then
    /// moving to an allocation that doubles from `minimumCapacity` until
    /// they fit.
    public mutating func appendGrowing(_ bytes: UnsafeRawBufferPointer, minimumCapacity: Int = 16 * 1024) {
        guard !bytes.isEmpty else { return }
        if writableCount < bytes.count {
            compact()
            if writableCount < bytes.count {
                var newCapacity = max(capacity, minimumCapacity)
                while newCapacity - readableCount < bytes.count { newCapacity *= 2 }
                let block = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
                if hasStorage {
                    move(toNewStorage: block, capacity: newCapacity)?.deallocate()
                } else {
                    attach(block, capacity: newCapacity)
                }
            }
        }
        append(bytes)
    }
}
