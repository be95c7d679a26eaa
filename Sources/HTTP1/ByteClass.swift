#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Byte classes from the ABNF of RFC 9110 §5.6 and RFC 3986, as 128-bit
/// masks so a test is a shift and an AND, no branch per class member.
/// `ByteClassTests` checks each mask against its ABNF. The head parser's
/// inner loops use `ByteClassTable` (built from the same classes) and the
/// word-at-a-time tests of `Bytes+Words.swift` instead.
@usableFromInline
enum ByteClass {
    // tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." /
    //         "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA    (RFC 9110 §5.6.2)
    @usableFromInline static let tcharLow: UInt64 = 0x03ff_6cfa_0000_0000
    @usableFromInline static let tcharHigh: UInt64 = 0x57ff_ffff_c7ff_fffe
    // reg-name chars without pct-encoded: unreserved / sub-delims (RFC 3986 §3.2.2)
    @usableFromInline static let regNameLow: UInt64 = 0x2bff_7fd2_0000_0000
    @usableFromInline static let regNameHigh: UInt64 = 0x47ff_fffe_87ff_fffe

    @inlinable @inline(__always)
    static func inMask(_ b: UInt8, _ low: UInt64, _ high: UInt64) -> Bool {
        if b < 64 { return (low &>> UInt64(b)) & 1 != 0 }
        if b < 128 { return (high &>> UInt64(b &- 64)) & 1 != 0 }
        return false
    }

    @inlinable @inline(__always)
    static func isTchar(_ b: UInt8) -> Bool { inMask(b, tcharLow, tcharHigh) }

    @inlinable @inline(__always)
    static func isRegNameChar(_ b: UInt8) -> Bool { inMask(b, regNameLow, regNameHigh) }

    /// field-vchar / SP / HTAB, i.e. anything but CTL and DEL; obs-text
    /// (0x80-0xFF) is allowed (RFC 9110 §5.5).
    @inlinable @inline(__always)
    static func isFieldValueByte(_ b: UInt8) -> Bool { b == 0x09 || (b >= 0x20 && b != 0x7F) }

    /// A request-target byte: VCHAR only (no CTL, SP, DEL or bytes >= 0x80).
    @inlinable @inline(__always)
    static func isTargetByte(_ b: UInt8) -> Bool { b > 0x20 && b < 0x7F }

    @inlinable @inline(__always)
    static func isOWS(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 }

    @inlinable @inline(__always)
    static func isDigit(_ b: UInt8) -> Bool { b &- 0x30 < 10 }

    /// The value of a HEXDIG, or nil.
    @inlinable @inline(__always)
    static func hexValue(_ b: UInt8) -> UInt8? {
        if b &- 0x30 < 10 { return b &- 0x30 }
        let lower = b | 0x20
        if lower &- 0x61 < 6 { return lower &- 0x61 &+ 10 }
        return nil
    }

    @inlinable @inline(__always)
    static func lowercased(_ b: UInt8) -> UInt8 { b &- 0x41 < 26 ? b | 0x20 : b }
}

/// Fixed byte values, named as in the ABNF.
@usableFromInline enum Byte {
    @usableFromInline static let cr: UInt8 = 0x0D
    @usableFromInline static let lf: UInt8 = 0x0A
    @usableFromInline static let sp: UInt8 = 0x20
    @usableFromInline static let htab: UInt8 = 0x09
    @usableFromInline static let colon: UInt8 = 0x3A
    @usableFromInline static let comma: UInt8 = 0x2C
    @usableFromInline static let semicolon: UInt8 = 0x3B
    @usableFromInline static let equals: UInt8 = 0x3D
    @usableFromInline static let dquote: UInt8 = 0x22
    @usableFromInline static let backslash: UInt8 = 0x5C
    @usableFromInline static let slash: UInt8 = 0x2F
    @usableFromInline static let question: UInt8 = 0x3F
    @usableFromInline static let hash: UInt8 = 0x23
    @usableFromInline static let star: UInt8 = 0x2A
    @usableFromInline static let underscore: UInt8 = 0x5F
    @usableFromInline static let percent: UInt8 = 0x25
    @usableFromInline static let lbracket: UInt8 = 0x5B
    @usableFromInline static let rbracket: UInt8 = 0x5D
    @usableFromInline static let dot: UInt8 = 0x2E
}

/// A read-only view of the caller's bytes with unchecked indexing; every
/// index is kept in range by the parser that holds it (each loop bounds its
/// index by `count` or by an end it found inside `count`).
@usableFromInline
struct Bytes {
    @usableFromInline let base: UnsafePointer<UInt8>
    @usableFromInline let count: Int

    @inlinable
    init(_ buffer: UnsafeRawBufferPointer) {
        // An empty buffer may have no base address; any valid pointer will
        // do since nothing is read from it.
        if let p = buffer.baseAddress {
            base = p.assumingMemoryBound(to: UInt8.self)
        } else {
            base = UnsafePointer<UInt8>(bitPattern: 1)!
        }
        count = buffer.count
    }

    @inlinable
    subscript(_ i: Int) -> UInt8 {
        @inline(__always) get { base[i] }
    }

    /// Index of the first `byte` in `start..<end`, or nil.
    @inlinable
    func firstIndex(of byte: UInt8, from start: Int, to end: Int) -> Int? {
        guard start < end else { return nil }
        guard let hit = memchr(base + start, Int32(byte), end - start) else { return nil }
        return base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
    }

    /// Whether `start..<end` equals the lowercase ASCII `lower`, ignoring case.
    @inlinable @inline(__always)
    func equalsIgnoringCase(_ start: Int, _ end: Int, _ lower: StaticString) -> Bool {
        wordsEqual(start, end, lower, foldCase: true)
    }

    /// Whether `start..<end` equals `text` exactly (case-sensitive).
    @inlinable @inline(__always)
    func equals(_ start: Int, _ end: Int, _ text: StaticString) -> Bool {
        wordsEqual(start, end, text, foldCase: false)
    }
}
