// The HPACK static table (RFC 7541 §2.3.1, Appendix A).
//
// Sixty-one fixed entries at indices 1...61; the dynamic table follows at 62
// (§2.3.3). Stored as one byte string plus offsets so a lookup is a slice, not
// a `String`. The encoder's lookups scan linearly: 61 short entries, compared
// by length first, cost less than building a hash of them.

/// Number of entries in the static table (RFC 7541 Appendix A).
public let hpackStaticTableCount = 61

enum StaticTable {
    /// Appendix A, in order; index i + 1 is entry i.
    static let entries: [(name: StaticString, value: StaticString)] = [
        (":authority", ""),                 // 1
        (":method", "GET"),                 // 2
        (":method", "POST"),                // 3
        (":path", "/"),                     // 4
        (":path", "/index.html"),           // 5
        (":scheme", "http"),                // 6
        (":scheme", "https"),               // 7
        (":status", "200"),                 // 8
        (":status", "204"),                 // 9
        (":status", "206"),                 // 10
        (":status", "304"),                 // 11
        (":status", "400"),                 // 12
        (":status", "404"),                 // 13
        (":status", "500"),                 // 14
        ("accept-charset", ""),             // 15
        ("accept-encoding", "gzip, deflate"), // 16
        ("accept-language", ""),            // 17
        ("accept-ranges", ""),              // 18
        ("accept", ""),                     // 19
        ("access-control-allow-origin", ""), // 20
        ("age", ""),                        // 21
        ("allow", ""),                      // 22
        ("authorization", ""),              // 23
        ("cache-control", ""),              // 24
        ("content-disposition", ""),        // 25
        ("content-encoding", ""),           // 26
        ("content-language", ""),           // 27
        ("content-length", ""),             // 28
        ("content-location", ""),           // 29
        ("content-range", ""),              // 30
        ("content-type", ""),               // 31
        ("cookie", ""),                     // 32
        ("date", ""),                       // 33
        ("etag", ""),                       // 34
        ("expect", ""),                     // 35
        ("expires", ""),                    // 36
        ("from", ""),                       // 37
        ("host", ""),                       // 38
        ("if-match", ""),                   // 39
        ("if-modified-since", ""),          // 40
        ("if-none-match", ""),              // 41
        ("if-range", ""),                   // 42
        ("if-unmodified-since", ""),        // 43
        ("last-modified", ""),              // 44
        ("link", ""),                       // 45
        ("location", ""),                   // 46
        ("max-forwards", ""),               // 47
        ("proxy-authenticate", ""),         // 48
        ("proxy-authorization", ""),        // 49
        ("range", ""),                      // 50
        ("referer", ""),                    // 51
        ("refresh", ""),                    // 52
        ("retry-after", ""),                // 53
        ("server", ""),                     // 54
        ("set-cookie", ""),                 // 55
        ("strict-transport-security", ""),  // 56
        ("transfer-encoding", ""),          // 57
        ("user-agent", ""),                 // 58
        ("vary", ""),                       // 59
        ("via", ""),                        // 60
        ("www-authenticate", ""),           // 61
    ]

    /// Name of entry `index` (1...61).
    static func name(_ index: Int) -> UnsafeRawBufferPointer {
        raw(entries[index - 1].name)
    }

    /// Value of entry `index` (1...61).
    static func value(_ index: Int) -> UnsafeRawBufferPointer {
        raw(entries[index - 1].value)
    }

    /// Static strings live in the binary's constant data, so the pointer
    /// outlives every use.
    static func raw(_ s: StaticString) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount)
    }

    /// The index of an entry equal to (name, value), and failing that the
    /// first entry with that name (the lowest index, as in Appendix C.5.2).
    static func lookup(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> (index: Int, valueMatches: Bool)? {
        var nameIndex = 0
        for i in 0..<entries.count {
            let n = raw(entries[i].name)
            guard bytesEqual(n, name) else { continue }
            if bytesEqual(raw(entries[i].value), value) { return (i + 1, true) }
            if nameIndex == 0 { nameIndex = i + 1 }
        }
        return nameIndex == 0 ? nil : (nameIndex, false)
    }
}

@usableFromInline
func bytesEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
    guard a.count == b.count else { return false }
    if a.count == 0 { return true }
    return memcmpEqual(a.baseAddress!, b.baseAddress!, a.count)
}

@usableFromInline
func memcmpEqual(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, _ n: Int) -> Bool {
    for i in 0..<n where a.load(fromByteOffset: i, as: UInt8.self) != b.load(fromByteOffset: i, as: UInt8.self) {
        return false
    }
    return true
}
