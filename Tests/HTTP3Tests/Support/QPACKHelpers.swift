// QPACK test helpers: decoding into fresh lists, encoding string pairs.

import XCTest
import HTTPFields
@testable import HTTP3

extension QPACKDecoder {
    mutating func feed(_ b: [UInt8]) throws {
        try b.withUnsafeBytes { try feedEncoderStream($0) }
    }

    /// Decodes a section; nil when blocked.
    mutating func decode(_ b: [UInt8], stream: UInt64) throws -> [[String]]? {
        var list = HeaderList()
        let done = try b.withUnsafeBytes { try decodeFieldSection($0, stream: stream, into: &list) }
        return done ? pairs(list) : nil
    }

    mutating func decoderStream() -> [UInt8] {
        var out: [UInt8] = []
        takeDecoderStreamBytes(into: &out)
        return out
    }

    /// The live table as [abs, name, value] rows, oldest first.
    var rows: [[String]] {
        (table.droppedCount ..< table.insertCount).map { i in
            let e = table.entry(absolute: i)!
            return [String(i), text(e.name[...]), text(e.value[...])]
        }
    }
}

extension QPACKEncoder {
    func section(_ fields: [(String, String)], neverIndexed: Bool = false) -> [UInt8] {
        var out: [UInt8] = []
        beginSection(into: &out)
        for (n, v) in fields {
            bytes(n).withUnsafeBytes { nr in bytes(v).withUnsafeBytes { vr in encode(name: nr, value: vr, neverIndexed: neverIndexed, into: &out) } }
        }
        return out
    }
}
