// The HPACK dynamic table (RFC 7541 §2.3.2, §4).
//
// A FIFO of (name, value) entries: new entries go in front (index 1 here,
// 62 in the combined address space, §2.3.3) and the oldest are evicted from
// the back. Size accounting is §4.1: an entry costs its name length + value
// length + 32. §4.4: adding an entry first evicts until it fits; an entry
// larger than the maximum size empties the table and is not added. §4.3: a
// lower maximum size evicts at once.
//
// Storage: entry bytes sit back to back in one array in insertion order, with
// the entry records (offset, name length, value length) in a second array.
// Eviction only advances two start indices; when the dead prefix grows past
// half of an array it is compacted, so work is amortised O(1) per byte and the
// arrays stop growing once they reach about twice the table size (steady
// state: no allocation). Live entry bytes never exceed `maxSize`.

/// The HPACK dynamic table shared in shape by the decoder and the encoder.
public struct DynamicTable: Sendable {
    /// The RFC 7541 §4.1 per-entry overhead.
    public static let entryOverhead = 32

    @usableFromInline
    struct Entry: Sendable {
        var offset: Int  // absolute index into `bytes`
        var nameLength: Int32
        var valueLength: Int32
        var size: Int { Int(nameLength) + Int(valueLength) + DynamicTable.entryOverhead }
    }

    private var bytes: [UInt8] = []
    private var bytesStart = 0
    private var entries: [Entry] = []
    private var entriesStart = 0

    /// Sum of the entry sizes (§4.1).
    public private(set) var size = 0
    /// The current maximum size (§4.2), as last set by a size update.
    public private(set) var maxSize: Int

    public init(maxSize: Int) {
        self.maxSize = maxSize
        bytes.reserveCapacity(maxSize)
    }

    /// Number of entries.
    public var count: Int { entries.count - entriesStart }

    /// Entry `index` (1 = newest) — name bytes.
    public func name(_ index: Int) -> ArraySlice<UInt8> {
        let e = entry(index)
        return bytes[e.offset ..< e.offset + Int(e.nameLength)]
    }

    /// Entry `index` (1 = newest) — value bytes.
    public func value(_ index: Int) -> ArraySlice<UInt8> {
        let e = entry(index)
        let v = e.offset + Int(e.nameLength)
        return bytes[v ..< v + Int(e.valueLength)]
    }

    /// Size (§4.1) of entry `index` (1 = newest).
    public func entrySize(_ index: Int) -> Int { entry(index).size }

    private func entry(_ index: Int) -> Entry {
        precondition(index >= 1 && index <= count)
        return entries[entries.count - index]
    }

    /// Adds an entry, evicting as §4.4 says. `name` and `value` must not
    /// point into this table (the caller copies first).
    public mutating func add(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        let entrySize = name.count + value.count + Self.entryOverhead
        guard entrySize <= maxSize else {
            // §4.4: "an attempt to add an entry larger than the maximum size
            // causes the table to be emptied of all existing entries".
            removeAll()
            return
        }
        evict(toFit: maxSize - entrySize)
        if bytesStart > 0 && bytesStart >= bytes.count / 2 { compactBytes() }
        let offset = bytes.count
        bytes.append(contentsOf: name)
        bytes.append(contentsOf: value)
        if entriesStart > 0 && entriesStart >= entries.count / 2 {
            entries.removeSubrange(0 ..< entriesStart)
            entriesStart = 0
        }
        entries.append(Entry(offset: offset, nameLength: Int32(name.count), valueLength: Int32(value.count)))
        size += entrySize
    }

    /// Applies a new maximum size (§4.3), evicting as needed.
    public mutating func setMaxSize(_ newMax: Int) {
        maxSize = newMax
        evict(toFit: newMax)
    }

    /// Looks for (name, value) among the entries, newest first.
    /// - Returns: the index (1 = newest) of an exact match, or else of the
    ///   newest entry with that name, or nil.
    public func find(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> (index: Int, valueMatches: Bool)? {
        var nameIndex = 0
        bytes.withUnsafeBytes { all in
            var i = entries.count - 1
            while i >= entriesStart {
                let e = entries[i]
                let n = UnsafeRawBufferPointer(rebasing: all[e.offset ..< e.offset + Int(e.nameLength)])
                if bytesEqual(n, name) {
                    let vs = e.offset + Int(e.nameLength)
                    if bytesEqual(UnsafeRawBufferPointer(rebasing: all[vs ..< vs + Int(e.valueLength)]), value) {
                        nameIndex = -(entries.count - i)
                        return
                    }
                    if nameIndex == 0 { nameIndex = entries.count - i }
                }
                i -= 1
            }
        }
        if nameIndex < 0 { return (-nameIndex, true) }
        return nameIndex == 0 ? nil : (nameIndex, false)
    }

    private mutating func evict(toFit limit: Int) {
        while size > limit {
            let e = entries[entriesStart]
            entriesStart += 1
            size -= e.size
            bytesStart = e.offset + Int(e.nameLength) + Int(e.valueLength)
        }
        if entriesStart == entries.count { removeAll() }
    }

    private mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        entries.removeAll(keepingCapacity: true)
        bytesStart = 0
        entriesStart = 0
        size = 0
    }

    private mutating func compactBytes() {
        let shift = bytesStart
        bytes.removeSubrange(0 ..< shift)
        for i in entriesStart ..< entries.count { entries[i].offset -= shift }
        bytesStart = 0
    }
}
