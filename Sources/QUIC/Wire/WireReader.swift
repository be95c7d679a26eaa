// A bounds-checked cursor over a received packet or frame payload.
//
// Every read either succeeds inside `[position, end)` or throws the error the
// reader was made with, so a truncated field becomes the error of whatever is
// being decoded (FRAME_ENCODING_ERROR for frames, TRANSPORT_PARAMETER_ERROR
// for transport parameters) without a check at each call site. Spans are
// offsets into the buffer the reader was made over.

import Core

struct WireReader {
    let bytes: UnsafeRawBufferPointer
    private(set) var position: Int
    let end: Int
    let truncated: QUICError

    init(_ bytes: UnsafeRawBufferPointer, from start: Int = 0, to end: Int? = nil, truncated: QUICError) {
        self.bytes = bytes
        position = start
        self.end = end ?? bytes.count
        self.truncated = truncated
    }

    var remaining: Int { end - position }
    var isAtEnd: Bool { position >= end }

    mutating func varint() throws(QUICError) -> UInt64 {
        try varintWithLength().value
    }

    mutating func varintWithLength() throws(QUICError) -> (value: UInt64, length: Int) {
        guard position < end else { throw truncated }
        let n = VarInt.encodedLength(firstByte: bytes[position])
        guard end - position >= n, let r = VarInt.decode(bytes, at: position) else { throw truncated }
        position += n
        return r
    }

    mutating func uint8() throws(QUICError) -> UInt8 {
        guard position < end else { throw truncated }
        defer { position += 1 }
        return bytes[position]
    }

    mutating func uint16() throws(QUICError) -> UInt16 {
        let s = try span(2)
        return UInt16(bytes[s.start]) << 8 | UInt16(bytes[s.start + 1])
    }

    mutating func uint64() throws(QUICError) -> UInt64 {
        let s = try span(8)
        var v: UInt64 = 0
        for i in s.start..<s.end { v = v << 8 | UInt64(bytes[i]) }
        return v
    }

    /// The next `count` bytes as a span (`count` may come from the wire).
    mutating func span(_ count: UInt64) throws(QUICError) -> ByteSpan {
        guard count <= UInt64(remaining) else { throw truncated }
        let s = ByteSpan(offset: position, length: Int(count))
        position += Int(count)
        return s
    }

    mutating func span(_ count: Int) throws(QUICError) -> ByteSpan {
        try span(UInt64(count))
    }

    /// Everything up to `end`.
    mutating func rest() -> ByteSpan {
        let s = ByteSpan(offset: position, length: end - position)
        position = end
        return s
    }
}

/// Reads a big-endian 32-bit integer at `at` (the caller checked bounds).
@inlinable
func readUInt32(_ bytes: UnsafeRawBufferPointer, at: Int) -> UInt32 {
    UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
}
