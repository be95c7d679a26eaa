/// A first-in first-out ring of tokens with a fixed capacity, allocated once.
public struct FixedRing: ~Copyable {
    public let capacity: Int
    private let storage: UnsafeMutablePointer<UInt64>
    private var head = 0
    public private(set) var count = 0

    public init(capacity: Int) {
        precondition(capacity > 0)
        self.capacity = capacity
        storage = .allocate(capacity: capacity)
    }

    deinit { storage.deallocate() }

    public var isEmpty: Bool { count == 0 }

    /// False when full (nothing is added).
    public mutating func push(_ value: UInt64) -> Bool {
        guard count < capacity else { return false }
        storage[(head + count) % capacity] = value
        count += 1
        return true
    }

    public mutating func pop() -> UInt64? {
        guard count > 0 else { return nil }
        let value = storage[head]
        head = (head + 1) % capacity
        count -= 1
        return value
    }
}
