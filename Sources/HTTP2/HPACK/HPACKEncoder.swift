// HPACK header block encoder for responses (RFC 7541 §4, §6; §7.1 on
// sensitive fields).
//
// Per field, in order of preference:
//   1. an exact (name, value) match in the static, then the dynamic table →
//      indexed field (§6.1), one or two bytes;
//   2. otherwise a literal (§6.2) whose name is an index when the name is
//      known — the static table first, as in RFC 7541 Appendix C.5.2 — and a
//      string literal when not. The caller picks the literal kind:
//      incremental indexing (added to the dynamic table), without indexing,
//      or never indexed (§6.2.3, for secrets: §7.1.3 says such values must
//      not be put in any table by us or by intermediaries).
// Strings are Huffman coded when that is not longer (§5.2) and `useHuffman`.
//
// Table size: our table is at most `maxTableSizeLimit` (memory we choose to
// spend) and at most the peer's SETTINGS_HEADER_TABLE_SIZE. When that product
// changes, §4.2 requires a size update at the start of the next block; if it
// went down and then up again between blocks, "the smallest maximum table
// size that occurs in that interval MUST be signaled", then the final one.
// The updates go out in front of the next field encoded.

public struct HPACKEncoder: Sendable {
    /// How a literal field is represented (RFC 7541 §6.2).
    public enum Indexing: Sendable {
        /// §6.2.1: the field enters the dynamic table.
        case incremental
        /// §6.2.2: the field is not added.
        case withoutIndexing
        /// §6.2.3: never added, here or by any intermediary (secrets:
        /// authorization, set-cookie with session ids, …).
        case neverIndexed
    }

    public private(set) var table: DynamicTable
    /// The largest table we are willing to keep, whatever the peer allows.
    public let maxTableSizeLimit: Int
    /// Huffman-code strings when that is not longer.
    public var useHuffman: Bool
    private var pendingMin: Int?
    private var pendingFinal: Int?

    /// Starts with a table of `min(maxTableSizeLimit, peerMaxTableSize)`
    /// bytes; the peer's initial setting is 4096 (RFC 9113 §6.5.2), and
    /// starting below it costs a size update in the first block.
    public init(maxTableSizeLimit: Int = 4096, peerMaxTableSize: Int = 4096, useHuffman: Bool = true) {
        self.maxTableSizeLimit = maxTableSizeLimit
        self.useHuffman = useHuffman
        table = DynamicTable(maxSize: min(4096, peerMaxTableSize))
        let wanted = min(maxTableSizeLimit, peerMaxTableSize)
        if wanted != table.maxSize { pendingMin = wanted; pendingFinal = wanted }
    }

    /// The peer changed SETTINGS_HEADER_TABLE_SIZE (we apply it when we ACK).
    public mutating func setPeerMaxTableSize(_ size: Int) {
        let wanted = min(size, maxTableSizeLimit)
        pendingMin = min(pendingMin ?? table.maxSize, wanted)
        pendingFinal = wanted
        if pendingMin == table.maxSize && wanted == table.maxSize {
            pendingMin = nil
            pendingFinal = nil
        }
    }

    /// Appends one field to the block being built in `out`. Call once per
    /// field, all fields of a block in a row.
    public mutating func encode(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer,
                                indexing: Indexing = .incremental, into out: inout [UInt8]) {
        if pendingMin != nil { emitSizeUpdates(into: &out) }
        let staticMatch = StaticTable.lookup(name: name, value: value)
        if let m = staticMatch, m.valueMatches {
            IntegerCoding.append(m.index, prefixBits: 7, firstByte: 0x80, to: &out)
            return
        }
        var nameIndex = staticMatch?.index ?? 0
        if let d = table.find(name: name, value: value) {
            if d.valueMatches && indexing != .neverIndexed {
                IntegerCoding.append(hpackStaticTableCount + d.index, prefixBits: 7, firstByte: 0x80, to: &out)
                return
            }
            if nameIndex == 0 { nameIndex = hpackStaticTableCount + d.index }
        }
        switch indexing {
        case .incremental: IntegerCoding.append(nameIndex, prefixBits: 6, firstByte: 0x40, to: &out)
        case .withoutIndexing: IntegerCoding.append(nameIndex, prefixBits: 4, firstByte: 0x00, to: &out)
        case .neverIndexed: IntegerCoding.append(nameIndex, prefixBits: 4, firstByte: 0x10, to: &out)
        }
        if nameIndex == 0 { appendString(name, to: &out) }
        appendString(value, to: &out)
        if indexing == .incremental { table.add(name: name, value: value) }
    }

    /// Emits the pending size updates now (e.g. for a block with no fields).
    public mutating func emitSizeUpdates(into out: inout [UInt8]) {
        guard let low = pendingMin, let final = pendingFinal else { return }
        if low != final {
            IntegerCoding.append(low, prefixBits: 5, firstByte: 0x20, to: &out)
            table.setMaxSize(low)
        }
        IntegerCoding.append(final, prefixBits: 5, firstByte: 0x20, to: &out)
        table.setMaxSize(final)
        pendingMin = nil
        pendingFinal = nil
    }

    /// §5.2 string literal.
    private func appendString(_ s: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        if useHuffman {
            let h = Huffman.encodedLength(s)
            // Ties go to Huffman, as in RFC 7541 Appendix C.6.2 ("307").
            if h <= s.count && s.count > 0 {
                IntegerCoding.append(h, prefixBits: 7, firstByte: 0x80, to: &out)
                Huffman.encode(s, to: &out)
                return
            }
        }
        IntegerCoding.append(s.count, prefixBits: 7, firstByte: 0x00, to: &out)
        out.append(contentsOf: s)
    }
}
