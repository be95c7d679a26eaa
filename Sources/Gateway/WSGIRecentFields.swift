import CPython
import PyBridge

/// The environ key and value strs made for each request field position of
/// the last request that had it, for the next request whose field at that
/// position has the very same name and value bytes.
///
/// A client on a kept-alive connection, or a load balancer in front of
/// many, sends its fields in the same order with mostly the same values
/// (Host, User-Agent, Accept...). Comparing the bytes costs a few
/// instructions a byte; finding the key (a lower-casing hash of the name)
/// and making the value str, then freeing it with the environ, cost about
/// 450 per field. Strs are immutable, so the environ may share them.
/// Fields past `positions`, or longer than `width` bytes of name and
/// value, are made afresh each time.
struct RecentFields: ~Copyable {
    private static let positions = 32
    private static let width = 240
    private let bytes: UnsafeMutablePointer<UInt8>
    /// Per position: name length, value length (-1: nothing kept).
    private let lengths: UnsafeMutablePointer<(name: Int, value: Int)>
    /// Per position: the key and the value (strong references).
    private let objects: UnsafeMutablePointer<(key: PyRef?, value: PyRef?)>

    init() {
        bytes = .allocate(capacity: Self.positions * Self.width)
        lengths = .allocate(capacity: Self.positions)
        lengths.initialize(repeating: (-1, -1), count: Self.positions)
        objects = .allocate(capacity: Self.positions)
        objects.initialize(repeating: (nil, nil), count: Self.positions)
    }

    /// The key and value kept for position `i` (borrowed, valid until the
    /// next `keep` of that position) if they were made from these bytes.
    func cached(_ i: Int, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> (PyRef, PyRef)? {
        guard i < Self.positions, lengths[i].name == name.count, lengths[i].value == value.count,
              let key = objects[i].key, let v = objects[i].value else { return nil }
        let stored = bytes + i * Self.width
        if let n = name.baseAddress, !sameBytes(stored, n, name.count) { return nil }
        if let b = value.baseAddress, !sameBytes(stored + name.count, b, value.count) { return nil }
        return (key, v)
    }

    /// Keeps `key` and `value` (consumed) as position `i`'s; returns them
    /// borrowed, valid until the next `keep` of that position (or, when
    /// they are not kept, until the caller's next `keep`).
    mutating func keep(_ i: Int, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer,
                       key: consuming PyOwned, value v: consuming PyOwned) -> (PyRef, PyRef) {
        let position = i < Self.positions ? i : Self.positions - 1
        let old = objects[position]
        objects[position] = (key.take(), v.take())
        Py.xdecref(old.key)
        Py.xdecref(old.value)
        if i < Self.positions && name.count + value.count <= Self.width {
            let stored = bytes + i * Self.width
            if let n = name.baseAddress { stored.update(from: n.assumingMemoryBound(to: UInt8.self), count: name.count) }
            if let b = value.baseAddress {
                (stored + name.count).update(from: b.assumingMemoryBound(to: UInt8.self), count: value.count)
            }
            lengths[i] = (name.count, value.count)
        } else {
            lengths[position] = (-1, -1)
        }
        return (objects[position].key!, objects[position].value!)
    }

    deinit {
        for i in 0..<Self.positions {
            Py.xdecref(objects[i].key)
            Py.xdecref(objects[i].value)
        }
        bytes.deallocate()
        lengths.deallocate()
        objects.deallocate()
    }
}

/// Whether `count` bytes at `a` and `b` are equal, compared eight at a time
/// (a Swift loop over single bytes cost about eight instructions a byte).
@inline(__always)
func sameBytes(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, _ count: Int) -> Bool {
    var i = 0
    while i + 8 <= count {
        if a.loadUnaligned(fromByteOffset: i, as: UInt64.self) != b.loadUnaligned(fromByteOffset: i, as: UInt64.self) {
            return false
        }
        i += 8
    }
    while i < count {
        if a.load(fromByteOffset: i, as: UInt8.self) != b.load(fromByteOffset: i, as: UInt8.self) { return false }
        i += 1
    }
    return true
}
