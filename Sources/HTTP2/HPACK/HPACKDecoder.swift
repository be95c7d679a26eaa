// HPACK header block decoder (RFC 7541 §3, §6; limits from RFC 9113 §6.5.2,
// §10.5.1).
//
// One call decodes one complete header block — HEADERS or PUSH_PROMISE plus
// its CONTINUATION frames, concatenated by the caller — and appends the
// fields to a caller-owned `HeaderList`. Each representation is picked by the
// first byte's high bits (§6):
//
//     1xxxxxxx  indexed field               (§6.1, 7-bit index)
//     01xxxxxx  literal, incremental index  (§6.2.1, 6-bit name index)
//     001xxxxx  dynamic table size update   (§6.3, 5-bit size)
//     0001xxxx  literal, never indexed      (§6.2.3, 4-bit name index)
//     0000xxxx  literal, without indexing   (§6.2.2, 4-bit name index)
//
// Table size updates: §4.2 "This dynamic table size update MUST occur at the
// beginning of the first header block following the change to the dynamic
// table size", and the new size "MUST be lower than or equal to the limit
// determined by the protocol" — our acknowledged SETTINGS_HEADER_TABLE_SIZE.
// An update after a field is COMPRESSION_ERROR. If we lowered the setting
// below the table's size, the next block must begin with an update that
// honours it.
//
// Limits (DESIGN principle 6): fields count against `maxHeaderListSize` as
// name + value + 32 (RFC 9113 §6.5.2). Past the limit the decoder keeps
// decoding — the dynamic table must stay in step with the peer's (RFC 9113
// §10.5.1) — but stores nothing more, and throws `headerListTooLarge` (a
// stream error, 431) at the end. A block whose decoded size passes
// `hpackBombFactor` times the limit is treated as an attack (an HPACK bomb:
// tiny indexed references to a large entry) and ends the decoding at once with
// ENHANCE_YOUR_CALM.
//
// On any throw the fields appended by this call are removed again.

import Core

/// How far past `maxHeaderListSize` a block may decode (counting the fields
/// not stored) before it is an HPACK bomb: connection error
/// ENHANCE_YOUR_CALM instead of a 431 for the stream.
public let hpackBombFactor = 4

extension HPACKError {
    public static let hpackBomb = HPACKError(scope: .enhanceYourCalm, reason: "header block decodes to far more than SETTINGS_MAX_HEADER_LIST_SIZE")
}

/// Decodes header blocks, keeping the dynamic table between them.
///
///     var decoder = HPACKDecoder(maxTableSize: 4096, maxHeaderListSize: 16384)
///     var list = HeaderList()
///     // per HEADERS (+ CONTINUATION) block:
///     list.removeAll()
///     do { try decoder.decode(block, into: &list) }
///     catch where error.scope == .headerListTooLarge { /* 431 / RST_STREAM */ }
///     catch { /* GOAWAY error.errorCode */ }
public struct HPACKDecoder: Sendable {
    public private(set) var table: DynamicTable
    /// Our acknowledged SETTINGS_HEADER_TABLE_SIZE: the most a size update
    /// may ask for.
    public private(set) var maxTableSizeSetting: Int
    /// SETTINGS_MAX_HEADER_LIST_SIZE we advertise.
    public var maxHeaderListSize: Int
    /// Set when the setting was lowered below the table's maximum: the next
    /// block must start with a size update to at most this.
    private var requiredUpdate: Int?

    public init(maxTableSize: Int = 4096, maxHeaderListSize: Int = 16384) {
        table = DynamicTable(maxSize: maxTableSize)
        maxTableSizeSetting = maxTableSize
        self.maxHeaderListSize = maxHeaderListSize
    }

    /// Applies a new SETTINGS_HEADER_TABLE_SIZE of ours once the peer has
    /// acknowledged it (RFC 9113 §6.5.3: values take effect on ACK).
    public mutating func setMaxTableSizeSetting(_ size: Int) {
        maxTableSizeSetting = size
        if size < table.maxSize { requiredUpdate = size } else { requiredUpdate = nil }
    }

    /// Decodes one complete header block, appending its fields to `list`.
    public mutating func decode(_ block: UnsafeRawBufferPointer, into list: inout HeaderList) throws(HPACKError) {
        let byteMark = list.bytes.count
        let fieldMark = list.fields.count
        do {
            try decodeFields(block, into: &list)
        } catch {
            list.truncate(bytes: byteMark, fields: fieldMark)
            throw error
        }
    }

    private mutating func decodeFields(_ block: UnsafeRawBufferPointer, into list: inout HeaderList) throws(HPACKError) {
        var i = 0
        var sawField = false
        var listSize = 0
        var tooLarge = false
        let bombLimit = maxHeaderListSize * hpackBombFactor
        while i < block.count {
            let first = block[i]
            if first & 0xe0 == 0x20 {
                // §6.3 dynamic table size update.
                guard !sawField else { throw .tableSizeUpdateNotAtStart }
                let (size, n) = try hpackInteger(block, at: i, prefixBits: 5)
                guard size <= maxTableSizeSetting else { throw .tableSizeUpdateTooLarge }
                table.setMaxSize(size)
                if let required = requiredUpdate, size <= required { requiredUpdate = nil }
                i += n
                continue
            }
            if !sawField {
                guard requiredUpdate == nil else { throw .tableSizeUpdateMissing }
                sawField = true
            }
            let mark = list.bytes.count
            let nameStart = mark
            let nameEnd: Int
            var neverIndexed = false
            if first & 0x80 != 0 {
                // §6.1 indexed field.
                let (index, n) = try hpackInteger(block, at: i, prefixBits: 7)
                i += n
                let size = try entrySize(index)
                listSize += size
                if tooLarge || listSize > maxHeaderListSize {
                    // Counting suffices: an indexed field changes no state.
                    tooLarge = true
                    guard listSize <= bombLimit else { throw .hpackBomb }
                    continue
                }
                try appendName(index, to: &list.bytes)
                nameEnd = list.bytes.count
                try appendValue(index, to: &list.bytes)
            } else {
                let prefix = first & 0x40 != 0 ? 6 : 4
                let indexing = first & 0x40 != 0
                neverIndexed = first & 0xf0 == 0x10
                let (index, n) = try hpackInteger(block, at: i, prefixBits: prefix)
                i += n
                if index == 0 {
                    i += try decodeString(block, at: i, to: &list.bytes)
                } else {
                    try appendName(index, to: &list.bytes)
                }
                nameEnd = list.bytes.count
                i += try decodeString(block, at: i, to: &list.bytes)
                if indexing {
                    list.bytes.withUnsafeBytes { all in
                        table.add(name: UnsafeRawBufferPointer(rebasing: all[nameStart ..< nameEnd]),
                                  value: UnsafeRawBufferPointer(rebasing: all[nameEnd...]))
                    }
                }
                listSize += list.bytes.count - mark + DynamicTable.entryOverhead
            }
            if tooLarge || listSize > maxHeaderListSize {
                tooLarge = true
                list.truncate(bytes: mark, fields: list.fields.count)
                guard listSize <= bombLimit else { throw .hpackBomb }
                continue
            }
            list.fields.append(HeaderField(name: ByteSpan(offset: nameStart, length: nameEnd - nameStart),
                                           value: ByteSpan(offset: nameEnd, length: list.bytes.count - nameEnd),
                                           isNeverIndexed: neverIndexed))
        }
        // §4.2: a block made only of size updates (or empty) still has to
        // carry the required update.
        if requiredUpdate != nil { throw .tableSizeUpdateMissing }
        if tooLarge { throw .headerListTooLarge }
    }

    /// §5.2 string literal at `block[at]`, appended to `out`.
    /// - Returns: bytes consumed from `block`.
    private func decodeString(_ block: UnsafeRawBufferPointer, at start: Int, to out: inout [UInt8]) throws(HPACKError) -> Int {
        let (length, n) = try hpackInteger(block, at: start, prefixBits: 7)
        let s = start + n
        guard length <= block.count - s else { throw .stringTruncated }
        let raw = UnsafeRawBufferPointer(rebasing: block[s ..< s + length])
        if block[start] & 0x80 != 0 {
            do { try Huffman.decode(raw, to: &out) } catch { throw HPACKError(error) }
        } else {
            out.append(contentsOf: raw)
        }
        return n + length
    }

    /// §2.3.3: 1...61 static, 62... dynamic (62 = newest).
    private func entrySize(_ index: Int) throws(HPACKError) -> Int {
        guard index != 0 else { throw .indexZero }
        if index <= hpackStaticTableCount {
            return StaticTable.name(index).count + StaticTable.value(index).count + DynamicTable.entryOverhead
        }
        let d = index - hpackStaticTableCount
        guard d <= table.count else { throw .indexOutOfRange }
        return table.entrySize(d)
    }

    private func appendName(_ index: Int, to out: inout [UInt8]) throws(HPACKError) {
        guard index != 0 else { throw .indexZero }
        if index <= hpackStaticTableCount {
            out.append(contentsOf: StaticTable.name(index))
            return
        }
        let d = index - hpackStaticTableCount
        guard d <= table.count else { throw .indexOutOfRange }
        out.append(contentsOf: table.name(d))
    }

    private func appendValue(_ index: Int, to out: inout [UInt8]) throws(HPACKError) {
        if index <= hpackStaticTableCount {
            out.append(contentsOf: StaticTable.value(index))
            return
        }
        out.append(contentsOf: table.value(index - hpackStaticTableCount))
    }
}

/// A §5.1 integer with HPACK's errors.
@inline(__always)
private func hpackInteger(_ block: UnsafeRawBufferPointer, at start: Int, prefixBits: Int) throws(HPACKError) -> (value: Int, length: Int) {
    do { return try IntegerCoding.decode(block, at: start, prefixBits: prefixBits) } catch { throw HPACKError(error) }
}
