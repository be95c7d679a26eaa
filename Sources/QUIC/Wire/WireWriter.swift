// A bounds-checked cursor over a caller's output buffer for one encoder
// call (size first, write once — STYLE §2). Encoders compute their exact
// size, make a writer over at least that many bytes and `finish()` checks
// they wrote exactly that: writing past it is a programming error.

import Core

struct WireWriter {
    let base: UnsafeMutableRawPointer
    let size: Int
    private(set) var at = 0

    init(_ out: UnsafeMutableRawBufferPointer, size: Int) {
        precondition(out.count >= size, "buffer smaller than the encoder's size function")
        base = out.baseAddress!
        self.size = size
    }

    mutating func varint(_ v: UInt64, length: Int? = nil) {
        precondition(at + (length ?? VarInt.encodedLength(v)) <= size)
        at += VarInt.encode(v, to: base + at, length: length)
    }

    mutating func uint8(_ v: UInt8) {
        precondition(at < size)
        base.storeBytes(of: v, toByteOffset: at, as: UInt8.self)
        at += 1
    }

    mutating func uint16(_ v: UInt16) {
        uint8(UInt8(v >> 8))
        uint8(UInt8(truncatingIfNeeded: v))
    }

    mutating func uint32(_ v: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) { uint8(UInt8(truncatingIfNeeded: v >> UInt32(shift))) }
    }

    mutating func uint64(_ v: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) { uint8(UInt8(truncatingIfNeeded: v >> UInt64(shift))) }
    }

    mutating func bytes(_ b: UnsafeRawBufferPointer) {
        precondition(at + b.count <= size)
        if b.count > 0 { (base + at).copyMemory(from: b.baseAddress!, byteCount: b.count) }
        at += b.count
    }

    mutating func zeros(_ n: Int) {
        precondition(at + n <= size)
        if n > 0 { (base + at).initializeMemory(as: UInt8.self, repeating: 0, count: n) }
        at += n
    }

    func finish() -> Int {
        precondition(at == size, "encoder wrote other than its size")
        return at
    }
}

extension UnsafeRawBufferPointer {
    /// The bytes of `span` (which must lie inside).
    @inlinable
    public func slice(_ span: ByteSpan) -> UnsafeRawBufferPointer {
        precondition(span.start >= 0 && span.end <= count)
        return UnsafeRawBufferPointer(rebasing: self[span.start..<span.end])
    }
}
