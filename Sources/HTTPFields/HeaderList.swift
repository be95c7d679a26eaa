// Caller-owned storage for a decoded header block (RFC 7541 §3) or QPACK
// field section (RFC 9204 §4.5).
//
// HPACK and QPACK output has to be materialised (Huffman decoding, table references),
// so the decoder writes every name and value into one byte arena and records
// a pair of spans per field. The caller owns the list, clears it between
// blocks with `removeAll()`, and keeps its capacity: after the first few
// requests decoding allocates nothing (STYLE §6, "no per-header arrays").
// Spans are offsets into `bytes` and stay valid until the next mutation.

import Core

/// One decoded field: spans into `HeaderList.bytes`.
public struct HeaderField: Equatable, Sendable {
    public var name: ByteSpan
    public var value: ByteSpan
    /// Sent as "never indexed" (RFC 7541 §6.2.3) or with QPACK's 'N' bit
    /// (RFC 9204 §4.5.4): an intermediary must re-encode it the same way.
    public var isNeverIndexed: Bool

    public init(name: ByteSpan, value: ByteSpan, isNeverIndexed: Bool) {
        self.name = name
        self.value = value
        self.isNeverIndexed = isNeverIndexed
    }
}

/// The fields of one or more header blocks, in order.
public struct HeaderList: Sendable {
    public package(set) var bytes: [UInt8] = []
    public package(set) var fields: [HeaderField] = []

    public init(reservingBytes: Int = 4096, fields fieldCapacity: Int = 32) {
        bytes.reserveCapacity(reservingBytes)
        fields.reserveCapacity(fieldCapacity)
    }

    public var count: Int { fields.count }

    public func name(_ i: Int) -> ArraySlice<UInt8> {
        let s = fields[i].name
        return bytes[s.start ..< s.end]
    }

    public func value(_ i: Int) -> ArraySlice<UInt8> {
        let s = fields[i].value
        return bytes[s.start ..< s.end]
    }

    /// Empties the list, keeping its capacity.
    public mutating func removeAll() {
        bytes.removeAll(keepingCapacity: true)
        fields.removeAll(keepingCapacity: true)
    }

    /// Drops bytes past `byteCount` and fields past `fieldCount` (undoing a
    /// partial decode).
    package mutating func truncate(bytes byteCount: Int, fields fieldCount: Int) {
        if bytes.count > byteCount { bytes.removeSubrange(byteCount...) }
        if fields.count > fieldCount { fields.removeSubrange(fieldCount...) }
    }
}
