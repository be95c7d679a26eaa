// HPACK Huffman coding of string literals (RFC 7541 §5.2, Appendix B); QPACK
// uses the same code (RFC 9204 §4.1.2).
//
// Encoding packs each byte's code (HuffmanTables.swift) MSB first into a
// 64-bit accumulator and pads the last byte with the high bits of EOS, i.e.
// ones.
//
// Decoding runs a generated automaton over 4-bit nibbles: a state is a node of
// the code tree, and each (state, nibble) entry says which state follows,
// which symbol (at most one — the shortest code is 5 bits) was completed, and
// whether the bits since the last symbol are acceptable padding. §5.2 rules:
// "A padding strictly longer than 7 bits MUST be treated as a decoding error",
// "A padding not corresponding to the most significant bits of the code for
// the EOS symbol MUST be treated as a decoding error", and "A Huffman-encoded
// string literal containing the EOS symbol MUST be treated as a decoding
// error". The accept bit encodes the first two, the failure bit the third.

public enum Huffman {
    /// The exact encoded size of `bytes` in octets.
    public static func encodedLength(_ bytes: UnsafeRawBufferPointer) -> Int {
        var bits = 0
        for b in bytes { bits += Int(huffmanCodeLengths[Int(b)]) }
        return (bits + 7) >> 3
    }

    /// Appends the Huffman encoding of `bytes` to `out`.
    public static func encode(_ bytes: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        var acc: UInt64 = 0
        var bits = 0
        for b in bytes {
            let len = Int(huffmanCodeLengths[Int(b)])
            // bits < 8 before the shift and len ≤ 30, so acc stays under
            // 2^38: no bits are lost.
            acc = (acc << UInt64(len)) | UInt64(huffmanCodes[Int(b)])
            bits += len
            while bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: acc >> UInt64(bits)))
            }
            acc &= (1 << UInt64(bits)) - 1
        }
        if bits > 0 {
            // Pad with the most significant bits of EOS (all ones).
            out.append(UInt8(truncatingIfNeeded: (acc << UInt64(8 - bits)) | ((1 << UInt64(8 - bits)) - 1)))
        }
    }

    /// An upper bound of the decoded length: every code is at least 5 bits.
    @inlinable
    public static func maxDecodedLength(encodedLength: Int) -> Int {
        encodedLength * 8 / 5
    }

    /// Appends the decoding of `bytes` to `out`. On failure `out` may hold a
    /// partial result; the caller discards it.
    public static func decode(_ bytes: UnsafeRawBufferPointer, to out: inout [UInt8]) throws(FieldCodingError) {
        var state = 0
        var accept = true
        try huffmanDecodeTable.withUnsafeBufferPointer { (table) throws(FieldCodingError) in
            for b in bytes {
                var t = table[state << 4 | Int(b >> 4)]
                if t & 0x4_0000 != 0 { throw .huffmanEOS }
                if t & 0x1_0000 != 0 { out.append(UInt8(truncatingIfNeeded: t >> 8)) }
                state = Int(t & 0xff)
                t = table[state << 4 | Int(b & 0x0f)]
                if t & 0x4_0000 != 0 { throw .huffmanEOS }
                if t & 0x1_0000 != 0 { out.append(UInt8(truncatingIfNeeded: t >> 8)) }
                state = Int(t & 0xff)
                accept = t & 0x2_0000 != 0
            }
        }
        if !accept { throw .huffmanPadding }
    }
}
