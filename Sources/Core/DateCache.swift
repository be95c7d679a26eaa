import CSys

/// The `Date` header value (RFC 9110 §6.6.1, IMF-fixdate), formatted at most
/// once per second instead of once per response.
public struct DateCache: ~Copyable {
    /// Always 29 bytes: "Sun, 06 Nov 1994 08:49:37 GMT".
    public static let length = 29
    private let storage: UnsafeMutablePointer<UInt8>
    private var second: Int64 = -1

    public init() {
        storage = .allocate(capacity: DateCache.length)
        refresh()
    }

    deinit { storage.deallocate() }

    /// Re-reads the wall clock; formats only when the second has changed.
    public mutating func refresh() {
        let now = csys_realtime_s()
        guard now != second else { return }
        second = now
        storage.withMemoryRebound(to: CChar.self, capacity: DateCache.length) { csys_http_date(now, $0) }
    }

    public var bytes: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: storage, count: DateCache.length)
    }
}
