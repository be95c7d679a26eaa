/// The fields the operator adds to every response (`--header NAME:VALUE`,
/// `--server-header VALUE`), laid out once at start-up so that a response
/// pays one copy for all of them:
///
///     storage   x-frame-options: DENY\r\nserver: peregrine\r\n
///     lines     (0, 15, 17, 4) (23, 6, 31, 9)      start, name, value
///
/// Names are stored lower-case (HTTP/2 and HTTP/3 require it, RFC 9113
/// §8.2.1, RFC 9114 §4.2; HTTP/1.1 names are case-insensitive, RFC 9110
/// §5.1). The HTTP/1.1 writers copy `storage` whole; HTTP/2 and HTTP/3 take
/// each line's name and value.
///
/// The application wins: a field it sets itself suppresses every default of
/// that name for its response (`lines(except:)`, whose mask the exchange's
/// gateway side computes, see `ResponseFields.overriddenDefaults`). At most
/// `maxCount` fields, so a mask fits one word.
///
/// Immutable after `init`; each worker (thread) holds its own.
public final class DefaultResponseFields {
    /// A mask of suppressed fields is one `UInt64`.
    public static let maxCount = 64

    public let count: Int
    /// Bytes of every line together.
    public let totalLength: Int
    private let storage: UnsafeMutableRawBufferPointer
    /// Per line: offset of its first byte, name length, value offset,
    /// value length.
    private let table: UnsafeMutablePointer<(start: Int, nameCount: Int, valueStart: Int, valueCount: Int)>

    /// `fields`: lower-case token names and values without CR, LF or NUL
    /// (validated where they were given, `ResponseHeaderOption`).
    public init(_ fields: [(name: [UInt8], value: [UInt8])]) {
        precondition(fields.count <= DefaultResponseFields.maxCount)
        count = fields.count
        var total = 0
        for f in fields { total += f.name.count + f.value.count + 4 }
        totalLength = total
        storage = .allocate(byteCount: max(total, 1), alignment: 1)
        table = .allocate(capacity: max(fields.count, 1))
        var at = 0
        for (i, f) in fields.enumerated() {
            let start = at
            for b in f.name { storage[at] = b; at += 1 }
            storage[at] = UInt8(ascii: ":"); storage[at + 1] = UInt8(ascii: " "); at += 2
            let valueStart = at
            for b in f.value { storage[at] = b; at += 1 }
            storage[at] = 0x0D; storage[at + 1] = 0x0A; at += 2
            table[i] = (start, f.name.count, valueStart, f.value.count)
        }
    }

    deinit {
        storage.deallocate()
        table.deallocate()
    }

    public var isEmpty: Bool { count == 0 }

    /// Field `i`'s lower-case name.
    public func name(_ i: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: storage.baseAddress! + table[i].start, count: table[i].nameCount)
    }

    /// Field `i`'s value.
    public func value(_ i: Int) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: storage.baseAddress! + table[i].valueStart, count: table[i].valueCount)
    }

    /// Field `i`'s HTTP/1.1 line, `name: value\r\n`.
    public func line(_ i: Int) -> UnsafeRawBufferPointer {
        let end = table[i].valueStart + table[i].valueCount + 2
        return UnsafeRawBufferPointer(start: storage.baseAddress! + table[i].start, count: end - table[i].start)
    }

    /// The lines to write for one response: all, or all but those the
    /// application overrode (bit `i` set: field `i` is left out). A view
    /// valid while this object lives (the worker's lifetime).
    public func lines(except suppressed: UInt64) -> DefaultFieldLines {
        DefaultFieldLines(fields: self, suppressed: suppressed)
    }

    /// The name is one of the defaults (any case), for a caller that adds
    /// a field of its own unless the operator gave one (`alt-svc`).
    public func contains(name: StaticString) -> Bool {
        for i in 0..<count where self.name(i).equalsIgnoringASCIICase(name) { return true }
        return false
    }

    /// The mask of defaults whose name equals `name` (any case): what a
    /// field of the application's with that name suppresses.
    public func matching(_ name: UnsafeRawBufferPointer) -> UInt64 {
        var mask: UInt64 = 0
        for i in 0..<count where table[i].nameCount == name.count && DefaultResponseFields.sameName(self.name(i), name) {
            mask |= 1 << UInt64(i)
        }
        return mask
    }

    /// `lower` (lower-case) and `name` (any case) are the same name.
    private static func sameName(_ lower: UnsafeRawBufferPointer, _ name: UnsafeRawBufferPointer) -> Bool {
        for i in 0..<lower.count {
            let c = name[i]
            if (c >= 0x41 && c <= 0x5A ? c | 0x20 : c) != lower[i] { return false }
        }
        return true
    }
}

/// One response's default field lines (see `DefaultResponseFields`): the
/// HTTP/1.1 head writers size and copy them, HTTP/2 and HTTP/3 iterate.
public struct DefaultFieldLines {
    public let fields: DefaultResponseFields
    /// Bit `i`: field `i` is not sent (the application set that name).
    public let suppressed: UInt64

    /// Bytes `write(into:)` writes.
    public var length: Int {
        if suppressed == 0 { return fields.totalLength }
        var n = 0
        for i in 0..<fields.count where suppressed & (1 << UInt64(i)) == 0 { n += fields.line(i).count }
        return n
    }

    /// Writes the lines at `p` (room for `length` bytes); returns the count.
    public func write(into p: UnsafeMutableRawPointer) -> Int {
        guard fields.count > 0 else { return 0 }
        if suppressed == 0 {
            p.copyMemory(from: fields.line(0).baseAddress!, byteCount: fields.totalLength)
            return fields.totalLength
        }
        var n = 0
        for i in 0..<fields.count where suppressed & (1 << UInt64(i)) == 0 {
            let l = fields.line(i)
            (p + n).copyMemory(from: l.baseAddress!, byteCount: l.count)
            n += l.count
        }
        return n
    }

    /// Calls `body` with each name and value to send, in order.
    @inlinable
    public func forEach(_ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> Void) {
        for i in 0..<fields.count where suppressed & (1 << UInt64(i)) == 0 { body(fields.name(i), fields.value(i)) }
    }
}
