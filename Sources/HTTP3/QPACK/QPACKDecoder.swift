// The QPACK decoder (RFC 9204 §2.2, §4.3, §4.4, §4.5): the server's side for
// request field sections.
//
// Theory of operation. Three inputs, two outputs:
//   * encoder-stream bytes (`feedEncoderStream`): instructions that set the
//     capacity and insert entries (§4.3). They may be split anywhere; a
//     partial instruction is kept (bounded by what a valid insert can take)
//     until the rest arrives;
//   * encoded field sections (`decodeFieldSection`), one per HEADERS frame.
//     If its Required Insert Count (§4.5.1.1) is above the table's insert
//     count, the section is blocked (§2.1.2): the decoder keeps a copy, at
//     most `maxBlockedStreams` of them ("If a decoder encounters more blocked
//     streams than it promised to support, it MUST treat this as a connection
//     error of type QPACK_DECOMPRESSION_FAILED"). It is decoded the moment
//     the encoder-stream instruction that completes its Required Insert
//     Count is applied — before any later instruction of the same read can
//     evict what it references — so the outcome does not depend on how the
//     encoder stream was split into reads. The stream is then listed in
//     `takeUnblockedStreams()` and the caller collects the decoded fields
//     (or the error) with `decodeUnblocked`;
//   * stream resets (`cancelStream`): drop what is blocked there.
// Outputs: the decoded fields, appended to a caller-owned `HeaderList`; and
// decoder-stream bytes (`takeDecoderStreamBytes`): a Section Acknowledgment
// for each decoded section that referenced the dynamic table (§4.4.1), a
// Stream Cancellation for each cancelled stream (§4.4.2), and one Insert
// Count Increment for inserts not yet covered by those (§4.4.3).
//
// Decoding a field section changes no table state (unlike HPACK), so a
// section over `maxFieldSectionSize` is still read to the end — references
// checked, nothing more stored — then acknowledged, and reported as the
// stream error `fieldSectionTooLarge` (RFC 9114 §4.2.2: 431 or reset).

import Core
import HTTPFields

public struct QPACKDecoder: Sendable {
    /// Our SETTINGS_QPACK_MAX_TABLE_CAPACITY.
    public let maxTableCapacity: Int
    /// Our SETTINGS_QPACK_BLOCKED_STREAMS.
    public let maxBlockedStreams: Int
    /// Our SETTINGS_MAX_FIELD_SECTION_SIZE (RFC 9114 §4.2.2), counted as
    /// name + value + 32 per field.
    public var maxFieldSectionSize: Int
    public private(set) var table = QPACKDynamicTable()

    private struct Blocked: Sendable {
        var stream: UInt64
        var requiredInsertCount: Int
        var section: [UInt8]
    }

    /// A blocked section decoded once its inserts arrived, waiting for
    /// `decodeUnblocked`.
    private struct Released: Sendable {
        var stream: UInt64
        var result: Result<HeaderList, H3Error>
    }

    private var blocked: [Blocked] = []
    private var released: [Released] = []
    private var unblocked: [UInt64] = []
    private var pendingEncoderBytes: [UInt8] = []
    private var decoderStreamOut: [UInt8] = []
    /// The encoder's Known Received Count as our instructions make it (§2.1.4).
    private var knownReceivedCount = 0

    public init(maxTableCapacity: Int = 4096, maxBlockedStreams: Int = 100, maxFieldSectionSize: Int = 16384) {
        self.maxTableCapacity = maxTableCapacity
        self.maxBlockedStreams = maxBlockedStreams
        self.maxFieldSectionSize = maxFieldSectionSize
    }

    /// The number of streams whose field section waits for inserts.
    public var blockedStreamCount: Int { blocked.count }

    // MARK: Field sections (§4.5)

    /// Decodes the field section of `stream`, appending to `list`.
    /// - Returns: false if it is blocked (kept; see `takeUnblockedStreams`).
    public mutating func decodeFieldSection(_ section: UnsafeRawBufferPointer, stream: UInt64,
                                            into list: inout HeaderList) throws(H3Error) -> Bool {
        let (ric, base, n) = try prefix(section)
        if ric > table.insertCount {
            guard !blocked.contains(where: { $0.stream == stream }) else { throw .qpackSecondBlockedSection }
            guard blocked.count < maxBlockedStreams else { throw .qpackTooManyBlockedStreams }
            blocked.append(Blocked(stream: stream, requiredInsertCount: ric, section: Array(section)))
            return false
        }
        try decodeLines(section, from: n, requiredInsertCount: ric, base: base, into: &list, stream: stream)
        return true
    }

    /// Streams whose blocked section has been released (decoded, see
    /// `decodeUnblocked`), in the order they were released.
    public mutating func takeUnblockedStreams() -> [UInt64] {
        defer { unblocked.removeAll(keepingCapacity: true) }
        return unblocked
    }

    /// The decoded section of a stream returned by `takeUnblockedStreams`,
    /// appended to `list` (or the error its decoding met).
    public mutating func decodeUnblocked(stream: UInt64, into list: inout HeaderList) throws(H3Error) {
        guard let i = released.firstIndex(where: { $0.stream == stream }) else {
            preconditionFailure("stream \(stream) has no released field section")
        }
        let decoded = try released.remove(at: i).result.get()
        let shift = list.bytes.count
        list.bytes.append(contentsOf: decoded.bytes)
        for f in decoded.fields {
            list.fields.append(HeaderField(name: ByteSpan(offset: f.name.start + shift, length: f.name.count),
                                           value: ByteSpan(offset: f.value.start + shift, length: f.value.count),
                                           isNeverIndexed: f.isNeverIndexed))
        }
    }

    /// Decodes every blocked section the table can now serve, oldest first.
    private mutating func releaseDecodable() {
        while let i = blocked.firstIndex(where: { $0.requiredInsertCount <= table.insertCount }) {
            let b = blocked.remove(at: i)
            var list = HeaderList(reservingBytes: 2 * b.section.count, fields: 16)
            let r: Result<HeaderList, H3Error> = b.section.withUnsafeBytes { s in
                do throws(H3Error) {
                    let (ric, base, n) = try prefix(s, requiredInsertCount: b.requiredInsertCount)
                    try decodeLines(s, from: n, requiredInsertCount: ric, base: base, into: &list, stream: b.stream)
                    return .success(list)
                } catch { return .failure(error) }
            }
            released.append(Released(stream: b.stream, result: r))
            unblocked.append(b.stream)
        }
    }

    /// The stream was reset or abandoned (§2.2.2.2): drop what is blocked on
    /// it and tell the encoder. A decoder whose capacity is zero may omit the
    /// instruction, and does.
    public mutating func cancelStream(_ stream: UInt64) {
        blocked.removeAll { $0.stream == stream }
        released.removeAll { $0.stream == stream }
        unblocked.removeAll { $0 == stream }
        guard maxTableCapacity > 0 else { return }
        IntegerCoding.append(Int(truncatingIfNeeded: stream), prefixBits: 6, firstByte: 0x40, to: &decoderStreamOut)
    }

    /// Whether `takeDecoderStreamBytes` has anything to give.
    public var hasPendingDecoderStreamBytes: Bool {
        !decoderStreamOut.isEmpty || table.insertCount > knownReceivedCount
    }

    /// Appends the pending decoder-stream instructions to `out`.
    public mutating func takeDecoderStreamBytes(into out: inout [UInt8]) {
        out.append(contentsOf: decoderStreamOut)
        decoderStreamOut.removeAll(keepingCapacity: true)
        if table.insertCount > knownReceivedCount {
            // §4.4.3 Insert Count Increment: 00xxxxxx, 6-bit prefix.
            IntegerCoding.append(table.insertCount - knownReceivedCount, prefixBits: 6, firstByte: 0x00, to: &out)
            knownReceivedCount = table.insertCount
        }
    }

    /// §4.5.1: Required Insert Count and Base. - Returns: them and the
    /// prefix length. A section that was blocked passes the Required Insert
    /// Count it was found to have on arrival: §4.5.1.1 recovers it from the
    /// insert count at that moment, which later inserts have moved.
    private func prefix(_ s: UnsafeRawBufferPointer, requiredInsertCount known: Int? = nil) throws(H3Error) -> (Int, Int, Int) {
        let (encoded, n) = try sectionInteger(s, at: 0, prefixBits: 8)
        let ric: Int
        if let known {
            ric = known
        } else {
            ric = try QPACKRequiredInsertCount.decode(encoded, maxTableCapacity: maxTableCapacity, totalInserts: table.insertCount)
        }
        guard n < s.count else { throw .qpackTruncatedSection }
        let sign = s[n] & 0x80 != 0
        let (delta, m) = try sectionInteger(s, at: n, prefixBits: 7)
        let base: Int
        if sign {
            // §4.5.1.2: Base = ReqInsertCount - DeltaBase - 1.
            guard delta < ric else { throw .qpackNegativeBase }
            base = ric - delta - 1
        } else {
            base = ric + delta
            guard base <= maxPrefixedInteger else { throw .qpackNegativeBase }
        }
        return (ric, base, n + m)
    }

    /// §4.5.2–§4.5.6, from `start` to the end of the section.
    private mutating func decodeLines(_ s: UnsafeRawBufferPointer, from start: Int, requiredInsertCount ric: Int, base: Int,
                                      into list: inout HeaderList, stream: UInt64) throws(H3Error) {
        let byteMark = list.bytes.count, fieldMark = list.fields.count
        var i = start
        var sectionSize = 0
        var tooLarge = false
        var highestReference = -1
        do throws(H3Error) {
            while i < s.count {
                let first = s[i]
                let mark = list.bytes.count
                var nameEnd = mark
                var neverIndexed = false
                func dynamic(_ abs: Int) throws(H3Error) -> (name: [UInt8], value: [UInt8]) {
                    guard abs >= 0, abs < ric, let e = table.entry(absolute: abs) else { throw .qpackBadDynamicReference }
                    highestReference = max(highestReference, abs)
                    return e
                }
                if first & 0x80 != 0 {
                    // §4.5.2 Indexed Field Line: 1Txxxxxx.
                    let (index, n) = try sectionInteger(s, at: i, prefixBits: 6)
                    i += n
                    if first & 0x40 != 0 {
                        guard index < QPACKStaticTable.count else { throw .qpackBadStaticReference }
                        let e = QPACKStaticTable.entry(index)
                        append(e.name, to: &list.bytes); nameEnd = list.bytes.count
                        append(e.value, to: &list.bytes)
                    } else {
                        let e = try dynamic(base - 1 - index)
                        list.bytes.append(contentsOf: e.name); nameEnd = list.bytes.count
                        list.bytes.append(contentsOf: e.value)
                    }
                } else if first & 0xf0 == 0x10 {
                    // §4.5.3 Indexed Field Line with Post-Base Index: 0001xxxx.
                    let (index, n) = try sectionInteger(s, at: i, prefixBits: 4)
                    i += n
                    let e = try dynamic(base + index)
                    list.bytes.append(contentsOf: e.name); nameEnd = list.bytes.count
                    list.bytes.append(contentsOf: e.value)
                } else if first & 0xc0 == 0x40 {
                    // §4.5.4 Literal Field Line with Name Reference: 01NTxxxx.
                    neverIndexed = first & 0x20 != 0
                    let (index, n) = try sectionInteger(s, at: i, prefixBits: 4)
                    i += n
                    if first & 0x10 != 0 {
                        guard index < QPACKStaticTable.count else { throw .qpackBadStaticReference }
                        append(QPACKStaticTable.entry(index).name, to: &list.bytes)
                    } else {
                        list.bytes.append(contentsOf: try dynamic(base - 1 - index).name)
                    }
                    nameEnd = list.bytes.count
                    i += try sectionString(s, at: i, prefixBits: 7, to: &list.bytes)
                } else if first & 0xf0 == 0x00 {
                    // §4.5.5 Literal Field Line with Post-Base Name Reference: 0000Nxxx.
                    neverIndexed = first & 0x08 != 0
                    let (index, n) = try sectionInteger(s, at: i, prefixBits: 3)
                    i += n
                    list.bytes.append(contentsOf: try dynamic(base + index).name)
                    nameEnd = list.bytes.count
                    i += try sectionString(s, at: i, prefixBits: 7, to: &list.bytes)
                } else {
                    // §4.5.6 Literal Field Line with Literal Name: 001NHxxx.
                    neverIndexed = first & 0x10 != 0
                    i += try sectionString(s, at: i, prefixBits: 3, to: &list.bytes)
                    nameEnd = list.bytes.count
                    i += try sectionString(s, at: i, prefixBits: 7, to: &list.bytes)
                }
                sectionSize += list.bytes.count - mark + QPACKDynamicTable.entryOverhead
                if tooLarge || sectionSize > maxFieldSectionSize {
                    tooLarge = true
                    list.truncate(bytes: mark, fields: list.fields.count)
                    continue
                }
                list.fields.append(HeaderField(name: ByteSpan(offset: mark, length: nameEnd - mark),
                                               value: ByteSpan(offset: nameEnd, length: list.bytes.count - nameEnd),
                                               isNeverIndexed: neverIndexed))
            }
            // §2.2.1: the Required Insert Count must be the lowest that
            // decodes the section.
            if ric > 0 && highestReference + 1 != ric { throw .qpackRequiredInsertCountTooLarge }
        } catch {
            list.truncate(bytes: byteMark, fields: fieldMark)
            throw error
        }
        if ric > 0 {
            // §4.4.1 Section Acknowledgment: 1xxxxxxx, 7-bit stream ID.
            IntegerCoding.append(Int(truncatingIfNeeded: stream), prefixBits: 7, firstByte: 0x80, to: &decoderStreamOut)
            knownReceivedCount = max(knownReceivedCount, ric)
        }
        if tooLarge {
            list.truncate(bytes: byteMark, fields: fieldMark)
            throw .fieldSectionTooLarge
        }
    }

    private func append(_ s: StaticString, to out: inout [UInt8]) {
        out.append(contentsOf: UnsafeRawBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    // MARK: Encoder stream (§4.3)

    /// Consumes encoder-stream bytes: every complete instruction is applied;
    /// a trailing partial one is kept for the next call.
    public mutating func feedEncoderStream(_ bytes: UnsafeRawBufferPointer) throws(H3Error) {
        if pendingEncoderBytes.isEmpty {
            let used = try applyInstructions(bytes)
            pendingEncoderBytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[used...]))
        } else {
            pendingEncoderBytes.append(contentsOf: bytes)
            let pending = pendingEncoderBytes
            let r: Result<Int, H3Error> = pending.withUnsafeBytes { p in
                do throws(H3Error) { return .success(try applyInstructions(p)) } catch { return .failure(error) }
            }
            pendingEncoderBytes.removeSubrange(0 ..< (try r.get()))
        }
        // The longest valid instruction: an insert of an entry as large as
        // the capacity allows, Huffman-expanded (codes ≤ 30 bits per byte),
        // plus its integers.
        guard pendingEncoderBytes.count <= 4 * maxTableCapacity + 32 else { throw .qpackEncoderInstructionTooLong }
    }

    /// Applies whole instructions from `b`. - Returns: bytes used.
    private mutating func applyInstructions(_ b: UnsafeRawBufferPointer) throws(H3Error) -> Int {
        var i = 0
        while i < b.count {
            guard let n = try applyInstruction(b, at: i) else { break }
            i += n
            if !blocked.isEmpty { releaseDecodable() }
        }
        return i
    }

    /// One instruction at `b[at]`, or nil if it is not complete yet.
    private mutating func applyInstruction(_ b: UnsafeRawBufferPointer, at start: Int) throws(H3Error) -> Int? {
        let first = b[start]
        var i = start
        if first & 0xe0 == 0x20 {
            // §4.3.1 Set Dynamic Table Capacity: 001xxxxx.
            guard let (c, n) = try streamInteger(b, at: i, prefixBits: 5) else { return nil }
            guard c <= maxTableCapacity else { throw .qpackCapacityTooLarge }
            table.setCapacity(c)
            return n
        }
        if first & 0xe0 == 0x00 {
            // §4.3.4 Duplicate: 000xxxxx, relative index.
            guard let (rel, n) = try streamInteger(b, at: i, prefixBits: 5) else { return nil }
            guard let e = table.entry(absolute: table.insertCount - 1 - rel) else { throw .qpackEncoderBadReference }
            try insert(e.name, e.value)
            return n
        }
        var name: [UInt8] = []
        if first & 0x80 != 0 {
            // §4.3.2 Insert with Name Reference: 1Txxxxxx.
            guard let (index, n) = try streamInteger(b, at: i, prefixBits: 6) else { return nil }
            i += n
            if first & 0x40 != 0 {
                guard index < QPACKStaticTable.count else { throw .qpackEncoderBadStaticReference }
                let s = QPACKStaticTable.entry(index).name
                name.append(contentsOf: UnsafeRawBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
            } else {
                guard let e = table.entry(absolute: table.insertCount - 1 - index) else { throw .qpackEncoderBadReference }
                name = e.name
            }
        } else {
            // §4.3.3 Insert with Literal Name: 01Hxxxxx.
            guard let n = try streamString(b, at: i, prefixBits: 5, to: &name) else { return nil }
            i += n
        }
        var value: [UInt8] = []
        guard let n = try streamString(b, at: i, prefixBits: 7, to: &value) else { return nil }
        try insert(name, value)
        return i + n - start
    }

    private mutating func insert(_ name: [UInt8], _ value: [UInt8]) throws(H3Error) {
        guard table.fits(name.count + value.count + QPACKDynamicTable.entryOverhead) else { throw .qpackEntryTooLarge }
        table.insert(name: name, value: value)
    }
}
