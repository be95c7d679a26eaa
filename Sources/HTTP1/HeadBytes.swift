/// A write cursor over memory the caller reserved for a head: the writers
/// compute their exact length first, so nothing here checks capacity
/// (size first, write once, STYLE §2).
@usableFromInline
struct HeadBytes {
    @usableFromInline let start: UnsafeMutableRawPointer
    @usableFromInline var cursor: UnsafeMutableRawPointer

    @inlinable
    init(_ p: UnsafeMutableRawPointer) {
        start = p
        cursor = p
    }

    /// Bytes written so far.
    @inlinable
    var count: Int { cursor - start }

    @inlinable
    mutating func put(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        cursor.copyMemory(from: base, byteCount: bytes.count)
        cursor += bytes.count
    }

    @inlinable
    mutating func put(_ s: StaticString) {
        cursor.copyMemory(from: s.utf8Start, byteCount: s.utf8CodeUnitCount)
        cursor += s.utf8CodeUnitCount
    }

    /// The length of a status line and `fields`' lines (every head starts so).
    @inlinable
    static func statusAndFieldsLength<Field: H1FieldBytes>(_ status: UInt64, reasonCount: Int,
                                                           _ fields: UnsafeBufferPointer<Field>) -> Int {
        var n = statusLineLength(status, reasonCount: reasonCount)
        for f in fields { n += fieldLineLength(f.name, f.value) }
        return n
    }

    /// Writes a status line and `fields`' lines.
    @inlinable
    mutating func putStatusAndFields<Field: H1FieldBytes>(_ status: UInt64, _ reason: UnsafeRawBufferPointer,
                                                          _ fields: UnsafeBufferPointer<Field>) {
        putStatusLine(status, reason)
        for f in fields { putFieldLine(f.name, f.value) }
    }

    /// Writes `value` in decimal, without leading zeros.
    @inlinable
    mutating func put(decimal value: UInt64) {
        let n = HeadBytes.decimalLength(value)
        var v = value
        var i = n
        repeat {
            i -= 1
            cursor.storeBytes(of: UInt8(truncatingIfNeeded: 0x30 &+ v % 10), toByteOffset: i, as: UInt8.self)
            v /= 10
        } while v > 0
        cursor += n
    }

    /// Digits `put(decimal:)` writes for `value`.
    @inlinable
    static func decimalLength(_ value: UInt64) -> Int {
        var n = 1
        var v = value
        while v >= 10 {
            v /= 10
            n += 1
        }
        return n
    }

    /// Bytes of `name: value\r\n`.
    @inlinable
    static func fieldLineLength(_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) -> Int {
        name.count + value.count + 4
    }

    @inlinable
    mutating func putFieldLine(_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) {
        put(name)
        put(": ")
        put(value)
        put("\r\n")
    }

    /// `HTTP/1.1 <status> <reason>\r\n` (RFC 9112 §4): the server answers in
    /// the highest minor version it supports, also to 1.0 clients
    /// (RFC 9110 §6.2), and an empty reason keeps its SP (RFC 9112 §4).
    @inlinable
    static func statusLineLength(_ status: UInt64, reasonCount: Int) -> Int {
        9 + decimalLength(status) + 1 + reasonCount + 2
    }

    @inlinable
    mutating func putStatusLine(_ status: UInt64, _ reason: UnsafeRawBufferPointer) {
        put("HTTP/1.1 ")
        put(decimal: status)
        put(" ")
        put(reason)
        put("\r\n")
    }
}

extension StaticString {
    @inlinable
    var rawBytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: utf8Start, count: utf8CodeUnitCount) }
}
