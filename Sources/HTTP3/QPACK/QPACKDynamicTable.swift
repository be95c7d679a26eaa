// The QPACK dynamic table at the decoder (RFC 9204 §3.2).
//
// Entries are addressed by absolute index (§3.2.4): the first entry ever
// inserted is 0, and indices keep growing as entries are inserted; eviction
// removes the oldest. `insertCount` is the number of inserts so far and
// `droppedCount` the number evicted, so the live entries are the absolute
// indices droppedCount ..< insertCount. Size is §3.2.1: name + value + 32.
// An insert first evicts the oldest entries until it fits (§3.2.2); an entry
// larger than the capacity is an encoder-stream error (checked by the caller
// with `fits`). Lowering the capacity evicts at once (§3.2.3).
//
// Storage: one array of entries in insertion order and the index of the
// oldest live one; the dead prefix is dropped when it is more than half the
// array, so eviction is amortised O(1).

public struct QPACKDynamicTable: Sendable {
    public static let entryOverhead = 32

    struct Entry: Sendable {
        var name: [UInt8]
        var value: [UInt8]
        var size: Int { name.count + value.count + QPACKDynamicTable.entryOverhead }
    }

    private var entries: [Entry] = []
    private var first = 0
    public private(set) var capacity = 0
    public private(set) var size = 0
    public private(set) var insertCount = 0
    public var droppedCount: Int { insertCount - (entries.count - first) }
    public var count: Int { entries.count - first }

    public init() {}

    /// Whether an entry of `size` bytes can ever be inserted.
    public func fits(_ entrySize: Int) -> Bool { entrySize <= capacity }

    /// Sets the capacity (already checked against our maximum), evicting.
    public mutating func setCapacity(_ c: Int) {
        capacity = c
        evict(toFit: 0)
    }

    /// Inserts (name, value); the caller has checked `fits`.
    public mutating func insert(name: [UInt8], value: [UInt8]) {
        let e = Entry(name: name, value: value)
        evict(toFit: e.size)
        entries.append(e)
        size += e.size
        insertCount += 1
    }

    /// The live entry with absolute index `abs`, or nil if evicted or absent.
    public func entry(absolute abs: Int) -> (name: [UInt8], value: [UInt8])? {
        guard abs >= droppedCount && abs < insertCount else { return nil }
        let e = entries[first + abs - droppedCount]
        return (e.name, e.value)
    }

    private mutating func evict(toFit extra: Int) {
        while size + extra > capacity && first < entries.count {
            size -= entries[first].size
            first += 1
        }
        if first > 32 && first * 2 > entries.count {
            entries.removeSubrange(0 ..< first)
            first = 0
        }
    }
}
