// The QPACK encoder of this server (RFC 9204 §4.5), for response and trailer
// field sections.
//
// It uses the static table and literals only: no dynamic table insertions,
// so it never writes to an encoder stream, every section has Required Insert
// Count 0 and Base 0 (prefix 0x00 0x00), nothing can block at the client, and
// the client's decoder stream has nothing to acknowledge (TRANSPORT.md states
// the same). Per field:
//   * name and value both in the static table → Indexed Field Line (§4.5.2,
//     T = 1);
//   * name in the static table → Literal Field Line with Name Reference
//     (§4.5.4, T = 1);
//   * otherwise → Literal Field Line with Literal Name (§4.5.6).
// Strings are Huffman-coded when that is shorter (§4.1.2). `neverIndexed`
// sets the N bit (§4.5.4: an intermediary must not re-encode the field into a
// dynamic table), as for set-cookie or authorization values.
// Names must already be lower case (RFC 9114 §4.2).

import HTTPFields

public struct QPACKEncoder: Sendable {
    public init() {}

    /// Starts a field section: Required Insert Count 0, Base 0 (§4.5.1).
    public func beginSection(into out: inout [UInt8]) {
        out.append(0x00)
        out.append(0x00)
    }

    /// Appends one field line.
    public func encode(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer, neverIndexed: Bool = false,
                       into out: inout [UInt8]) {
        var nameIndex: Int?
        for i in 0 ..< QPACKStaticTable.count {
            let e = QPACKStaticTable.entry(i)
            guard Self.equal(name, e.name) else { continue }
            if !neverIndexed && Self.equal(value, e.value) {
                // §4.5.2 Indexed Field Line, static: 11xxxxxx.
                IntegerCoding.append(i, prefixBits: 6, firstByte: 0xc0, to: &out)
                return
            }
            if nameIndex == nil { nameIndex = i }
        }
        let n: UInt8 = neverIndexed ? 0x20 : 0
        if let nameIndex {
            // §4.5.4: 01NTxxxx with T = 1.
            IntegerCoding.append(nameIndex, prefixBits: 4, firstByte: 0x50 | n, to: &out)
        } else {
            // §4.5.6: 001NHxxx.
            Self.appendString(name, prefixBits: 3, flags: 0x20 | (n >> 1), to: &out)
        }
        Self.appendString(value, prefixBits: 7, flags: 0x00, to: &out)
    }

    /// A string literal (§4.1.2): H bit above the length prefix.
    static func appendString(_ s: UnsafeRawBufferPointer, prefixBits: Int, flags: UInt8, to out: inout [UInt8]) {
        let huffmanLength = Huffman.encodedLength(s)
        if huffmanLength < s.count {
            IntegerCoding.append(huffmanLength, prefixBits: prefixBits, firstByte: flags | UInt8(1 << prefixBits), to: &out)
            Huffman.encode(s, to: &out)
        } else {
            IntegerCoding.append(s.count, prefixBits: prefixBits, firstByte: flags, to: &out)
            out.append(contentsOf: s)
        }
    }

    static func equal(_ b: UnsafeRawBufferPointer, _ s: StaticString) -> Bool {
        guard b.count == s.utf8CodeUnitCount else { return false }
        let p = s.utf8Start
        for i in 0 ..< b.count where b[i] != p[i] { return false }
        return true
    }
}
