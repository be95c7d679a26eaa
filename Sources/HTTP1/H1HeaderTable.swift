import Core

/// Caller-owned, fixed-capacity storage for the fields of one request head.
///
/// Allocated once (per connection or per worker) and reused for every
/// request, so parsing allocates nothing. Spans are relative to the buffer
/// that was passed to `H1HeadParser.parse`; names keep their original case,
/// values are trimmed of OWS on both sides. Fields whose name contains "_"
/// and fields named "Proxy" are never stored (see `FieldLine`).
public final class H1HeaderTable {
    @usableFromInline struct Entry {
        var name: ByteSpan
        var value: ByteSpan
        var token: HeaderToken
    }

    @usableFromInline let storage: UnsafeMutablePointer<Entry>
    /// The most fields the table holds; the server passes `maxHeaderCount`.
    public let capacity: Int
    public private(set) var count: Int = 0

    public init(capacity: Int) {
        precondition(capacity >= 0, "H1HeaderTable capacity must not be negative")
        self.capacity = capacity
        storage = .allocate(capacity: Swift.max(capacity, 1))
    }

    deinit { storage.deallocate() }

    /// The field name, in the case it was received.
    public func name(_ i: Int) -> ByteSpan { storage[checked(i)].name }
    /// The field value, OWS trimmed from both ends.
    public func value(_ i: Int) -> ByteSpan { storage[checked(i)].value }
    public func token(_ i: Int) -> HeaderToken { storage[checked(i)].token }

    /// Index of the first field with `token`, or nil. For `.other` this is
    /// the first unrecognised field.
    public func firstIndex(of token: HeaderToken) -> Int? {
        for i in 0..<count where storage[i].token == token { return i }
        return nil
    }

    public func removeAll() { count = 0 }

    /// Appends a field; false if the table is full.
    func append(name: ByteSpan, value: ByteSpan, token: HeaderToken) -> Bool {
        guard count < capacity else { return false }
        (storage + count).initialize(to: Entry(name: name, value: value, token: token))
        count += 1
        return true
    }

    @inline(__always)
    private func checked(_ i: Int) -> Int {
        precondition(i >= 0 && i < count, "H1HeaderTable index out of range")
        return i
    }
}
