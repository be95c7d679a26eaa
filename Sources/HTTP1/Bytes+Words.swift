/// Word-at-a-time (SWAR) reads over `Bytes`: eight bytes per load, tested
/// with carry-free arithmetic so one compare covers the word.
///
/// Why (and why `Unsafe` loads here): the head parser spent about 20
/// instructions per byte of field lines testing bytes one by one; a word
/// costs a handful of instructions for eight bytes. With the class table the
/// parser went from 2,961 to 1,765 instructions per request (callgrind, WSGI
/// hello over h1, BENCHMARKS.md optimisation log). Loads are unaligned and
/// little-endian (byte i of the word is the byte at offset i), and every
/// caller keeps `offset + 8` (or the width read) inside the range it was given.
extension Bytes {
    @usableFromInline static let ones: UInt64 = 0x0101_0101_0101_0101
    @usableFromInline static let highs: UInt64 = 0x8080_8080_8080_8080

    @inlinable @inline(__always)
    func load64(_ i: Int) -> UInt64 {
        UInt64(littleEndian: UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self))
    }

    @inlinable @inline(__always)
    func load32(_ i: Int) -> UInt32 {
        UInt32(littleEndian: UnsafeRawPointer(base + i).loadUnaligned(as: UInt32.self))
    }

    @inlinable @inline(__always)
    func load16(_ i: Int) -> UInt16 {
        UInt16(littleEndian: UnsafeRawPointer(base + i).loadUnaligned(as: UInt16.self))
    }

    /// The high bit of each byte of `w` that is a CTL other than HTAB, or
    /// DEL: the bytes a field value may not hold (RFC 9110 §5.5), CR among
    /// them, so the first one flagged is where a line's value ends or goes
    /// wrong. Bits above the lowest set one may be false (a borrow carries
    /// upward); the lowest is always exact, which is all callers use.
    /// HTAB is flagged too (as a byte < 0x20); the caller steps over it.
    @inlinable @inline(__always)
    static func controlOrDEL(_ w: UInt64) -> UInt64 {
        let below20 = (w &- 0x20 &* ones) & ~w & highs
        let x = w ^ (0x7F &* ones)
        let del = (x &- ones) & ~x & highs
        return below20 | del
    }

    /// The high bit of each byte of `w` that is not a VCHAR (0x21-0x7E): the
    /// bytes a request-target may not hold. Lowest set bit exact, as above.
    @inlinable @inline(__always)
    static func notVCHAR(_ w: UInt64) -> UInt64 {
        let below21 = (w &- 0x21 &* ones) & ~w & highs
        // A byte >= 0x7F: its high bit, or all seven low bits set.
        let high = (w | ((w & ~highs) &+ ones)) & highs
        return below21 | high
    }

    /// `w` with ASCII A-Z turned to a-z and every other byte unchanged: each
    /// byte's low seven bits are compared to the range without a carry
    /// between bytes (0x7F + 0x3F < 0x100).
    @inlinable @inline(__always)
    static func lowercased(_ w: UInt64) -> UInt64 {
        let low7 = w & ~highs
        let atLeastA = low7 &+ (0x80 - 0x41) &* ones
        let pastZ = low7 &+ (0x80 - 0x5B) &* ones
        let upper = atLeastA & ~pastZ & ~w & highs
        return w | (upper &>> 2)
    }

    /// Whether `start..<end` equals `text`, exactly (`exact`) or with A-Z
    /// folded to a-z (then `text` must be lowercase), by words: overlapping
    /// loads at the start and end of the range cover any length without a
    /// byte loop.
    @inlinable @inline(__always)
    func wordsEqual(_ start: Int, _ end: Int, _ text: StaticString, foldCase: Bool) -> Bool {
        let n = text.utf8CodeUnitCount
        guard end - start == n else { return false }
        let t = Bytes(UnsafeRawBufferPointer(start: text.utf8Start, count: n))
        @inline(__always) func word(_ w: UInt64) -> UInt64 { foldCase ? Bytes.lowercased(w) : w }
        if n >= 8 {
            var i = 0
            while i + 8 < n {
                if word(load64(start + i)) != t.load64(i) { return false }
                i += 8
            }
            return word(load64(end - 8)) == t.load64(n - 8)
        }
        if n >= 4 {
            let a = UInt64(load32(start)) | UInt64(load32(end - 4)) << 32
            return word(a) == UInt64(t.load32(0)) | UInt64(t.load32(n - 4)) << 32
        }
        if n >= 2 {
            let a = UInt64(load16(start)) | UInt64(load16(end - 2)) << 16
            return word(a) == UInt64(t.load16(0)) | UInt64(t.load16(n - 2)) << 16
        }
        if n == 1 { return word(UInt64(self[start])) == UInt64(t[0]) }
        return true
    }
}
