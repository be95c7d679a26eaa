// A test-side QPACK encoder that uses the dynamic table (RFC 9204 §4.3,
// §4.5), as a client would, to exercise the server's decoder through the
// session: encoder-stream instructions and field sections with dynamic,
// post-base and static references.

import HTTPFields
@testable import HTTP3

struct TestQPACKEncoder {
    let maxTableCapacity: Int
    private(set) var entries: [(name: String, value: String)] = []
    var insertCount: Int { entries.count }

    init(maxTableCapacity: Int = 4096) { self.maxTableCapacity = maxTableCapacity }

    /// §4.3.1 Set Dynamic Table Capacity: 001xxxxx.
    func setCapacity(_ c: Int) -> [UInt8] {
        var out: [UInt8] = []
        IntegerCoding.append(c, prefixBits: 5, firstByte: 0x20, to: &out)
        return out
    }

    /// §4.3.3 Insert with Literal Name (01Hxxxxx), or §4.3.2 with a static
    /// name reference (11xxxxxx) when the name is in the static table.
    /// Strings are sent without Huffman coding.
    mutating func insert(_ name: String, _ value: String) -> [UInt8] {
        var out: [UInt8] = []
        if let i = (0 ..< QPACKStaticTable.count).first(where: { "\(QPACKStaticTable.entry($0).name)" == name }) {
            IntegerCoding.append(i, prefixBits: 6, firstByte: 0xc0, to: &out)
        } else {
            IntegerCoding.append(name.utf8.count, prefixBits: 5, firstByte: 0x40, to: &out)
            out += Array(name.utf8)
        }
        IntegerCoding.append(value.utf8.count, prefixBits: 7, firstByte: 0x00, to: &out)
        out += Array(value.utf8)
        entries.append((name, value))
        return out
    }

    /// A field section: each field found in the dynamic table (exactly) is an
    /// Indexed Field Line — relative to `base` below it (§4.5.2), post-base
    /// at or above it (§4.5.3); the rest as `QPACKEncoder` does (static table
    /// and literals). `base` defaults to the insert count.
    func section(_ fields: [(String, String)], base: Int? = nil) -> [UInt8] {
        let base = base ?? insertCount
        var lines: [UInt8] = []
        var highest = -1
        for (n, v) in fields {
            if let abs = entries.lastIndex(where: { $0.name == n && $0.value == v }) {
                highest = max(highest, abs)
                if abs < base {
                    IntegerCoding.append(base - 1 - abs, prefixBits: 6, firstByte: 0x80, to: &lines)
                } else {
                    IntegerCoding.append(abs - base, prefixBits: 4, firstByte: 0x10, to: &lines)
                }
            } else {
                Array(n.utf8).withUnsafeBytes { nr in
                    Array(v.utf8).withUnsafeBytes { vr in QPACKEncoder().encode(name: nr, value: vr, into: &lines) }
                }
            }
        }
        let ric = highest + 1
        var out: [UInt8] = []
        IntegerCoding.append(QPACKRequiredInsertCount.encode(ric, maxTableCapacity: maxTableCapacity), prefixBits: 8, firstByte: 0, to: &out)
        if base >= ric {
            IntegerCoding.append(base - ric, prefixBits: 7, firstByte: 0x00, to: &out)
        } else {
            IntegerCoding.append(ric - base - 1, prefixBits: 7, firstByte: 0x80, to: &out)
        }
        return out + lines
    }
}
